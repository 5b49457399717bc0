package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
)

// TestOffsetsTopicBound: a consumer that commits forever does not grow
// __consumer_offsets without bound; the broker compacts the group's
// partition as Kafka's log cleaner would, and the newest commit stays.
func TestOffsetsTopicBound(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	key := kmsg.NewOffsetCommitKey()
	key.Version, key.Group, key.Topic = 1, "g", "orders"
	k := key.AppendTo(nil)
	const commits = 40_000
	for i := range commits {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset = 3, int64(i)
		b.appendOffsetsRecord("g", k, v.AppendTo(nil))
	}
	part := b.data.get(offsetsTopic).partition(OffsetsTopicPartition("g"))
	assert.Less(t, part.Bytes(), int64(2*offsetsCompactMinBytes), "compacted, not %d commits kept", commits)
	assert.Equal(t, int64(commits), part.HighWatermark(), "offsets keep their values")
	var last kmsg.OffsetCommitValue
	part.Batches(0, func(batch log.Batch) bool {
		recs, err := batch.Records()
		require.NoError(t, err)
		require.NoError(t, last.ReadFrom(recs[len(recs)-1].Value))
		return true
	})
	assert.Equal(t, int64(commits-1), last.Offset)
}

// TestResetEmptiesTheOffsetsTopic: after Reset, __consumer_offsets holds
// nothing of the groups Reset forgot (a lag monitor in the next test sees
// no group of the last one), and its compaction threshold starts again.
func TestResetEmptiesTheOffsetsTopic(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	key := kmsg.NewOffsetCommitKey()
	key.Version, key.Group, key.Topic = 1, "g", "orders"
	for i := range 5 {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset = 3, int64(i)
		b.appendOffsetsRecord("g", key.AppendTo(nil), v.AppendTo(nil))
	}
	p := OffsetsTopicPartition("g")
	require.Equal(t, int64(5), b.data.get(offsetsTopic).partition(p).HighWatermark())
	b.offsetsState.compacted[p].Store(1 << 30)

	b.Reset()
	topic := b.data.get(offsetsTopic)
	require.NotNil(t, topic, "the topic is there again")
	for i := range int32(offsetsTopicPartitions) {
		assert.Zero(t, topic.partition(i).HighWatermark(), "partition %d", i)
		assert.Zero(t, b.offsetsState.compacted[i].Load(), "partition %d", i)
	}
}
