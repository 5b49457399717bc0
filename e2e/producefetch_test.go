package e2e_test

// Produce and fetch end to end, and the versions that carry them: what
// ApiVersions advertises in each profile, VAST's produce rules refused
// through a real client, timestamps, retention on the broker's clock, fetch
// sessions and limits, and what the request log and server log say.

import (
	"context"
	"errors"
	"io"
	"log/slog"
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
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/testutil"
	"github.com/vastfake/vastfake/rules"
)

func TestApiVersionsFollowRules(t *testing.T) {
	t.Parallel()
	vast := fixtures.StartBroker(t)
	kafka := fixtures.StartBroker(t, broker.WithProfile("kafka"))
	v := apiVersions(t, newClient(t, vast.Addr()))
	k := apiVersions(t, newClient(t, kafka.Addr()))

	for _, key := range []kmsg.Key{kmsg.InitProducerID, kmsg.OffsetDelete, kmsg.CreatePartitions, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		assert.NotContains(t, v, int16(key), "VAST hides %s", key.Name())
		assert.Contains(t, k, int16(key), "the kafka profile serves %s", key.Name())
	}
	for _, key := range []kmsg.Key{kmsg.AddPartitionsToTxn, kmsg.EndTxn, kmsg.ShareFetch} {
		assert.NotContains(t, v, int16(key), "%s is not served", key.Name())
	}
	assert.Equal(t, int16(1), k[int16(kmsg.ConsumerGroupHeartbeat)], "KIP-848 at Kafka 4.x's version")
	assert.Equal(t, int16(1), k[int16(kmsg.ConsumerGroupDescribe)])
	assert.Equal(t, int16(12), v[int16(kmsg.Fetch)], "VAST: no topic IDs, Fetch stops at v12")
	assert.Equal(t, int16(12), v[int16(kmsg.Produce)])
	assert.Greater(t, k[int16(kmsg.Fetch)], int16(12))
}

// TestProduceAdvertisedFromV0 checks Kafka 4.x's answer to librdkafka
// before 2.10 (KAFKA-18659): ApiVersions lists Produce from v0, or that
// librdkafka sends gzip, snappy and lz4 batches uncompressed, but a v0-v2
// Produce still closes the connection like any unsupported version.
func TestProduceAdvertisedFromV0(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
		conn := dialRaw(t, b.Addr())
		resp := kmsg.NewPtrApiVersionsResponse()
		roundTrip(t, conn, 3, kmsg.NewPtrApiVersionsRequest(), resp, 0)
		var produce *kmsg.ApiVersionsResponseApiKey
		for i := range resp.ApiKeys {
			if resp.ApiKeys[i].ApiKey == int16(kmsg.Produce) {
				produce = &resp.ApiKeys[i]
			}
		}
		require.NotNil(t, produce)
		assert.Equal(t, int16(0), produce.MinVersion)

		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(2)
		req.Acks, req.TimeoutMillis = 1, 1000
		_, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1))
		require.NoError(t, err)
		_, err = conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "a v2 Produce closes the connection")
	})
}

// TestUnsupportedApiVersionsVersion: an ApiVersions newer than the broker
// serves gets Kafka's KIP-511 answer, v0 with UNSUPPORTED_VERSION and only
// ApiVersions' own versions, so that the client retries and learns the
// finalized features (a v0 answer with every key has none).
func TestUnsupportedApiVersionsVersion(t *testing.T) {
	t.Parallel()
	for _, version := range []int16{99} {
		b := fixtures.StartBroker(t, broker.WithProfile("kafka"))
		conn := dialRaw(t, b.Addr())
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(version)
		resp := kmsg.NewPtrApiVersionsResponse()
		roundTrip(t, conn, version, req, resp, 0)
		assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
		require.Len(t, resp.ApiKeys, 1, "only the versions the client can retry ApiVersions with")
		assert.Equal(t, int16(kmsg.ApiVersions), resp.ApiKeys[0].ApiKey)
		assert.Equal(t, int16(4), resp.ApiKeys[0].MaxVersion)

		// A real client (kgo sends v5, one above ours) retries and sees the
		// features.
		cl := newClient(t, b.Addr())
		versions, err := kadm.NewClient(cl).ApiVersions(ctxT(t))
		require.NoError(t, err)
		for _, v := range versions.Sorted() {
			require.NoError(t, v.Err)
			found := false
			for _, f := range v.Raw().FinalizedFeatures {
				found = found || f.Name == "transaction.version" && f.MaxVersionLevel == 2
			}
			assert.True(t, found, "transaction.version 2 is finalized in the answer kgo keeps")
		}
	}
}

// TestVASTRules refuses each VAST produce/fetch rule with its error through a
// real client, and shows the kafka profile lifting it.
func TestVASTRules(t *testing.T) {
	t.Parallel()
	t.Run("compression", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "z", Partitions: 1}))
			for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
				cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(codec), kgo.RecordRetries(0))
				err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "z", Value: []byte(strings.Repeat("compress me ", 100))}).FirstErr()
				if profile == "vast" {
					assert.ErrorIs(t, err, kerr.UnsupportedCompressionType)
				} else {
					assert.NoError(t, err)
				}
			}
			if profile == "kafka" {
				got := consumeAll(t, b.Addr(), "z", 4)
				for _, r := range got {
					assert.Equal(t, strings.Repeat("compress me ", 100), string(r.Value), "compressed batches are served as stored and decode")
				}
			}
		})
	})

	t.Run("idempotence", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "idem", Partitions: 1}))
			// A batch carrying a producer id, as an idempotent producer
			// writes it.
			cl := newClient(t, b.Addr())
			resp := rawProduce(t, cl, "idem", 0, func(rb *kmsg.RecordBatch) { rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 7, 0, 0 })
			if profile == "vast" {
				assert.Equal(t, kerr.UnsupportedForMessageFormat.Code, resp.ErrorCode)
				assert.Contains(t, *resp.ErrorMessage, "NoIdempotence")
			} else {
				assert.Equal(t, int16(0), resp.ErrorCode)
			}
			if profile == "kafka" {
				// kgo's default idempotent producer works end to end.
				idem, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
				require.NoError(t, err)
				defer idem.Close()
				require.NoError(t, idem.ProduceSync(ctxT(t), &kgo.Record{Topic: "idem", Value: []byte("x")}).FirstErr())
			}
		})
	})

	t.Run("sizes", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "big", Partitions: 1}))
			cl := newClient(t, b.Addr(), kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(0))
			limit := 126 << 10
			for _, rec := range []*kgo.Record{
				{Topic: "big", Key: make([]byte, limit+1), Value: []byte("v")},
				{Topic: "big", Value: make([]byte, limit+1)},
			} {
				err := cl.ProduceSync(ctxT(t), rec).FirstErr()
				if profile == "vast" {
					assert.ErrorIs(t, err, kerr.MessageTooLarge)
				} else {
					assert.NoError(t, err)
				}
			}
			require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "big", Key: make([]byte, limit), Value: make([]byte, limit)}).FirstErr(), "exactly at the limits is fine")
			// A batch over 1 MB of records that are each within limits:
			// VAST caps batches at 1 MiB, Kafka at its message.max.bytes
			// default of 1048588, so both refuse it.
			resp := rawProduce(t, cl, "big", 0, func(rb *kmsg.RecordBatch) {}, repeatRecords(9, 120<<10)...)
			assert.Equal(t, kerr.MessageTooLarge.Code, resp.ErrorCode)
			if profile == "vast" {
				assert.Contains(t, *resp.ErrorMessage, "MaxMessageBytes")
			}
		})
	})

	t.Run("auto-create", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile))
			cl := newClient(t, b.Addr(), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(2), kgo.UnknownTopicRetries(2))
			err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "nope", Value: []byte("x")}).FirstErr()
			topics, lerr := kadm.NewClient(cl).ListTopics(ctxT(t))
			require.NoError(t, lerr)
			if profile == "vast" {
				assert.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
				assert.False(t, topics.Has("nope"), "VAST never creates topics on demand")
			} else {
				assert.NoError(t, err)
				assert.True(t, topics.Has("nope"))
			}
		})
	})

	t.Run("partitions", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile))
			adm := kadm.NewClient(newClient(t, b.Addr()))
			// kadm returns a single topic's error as the call's error.
			_, err := adm.CreateTopic(ctxT(t), 20_001, 1, nil, "wide")
			if profile == "vast" {
				assert.ErrorIs(t, err, kerr.InvalidPartitions)
			} else {
				// Kafka's controller refuses over 10,000 partitions in one request.
				assert.ErrorIs(t, err, kerr.PolicyViolation)
			}
			// A replication factor above the broker count: VAST accepts and
			// ignores it (not a VAST concept), Kafka refuses it.
			_, err = adm.CreateTopic(ctxT(t), 2, 3, nil, "grow")
			if profile == "vast" {
				require.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, kerr.InvalidReplicationFactor)
				_, err = adm.CreateTopic(ctxT(t), 2, 1, nil, "grow")
				require.NoError(t, err)
			}
			cp, err := adm.CreatePartitions(ctxT(t), 2, "grow")
			if profile == "vast" {
				assert.Error(t, err, "CreatePartitions is not served: partitions are fixed")
			} else {
				require.NoError(t, err)
				require.NoError(t, cp.Error())
				td, err := adm.ListTopics(ctxT(t), "grow")
				require.NoError(t, err)
				assert.Len(t, td["grow"].Partitions, 4)
			}
		})
		t.Run("limits-hold-when-partitions-grow", func(t *testing.T) {
			// CreatePartitions served together with partition limits: a
			// custom rule set, since VAST itself hides CreatePartitions.
			r := rules.Kafka()
			r.MaxPartitionsPerTopic, r.MaxPartitionsPerView = 3, 5
			b := fixtures.StartBroker(t, broker.WithRules(r))
			adm := kadm.NewClient(newClient(t, b.Addr()))
			_, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "a")
			require.NoError(t, err)
			_, err = adm.CreateTopic(ctxT(t), 2, 1, nil, "b")
			require.NoError(t, err)
			cp, err := adm.CreatePartitions(ctxT(t), 2, "a") // 4 in the topic
			require.NoError(t, err)
			assert.ErrorIs(t, cp["a"].Err, kerr.InvalidPartitions)
			cp, err = adm.CreatePartitions(ctxT(t), 1, "a") // 3 in the topic, 5 in the view
			require.NoError(t, err)
			assert.NoError(t, cp["a"].Err)
			cp, err = adm.CreatePartitions(ctxT(t), 1, "b") // 6 in the view
			require.NoError(t, err)
			assert.ErrorIs(t, cp["b"].Err, kerr.InvalidPartitions)
		})
	})

	t.Run("topic-configs", func(t *testing.T) {
		profiles(t, func(t *testing.T, profile string) {
			b := fixtures.StartBroker(t, broker.WithProfile(profile))
			adm := kadm.NewClient(newClient(t, b.Addr()))
			_, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "compacted")
			assert.NoError(t, err, "VAST's Kafka Protocol Support page lists topic compaction")
			_, err = adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"delete.retention.ms": kadm.StringPtr("1000")}, "tuned")
			if profile == "vast" {
				assert.ErrorIs(t, err, kerr.InvalidConfig)
			} else {
				assert.NoError(t, err)
			}
			_, err = adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("60000"), "message.timestamp.type": kadm.StringPtr("LogAppendTime")}, "cfg")
			require.NoError(t, err)
			rc, err := adm.DescribeTopicConfigs(ctxT(t), "cfg")
			require.NoError(t, err)
			c, err := rc.On("cfg", nil)
			require.NoError(t, err)
			values := map[string]string{}
			for _, e := range c.Configs {
				values[e.Key] = e.MaybeValue()
			}
			assert.Equal(t, "60000", values["retention.ms"])
			assert.Equal(t, "LogAppendTime", values["message.timestamp.type"])
			assert.Equal(t, "9223372036854775807", values["message.timestamp.before.max.ms"])
			if profile == "vast" {
				assert.Len(t, values, 5, "VAST topics have exactly five configs")
				assert.Equal(t, "delete", values["cleanup.policy"])
			}
			alter, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "segment.bytes", Value: kadm.StringPtr("1000")}}, "cfg")
			require.NoError(t, err)
			if profile == "vast" {
				assert.ErrorIs(t, alter[0].Err, kerr.InvalidConfig)
			} else {
				assert.NoError(t, alter[0].Err)
			}
			alter, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "message.timestamp.before.max.ms", Value: kadm.StringPtr("3600000")}}, "cfg")
			require.NoError(t, err)
			require.NoError(t, alter[0].Err)
		})
	})
}

func TestLogAppendTime(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{
		Name: "lat", Partitions: 1, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"},
	}))
	cl := newClient(t, b.Addr())
	produceSync(t, cl, &kgo.Record{Topic: "lat", Value: []byte("x"), Timestamp: time.Unix(1, 0)})
	got := consumeAll(t, b.Addr(), "lat", 1)
	assert.Equal(t, clk.Now().UnixMilli(), got[0].Timestamp.UnixMilli(), "the broker's clock stamps the record")
	assert.Equal(t, kgo.RecordAttrs{}.TimestampType()+1, got[0].Attrs.TimestampType(), "the record says LogAppendTime")
}

func TestTimestampWindow(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{
		Name: "win", Partitions: 1, Configs: map[string]string{
			"message.timestamp.before.max.ms": "60000",
			"message.timestamp.after.max.ms":  "1000",
		},
	}))
	cl := newClient(t, b.Addr(), kgo.RecordRetries(0))
	now := clk.Now()
	assert.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "win", Timestamp: now.Add(-59 * time.Second)}).FirstErr())
	assert.ErrorIs(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "win", Timestamp: now.Add(-61 * time.Second)}).FirstErr(), kerr.InvalidTimestamp)
	assert.ErrorIs(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "win", Timestamp: now.Add(2 * time.Second)}).FirstErr(), kerr.InvalidTimestamp)
}

func TestRetention(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{
		Name: "ret", Partitions: 1, Configs: map[string]string{"retention.ms": "60000"},
	}))
	cl := newClient(t, b.Addr())
	produceSync(t, cl, &kgo.Record{Topic: "ret", Value: []byte("old"), Timestamp: clk.Now()})
	clk.Advance(30 * time.Second)
	produceSync(t, cl, &kgo.Record{Topic: "ret", Value: []byte("new"), Timestamp: clk.Now()})
	clk.Advance(31 * time.Second) // the first record is now past retention.ms; the sweep runs on the clock

	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctxT(t), "ret")
	require.NoError(t, err)
	start, _ := starts.Lookup("ret", 0)
	assert.Equal(t, int64(1), start.Offset, "retention moved the log start past the expired record")
	got := consumeAll(t, b.Addr(), "ret", 1)
	assert.Equal(t, "new", string(got[0].Value))
}

// TestRetentionCheckIntervalZeroIsNever: WithRetentionCheckInterval(0)
// schedules no retention sweep, so a record past retention.ms stays until
// the test deletes it, while the default sweep drops it.
func TestRetentionCheckIntervalZeroIsNever(t *testing.T) {
	t.Parallel()
	for _, every := range []time.Duration{0, broker.DefaultRetentionCheckInterval} {
		clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
		b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithRetentionCheckInterval(every), broker.WithTopics(broker.TopicSpec{
			Name: "ret", Partitions: 1, Configs: map[string]string{"retention.ms": "60000"},
		}))
		cl := newClient(t, b.Addr())
		produceSync(t, cl, &kgo.Record{Topic: "ret", Value: []byte("old"), Timestamp: clk.Now()})
		clk.Advance(time.Hour)
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctxT(t), "ret")
		require.NoError(t, err)
		start, _ := starts.Lookup("ret", 0)
		if every == 0 {
			assert.Equal(t, int64(0), start.Offset, "no sweep: the expired record stays")
		} else {
			assert.Equal(t, int64(1), start.Offset, "the sweep dropped the expired record")
		}
	}
}

func TestStaleEndOffset(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	r := rules.VAST()
	r.StaleEndOffset = 30 * time.Second
	b := fixtures.StartBroker(t, broker.WithRules(r), broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{Name: "s", Partitions: 1}))
	cl := newClient(t, b.Addr())
	adm := kadm.NewClient(cl)
	end := func() int64 {
		ends, err := adm.ListEndOffsets(ctxT(t), "s")
		require.NoError(t, err)
		o, _ := ends.Lookup("s", 0)
		return o.Offset
	}
	produceSync(t, cl, &kgo.Record{Topic: "s", Value: []byte("a")}, &kgo.Record{Topic: "s", Value: []byte("b")})
	assert.Equal(t, int64(0), end(), "the end offset trails the burst")
	assert.Len(t, consumeAll(t, b.Addr(), "s", 2), 2, "while consumers already read the records")
	clk.Advance(30 * time.Second)
	assert.Equal(t, int64(2), end(), "and catches up once the delay has passed")
}

func TestFetchSessionsAndDelay(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "f", Partitions: 1}))
		cl := newClient(t, b.Addr())
		md, err := kadm.NewClient(cl).ListTopics(ctxT(t), "f")
		require.NoError(t, err)
		fetch := func(ctx context.Context, sessionEpoch int32, maxWait int32) (*kmsg.FetchResponse, error) {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, 1, 1<<20
			req.SessionEpoch = sessionEpoch
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "f", md["f"].ID // Fetch v13+ names topics by id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req.RequestWith(ctx, cl)
		}
		resp, err := fetch(ctxT(t), 1, 0)
		require.NoError(t, err)
		assert.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode, "an incremental fetch finds no session")

		resp, err = fetch(ctxT(t), 0, 0)
		require.NoError(t, err)
		assert.Equal(t, int32(0), resp.SessionID, "no session is ever created")
		assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)

		if profile == "vast" {
			// An hour's max wait on an empty partition is still answered,
			// empty, after the empty fetch delay: the test would time out
			// otherwise.
			resp, err = fetch(ctxT(t), -1, int32(time.Hour/time.Millisecond))
			require.NoError(t, err)
			assert.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)
			assert.Equal(t, int32(-1), resp.Topics[0].Partitions[0].PreferredReadReplica)
			return
		}
		// Kafka profile: the fetch waits for data.
		done := make(chan *kmsg.FetchResponse, 1)
		go func() {
			r, err := fetch(context.Background(), -1, int32(time.Hour/time.Millisecond))
			if err != nil {
				r = nil
			}
			done <- r
		}()
		producer := newClient(t, b.Addr())
		produceSync(t, producer, &kgo.Record{Topic: "f", Value: []byte("wake")})
		select {
		case r := <-done:
			require.NotNil(t, r)
			assert.NotEmpty(t, r.Topics[0].Partitions[0].RecordBatches, "the waiting fetch returns the new record")
		case <-ctxT(t).Done():
			t.Fatal("the delayed fetch never returned")
		}
	})
}

func TestTopicIDs(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "ids", Partitions: 2}))
		cl := newClient(t, b.Addr())
		td, err := kadm.NewClient(cl).ListTopics(ctxT(t), "ids")
		require.NoError(t, err)
		if profile == "vast" {
			assert.Equal(t, kadm.TopicID{}, td["ids"].ID, "VAST reports zero topic IDs")
		} else {
			assert.NotEqual(t, kadm.TopicID{}, td["ids"].ID)
		}
		// Either way kgo produces and consumes (at Fetch v12 or v13+).
		produceSync(t, cl, &kgo.Record{Topic: "ids", Value: []byte("x")})
		assert.Len(t, consumeAll(t, b.Addr(), "ids", 1), 1)
	})
}

func TestDeleteTopic(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "gone", Partitions: 1}))
	cl := newClient(t, b.Addr(), kgo.RecordRetries(1), kgo.UnknownTopicRetries(1))
	produceSync(t, cl, &kgo.Record{Topic: "gone", Value: []byte("x")})
	adm := kadm.NewClient(cl)
	resp, err := adm.DeleteTopics(ctxT(t), "gone")
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	td, err := adm.ListTopics(ctxT(t))
	require.NoError(t, err)
	assert.False(t, td.Has("gone"))
	err = cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "gone", Value: []byte("x")}).FirstErr()
	assert.True(t, errors.Is(err, kerr.UnknownTopicOrPartition), "got %v", err)
}

// TestFetchByteLimits: each partition gets at most PartitionMaxBytes and the
// response at most MaxBytes, except that the first partition with data
// always gets one whole batch (KIP-74).
func TestFetchByteLimits(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "limits", Partitions: 3}))
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	value := make([]byte, 500)
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 5; i++ { // five single-record batches of ~570 bytes per partition
			produceSync(t, cl, &kgo.Record{Topic: "limits", Partition: p, Value: value})
		}
	}
	fetch := func(maxBytes, partitionMaxBytes int32) []int {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.SessionEpoch = maxBytes, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "limits"
		for p := int32(0); p < 3; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, partitionMaxBytes
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		var batches []int
		for _, p := range resp.Topics[0].Partitions {
			n := 0
			for rest := p.RecordBatches; len(rest) > 0; n++ {
				var rb kmsg.RecordBatch
				require.NoError(t, rb.ReadFrom(rest))
				rest = rest[12+rb.Length:]
			}
			batches = append(batches, n)
		}
		return batches
	}
	assert.Equal(t, []int{5, 5, 5}, fetch(1<<20, 1<<20), "everything fits")
	assert.Equal(t, []int{2, 2, 2}, fetch(1<<20, 1200), "two batches fit in 1200 bytes per partition")
	assert.Equal(t, []int{1, 0, 0}, fetch(1<<20, 1), "only the first partition with data overshoots its limit")
	assert.Equal(t, []int{1, 0, 0}, fetch(1, 1<<20), "or the response limit")
	assert.Equal(t, []int{5, 1, 0}, fetch(3500, 1<<20), "the response limit stops at whole batches")
}

// TestUnsupportedVersionIsRecorded: a request at a version outside the
// advertised range (ListOffsets v0, which Kafka 4 removed and Burrow 1.2
// still sends) closes the connection as Kafka does, and the request log,
// the server log and the audit report name the client and the version.
func TestUnsupportedVersionIsRecorded(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		var logs testutil.LockedBuffer
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 1}),
			broker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		conn := dialRaw(t, b.Addr())
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(0)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "orders"
		rt.Partitions = append(rt.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		_, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("burrow-lagcheck")).AppendRequest(nil, req, 1))
		require.NoError(t, err)
		_, err = conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "closed without an answer, as Kafka 4 does")

		var rec *broker.RequestRecord
		for _, r := range b.Requests() {
			if r.API == kmsg.ListOffsets {
				rec = &r
			}
		}
		require.NotNil(t, rec, "in the request log")
		assert.Equal(t, int16(0), rec.Version)
		assert.Equal(t, "burrow-lagcheck", rec.ClientID)
		assert.Equal(t, kerr.UnsupportedVersion.Code, rec.ErrorCode)
		assert.True(t, rec.Closed)
		assert.Contains(t, logs.String(), "client_id=burrow-lagcheck")
		assert.Contains(t, logs.String(), "version=0")

		rep := b.AuditReport()
		require.Len(t, rep.Errors, 1)
		e := rep.Errors[0]
		assert.Equal(t, "ListOffsets", e.API)
		assert.Equal(t, "UNSUPPORTED_VERSION", e.Error)
		assert.Equal(t, "burrow-lagcheck", e.ClientID)
		assert.Contains(t, e.Advice, "predates Kafka 4")
		md := rep.Markdown()
		assert.Contains(t, md, "Errors answered without a rule")
		assert.Contains(t, md, "1 answer carried an error")
	})
}

// TestRefusalLogLines: the server log's line for a rule refusal names the
// topic and repeats at most once a minute per rule, topic and client on
// the broker's clock, with the count of the refusals it did not log, so a
// producer retrying a topic VAST will never auto-create does not flood it.
func TestRefusalLogLines(t *testing.T) {
	t.Parallel()
	var logs testutil.LockedBuffer
	k := fixtures.Start(t, fixtures.ManualClock(time.Now()),
		fixtures.BrokerOptions(broker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	cl := k.Client(kgo.ClientID("syslog-app"), kgo.AllowAutoTopicCreation(), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	refused := func() int {
		n := 0
		for _, r := range k.Refusals() {
			if r.Rule == "NoAutoCreateTopics" {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
	defer cancel()
	go cl.Produce(ctx, &kgo.Record{Topic: "ghost", Value: []byte("x")}, nil)
	k.WaitFor("three auto-create refusals", func() bool { return refused() >= 3 })
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "refused by VAST rule") {
				out = append(out, l)
			}
		}
		return out
	}
	require.Len(t, lines(), 1, "one line while the clock stands still: %v", lines())
	assert.Contains(t, lines()[0], "rule=NoAutoCreateTopics topic=ghost")
	assert.Contains(t, lines()[0], "client_id=syslog-app")
	assert.Contains(t, lines()[0], "create the topic first")

	before := refused()
	k.Advance(time.Minute)
	k.WaitFor("a refusal after the minute", func() bool { return refused() > before })
	k.WaitFor("a second line", func() bool { return len(lines()) == 2 })
	assert.Regexp(t, `repeats=\d+`, lines()[1])
	cancel()
}

// TestFetchDetailInRequestLog: with WithFetchDetail the request log says,
// per partition of each Fetch, the offset asked for, the records and bytes
// returned and the high watermark, so a consumer that reads nothing can be
// diagnosed; without it, no detail is kept.
func TestFetchDetailInRequestLog(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		k := fixtures.Start(t, fixtures.Topic("orders", 2), fixtures.BrokerOptions(broker.WithFetchDetail(on)))
		k.Produce("orders", 0, "a", "b", "c")
		cl := k.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
		ctx := ctxT(t)
		for n := 0; n < 3; {
			fs := cl.PollFetches(ctx)
			require.NoError(t, ctx.Err())
			n += fs.NumRecords()
		}
		if !on {
			for _, r := range k.Broker().Requests() {
				if r.API == kmsg.Fetch {
					assert.Nil(t, r.Fetch)
				}
			}
			continue
		}
		// The client may fetch partition 0 before it has partition 1's
		// offset: partition 1's first Fetch can come after the records.
		var got, empty *broker.FetchPartition
		k.WaitFor("Fetches of both partitions in the request log", func() bool {
			for _, r := range k.Broker().Requests() {
				if r.API != kmsg.Fetch {
					continue
				}
				require.NotNil(t, r.Fetch)
				for i, p := range r.Fetch.Partitions {
					switch {
					case p.Partition == 0 && p.Records > 0:
						got = &r.Fetch.Partitions[i]
					case p.Partition == 1:
						empty = &r.Fetch.Partitions[i]
					}
				}
			}
			return got != nil && empty != nil
		})
		assert.Equal(t, broker.FetchPartition{Topic: "orders", Partition: 0, FetchOffset: 0, Records: 3, Bytes: got.Bytes,
			HighWatermark: 3}, *got)
		assert.Positive(t, got.Bytes)
		assert.Equal(t, int32(0), empty.Records)
		assert.Equal(t, int64(0), empty.HighWatermark)
	}
}
