package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
