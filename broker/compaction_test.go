package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/log"
)

// TestPeriodicCompactionOnTheWallClock lets the background compaction run
// on the real clock, every millisecond while the partition fills, until it
// has compacted everything (min.cleanable.dirty.ratio 0 compacts whatever
// is dirty), then closes the broker: TestMain's leak check shows that no
// compaction outlives Close.
func TestPeriodicCompactionOnTheWallClock(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithCompactionInterval(time.Millisecond), WithTopics(TopicSpec{
		Name: "state", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"},
	}))
	require.NoError(t, err)
	part := b.data.get("state").partitions[0]
	for i := range 200 {
		batch, err := log.ParseBatch(benchKeyedBatch(i*100, 100)) // keys 0-9999 twice
		require.NoError(t, err)
		part.Append(batch, log.AppendOptions{Now: time.Now()})
	}
	// The newest of keys 0-9899 and the first 9900-9999 before the active
	// tail, and the tail's 100 (9900-9999 again).
	const want = 9900 + 100 + 100
	deadline := time.Now().Add(20 * time.Second)
	for n := len(b.Records("state", 0, 0)); n != want; n = len(b.Records("state", 0, 0)) {
		require.True(t, time.Now().Before(deadline), "%d records, not %d, after 20s", n, want)
		time.Sleep(5 * time.Millisecond) // polling a condition the broker's timer brings about
	}
	require.NoError(t, b.Close())
}

func TestOffsetGapOptionBounds(t *testing.T) {
	t.Parallel()
	for _, g := range []OffsetGap{{Topic: "t", Skip: 0}, {Topic: "t", Skip: maxGapSkip + 1}, {Topic: "t", Skip: 1, Every: -1}, {Topic: "", Skip: 1}} {
		_, err := New(WithOffsetGaps(g))
		assert.Error(t, err, "%+v", g)
	}
}

// compressedCompactedBroker is a kafka-profile broker with one
// decompression turn and a compacted topic "state" holding three gzip
// batches of key k, so that compacting it decompresses two of them.
func compressedCompactedBroker(t *testing.T) *Broker {
	t.Helper()
	b, err := New(WithProfile("kafka"), WithDecompressions(1), WithTopics(TopicSpec{
		Name: "state", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"},
	}))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer cl.Close()
	for _, v := range []string{"1", "2", "3"} { // three batches: the last is the active tail
		value := []byte(strings.Repeat(v, 1000)) // kgo sends a batch too small to gain uncompressed
		require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "state", Key: []byte("k"), Value: value}).FirstErr())
	}
	b.data.get("state").partitions[0].Batches(0, func(batch log.Batch) bool {
		require.Equal(t, int8(1), batch.Compression(), "stored gzip")
		return true
	})
	return b
}

// waitForTurn takes every decompression turn of b, starts a compaction of
// "state" and returns once it waits for a turn; the channel delivers what
// the compaction returns.
func waitForTurn(t *testing.T, b *Broker) <-chan error {
	t.Helper()
	b.decompress <- struct{}{} // every turn taken
	done := make(chan error, 1)
	go func() {
		res, err := b.Compact("state")
		if err == nil && res[0].RecordsRemoved != 1 {
			err = fmt.Errorf("compaction removed %d records, not 1", res[0].RecordsRemoved)
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return b.decompressWaiting.Load() == 1 }, 30*time.Second, time.Millisecond,
		"the compaction waits for a turn")
	select {
	case err := <-done:
		t.Fatalf("the compaction ended without a turn: %v", err)
	default:
	}
	return done
}

// TestCompactionWaitsForADecompressionTurn: compacting a compressed batch
// takes one of the broker's decompression turns (WithDecompressions), so
// compactions started at once, on demand or by the timer, decompress no
// more batches together than produce validation may.
func TestCompactionWaitsForADecompressionTurn(t *testing.T) {
	t.Parallel()
	b := compressedCompactedBroker(t)
	done := waitForTurn(t, b)
	<-b.decompress
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the compaction did not end once a turn was free")
	}
	assert.Empty(t, b.decompress, "the compaction gave its turns back")
}

// TestCloseEndsACompactionWaitingForATurn: a compaction waiting for a
// decompression turn gives up when the broker closes, instead of keeping
// its caller waiting, and changes nothing.
func TestCloseEndsACompactionWaitingForATurn(t *testing.T) {
	t.Parallel()
	b := compressedCompactedBroker(t)
	done := waitForTurn(t, b)
	require.NoError(t, b.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, errClosing)
	case <-time.After(30 * time.Second):
		t.Fatal("the compaction still waits after Close")
	}
}
