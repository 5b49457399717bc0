package log

import (
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txnData is a transactional batch of producer pid with values.
func txnData(tb testing.TB, pid int64, values ...string) []byte {
	raw := batch(tb, same(len(values), t0.UnixMilli()), values...)
	binary.BigEndian.PutUint16(raw[offAttributes:], transactionalBit)
	binary.BigEndian.PutUint64(raw[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(raw[offProducerEpoch:], 0)
	binary.BigEndian.PutUint32(raw[offBaseSequence:], 0)
	binary.BigEndian.PutUint32(raw[offCRC:], crc32.Checksum(raw[offAttributes:], crc32c))
	return raw
}

// TestTransactionsInAPartition: two producers' transactions interleave;
// the last stable offset is the first offset of the earliest open one,
// a read_committed read stops there and lists the aborted transactions
// whose data it returns, and markers are control batches that read back as
// markers of the right kind.
func TestTransactionsInAPartition(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, batch(t, same(1, t0.UnixMilli()), "plain"), AppendOptions{}) // 0
	appendRaw(t, p, txnData(t, 7, "a1", "a2"), AppendOptions{})                  // 1-2, producer 7
	appendRaw(t, p, txnData(t, 8, "b1"), AppendOptions{})                        // 3, producer 8
	assert.Equal(t, int64(1), p.LastStableOffset())
	assert.Equal(t, []OpenTxn{{7, 1}, {8, 3}}, p.OpenTransactions())

	res, err := p.ReadCommitted(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.LastStableOffset)
	n := 0
	EachBatch(res.Records, func(Batch) bool { n++; return true })
	assert.Equal(t, 1, n, "only the batch below the last stable offset")

	abort := p.AppendMarker(MarkerBatch(7, 0, false, 0, t0), 7, false, t0) // 4
	assert.Equal(t, int64(4), abort)
	assert.Equal(t, int64(3), p.LastStableOffset(), "producer 8's transaction is still open")
	commit := p.AppendMarker(MarkerBatch(8, 0, true, 0, t0), 8, true, t0) // 5
	assert.Equal(t, int64(5), commit)
	assert.Equal(t, p.HighWatermark(), p.LastStableOffset())
	assert.Empty(t, p.OpenTransactions())
	assert.Equal(t, []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 4}}, p.AbortedTransactions())

	// Read as a consumer does, from where each read ended: the commit
	// marker, which follows a marker, is kept unencoded and read on its own
	// (markers.go).
	records, aborted := traverse(t, p, true, 1<<20)
	assert.Equal(t, []AbortedTxn{{7, 1, 4}}, aborted)
	var kinds []string
	EachBatch(records, func(b Batch) bool {
		switch marker, commit := b.MarkerType(); {
		case marker && commit:
			kinds = append(kinds, "commit")
		case marker:
			kinds = append(kinds, "abort")
		default:
			kinds = append(kinds, "data")
		}
		return true
	})
	assert.Equal(t, []string{"data", "data", "data", "abort", "commit"}, kinds)

	res, err = p.ReadCommitted(5, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, res.Aborted, "no aborted data at or after offset 5")

	_, err = p.DeleteBefore(5)
	require.NoError(t, err)
	assert.Empty(t, p.AbortedTransactions(), "the aborted transaction left with its marker")
}

// TestMarkerBatchIsValid: a marker batch parses, carries its producer and
// epoch, no sequence, one control record, and a valid CRC.
func TestMarkerBatchIsValid(t *testing.T) {
	t.Parallel()
	m := MarkerBatch(42, 3, true, 9, t0)
	b, err := ParseBatch(m)
	require.NoError(t, err)
	assert.True(t, b.Control())
	assert.True(t, b.Transactional())
	assert.Equal(t, int64(42), b.ProducerID())
	assert.Equal(t, int16(3), b.ProducerEpoch())
	assert.Equal(t, int32(-1), b.BaseSequence())
	assert.Equal(t, int32(1), b.NumRecords())
	marker, commit := b.MarkerType()
	assert.True(t, marker)
	assert.True(t, commit)
}

// txnKeyed is a transactional batch of producer pid holding recs.
func txnKeyed(tb testing.TB, pid int64, recs ...kv) []byte {
	raw := keyed(0, nil, tb, recs...)
	binary.BigEndian.PutUint16(raw[offAttributes:], transactionalBit)
	binary.BigEndian.PutUint64(raw[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(raw[offProducerEpoch:], 0)
	binary.BigEndian.PutUint32(raw[offBaseSequence:], 0)
	binary.BigEndian.PutUint32(raw[offCRC:], crc32.Checksum(raw[offAttributes:], crc32c))
	return raw
}

// logContents returns what the log holds by offset: "key=value" for a
// data record, "commit" or "abort" for a marker.
func logContents(tb testing.TB, p *Partition) map[int64]string {
	tb.Helper()
	out := map[int64]string{}
	p.Batches(0, func(b Batch) bool {
		if marker, commit := b.MarkerType(); marker {
			out[b.BaseOffset()] = map[bool]string{true: "commit", false: "abort"}[commit]
			return true
		}
		recs, err := b.Records()
		require.NoError(tb, err)
		for _, r := range recs {
			out[r.Offset] = string(r.Key) + "=" + string(r.Value)
		}
		return true
	})
	return out
}

// committedValues returns the data records a read_committed reader gets:
// those below the last stable offset not in an aborted transaction the
// read lists.
func committedValues(tb testing.TB, p *Partition) map[int64]string {
	tb.Helper()
	out := map[int64]string{}
	for offset := p.LogStartOffset(); ; {
		res, err := p.ReadCommitted(offset, 1<<30)
		require.NoError(tb, err)
		if res.Records == nil {
			return out
		}
		EachBatch(res.Records, func(b Batch) bool {
			offset = b.LastOffset() + 1
			if b.Control() {
				return true
			}
			for _, a := range res.Aborted {
				if b.Transactional() && a.ProducerID == b.ProducerID() && b.BaseOffset() >= a.FirstOffset && b.BaseOffset() < a.LastOffset {
					return true
				}
			}
			recs, err := b.Records()
			require.NoError(tb, err)
			for _, r := range recs {
				out[r.Offset] = string(r.Key) + "=" + string(r.Value)
			}
			return true
		})
	}
}

// TestCompactWithTransactions: the key map holds committed records only,
// so a committed value outlives a later aborted one and one still open;
// cleaning stops at the last stable offset; aborted records go; markers go
// once no record of their transaction is left and delete.retention.ms has
// passed since that was found; the aborted list keeps what remains.
func TestCompactWithTransactions(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, txnKeyed(t, 1, rec("k", "c1", 1000)), AppendOptions{}) // 0
	p.AppendMarker(MarkerBatch(1, 0, true, 0, t0), 1, true, t0)            // 1
	appendRaw(t, p, txnKeyed(t, 1, rec("k", "a1", 1001)), AppendOptions{}) // 2
	p.AppendMarker(MarkerBatch(1, 0, false, 0, t0), 1, false, t0)          // 3
	appendRaw(t, p, txnKeyed(t, 2, rec("k", "o1", 1002)), AppendOptions{}) // 4: stays open
	appendKeyed(t, p, rec("k", "p1", 1003))                                // 5: past the open transaction
	appendKeyed(t, p, rec("z", "z1", 1004))                                // 6: the tail
	require.Equal(t, int64(4), p.LastStableOffset())

	minute := time.Minute
	opts := CompactOptions{Now: t0, DeleteRetention: minute}
	res, err := p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.CleanedTo, "cleaning stops at the open transaction")
	assert.Equal(t, int64(1), res.AbortedRemoved)
	assert.Equal(t, map[int64]string{0: "k=c1", 1: "commit", 3: "abort", 4: "k=o1", 5: "k=p1", 6: "z=z1"}, logContents(t, p),
		"the committed value stays; the aborted one goes; the commit marker stays while c1 does, the abort marker until its horizon")
	assert.Equal(t, map[int64]string{0: "k=c1"}, committedValues(t, p))
	assert.Empty(t, p.AbortedTransactions(), "no aborted record is left to skip")

	// The open transaction aborts: its record goes at the next compaction,
	// and c1 is still the newest committed value below p1.
	p.AppendMarker(MarkerBatch(2, 0, false, 0, t0), 2, false, t0) // 7
	appendKeyed(t, p, rec("z", "z2", 1005))                       // 8: the tail
	assert.Equal(t, map[int64]string{0: "k=c1", 5: "k=p1", 6: "z=z1", 8: "z=z2"}, committedValues(t, p))
	assert.Equal(t, []AbortedTxn{{ProducerID: 2, FirstOffset: 4, LastOffset: 7}}, p.AbortedTransactions())
	_, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{1: "commit", 3: "abort", 5: "k=p1", 6: "z=z1", 7: "abort", 8: "z=z2"}, logContents(t, p),
		"p1 replaces c1, o1 is aborted; the markers whose records went this time stay until the next")
	assert.Equal(t, map[int64]string{5: "k=p1", 6: "z=z1", 8: "z=z2"}, committedValues(t, p))

	// The markers' horizons were set by the compactions that found them
	// alone; they go once delete.retention.ms has passed.
	opts.Now = t0.Add(minute - time.Millisecond)
	_, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{1: "commit", 3: "abort", 5: "k=p1", 6: "z=z1", 7: "abort", 8: "z=z2"}, logContents(t, p))
	opts.Now = t0.Add(2 * minute)
	res, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.MarkersRemoved)
	assert.Equal(t, map[int64]string{5: "k=p1", 6: "z=z1", 8: "z=z2"}, logContents(t, p))
	assert.Equal(t, map[int64]string{5: "k=p1", 6: "z=z1", 8: "z=z2"}, committedValues(t, p))
	assert.Equal(t, int64(9), p.HighWatermark())
	assert.Equal(t, int64(9), p.LastStableOffset())
}

// TestCompactKeepsAbortedRecordsPastTheRangeListed: an aborted
// transaction whose records straddle the end of the cleanable range (here
// min.compaction.lag.ms) loses those inside it and stays listed for read_committed
// readers of the rest.
func TestCompactKeepsAbortedRecordsPastTheRangeListed(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	old, young := t0.Add(-time.Hour).UnixMilli(), t0.UnixMilli()
	appendKeyed(t, p, rec("k", "v1", old))                                // 0
	appendRaw(t, p, txnKeyed(t, 1, rec("k", "a1", old)), AppendOptions{}) // 1
	appendRaw(t, p, txnKeyed(t, 1, rec("k", "a2", young)), AppendOptions{})
	p.AppendMarker(MarkerBatch(1, 0, false, 0, t0), 1, false, t0) // 3
	appendKeyed(t, p, rec("z", "z", young))                       // 4
	_, err := p.Compact(CompactOptions{Now: t0, MinCompactionLag: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{0: "k=v1", 2: "k=a2", 3: "abort", 4: "z=z"}, logContents(t, p))
	assert.Equal(t, []AbortedTxn{{ProducerID: 1, FirstOffset: 1, LastOffset: 3}}, p.AbortedTransactions())
	assert.Equal(t, map[int64]string{0: "k=v1", 4: "z=z"}, committedValues(t, p), "a2 is still skipped")
}

// TestCompactDirtyRatioCountsMarkerHorizons: background compaction, which
// waits for min.cleanable.dirty.ratio, still runs once a marker's delete
// horizon has passed, so spent markers go without new writes.
func TestCompactDirtyRatioCountsMarkerHorizons(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, txnKeyed(t, 1, rec("k", "a", 1000)), AppendOptions{})
	p.AppendMarker(MarkerBatch(1, 0, false, 0, t0), 1, false, t0) // 1
	appendKeyed(t, p, rec("z", "z", 1000))                        // the tail
	opts := CompactOptions{Now: t0, DeleteRetention: time.Minute, MinDirtyRatio: 0.5}
	res, err := p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.AbortedRemoved)
	res, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, CompactResult{}, res, "nothing new is dirty and no horizon is set yet")
	opts.MinDirtyRatio = 0 // on demand: finds the marker alone and sets its horizon
	_, err = p.Compact(opts)
	require.NoError(t, err)
	opts.MinDirtyRatio = 0.5
	opts.Now = t0.Add(time.Minute)
	res, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.MarkersRemoved, "the passed horizon makes the partition worth cleaning")
	assert.Equal(t, map[int64]string{2: "z=z"}, logContents(t, p))
}

// BenchmarkAppendMarker measures writing commit markers as a transaction's
// end does, 20 to a partition in 1,000 partitions that hold nothing else
// (a wide transaction's usual partition): B/op is the memory a marker
// allocates, its share of the partition's chunks and index included, and
// kept-B/marker what stays in use once 20 markers are in each partition.
func BenchmarkAppendMarker(b *testing.B) {
	marker := MarkerBatch(1, 0, true, 0, t0)
	parts := make([]*Partition, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(parts)
		if k == 0 && i/len(parts)%20 == 0 {
			for j := range parts {
				parts[j] = NewPartition()
			}
		}
		parts[k].AppendMarker(marker, 1, true, t0)
		i++
	}
	b.StopTimer()
	clear(parts)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for j := range parts {
		parts[j] = NewPartition()
		for range 20 {
			parts[j].AppendMarker(marker, 1, true, t0)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(20*len(parts)), "kept-B/marker")
	runtime.KeepAlive(parts)
}
