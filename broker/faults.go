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

// inject applies to r what a test set for its API on c's broker: it waits
// the latency set (SetLatency, SetBrokerLatency), returning the
// connection's error if it closes meanwhile, then takes the fault that
// matches r (InjectFault), or nil.
func (c *clientConn) inject(r *request) (*Fault, error) {
	key := r.kreq.Key()
	if d := c.b.latencyFor(key, c.brokerID()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, c.ctx.Err()
		}
	}
	return c.b.takeFault(key, r.kreq, c.brokerID()), nil
}

// handle returns the answer to r: the error answer of the fault injected
// for it, or else what its handler answers (Broker.serve). A fault that
// drops the answer lets the handler run, and asks for the connection to be
// closed instead of answering.
func (c *clientConn) handle(a *api, r *request, fault *Fault) kmsg.Response {
	if fault != nil && !fault.DropAnswer {
		return c.b.applyFault(fault, a, r)
	}
	resp := c.b.serve(a, r)
	if fault != nil && r.closeAfter == "" {
		r.closeAfter = "fault injection: the answer to " + kmsg.NameForKey(a.key) + " was dropped"
	}
	return resp
}
