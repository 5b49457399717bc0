package broker

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsTopicCompactionCannotBeSwitchedOff: a client may set
// cleanup.policy=delete, the largest min.compaction.lag.ms and
// delete.retention.ms on __consumer_offsets, as Kafka lets it (with
// IncrementalAlterConfigs and AlterConfigs alike), and DescribeConfigs
// shows them; but the topic stays compacted with no lag, so a consumer
// committing 40,000 times keeps it under its bound.
func TestOffsetsTopicCompactionCannotBeSwitchedOff(t *testing.T) {
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	maxMs := strconv.FormatInt(math.MaxInt64, 10)
	weaken := map[string]string{"cleanup.policy": "delete", "min.compaction.lag.ms": maxMs, "delete.retention.ms": maxMs}
	var alters []kadm.AlterConfig
	for k, v := range weaken {
		alters = append(alters, kadm.AlterConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	res, err := adm.AlterTopicConfigs(ctx, alters, offsetsTopic)
	require.NoError(t, err)
	require.NoError(t, res[0].Err, "accepted, as Kafka accepts it")
	legacy, err := adm.AlterTopicConfigsState(ctx, alters, offsetsTopic)
	require.NoError(t, err)
	require.NoError(t, legacy[0].Err, "AlterConfigs too")
	described, err := adm.DescribeTopicConfigs(ctx, offsetsTopic)
	require.NoError(t, err)
	rc, err := described.On(offsetsTopic, nil)
	require.NoError(t, err)
	for _, c := range rc.Configs {
		if want, ok := weaken[c.Key]; ok {
			assert.Equal(t, want, c.MaybeValue(), "DescribeConfigs shows %s as set", c.Key)
		}
	}

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
	assert.Less(t, part.Bytes(), int64(2*offsetsCompactMinBytes), "still compacted, not %d commits kept", commits)
	cfg := b.data.get(offsetsTopic).config()
	assert.True(t, cfg.compact)
	assert.Zero(t, cfg.minCompactionLag)
	assert.Equal(t, offsetsTopicDeleteRetention, cfg.deleteRetention)
}
