package vastfake_test

// The headline: a real broker on loopback, real clients (franz-go's kgo and
// kadm), black-box. The same produce and fetch scenarios pass against
// vastfake in the vast profile, in the kafka profile and against kfake,
// franz-go's reference broker: where vastfake differs from Kafka, it is on
// purpose and by a rule. The end-to-end tests of each concept (groups,
// transactions, security, the VAST rules, bad input) live in e2e/; the
// interop/ module repeats the core scenarios with clients written by others
// (sarama, segmentio/kafka-go, confluent-kafka-go).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// scenarioProduceConsume is the basic scenario run against every broker:
// produce keyed records to three partitions, read them back in order, check
// watermarks.
func scenarioProduceConsume(t *testing.T, addr string) {
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "orders", 3, nil)
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{
			Topic:     "orders",
			Partition: int32(i % 3),
			Key:       []byte(fmt.Sprintf("order-%d", i)),
			Value:     []byte(fmt.Sprintf(`{"order": %d}`, i)),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
		})
	}
	produceSync(t, cl, recs...)

	got := consumeAll(t, addr, "orders", 30)
	require.Len(t, got, 30)
	next := map[int32]int64{}
	for _, r := range got {
		assert.Equal(t, next[r.Partition], r.Offset, "offsets are dense and in order within a partition")
		next[r.Partition]++
		var n int
		_, err := fmt.Sscanf(string(r.Key), "order-%d", &n)
		require.NoError(t, err)
		assert.Equal(t, int32(n%3), r.Partition)
		assert.Equal(t, fmt.Sprintf(`{"order": %d}`, n), string(r.Value))
		assert.Equal(t, []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}, r.Headers)
	}

	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctxT(t), "orders")
	require.NoError(t, err)
	starts, err := adm.ListStartOffsets(ctxT(t), "orders")
	require.NoError(t, err)
	for p := int32(0); p < 3; p++ {
		end, _ := ends.Lookup("orders", p)
		start, _ := starts.Lookup("orders", p)
		assert.Equal(t, int64(10), end.Offset, "high watermark of partition %d", p)
		assert.Equal(t, int64(0), start.Offset, "log start of partition %d", p)
	}
}

// scenarioOffsetsByTime produces records with known timestamps and looks
// offsets up by time: the first offset at or after t, -1 after the newest.
func scenarioOffsetsByTime(t *testing.T, addr string) {
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "times", 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 5; i++ {
		produceSync(t, cl, &kgo.Record{Topic: "times", Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	lookup := func(ts int64) (int64, int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "times"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		p := resp.Topics[0].Partitions[0]
		require.NoError(t, kerr.ErrorForCode(p.ErrorCode))
		return p.Offset, p.Timestamp
	}
	off, ts := lookup(base.Add(90 * time.Second).UnixMilli())
	assert.Equal(t, int64(2), off, "first offset at or after the time")
	assert.Equal(t, base.Add(2*time.Minute).UnixMilli(), ts)
	off, _ = lookup(base.Add(2 * time.Minute).UnixMilli())
	assert.Equal(t, int64(2), off, "a timestamp equal to a record's finds that record")
	off, _ = lookup(base.Add(-time.Hour).UnixMilli())
	assert.Equal(t, int64(0), off)
	off, _ = lookup(base.Add(time.Hour).UnixMilli())
	assert.Equal(t, int64(-1), off, "a time after the newest record finds -1")
	off, ts = lookup(-3) // max timestamp, ListOffsets v7+
	assert.Equal(t, int64(4), off)
	assert.Equal(t, base.Add(4*time.Minute).UnixMilli(), ts)

	// One batch whose newest record is not its last: Kafka 3.8+ names the
	// record (KAFKA-16310), not the batch's last offset.
	batcher := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ManualFlushing())
	for _, m := range []time.Duration{10, 20, 15} {
		batcher.Produce(ctxT(t), &kgo.Record{Topic: "times", Timestamp: base.Add(m * time.Minute)}, nil)
	}
	require.NoError(t, batcher.Flush(ctxT(t)))
	off, ts = lookup(-3)
	assert.Equal(t, int64(6), off, "the record with the max timestamp, inside its batch")
	assert.Equal(t, base.Add(20*time.Minute).UnixMilli(), ts)
}

// scenarioDeleteRecords moves the log start and checks reads below it.
func scenarioDeleteRecords(t *testing.T, addr string) {
	cl := newClient(t, addr)
	createTopic(t, cl, "trim", 1, nil)
	for i := 0; i < 10; i++ {
		produceSync(t, cl, &kgo.Record{Topic: "trim", Value: []byte{byte(i)}})
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 4})
	res, err := adm.DeleteRecords(ctxT(t), offs)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	starts, err := adm.ListStartOffsets(ctxT(t), "trim")
	require.NoError(t, err)
	start, _ := starts.Lookup("trim", 0)
	assert.Equal(t, int64(4), start.Offset)

	got := consumeAll(t, addr, "trim", 6)
	require.Len(t, got, 6)
	assert.Equal(t, int64(4), got[0].Offset, "reading from the start begins at the new log start")
}

var scenarios = []struct {
	name string
	run  func(*testing.T, string)
}{
	{"ProduceConsume", scenarioProduceConsume},
	{"OffsetsByTime", scenarioOffsetsByTime},
	{"DeleteRecords", scenarioDeleteRecords},
}

// TestScenarios runs the produce/fetch scenarios against vastfake in both
// profiles and against kfake, franz-go's reference fake: all three agree.
func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, profile := range []string{"vast", "kafka"} {
				t.Run(profile, func(t *testing.T) {
					b := fixtures.StartBroker(t, broker.WithProfile(profile))
					sc.run(t, b.Addr())
				})
			}
			t.Run("kfake", func(t *testing.T) {
				c, err := kfake.NewCluster(kfake.NumBrokers(1))
				require.NoError(t, err)
				t.Cleanup(c.Close)
				sc.run(t, c.ListenAddrs()[0])
			})
		})
	}
}

// ctxT returns a context that ends with the test or after 30 seconds.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a kgo client for addr with VAST-compatible settings.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(fixtures.ClientOpts(addr), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), partitions, 1, configs, name)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
}

// produceSync produces records and fails the test on any error.
func produceSync(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	require.NoError(t, cl.ProduceSync(ctxT(t), recs...).FirstErr())
}

// consumeAll reads every partition of topic from the start until it has n
// records, with a fresh direct (group-less) consumer.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}
