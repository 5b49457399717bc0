package e2e_test

// Audit mode end to end: real clients at their default settings against
// the audit profile, the findings their defaults cause, and one case per
// rule proving what each audited rule finds.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// compressible is a value kgo's snappy shrinks, so kgo's default producer
// sends it compressed (kgo sends a batch uncompressed when compressing does
// not make it smaller).
var compressible = strings.Repeat("order placed; ", 100)

// produceAndConsume produces n records with producer and reads them back
// with consumer, which must be a group consumer of topic.
func produceAndConsume(t *testing.T, producer, consumer *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(compressible)}).FirstErr())
	}
	got := 0
	for got < n {
		fetches := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d", got, n)
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got += fetches.NumRecords()
	}
	require.NoError(t, consumer.CommitUncommittedOffsets(ctx))
}

// assertAllSucceeded checks that every request k answered succeeded, but
// for the errors of an ordinary client session: kgo's ApiVersions v5 answered
// UNSUPPORTED_VERSION, and the first JoinGroup MEMBER_ID_REQUIRED.
func assertAllSucceeded(t *testing.T, k *fixtures.Kafka) {
	t.Helper()
	for _, rec := range k.Broker().Requests() {
		switch {
		case rec.ErrorCode == 0:
		case rec.API == kmsg.ApiVersions && rec.ErrorCode == kerrCode("UNSUPPORTED_VERSION"):
		case rec.API == kmsg.JoinGroup && rec.ErrorCode == kerrCode("MEMBER_ID_REQUIRED"):
		default:
			t.Errorf("%s v%d answered error %d: %s", kmsg.NameForKey(int16(rec.API)), rec.Version, rec.ErrorCode, rec.Message)
		}
	}
}

// TestAuditKgoDefaults runs a kgo producer and group consumer at kgo's
// defaults against the audit profile: every request succeeds as on Kafka,
// and the findings are exactly what those defaults would meet on VAST.
func TestAuditKgoDefaults(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 3))
	producer, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()))
	require.NoError(t, err)
	defer producer.Close()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	require.NoError(t, err)
	defer consumer.Close()

	produceAndConsume(t, producer, consumer, "orders", 20)

	assert.Empty(t, k.Refusals(), "audit mode refuses nothing")
	assertAllSucceeded(t, k)
	assert.Equal(t, []string{
		"EagerAssignorsOnly refused  billing", // kgo's default balancer is cooperative-sticky only
		"NoCompression refused orders",        // kgo compresses with snappy
		"NoIdempotence refused",               // InitProducerID
		"NoIdempotence refused orders",        // batches carry a producer id
	}, findingKeys(k.Findings()))
	for _, f := range k.Findings() {
		assert.Equal(t, "kgo", f.ClientSoftware, "kgo says who it is in ApiVersions v3+: %+v", f)
		assert.NotEmpty(t, f.Advice)
		assert.NotEmpty(t, f.Source)
		assert.Positive(t, f.Count)
		assert.False(t, f.Last.Before(f.First))
		switch f.Rule {
		case "NoCompression":
			assert.Contains(t, f.Advice, "kgo.ProducerBatchCompression(kgo.NoCompression())")
			assert.Contains(t, f.Detail, "snappy")
		case "EagerAssignorsOnly":
			assert.Contains(t, f.Advice, "kgo.Balancers(kgo.RangeBalancer())")
		case "NoIdempotence":
			assert.Contains(t, f.Advice, "kgo.DisableIdempotentWrite()")
		}
	}
	var produceFinding bool
	for _, rec := range k.Broker().Requests() {
		if rec.API == kmsg.Produce && rec.Finding != "" {
			produceFinding = true
			assert.Zero(t, rec.ErrorCode, "an audited produce succeeds")
		}
	}
	assert.True(t, produceFinding, "the request log keeps the finding next to the request")
}

// TestAuditKgoVASTSettings runs the same app with the settings docs/client-settings.md
// recommends for VAST: no findings.
func TestAuditKgoVASTSettings(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 3))
	producer := k.Client()
	consumer := k.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	produceAndConsume(t, producer, consumer, "orders", 20)
	assertAllSucceeded(t, k)
	assert.Empty(t, k.Findings())
	assert.True(t, k.AssertNoFindings())
}

// auditCase triggers one audited rule with requests that succeed as on
// Kafka, and names the findings they cause.
type auditCase struct {
	tweak func(*rules.Rules) // a smaller limit, so the case stays small
	opts  []fixtures.Option  // more fixture options (several brokers)
	run   func(t *testing.T, k *fixtures.Kafka, cl *kgo.Client, adm *kadm.Client)
	want  []string // findingKeys
}

// auditCases has one case per rule: TestAuditEveryRule fails for a rule
// without one, so that every rule's audit behaviour is tested.
var auditCases = map[rules.ID]auditCase{
	rules.ClassicGroupsOnly: {
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, _ *kadm.Client) {
			// A KIP-848 member is served as Kafka serves it.
			c := dialRaw(t, k.Addr())
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m1", 10_000
			req.SubscribedTopicNames, req.Topics = []string{}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			roundTrip(t, c, 1, req, resp, 1)
			assert.Equal(t, int16(0), resp.ErrorCode, "joined as on Kafka")
			assert.Equal(t, int32(1), resp.MemberEpoch)
		},
		want: []string{"ClassicGroupsOnly refused  g"},
	},
	rules.NoShareGroups: {
		run: func(t *testing.T, k *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			// A kgo share consumer runs unchanged, as on Kafka 4.2: its
			// group config, heartbeats, fetches and acknowledgements are
			// served, each a finding.
			setGroupConfig(t, cl, "g", "share.auto.offset.reset", "earliest")
			k.Produce("t", 0, "job")
			sc := shareConsumer(t, k.Addr(), "g", kgo.ConsumeTopics("t"))
			recs := pollN(t, sc, 1)
			recs[0].Ack(kgo.AckAccept)
			require.NoError(t, sc.FlushAcks(testCtx(t)))
		},
		want: []string{"NoShareGroups refused  g"},
	},
	rules.EagerAssignorsOnly: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			resp := joinGroup(t, cl, "g", nil, "cooperative-sticky")
			assert.Equal(t, kerrCode("MEMBER_ID_REQUIRED"), resp.ErrorCode, "joined as on Kafka")
		},
		want: []string{"EagerAssignorsOnly refused  g"},
	},
	rules.IgnoreGroupInstanceID: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			resp := joinGroup(t, cl, "g", kmsg.StringPtr("instance-1"), "range")
			assert.Zero(t, resp.ErrorCode, "a static member joins at once, as on Kafka")
		},
		want: []string{"IgnoreGroupInstanceID differs  g"},
	},
	rules.MaxGroups: {
		tweak: func(r *rules.Rules) { r.MaxGroups = 2 },
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			for _, g := range []string{"g1", "g2", "g3"} {
				_, err := adm.CommitOffsets(testCtx(t), g, kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 0}))
				require.NoError(t, err)
			}
			groups, err := adm.ListGroups(testCtx(t))
			require.NoError(t, err)
			assert.Len(t, groups, 3)
		},
		want: []string{"MaxGroups differs", "MaxGroups refused  g3"},
	},
	rules.OffsetsNeverExpire: {
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			_, err := adm.CommitOffsets(testCtx(t), "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 0}))
			require.NoError(t, err)
			k.Advance(8 * 24 * time.Hour) // past Kafka's 7-day offsets.retention.minutes
			offsets, err := adm.FetchOffsets(testCtx(t), "g")
			require.NoError(t, err)
			_, ok := offsets.Lookup("t", 0)
			assert.False(t, ok, "expired, as on Kafka")
		},
		want: []string{"OffsetsNeverExpire differs  g"},
	},
	rules.NoOffsetDelete: {
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			_, err := adm.CommitOffsets(testCtx(t), "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 0}))
			require.NoError(t, err)
			resp, err := adm.DeleteOffsets(testCtx(t), "g", kadm.TopicsSet{"t": {0: {}}})
			require.NoError(t, err)
			require.NoError(t, resp.Error())
		},
		want: []string{"NoOffsetDelete refused  g"},
	},
	rules.NoFetchSessions: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			req := kmsg.NewPtrFetchRequest()
			req.SessionID, req.SessionEpoch = 7, 1
			resp, err := req.RequestWith(testCtx(t), cl)
			require.NoError(t, err)
			assert.Equal(t, kerrCode("FETCH_SESSION_ID_NOT_FOUND"), resp.ErrorCode, "as vastfake answers with Kafka's behaviour")
		},
		want: []string{"NoFetchSessions refused"},
	},
	rules.NoDelayedFetch: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			req := fetchRequest("t")
			req.MinBytes, req.MaxWaitMillis = 1000, 10
			resp, err := req.RequestWith(testCtx(t), cl)
			require.NoError(t, err)
			assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		},
		want: []string{"NoDelayedFetch differs t"},
	},
	rules.NoTopicIDs: {
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, _ *kadm.Client) {
			info, _ := k.Broker().Topic("t")
			req := fetchRequest("")
			req.Topics[0].TopicID = info.ID
			resp := kmsg.NewPtrFetchResponse()
			roundTrip(t, dialRaw(t, k.Addr()), 13, req, resp, 1)
			assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode, "Fetch v13 served as on Kafka")
		},
		want: []string{"NoTopicIDs refused"},
	},
	rules.NoOffsetForLeaderEpoch: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(testCtx(t), cl)
			require.NoError(t, err)
			assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode, "served as on Kafka")
			assert.Equal(t, int64(0), resp.Topics[0].Partitions[0].EndOffset)
		},
		want: []string{"NoOffsetForLeaderEpoch refused"},
	},
	rules.StaleEndOffset: {
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			k.Produce("t", 0, "just written")
			ends, err := adm.ListEndOffsets(testCtx(t), "t")
			require.NoError(t, err)
			end, _ := ends.Lookup("t", 0)
			assert.Equal(t, int64(1), end.Offset, "fresh, as on Kafka")
		},
		want: []string{"StaleEndOffset differs t"},
	},
	rules.NoIdempotence: {
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testCtx(t), cl)
			require.NoError(t, err)
			assert.Zero(t, resp.ErrorCode)
		},
		want: []string{"NoIdempotence refused"},
	},
	rules.NoCompression: {
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, _ *kadm.Client) {
			produceWith(t, k.Client(kgo.ProducerBatchCompression(kgo.Lz4Compression())), &kgo.Record{Topic: "t", Value: []byte(compressible)})
		},
		want: []string{"NoCompression refused t"},
	},
	rules.MaxMessageBytes: {
		tweak: func(r *rules.Rules) { r.MaxMessageBytes = 2000 },
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			produceWith(t, cl, &kgo.Record{Topic: "t", Value: make([]byte, 3000)})
		},
		want: []string{"MaxMessageBytes refused t"},
	},
	rules.MaxKeyBytes: {
		tweak: func(r *rules.Rules) { r.MaxKeyBytes = 100 },
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			produceWith(t, cl, &kgo.Record{Topic: "t", Key: make([]byte, 200)})
		},
		want: []string{"MaxKeyBytes refused t"},
	},
	rules.MaxValueBytes: {
		tweak: func(r *rules.Rules) { r.MaxValueBytes = 100 },
		run: func(t *testing.T, _ *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			produceWith(t, cl, &kgo.Record{Topic: "t", Value: make([]byte, 200)})
		},
		want: []string{"MaxValueBytes refused t"},
	},
	rules.NoAutoCreateTopics: {
		run: func(t *testing.T, k *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("fresh")
			req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), true
			resp, err := req.RequestWith(testCtx(t), cl)
			require.NoError(t, err)
			assert.Zero(t, resp.Topics[0].ErrorCode, "auto-created, as on Kafka")
			_, ok := k.Broker().Topic("fresh")
			assert.True(t, ok)
		},
		want: []string{"NoAutoCreateTopics refused fresh"},
	},
	rules.FixedPartitions: {
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			resp, err := adm.CreatePartitions(testCtx(t), 2, "t")
			require.NoError(t, err)
			require.NoError(t, resp.Error())
		},
		want: []string{"FixedPartitions refused"},
	},
	rules.MaxPartitionsPerTopic: {
		tweak: func(r *rules.Rules) { r.MaxPartitionsPerTopic = 4 },
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			resp, err := adm.CreateTopic(testCtx(t), 5, 1, nil, "wide")
			require.NoError(t, err)
			require.NoError(t, resp.Err)
		},
		want: []string{"MaxPartitionsPerTopic refused wide"},
	},
	rules.MaxPartitionsPerView: {
		tweak: func(r *rules.Rules) { r.MaxPartitionsPerView = 4 },
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			resp, err := adm.CreateTopic(testCtx(t), 4, 1, nil, "more") // 1 + 4 partitions in the view
			require.NoError(t, err)
			require.NoError(t, resp.Err)
		},
		want: []string{"MaxPartitionsPerView refused more"},
	},
	rules.VASTTopicConfigsOnly: {
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			resp, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1048576")}, "segmented")
			require.NoError(t, err)
			require.NoError(t, resp.Err)
		},
		want: []string{"VASTTopicConfigsOnly refused segmented"},
	},
	rules.NoOffsetsTopic: {
		run: func(t *testing.T, _ *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			md, err := adm.Metadata(testCtx(t), "__consumer_offsets")
			require.NoError(t, err)
			assert.Contains(t, md.Topics, "__consumer_offsets", "listed, as on Kafka")
		},
		want: []string{"NoOffsetsTopic differs __consumer_offsets"},
	},
	rules.AnyAddressServes: {
		opts: []fixtures.Option{fixtures.Brokers(2), fixtures.Topic("two", 2)},
		run: func(t *testing.T, k *fixtures.Kafka, cl *kgo.Client, _ *kadm.Client) {
			// Partition 1 is led by broker 1: a produce sent to broker 0
			// is refused as Kafka refuses it, and kgo retries on the leader.
			b := k.Broker()
			require.Equal(t, int32(1), b.LeaderOf("two", 1))
			req := kmsg.NewPtrProduceRequest()
			req.Acks = -1
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "two"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = 1, encodeBatch(func(*kmsg.RecordBatch) {}, repeatRecords(1, 10)...)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := kmsg.NewPtrProduceResponse()
			roundTrip(t, dialRaw(t, b.Addr()), 9, req, resp, 1)
			assert.Equal(t, kerr.NotLeaderForPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
			produceWith(t, cl, &kgo.Record{Topic: "two", Partition: 1, Value: []byte("x")})
		},
		want: []string{"AnyAddressServes differs two"},
	},
	rules.PlainSASLOnly: {
		opts: []fixtures.Option{fixtures.User("app", "app-secret")},
		run: func(t *testing.T, k *fixtures.Kafka, _ *kgo.Client, adm *kadm.Client) {
			// SCRAM logs in as on Kafka, and the credential APIs answer.
			cl := newClient(t, k.Addr(), scramOpt("app", "app-secret", 512))
			produceWith(t, cl, &kgo.Record{Topic: "t", Value: []byte("x")})
			described, err := adm.DescribeUserSCRAMs(testCtx(t))
			require.NoError(t, err)
			require.NoError(t, described.Error())
			altered, err := adm.AlterUserSCRAMs(testCtx(t), nil, []kadm.UpsertSCRAM{{User: "other", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "p"}})
			require.NoError(t, err)
			require.NoError(t, altered.Error())
		},
		want: []string{"PlainSASLOnly refused"},
	},
}

// TestAuditEveryRule runs one case per rule against the audit profile:
// the requests succeed as on Kafka and cause exactly the rule's findings.
func TestAuditEveryRule(t *testing.T) {
	t.Parallel()
	for _, id := range rules.IDs() {
		c, ok := auditCases[id]
		if !ok {
			t.Errorf("rule %s has no audit case", id)
			continue
		}
		t.Run(id.String(), func(t *testing.T) {
			r := rules.AuditAll()
			if c.tweak != nil {
				c.tweak(&r)
			}
			k := fixtures.Start(t, append([]fixtures.Option{fixtures.Rules(r), fixtures.ManualClock(time.Now()), fixtures.Topic("t", 1)}, c.opts...)...)
			cl := k.Client()
			c.run(t, k, cl, kadm.NewClient(cl))
			assert.Empty(t, k.Refusals(), "audit mode refuses nothing")
			assert.Equal(t, c.want, findingKeys(k.Findings()))
			for _, f := range k.Findings() {
				assert.Equal(t, id.Source(), f.Source)
				assert.NotEmpty(t, f.Advice)
				assert.NotEmpty(t, f.Detail)
			}
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func produceWith(t *testing.T, cl *kgo.Client, r *kgo.Record) {
	t.Helper()
	require.NoError(t, cl.ProduceSync(testCtx(t), r).FirstErr())
}

func kerrCode(name string) int16 {
	for code := int16(-1); code < 200; code++ {
		if e := kerr.ErrorForCode(code); e != nil && strings.HasPrefix(e.Error(), name+":") {
			return code
		}
	}
	panic("no Kafka error " + name)
}

// fetchRequest fetches partition 0 of topic from offset 0.
func fetchRequest(topic string) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// joinGroup sends one JoinGroup offering protocols.
func joinGroup(t *testing.T, cl *kgo.Client, group string, instance *string, protocols ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.InstanceID, req.ProtocolType = group, instance, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p
		req.Protocols = append(req.Protocols, jp)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	return resp
}

// TestAuditCooperativeChosen: a consumer that prefers cooperative-sticky
// but also offers range joins VAST, which votes range: the group
// rebalances eagerly there, a difference the audit reports.
func TestAuditCooperativeChosen(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 3))
	consumer := k.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.Balancers(kgo.CooperativeStickyBalancer(), kgo.RangeBalancer()))
	produceAndConsume(t, k.Client(), consumer, "orders", 3)
	g, ok := k.Broker().Group("billing")
	require.True(t, ok)
	assert.Equal(t, "cooperative-sticky", g.Protocol, "chosen as on Kafka")
	assert.Equal(t, []string{"EagerAssignorsOnly differs  billing"}, findingKeys(k.Findings()))
	f := k.Findings()[0]
	assert.NotEmpty(t, f.ClientID, "a finding about the group names its members' clients")
	assert.Equal(t, "kgo", f.ClientSoftware)
	assert.NotContains(t, k.Broker().AuditReport().Markdown(), "(no client)")
}

// TestAuditTopicIDAsName: a client that sends a topic ID where the topic
// name belongs (the npm kafka-console CLI's Fetch v12) gets a NoTopicIDs
// finding even when a topic of that name exists and is served, and the
// errors it gets where none exists are in the report.
func TestAuditTopicIDAsName(t *testing.T) {
	t.Parallel()
	const id = "00000000-0000-0000-0000-000000000000"
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic(id, 1))
	c := dialRaw(t, k.Addr())
	resp := kmsg.NewPtrFetchResponse()
	roundTrip(t, c, 12, fetchRequest(id), resp, 1)
	require.Len(t, resp.Topics, 1)
	assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode, "served, as on Kafka")
	roundTrip(t, c, 12, fetchRequest("11111111-2222-3333-4444-555555555555"), resp, 2)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)

	var topics []string
	for _, f := range k.Findings() {
		if f.Rule == "NoTopicIDs" {
			topics = append(topics, f.Topic)
			assert.Contains(t, f.Detail, "the client sent a topic ID as a name; it cannot fetch from VAST")
			assert.Contains(t, f.Advice, "no client setting fixes this", "a client bug: no setting to suggest")
			assert.Contains(t, f.Advice, "upgrade the client")
			assert.NotContains(t, f.Advice, "let the client pick versions from ApiVersions", "it already did")
			assert.Equal(t, "Fetch", f.API)
			assert.Equal(t, "raw-test", f.ClientID)
		}
	}
	assert.ElementsMatch(t, []string{id, "11111111-2222-3333-4444-555555555555"}, topics)
	rep := k.Broker().AuditReport()
	require.Len(t, rep.Errors, 1, "%+v", rep.Errors)
	assert.Equal(t, "UNKNOWN_TOPIC_OR_PARTITION", rep.Errors[0].Error)
	assert.Equal(t, "Fetch", rep.Errors[0].API)
	assert.Equal(t, "11111111-2222-3333-4444-555555555555", rep.Errors[0].Topic)
	assert.Equal(t, "NoTopicIDs", rep.Errors[0].Finding, "the error is the finding's, not a failure of its own")
	md := rep.Markdown()
	assert.Contains(t, md, "## Errors answered without a rule")
	assert.Contains(t, md, "1 answer carried an error whose cause is a finding above, counted there rather than here")
	assert.Contains(t, md, "| Fetch | UNKNOWN_TOPIC_OR_PARTITION | client id raw-test | 11111111-2222-3333-4444-555555555555 | 1 | NoTopicIDs |")
	assert.NotContains(t, md, "likely why an app fails")
	assert.NotContains(t, md, "create the topic first", "no advice that contradicts the finding's")

	// A name that only resembles one is left alone.
	k.Broker().ResetFindings()
	roundTrip(t, c, 12, fetchRequest("t-0000-0000-0000-0000-000000000000x"), resp, 3)
	assert.Empty(t, k.Findings())
}

// TestAuditOneRunGroups: a client that makes a new group on every run
// (as CLI consumers with generated group ids do) is named in the report's
// group forecast, and once it has left three groups empty the audit says
// it would run out of VAST's 256 groups.
func TestAuditOneRunGroups(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1))
	k.Produce("orders", 0, "a")
	cl := k.Client(kgo.ClientID("console-cli"))
	adm := kadm.NewClient(cl)
	for run := range 4 {
		_, err := adm.CommitOffsets(testCtx(t), fmt.Sprintf("console-consumer-%d", run), offsetsFor("orders", 0, 1))
		require.NoError(t, err)
	}
	var found *broker.Finding
	for _, f := range k.Findings() {
		if f.Rule == "MaxGroups" {
			found = &f
		}
	}
	require.NotNil(t, found, "findings: %v", findingKeys(k.Findings()))
	assert.Equal(t, "differs", found.Kind)
	assert.Equal(t, "console-cli", found.ClientID)
	assert.Equal(t, "console-consumer-3", found.Group)
	assert.Contains(t, found.Detail, "created 4 groups, 3 of them left empty")
	rep := k.Broker().AuditReport()
	require.NotEmpty(t, rep.Groups)
	assert.Equal(t, broker.GroupsCreated{ClientID: "console-cli", ClientSoftware: "kgo", ClientVersion: rep.Groups[0].ClientVersion,
		Created: 4, Empty: 4}, rep.Groups[0])
	assert.Contains(t, rep.Markdown(), "client id console-cli created 4 groups (4 of them empty now)")
	assert.Contains(t, rep.Markdown(), "1 finding:", "counts read as English")
}

// TestAuditAdviceInTheAppsTerms: advice speaks the app's own configuration
// when the client id or software names an app it knows (the OpenTelemetry
// Collector's kafka receiver, on kgo), and kgo's snappy note comes only
// with snappy batches.
func TestAuditAdviceInTheAppsTerms(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("otlp_logs", 1))
	collector, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ClientID("otel-collector"),
		kgo.ConsumerGroup("otel-collector"), kgo.ConsumeTopics("otlp_logs"))
	require.NoError(t, err)
	defer collector.Close()
	gzipApp, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ClientID("gzip-app"), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.GzipCompression()))
	require.NoError(t, err)
	defer gzipApp.Close()
	snappyApp, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ClientID("snappy-app"), kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer snappyApp.Close()
	big := strings.Repeat("compress me ", 200)
	produceWith(t, gzipApp, &kgo.Record{Topic: "otlp_logs", Value: []byte(big)})
	produceWith(t, snappyApp, &kgo.Record{Topic: "otlp_logs", Value: []byte(big)})
	ctx := testCtx(t)
	for n := 0; n < 2; {
		fs := collector.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		n += fs.NumRecords()
	}
	advice := map[string]string{}
	for _, f := range k.Findings() {
		advice[f.Rule+" "+f.ClientID] = f.Advice
	}
	assert.Contains(t, advice["EagerAssignorsOnly otel-collector"], "group_rebalance_strategies: [range]", "%v", advice)
	assert.Equal(t, "add kgo.ProducerBatchCompression(kgo.NoCompression())", advice["NoCompression gzip-app"])
	assert.Contains(t, advice["NoCompression snappy-app"], "snappy by default")
}

// TestAuditGroupFormation: two kgo consumers join a new group one after
// the other, which forms a first generation with one member and rebalances
// to add the second; the report counts that rebalance as one VAST's
// first-generation wait would fold away. A second group whose members join
// more than that wait apart (on the broker's clock) counts none.
func TestAuditGroupFormation(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.ManualClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)), fixtures.Topic("orders", 3))
	join := func(group string) {
		k.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.HeartbeatInterval(100*time.Millisecond))
	}
	join("billing")
	k.WaitGroup("billing", "Stable", 1)
	join("billing")
	k.WaitGroup("billing", "Stable", 2)
	assert.Contains(t, k.Broker().AuditReport().Markdown(), "\n\n1 rebalance of 2 rebalances came from members joining one by one while a group formed, "+
		"each within 3s of the generation before. VAST waits a few seconds for a new group's members before its first generation, "+
		"so on VAST they would have joined that generation and these rebalances would not happen (run with -initial-rebalance-delay 3s to see it here):\n\n"+
		"- group billing: 1 of its 2 rebalances; its first generation had 1 member, and would have had 2 with VAST's wait\n",
		"docs/audit.md's example")

	join("reports")
	k.WaitGroup("reports", "Stable", 1)
	k.Advance(broker.VASTFirstGenerationWait + time.Second)
	join("reports")
	k.WaitGroup("reports", "Stable", 2)

	rep := k.Broker().AuditReport()
	assert.Equal(t, []broker.GroupFormation{
		{Group: "billing", Rebalances: 2, OneByOne: 1, FirstMembers: 1, MembersWithWait: 2},
		{Group: "reports", Rebalances: 2, OneByOne: 0, FirstMembers: 1, MembersWithWait: 1},
	}, rep.Formations)
	md := rep.Markdown()
	assert.Contains(t, md, "1 rebalance of 4 rebalances came from members joining one by one while a group formed, each within 3s of the generation before")
	assert.Contains(t, md, "- group billing: 1 of its 2 rebalances; its first generation had 1 member, and would have had 2 with VAST's wait")
	assert.NotContains(t, md, "- group reports")

	k.Broker().ResetFindings()
	assert.Empty(t, k.Broker().AuditReport().Formations, "a reset audit counts the rebalances after it")
	k.Advance(time.Second)
	join("billing")
	k.WaitGroup("billing", "Stable", 3)
	assert.Equal(t, []broker.GroupFormation{{Group: "billing", Rebalances: 1, OneByOne: 0, FirstMembers: 0, MembersWithWait: 0}},
		k.Broker().AuditReport().Formations, "a group that formed before the reset is not forming")
}
