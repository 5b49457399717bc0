// Package rules holds every VAST Event Broker 5.5 rule that vastfake enforces,
// as one struct with one field per rule.
//
// The sources are named on each field: [Consume events] is the "Consume
// events" page of VAST Cluster 5.5's documentation, [Kafka support] VAST's
// knowledge-base pages "Kafka Protocol Support" and "Granting Kafka
// permissions in an identity policy", [API] VAST's management API schema
// (view and topic fields), and [choice] marks an answer vastfake chose where
// VAST publishes none.
//
// VAST returns the profile the broker starts with; Kafka returns the same
// struct with every rule lifted, so a test can run one scenario under both;
// AuditAll audits every rule (see Modes in modes.go: each rule is enforced,
// audited or off).
// Nothing outside this package hard-codes a VAST limit.
package rules

import (
	"slices"
	"time"
)

// Rules is the set of VAST behaviours a broker enforces. The zero value lifts
// every rule (it behaves like Apache Kafka); use VAST for the VAST profile.
type Rules struct {
	// ---- Groups and offsets ----

	// ClassicGroupsOnly keeps the KIP-848 consumer-group APIs
	// (ConsumerGroupHeartbeat, ConsumerGroupDescribe) and the streams-group
	// ones (KIP-1071) out of ApiVersions. [Consume events] The kafka
	// profile serves KIP-848 consumer groups (group.protocol=consumer);
	// the audit profile serves them and records each request; streams
	// groups are not served in any profile.
	ClassicGroupsOnly bool

	// NoShareGroups keeps the share-group APIs of KIP-932 (Kafka's queues:
	// ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
	// ShareAcknowledge and the share-group offsets APIs) out of
	// ApiVersions, and refuses the share-group configs of GROUP config
	// resources: VAST Event Broker 5.5 has no share groups.
	// [Consume events][Kafka support] A rule of its own, apart from
	// ClassicGroupsOnly, because what an app does instead differs: a
	// consumer group with manual commits and a retry topic, not another
	// group protocol. The kafka profile serves share groups; the audit
	// profile serves them and records each request.
	NoShareGroups bool

	// EagerAssignorsOnly refuses cooperative rebalancing: the protocols
	// named in CooperativeAssignors are left out of the JoinGroup protocol
	// vote of a "consumer" group, and a member offering nothing else gets
	// INCONSISTENT_GROUP_PROTOCOL. Every other protocol (range, roundrobin,
	// eager sticky, kafkajs's RoundRobinAssigner, custom names) is voted on
	// as Kafka does. [Consume events][Kafka support], error code [choice]
	EagerAssignorsOnly bool

	// CooperativeAssignors names the cooperative protocols that
	// EagerAssignorsOnly refuses: "cooperative-sticky", the protocol name of
	// the cooperative sticky assignor in the Java client, librdkafka,
	// franz-go and sarama. [Consume events][Kafka support]
	CooperativeAssignors []string

	// IgnoreGroupInstanceID accepts group.instance.id but treats the member
	// as an ordinary dynamic member: no fencing, a restart rebalances. [Consume events]
	IgnoreGroupInstanceID bool

	// MaxGroups caps consumer groups per view; a request that would create
	// one more gets GROUP_MAX_SIZE_REACHED and ListGroups returns at most
	// this many. 0 means no limit. [Consume events], error code [choice]
	MaxGroups int

	// OffsetsNeverExpire keeps committed offsets forever. With it off,
	// offsets of an empty group expire after OffsetsRetention, as in Kafka's
	// offsets.retention.minutes. [Consume events]
	OffsetsNeverExpire bool

	// OffsetsRetention is Kafka's offsets.retention.minutes, used only when
	// OffsetsNeverExpire is off.
	OffsetsRetention time.Duration

	// NoOffsetDelete hides OffsetDelete (key 47) from ApiVersions. [Consume events]
	NoOffsetDelete bool

	// ---- Fetching and offsets ----

	// NoFetchSessions makes every fetch a full fetch: Fetch v7+ answers
	// SessionID 0, and an incremental request (epoch > 0) gets
	// FETCH_SESSION_ID_NOT_FOUND. [Consume events]
	NoFetchSessions bool

	// NoDelayedFetch answers Fetch at once, ignoring fetch.wait.max.ms and
	// fetch.min.bytes. With it off, an empty fetch waits for new data as
	// Kafka does, for up to half of MaxWaitMillis (kafka-go's read deadline
	// is exactly MaxWaitMillis). [Consume events]
	NoDelayedFetch bool

	// NoTopicIDs caps Fetch and Produce at v12, the last versions that name
	// topics rather than topic IDs, reports zero topic IDs in Metadata, and
	// hides ConsumerGroupHeartbeat and ConsumerGroupDescribe, whose
	// assignments name topics by ID only. [Kafka support]
	NoTopicIDs bool

	// StaleEndOffset makes ListOffsets(latest) and the high watermark in
	// ListOffsets trail writes by this duration on the broker's clock. Off
	// (0) by default even in the VAST profile; VAST documents 10-55 s. [Consume events]
	StaleEndOffset time.Duration

	// NoOffsetForLeaderEpoch hides OffsetForLeaderEpoch (key 23), with
	// which a consumer checks its position after a leader change
	// (KIP-320): VAST's pages name neither the API nor leader epochs, and
	// VAST moves a failed node's virtual IPs rather than electing leaders
	// [choice]. Clients then skip the check, as against any broker without
	// the API. The kafka profile serves it.
	NoOffsetForLeaderEpoch bool

	// ---- Producing and topics ----

	// NoIdempotence hides InitProducerID and the transaction APIs, and
	// refuses a batch that carries a producer id with
	// UNSUPPORTED_FOR_MESSAGE_FORMAT. [Kafka support][Consume events], error code [choice]
	NoIdempotence bool

	// NoCompression refuses compressed batches with
	// UNSUPPORTED_COMPRESSION_TYPE. [Kafka support][Consume events]
	NoCompression bool

	// MaxMessageBytes caps a record batch (Kafka's message.max.bytes), and
	// a topic's max.message.bytes cannot raise it; a larger batch gets
	// MESSAGE_TOO_LARGE. 0 means no cap: the topic's max.message.bytes,
	// or else Kafka's message.max.bytes default of 1048588, applies. [Kafka support]
	MaxMessageBytes int

	// MaxKeyBytes and MaxValueBytes cap one record's key and value; a larger
	// one gets MESSAGE_TOO_LARGE. 0 means no limit. [Kafka support]
	MaxKeyBytes   int
	MaxValueBytes int

	// NoAutoCreateTopics answers UNKNOWN_TOPIC_OR_PARTITION for a topic that
	// does not exist and never creates it. With it off, Metadata with
	// AllowAutoTopicCreation creates it as Kafka does. [Kafka support]
	NoAutoCreateTopics bool

	// FixedPartitions hides CreatePartitions: partition counts are fixed at
	// creation. [Kafka support]
	FixedPartitions bool

	// MaxPartitionsPerTopic and MaxPartitionsPerView cap partition counts;
	// CreateTopics over either gets INVALID_PARTITIONS. 0 means no limit.
	// [Kafka support]
	MaxPartitionsPerTopic int
	MaxPartitionsPerView  int

	// VASTTopicConfigsOnly accepts only retention.ms,
	// message.timestamp.type, message.timestamp.before.max.ms,
	// message.timestamp.after.max.ms [API] and cleanup.policy (compact,
	// delete, or both): VAST's current Kafka Protocol Support page lists
	// topic compaction as supported, and its Consume events page warns
	// that offsets can have gaps "for example after compaction" [Kafka support][Consume events].
	// Any other key, the compaction tuning configs
	// (delete.retention.ms, min.compaction.lag.ms,
	// min.cleanable.dirty.ratio) among them, gets INVALID_CONFIG, so a
	// compacted VAST topic runs on Kafka's defaults for those.
	VASTTopicConfigsOnly bool

	// NoOffsetsTopic leaves __consumer_offsets out of Metadata: VAST keeps
	// committed offsets in the cluster, not in a Kafka topic [Consume events],
	// and a request naming it is refused under this rule. With it off the
	// broker keeps __consumer_offsets as Kafka does, internal and
	// read-only to clients, with 50 partitions
	// (offsets.topic.num.partitions) holding a record in Kafka's format
	// for every offset commit and group change, so that clients that look
	// for it (regex consumers skip it, tools describe it, lag monitors such
	// as Burrow read it) find it.
	NoOffsetsTopic bool

	// ---- Broker addresses ----

	// AnyAddressServes serves a request for a partition or a group on any
	// broker address, not only on the partition's leader or the group's
	// coordinator that Metadata and FindCoordinator name. VAST publishes
	// nothing on a request that reaches another of a view's virtual IPs;
	// they all front one cluster, so vastfake assumes they all serve it
	// [choice]. With it off (kafka profile), a Produce, Fetch or ListOffsets
	// partition on another broker gets NOT_LEADER_OR_FOLLOWER (with the
	// current leader where the version carries it) and a group request
	// NOT_COORDINATOR, as Kafka answers. It matters only with several
	// brokers (WithBrokers).
	AnyAddressServes bool

	// ---- Security ----

	// PlainSASLOnly offers SASL/PLAIN alone: a SaslHandshake for
	// SCRAM-SHA-256 or SCRAM-SHA-512 gets UNSUPPORTED_SASL_MECHANISM with
	// the mechanisms VAST offers (PLAIN) and a closed connection, and
	// DescribeUserScramCredentials and AlterUserScramCredentials are not
	// served. With it off the broker serves both SCRAM mechanisms as
	// Kafka does, with a credential for every configured user.
	// [Consume events][API]
	PlainSASLOnly bool

	// Audit names the rules (field names) that are audited rather than
	// enforced: the broker behaves as Kafka for them and records a
	// finding wherever VAST would have refused a request or behaved
	// otherwise. A rule named here keeps its VAST value above, which says
	// what to check; one at its zero value is off. See Modes.
	Audit []string `json:",omitempty"`
}

// KafkaMessageMaxBytes is Apache Kafka's default message.max.bytes.
const KafkaMessageMaxBytes = 1048588

// VAST returns the rules of VAST Event Broker 5.5.
func VAST() Rules {
	return Rules{
		ClassicGroupsOnly:     true,
		NoShareGroups:         true,
		EagerAssignorsOnly:    true,
		CooperativeAssignors:  []string{"cooperative-sticky"},
		IgnoreGroupInstanceID: true,
		MaxGroups:             256,
		OffsetsNeverExpire:    true,
		NoOffsetDelete:        true,

		NoFetchSessions: true,
		NoDelayedFetch:  true,
		NoTopicIDs:      true,

		NoOffsetForLeaderEpoch: true,

		NoIdempotence:         true,
		NoCompression:         true,
		MaxMessageBytes:       1 << 20,   // "1 MB"
		MaxKeyBytes:           126 << 10, // "126 KB"
		MaxValueBytes:         126 << 10,
		NoAutoCreateTopics:    true,
		FixedPartitions:       true,
		MaxPartitionsPerTopic: 20_000,
		MaxPartitionsPerView:  200_000,
		VASTTopicConfigsOnly:  true,
		NoOffsetsTopic:        true,

		AnyAddressServes: true,

		PlainSASLOnly: true,
	}
}

// Kafka returns the rules with every VAST restriction lifted: the broker then
// behaves like Apache Kafka 4.x for everything vastfake implements.
// CooperativeAssignors keeps VAST's list, unused while EagerAssignorsOnly is
// off, so that switching that rule on alone refuses cooperative-sticky.
func Kafka() Rules {
	return Rules{
		CooperativeAssignors: []string{"cooperative-sticky"},
		OffsetsRetention:     7 * 24 * time.Hour,
	}
}

// ForProfile returns the rules for a profile name, "vast", "kafka" or
// "audit" (AuditAll), and false for any other name.
func ForProfile(name string) (Rules, bool) {
	switch name {
	case "vast", "VAST", "":
		return VAST(), true
	case "kafka", "Kafka":
		return Kafka(), true
	case "audit", "Audit":
		return AuditAll(), true
	}
	return Rules{}, false
}

// MessageMaxBytes returns the batch size cap in force.
func (r *Rules) MessageMaxBytes() int {
	if r.MaxMessageBytes > 0 {
		return r.MaxMessageBytes
	}
	return KafkaMessageMaxBytes
}

// CooperativeAssignor reports whether name is one of the cooperative
// protocols listed in CooperativeAssignors.
func (r *Rules) CooperativeAssignor(name string) bool {
	return slices.Contains(r.CooperativeAssignors, name)
}
