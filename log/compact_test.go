package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/testutil"
)

// kv is one record of a keyed batch; a nil Key or Value is null.
type kv struct {
	Key, Value []byte
	TS         int64
	Headers    []kmsg.Header
}

func rec(key, value string, ts int64) kv { return kv{Key: []byte(key), Value: []byte(value), TS: ts} }
func tombstone(key string, ts int64) kv  { return kv{Key: []byte(key), TS: ts} }

// keyedRecords encodes records with kmsg as a producer would: offset deltas
// 0, 1, 2, … and timestamps relative to the first.
func keyedRecords(recs ...kv) []byte {
	var out []byte
	for i, r := range recs {
		kr := kmsg.NewRecord()
		kr.OffsetDelta = int32(i)
		kr.TimestampDelta64 = r.TS - recs[0].TS
		kr.Key, kr.Value, kr.Headers = r.Key, r.Value, r.Headers
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		out = kr.AppendTo(out)
	}
	return out
}

// keyed encodes an uncompressed batch of recs, or one compressed with codec.
func keyed(codec int16, compress func(testing.TB, []byte) []byte, tb testing.TB, recs ...kv) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.Attributes = codec
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp = recs[0].TS
	for _, r := range recs {
		rb.MaxTimestamp = max(rb.MaxTimestamp, r.TS)
	}
	rb.LastOffsetDelta, rb.NumRecords = int32(len(recs)-1), int32(len(recs))
	rb.Records = keyedRecords(recs...)
	if compress != nil {
		rb.Records = compress(tb, rb.Records)
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out
}

func appendKeyed(tb testing.TB, p *Partition, recs ...kv) int64 {
	tb.Helper()
	return appendRaw(tb, p, keyed(0, nil, tb, recs...), AppendOptions{})
}

// readAll returns every record a consumer fetching from offset 0 gets, by
// offset, checking that each batch it is served is whole: right length and
// CRC, records inside the batch's offset range.
func readAll(tb testing.TB, p *Partition) map[int64]Record {
	tb.Helper()
	out := map[int64]Record{}
	for offset := p.LogStartOffset(); ; {
		res, err := p.Read(offset, 1<<30)
		require.NoError(tb, err)
		if res.Records == nil {
			return out
		}
		for raw := res.Records; len(raw) > 0; {
			n := 12 + int(binary.BigEndian.Uint32(raw[offLength:]))
			b := Batch(raw[:n])
			raw = raw[n:]
			require.Equal(tb, crc32.Checksum(b[offAttributes:], crc32c), binary.BigEndian.Uint32(b[offCRC:]), "CRC")
			recs, err := b.Records()
			require.NoError(tb, err)
			require.LessOrEqual(tb, len(recs), int(b.LastOffsetDelta())+1)
			for _, r := range recs {
				require.GreaterOrEqual(tb, r.Offset, b.BaseOffset())
				require.LessOrEqual(tb, r.Offset, b.LastOffset())
				out[r.Offset] = r
			}
			offset = b.LastOffset() + 1
		}
	}
}

func values(recs map[int64]Record) map[int64]string {
	out := map[int64]string{}
	for o, r := range recs {
		if r.Value == nil {
			out[o] = "<tombstone>"
		} else {
			out[o] = string(r.Value)
		}
	}
	return out
}

func TestSkipOffsetsMovesTheNextBatch(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendKeyed(t, p, rec("a", "1", 1000), rec("b", "2", 1000))
	require.NoError(t, p.SkipOffsets(3))
	require.NoError(t, p.SkipOffsets(2))
	assert.Equal(t, int64(2), p.HighWatermark(), "the gap shows only once the next batch is in")
	assert.Equal(t, int64(7), appendKeyed(t, p, rec("c", "3", 1000)))
	assert.Equal(t, int64(8), p.HighWatermark())
	assert.Equal(t, map[int64]string{0: "1", 1: "2", 7: "3"}, values(readAll(t, p)))
	for _, from := range []int64{2, 4, 7} {
		res, err := p.Read(from, 1<<20)
		require.NoError(t, err)
		assert.Equal(t, int64(7), Batch(res.Records).BaseOffset(), "a fetch inside the gap gets the batch after it")
	}
	assert.Equal(t, int64(8), appendKeyed(t, p, rec("d", "4", 1000)), "one skip, one gap")

	assert.ErrorIs(t, p.SkipOffsets(0), ErrSkip)
	assert.ErrorIs(t, p.SkipOffsets(-1), ErrSkip)
	assert.ErrorIs(t, p.SkipOffsets(MaxOffset), ErrSkip)
	require.NoError(t, p.SkipOffsets(MaxOffset-p.HighWatermark()))
	assert.ErrorIs(t, p.SkipOffsets(1), ErrSkip, "pending skips add up against the bound")
}

func TestGapEveryNRecords(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	gap := AppendOptions{Gap: Gap{Skip: 10, Every: 2}}
	var bases []int64
	for range 5 {
		bases = append(bases, appendRaw(t, p, keyed(0, nil, t, rec("k", "v", 1000)), gap))
	}
	assert.Equal(t, []int64{0, 1, 12, 13, 24}, bases)
	every := NewPartition()
	bases = nil
	for range 3 {
		bases = append(bases, appendRaw(t, every, keyed(0, nil, t, rec("k", "v", 1000), rec("k", "w", 1000)), AppendOptions{Gap: Gap{Skip: 1}}))
	}
	assert.Equal(t, []int64{0, 3, 6}, bases, "Every 0 means a gap before every batch but the first")
}

func TestCompactKeepsTheNewestRecordOfEachKey(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	hdr := []kmsg.Header{{Key: "h", Value: []byte("x")}}
	appendKeyed(t, p, rec("a", "a1", 1000), rec("b", "b1", 1001), rec("c", "c1", 1002))  // 0-2
	appendKeyed(t, p, rec("a", "a2", 1003), kv{Value: []byte("keyless"), TS: 1004})      // 3-4
	appendKeyed(t, p, kv{Key: []byte("b"), Value: []byte("b2"), TS: 1005, Headers: hdr}) // 5
	appendKeyed(t, p, rec("a", "a3", 1006), rec("d", "d1", 1007))                        // 6-7, the active tail
	before := p.Bytes()

	res, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.True(t, res.Compacted)
	assert.Equal(t, int64(6), res.CleanedTo)
	assert.Equal(t, int64(3), res.RecordsRemoved, "a1 and b1 superseded, the keyless record dropped")
	assert.Equal(t, 3, res.BatchesBefore)
	assert.Equal(t, 3, res.BatchesAfter)
	got := readAll(t, p)
	assert.Equal(t, map[int64]string{2: "c1", 3: "a2", 5: "b2", 6: "a3", 7: "d1"}, values(got),
		"a2 stays: a3 is in the active tail, which the cleaner does not index")
	assert.Equal(t, int64(1002), got[2].Timestamp)
	assert.Equal(t, int64(1005), got[5].Timestamp)
	assert.Equal(t, hdr, got[5].Headers)
	assert.Equal(t, int64(8), p.HighWatermark())
	assert.Equal(t, int64(0), p.LogStartOffset(), "compaction leaves the log start")
	assert.Equal(t, before+res.BytesAfter-res.BytesBefore, p.Bytes())

	res0, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	first := Batch(res0.Records[:12+binary.BigEndian.Uint32(res0.Records[offLength:])])
	assert.Equal(t, int64(0), first.BaseOffset(), "a rebuilt batch keeps its base offset")
	assert.Equal(t, int32(2), first.LastOffsetDelta(), "and its last offset")
	assert.Equal(t, int32(1), first.NumRecords())
	assert.Equal(t, int64(1002), first.FirstTimestamp())
	assert.Equal(t, int64(1002), first.MaxTimestamp())
	ts, off := p.MaxTimestamp()
	assert.Equal(t, []int64{1007, 7}, []int64{ts, off})
	o, ts := p.OffsetForTime(1001)
	assert.Equal(t, []int64{2, 1002}, []int64{o, ts}, "ListOffsets by time skips the removed records")

	again, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.False(t, again.Compacted, "a second pass has nothing left to remove")
}

func TestCompactTombstonesGoAfterTheDeleteHorizon(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendKeyed(t, p, rec("a", "a1", 1000), rec("b", "b1", 1000))
	appendKeyed(t, p, tombstone("a", 1001))
	appendKeyed(t, p, rec("c", "c1", 1002)) // the active tail
	day := 24 * time.Hour
	opts := CompactOptions{Now: t0, DeleteRetention: day}

	res, err := p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{1: "b1", 2: "<tombstone>", 3: "c1"}, values(readAll(t, p)),
		"the tombstone removes a1 and stays for delete.retention.ms")
	assert.Equal(t, int64(0), res.TombstonesRemoved)

	opts.Now = t0.Add(day - time.Millisecond)
	_, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Contains(t, values(readAll(t, p)), int64(2), "still inside the horizon")

	opts.Now = t0.Add(day)
	res, err = p.Compact(opts)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.TombstonesRemoved)
	assert.Equal(t, map[int64]string{1: "b1", 3: "c1"}, values(readAll(t, p)))
}

func TestCompactKeepsTheCodecOfCompressedBatches(t *testing.T) {
	t.Parallel()
	for codec, compress := range compressors {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			p := NewPartition()
			appendRaw(t, p, keyed(codec, compress, t, rec("a", "a1", 1000), rec("b", "b1", 1000), rec("a", "a2", 1001)), AppendOptions{})
			appendRaw(t, p, keyed(codec, compress, t, rec("c", "c1", 1002)), AppendOptions{}) // kept as is
			appendRaw(t, p, keyed(codec, compress, t, rec("z", "z1", 1003)), AppendOptions{}) // the active tail
			res, err := p.Compact(CompactOptions{Now: t0})
			require.NoError(t, err)
			assert.Equal(t, int64(1), res.RecordsRemoved)
			var batches []Batch
			p.Batches(0, func(b Batch) bool { batches = append(batches, b); return true })
			require.Len(t, batches, 3)
			for _, b := range batches {
				assert.Equal(t, int8(codec), b.Compression(), "compaction keeps the codec, as Kafka's cleaner does")
			}
			rebuilt := batches[0]
			require.Equal(t, crc32.Checksum(rebuilt[offAttributes:], crc32c), binary.BigEndian.Uint32(rebuilt[offCRC:]), "the CRC covers the section as stored")
			recs := decompressedRecords(t, rebuilt) // under the decoder's limits: strict snappy, zstd window
			require.Len(t, recs, 2)
			assert.Equal(t, []int64{1, 2}, []int64{recs[0].Offset, recs[1].Offset})
			assert.Equal(t, []string{"b1", "a2"}, []string{string(recs[0].Value), string(recs[1].Value)})
			assert.Equal(t, int64(1001), recs[1].Timestamp)
		})
	}
}

// TestCompactionTakesATurnPerCompressedBatch: a compaction asks for a
// decompression turn before it decompresses each compressed batch, holds
// one at a time, and gives every one back.
func TestCompactionTakesATurnPerCompressedBatch(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, keyed(1, compressors[1], t, rec("a", "a1", 1000), rec("b", "b1", 1000)), AppendOptions{})
	appendRaw(t, p, keyed(0, nil, t, rec("a", "a2", 1001)), AppendOptions{})
	appendRaw(t, p, keyed(1, compressors[1], t, rec("b", "b2", 1002)), AppendOptions{})
	appendRaw(t, p, keyed(1, compressors[1], t, rec("z", "z1", 1003)), AppendOptions{}) // the active tail
	turns, held, mostHeld := 0, 0, 0
	res, err := p.Compact(CompactOptions{Now: t0, Turn: func() (func(), error) {
		turns++
		held++
		mostHeld = max(mostHeld, held)
		return func() { held-- }, nil
	}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.RecordsRemoved)
	assert.Equal(t, 4, turns, "the two compressed batches before the tail, once to index them and once to rewrite them")
	assert.Equal(t, 1, mostHeld, "turns held at once")
	assert.Zero(t, held, "turns not given back")

	// A turn that fails stops the compaction and changes nothing.
	appendRaw(t, p, keyed(1, compressors[1], t, rec("z", "z2", 1004)), AppendOptions{})
	before := p.Bytes()
	stop := errors.New("closing")
	_, err = p.Compact(CompactOptions{Now: t0, Turn: func() (func(), error) { return nil, stop }})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, before, p.Bytes(), "the log as it was")
}

// decompressedRecords returns the records of a compressed batch, read
// from a copy of it holding its section decompressed.
func decompressedRecords(tb testing.TB, b Batch) []Record {
	tb.Helper()
	var section bytes.Buffer
	require.NoError(tb, b.decompress(&section))
	plain := append(append([]byte(nil), b[:BatchHeaderSize]...), section.Bytes()...)
	plain[offAttributes+1] &^= compressionMask
	recs, err := Batch(plain).Records()
	require.NoError(tb, err)
	return recs
}

// TestCompactStoresACompressibleBatchCompressed: a batch that unpacks to
// many times its size, most of it one key written again and again, stays
// near its compressed size after compaction drops records from it, rather
// than coming back at its decompressed size.
// (Values of 1 KiB already make it unpack to 8 (snappy) to 120 (zstd)
// times its size; 16 KiB ones cost the race detector minutes.)
func TestCompactStoresACompressibleBatchCompressed(t *testing.T) {
	t.Parallel()
	value := bytes.Repeat([]byte("v"), 1<<10)
	var recs []kv
	for i := range 256 {
		recs = append(recs, kv{Key: []byte(fmt.Sprint("k", i)), Value: value, TS: 1000})
	}
	for range 256 {
		recs = append(recs, kv{Key: []byte("same"), Value: value, TS: 1000})
	}
	for codec, compress := range compressors {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			p := NewPartition()
			raw := keyed(codec, compress, t, recs...)
			appendRaw(t, p, raw, AppendOptions{})
			appendRaw(t, p, keyed(codec, compress, t, rec("tail", "t", 1001)), AppendOptions{})
			res, err := p.Compact(CompactOptions{Now: t0})
			require.NoError(t, err)
			require.Equal(t, int64(255), res.RecordsRemoved, "every \"same\" but the newest goes")
			var first Batch
			p.Batches(0, func(b Batch) bool { first = b; return false })
			decompressed := 257 * len(value)
			t.Logf("codec %d: %d bytes before, %d after, %d records' values", codec, len(raw), len(first), decompressed)
			assert.Less(t, len(first), 2*len(raw)+1024, "stays near the compressed size")
			assert.Less(t, len(first), decompressed/8, "far from the decompressed size")
			assert.Len(t, decompressedRecords(t, first), 257)
		})
	}
}

func TestCompactLeavesTheActiveTailAndYoungBatches(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendKeyed(t, p, rec("a", "a1", t0.UnixMilli()))
	res, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.False(t, res.Compacted, "one batch is all active tail")

	appendKeyed(t, p, rec("a", "a2", t0.Add(time.Minute).UnixMilli()))
	appendKeyed(t, p, rec("a", "a3", t0.Add(2*time.Minute).UnixMilli()))
	res, err = p.Compact(CompactOptions{Now: t0.Add(2 * time.Minute), MinCompactionLag: 90 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{0: "a1", 1: "a2", 2: "a3"}, values(readAll(t, p)),
		"a2 is younger than min.compaction.lag.ms, so only a1's batch was cleanable, and nothing newer indexed")
	assert.Equal(t, int64(1), res.CleanedTo)
	assert.False(t, res.Compacted)
	res, err = p.Compact(CompactOptions{Now: t0.Add(2 * time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{1: "a2", 2: "a3"}, values(readAll(t, p)), "without the lag a2 supersedes a1")
}

func TestCompactDirtyRatio(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	for i := range 4 {
		appendKeyed(t, p, rec(fmt.Sprint("k", i), "v", 1000))
	}
	appendKeyed(t, p, rec("tail", "v", 1000))
	res, err := p.Compact(CompactOptions{Now: t0, MinDirtyRatio: 0.5})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.CleanedTo, "everything is dirty at first")
	appendKeyed(t, p, rec("k0", "v2", 1000)) // the old tail becomes cleanable: 1 dirty batch of 5
	res, err = p.Compact(CompactOptions{Now: t0, MinDirtyRatio: 0.5})
	require.NoError(t, err)
	assert.Equal(t, CompactResult{}, res, "below min.cleanable.dirty.ratio nothing runs")
	res, err = p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.CleanedTo, "on demand ignores the ratio")
}

func TestCompactionKeyMapIsBounded(t *testing.T) {
	// Not parallel: it lowers the package's maxCompactionKeys.
	old := maxCompactionKeys
	maxCompactionKeys = 3
	t.Cleanup(func() { maxCompactionKeys = old })
	p := NewPartition()
	appendKeyed(t, p, rec("a", "a1", 1000), rec("b", "b1", 1000)) // 0-1
	appendKeyed(t, p, rec("a", "a2", 1000), rec("c", "c1", 1000)) // 2-3: would make 4 keys
	appendKeyed(t, p, rec("z", "z", 1000))                        // the active tail
	res, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.CleanedTo, "the pass stops at the batch that would overflow the map")
	assert.False(t, res.Compacted)
	res, err = p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.CleanedTo, "the next pass indexes from where the last one stopped")
	assert.Equal(t, map[int64]string{1: "b1", 2: "a2", 3: "c1", 4: "z"}, values(readAll(t, p)))
}

func TestCompactStartsAgainWhenTheFrontMoves(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendKeyed(t, p, rec("a", "a1", 1000))
	appendKeyed(t, p, rec("a", "a2", 1000))
	appendKeyed(t, p, rec("z", "z", 1000))
	p.mu.RLock()
	snap := compactSnapshot{entries: p.entries[:3:3], logStart: p.logStart}
	p.mu.RUnlock()
	_, err := p.DeleteBefore(1)
	require.NoError(t, err)
	err = p.swap(snap, 2, nil, true, &CompactResult{})
	assert.ErrorIs(t, err, errLogChanged)
	res, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	assert.Equal(t, map[int64]string{1: "a2", 2: "z"}, values(readAll(t, p)))
	assert.False(t, res.Compacted, "below the log start nothing is left to remove")
}

// TestReadersNeverSeeATornBatch reads a partition while it is appended to
// and compacted over and over: every batch a read returns parses with a
// right CRC, whether it is from before or after a compaction.
func TestReadersNeverSeeATornBatch(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	for i := range 200 {
		appendKeyed(t, p, rec(fmt.Sprint("k", i%7), fmt.Sprint("v", i), 1000), rec(fmt.Sprint("j", i%5), "w", 1000))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				readAll(t, p)
				runtime.Gosched()
			}
		}()
	}
	for i := range 100 {
		appendKeyed(t, p, rec(fmt.Sprint("k", i%7), fmt.Sprint("n", i), 1000))
		_, err := p.Compact(CompactOptions{Now: t0})
		require.NoError(t, err)
	}
	stop.Store(true)
	wg.Wait()
	got := values(readAll(t, p))
	assert.Len(t, got, 7+5+1, "one record per key, and the tail's duplicate of k1")
}

// BenchmarkCompact compacts a partition of 1M records over 10k keys, in
// batches of 100 records, and reports the time of one compaction, the CPU
// time it used (on a loaded machine wall time is mostly waiting), the
// bytes it allocated (its memory on top of the log's, an upper bound of
// its peak), and the log's size before and after.
func BenchmarkCompact(b *testing.B) {
	const records, keys, perBatch = 1_000_000, 10_000, 100
	batches := make([][]byte, records/perBatch)
	for i := range batches {
		recs := make([]kv, perBatch)
		for j := range recs {
			n := i*perBatch + j
			recs[j] = rec(fmt.Sprintf("key-%05d", n%keys), fmt.Sprintf("value-%07d-%s", n, "0123456789abcdef0123456789abcdef"), int64(1000+n))
		}
		batches[i] = keyed(0, nil, b, recs...)
	}
	var cpu time.Duration
	var before, after int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p := NewPartition()
		for _, raw := range batches {
			appendRaw(b, p, raw, AppendOptions{})
		}
		before = p.Bytes()
		runtime.GC()
		start, _ := testutil.ProcessCPU()
		b.StartTimer()
		res, err := p.Compact(CompactOptions{Now: t0})
		b.StopTimer()
		end, _ := testutil.ProcessCPU()
		cpu += end - start
		if err != nil || res.RecordsRemoved < records-keys-perBatch {
			b.Fatalf("compaction removed %d records: %v", res.RecordsRemoved, err)
		}
		after = p.Bytes()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(before), "log-B-before")
	b.ReportMetric(float64(after), "log-B-after")
}

func TestCompactRecomputesTheTimestampIndex(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendKeyed(t, p, rec("a", "a1", 5000)) // the newest timestamp, superseded
	appendKeyed(t, p, rec("b", "b1", 2000))
	appendKeyed(t, p, rec("a", "a2", 1000))
	appendKeyed(t, p, rec("z", "z", 1500)) // the active tail
	ts, off := p.MaxTimestamp()
	require.Equal(t, []int64{5000, 0}, []int64{ts, off})
	_, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	ts, off = p.MaxTimestamp()
	assert.Equal(t, []int64{2000, 1}, []int64{ts, off}, "ListOffsets(max timestamp) no longer names a removed record")
	o, ts := p.OffsetForTime(1600)
	assert.Equal(t, []int64{1, 2000}, []int64{o, ts})
	appendKeyed(t, p, rec("y", "y", 900))
	o, ts = p.OffsetForTime(1600)
	assert.Equal(t, []int64{1, 2000}, []int64{o, ts}, "entries after the swap are indexed too")
}

// BenchmarkCompactTransactions is BenchmarkCompact with every batch
// written in a transaction of its own, by one of ten producers, and every
// other transaction aborted: one marker per batch, half the batches
// dropped whole as aborted.
func BenchmarkCompactTransactions(b *testing.B) {
	const records, keys, perBatch = 1_000_000, 10_000, 100
	batches := make([][]byte, records/perBatch)
	for i := range batches {
		recs := make([]kv, perBatch)
		for j := range recs {
			n := i*perBatch + j
			recs[j] = rec(fmt.Sprintf("key-%05d", n%keys), fmt.Sprintf("value-%07d-%s", n, "0123456789abcdef0123456789abcdef"), int64(1000+n))
		}
		batches[i] = txnKeyed(b, int64(i%10), recs...)
	}
	var cpu time.Duration
	var before, after int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		p := NewPartition()
		for i, raw := range batches {
			appendRaw(b, p, raw, AppendOptions{})
			commit := i%2 == 0
			p.AppendMarker(MarkerBatch(int64(i%10), 0, commit, 0, t0), int64(i%10), commit, t0)
		}
		appendKeyed(b, p, rec("tail", "tail", 1000))
		before = p.Bytes()
		runtime.GC()
		start, _ := testutil.ProcessCPU()
		b.StartTimer()
		res, err := p.Compact(CompactOptions{Now: t0})
		b.StopTimer()
		end, _ := testutil.ProcessCPU()
		cpu += end - start
		if err != nil || res.AbortedRemoved != records/2 {
			b.Fatalf("compaction removed %d aborted records: %v", res.AbortedRemoved, err)
		}
		after = p.Bytes()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(before), "log-B-before")
	b.ReportMetric(float64(after), "log-B-after")
}

// TestCompactMergesSmallBatches: with MergeBatchBytes, the batches a
// compaction keeps are merged into as few batches of up to that size as it
// takes, each record at its offset with its timestamp, key, value and
// headers; batches that may not be merged (idempotent, compressed, with a
// tombstone, of another leader epoch) and the active tail stay as they are.
// The merged log keeps less, reads the same, and compacts again as before.
func TestCompactMergesSmallBatches(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	hdr := []kmsg.Header{{Key: "h", Value: []byte("x")}}
	want := map[int64]string{}
	for i := range 40 { // one commit a batch, as __consumer_offsets gets them
		key := fmt.Sprintf("group-%02d", i)
		appendKeyed(t, p, kv{Key: []byte(key), Value: []byte("v" + key), TS: 1000 + int64(i), Headers: hdr})
		want[int64(i)] = "v" + key
	}
	idem := keyed(0, nil, t, rec("idem", "i", 2000))
	binary.BigEndian.PutUint64(idem[offProducerID:], 7)
	binary.BigEndian.PutUint32(idem[offCRC:], crc32.Checksum(idem[offAttributes:], crc32c))
	appendRaw(t, p, idem, AppendOptions{}) // 40
	want[40] = "i"
	appendKeyed(t, p, tombstone("gone", 2001)) // 41: a tombstone, kept until its horizon
	want[41] = "<tombstone>"
	for i := 42; i < 50; i++ {
		appendKeyed(t, p, rec(fmt.Sprintf("late-%d", i), "l", 3000+int64(i)))
		want[int64(i)] = "l"
	}
	before := p.Bytes()

	res, err := p.Compact(CompactOptions{Now: t0, DeleteRetention: time.Hour, MergeBatchBytes: 1 << 10})
	require.NoError(t, err)
	assert.True(t, res.Compacted)
	assert.Zero(t, res.RecordsRemoved)
	assert.Equal(t, 49, res.BatchesBefore, "all but the active tail")
	assert.Less(t, res.BatchesAfter, 12, "the plain batches merged into 1 KiB batches")
	assert.Less(t, p.Bytes(), before)
	got := readAll(t, p)
	assert.Equal(t, want, values(got))
	for i := range int64(40) {
		assert.Equal(t, 1000+i, got[i].Timestamp, "offset %d", i)
		assert.Equal(t, fmt.Sprintf("group-%02d", i), string(got[i].Key))
		assert.Equal(t, hdr, got[i].Headers)
	}
	assert.Equal(t, int64(3049), got[49].Timestamp)
	res0, err := p.Read(0, 1)
	require.NoError(t, err)
	first := Batch(res0.Records)
	assert.Equal(t, int64(0), first.BaseOffset())
	assert.Greater(t, first.NumRecords(), int32(1))
	assert.LessOrEqual(t, len(first), 1<<10+64, "up to about MergeBatchBytes")
	assert.Equal(t, int64(1000), first.FirstTimestamp())
	res40, err := p.Read(40, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(7), Batch(res40.Records).ProducerID(), "the idempotent batch stays as it was")
	o, ts := p.OffsetForTime(1020)
	assert.Equal(t, []int64{20, 1020}, []int64{o, ts}, "ListOffsets by time finds a record inside a merged batch")
	maxTS, maxOff := p.MaxTimestamp()
	assert.Equal(t, []int64{3049, 49}, []int64{maxTS, maxOff})

	// A newer value of a merged key: the next pass drops the old one from
	// its merged batch.
	appendKeyed(t, p, rec("group-05", "again", 4000)) // 50
	appendKeyed(t, p, rec("tail", "t", 4001))         // 51, the active tail
	res, err = p.Compact(CompactOptions{Now: t0, DeleteRetention: time.Hour, MergeBatchBytes: 1 << 10})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.RecordsRemoved)
	got = readAll(t, p)
	delete(want, 5)
	want[50], want[51] = "again", "t"
	assert.Equal(t, want, values(got))
}

// TestMergingChangesNoRecord: over random logs of small batches (keys
// reused, tombstones, idempotent batches among them) and random merge
// sizes, compacting with MergeBatchBytes keeps exactly the records,
// offsets and timestamps that compacting without it keeps, pass after
// pass as more is appended.
func TestMergingChangesNoRecord(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	smaller := 0
	for round := range 30 {
		plain, merged := NewPartition(), NewPartition()
		limit := 64 + rng.IntN(4<<10)
		ts := int64(1000)
		for pass := range 4 {
			for range 1 + rng.IntN(60) {
				var recs []kv
				for range 1 + rng.IntN(3) {
					ts += int64(rng.IntN(3))
					key := fmt.Sprintf("k%d", rng.IntN(25))
					if rng.IntN(10) == 0 {
						recs = append(recs, tombstone(key, ts))
					} else {
						recs = append(recs, rec(key, strings.Repeat("v", rng.IntN(40)), ts))
					}
				}
				raw := keyed(0, nil, t, recs...)
				if rng.IntN(8) == 0 {
					binary.BigEndian.PutUint64(raw[offProducerID:], uint64(rng.IntN(5)+1))
					binary.BigEndian.PutUint32(raw[offCRC:], crc32.Checksum(raw[offAttributes:], crc32c))
				}
				appendRaw(t, plain, raw, AppendOptions{})
				appendRaw(t, merged, raw, AppendOptions{})
			}
			now := t0.Add(time.Duration(pass) * time.Hour)
			_, err := plain.Compact(CompactOptions{Now: now, DeleteRetention: 90 * time.Minute})
			require.NoError(t, err)
			_, err = merged.Compact(CompactOptions{Now: now, DeleteRetention: 90 * time.Minute, MergeBatchBytes: limit})
			require.NoError(t, err)
			want, got := readAll(t, plain), readAll(t, merged)
			require.Equal(t, len(want), len(got), "round %d pass %d", round, pass)
			for o, w := range want {
				g := got[o]
				require.Equal(t, string(w.Key), string(g.Key), "round %d pass %d offset %d", round, pass, o)
				require.Equal(t, w.Value, g.Value)
				require.Equal(t, w.Timestamp, g.Timestamp)
			}
			require.Equal(t, plain.HighWatermark(), merged.HighWatermark())
			require.LessOrEqual(t, merged.Bytes(), plain.Bytes())
			if merged.Bytes() < plain.Bytes() {
				smaller++
			}
		}
	}
	assert.Greater(t, smaller, 60, "of 120 passes, most merged something")
}
