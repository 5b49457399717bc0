package interop_test

// Offset gaps and compacted partitions, read by sarama, kafka-go and
// confluent-kafka-go: every client reads across a gap and across batches
// that compaction rebuilt (a base offset whose record is gone, offset
// deltas that skip), and a group's commit lands after the last record, so
// that lag is zero.

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

const gapsTopic = "gaps"

// The records a client reads from the gapped, compacted partition, and
// its high watermark.
var (
	gapOffsets = []int64{1, 2, 8, 9}
	gapValues  = []string{"b", "c", "d", "e"}
)

const gapEnd = 10

// gappedBroker starts a broker in profile with one compacted partition
// laid out, through franz-go, as
//
//	batch 0-1 [k0=a k1=b], batch 2 [k0=c], a gap of 5, batch 8 [k2=d], batch 9 [k1=e]
//
// and compacted: k0=a goes, so the first batch is rebuilt with base offset
// 0 and one record at offset 1; offsets 3-7 never existed; the last batch
// is the active tail. Readers see gapOffsets.
func gappedBroker(t *testing.T, profile string) *broker.Broker {
	t.Helper()
	b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{
		Name: gapsTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"},
	}))
	cl := fixtures.Client(t, b, kgo.ManualFlushing(), kgo.DefaultProduceTopic(gapsTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	batch := func(kvs ...string) {
		t.Helper()
		errs := make(chan error, len(kvs)/2)
		for i := 0; i+1 < len(kvs); i += 2 {
			cl.Produce(ctxT(t), &kgo.Record{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}, func(_ *kgo.Record, err error) { errs <- err })
		}
		require.NoError(t, cl.Flush(ctxT(t)))
		for range len(kvs) / 2 {
			require.NoError(t, <-errs)
		}
	}
	batch("k0", "a", "k1", "b")
	batch("k0", "c")
	require.NoError(t, b.SkipOffsets(gapsTopic, 0, 5))
	batch("k2", "d")
	batch("k1", "e")
	res, err := b.Compact(gapsTopic)
	require.NoError(t, err)
	require.Equal(t, int64(1), res[0].RecordsRemoved)
	var offsets []int64
	for _, r := range b.Records(gapsTopic, 0, 0) {
		offsets = append(offsets, r.Offset)
	}
	require.Equal(t, gapOffsets, offsets)
	return b
}

// gapProfiles runs fn once per rules profile with a gappedBroker.
func gapProfiles(t *testing.T, fn func(t *testing.T, b *broker.Broker)) {
	for _, p := range []string{"vast", "kafka"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			fn(t, gappedBroker(t, p))
		})
	}
}

func TestSaramaReadsAcrossGaps(t *testing.T) {
	t.Parallel()
	gapProfiles(t, func(t *testing.T, b *broker.Broker) {
		msgs, hwm := saramaReadPartition(t, saramaClient(t, b.Addr(), nil), gapsTopic, 0, len(gapOffsets))
		var offsets []int64
		var values []string
		for _, m := range msgs {
			offsets, values = append(offsets, m.Offset), append(values, string(m.Value))
		}
		assert.Equal(t, gapOffsets, offsets)
		assert.Equal(t, gapValues, values)
		assert.Equal(t, int64(gapEnd), hwm)

		m := startSaramaMember(t, b.Addr(), "g", gapsTopic, gapEnd, nil)
		waitFor(t, testTimeout, func() bool {
			off, ok := b.CommittedOffset("g", gapsTopic, 0)
			return ok && off == gapEnd
		}, "sarama's group commits the offset after the last record")
		assert.Len(t, m.messages(), len(gapOffsets))
	})
}

func TestKafkaGoReadsAcrossGaps(t *testing.T) {
	t.Parallel()
	gapProfiles(t, func(t *testing.T, b *broker.Broker) {
		e := newKgoEnv(t, b)
		var offsets []int64
		var values []string
		for _, m := range e.readPartition(t, gapsTopic, 0, len(gapOffsets)) {
			offsets, values = append(offsets, m.Offset), append(values, string(m.Value))
		}
		assert.Equal(t, gapOffsets, offsets)
		assert.Equal(t, gapValues, values)

		m := startKgoMember(t, b.Addr(), "g", gapsTopic, gapEnd)
		waitFor(t, testTimeout, func() bool {
			off, ok := b.CommittedOffset("g", gapsTopic, 0)
			return ok && off == gapEnd
		}, "kafka-go's group commits the offset after the last record")
		assert.Len(t, m.messages(), len(gapOffsets))
	})
}

func TestConfluentReadsAcrossGaps(t *testing.T) {
	t.Parallel()
	gapProfiles(t, func(t *testing.T, b *broker.Broker) {
		c := ckConsumer(t, ckGroupConf(b.Addr(), "g"))
		require.NoError(t, c.Subscribe(gapsTopic, nil))
		var offsets []int64
		var values []string
		for _, m := range ckPoll(t, c, len(gapOffsets)) {
			offsets, values = append(offsets, int64(m.TopicPartition.Offset)), append(values, string(m.Value))
		}
		assert.Equal(t, gapOffsets, offsets)
		assert.Equal(t, gapValues, values)
		committed, err := c.Commit()
		require.NoError(t, err)
		require.Len(t, committed, 1)
		assert.Equal(t, kafka.Offset(gapEnd), committed[0].Offset)
		off, ok := b.CommittedOffset("g", gapsTopic, 0)
		assert.True(t, ok)
		assert.Equal(t, int64(gapEnd), off, "lag is zero: the commit is the high watermark")
	})
}
