package e2e_test

// Topics and configs through real clients: Metadata's authorized
// operations and internal topic, duplicated names in one request, list
// configs, num.partitions, and refusals by topic rules in the request log.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// Kafka's operations on a topic and on the cluster
// (AclEntry.supportedOperations).
var (
	allTopicOps = []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	}
	allClusterOps = []kmsg.ACLOperation{
		kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	}
)

// topicOps returns the authorized operations Metadata reports for topic, as
// kadm decodes them.
func topicOps(t *testing.T, adm *kadm.Client, topic string) []kmsg.ACLOperation {
	t.Helper()
	md, err := adm.Metadata(kadm.WithAuthorizedOps(ctxT(t)), topic)
	require.NoError(t, err)
	require.Contains(t, md.Topics, topic)
	return md.Topics[topic].AuthorizedOperations
}

// clusterOps returns the cluster's authorized operations from Metadata v10,
// the last version that carries them.
func clusterOps(t *testing.T, k *fixtures.Kafka, user, pass string) []kmsg.ACLOperation {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Metadata), 10)
	cl := k.ClientAs(user, pass, kgo.MaxVersions(v))
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	require.Equal(t, int16(10), resp.GetVersion())
	return kadm.DecodeACLOperations(resp.AuthorizedOperations)
}

func TestMetadataAuthorizedOperations(t *testing.T) {
	t.Parallel()
	t.Run("no policies: every operation", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.User(appUser, appPass))
		adm := kadm.NewClient(k.ClientAs(appUser, appPass))
		assert.ElementsMatch(t, allTopicOps, topicOps(t, adm, "orders"))
		assert.ElementsMatch(t, allClusterOps, clusterOps(t, k, appUser, appPass))

		// Without the request flag the field stays "omitted".
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), k.ClientAs(appUser, appPass))
		require.NoError(t, err)
		assert.Equal(t, int32(-2147483648), resp.Topics[0].AuthorizedOperations)
	})

	t.Run("policies decide each operation", func(t *testing.T) {
		topic := func(name string) string { return broker.TopicResource(broker.DefaultView, name) }
		view := broker.ViewResource(broker.DefaultView)
		k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.Topic("audit", 1),
			fixtures.User(adminUser, adminPass), fixtures.User(appUser, appPass),
			fixtures.BrokerOptions(broker.WithPolicies(
				broker.Deny(appUser, broker.KafkaWrite, topic("orders")),
				broker.Deny(appUser, broker.KafkaDelete, topic("orders")),
				broker.Deny(appUser, broker.KafkaCreate, view),
				broker.Deny(appUser, broker.KafkaAlterConfigs, view),
				broker.Deny("reader", broker.KafkaDescribe, view),
			)))
		app := kadm.NewClient(k.ClientAs(appUser, appPass))
		assert.ElementsMatch(t, []kmsg.ACLOperation{
			kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
		}, topicOps(t, app, "orders"), "no WRITE, DELETE; no CREATE or ALTER, denied on the view")
		assert.ElementsMatch(t, allTopicOps, topicOps(t, kadm.NewClient(k.ClientAs(adminUser, adminPass)), "orders"))
		assert.ElementsMatch(t, []kmsg.ACLOperation{
			kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationIdempotentWrite,
		}, clusterOps(t, k, appUser, appPass))
		assert.Empty(t, k.Denials(), "computing authorized operations denies nothing")
	})

	t.Run("default deny: only what is allowed", func(t *testing.T) {
		topic := broker.TopicResource(broker.DefaultView, "orders")
		k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.User(appUser, appPass),
			fixtures.BrokerOptions(broker.WithDefaultDeny(true), broker.WithPolicies(
				broker.Allow(appUser, broker.KafkaRead, topic),
			)))
		app := kadm.NewClient(k.ClientAs(appUser, appPass))
		assert.ElementsMatch(t, []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe}, topicOps(t, app, "orders"),
			"KafkaRead allows DESCRIBE too")
		assert.Empty(t, clusterOps(t, k, appUser, appPass), "no KafkaDescribe on the view: 0, as Kafka answers")
	})
}

// TestCreatePartitionsAuthorized: adding partitions is Kafka's ALTER on the
// topic, which Metadata reports as KafkaCreate; CreatePartitions checks the
// same.
func TestCreatePartitionsAuthorized(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("fixed", 1), fixtures.Topic("open", 1),
		fixtures.User(appUser, appPass),
		fixtures.BrokerOptions(broker.WithPolicies(
			broker.Deny(appUser, broker.KafkaCreate, broker.TopicResource(broker.DefaultView, "fixed")),
		)))
	app := kadm.NewClient(k.ClientAs(appUser, appPass))
	assert.NotContains(t, topicOps(t, app, "fixed"), kmsg.ACLOperationAlter)
	cp, err := app.CreatePartitions(ctxT(t), 1, "fixed", "open")
	require.NoError(t, err)
	assert.ErrorIs(t, cp["fixed"].Err, kerr.TopicAuthorizationFailed)
	assert.NoError(t, cp["open"].Err)
	require.Len(t, k.Denials(), 1)
	assert.Contains(t, k.Denials()[0].Denied, "KafkaCreate")
}

func TestOffsetsTopic(t *testing.T) {
	t.Parallel()
	t.Run("vast: none", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("orders", 1))
		td, err := k.Admin().ListTopicsWithInternal(ctxT(t))
		require.NoError(t, err)
		assert.False(t, td.Has("__consumer_offsets"), "VAST keeps committed offsets outside any topic")
		md, err := k.Admin().Metadata(ctxT(t), "__consumer_offsets")
		require.NoError(t, err)
		assert.ErrorIs(t, md.Topics["__consumer_offsets"].Err, kerr.UnknownTopicOrPartition)
	})

	t.Run("kafka: internal, as in Kafka", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
		adm := k.Admin()
		td, err := adm.ListTopicsWithInternal(ctxT(t))
		require.NoError(t, err)
		require.True(t, td.Has("__consumer_offsets"))
		assert.True(t, td["__consumer_offsets"].IsInternal)
		assert.Len(t, td["__consumer_offsets"].Partitions, 50)
		assert.False(t, td["orders"].IsInternal)
		user, err := adm.ListTopics(ctxT(t))
		require.NoError(t, err)
		assert.Equal(t, []string{"orders"}, user.Names(), "kadm's ListTopics leaves internal topics out")
		assert.Len(t, k.Topics(), 1, "inspection lists the topics clients made")

		// Empty, readable, not writable.
		ends, err := adm.ListEndOffsets(ctxT(t), "__consumer_offsets")
		require.NoError(t, err)
		ends.Each(func(o kadm.ListedOffset) {
			assert.NoError(t, o.Err)
			assert.Zero(t, o.Offset)
		})
		cl := k.Client(kgo.RecordRetries(0))
		err = cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")}).FirstErr()
		assert.ErrorIs(t, err, kerr.InvalidTopicException)
		dr, err := adm.DeleteRecords(ctxT(t), offsetsFor("__consumer_offsets", 0, 0))
		require.NoError(t, err)
		assert.ErrorIs(t, dr.Error(), kerr.InvalidTopicException)
		created, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "__consumer_offsets")
		assert.ErrorIs(t, err, kerr.TopicAlreadyExists, "%v", created)

		// Deleting it, which Kafka allows, loses every committed offset;
		// the topic is back at once.
		k.Produce("orders", 0, "a")
		_, err = adm.CommitOffsets(ctxT(t), "g", offsetsFor("orders", 0, 1))
		require.NoError(t, err)
		require.Equal(t, int64(1), k.Committed("g", "orders", 0))
		del, err := adm.DeleteTopic(ctxT(t), "__consumer_offsets")
		require.NoError(t, err)
		require.NoError(t, del.Err)
		_, ok := k.Broker().CommittedOffset("g", "orders", 0)
		assert.False(t, ok, "committed offsets are gone with the topic")
		td, err = kadm.NewClient(k.Client()).ListTopicsWithInternal(ctxT(t))
		require.NoError(t, err)
		assert.True(t, td["__consumer_offsets"].IsInternal)

		// Reset keeps it.
		k.Broker().Reset()
		td, err = kadm.NewClient(k.Client()).ListTopicsWithInternal(ctxT(t))
		require.NoError(t, err)
		assert.Equal(t, []string{"__consumer_offsets"}, td.Names())
	})

	profiles(t, func(t *testing.T, profile string) {
		// A regex consumer skips it (kafka) or never sees it (vast), and
		// consumes at once.
		k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("orders", 2), fixtures.Topic("refunds", 1))
		k.Produce("orders", 0, "o1")
		k.Produce("refunds", 0, "r1")
		for _, group := range []string{"", "regex-group"} {
			opts := []kgo.Opt{kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
			if group != "" {
				opts = append(opts, kgo.ConsumerGroup(group))
			}
			cl := k.Client(opts...)
			ctx := ctxT(t)
			got := map[string]bool{}
			for len(got) < 2 {
				fs := cl.PollFetches(ctx)
				require.NoError(t, ctx.Err(), "consumed %v", got)
				fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) { got[r.Topic+"/"+string(r.Value)] = true })
			}
			assert.Equal(t, map[string]bool{"orders/o1": true, "refunds/r1": true}, got)
			assert.NotContains(t, cl.GetConsumeTopics(), "__consumer_offsets")
		}
	})
}

func TestIncrementalAlterListConfigs(t *testing.T) {
	t.Parallel()
	cleanupPolicy := func(t *testing.T, adm *kadm.Client, topic string) string {
		t.Helper()
		rc, err := adm.DescribeTopicConfigs(ctxT(t), topic)
		require.NoError(t, err)
		c, err := rc.On(topic, nil)
		require.NoError(t, err)
		for _, e := range c.Configs {
			if e.Key == "cleanup.policy" {
				return e.MaybeValue()
			}
		}
		t.Fatalf("no cleanup.policy in %v", c.Configs)
		return ""
	}
	alter := func(t *testing.T, adm *kadm.Client, topic string, cfgs ...kadm.AlterConfig) error {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctxT(t), cfgs, topic)
		require.NoError(t, err)
		require.Len(t, resp, 1)
		return resp[0].Err
	}
	appendCfg := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.AppendConfig, Name: name, Value: kadm.StringPtr(value)}
	}
	subtractCfg := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SubtractConfig, Name: name, Value: kadm.StringPtr(value)}
	}

	t.Run("kafka", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", 1))
		adm := k.Admin()
		require.NoError(t, alter(t, adm, "t", appendCfg("cleanup.policy", "compact")))
		assert.Equal(t, "delete,compact", cleanupPolicy(t, adm, "t"), "appended to the default")
		require.NoError(t, alter(t, adm, "t", appendCfg("cleanup.policy", "compact,delete")))
		assert.Equal(t, "delete,compact", cleanupPolicy(t, adm, "t"), "elements already there are not repeated")
		require.NoError(t, alter(t, adm, "t", subtractCfg("cleanup.policy", "delete")))
		assert.Equal(t, "compact", cleanupPolicy(t, adm, "t"))
		require.NoError(t, alter(t, adm, "t", appendCfg("leader.replication.throttled.replicas", "0:0")))
		// SUBTRACT removes every occurrence, and its own value is split and
		// trimmed like the current one (Kafka's removeAll over the parsed
		// list).
		require.NoError(t, alter(t, adm, "t", kadm.AlterConfig{Op: kadm.SetConfig,
			Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr("0:1,1:1,0:1")}))
		require.NoError(t, alter(t, adm, "t", subtractCfg("follower.replication.throttled.replicas", " 0:1 ,")))
		rc, err := adm.DescribeTopicConfigs(ctxT(t), "t")
		require.NoError(t, err)
		c, err := rc.On("t", nil)
		require.NoError(t, err)
		var follower string
		for _, e := range c.Configs {
			if e.Key == "follower.replication.throttled.replicas" {
				follower = e.MaybeValue()
			}
		}
		assert.Equal(t, "1:1", follower, "every 0:1 is gone")

		assert.ErrorIs(t, alter(t, adm, "t", appendCfg("cleanup.policy", "shred")), kerr.InvalidConfig)
		assert.ErrorIs(t, alter(t, adm, "t", appendCfg("retention.ms", "5")), kerr.InvalidConfig, "retention.ms is not a list")
		assert.ErrorIs(t, alter(t, adm, "t", subtractCfg("segment.bytes", "5")), kerr.InvalidConfig)
		assert.Equal(t, "compact", cleanupPolicy(t, adm, "t"), "refused changes change nothing")
		assert.ErrorIs(t, alter(t, adm, "t", appendCfg("cleanup.policy", "delete"), subtractCfg("cleanup.policy", "compact")),
			kerr.InvalidRequest, "a key named twice")
		assert.Empty(t, k.Refusals(), "no VAST rule refuses anything in the kafka profile")
	})

	t.Run("vast", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("t", 1))
		require.NoError(t, alter(t, k.Admin(), "t", appendCfg("cleanup.policy", "compact")))
		assert.Equal(t, "delete,compact", cleanupPolicy(t, k.Admin(), "t"), "cleanup.policy is a VAST topic config")
		assert.Empty(t, k.Refusals())
		assert.ErrorIs(t, alter(t, k.Admin(), "t", appendCfg("follower.replication.throttled.replicas", "0:0")), kerr.InvalidConfig)
		k.AssertRefused("VASTTopicConfigsOnly")
	})
}

func TestDefaultPartitions(t *testing.T) {
	t.Parallel()
	numPartitions := func(t *testing.T, adm *kadm.Client) string {
		t.Helper()
		rc, err := adm.DescribeBrokerConfigs(ctxT(t))
		require.NoError(t, err)
		for _, r := range rc {
			for _, c := range r.Configs {
				if c.Key == "num.partitions" {
					return c.MaybeValue()
				}
			}
		}
		t.Fatal("no num.partitions")
		return ""
	}
	partitions := func(t *testing.T, adm *kadm.Client, topic string) int {
		t.Helper()
		td, err := adm.ListTopics(ctxT(t), topic)
		require.NoError(t, err)
		require.NoError(t, td[topic].Err)
		return len(td[topic].Partitions)
	}

	t.Run("Kafka's default of 1", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Profile("kafka"))
		cl := k.Client(kgo.AllowAutoTopicCreation())
		produceSync(t, cl, &kgo.Record{Topic: "auto", Value: []byte("x")})
		assert.Equal(t, 1, partitions(t, k.Admin(), "auto"))
		assert.Equal(t, "1", numPartitions(t, k.Admin()))
	})

	t.Run("set", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.BrokerOptions(broker.WithDefaultPartitions(3)))
		cl := k.Client(kgo.AllowAutoTopicCreation())
		produceSync(t, cl, &kgo.Record{Topic: "auto", Value: []byte("x")})
		assert.Equal(t, 3, partitions(t, k.Admin(), "auto"), "auto-created with num.partitions")
		_, err := k.Admin().CreateTopic(ctxT(t), -1, -1, nil, "defaulted")
		require.NoError(t, err)
		assert.Equal(t, 3, partitions(t, k.Admin(), "defaulted"), "CreateTopics with -1 partitions")
		assert.Equal(t, "3", numPartitions(t, k.Admin()))
	})

	_, err := broker.New(broker.WithDefaultPartitions(0))
	assert.Error(t, err)
}

func TestDuplicatedTopics(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("wide", 100), fixtures.Topic("keep", 1))
	cl := k.Client()

	t.Run("Metadata answers each topic once", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		for range 1000 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("wide")
			req.Topics = append(req.Topics, rt)
		}
		missing := kmsg.NewMetadataRequestTopic()
		missing.Topic = kmsg.StringPtr("missing")
		req.Topics = append(req.Topics, missing, missing)
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 2)
		assert.Equal(t, "wide", *resp.Topics[0].Topic)
		assert.Len(t, resp.Topics[0].Partitions, 100)
		assert.Equal(t, "missing", *resp.Topics[1].Topic)
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].ErrorCode)
	})

	t.Run("CreateTopics refuses a name given twice, once", func(t *testing.T) {
		req := kmsg.NewPtrCreateTopicsRequest()
		for _, name := range []string{"twice", "once", "twice"} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		codes := map[string]int16{}
		for _, rt := range resp.Topics {
			codes[rt.Topic] = rt.ErrorCode
		}
		assert.Len(t, resp.Topics, 2)
		assert.Equal(t, map[string]int16{"twice": kerr.InvalidRequest.Code, "once": 0}, codes)
		_, exists := k.Broker().Topic("twice")
		assert.False(t, exists)
	})

	t.Run("DeleteTopics refuses a name given twice, once", func(t *testing.T) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		for range 3 {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr("keep")
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Topics[0].ErrorCode)
		_, exists := k.Broker().Topic("keep")
		assert.True(t, exists)
	})

	t.Run("DescribeConfigs answers a resource once", func(t *testing.T) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, names := range [][]string{{"retention.ms", "retention.ms"}, {"cleanup.policy"}, {"retention.ms"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "keep", names
			req.Resources = append(req.Resources, rr)
		}
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Resources, 1)
		var names []string
		for _, c := range resp.Resources[0].Configs {
			names = append(names, c.Name)
		}
		assert.Equal(t, []string{"cleanup.policy", "retention.ms"}, names)

		// A copy asking for every config (no names) wins.
		req.Resources[0].ConfigNames = []string{}
		resp, err = req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Resources, 1)
		assert.Greater(t, len(resp.Resources[0].Configs), 20)
	})
}

func TestTopicRuleRefusalsRecorded(t *testing.T) {
	t.Parallel()
	t.Run("configs", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("t", 1))
		_, err := k.Admin().CreateTopic(ctxT(t), 1, 1, map[string]*string{"min.compaction.lag.ms": kadm.StringPtr("0")}, "compacted")
		require.ErrorIs(t, err, kerr.InvalidConfig)
		rec, ok := findRequest(k.Broker(), kmsg.CreateTopics, func(r broker.RequestRecord) bool { return r.Rule != "" })
		require.True(t, ok)
		assert.Equal(t, "VASTTopicConfigsOnly", rec.Rule)

		k.Broker().ResetRequests()
		alter, err := k.Admin().AlterTopicConfigsState(ctxT(t), []kadm.AlterConfig{{Name: "segment.bytes", Value: kadm.StringPtr("1000")}}, "t")
		require.NoError(t, err)
		require.ErrorIs(t, alter[0].Err, kerr.InvalidConfig)
		rec, ok = findRequest(k.Broker(), kmsg.AlterConfigs, func(r broker.RequestRecord) bool { return r.Rule != "" })
		require.True(t, ok)
		assert.Equal(t, "VASTTopicConfigsOnly", rec.Rule)
	})

	t.Run("auto-create", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			k := fixtures.Start(t, fixtures.Profile(profile))
			ask := func(allow bool) {
				req := kmsg.NewPtrMetadataRequest()
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr("unknown-" + strings.ToLower(profile))
				req.Topics = append(req.Topics, rt)
				req.AllowAutoTopicCreation = allow
				_, err := req.RequestWith(ctxT(t), k.Client())
				require.NoError(t, err)
			}
			ask(false)
			assert.Empty(t, k.Refusals(), "asking about an unknown topic is no refusal")
			ask(true)
			if profile == "vast" {
				k.AssertRefused("NoAutoCreateTopics")
			} else {
				assert.Empty(t, k.Refusals())
			}
		})
	})

	t.Run("topic ids", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("t", 1))
			id := k.Broker().Topics()[0].ID
			md := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.TopicID = id
			md.Topics = append(md.Topics, rt)
			resp, err := md.RequestWith(ctxT(t), k.Client())
			require.NoError(t, err)
			require.Len(t, resp.Topics, 1)
			del := kmsg.NewPtrDeleteTopicsRequest()
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.TopicID = id
			del.Topics = append(del.Topics, dt)
			delResp, err := del.RequestWith(ctxT(t), k.Client())
			require.NoError(t, err)
			require.Len(t, delResp.Topics, 1)
			if profile == "vast" {
				assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[0].ErrorCode)
				assert.Equal(t, kerr.UnknownTopicID.Code, delResp.Topics[0].ErrorCode)
				k.AssertRefused("NoTopicIDs")
				assert.Len(t, k.Topics(), 1)
			} else {
				assert.Equal(t, "t", *resp.Topics[0].Topic)
				assert.NoError(t, kerr.ErrorForCode(delResp.Topics[0].ErrorCode))
				assert.Empty(t, k.Topics())
			}
		})
	})

	t.Run("partitions", func(t *testing.T) {
		k := fixtures.Start(t)
		_, err := k.Admin().CreateTopic(ctxT(t), 20_001, 1, nil, "wide")
		require.ErrorIs(t, err, kerr.InvalidPartitions)
		k.AssertRefused("MaxPartitionsPerTopic")

		r := rules.Kafka()
		r.MaxPartitionsPerTopic, r.MaxPartitionsPerView = 3, 4
		k = fixtures.Start(t, fixtures.Rules(r), fixtures.Topic("a", 2))
		_, err = k.Admin().CreateTopic(ctxT(t), 3, 1, nil, "b")
		require.ErrorIs(t, err, kerr.InvalidPartitions)
		k.AssertRefused("MaxPartitionsPerView")
		k.Broker().ResetRequests()
		cp, err := k.Admin().CreatePartitions(ctxT(t), 2, "a")
		require.NoError(t, err)
		require.ErrorIs(t, cp["a"].Err, kerr.InvalidPartitions)
		k.AssertRefused("MaxPartitionsPerTopic")
	})

}

// TestTopicNames: a topic name the broker keeps is at most 249 characters
// of [a-zA-Z0-9._-], and not "." or "..", as in Kafka; anything else gets
// INVALID_TOPIC_EXCEPTION and is not created.
func TestTopicNames(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"))
	adm := kadm.NewClient(k.Client())
	for name, code := range map[string]int16{
		strings.Repeat("a", 249): 0,
		strings.Repeat("a", 250): kerr.InvalidTopicException.Code,
		"a b":                    kerr.InvalidTopicException.Code,
		"..":                     kerr.InvalidTopicException.Code,
		"ok_name-1.x":            0,
	} {
		_, err := adm.CreateTopic(ctxT(t), 1, 1, nil, name) // the topic's error, if any
		if code == 0 {
			assert.NoError(t, err, "name of %d bytes", len(name))
		} else {
			assert.ErrorIs(t, err, kerr.ErrorForCode(code), "name of %d bytes", len(name))
		}
	}
	names, err := adm.ListTopics(ctxT(t))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{strings.Repeat("a", 249), "ok_name-1.x"}, names.Names())
}

// TestTopicConfigValuesAreTyped: in the kafka profile a topic keeps only
// config values of their Kafka type (numbers, booleans, the compression
// names, partition:broker lists), as Kafka's ConfigDef checks them: free
// text gets INVALID_CONFIG, from CreateTopics and from the config APIs.
func TestTopicConfigValuesAreTyped(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"))
	adm := kadm.NewClient(k.Client())
	for _, c := range []struct {
		key, value string
		ok         bool
	}{
		{"compression.type", "zstd", true},
		{"compression.type", strings.Repeat("x", 1<<16), false},
		{"segment.bytes", "1048576", true},
		{"segment.bytes", "1 MiB", false},
		{"segment.ms", "99999999999", true},
		{"min.cleanable.dirty.ratio", "0.3", true},
		{"min.cleanable.dirty.ratio", "lots", false},
		{"preallocate", "TRUE", true},
		{"preallocate", "yes", false},
		{"leader.replication.throttled.replicas", "0:0,1:0", true},
		{"leader.replication.throttled.replicas", "*", true},
		{"leader.replication.throttled.replicas", "free text", false},
	} {
		_, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{c.key: &c.value}, "typed")
		if c.ok {
			require.NoError(t, err, "%s=%.20s", c.key, c.value)
			_, err = adm.DeleteTopic(ctxT(t), "typed")
			require.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, kerr.InvalidConfig, "%s=%.20s", c.key, c.value)
		}
	}
	createTopic(t, k.Client(), "altered", 1, nil)
	resp, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "compression.type", Value: kmsg.StringPtr("free text")}}, "altered")
	require.NoError(t, err)
	assert.ErrorIs(t, resp[0].Err, kerr.InvalidConfig)
}
