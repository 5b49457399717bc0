package broker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/log"
)

// producerStates returns how many idempotent producer states b holds.
func producerStates(b *Broker) int {
	b.appendMu.RLock()
	defer b.appendMu.RUnlock()
	return b.producers.Len()
}

// TestProducerStateFollowsTopics: an idempotent producer's state per
// partition survives a restart, goes with its topic when the topic is
// deleted, and Reset clears all of it, so deleted topics leave no memory
// behind.
func TestProducerStateFollowsTopics(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "a", Partitions: 2}, TopicSpec{Name: "b", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	for _, r := range []*kgo.Record{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}} {
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}
	require.Equal(t, 3, producerStates(b), "one producer, three partitions")

	require.NoError(t, b.Restart())
	require.Equal(t, 3, producerStates(b), "a restart keeps producer state, as Kafka's snapshots do")

	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	require.Equal(t, 1, producerStates(b), "a deleted topic's producer state goes with it")

	b.Reset()
	require.Equal(t, 0, producerStates(b))
}

// TestDecompressionWaitsForATurn: with every decompression turn taken, a
// compressed produce waits for one, while an uncompressed produce from
// another client is answered at once; the compressed one is answered as
// soon as a turn frees up.
func TestDecompressionWaitsForATurn(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithDecompressions(1), WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	client := func(codec kgo.CompressionCodec) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("t"),
			kgo.ProducerBatchCompression(codec), kgo.DisableIdempotentWrite())
		require.NoError(t, err)
		return cl
	}
	gzipped, plain := client(kgo.GzipCompression()), client(kgo.NoCompression())
	defer gzipped.Close()
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// kgo sends a batch uncompressed when compressing does not shrink it:
	// this value does.
	b.decompress <- struct{}{} // the only turn
	done := make(chan error, 1)
	go func() {
		done <- gzipped.ProduceSync(ctx, kgo.StringRecord(strings.Repeat("compressible ", 100))).FirstErr()
	}()
	require.Eventually(t, func() bool { return b.decompressWaiting.Load() == 1 }, 20*time.Second, time.Millisecond,
		"the compressed produce waits for a turn")
	require.NoError(t, plain.ProduceSync(ctx, kgo.StringRecord("plain")).FirstErr(), "an uncompressed produce needs no turn")
	select {
	case err := <-done:
		t.Fatalf("the compressed produce was answered without a turn: %v", err)
	default:
	}
	<-b.decompress
	require.NoError(t, <-done)
	recs := b.Records("t", 0, 0)
	require.Len(t, recs, 2)
	assert.True(t, recs[1].Compressed, "the second batch went through decompression")
	assert.Equal(t, int32(0), b.decompressWaiting.Load())
}

// gzipKeylessBatch encodes one gzip batch of n records without keys.
func gzipKeylessBatch(n int) []byte {
	var raw []byte
	for i := range n {
		rec := kmsg.NewRecord()
		rec.OffsetDelta, rec.Value = int32(i), []byte("v")
		r := rec.AppendTo(nil)
		raw = append(raw, append(binary.AppendVarint(nil, int64(len(r)-1)), r[1:]...)...) // a zero Length encodes as one byte
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	rb := kmsg.NewRecordBatch()
	rb.Magic, rb.Attributes = 2, 1 // gzip
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = time.Now().UnixMilli(), time.Now().UnixMilli()
	rb.LastOffsetDelta, rb.NumRecords, rb.Records = int32(n-1), int32(n), zipped.Bytes()
	batch := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	return batch
}

// TestProducerStateOfADeletedTopicIsNotKept: a produce that found its
// partition before the topic was deleted, and appends after, leaves no
// producer state behind for the deleted partition (the state would hold
// the partition until the producer table's bound or expiry evicted it).
func TestProducerStateOfADeletedTopicIsNotKept(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	tp := b.data.get("t")
	part := tp.partitions[0]

	batch := benchBatch(3)
	binary.BigEndian.PutUint64(batch[43:], 7) // producer id
	binary.BigEndian.PutUint16(batch[51:], 0) // epoch
	binary.BigEndian.PutUint32(batch[53:], 0) // base sequence
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	parsed, err := log.ParseBatch(batch)
	require.NoError(t, err)
	require.Equal(t, int64(7), parsed.ProducerID())

	b.deleteTopic(tp) // after the handler looked the partition up, before it appends
	sp := kmsg.NewProduceResponseTopicPartition()
	b.appendPending([]pendingAppend{{resp: &sp, part: part, batch: parsed}}, time.Now())
	assert.Equal(t, 0, producerStates(b), "no producer state for a deleted partition")
}

// TestProducerStateExpiresWithRetentionOff: idle producers' state expires
// after producer.id.expiration.ms on the broker's clock on a timer of its
// own, so turning periodic retention off does not keep it forever.
func TestProducerStateExpiresWithRetentionOff(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b, err := New(WithProfile("kafka"), WithClock(clk), WithRetentionCheckInterval(0), WithProducerIDExpiration(time.Minute),
		WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
	require.Equal(t, 1, producerStates(b))
	clk.Advance(2 * time.Minute)
	require.Eventually(t, func() bool { return producerStates(b) == 0 }, 30*time.Second, time.Millisecond,
		"the idle producer's state expired")
}
