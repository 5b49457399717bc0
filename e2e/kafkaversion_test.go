package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// advertised asks the broker for its ApiVersions v4 and returns the max
// version of each API key and the finalized level of each feature (0 for
// one listed as supported only, absent for one not listed).
func advertised(t *testing.T, k *fixtures.Kafka) (map[int16]int16, map[string]int16) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 4, "vastfake-test", "1"
	resp, err := req.RequestWith(ctxT(t), k.Client())
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode)
	keys := map[int16]int16{}
	for _, key := range resp.ApiKeys {
		keys[key.ApiKey] = key.MaxVersion
	}
	features := map[string]int16{}
	for _, f := range resp.SupportedFeatures {
		features[f.Name] = 0
	}
	for _, f := range resp.FinalizedFeatures {
		require.Equal(t, f.MinVersionLevel, f.MaxVersionLevel, "Kafka finalizes one level")
		features[f.Name] = f.MaxVersionLevel
	}
	return keys, features
}

// TestKafkaVersionShapesApiVersions: the Kafka version the broker follows
// decides what ApiVersions advertises, from the one API table: Produce
// v13 (topic ids) from Kafka 4.1, transaction.version 2 from 4.1 where the
// table serves KIP-890's second part, share.version listed from 4.1, and
// metadata.version as each release formats a cluster. The VAST profile's
// rules hide transactions and KIP-848 groups, and the features that govern
// them, on every version.
func TestKafkaVersionShapesApiVersions(t *testing.T) {
	t.Parallel()
	for _, v := range broker.KafkaVersions() {
		for _, profile := range []string{"kafka", "vast"} {
			t.Run(v.String()+"/"+profile, func(t *testing.T) {
				t.Parallel()
				k := fixtures.Start(t, fixtures.Profile(profile), fixtures.KafkaVersion(v))
				assert.Equal(t, v, k.Broker().KafkaVersion())
				keys, features := advertised(t, k)
				assert.Contains(t, features, "metadata.version")
				assert.Positive(t, features["metadata.version"])
				if profile == "vast" {
					assert.Equal(t, int16(12), keys[int16(kmsg.Produce)], "VAST stops at v12 (no topic ids)")
					assert.NotContains(t, features, "transaction.version", "no transactions")
					assert.NotContains(t, features, "group.version", "no KIP-848 groups")
					return
				}
				wantProduce := int16(13)
				if v.Before(broker.Kafka4_1) {
					wantProduce = 12
				}
				assert.Equal(t, wantProduce, keys[int16(kmsg.Produce)])
				assert.Contains(t, features, "transaction.version")
				if v.TransactionsV2() {
					assert.Equal(t, int16(2), features["transaction.version"], "KIP-890's second part")
				} else {
					assert.Equal(t, int16(1), features["transaction.version"], "4.0 keeps transactions v1")
				}
				assert.Equal(t, int16(5), keys[int16(kmsg.EndTxn)], "served in every version, as Kafka 4.x serves it")
				assert.Equal(t, int16(1), features["group.version"])
				if v.Before(broker.Kafka4_1) {
					assert.NotContains(t, features, "share.version")
				} else {
					assert.Contains(t, features, "share.version")
				}
			})
		}
	}
}

// TestKafkaVersionOffsetCommitEpochs runs one scenario under Kafka 4.2 and
// 4.3: a KIP-848 member given a second partition in a new epoch commits
// both at its older epoch. 4.2 refuses both (STALE_MEMBER_EPOCH: the epoch
// must be the member's); 4.3 (KIP-1251) accepts the partition the member
// held at that epoch and refuses the one it was given after.
func TestKafkaVersionOffsetCommitEpochs(t *testing.T) {
	t.Parallel()
	for _, v := range []broker.KafkaVersion{broker.Kafka4_2, broker.Kafka4_3} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.KafkaVersion(v), fixtures.Topic("t", 1))
			cl := k.Client()
			ctx := ctxT(t)
			epoch := int32(0)
			memberID := "m-" + v.String()
			// beat heartbeats until the member holds want partitions,
			// reporting what it holds, and returns its epoch.
			beat := func(want int) int32 {
				t.Helper()
				var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
				for range 50 {
					req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
					req.Group, req.MemberID, req.MemberEpoch = "g", memberID, epoch
					if epoch == 0 {
						req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30_000, []string{"t", "u"}
					}
					req.Topics = owned
					if req.Topics == nil {
						req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
					}
					resp, err := req.RequestWith(ctx, cl)
					require.NoError(t, err)
					require.Zero(t, resp.ErrorCode, "heartbeat: %s", errorMessage(resp.ErrorMessage))
					memberID, epoch = *resp.MemberID, resp.MemberEpoch
					if resp.Assignment != nil {
						owned = owned[:0]
						n := 0
						for _, at := range resp.Assignment.Topics {
							owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
							n += len(at.Partitions)
						}
						if n == want {
							return epoch
						}
					}
				}
				t.Fatalf("the member never held %d partitions", want)
				return 0
			}
			old := beat(1)
			_, err := k.Admin().CreateTopic(ctx, 1, 1, nil, "u")
			require.NoError(t, err)
			require.Greater(t, beat(2), old)

			req := kmsg.NewPtrOffsetCommitRequest()
			req.Version, req.Group, req.MemberID, req.Generation = 9, "g", memberID, old
			for _, topic := range []string{"t", "u"} {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Offset = 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			got := map[string]int16{}
			for _, rt := range resp.Topics {
				got[rt.Topic] = rt.Partitions[0].ErrorCode
			}
			stale := kerr.StaleMemberEpoch.Code
			if v.AssignmentEpochs() {
				assert.Equal(t, map[string]int16{"t": 0, "u": stale}, got)
			} else {
				assert.Equal(t, map[string]int16{"t": stale, "u": stale}, got)
			}
		})
	}
}

func errorMessage(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
