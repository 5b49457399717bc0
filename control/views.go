package control

// The JSON shapes of the control plane, built from the broker's inspection
// copies.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/coordinator"
)

type topicView struct {
	Name string `json:"name"`
	// ID is the topic id in hex (Metadata reports zero under the NoTopicIDs
	// rule; this is the broker's own).
	ID         string            `json:"id"`
	Configs    map[string]string `json:"configs"`
	Partitions []partitionView   `json:"partitions"`
}

type partitionView struct {
	Partition      int32   `json:"partition"`
	LogStartOffset int64   `json:"logStartOffset"`
	HighWatermark  int64   `json:"highWatermark"`
	Bytes          int64   `json:"bytes"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
}

func newTopicView(t broker.TopicInfo) topicView {
	v := topicView{Name: t.Name, ID: hex.EncodeToString(t.ID[:]), Configs: t.Configs, Partitions: []partitionView{}}
	for _, p := range t.Partitions {
		v.Partitions = append(v.Partitions, partitionView(p))
	}
	return v
}

// recordView shows a key, value or header value as text when it is UTF-8
// and as base64 (the *Base64 field) otherwise.
type recordView struct {
	Offset int64 `json:"offset"`
	// Timestamp is the record's timestamp in RFC 3339, null when its year
	// is outside 0-9999, which RFC 3339 cannot write (a client may send
	// any int64); TimestampMs is Kafka's own milliseconds since the epoch,
	// always set.
	Timestamp     *time.Time   `json:"timestamp"`
	TimestampMs   int64        `json:"timestampMs"`
	LogAppendTime bool         `json:"logAppendTime,omitempty"`
	Key           *string      `json:"key"`
	KeyBase64     string       `json:"keyBase64,omitempty"`
	Value         *string      `json:"value"`
	ValueBase64   string       `json:"valueBase64,omitempty"`
	Headers       []headerView `json:"headers,omitempty"`
	Compressed    bool         `json:"compressed,omitempty"`
	// ProducerID is set for an idempotent or transactional producer's
	// records; Marker ("commit" or "abort") for a transaction marker, which
	// consumers never see; Transaction ("committed", "aborted", "open")
	// for a record written in a transaction.
	ProducerID  int64  `json:"producerId,omitempty"`
	Marker      string `json:"marker,omitempty"`
	Transaction string `json:"transaction,omitempty"`
}

type headerView struct {
	Key         string  `json:"key"`
	Value       *string `json:"value"`
	ValueBase64 string  `json:"valueBase64,omitempty"`
}

// text returns b as a string when it is valid UTF-8, or its base64.
func text(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

// withBase64 encodes the view struct v as encoding/json would, and beside
// each string field holding bytes that are not UTF-8 (which JSON can only
// show with U+FFFD in their place, so two different ids would look the
// same) adds the field's name with "Base64" appended and the bytes in
// base64, as records show keys and values; for an array of strings, an
// array of the same length with the base64 of each such string and "" for
// the others. Client-named strings (transactional ids, group, member and
// client ids, offset metadata...) are shown so; the views' MarshalJSON
// methods call it.
func withBase64(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	var buf bytes.Buffer
	buf.WriteByte('{')
	field := func(name string, value any) error {
		b, err := json.Marshal(value)
		if err != nil {
			return err
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(b)
		return nil
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := rv.Field(i)
		if strings.Contains(opts, "omitempty") && emptyJSON(fv) {
			continue
		}
		if err := field(name, fv.Interface()); err != nil {
			return nil, err
		}
		switch {
		case fv.Kind() == reflect.String && !utf8.ValidString(fv.String()):
			err := field(name+"Base64", base64.StdEncoding.EncodeToString([]byte(fv.String())))
			if err != nil {
				return nil, err
			}
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.String && !fv.IsNil() && !utf8.ValidString(fv.Elem().String()):
			err := field(name+"Base64", base64.StdEncoding.EncodeToString([]byte(fv.Elem().String())))
			if err != nil {
				return nil, err
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			var b64 []string
			for j := range fv.Len() {
				if e := fv.Index(j).String(); !utf8.ValidString(e) {
					if b64 == nil {
						b64 = make([]string, fv.Len())
					}
					b64[j] = base64.StdEncoding.EncodeToString([]byte(e))
				}
			}
			if b64 != nil {
				if err := field(name+"Base64", b64); err != nil {
					return nil, err
				}
			}
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// putText sets m[key] to s and, when s is not UTF-8, m[key+"Base64"] to its
// bytes in base64, as withBase64 shows a view's strings.
func putText(m map[string]any, key, s string) {
	m[key] = s
	if !utf8.ValidString(s) {
		m[key+"Base64"] = base64.StdEncoding.EncodeToString([]byte(s))
	}
}

// emptyJSON reports whether encoding/json's omitempty leaves v out.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return v.IsZero()
}

// The views that carry strings a client chose encode through withBase64.
func (v transactionView) MarshalJSON() ([]byte, error)     { return withBase64(v) }
func (v groupView) MarshalJSON() ([]byte, error)           { return withBase64(v) }
func (v memberView) MarshalJSON() ([]byte, error)          { return withBase64(v) }
func (v groupPartitionView) MarshalJSON() ([]byte, error)  { return withBase64(v) }
func (v rebalanceView) MarshalJSON() ([]byte, error)       { return withBase64(v) }
func (v rebalanceMemberView) MarshalJSON() ([]byte, error) { return withBase64(v) }
func (v sharePartitionView) MarshalJSON() ([]byte, error)  { return withBase64(v) }
func (v acquiredRecordsView) MarshalJSON() ([]byte, error) { return withBase64(v) }
func (v requestView) MarshalJSON() ([]byte, error)         { return withBase64(v) }
func (v headerView) MarshalJSON() ([]byte, error)          { return withBase64(v) }
func (v findingView) MarshalJSON() ([]byte, error)         { return withBase64(v) }
func (v refusalsView) MarshalJSON() ([]byte, error)        { return withBase64(v) }
func (v errorCountView) MarshalJSON() ([]byte, error)      { return withBase64(v) }
func (v groupsCreatedView) MarshalJSON() ([]byte, error)   { return withBase64(v) }
func (v formationView) MarshalJSON() ([]byte, error)       { return withBase64(v) }
func (v fetchPartitionView) MarshalJSON() ([]byte, error)  { return withBase64(v) }

// findingView is an audit finding as GET /audit shows it.
type findingView broker.Finding

// refusalsView is a rule's refusals as GET /audit shows them.
type refusalsView broker.RuleRefusals

// auditView is broker.AuditReport with its client strings shown as the
// other views show them.
type auditView struct {
	Audited  []string       `json:"audited"`
	Enforced []string       `json:"enforced"`
	Findings []findingView  `json:"findings"`
	Dropped  int64          `json:"dropped,omitempty"`
	Refusals []refusalsView `json:"refusals"`
	// Errors, Groups and Formations are filled for GET /audit, which
	// streams them.
	Errors     []errorCountView    `json:"-"`
	Groups     []groupsCreatedView `json:"-"`
	Formations []formationView     `json:"-"`
}

// errorCountView is an error answered without a rule, as GET /audit shows it.
type errorCountView broker.ErrorCount

// groupsCreatedView is a client's group forecast, as GET /audit shows it.
type groupsCreatedView broker.GroupsCreated

// formationView is how a group formed, as GET /audit shows it.
type formationView broker.GroupFormation

func newAuditView(a broker.AuditReport) auditView {
	v := auditView{Audited: a.Audited, Enforced: a.Enforced, Dropped: a.Dropped}
	if a.Findings != nil {
		v.Findings = make([]findingView, len(a.Findings))
		for i, f := range a.Findings {
			v.Findings[i] = findingView(f)
		}
	}
	if a.Refusals != nil {
		v.Refusals = make([]refusalsView, len(a.Refusals))
		for i, r := range a.Refusals {
			v.Refusals[i] = refusalsView(r)
		}
	}
	if a.Errors != nil {
		v.Errors = make([]errorCountView, len(a.Errors))
		for i, e := range a.Errors {
			v.Errors[i] = errorCountView(e)
		}
	}
	if a.Groups != nil {
		v.Groups = make([]groupsCreatedView, len(a.Groups))
		for i, g := range a.Groups {
			v.Groups[i] = groupsCreatedView(g)
		}
	}
	if a.Formations != nil {
		v.Formations = make([]formationView, len(a.Formations))
		for i, f := range a.Formations {
			v.Formations[i] = formationView(f)
		}
	}
	return v
}

func newRecordView(r broker.Record) recordView {
	v := recordView{Offset: r.Offset, TimestampMs: r.Timestamp.UnixMilli(), LogAppendTime: r.LogAppendTime,
		Compressed: r.Compressed, Marker: r.Marker, Transaction: r.Transaction}
	if r.ProducerID >= 0 {
		v.ProducerID = r.ProducerID
	}
	if y := r.Timestamp.Year(); y >= 0 && y <= 9999 {
		ts := r.Timestamp
		v.Timestamp = &ts
	}
	v.Key, v.KeyBase64 = text(r.Key)
	v.Value, v.ValueBase64 = text(r.Value)
	for _, h := range r.Headers {
		hv := headerView{Key: h.Key}
		hv.Value, hv.ValueBase64 = text(h.Value)
		v.Headers = append(v.Headers, hv)
	}
	return v
}

// transactionView is a transactional id as GET /transactions shows it.
type transactionView struct {
	TransactionalID string `json:"transactionalId"`
	ProducerID      int64  `json:"producerId"`
	ProducerEpoch   int16  `json:"producerEpoch"`
	// State is Kafka's: Empty, Ongoing, CompleteCommit or CompleteAbort.
	State     string `json:"state"`
	TimeoutMs int64  `json:"timeoutMs"`
	// Start is when the open transaction began; absent when none is open.
	Start      *time.Time           `json:"start,omitempty"`
	Partitions []topicPartitionView `json:"partitions"`
	Groups     []string             `json:"groups"`
	Committed  int                  `json:"committed"`
	Aborted    int                  `json:"aborted"`
	TimedOut   int                  `json:"timedOut"`
}

type topicPartitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func newTransactionView(t coordinator.TxnInfo) transactionView {
	v := transactionView{TransactionalID: t.TransactionalID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
		State: t.State.String(), TimeoutMs: t.Timeout.Milliseconds(), Partitions: []topicPartitionView{},
		Groups: append([]string{}, t.Groups...), Committed: t.Committed, Aborted: t.Aborted, TimedOut: t.TimedOut}
	if t.State == coordinator.TxnOngoing {
		start := t.Start
		v.Start = &start
	}
	for _, p := range t.Partitions {
		v.Partitions = append(v.Partitions, topicPartitionView{p.Topic, p.Partition})
	}
	return v
}

type groupView struct {
	Name         string       `json:"name"`
	State        string       `json:"state"`
	ProtocolType string       `json:"protocolType"`
	Protocol     string       `json:"protocol"`
	Generation   int32        `json:"generation"`
	Leader       string       `json:"leader"`
	Members      []memberView `json:"members"`
	// Partitions are every partition the group has committed an offset for
	// or assigned to a member, sorted by topic and partition.
	Partitions []groupPartitionView `json:"partitions"`
	// Coordinator is the broker id coordinating the group (always 0 with
	// one broker).
	Coordinator int32 `json:"coordinator"`
	// GroupProtocol is "classic", "consumer" (a KIP-848 consumer group,
	// group.protocol=consumer) or "share" (a KIP-932 share group).
	// GroupEpoch and AssignmentEpoch are a consumer or share group's
	// epochs (0 for a classic group; its generation is Generation).
	GroupProtocol   string `json:"groupProtocol"`
	GroupEpoch      int32  `json:"groupEpoch"`
	AssignmentEpoch int32  `json:"assignmentEpoch"`
	// Reconciled is true when the group is Stable with members and every
	// member has its target assignment: for a consumer group, nothing is
	// waiting to be revoked or released.
	Reconciled bool `json:"reconciled"`
	// SharePartitions are a share group's partitions with share state, by
	// topic and partition; absent for other groups.
	SharePartitions []sharePartitionView `json:"sharePartitions,omitempty"`
}

// sharePartitionView is a share group's state of one partition: the start
// offset, what members hold with delivery counts and lock deadlines (on
// the broker's clock), and what was acknowledged and archived.
type sharePartitionView struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"startOffset"`
	// EndOffset is one past the last record read into flight.
	EndOffset     int64 `json:"endOffset"`
	HighWatermark int64 `json:"highWatermark"`
	// InFlight counts the records tracked from StartOffset to EndOffset,
	// Available those that can be acquired (again).
	InFlight     int64                 `json:"inFlight"`
	Available    int64                 `json:"available"`
	Acquired     []acquiredRecordsView `json:"acquired"`
	Acknowledged int64                 `json:"acknowledged"`
	Archived     int64                 `json:"archived"`
	// Lag counts the records from StartOffset to the high watermark whose
	// delivery is not complete.
	Lag int64 `json:"lag"`
}

type acquiredRecordsView struct {
	FirstOffset   int64     `json:"firstOffset"`
	LastOffset    int64     `json:"lastOffset"`
	MemberID      string    `json:"memberId"`
	ClientID      string    `json:"clientId"`
	DeliveryCount int16     `json:"deliveryCount"`
	LockDeadline  time.Time `json:"lockDeadline"`
}

type memberView struct {
	MemberID   string `json:"memberId"`
	InstanceID string `json:"instanceId,omitempty"`
	ClientID   string `json:"clientId"`
	ClientHost string `json:"clientHost"`
	// Assignment is the member's consumer assignment, topic to partitions;
	// null for a group that is not a consumer group or while a rebalance
	// has not handed one out. For a KIP-848 member, the partitions it may
	// consume now.
	Assignment map[string][]int32 `json:"assignment"`
	// The rest are a KIP-848 member's: its epoch, where its reconciliation
	// stands (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), its
	// target assignment and the partitions it must still revoke.
	MemberEpoch      int32              `json:"memberEpoch,omitempty"`
	MemberState      string             `json:"memberState,omitempty"`
	TargetAssignment map[string][]int32 `json:"targetAssignment,omitempty"`
	Revoking         map[string][]int32 `json:"revoking,omitempty"`
}

type groupPartitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the committed offset, null if none.
	Committed     *int64 `json:"committed"`
	Metadata      string `json:"metadata,omitempty"`
	HighWatermark int64  `json:"highWatermark"`
	// Lag is the high watermark minus the committed offset, null when
	// nothing is committed.
	Lag           *int64 `json:"lag"`
	OwnerMemberID string `json:"ownerMemberId,omitempty"`
	OwnerClientID string `json:"ownerClientId,omitempty"`
}

// assignment decodes a consumer protocol assignment; it returns nil for
// anything else.
func assignment(protocolType string, b []byte) map[string][]int32 {
	if protocolType != "consumer" || len(b) == 0 {
		return nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil
	}
	out := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		ps := append([]int32{}, t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out[t.Topic] = append(out[t.Topic], ps...)
	}
	return out
}

// newGroupView describes a group with its partitions' lag. topics caches
// the topics it looks up, so that one answer describing many groups copies
// each topic once; callers that already hold a topic list pass it in.
func (s *server) newGroupView(g coordinator.GroupInfo, topics map[string]broker.TopicInfo) groupView {
	v := groupView{Name: g.Name, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol,
		Generation: g.Generation, Leader: g.Leader, Members: []memberView{}, Partitions: []groupPartitionView{},
		Coordinator: s.b.CoordinatorOf(g.Name), GroupProtocol: g.Type, GroupEpoch: g.GroupEpoch,
		AssignmentEpoch: g.AssignmentEpoch, Reconciled: g.Reconciled()}
	type tp struct {
		topic string
		p     int32
	}
	parts := map[tp]*groupPartitionView{}
	at := func(topic string, p int32) *groupPartitionView {
		k := tp{topic, p}
		if parts[k] == nil {
			parts[k] = &groupPartitionView{Topic: topic, Partition: p}
		}
		return parts[k]
	}
	for _, m := range g.Members {
		mv := memberView{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Assignment: assignment(g.ProtocolType, m.Assignment)}
		if g.Type == "consumer" {
			mv.Assignment, mv.MemberEpoch, mv.MemberState = m.Current, m.MemberEpoch, m.MemberState
			mv.TargetAssignment, mv.Revoking = m.Target, m.Revoking
		}
		if g.Type == "share" {
			mv.Assignment, mv.MemberEpoch = m.Current, m.MemberEpoch
		}
		for topic, ps := range mv.Assignment {
			for _, p := range ps {
				pv := at(topic, p)
				if g.Type == "share" && pv.OwnerClientID != "" {
					// A share group's partition has several members.
					if !strings.Contains(", "+pv.OwnerClientID+", ", ", "+m.ClientID+", ") {
						pv.OwnerClientID += ", " + m.ClientID
					}
					continue
				}
				pv.OwnerMemberID, pv.OwnerClientID = m.MemberID, m.ClientID
			}
		}
		v.Members = append(v.Members, mv)
	}
	for topic, ps := range g.Offsets {
		for p, o := range ps {
			pv := at(topic, p)
			off := o.Offset
			pv.Committed, pv.Metadata = &off, o.Metadata
		}
	}
	hwm := func(topic string, p int32) int64 {
		t, ok := topics[topic]
		if !ok {
			t, _ = s.b.Topic(topic)
			topics[topic] = t
		}
		if int(p) < len(t.Partitions) {
			return t.Partitions[p].HighWatermark
		}
		return 0
	}
	clientOf := map[string]string{}
	for _, m := range g.Members {
		clientOf[m.MemberID] = m.ClientID
	}
	shareLag := map[tp]int64{}
	for _, sp := range g.SharePartitions {
		spv := sharePartitionView{Topic: sp.Topic, Partition: sp.Partition, StartOffset: sp.StartOffset, EndOffset: sp.EndOffset,
			HighWatermark: hwm(sp.Topic, sp.Partition), InFlight: sp.InFlight, Available: sp.Available,
			Acquired: []acquiredRecordsView{}, Acknowledged: sp.Acknowledged, Archived: sp.Archived}
		spv.Lag = max(0, spv.HighWatermark-sp.StartOffset-sp.Completed)
		for _, a := range sp.Acquired {
			spv.Acquired = append(spv.Acquired, acquiredRecordsView{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset,
				MemberID: a.Member, ClientID: clientOf[a.Member], DeliveryCount: a.DeliveryCount, LockDeadline: a.LockDeadline})
		}
		v.SharePartitions = append(v.SharePartitions, spv)
		at(sp.Topic, sp.Partition)
		shareLag[tp{sp.Topic, sp.Partition}] = spv.Lag
	}
	for k, pv := range parts {
		pv.HighWatermark = hwm(k.topic, k.p)
		if pv.Committed != nil {
			lag := max(0, pv.HighWatermark-*pv.Committed)
			pv.Lag = &lag
		}
		if lag, ok := shareLag[k]; ok {
			pv.Lag = &lag // a share group's: the records not yet acknowledged
		}
		v.Partitions = append(v.Partitions, *pv)
	}
	sort.Slice(v.Partitions, func(i, j int) bool {
		a, b := v.Partitions[i], v.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return v
}

type rebalanceView struct {
	Time       time.Time             `json:"time"`
	Group      string                `json:"group"`
	Generation int32                 `json:"generation"`
	State      string                `json:"state"`
	Protocol   string                `json:"protocol"`
	Members    []rebalanceMemberView `json:"members"`
}

type rebalanceMemberView struct {
	MemberID   string             `json:"memberId"`
	ClientID   string             `json:"clientId"`
	Assignment map[string][]int32 `json:"assignment"`
}

// eachRebalance adds the view of each rebalance of rs, or of one group's
// when group is set, until add returns false.
func eachRebalance(rs []coordinator.Rebalance, group string, add func(any) bool) {
	for _, r := range rs {
		if group != "" && r.Group != group {
			continue
		}
		v := rebalanceView{Time: r.Time, Group: r.Group, Generation: r.Generation, State: r.State,
			Protocol: r.Protocol, Members: []rebalanceMemberView{}}
		for _, m := range r.Members {
			// Rebalances are recorded for consumer groups and others
			// alike; a consumer assignment decodes, anything else is nil.
			v.Members = append(v.Members, rebalanceMemberView{MemberID: m.MemberID, ClientID: m.ClientID,
				Assignment: assignment("consumer", m.Assignment)})
		}
		if !add(v) {
			return
		}
	}
}

type requestView struct {
	Time     time.Time `json:"time"`
	API      string    `json:"api"`
	Version  int16     `json:"version"`
	ClientID string    `json:"clientId"`
	// Broker is the id of the broker that served it (-brokers).
	Broker int32 `json:"broker"`
	// ErrorCode and Error are the first error of the answer, if any.
	ErrorCode int16  `json:"errorCode"`
	Error     string `json:"error,omitempty"`
	// Rule names the VAST rule (a rules.Rules field) behind a refusal.
	Rule string `json:"rule,omitempty"`
	// Finding names the audited VAST rule of the finding the request
	// caused (GET /audit lists them).
	Finding string `json:"finding,omitempty"`
	// Rules and Findings list every rule the request broke: Rule (and
	// Finding) is the first of them.
	Rules    []string `json:"rules,omitempty"`
	Findings []string `json:"findings,omitempty"`
	Fault    bool     `json:"fault,omitempty"`
	// User is the SASL user of the connection, if any.
	User string `json:"user,omitempty"`
	// Denied says why an identity policy or authentication refused it.
	Denied string `json:"denied,omitempty"`
	// Closed is set when the broker closed the connection after it.
	Closed bool `json:"closed,omitempty"`
	// Message is what the client was told with the error, if anything.
	Message string `json:"message,omitempty"`
	// Repeats counts the identical empty fetches folded into this one.
	Repeats int `json:"repeats,omitempty"`
	// Fetch is, for a Fetch with -fetch-detail, what each partition
	// returned.
	Fetch *fetchView `json:"fetch,omitempty"`
}

// fetchView is a Fetch's per-partition detail (-fetch-detail).
type fetchView struct {
	Partitions []fetchPartitionView `json:"partitions"`
	// Omitted counts the partitions past the 64 kept.
	Omitted int `json:"omitted,omitempty"`
}

type fetchPartitionView struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	FetchOffset   int64  `json:"fetchOffset"`
	Records       int32  `json:"records"`
	Bytes         int32  `json:"bytes"`
	HighWatermark int64  `json:"highWatermark"`
	ErrorCode     int16  `json:"errorCode"`
	Error         string `json:"error,omitempty"`
}

func newFetchView(d *broker.FetchDetail) *fetchView {
	if d == nil {
		return nil
	}
	v := &fetchView{Partitions: make([]fetchPartitionView, len(d.Partitions)), Omitted: d.Omitted}
	for i, p := range d.Partitions {
		v.Partitions[i] = fetchPartitionView{Topic: p.Topic, Partition: p.Partition, FetchOffset: p.FetchOffset,
			Records: p.Records, Bytes: p.Bytes, HighWatermark: p.HighWatermark, ErrorCode: p.ErrorCode}
		if p.ErrorCode != 0 {
			v.Partitions[i].Error = errName(p.ErrorCode)
		}
	}
	return v
}

func newRequestView(r broker.RequestRecord) requestView {
	return requestView{Time: r.Time, API: kmsg.NameForKey(int16(r.API)), Version: r.Version, ClientID: r.ClientID, Broker: r.Broker,
		ErrorCode: r.ErrorCode, Error: errName(r.ErrorCode), Rule: r.Rule, Finding: r.Finding, Rules: all(r.Rule, r.Rules), Findings: all(r.Finding, r.Findings), Fault: r.Fault,
		User: r.User, Denied: r.Denied, Closed: r.Closed, Message: r.Message, Repeats: r.Repeats,
		Fetch: newFetchView(r.Fetch)}
}

// all is every rule of a request record: rules when there were several,
// else first alone, or none.
func all(first, rules string) []string {
	switch {
	case rules != "":
		return strings.Split(rules, ",")
	case first != "":
		return []string{first}
	}
	return nil
}

// liveRebalances is how many of the latest rebalances the page shows.
const liveRebalances = 50

// liveFindings is how many findings the page shows.
const liveFindings = 100

// writeLive streams everything the live page draws, as one object:
//
//	{"now", "bootstrap", "kafkaVersion", "manualClock", "topics": [...], "groups": [...], "rebalances": [...], "audit": {...}}
//
// with topics and groups as /topics and /groups list them, the latest
// liveRebalances rebalances, and, when a rule is audited, the first
// liveFindings findings as GET /audit has them (the rest counted in
// "dropped"). It copies one topic or group at a time.
func (s *server) writeLive(st *jsonStream) {
	_ = st.raw("{\n  \"now\": ") && st.value(s.b.Clock().Now(), "  ") &&
		st.raw(",\n  \"bootstrap\": ") && st.value(s.b.AdvertisedAddr(), "  ") &&
		st.raw(",\n  \"kafkaVersion\": ") && st.value(s.b.KafkaVersion().String(), "  ") &&
		st.raw(",\n  \"brokers\": ") && st.value(s.brokerViews(), "  ") &&
		st.raw(",\n  \"manualClock\": ") && st.value(s.manual != nil, "  ") &&
		st.raw(",\n  \"topics\": ") && st.array(1, s.eachTopic) &&
		st.raw(",\n  \"groups\": ") && st.array(1, s.eachGroup) &&
		st.raw(",\n  \"transactions\": ") && st.array(1, func(add func(any) bool) { s.eachTransaction(true, add) }) &&
		st.raw(",\n  \"rebalances\": ") && st.array(1, func(add func(any) bool) {
		rs := s.b.Rebalances()
		eachRebalance(rs[max(0, len(rs)-liveRebalances):], "", add)
	}) && (!s.b.Audited() || st.raw(",\n  \"audit\": ") && st.value(newAuditView(s.liveAudit()), "  ")) && st.raw("\n}")
	st.end()
}

// liveAudit is the findings the live page shows: GET /audit's report cut
// to liveFindings.
func (s *server) liveAudit() broker.AuditReport {
	a := s.b.AuditReport()
	if len(a.Findings) > liveFindings {
		a.Dropped += int64(len(a.Findings) - liveFindings)
		a.Findings = a.Findings[:liveFindings]
	}
	return a
}
