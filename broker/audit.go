package broker

// Audit: where a rule is audited (rules.Audit) the broker answers as Kafka
// does and records a finding wherever VAST would have refused the request
// or behaved otherwise. Every rule's check calls Broker.vast, which applies
// the rule's mode: the check is written once, and enforcing, auditing and
// lifting follow from it.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// Finding is one way an app's requests would fare differently on VAST,
// grouped by rule, kind, client, API and topic or group. The JSON names are
// the control plane's GET /audit contract.
type Finding struct {
	// Rule is the rules.Rules field name, "NoCompression".
	Rule string `json:"rule"`
	// Kind is "refused" (VAST would have answered with an error) or
	// "differs" (VAST would have accepted but behaved otherwise).
	Kind string `json:"kind"`
	// Source names the VAST documentation the rule comes from.
	Source string `json:"source"`
	// ClientID is the Kafka client id of the requests; ClientSoftware and
	// ClientVersion are what the client said it was in ApiVersions v3+
	// ("librdkafka", "2.0.2"), empty when it did not say.
	ClientID       string `json:"clientId"`
	ClientSoftware string `json:"clientSoftware"`
	ClientVersion  string `json:"clientVersion"`
	// API names the requests' API, "InitProducerId": a finding is one
	// rule, client and API (and topic or group), so that a transactional
	// app's FindCoordinator, InitProducerId, AddPartitionsToTxn and EndTxn
	// are rows of their own. It is empty for a finding no request caused
	// (offsets expiring, the group cleanup).
	API string `json:"api"`
	// Topic and Group name what the requests were about, when they name
	// one.
	Topic string `json:"topic"`
	Group string `json:"group"`
	// Count is how many times it was seen; First and Last when, on the
	// broker's clock.
	Count int64     `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Advice says what to change, in the client's own terms when the
	// client is known, or what to check in the app.
	Advice string `json:"advice"`
	// Detail describes the first request seen, "compressed batch (snappy)".
	Detail string `json:"detail"`
}

// maxFindings bounds the distinct findings the broker keeps. Further
// distinct ones are counted (FindingsDropped) but not kept; the ones kept
// still count their repeats. Each is a few hundred bytes, names clipped as
// the request log clips them.
const maxFindings = 10_000

type findingKey struct {
	rule                       rules.ID
	kind                       rules.Kind
	api                        int16 // -1: no request
	txn                        bool  // NoIdempotence: the request was transactional
	clientID, software, swVers string
	topic, group               string
}

// auditLog holds the findings, and the errors answered without a rule.
type auditLog struct {
	mu      sync.Mutex
	byKey   map[findingKey]*Finding
	order   []*Finding // in the order first seen
	dropped int64

	errByKey   map[errorKey]*ErrorCount
	errOrder   []*ErrorCount
	errDropped int64
}

// record adds one occurrence of a finding seen at now; detail describes
// it, and is called only for a finding not seen before.
func (a *auditLog) record(k findingKey, detail func() string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.byKey[k]; f != nil {
		f.Count++
		f.Last = now
		return
	}
	if len(a.order) >= maxFindings {
		a.dropped++
		return
	}
	if a.byKey == nil {
		a.byKey = make(map[findingKey]*Finding)
	}
	f := &Finding{Rule: k.rule.String(), Kind: k.kind.String(), Source: k.rule.Source(),
		ClientID: k.clientID, ClientSoftware: k.software, ClientVersion: k.swVers,
		Topic: k.topic, Group: k.group, Count: 1, First: now, Last: now,
		Detail: logMessage(detail())}
	f.Advice = findingAdvice(k, f.Detail)
	if k.api >= 0 {
		f.API = kmsg.NameForKey(k.api)
	}
	a.byKey[k] = f
	a.order = append(a.order, f)
}

// vast applies rule id to a request (r; nil for the broker's own work,
// seed topics or expiry) that does what the rule is about: sends a
// compressed batch, names a topic that does not exist, offers only
// cooperative protocols. The rule's mode decides (rules.Modes.Check):
//   - enforced, it records a refusal on r (kind Refused) and returns true:
//     the caller answers as VAST does;
//   - audited, it records a finding of kind about topic or group, with
//     detail saying what the request did, and returns false: the caller
//     goes on as Kafka does;
//   - off, it returns false.
//
// detail is called only for a finding not seen before, so that a check on
// the produce or fetch path costs no string in any mode (a closure that
// does not escape costs no allocation either).
func (b *Broker) vast(r *request, id rules.ID, kind rules.Kind, topic, group string, detail func() string) bool {
	return b.modes.Check(id, kind,
		func() {
			if r != nil {
				r.refuse(id.String())
				if r.refusedAbout == "" {
					r.refusedAbout = cmp.Or(topic, group)
				}
			}
		},
		func() { b.recordFinding(r, id, kind, topic, group, detail) })
}

// enforced reports whether rule id is enforced, for behaviour that is not
// a check of one request (what Metadata lists, what configs report).
func (b *Broker) enforced(id rules.ID) bool { return b.modes[id] == rules.Enforce }

// audited reports whether rule id is audited.
func (b *Broker) audited(id rules.ID) bool { return b.modes[id] == rules.Audit }

// recordFinding records a finding of rule id for r (nil: no client).
func (b *Broker) recordFinding(r *request, id rules.ID, kind rules.Kind, topic, group string, detail func() string) {
	k := findingKey{rule: id, kind: kind, topic: clip(topic), group: clip(group), api: -1}
	if r != nil {
		k.clientID, k.software, k.swVers = b.clientOf(r)
		if r.kreq != nil {
			k.api = r.kreq.Key()
			k.txn = id == rules.NoIdempotence && transactional(r.kreq)
		}
		r.finding, r.findings = addRule(r.finding, r.findings, id.String())
		if kind == rules.Refused {
			r.refusedFindings = append(r.refusedFindings, findingRef{rule: id.String(), topic: k.topic, group: k.group})
		}
	}
	b.audit.record(k, detail, b.clock.Now())
}

// Findings returns the findings of the audited rules, in the order they
// were first seen, each with its count and advice. It is empty when no
// rule is audited.
func (b *Broker) Findings() []Finding {
	b.audit.mu.Lock()
	defer b.audit.mu.Unlock()
	out := make([]Finding, len(b.audit.order))
	for i, f := range b.audit.order {
		out[i] = *f
	}
	return out
}

// FindingsDropped returns how many distinct findings were not kept
// because the broker already held maxFindings (10,000) of them.
func (b *Broker) FindingsDropped() int64 {
	b.audit.mu.Lock()
	defer b.audit.mu.Unlock()
	return b.audit.dropped
}

// ResetFindings forgets every finding, and the errors answered without a
// rule.
func (b *Broker) ResetFindings() {
	b.audit.mu.Lock()
	defer b.audit.mu.Unlock()
	b.audit.byKey, b.audit.order, b.audit.dropped = nil, nil, 0
	b.audit.errByKey, b.audit.errOrder, b.audit.errDropped = nil, nil, 0
	b.resetForecast()
}

// Audited reports whether any rule is audited.
func (b *Broker) Audited() bool {
	for _, m := range b.modes {
		if m == rules.Audit {
			return true
		}
	}
	return false
}

// coordinatorFinding is the coordinator's Config.Audit: it records a
// finding no request caused, about a group as a whole, naming the group's
// clients, never "(no client)", when it has some.
func (b *Broker) coordinatorFinding(clients string, id rules.ID, kind rules.Kind, group, detail string) {
	var r *request
	if clients != "" {
		r = &request{clientID: clients}
	}
	b.recordFinding(r, id, kind, "", group, func() string { return detail })
}

// SortFindings orders findings by rule, kind, client, topic and group, for
// reports that should read the same from run to run.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.ClientSoftware, b.ClientSoftware), cmp.Compare(a.ClientID, b.ClientID),
			cmp.Compare(a.API, b.API), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Group, b.Group))
	})
}

// appAdvice is advice in an app's own configuration, per app and rule;
// a rule an app has none for gets its client library's advice.
var appAdvice = map[string]map[rules.ID]string{
	appOTelCollector: {
		rules.EagerAssignorsOnly:    "in the Collector's kafka receiver, set group_rebalance_strategies: [range] (YAML)",
		rules.NoCompression:         "in the Collector's kafka exporter, set producer: {compression: none} (YAML)",
		rules.MaxMessageBytes:       "in the Collector's kafka exporter, keep producer: {max_message_bytes: 1000000} or less (YAML)",
		rules.NoAutoCreateTopics:    "create the exporter's topics first: the Collector's kafka exporter cannot create them on VAST",
		rules.IgnoreGroupInstanceID: "in the Collector's kafka receiver, remove group_instance_id: VAST makes the member dynamic, so a restart rebalances",
		rules.NoIdempotence:         "in the Collector's kafka exporter, set producer: {required_acks: 1} (YAML), its default: the exporter writes idempotently only with required_acks: all (-1)",
		rules.PlainSASLOnly:         "in the Collector's kafka receiver and exporter, set auth: {sasl: {mechanism: PLAIN}} with tls (YAML)",
	},
	appRsyslog: {
		rules.NoCompression:      `in omkafka, set confParam=["compression.type=none"] (compression.codec is its alias: replace either)`,
		rules.NoIdempotence:      `in omkafka, set confParam=["enable.idempotence=false"] and no transactional.id`,
		rules.EagerAssignorsOnly: `in imkafka, set confParam=["partition.assignment.strategy=range"]`,
		rules.MaxMessageBytes:    `in omkafka, keep confParam "message.max.bytes" at 1000000 or less`,
		rules.NoAutoCreateTopics: "create omkafka's topic first: VAST never creates one on first use",
		rules.PlainSASLOnly:      `in omkafka and imkafka, set confParam=["sasl.mechanism=PLAIN", "security.protocol=SASL_SSL"]`,
	},
	appSyslogNG: {
		rules.NoCompression:      `in the kafka-c() destination, set config("compression.type" => "none") (compression.codec is its alias: replace either)`,
		rules.NoIdempotence:      `in the kafka-c() destination, set config("enable.idempotence" => "false")`,
		rules.MaxMessageBytes:    `in the kafka-c() destination, keep config("message.max.bytes" => "1000000") or less`,
		rules.NoAutoCreateTopics: "create the kafka-c() destination's topic first: VAST never creates one on first use",
		rules.PlainSASLOnly:      `in the kafka-c() destination, set config("sasl.mechanism" => "PLAIN" "security.protocol" => "SASL_SSL")`,
	},
	appKcat: {
		rules.NoCompression:      "run kcat with -X compression.type=none (compression.codec is its alias) and without -z",
		rules.NoIdempotence:      "run kcat with -X enable.idempotence=false",
		rules.EagerAssignorsOnly: "run kcat with -X partition.assignment.strategy=range",
		rules.NoAutoCreateTopics: "create the topic first: kcat cannot create it on VAST",
		rules.PlainSASLOnly:      "run kcat with -X sasl.mechanism=PLAIN -X security.protocol=SASL_SSL",
	},
}

// adviceFor is a rule's advice: per client family, and the general one
// ("" family) for any other client.
type adviceFor map[string]string

var adviceTable = map[rules.ID]adviceFor{
	rules.NoCompression: {
		"":               "produce uncompressed batches (compression.type=none)",
		familyLibrdkafka: "set compression.type=none (compression.codec is its alias: an app may set either); librdkafka also skips compression that does not shrink a batch, so a small test message can pass where real traffic is refused",
		familyFranz:      "add kgo.ProducerBatchCompression(kgo.NoCompression()) (kgo compresses with snappy by default)",
		familySarama:     "set config.Producer.Compression = sarama.CompressionNone",
		familyKafkaGo:    "leave Writer.Compression unset",
		familyKafkaJS:    "send with compression: CompressionTypes.None (the default)",
		familyJava:       "set compression.type=none",
		familyKafkaPy:    "leave compression_type unset (None, the default)",
	},
	rules.NoIdempotence: {
		"":               "turn idempotence and transactions off (enable.idempotence=false, no transactional.id)",
		familyLibrdkafka: "set enable.idempotence=false and no transactional.id",
		familyFranz:      "add kgo.DisableIdempotentWrite(): against VAST an idempotent kgo producer falls back quietly to plain produces, but its no-duplicates and ordering guarantees are gone",
		familySarama:     "set config.Producer.Idempotent = false and no Producer.Transaction.ID",
		familyKafkaJS:    "create the producer without idempotent: true or a transactionalId",
		familyJava:       "set enable.idempotence=false (true by default since Kafka 3.0) and no transactional.id",
		familyKafkaPy:    "leave enable_idempotence off (the default) and set no transactional_id",
	},
	rules.EagerAssignorsOnly: {
		"":               "offer an eager assignor (range or roundrobin); VAST refuses a member that offers only cooperative-sticky",
		familyLibrdkafka: "set partition.assignment.strategy=range (or range,roundrobin, the default)",
		familyFranz:      "add kgo.Balancers(kgo.RangeBalancer()) (kgo's default is cooperative-sticky only)",
		familySarama:     "set config.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}",
		familyKafkaGo:    "use GroupBalancers: []kafka.GroupBalancer{kafka.RangeGroupBalancer{}}",
		familyKafkaJS:    "use the default RoundRobinAssigner",
		familyJava:       "set partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor",
	},
	rules.IgnoreGroupInstanceID: {
		"":               "VAST ignores group.instance.id: the member is dynamic, a restart rebalances the group and the session timeout does not keep its partitions; do not rely on static membership",
		familyLibrdkafka: "remove group.instance.id: VAST makes the member dynamic, so a restart rebalances",
		familyFranz:      "remove kgo.InstanceID(...): VAST makes the member dynamic, so a restart rebalances",
		familySarama:     "leave config.Consumer.Group.InstanceId empty: VAST makes the member dynamic, so a restart rebalances",
		familyJava:       "remove group.instance.id: VAST makes the member dynamic, so a restart rebalances",
	},
	rules.MaxGroups: {
		"": "VAST keeps at most 256 consumer groups per view and lists at most 256: delete the groups a test or a tool leaves behind (DeleteGroups), reuse group ids",
	},
	rules.OffsetsNeverExpire: {
		"": "VAST never expires committed offsets: a group that comes back after offsets.retention.minutes resumes from its committed offset, not from auto.offset.reset",
	},
	rules.NoOffsetDelete: {
		"": "VAST has no OffsetDelete: commit the offset to restart from, or delete the whole group (DeleteGroups)",
	},
	rules.NoFetchSessions: {
		"":          "VAST has no fetch sessions: every fetch is a full fetch",
		familyFranz: "add kgo.DisableFetchSessions()",
	},
	rules.NoDelayedFetch: {
		"":               "VAST answers a fetch at once with what it has and ignores fetch.min.bytes: keep fetch.min.bytes=1 (the default) and do not count on fetches gathering larger batches",
		familyLibrdkafka: "set fetch.min.bytes=1 (the default): VAST answers fetches at once and never gathers fetch.min.bytes",
		familyFranz:      "use kgo.FetchMinBytes(1) (the default): VAST answers fetches at once and never gathers more",
		familySarama:     "set config.Consumer.Fetch.Min = 1 (the default): VAST answers fetches at once",
		familyKafkaGo:    "set ReaderConfig.MinBytes = 1 (the default): VAST answers fetches at once",
		familyKafkaJS:    "use minBytes: 1 (the default): VAST answers fetches at once",
		familyJava:       "set fetch.min.bytes=1 (the default): VAST answers fetches at once",
	},
	rules.NoTopicIDs: {
		"": "VAST serves Produce and Fetch up to v12 and no topic IDs: let the client pick versions from ApiVersions and name topics by name",
	},
	rules.StaleEndOffset: {
		"": "VAST's end offset (ListOffsets latest, end_offsets, get_watermark_offsets, the high watermark) may trail writes by 10-55 s: do not compare it with what was just produced; wait for the consumer to read the records instead",
	},
	rules.NoOffsetForLeaderEpoch: {
		"": "VAST serves no OffsetForLeaderEpoch: after a leader change the client does not check its position against the new leader's log (KIP-320) and reads on; nothing to change, but do not count on that check to find a truncated log",
	},
	rules.MaxMessageBytes: {
		"":               "keep record batches at most 1 MB (VAST's message size limit)",
		familyLibrdkafka: "keep batches at most 1 MB: message.max.bytes=1000000 (the default) and smaller records",
		familyFranz:      "keep batches at most 1 MB: kgo.ProducerBatchMaxBytes(1000000) (the default)",
		familySarama:     "keep config.Producer.MaxMessageBytes at most 1000000 (the default)",
		familyJava:       "keep batch.size and max.request.size at most 1048576",
	},
	rules.MaxKeyBytes:   {"": "keep record keys at most 126 KB (VAST's key size limit)"},
	rules.MaxValueBytes: {"": "keep record values at most 126 KB (VAST's value size limit): split large payloads or store them elsewhere and send a reference"},
	rules.NoAutoCreateTopics: {
		"":               "VAST never creates a topic on first use: create every topic first (CreateTopics, the VAST UI or API)",
		familyLibrdkafka: "create the topic first; allow.auto.create.topics=true has no effect on VAST",
		familyFranz:      "create the topic first and drop kgo.AllowAutoTopicCreation()",
		familySarama:     "create the topic first (ClusterAdmin.CreateTopic); Metadata.AllowAutoTopicCreation has no effect on VAST",
		familyKafkaGo:    "create the topic first (Conn.CreateTopics); Writer.AllowAutoTopicCreation has no effect on VAST",
		familyKafkaJS:    "create the topic first (admin.createTopics); allowAutoTopicCreation has no effect on VAST",
		familyJava:       "create the topic first (Admin.createTopics)",
	},
	rules.FixedPartitions: {
		"": "VAST fixes partition counts at creation: create the topic with the partitions it needs instead of adding some later",
	},
	rules.MaxPartitionsPerTopic: {"": "VAST allows at most 20,000 partitions per topic"},
	rules.MaxPartitionsPerView:  {"": "VAST allows at most 200,000 partitions per view"},
	rules.VASTTopicConfigsOnly: {
		"": "VAST accepts only the topic configs " + vastTopicConfigList() + ": drop the others",
	},
	rules.NoOffsetsTopic: {
		"": "VAST has no __consumer_offsets topic, so a lag monitor that reads it (Burrow's consumer module) sees no group: read lag with OffsetFetch (committed offsets: the consumer's committed(), Admin listConsumerGroupOffsets, kafka-consumer-groups.sh --describe) and ListOffsets (end offsets) instead",
	},
	rules.AnyAddressServes: {
		"": "nothing to change: the client sent a request to a broker that does not lead the partition (or coordinate the group), and retries on the one Metadata names; on VAST any address of the view is assumed to serve it",
	},
	rules.PlainSASLOnly: {
		"":               "VAST offers SASL/PLAIN only: log in with PLAIN over TLS (sasl.mechanism=PLAIN, security.protocol=SASL_SSL)",
		familyLibrdkafka: "set sasl.mechanism=PLAIN (sasl.mechanisms is its alias), with security.protocol=SASL_SSL so that the password travels encrypted",
		familyJava:       "set sasl.mechanism=PLAIN and sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"...\" password=\"...\"; with security.protocol=SASL_SSL",
		familyFranz:      "use kgo.SASL(plain.Auth{User: ..., Pass: ...}.AsMechanism()) (github.com/twmb/franz-go/pkg/sasl/plain) instead of scram.Auth, with kgo.DialTLSConfig(...)",
		familySarama:     "set config.Net.SASL.Mechanism = sarama.SASLTypePlaintext and drop SCRAMClientGeneratorFunc, with config.Net.TLS.Enable = true",
		familyKafkaGo:    "use plain.Mechanism{Username: ..., Password: ...} (github.com/segmentio/kafka-go/sasl/plain) instead of scram.Mechanism, with a TLS dialer",
		familyKafkaJS:    "use sasl: { mechanism: 'plain', username, password } with ssl: true",
		familyKafkaPy:    "set sasl_mechanism='PLAIN' and security_protocol='SASL_SSL'",
	},
	rules.NoShareGroups: {
		"":               "VAST has no share groups (KIP-932 queues): consume with a classic consumer group and commit each record's offset once it is processed; send a record to retry to a retry topic (and one that keeps failing to a dead-letter topic) instead of releasing or rejecting it, and run more consumers than partitions no more: a partition has one consumer",
		familyFranz:      "replace kgo.ShareGroup(...) with kgo.ConsumerGroup(...), kgo.Balancers(kgo.RangeBalancer()) and kgo.DisableAutoCommit(), and CommitRecords once records are processed; instead of r.Ack(kgo.AckRelease) produce the record to a retry topic, instead of kgo.AckReject to a dead-letter topic",
		familyJava:       "replace KafkaShareConsumer with KafkaConsumer (group.protocol=classic, enable.auto.commit=false, partition.assignment.strategy=range) and commitSync once records are processed; instead of acknowledge(record, AcknowledgeType.RELEASE) send the record to a retry topic, instead of REJECT to a dead-letter topic",
		familyLibrdkafka: "replace the share consumer with a classic consumer (group.protocol=classic, enable.auto.commit=false, partition.assignment.strategy=range) and commit each message once processed (rd_kafka_commit_message, consumer.commit(message)); produce a message to retry to a retry topic instead of releasing it",
		familyKafkaTS:    "replace kafka.shareConsumer(...) with kafka.consumer({ groupId }) and commit offsets once messages are processed; produce a message to retry to a retry topic instead of releasing it",
	},
	rules.ClassicGroupsOnly: {
		"":               "VAST speaks the classic consumer-group protocol only: no KIP-848 consumer groups (group.protocol=consumer) or streams groups; use the classic protocol",
		familyLibrdkafka: "set group.protocol=classic (the default): with group.protocol=consumer a librdkafka consumer gets no assignment from VAST and says why only in its debug log (debug=cgrp)",
		familyFranz:      "drop kgo.ServerSideBalancer(): against VAST kgo falls back to the classic protocol quietly, with the client-side balancers you list in kgo.Balancers",
		familyJava:       "set group.protocol=classic (the default before Kafka 5.0): with group.protocol=consumer KafkaConsumer fails against VAST with UnsupportedVersionException",
	},
}

// topicIDAsNameAdvice is NoTopicIDs' advice for a client that sends a
// topic ID where the name belongs: a client bug no setting fixes, as the
// client already picked its versions from ApiVersions.
const topicIDAsNameAdvice = "no client setting fixes this: the client picked Fetch v12 or lower from ApiVersions and then sent the topic's ID where its name belongs, a bug of the client; upgrade the client to a release that fixes it, or use another client for this topic (kcat, kafkajs, kgo name topics by name at these versions)"

// transactional reports whether a request is part of a transaction: the
// transaction APIs, a transactional produce, an InitProducerId with a
// transactional id, a FindCoordinator for a transaction coordinator.
func transactional(req kmsg.Request) bool {
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		return req.TransactionID != nil
	case *kmsg.InitProducerIDRequest:
		return req.TransactionalID != nil
	case *kmsg.FindCoordinatorRequest:
		return req.CoordinatorType == coordinatorTransaction
	case *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest, *kmsg.EndTxnRequest, *kmsg.TxnOffsetCommitRequest:
		return true
	}
	return false
}

// transactionAdvice is NoIdempotence's advice for a transactional request:
// a transactional app does not fall back to plain produces as an
// idempotent one does; it fails.
var transactionAdvice = adviceFor{
	"":               "VAST has no transactions: remove transactional.id and commit offsets with the consumer instead of in the transaction (sendOffsetsToTransaction)",
	familyLibrdkafka: "remove transactional.id: librdkafka fails before sending anything (\"requires broker version >= 0.11.0\"), and commit offsets with the consumer",
	familyFranz:      "remove kgo.TransactionalID(...) and use BeginTransaction/EndTransaction no more: against VAST a transactional kgo client fails at BeginTransaction with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; it does not fall back",
	familySarama:     "set no Producer.Transaction.ID and leave Producer.Idempotent false",
	familyKafkaJS:    "create the producer without a transactionalId and send without producer.transaction()",
	familyJava:       "remove transactional.id and the initTransactions/beginTransaction calls",
	familyKafkaPy:    "set no transactional_id",
}

// findingAdvice returns the advice for a finding whose first request
// detail describes: in the app's own terms when the app is one appAdvice
// knows, else in its client library's.
func findingAdvice(k findingKey, detail string) string {
	if k.rule == rules.NoTopicIDs && strings.Contains(detail, "sent a topic ID as a name") {
		return topicIDAsNameAdvice
	}
	app := appOf(k.software, k.clientID)
	if s := appAdvice[app][k.rule]; s != "" {
		return s
	}
	family := clientFamily(k.software, k.clientID)
	if app != "" && family == "" {
		family = appFamilies[app][0]
	}
	if app != "" && (family == familyFranz || family == familySarama) {
		// The app is configured, not coded: the library's code would not
		// help, the general advice does.
		return advice(k.rule, k.kind, "")
	}
	s := libraryAdvice(k, family, detail)
	if app == "" && libraryDefaultID(k.clientID) {
		s += embeddingAdvice(family, k.rule)
	}
	return s
}

// embeddingAdvice is what follows a library's advice for a client at the
// library's default client id: the forms of the known apps built on the
// library that have one for rule, and how to get one app's form alone.
func embeddingAdvice(family string, rule rules.ID) string {
	var forms, names []string
	for _, app := range appsEmbedding(family) {
		names = append(names, app)
		if s := appAdvice[app][rule]; s != "" {
			forms = append(forms, app+": "+s)
		}
	}
	if len(forms) == 0 {
		return ""
	}
	return ". If the client is an app built on " + family + ": " + strings.Join(forms, "; ") +
		" (set the app's client.id to its name, " + strings.Join(names, ", ") + ", for its form alone)"
}

// libraryAdvice is a finding's advice in its client library's terms.
func libraryAdvice(k findingKey, family, detail string) string {
	if k.rule == rules.NoCompression && family == familyFranz && !strings.Contains(detail, "snappy") {
		// kgo's default codec is snappy: a batch of another codec is the
		// app's own choice, so the default is not the cause.
		return "add kgo.ProducerBatchCompression(kgo.NoCompression())"
	}
	if k.txn {
		if s, ok := transactionAdvice[family]; ok && family != "" {
			return s
		}
		return transactionAdvice[""]
	}
	return advice(k.rule, k.kind, family)
}

// advice returns the advice for a finding of rule id about a client of
// family ("" unknown).
func advice(id rules.ID, kind rules.Kind, family string) string {
	a := adviceTable[id]
	if s, ok := a[family]; ok && family != "" {
		return s
	}
	return a[""]
}

// AuditReport is what the control plane's GET /audit and the binary's
// JSON report hold: which rules were audited and which enforced, the
// findings, how many distinct ones were not kept, and the requests enforced
// rules refused. A report with no findings is an all-clear only for the
// rules in Audited: Refusals says what the enforced ones refused.
type AuditReport struct {
	// Audited and Enforced name the rules (fields of rules.Rules) in each
	// mode; a rule in neither is off.
	Audited  []string  `json:"audited"`
	Enforced []string  `json:"enforced"`
	Findings []Finding `json:"findings"`
	Dropped  int64     `json:"dropped,omitempty"`
	// Refusals counts, per enforced rule, the refused requests the
	// request log still holds (Broker.Refusals), with the latest one's
	// message.
	Refusals []RuleRefusals `json:"refusals"`
	// Errors counts the errors answered without a rule, by API, client
	// and error, in every profile: a report with errors here is not an
	// all-clear even with no findings. ErrorsDropped counts distinct
	// ones not kept (the broker keeps 1,000).
	Errors        []ErrorCount `json:"errors"`
	ErrorsDropped int64        `json:"errorsDropped,omitempty"`
	// Groups says, per client, how many consumer groups it created and
	// how many of them are empty now: the forecast of rule MaxGroups.
	Groups []GroupsCreated `json:"groups"`
	// Formations says how each group formed: the rebalances of members
	// joining one by one, which VAST's first-generation wait would fold
	// into one.
	Formations []GroupFormation `json:"formations"`
}

// RuleRefusals is how many requests one enforced rule refused, as the
// request log still holds them, and the message of the latest.
type RuleRefusals struct {
	Rule    string `json:"rule"`
	Count   int    `json:"count"`
	Message string `json:"message"`
}

// AuditReport returns the report: the rules' modes, the findings sorted as
// SortFindings does, and the refusals counted by rule, most first.
func (b *Broker) AuditReport() AuditReport {
	fs := b.Findings()
	SortFindings(fs)
	rep := AuditReport{Audited: []string{}, Enforced: []string{}, Findings: fs, Dropped: b.FindingsDropped(), Refusals: []RuleRefusals{},
		Errors: b.Errors(), Groups: b.GroupsCreated(), Formations: b.GroupFormations()}
	b.audit.mu.Lock()
	rep.ErrorsDropped = b.audit.errDropped
	b.audit.mu.Unlock()
	slices.SortStableFunc(rep.Errors, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(a.API, b.API), cmp.Compare(a.Error, b.Error),
			cmp.Compare(a.ClientSoftware, b.ClientSoftware), cmp.Compare(a.ClientID, b.ClientID),
			cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Group, b.Group))
	})
	for _, id := range rules.IDs() {
		switch b.modes.Of(id) {
		case rules.Audit:
			rep.Audited = append(rep.Audited, id.String())
		case rules.Enforce:
			rep.Enforced = append(rep.Enforced, id.String())
		}
	}
	byRule := map[string]int{}
	for _, r := range b.Refusals() {
		i, ok := byRule[r.Rule]
		if !ok {
			i = len(rep.Refusals)
			byRule[r.Rule] = i
			rep.Refusals = append(rep.Refusals, RuleRefusals{Rule: r.Rule})
		}
		rep.Refusals[i].Count++
		rep.Refusals[i].Message = r.Message
	}
	slices.SortStableFunc(rep.Refusals, func(a, b RuleRefusals) int { return cmp.Compare(b.Count, a.Count) })
	return rep
}

// Client describes the client of a finding: its software and version when
// it said them, and its client id.
func (f *Finding) Client() string {
	return clientLabel(f.ClientSoftware, f.ClientVersion, f.ClientID)
}

// Markdown renders the report as a Markdown document: a summary line and
// one table row per finding.
func (a AuditReport) Markdown() string {
	var sb strings.Builder
	refused, differs := 0, 0
	for _, f := range a.Findings {
		if f.Kind == rules.Refused.String() {
			refused++
		} else {
			differs++
		}
	}
	sb.WriteString("# VAST compatibility report\n\n")
	if len(a.Audited) == 0 {
		sb.WriteString("No rule was audited (start the broker with -profile audit to audit them all), so this report has no findings: it is not an all-clear.\n")
	} else {
		fmt.Fprintf(&sb, "Audited rules: %s.\n", strings.Join(a.Audited, ", "))
	}
	if len(a.Enforced) > 0 {
		fmt.Fprintf(&sb, "Enforced rules (they refuse rather than report): %s.\n", strings.Join(a.Enforced, ", "))
	}
	if len(a.Refusals) > 0 {
		n := 0
		for _, r := range a.Refusals {
			n += r.Count
		}
		were := "were"
		if n == 1 {
			were = "was"
		}
		fmt.Fprintf(&sb, "\n%s %s refused by enforced rules (as the request log holds them):\n\n| rule | requests | latest message |\n| --- | --- | --- |\n", count(n, "request"), were)
		for _, r := range a.Refusals {
			fmt.Fprintf(&sb, "| %s | %d | %s |\n", mdCell(r.Rule), r.Count, mdCell(r.Message))
		}
	}
	if len(a.Audited) == 0 {
		a.markdownErrors(&sb)
		a.markdownGroups(&sb)
		return sb.String()
	}
	sb.WriteString("\n")
	if len(a.Findings) == 0 {
		sb.WriteString("No findings: nothing the audited rules check would have been refused or answered differently by VAST.\n")
		a.markdownErrors(&sb)
		a.markdownGroups(&sb)
		return sb.String()
	}
	fmt.Fprintf(&sb, "%s: %d that VAST would have refused, %d where VAST would have behaved differently.\n", count(len(a.Findings), "finding"), refused, differs)
	if a.Dropped > 0 {
		fmt.Fprintf(&sb, "%s not kept (the broker keeps %d).\n", count(int(a.Dropped), "more distinct finding"), maxFindings)
	}
	sb.WriteString("\n| kind | rule | client | API | topic or group | count | what happened | advice |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range a.Findings {
		subject := f.Topic
		if f.Group != "" {
			subject = "group " + f.Group
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %d | %s | %s |\n", f.Kind, mdCell(f.Rule), mdCell(f.Client()), mdCell(f.API), mdCell(subject),
			f.Count, mdCell(f.Detail), mdCell(f.Advice+" ("+rules.MarkdownSource(f.Source)+")"))
	}
	a.markdownErrors(&sb)
	a.markdownGroups(&sb)
	return sb.String()
}

// markdownGroups writes the group forecast: how many consumer groups each
// client created, and how the groups formed, when there are any.
func (a AuditReport) markdownGroups(sb *strings.Builder) {
	if len(a.Groups) == 0 && len(a.Formations) == 0 {
		return
	}
	sb.WriteString("\n## Consumer groups\n")
	if len(a.Groups) > 0 {
		sb.WriteString("\nVAST keeps at most 256 consumer groups per view and never expires their offsets, so every group an app creates counts until it is deleted:\n\n")
		for _, g := range a.Groups {
			fmt.Fprintf(sb, "- %s created %s (%d of them empty now)\n", clientLabel(g.ClientSoftware, g.ClientVersion, g.ClientID), count(g.Created, "group"), g.Empty)
		}
	}
	rebalances, oneByOne := 0, 0
	for _, f := range a.Formations {
		rebalances += f.Rebalances
		oneByOne += f.OneByOne
	}
	if rebalances == 0 {
		return
	}
	if oneByOne == 0 {
		fmt.Fprintf(sb, "\nNo rebalance came from members joining one by one: VAST's wait for a new group's members (a few seconds) would not change the %s of %s.\n",
			count(rebalances, "rebalance"), count(len(a.Formations), "group"))
		return
	}
	fmt.Fprintf(sb, "\n%s of %s came from members joining one by one while a group formed, each within %v of the generation before. "+
		"VAST waits a few seconds for a new group's members before its first generation, so on VAST they would have joined that generation and these rebalances would not happen "+
		"(run with -initial-rebalance-delay 3s to see it here):\n\n",
		count(oneByOne, "rebalance"), count(rebalances, "rebalance"), VASTFirstGenerationWait)
	for _, f := range a.Formations {
		if f.OneByOne == 0 {
			continue
		}
		fmt.Fprintf(sb, "- group %s: %d of its %s; its first generation had %s, and would have had %d with VAST's wait\n",
			mdCell(f.Group), f.OneByOne, count(f.Rebalances, "rebalance"), count(f.FirstMembers, "member"), f.MembersWithWait)
	}
}

// count writes n and noun in English: "1 finding", "2 findings".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// mdCell escapes s for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}
