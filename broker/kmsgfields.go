package broker

// kmsg messages by field name: the topics, partitions and groups a request
// names, and the error codes and messages of a response, read and written
// through reflection, for code that treats every API alike (faults, the
// request log, the broker's share of a request that several brokers
// answer).
//
// kmsg names fields consistently: requests carry Topics (with Topic and
// Partitions, whose elements have Partition or are int32s), Group or
// Groups; responses mirror them with ErrorCode fields. These helpers rely on
// that naming only.

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hasGroup reports whether a request names group: as its Group (GroupID
// in the share group APIs), or among its Groups (GroupIDs; strings, or
// structs with a Group).
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

// stringField returns the string or *string field name of v ("" for a nil
// one), and false when v has no such field.
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

// partitionOf returns the partition a partitions element names: the
// element itself (an int32) or its Partition field; -1 for neither.
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

// copyName copies src's field srcName (src itself when srcName is "") to
// dst's field dstName, converting between string and *string; it does
// nothing when either field is missing.
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

// setErr sets v's ErrorCode to code, and reports whether v has one.
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

// groupsOf returns the group ids a group request names: its Groups, or
// else its Group (GroupIDs and GroupID in the share group APIs).
func groupsOf(v reflect.Value) []string {
	var out []string
	gs := v.FieldByName("Groups")
	if !gs.IsValid() {
		gs = v.FieldByName("GroupIDs") // ShareGroupDescribe
	}
	if gs.IsValid() && gs.Kind() == reflect.Slice && gs.Len() > 0 {
		for i := 0; i < gs.Len(); i++ {
			switch e := gs.Index(i); e.Kind() {
			case reflect.String:
				out = append(out, e.String())
			case reflect.Struct:
				out = append(out, groupsOf(e)...)
			}
		}
		return out // OffsetFetch v8+: Group is unused
	}
	if g, ok := groupField(v); ok {
		out = append(out, g)
	}
	return out
}

// groupField returns the group a request (or one of its groups) names in
// its Group field, or GroupID as the share group APIs call it (a string,
// or a nullable one in ShareFetch and ShareAcknowledge).
func groupField(v reflect.Value) (string, bool) {
	for _, name := range []string{"Group", "GroupID"} {
		switch g := v.FieldByName(name); {
		case !g.IsValid():
		case g.Kind() == reflect.String:
			return g.String(), true
		case g.Kind() == reflect.Pointer && !g.IsNil() && g.Elem().Kind() == reflect.String:
			return g.Elem().String(), true
		}
	}
	return "", false
}
