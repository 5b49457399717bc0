package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/log"
)

// TestPeriodicCompactionOnTheWallClock lets the background compaction run
// on the real clock, every millisecond while the partition fills, until it
// has compacted everything (min.cleanable.dirty.ratio 0 compacts whatever
// is dirty), then closes the broker: TestMain's leak check shows that no
// compaction outlives Close.
func TestPeriodicCompactionOnTheWallClock(t *testing.T) {
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
	for _, g := range []OffsetGap{{Topic: "t", Skip: 0}, {Topic: "t", Skip: maxGapSkip + 1}, {Topic: "t", Skip: 1, Every: -1}, {Topic: "", Skip: 1}} {
		_, err := New(WithOffsetGaps(g))
		assert.Error(t, err, "%+v", g)
	}
}
