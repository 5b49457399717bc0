package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
