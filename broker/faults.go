package broker

// Fault injection for tests: answer requests with an error, slow an API
// down, drop connections. The error answers are built by mirroring the
// request's topics, partitions and groups into its response type, so one
// mechanism serves every API.

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/coordinator"
)

// Fault makes the broker answer matching requests with an error instead of
// handling them. A partition-scoped fault strips the matching partitions
// from the request, handles the rest normally, and answers the stripped ones
// with the error, so nothing is appended or committed for them.
//
// A DropAnswer fault instead handles the matching request in full and then
// closes its connection without answering, as a network failure after the
// broker acted would: a producer cannot tell whether its records were
// stored and retries them.
type Fault struct {
	// API is the request kind, e.g. kmsg.Produce.
	API kmsg.Key
	// Err is the Kafka error code to answer with, e.g. kerr.NotLeaderForPartition.Code.
	// A DropAnswer fault ignores it.
	Err int16
	// DropAnswer handles the request and closes the connection in place
	// of the answer. Topic, Partitions and Group only choose the requests
	// it matches; the whole request is handled.
	DropAnswer bool
	// Count is how many requests to fail; 0 fails every matching request
	// until the fault is cleared.
	Count int
	// Topic, when set, limits the fault to requests naming this topic, and
	// to its partitions within them.
	Topic string
	// Partitions, when Topic is set, limits the fault further to these
	// partitions of it. Empty (the zero value) means every partition;
	// []int32{0} means partition 0 alone.
	Partitions []int32
	// Group, when set, limits the fault to requests for this group.
	Group string
	// Broker, when set, limits the fault to requests that reach this
	// broker id (WithBrokers); nil means every broker.
	Broker *int32 `json:",omitempty"`
}

// anyPartition stands for "the whole topic" where a request names a topic
// without partitions (DeleteTopics, say).
const anyPartition = -1

type faultState struct {
	mu      sync.Mutex
	faults  []*Fault
	latency map[latencyKey]time.Duration
	// armed is set while any fault or latency exists, so that every
	// request does not take mu to learn there are none.
	armed atomic.Bool
}

// rearm records whether any fault or latency is left. Call with mu held.
func (s *faultState) rearm() { s.armed.Store(len(s.faults) > 0 || len(s.latency) > 0) }

// MaxFaults and MaxFaultPartitions bound what faults can make the broker
// hold: at most MaxFaults faults at once, each naming at most
// MaxFaultPartitions partitions. They are vastfake's own guards, far above
// what a test injects.
const (
	MaxFaults          = 1000
	MaxFaultPartitions = 10_000
)

// ErrTooManyFaults is InjectFault's answer past MaxFaults faults or
// MaxFaultPartitions partitions.
var ErrTooManyFaults = fmt.Errorf("vastfake: too many faults (at most %d at once, each naming at most %d partitions); clear some first", MaxFaults, MaxFaultPartitions)

// InjectFault adds a fault. Faults are tried in the order added; a request
// matches at most one. It returns ErrTooManyFaults, adding nothing, when the
// broker already holds MaxFaults faults or f names more than
// MaxFaultPartitions partitions, and ErrNameTooLong for a topic name over
// 249 bytes or a group name over coordinator.MaxGroupIDBytes (neither could
// ever match).
func (b *Broker) InjectFault(f Fault) error {
	if len(f.Topic) > 249 || len(f.Group) > coordinator.MaxGroupIDBytes {
		return fmt.Errorf("%w: a fault's topic is at most 249 bytes, its group at most %d", ErrNameTooLong, coordinator.MaxGroupIDBytes)
	}
	if f.Broker != nil {
		if b.nodeByID(*f.Broker) == nil {
			return fmt.Errorf("%w: %d", ErrUnknownBroker, *f.Broker)
		}
		f.Broker = new(*f.Broker)
	}
	if f.Topic == "" {
		f.Partitions = nil
	}
	if len(f.Partitions) > MaxFaultPartitions {
		return ErrTooManyFaults
	}
	f.Partitions = slices.Clone(f.Partitions)
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	if len(b.faults.faults) >= MaxFaults {
		return ErrTooManyFaults
	}
	b.faults.faults = append(b.faults.faults, &f)
	b.faults.rearm()
	return nil
}

// ClearFaults removes every fault and every added latency.
func (b *Broker) ClearFaults() {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	b.faults.faults = nil
	b.faults.latency = nil
	b.faults.rearm()
}

// latencyKey is an API's latency on one broker id, or on every broker
// (allBrokers).
type latencyKey struct {
	api    int16
	broker int64
}

// allBrokers is the latencyKey broker of a latency every broker adds.
const allBrokers = int64(math.MinInt64)

// SetLatency delays every request of api by d of real time before it is
// handled (the broker's clock does not apply: client timeouts are real
// time). 0 removes the delay.
func (b *Broker) SetLatency(api kmsg.Key, d time.Duration) {
	b.setLatency(latencyKey{int16(api), allBrokers}, d)
}

// SetBrokerLatency is SetLatency for the requests that reach broker id
// alone, as a slow node or network path; the longer of it and an every-broker
// latency applies. It returns ErrUnknownBroker for an id the broker does
// not have.
func (b *Broker) SetBrokerLatency(id int32, api kmsg.Key, d time.Duration) error {
	if b.nodeByID(id) == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	b.setLatency(latencyKey{int16(api), int64(id)}, d)
	return nil
}

func (b *Broker) setLatency(k latencyKey, d time.Duration) {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	defer b.faults.rearm()
	if b.faults.latency == nil {
		b.faults.latency = make(map[latencyKey]time.Duration)
	}
	if d <= 0 {
		delete(b.faults.latency, k)
		return
	}
	b.faults.latency[k] = d
}

// DropConnections closes every open client connection, as a network
// failure would. Clients reconnect; the broker keeps its state.
func (b *Broker) DropConnections() { b.dropConnections(nil) }

// DropBrokerConnections closes every connection broker id accepted, as
// DropConnections does for all; the address keeps listening. It returns
// ErrUnknownBroker for an id the broker does not have.
func (b *Broker) DropBrokerConnections(id int32) error {
	n := b.nodeByID(id)
	if n == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	b.dropConnections(n)
	return nil
}

// dropConnections closes the connections broker node n accepted, or every
// connection when n is nil.
func (b *Broker) dropConnections(n *node) {
	b.connsMu.Lock()
	conns := make([]*clientConn, 0, len(b.conns))
	for c := range b.conns {
		if n == nil || c.node == n {
			conns = append(conns, c)
		}
	}
	b.connsMu.Unlock()
	// Closed outside the lock: accepting and ending connections need it.
	for _, c := range conns {
		c.nc.Close()
	}
}

// Failover emulates a VAST failover to a replication peer: every committed
// offset is dropped (VAST does not replicate them, says its Consume events page) while topics,
// records and group members stay. Consumers then restart from their
// auto.offset.reset.
func (b *Broker) Failover() { b.coord.Failover() }

func (b *Broker) latencyFor(key int16, broker int32) time.Duration {
	if !b.faults.armed.Load() {
		return 0
	}
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	return max(b.faults.latency[latencyKey{key, allBrokers}], b.faults.latency[latencyKey{key, int64(broker)}])
}

// takeFault returns the fault that applies to req, consuming one use of it,
// or nil.
func (b *Broker) takeFault(key int16, kreq kmsg.Request, broker int32) *Fault {
	if !b.faults.armed.Load() {
		return nil
	}
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	for i, f := range b.faults.faults {
		if int16(f.API) != key || f.Broker != nil && *f.Broker != broker || !f.matchesRequest(kreq, b.topicNameOf) {
			continue
		}
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				b.faults.faults = append(b.faults.faults[:i:i], b.faults.faults[i+1:]...)
				b.faults.rearm()
			}
		}
		out := *f
		return &out
	}
	return nil
}

func (f *Fault) matchesRequest(kreq kmsg.Request, nameOf func(reflect.Value) string) bool {
	v := reflect.ValueOf(kreq).Elem()
	if f.Group != "" && !hasGroup(v, f.Group) {
		return false
	}
	if f.Topic != "" {
		found := false
		eachTopic(v, nameOf, func(topic string, parts reflect.Value) {
			if topic != f.Topic {
				return
			}
			if len(f.Partitions) == 0 || !parts.IsValid() {
				found = true
				return
			}
			for i := 0; i < parts.Len(); i++ {
				if f.onPartition(partitionOf(parts.Index(i))) {
					found = true
				}
			}
		})
		return found
	}
	return true
}

// onPartition reports whether f covers partition p of its topic.
func (f *Fault) onPartition(p int32) bool {
	return len(f.Partitions) == 0 || slices.Contains(f.Partitions, p)
}

// applyFault answers req with f's error. A topic-scoped fault on a request
// that names other topics or partitions too handles those normally.
func (b *Broker) applyFault(f *Fault, a *api, r *request) kmsg.Response {
	reqV := reflect.ValueOf(r.kreq).Elem()
	if f.Topic == "" || !reqV.FieldByName("Topics").IsValid() {
		return errorAnswer(r, f.Err)
	}
	return b.splitAnswer(a, r, func(topic string, p int32) bool {
		return topic == f.Topic && (p == anyPartition || f.onPartition(p))
	}, f.Err)
}

// splitAnswer answers the partitions of r that match with code and hands
// the others to the handler, in one answer.
func (b *Broker) splitAnswer(a *api, r *request, match func(topic string, p int32) bool, code int16) kmsg.Response {
	reqV := reflect.ValueOf(r.kreq).Elem()
	// Split the request: the matched partitions go to a copy answered
	// with the error, the rest to the handler.
	failed := reflect.New(reqV.Type()).Elem()
	failed.Set(reqV)
	filterPartitions(failed.FieldByName("Topics"), b.topicNameOf, func(t string, p int32) bool { return match(t, p) })
	filterPartitions(reqV.FieldByName("Topics"), b.topicNameOf, func(t string, p int32) bool { return !match(t, p) })
	var resp kmsg.Response
	if reqV.FieldByName("Topics").Len() > 0 {
		resp = a.handle(b, r)
	}
	if resp == nil {
		resp = r.kreq.ResponseKind()
		resp.SetVersion(r.version)
	}
	errPart := reflect.New(reflect.ValueOf(resp).Elem().Type()).Elem()
	mirrorErrors(failed, errPart, code)
	topics := reflect.ValueOf(resp).Elem().FieldByName("Topics")
	topics.Set(reflect.AppendSlice(topics, errPart.FieldByName("Topics")))
	return resp
}

// errorAnswer answers r with code, without handling it: every topic,
// partition or group the request names gets the code, or the response's
// top-level ErrorCode when it names none.
func errorAnswer(r *request, code int16) kmsg.Response {
	resp := r.kreq.ResponseKind()
	resp.SetVersion(r.version)
	mirrorErrors(reflect.ValueOf(r.kreq).Elem(), reflect.ValueOf(resp).Elem(), code)
	return resp
}

// ---- reflection over kmsg's request and response shapes ----
//
// kmsg names fields consistently: requests carry Topics (with Topic and
// Partitions, whose elements have Partition or are int32s), Group or
// Groups; responses mirror them with ErrorCode fields. These helpers rely on
// that naming only.

func hasGroup(v reflect.Value, group string) bool {
	if g, ok := groupField(v); ok && g == group {
		return true
	}
	gs := v.FieldByName("Groups")
	if !gs.IsValid() {
		gs = v.FieldByName("GroupIDs")
	}
	if gs.IsValid() && gs.Kind() == reflect.Slice {
		for i := 0; i < gs.Len(); i++ {
			e := gs.Index(i)
			if e.Kind() == reflect.String && e.String() == group {
				return true
			}
			if e.Kind() == reflect.Struct && hasGroup(e, group) {
				return true
			}
		}
	}
	return false
}

func stringField(v reflect.Value, name string) (string, bool) {
	f := v.FieldByName(name)
	switch {
	case !f.IsValid():
		return "", false
	case f.Kind() == reflect.String:
		return f.String(), true
	case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
		if f.IsNil() {
			return "", true
		}
		return f.Elem().String(), true
	}
	return "", false
}

// topicNameOf returns the name of the topic a request's topic element
// names: its Topic, or for requests that name topics by id (Produce v13,
// Fetch v13+) the name of the topic with its TopicID, so that a
// topic-scoped fault matches whichever way the client names the topic.
func (b *Broker) topicNameOf(t reflect.Value) string {
	name, _ := stringField(t, "Topic")
	var id [16]byte
	if f := t.FieldByName("TopicID"); f.IsValid() && f.Type() == reflect.TypeOf(id) {
		id = f.Interface().([16]byte)
	}
	return b.topicName(name, id)
}

// topicName returns the name of a topic a request names by name, or by id
// (Produce and Fetch v13+), or "" when the id names none.
func (b *Broker) topicName(name string, id [16]byte) string {
	if name != "" || id == [16]byte{} {
		return name
	}
	if t := b.data.getID(id); t != nil {
		return t.name
	}
	return ""
}

// eachTopic calls fn with each topic a request names (by nameOf) and its
// partitions slice (invalid if the topic element has none).
func eachTopic(v reflect.Value, nameOf func(reflect.Value) string, fn func(topic string, parts reflect.Value)) {
	topics := v.FieldByName("Topics")
	if !topics.IsValid() || topics.Kind() != reflect.Slice {
		return
	}
	for i := 0; i < topics.Len(); i++ {
		t := topics.Index(i)
		if t.Kind() != reflect.Struct {
			continue
		}
		fn(nameOf(t), t.FieldByName("Partitions"))
	}
}

func partitionOf(p reflect.Value) int32 {
	if p.Kind() == reflect.Int32 {
		return int32(p.Int())
	}
	if f := p.FieldByName("Partition"); f.IsValid() {
		return int32(f.Int())
	}
	return -1
}

// filterPartitions keeps, in a Topics slice, the partitions keep accepts and
// drops topics left with none.
func filterPartitions(topics reflect.Value, nameOf func(reflect.Value) string, keep func(topic string, p int32) bool) {
	out := reflect.MakeSlice(topics.Type(), 0, topics.Len())
	for i := 0; i < topics.Len(); i++ {
		t := reflect.New(topics.Type().Elem()).Elem()
		t.Set(topics.Index(i))
		name := nameOf(t)
		parts := t.FieldByName("Partitions")
		if !parts.IsValid() {
			// A request about whole topics (CreateTopics, DeleteTopics).
			if keep(name, anyPartition) {
				out = reflect.Append(out, t)
			}
			continue
		}
		kept := reflect.MakeSlice(parts.Type(), 0, parts.Len())
		for j := 0; j < parts.Len(); j++ {
			if keep(name, partitionOf(parts.Index(j))) {
				kept = reflect.Append(kept, parts.Index(j))
			}
		}
		if kept.Len() > 0 {
			parts.Set(kept)
			out = reflect.Append(out, t)
		}
	}
	topics.Set(out)
}

// newElem returns a new element of a kmsg slice type with its defaults set.
func newElem(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d := p.MethodByName("Default"); d.IsValid() {
		d.Call(nil)
	}
	return p.Elem()
}

func copyName(dst, src reflect.Value, dstName, srcName string) {
	d := dst.FieldByName(dstName)
	s := src
	if srcName != "" {
		s = src.FieldByName(srcName)
	}
	if !d.IsValid() || !s.IsValid() || !d.CanSet() {
		return
	}
	switch {
	case d.Type() == s.Type():
		d.Set(s)
	case d.Kind() == reflect.Pointer && s.Kind() == reflect.String:
		str := s.String()
		d.Set(reflect.ValueOf(&str))
	case d.Kind() == reflect.String && s.Kind() == reflect.Pointer && !s.IsNil():
		d.SetString(s.Elem().String())
	}
}

func setErr(v reflect.Value, code int16) bool {
	f := v.FieldByName("ErrorCode")
	if f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
		return true
	}
	return false
}

// mirrorErrors fills resp with one entry per topic, partition, group or
// coordinator key that req names, each carrying code. A response without
// such lists gets its top-level ErrorCode set.
func mirrorErrors(req, resp reflect.Value, code int16) {
	mirrored := false
	if rt, st := req.FieldByName("Topics"), resp.FieldByName("Topics"); rt.IsValid() && st.IsValid() && st.Kind() == reflect.Slice && st.Type().Elem().Kind() == reflect.Struct {
		out := reflect.MakeSlice(st.Type(), 0, rt.Len())
		for i := 0; i < rt.Len(); i++ {
			reqT := rt.Index(i)
			respT := newElem(st.Type().Elem())
			if reqT.Kind() == reflect.Struct {
				copyName(respT, reqT, "Topic", "Topic")
				copyName(respT, reqT, "TopicID", "TopicID")
			} else {
				copyName(respT, reqT, "Topic", "")
			}
			rp, sp := reqT.FieldByName("Partitions"), respT.FieldByName("Partitions")
			if reqT.Kind() == reflect.Struct && rp.IsValid() && sp.IsValid() && sp.Type().Elem().Kind() == reflect.Struct {
				parts := reflect.MakeSlice(sp.Type(), 0, rp.Len())
				for j := 0; j < rp.Len(); j++ {
					p := newElem(sp.Type().Elem())
					p.FieldByName("Partition").SetInt(int64(partitionOf(rp.Index(j))))
					setErr(p, code)
					parts = reflect.Append(parts, p)
				}
				sp.Set(parts)
			} else {
				setErr(respT, code)
			}
			out = reflect.Append(out, respT)
		}
		st.Set(out)
		mirrored = rt.Len() > 0
	}
	rg := req.FieldByName("Groups")
	if !rg.IsValid() {
		rg = req.FieldByName("GroupIDs") // ShareGroupDescribe
	}
	if sg := resp.FieldByName("Groups"); rg.IsValid() && sg.IsValid() && sg.Kind() == reflect.Slice && sg.Type().Elem().Kind() == reflect.Struct {
		out := reflect.MakeSlice(sg.Type(), 0, rg.Len())
		for i := 0; i < rg.Len(); i++ {
			g := newElem(sg.Type().Elem())
			if rg.Index(i).Kind() == reflect.String {
				copyName(g, rg.Index(i), "Group", "")
				copyName(g, rg.Index(i), "GroupID", "")
			} else {
				copyName(g, rg.Index(i), "Group", "Group")
				copyName(g, rg.Index(i), "GroupID", "GroupID")
			}
			setErr(g, code)
			out = reflect.Append(out, g)
		}
		sg.Set(out)
		mirrored = mirrored || rg.Len() > 0
	}
	if rk, sc := req.FieldByName("CoordinatorKeys"), resp.FieldByName("Coordinators"); rk.IsValid() && sc.IsValid() && rk.Len() > 0 {
		out := reflect.MakeSlice(sc.Type(), 0, rk.Len())
		for i := 0; i < rk.Len(); i++ {
			c := newElem(sc.Type().Elem())
			copyName(c, rk.Index(i), "Key", "")
			setErr(c, code)
			out = reflect.Append(out, c)
		}
		sc.Set(out)
		mirrored = true
	}
	if !mirrored {
		setErr(resp, code)
	}
}

// firstError returns the first non-zero ErrorCode anywhere in a response,
// for the request log.
func firstError(resp kmsg.Response) int16 {
	return firstInResponse(resp, func(v reflect.Value, p *errorPlan) int16 {
		if p.errorCode < 0 {
			return 0
		}
		return int16(v.Field(p.errorCode).Int())
	})
}

// firstErrorMessage returns the first non-empty ErrorMessage anywhere in a
// response, for the request log and the refusal log line: the explanation
// a client gets with an error.
func firstErrorMessage(resp kmsg.Response) string {
	return firstInResponse(resp, func(v reflect.Value, p *errorPlan) string {
		if p.errorMessage < 0 {
			return ""
		}
		if f := v.Field(p.errorMessage); !f.IsNil() {
			return f.Elem().String()
		}
		return ""
	})
}

// firstInResponse walks a response's structs depth first, in field order,
// and returns the first non-zero value get reads from one of them.
func firstInResponse[T comparable](resp kmsg.Response, get func(reflect.Value, *errorPlan) T) T {
	var zero T
	if resp == nil {
		return zero
	}
	return firstIn(reflect.ValueOf(resp).Elem(), 0, get)
}

func firstIn[T comparable](v reflect.Value, depth int, get func(reflect.Value, *errorPlan) T) T {
	var zero T
	if depth > 4 {
		return zero
	}
	switch v.Kind() {
	case reflect.Struct:
		p := errorPlanFor(v.Type())
		if x := get(v, p); x != zero {
			return x
		}
		for _, i := range p.structSlices {
			if x := firstIn(v.Field(i), depth+1, get); x != zero {
				return x
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if x := firstIn(v.Index(i), depth+1, get); x != zero {
				return x
			}
		}
	}
	return zero
}

// errorPlan is where a kmsg struct type keeps its error code, its error
// message and its lists of nested structs, found once per type: firstError
// runs on every answer, and looking fields up by name each time cost more
// than the rest of a small request.
type errorPlan struct {
	errorCode    int   // index of an int16 ErrorCode field, or -1
	errorMessage int   // index of a *string ErrorMessage field, or -1
	structSlices []int // indices of fields that are slices of structs
}

var errorPlans sync.Map // reflect.Type -> *errorPlan

func errorPlanFor(t reflect.Type) *errorPlan {
	if p, ok := errorPlans.Load(t); ok {
		return p.(*errorPlan)
	}
	p := &errorPlan{errorCode: -1, errorMessage: -1}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			p.errorCode = i
		case f.Name == "ErrorMessage" && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			p.errorMessage = i
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			p.structSlices = append(p.structSlices, i)
		}
	}
	errorPlans.Store(t, p)
	return p
}
