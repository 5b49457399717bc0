package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
)

// TestResetReusesLogMemory: Reset gives the deleted topics' log memory back
// once the fetch answers written from it are done, a topic made after it
// stores its records in that memory, and consumers read exactly what was
// produced, round after round.
func TestResetReusesLogMemory(t *testing.T) {
	t.Parallel()
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const records = 2000
	freeAfterReset := 0
	for round := range 3 {
		admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		require.NoError(t, err)
		_, err = kadm.NewClient(admin).CreateTopic(ctx, 3, 1, nil, "t")
		admin.Close()
		require.NoError(t, err)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("t"), kgo.DisableIdempotentWrite(),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, err)
		for i := range records {
			cl.Produce(ctx, kgo.StringRecord(fmt.Sprintf("round %d record %d %0100d", round, i, 0)), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
		}
		require.NoError(t, cl.Flush(ctx))
		free := b.data.mem.FreeBytes()
		if round > 0 {
			assert.Less(t, free, freeAfterReset, "round %d took the memory the reset gave back", round)
		}
		seen := map[string]bool{}
		for len(seen) < records {
			fs := cl.PollFetches(ctx)
			require.NoError(t, fs.Err0(), "round %d, %d records seen", round, len(seen))
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
		for i := range records {
			require.True(t, seen[fmt.Sprintf("round %d record %d %0100d", round, i, 0)], "round %d record %d", round, i)
		}
		cl.Close()
		b.Reset()
		freeAfterReset = b.data.mem.FreeBytes()
		assert.Greater(t, freeAfterReset, records*100, "round %d: memory given back by Reset", round)
	}
}

// TestResetReusesLogMemoryAfterInspection: reading a partition through the
// inspection API (Records, EachRecord, which the control plane and
// fixtures use) does not keep its memory from the Reset that deletes it.
func TestResetReusesLogMemoryAfterInspection(t *testing.T) {
	t.Parallel()
	b, err := New(WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("t"), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer cl.Close()
	const records = 200
	for i := range records {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("record %d %0100d", i, 0))).FirstErr())
	}
	require.Len(t, b.Records("t", 0, 0), records)
	require.Equal(t, 0, b.data.mem.FreeBytes())
	b.Reset()
	assert.Greater(t, b.data.mem.FreeBytes(), records*100, "the inspected partition's memory is given back")
}

// TestResetKeepsTheOffsetsTopicVisible: Reset deletes and recreates
// __consumer_offsets (kafka profile); the coordinator, which reads only the
// topics a change names, sees it again, so a KIP-848 member subscribed to
// it is assigned its partitions, as before the Reset.
func TestResetKeepsTheOffsetsTopicVisible(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	b.Reset()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", "m1", 0
	req.RebalanceTimeoutMillis, req.Topics = 30_000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	req.SubscribedTopicNames = []string{offsetsTopic}
	resp := b.coord.ConsumerGroupHeartbeat(coordinator.NoCaller, req)
	require.Zero(t, resp.ErrorCode)
	require.NotNil(t, resp.Assignment)
	n := 0
	for _, tp := range resp.Assignment.Topics {
		n += len(tp.Partitions)
	}
	assert.Equal(t, offsetsTopicPartitions, n)
}
