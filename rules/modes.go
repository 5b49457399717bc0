package rules

import (
	"reflect"
	"slices"
	"strings"
	"time"
)

// ID names one rule: one field of Rules that switches a VAST behaviour on.
// CooperativeAssignors and OffsetsRetention are not rules of their own but
// settings of EagerAssignorsOnly and of the Kafka behaviour
// OffsetsNeverExpire lifts, so they have no ID.
type ID uint8

// The rules, in the order of the fields of Rules.
const (
	ClassicGroupsOnly ID = iota + 1
	NoShareGroups
	EagerAssignorsOnly
	IgnoreGroupInstanceID
	MaxGroups
	OffsetsNeverExpire
	NoOffsetDelete
	NoFetchSessions
	NoDelayedFetch
	NoTopicIDs
	StaleEndOffset
	NoOffsetForLeaderEpoch
	NoIdempotence
	NoCompression
	MaxMessageBytes
	MaxKeyBytes
	MaxValueBytes
	NoAutoCreateTopics
	FixedPartitions
	MaxPartitionsPerTopic
	MaxPartitionsPerView
	VASTTopicConfigsOnly
	NoOffsetsTopic
	AnyAddressServes
	PlainSASLOnly

	numIDs // one past the last ID
)

var idNames = [numIDs]string{
	ClassicGroupsOnly: "ClassicGroupsOnly", NoShareGroups: "NoShareGroups", EagerAssignorsOnly: "EagerAssignorsOnly",
	IgnoreGroupInstanceID: "IgnoreGroupInstanceID", MaxGroups: "MaxGroups",
	OffsetsNeverExpire: "OffsetsNeverExpire", NoOffsetDelete: "NoOffsetDelete",
	NoFetchSessions: "NoFetchSessions", NoDelayedFetch: "NoDelayedFetch", NoTopicIDs: "NoTopicIDs",
	StaleEndOffset: "StaleEndOffset", NoOffsetForLeaderEpoch: "NoOffsetForLeaderEpoch", NoIdempotence: "NoIdempotence", NoCompression: "NoCompression",
	MaxMessageBytes: "MaxMessageBytes", MaxKeyBytes: "MaxKeyBytes", MaxValueBytes: "MaxValueBytes",
	NoAutoCreateTopics: "NoAutoCreateTopics", FixedPartitions: "FixedPartitions",
	MaxPartitionsPerTopic: "MaxPartitionsPerTopic", MaxPartitionsPerView: "MaxPartitionsPerView",
	VASTTopicConfigsOnly: "VASTTopicConfigsOnly", NoOffsetsTopic: "NoOffsetsTopic",
	AnyAddressServes: "AnyAddressServes", PlainSASLOnly: "PlainSASLOnly",
}

// idFields are the rules' field indexes in Rules, looked up once: Modes
// runs for every broker New, and FieldByName searches by name.
var idFields = func() (f [numIDs]int) {
	t := reflect.TypeFor[Rules]()
	for id := ID(1); id < numIDs; id++ {
		sf, ok := t.FieldByName(idNames[id])
		if !ok {
			panic("rules: no field " + idNames[id])
		}
		f[id] = sf.Index[0]
	}
	return f
}()

// Sources of the rules, as findings quote them.
const (
	sourceConsume = "VAST's Consume events page"
	sourceKB      = "VAST's Kafka protocol support page"
	sourceAPI     = "VAST's management API (topic fields)"
	sourceChoice  = "vastfake's assumption (VAST publishes nothing on it)"
	sourceAPIView = "VAST's management API (view fields)"
)

// sourceLinks are the public addresses of the sources that have one a
// reader can open; MarkdownSource links them.
var sourceLinks = []struct{ name, url string }{
	{sourceKB, "https://kb.vastdata.com/documentation/docs/kafka-protocol-support"},
}

// MarkdownSource returns a Source text as Markdown, each source with a
// public address linked to it.
func MarkdownSource(source string) string {
	for _, l := range sourceLinks {
		source = strings.ReplaceAll(source, l.name, "["+l.name+"]("+l.url+")")
	}
	return source
}

var idSources = [numIDs]string{
	ClassicGroupsOnly: sourceConsume, NoShareGroups: sourceConsume + "; " + sourceKB, EagerAssignorsOnly: sourceConsume + "; " + sourceKB,
	IgnoreGroupInstanceID: sourceConsume, MaxGroups: sourceConsume, OffsetsNeverExpire: sourceConsume,
	NoOffsetDelete: sourceConsume, NoFetchSessions: sourceConsume, NoDelayedFetch: sourceConsume,
	NoTopicIDs: sourceKB, StaleEndOffset: sourceConsume, NoOffsetForLeaderEpoch: sourceChoice, NoIdempotence: sourceKB + "; " + sourceConsume,
	NoCompression: sourceKB + "; " + sourceConsume, MaxMessageBytes: sourceKB, MaxKeyBytes: sourceKB,
	MaxValueBytes: sourceKB, NoAutoCreateTopics: sourceKB, FixedPartitions: sourceKB,
	MaxPartitionsPerTopic: sourceKB, MaxPartitionsPerView: sourceKB, VASTTopicConfigsOnly: sourceAPI,
	NoOffsetsTopic: sourceConsume, AnyAddressServes: sourceChoice, PlainSASLOnly: sourceConsume + "; " + sourceAPIView,
}

// idActions are the one thing to do about each rule, in any client's
// terms, as every refusal message ends with it.
var idActions = [numIDs]string{
	ClassicGroupsOnly:      "use the classic consumer-group protocol (group.protocol=classic, the default)",
	NoShareGroups:          "consume with a classic consumer group and commit after processing; send a record to retry to a retry topic instead of releasing it",
	EagerAssignorsOnly:     "offer an eager assignor such as range (partition.assignment.strategy=range)",
	IgnoreGroupInstanceID:  "do not rely on static membership: a restart of a member with group.instance.id rebalances the group",
	MaxGroups:              "delete the groups tests and tools leave behind (DeleteGroups) and reuse group ids",
	OffsetsNeverExpire:     "do not rely on committed offsets expiring: commit the offset to restart from",
	NoOffsetDelete:         "commit the offset to restart from, or delete the whole group (DeleteGroups)",
	NoFetchSessions:        "nothing: the client falls back to full fetches (or turn fetch sessions off in the client)",
	NoDelayedFetch:         "keep fetch.min.bytes=1 (the default) and do not count on fetches gathering larger batches",
	NoTopicIDs:             "name topics by name: let the client pick Produce and Fetch versions (v12 or lower) from ApiVersions",
	StaleEndOffset:         "do not compare the end offset with what was just produced; wait for the consumer to read the records",
	NoOffsetForLeaderEpoch: "nothing: the client skips checking its position after a leader change (KIP-320), as against a broker without OffsetForLeaderEpoch",
	NoIdempotence:          "set enable.idempotence=false and remove transactional.id, or run -profile audit to find every place the app relies on them",
	NoCompression:          "set compression.type=none",
	MaxMessageBytes:        "keep record batches at most 1 MB (batch.size, max.request.size, message.max.bytes)",
	MaxKeyBytes:            "keep record keys at most 126 KB",
	MaxValueBytes:          "keep record values at most 126 KB: split large payloads, or store them elsewhere and send a reference",
	NoAutoCreateTopics:     "create the topic first (CreateTopics, the VAST UI or API)",
	FixedPartitions:        "create the topic with the partitions it needs",
	MaxPartitionsPerTopic:  "create the topic with fewer partitions",
	MaxPartitionsPerView:   "delete unused topics or create fewer partitions",
	VASTTopicConfigsOnly:   "drop the other topic configs",
	NoOffsetsTopic:         "read committed offsets with OffsetFetch and end offsets with ListOffsets",
	AnyAddressServes:       "nothing: the client retries on the broker Metadata names",
	PlainSASLOnly:          "use SASL/PLAIN over TLS",
}

// Action returns the one thing to do about the rule, as a refusal
// message ends with it: "set compression.type=none".
func (id ID) Action() string {
	if id == 0 || id >= numIDs {
		return ""
	}
	return idActions[id]
}

// Refusal returns the message of a request the rule refused: what VAST
// refuses, the rule's name and one action (action, or else Action),
// "VAST does not accept compressed batches (rule NoCompression): set
// compression.type=none".
func (id ID) Refusal(what, action string) string {
	if action == "" {
		action = id.Action()
	}
	return what + " (rule " + id.String() + "): " + action
}

// String returns the rule's field name in Rules, "NoCompression".
func (id ID) String() string {
	if id == 0 || id >= numIDs {
		return ""
	}
	return idNames[id]
}

// Source names the VAST documentation the rule comes from.
func (id ID) Source() string {
	if id == 0 || id >= numIDs {
		return ""
	}
	return idSources[id]
}

// IDs returns every rule, in the order of the fields of Rules.
func IDs() []ID {
	out := make([]ID, 0, numIDs-1)
	for id := ID(1); id < numIDs; id++ {
		out = append(out, id)
	}
	return out
}

// Lookup returns the rule whose field name is name, and false for a name
// that is not a rule.
func Lookup(name string) (ID, bool) {
	for id := ID(1); id < numIDs; id++ {
		if idNames[id] == name {
			return id, true
		}
	}
	return 0, false
}

// Mode is how a broker applies one rule.
type Mode uint8

const (
	// Off lifts the rule: the broker behaves as Apache Kafka.
	Off Mode = iota
	// Enforce makes the broker behave as VAST: a request VAST refuses is
	// refused with VAST's error, and the request log names the rule.
	Enforce
	// Audit makes the broker behave as Apache Kafka, and records a finding
	// wherever VAST would have refused the request or behaved otherwise.
	Audit
)

func (m Mode) String() string {
	switch m {
	case Enforce:
		return "enforce"
	case Audit:
		return "audit"
	}
	return "off"
}

// Modes holds the mode of every rule, indexed by ID; the broker computes
// it once, so that a check costs an array read.
type Modes [numIDs]Mode

// Of returns the mode of rule id.
func (m *Modes) Of(id ID) Mode { return m[id] }

// Check applies rule id to a request that does what the rule is about (a
// compressed batch, a topic that does not exist, only cooperative
// protocols offered). It is the one place a rule's mode takes effect, for
// the broker and the coordinator alike:
//   - enforced, it calls refuse when kind is Refused and returns true: the
//     caller answers as VAST does;
//   - audited, it calls record and returns false: the caller goes on as
//     Kafka does, and record keeps the finding;
//   - off, it returns false.
//
// refuse and record may be nil. Neither is kept, so closures passed here
// cost no allocation on a request's path.
func (m *Modes) Check(id ID, kind Kind, refuse, record func()) bool {
	switch m[id] {
	case Enforce:
		if kind == Refused && refuse != nil {
			refuse()
		}
		return true
	case Audit:
		if record != nil {
			record()
		}
	}
	return false
}

// Modes returns the mode of every rule: Off while the rule's field holds
// its zero value (its Kafka behaviour), Audit when the rule is named in
// r.Audit, Enforce otherwise. This is the one place that decides.
func (r *Rules) Modes() Modes {
	var m Modes
	v := reflect.ValueOf(r).Elem()
	for id := ID(1); id < numIDs; id++ {
		if v.Field(idFields[id]).IsZero() {
			continue
		}
		m[id] = Enforce
		if slices.Contains(r.Audit, idNames[id]) {
			m[id] = Audit
		}
	}
	return m
}

// Mode returns the mode of rule id under r (see Modes).
func (r *Rules) Mode(id ID) Mode {
	m := r.Modes()
	return m[id]
}

// SetMode switches rule id to mode: Enforce and Audit give the rule its
// VAST value when it holds its Kafka one (a limit already set keeps its
// value), Off gives it its Kafka value. An id that names no rule changes
// nothing.
func (r *Rules) SetMode(id ID, mode Mode) {
	if id == 0 || id >= numIDs {
		return
	}
	f := reflect.ValueOf(r).Elem().Field(idFields[id])
	r.Audit = slices.DeleteFunc(r.Audit, func(s string) bool { return s == id.String() })
	if len(r.Audit) == 0 {
		r.Audit = nil
	}
	switch mode {
	case Off:
		f.Set(reflect.Zero(f.Type()))
		return
	case Audit:
		r.Audit = append(r.Audit, id.String())
	}
	if f.IsZero() {
		vast := auditValues()
		f.Set(reflect.ValueOf(&vast).Elem().Field(idFields[id]))
	}
}

// AuditStaleEndOffset is the end-offset lag the audit profile checks
// ListOffsets against: the lower end of the 10-55 s VAST documents.
const AuditStaleEndOffset = 10 * time.Second

// auditValues is VAST with StaleEndOffset at the lag VAST documents.
func auditValues() Rules {
	r := VAST()
	r.StaleEndOffset = AuditStaleEndOffset
	return r
}

// AuditAll returns the audit profile: the broker behaves as Apache Kafka
// (as with Kafka), and every VAST rule, StaleEndOffset included at
// AuditStaleEndOffset, is audited. OffsetsRetention is Kafka's, so that
// offsets expire as Kafka's would and the audit can say VAST's would not.
func AuditAll() Rules {
	r := auditValues()
	r.OffsetsRetention = Kafka().OffsetsRetention
	for id := ID(1); id < numIDs; id++ {
		r.Audit = append(r.Audit, idNames[id])
	}
	return r
}

// Kind says how VAST's answer to a request would have differed from
// Kafka's.
type Kind uint8

const (
	// Refused: VAST would have answered with an error.
	Refused Kind = iota + 1
	// Differs: VAST would have accepted the request but behaved
	// differently, in a way the app may depend on.
	Differs
)

func (k Kind) String() string {
	switch k {
	case Refused:
		return "refused"
	case Differs:
		return "differs"
	}
	return ""
}
