package log

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idemBatch returns a batch header of an idempotent producer: n records from
// sequence seq. Check and Record read only the header.
func idemBatch(pid int64, epoch int16, seq int32, n int32) Batch {
	b := make(Batch, BatchHeaderSize)
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(n-1))
	binary.BigEndian.PutUint32(b[offNumRecords:], uint32(n))
	return b
}

func TestLastSequenceWraps(t *testing.T) {
	t.Parallel()
	assert.Equal(t, int32(9), LastSequence(0, 9))
	assert.Equal(t, int32(math.MaxInt32), LastSequence(math.MaxInt32-1, 1))
	assert.Equal(t, int32(0), LastSequence(math.MaxInt32, 1))
	assert.Equal(t, int32(2), LastSequence(math.MaxInt32-2, 5))
}

// TestProducersBound: past its bound the table forgets the producer state
// that appended least recently, in any partition, so a client creating
// producers without end cannot grow it.
func TestProducersBound(t *testing.T) {
	t.Parallel()
	ps := NewProducers(3)
	p0, p1 := NewPartition(), NewPartition()
	now := time.Unix(1_700_000_000, 0)
	ps.Record(p0, idemBatch(1, 0, 0, 1), 0, 0, now)
	ps.Record(p1, idemBatch(2, 0, 0, 1), 0, 0, now)
	ps.Record(p0, idemBatch(3, 0, 0, 1), 1, 0, now)
	ps.Record(p0, idemBatch(1, 0, 1, 1), 2, 0, now) // producer 1 appends again: now the newest
	require.Equal(t, 3, ps.Len())

	ps.Record(p1, idemBatch(4, 0, 0, 1), 1, 0, now) // over the bound: producer 2 goes
	assert.Equal(t, 3, ps.Len())
	dup, err := ps.Check(p1, idemBatch(2, 0, 5, 1))
	assert.NoError(t, err, "producer 2 was forgotten: any sequence goes")
	assert.Nil(t, dup)
	_, err = ps.Check(p0, idemBatch(1, 0, 5, 1))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "producer 1 is still known")
	_, err = ps.Check(p0, idemBatch(3, 0, 5, 1))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "producer 3 is still known")

	ps.DropPartition(p0)
	assert.Equal(t, 1, ps.Len(), "a deleted partition's producers go with it")
	ps.Clear()
	assert.Equal(t, 0, ps.Len())
}

// TestProducersExpire: a producer state is forgotten producer.id.expiration
// after its last append, and not before.
func TestProducersExpire(t *testing.T) {
	t.Parallel()
	ps := NewProducers(10)
	p := NewPartition()
	start := time.Unix(1_700_000_000, 0)
	ps.Record(p, idemBatch(1, 0, 0, 1), 0, 0, start)
	ps.Record(p, idemBatch(2, 0, 0, 1), 1, 0, start.Add(time.Hour))
	assert.Equal(t, 0, ps.Expire(start.Add(24*time.Hour-time.Millisecond), 24*time.Hour))
	assert.Equal(t, 1, ps.Expire(start.Add(24*time.Hour), 24*time.Hour))
	assert.Equal(t, 1, ps.Len())
	ps.Record(p, idemBatch(2, 0, 1, 1), 2, 0, start.Add(24*time.Hour)) // an append renews the state
	assert.Equal(t, 0, ps.Expire(start.Add(25*time.Hour), 24*time.Hour))
	assert.Equal(t, 1, ps.Expire(start.Add(48*time.Hour), 24*time.Hour))
	assert.Equal(t, 0, ps.Len())
}

// TestProducersMemoryBound backs the documented bound: a full table of
// 100,000 producer states (the broker's MaxProducerStates), each with five
// batches remembered, takes about 26 MB.
func TestProducersMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100,000 producer states")
	}
	const max = 100_000
	parts := make([]*Partition, 100)
	for i := range parts {
		parts[i] = NewPartition()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ps := NewProducers(max)
	now := time.Unix(1_700_000_000, 0)
	for id := int64(0); id < int64(2*max/len(parts)); id++ {
		for _, p := range parts {
			for seq := int32(0); seq < BatchesPerProducer; seq++ {
				ps.Record(p, idemBatch(id, 0, seq, 1), int64(seq), 0, now)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Equal(t, max, ps.Len(), "twice the bound was offered; the bound was kept")
	perState := float64(after.HeapAlloc-before.HeapAlloc) / max
	t.Logf("%.0f bytes per producer state", perState)
	assert.Less(t, perState, 300.0, "the documented ~260 bytes per state (26 MB at the bound)")
	runtime.KeepAlive(ps)
}

// BenchmarkProducersCheckRecord is what sequence checks add to the append
// of one idempotent batch: Check, then Record, for a producer continuing
// its sequence in one of 100 partitions shared with 99 other producers.
func BenchmarkProducersCheckRecord(b *testing.B) {
	ps := NewProducers(100_000)
	parts := make([]*Partition, 100)
	for i := range parts {
		parts[i] = NewPartition()
	}
	now := time.Unix(1_700_000_000, 0)
	for id := int64(0); id < 100; id++ {
		for _, p := range parts {
			ps.Record(p, idemBatch(id, 0, 0, 1), 0, 0, now)
		}
	}
	batch := idemBatch(42, 0, 1, 1)
	var next [100]int32 // producer 42's next sequence in each partition
	for i := range next {
		next[i] = 1
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i = (i + 1) % len(parts)
		binary.BigEndian.PutUint32(batch[offBaseSequence:], uint32(next[i]))
		next[i]++
		if dup, err := ps.Check(parts[i], batch); dup != nil || err != nil {
			b.Fatal(dup, err)
		}
		ps.Record(parts[i], batch, int64(next[i]), 0, now)
	}
}

// TestProducersOfPartitions: Of lists each asked partition's producers with
// their epoch and last batch, and a marker that raised the epoch leaves no
// last batch (-1) until the producer writes again.
func TestProducersOfPartitions(t *testing.T) {
	t.Parallel()
	ps := NewProducers(10)
	p0, p1, other := NewPartition(), NewPartition(), NewPartition()
	now := time.Unix(1_700_000_000, 0)
	ps.Record(p0, idemBatch(1, 0, 0, 3), 0, 111, now)
	ps.Record(p1, idemBatch(1, 0, 0, 1), 0, 222, now)
	ps.Record(p1, idemBatch(2, 4, 5, 2), 1, 333, now)
	ps.Record(other, idemBatch(3, 0, 0, 1), 0, 444, now)
	ps.Mark(p1, 1, 1, now) // a marker with a bumped epoch

	got := ps.Of(map[*Partition]bool{p0: true, p1: true})
	assert.Len(t, got, 2, "only the partitions asked for")
	assert.Equal(t, []ProducerState{{ProducerID: 1, Epoch: 0, LastSequence: 2, LastTimestamp: 111}}, got[p0])
	assert.ElementsMatch(t, []ProducerState{
		{ProducerID: 2, Epoch: 4, LastSequence: 6, LastTimestamp: 333},
		{ProducerID: 1, Epoch: 1, LastSequence: -1, LastTimestamp: -1},
	}, got[p1])
}
