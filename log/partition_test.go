package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// batch encodes a v2 batch with kmsg whose records carry the given
// timestamps (ms) and values, as a producer would send it.
func batch(tb testing.TB, timestamps []int64, values ...string) []byte {
	tb.Helper()
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp = timestamps[0]
	for _, ts := range timestamps {
		rb.MaxTimestamp = max(rb.MaxTimestamp, ts)
	}
	rb.LastOffsetDelta = int32(len(values) - 1)
	rb.NumRecords = int32(len(values))
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = timestamps[i] - timestamps[0]
		r.Key = []byte("k")
		r.Value = []byte(v)
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // a zero Length encodes as one byte
		rb.Records = r.AppendTo(rb.Records)
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out
}

func same(n int, ts int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = ts
	}
	return out
}

func appendRaw(tb testing.TB, p *Partition, raw []byte, opts AppendOptions) int64 {
	tb.Helper()
	b, err := ParseBatch(raw)
	require.NoError(tb, err)
	if opts.Now.IsZero() {
		opts.Now = t0
	}
	return p.Append(b, opts)
}

func TestParseBatchRejects(t *testing.T) {
	t.Parallel()
	good := batch(t, []int64{1}, "a")
	_, err := ParseBatch(good)
	require.NoError(t, err)

	_, err = ParseBatch(good[:30])
	assert.ErrorIs(t, err, ErrCorrupt, "truncated header")
	_, err = ParseBatch(good[:len(good)-1])
	assert.ErrorIs(t, err, ErrCorrupt, "truncated records")

	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 0xff
	_, err = ParseBatch(flipped)
	assert.ErrorIs(t, err, ErrCorrupt, "bad CRC")

	two := append(append([]byte(nil), good...), good...)
	_, err = ParseBatch(two)
	assert.ErrorIs(t, err, ErrInvalidRecord, "two batches in one partition")

	old := append([]byte(nil), good...)
	old[offMagic] = 1
	_, err = ParseBatch(old)
	assert.ErrorIs(t, err, ErrInvalidRecord, "magic 1")
}

func TestAppendAssignsOffsetsWithoutReencoding(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	raw := batch(t, same(3, 100), "a", "b", "c")
	crc := binary.BigEndian.Uint32(raw[offCRC:])
	assert.Equal(t, int64(0), appendRaw(t, p, raw, AppendOptions{}))
	assert.Equal(t, int64(3), appendRaw(t, p, batch(t, same(2, 100), "d", "e"), AppendOptions{}))
	assert.Equal(t, int64(5), p.HighWatermark())

	res, err := p.Read(3, 1<<20)
	require.NoError(t, err)
	stored := Batch(res.Records)
	assert.Equal(t, int64(3), stored.BaseOffset())
	assert.Equal(t, raw[offAttributes:offAttributes+4], []byte(res.Records[offAttributes:offAttributes+4]))
	first, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, crc, binary.BigEndian.Uint32(first.Records[offCRC:]), "the CRC is untouched: the batch is stored as received")
	assert.Equal(t, raw[offAttributes:], first.Records[offAttributes:len(raw)])

	recs, err := Batch(first.Records[:len(raw)]).Records()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []int64{0, 1, 2}, []int64{recs[0].Offset, recs[1].Offset, recs[2].Offset})
	assert.Equal(t, "c", string(recs[2].Value))
}

func TestReadLimits(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	var sizes []int
	for i := 0; i < 10; i++ {
		raw := batch(t, []int64{1}, "0123456789")
		sizes = append(sizes, len(raw))
		appendRaw(t, p, raw, AppendOptions{})
	}
	res, err := p.Read(0, 1)
	require.NoError(t, err)
	assert.Len(t, res.Records, sizes[0], "a limit below one batch still returns one whole batch")

	res, err = p.Read(0, 3*sizes[0]+5)
	require.NoError(t, err)
	assert.Len(t, res.Records, 3*sizes[0], "whole batches only, within the limit")

	res, err = p.Read(10, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, res.Records, "reading at the high watermark returns nothing")
	assert.Equal(t, int64(10), res.HighWatermark)

	_, err = p.Read(11, 1<<20)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	_, err = p.Read(-1, 1<<20)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
}

func TestReadSpansManyChunks(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	value := string(make([]byte, 3000))
	for i := 0; i < 2000; i++ {
		appendRaw(t, p, batch(t, []int64{1}, value), AppendOptions{})
	}
	// Reading everything in steps crosses every chunk boundary and returns
	// every batch once, in order.
	next := int64(0)
	for next < p.HighWatermark() {
		res, err := p.Read(next, 256<<10)
		require.NoError(t, err)
		require.NotEmpty(t, res.Records)
		rest := res.Records
		for len(rest) > 0 {
			b := Batch(rest)
			n := 12 + int(binary.BigEndian.Uint32(b[offLength:]))
			require.Equal(t, next, b.BaseOffset())
			next = b.LastOffset() + 1
			rest = rest[n:]
		}
	}
	assert.Equal(t, int64(2000), next)
}

func TestAppendMixedBatchSizesReadsBackEveryByte(t *testing.T) {
	t.Parallel()
	// Batch sizes from tiny to over the own-allocation threshold, so that
	// batches land in fresh chunks smaller than themselves, fill chunks to
	// the end, and get memory of their own.
	p := NewPartition()
	var want [][]byte
	for _, size := range []int{10, 200 << 10, 30, 900 << 10, 5000, 2 << 20, 70 << 10, 1, 3 << 20, 100} {
		raw := batch(t, []int64{1}, strings.Repeat("x", size))
		want = append(want, raw)
		appendRaw(t, p, append([]byte(nil), raw...), AppendOptions{})
	}
	for i, w := range want {
		res, err := p.Read(int64(i), 1)
		require.NoError(t, err)
		got := Batch(res.Records)
		require.Len(t, []byte(got), len(w), "batch %d", i)
		assert.Equal(t, int64(i), got.BaseOffset())
		assert.Equal(t, w[offAttributes:], []byte(got[offAttributes:]), "batch %d's bytes after the base offset and epoch", i)
	}
}

func TestStagedBatchesAreInvisibleUntilPublished(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	a := batch(t, []int64{1}, "first staged")
	b := batch(t, []int64{1}, "second staged")
	sa, err := ParseBatch(append([]byte(nil), a...))
	require.NoError(t, err)
	sb, err := ParseBatch(append([]byte(nil), b...))
	require.NoError(t, err)
	stagedA, stagedB := p.Stage(sa), p.Stage(sb)
	assert.Equal(t, int64(0), p.HighWatermark())
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, res.Records, "nothing is readable before Publish")

	// Published out of staging order: offsets follow publishing, and each
	// read returns whole batches even though their memory is not in
	// offset order.
	baseB, _ := p.Publish(stagedB, AppendOptions{Now: t0})
	baseA, _ := p.Publish(stagedA, AppendOptions{Now: t0})
	assert.Equal(t, int64(0), baseB)
	assert.Equal(t, int64(1), baseA)
	var values []string
	for off := int64(0); off < p.HighWatermark(); {
		res, err := p.Read(off, 1<<20)
		require.NoError(t, err)
		recs, err := Batch(res.Records).Records()
		require.NoError(t, err)
		for _, r := range recs {
			values = append(values, string(r.Value))
			off = r.Offset + 1
		}
	}
	assert.Equal(t, []string{"second staged", "first staged"}, values)
}

func TestConcurrentAppendsKeepEveryBatchWhole(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	// Sizes from a few bytes to past the prefault threshold.
	appendConcurrently(t, p, 4, 50, func(i int) int { return 1 + (i*997)%(100<<10) })
	got := 0
	for off := int64(0); off < p.HighWatermark(); {
		res, err := p.Read(off, 1<<30)
		require.NoError(t, err)
		for rest := res.Records; len(rest) > 0; {
			b := Batch(rest)
			n := 12 + int(binary.BigEndian.Uint32(b[offLength:]))
			parsed, err := ParseBatch(rest[:n])
			require.NoError(t, err, "stored batch %d", got)
			recs, err := parsed.Records()
			require.NoError(t, err)
			require.Len(t, recs, 1)
			v := string(recs[0].Value)
			assert.Equal(t, strings.Repeat(v[:1], len(v)), v, "batch at %d mixes writers' bytes", off)
			require.Equal(t, off, parsed.BaseOffset())
			off++
			got++
			rest = rest[n:]
		}
	}
}

// appendConcurrently has writers each append each one-record batches to p
// at once, writer w's values all of the letter 'a'+w and size(i) bytes
// long, while a reader reads from the start and fails the test on any batch
// that is not whole; it returns when all are appended and the reader is
// done.
func appendConcurrently(t *testing.T, p *Partition, writers, each int, size func(i int) int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				value := strings.Repeat(string(rune('a'+w)), size(i))
				appendRaw(t, p, batch(t, []int64{1}, value), AppendOptions{})
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p.HighWatermark() < int64(writers*each) {
			res, err := p.Read(0, 1<<30)
			if err != nil {
				continue
			}
			EachBatch(res.Records, func(b Batch) bool {
				if _, err := ParseBatch(b); err != nil {
					t.Errorf("read a broken batch: %v", err)
					return false
				}
				return true
			})
		}
	}()
	wg.Wait()
	<-done
}

func TestOffsetForTime(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, batch(t, []int64{100, 200, 300}, "a", "b", "c"), AppendOptions{})
	appendRaw(t, p, batch(t, []int64{150}, "late"), AppendOptions{}) // out of order CreateTime
	appendRaw(t, p, batch(t, []int64{400, 500}, "d", "e"), AppendOptions{})

	cases := []struct{ ts, off, foundTS int64 }{
		{0, 0, 100},
		{100, 0, 100},
		{101, 1, 200},
		{250, 2, 300},
		{301, 4, 400},
		{500, 5, 500},
		{501, -1, -1},
	}
	for _, c := range cases {
		off, ts := p.OffsetForTime(c.ts)
		assert.Equal(t, c.off, off, "offset for %d", c.ts)
		assert.Equal(t, c.foundTS, ts, "timestamp for %d", c.ts)
	}
	ts, off := p.MaxTimestamp()
	assert.Equal(t, int64(500), ts)
	assert.Equal(t, int64(5), off)
}

func TestLogAppendTimeRewritesCRC(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, batch(t, []int64{1, 2}, "a", "b"), AppendOptions{Now: t0, LogAppendTime: true})
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	b, err := ParseBatch(res.Records)
	require.NoError(t, err, "the rewritten batch has a valid CRC")
	assert.True(t, b.LogAppendTime())
	recs, err := b.Records()
	require.NoError(t, err)
	for _, r := range recs {
		assert.Equal(t, t0.UnixMilli(), r.Timestamp)
	}
}

func TestRetentionAndDeleteBefore(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	old := t0.Add(-2 * time.Hour).UnixMilli()
	appendRaw(t, p, batch(t, same(2, old), "a", "b"), AppendOptions{})
	appendRaw(t, p, batch(t, same(2, t0.UnixMilli()), "c", "d"), AppendOptions{})

	assert.Equal(t, 0, p.ApplyRetention(t0, 0), "retention 0 keeps everything")
	assert.Equal(t, 1, p.ApplyRetention(t0, time.Hour))
	assert.Equal(t, int64(2), p.LogStartOffset())
	_, err := p.Read(1, 1<<20)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)

	start, err := p.DeleteBefore(3)
	require.NoError(t, err)
	assert.Equal(t, int64(3), start)
	res, err := p.Read(3, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(2), Batch(res.Records).BaseOffset(), "the batch holding the new log start is still served whole")
	off, _ := p.OffsetForTime(0)
	assert.Equal(t, int64(3), off, "time lookups never return an offset below the log start")

	_, err = p.DeleteBefore(99)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	start, err = p.DeleteBefore(-1)
	require.NoError(t, err)
	assert.Equal(t, int64(4), start)
	assert.Equal(t, int64(0), p.Bytes())
}

func TestHighWatermarkAt(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, batch(t, []int64{1}, "a"), AppendOptions{Now: t0})
	appendRaw(t, p, batch(t, []int64{1}, "b"), AppendOptions{Now: t0.Add(10 * time.Second)})
	assert.Equal(t, int64(0), p.HighWatermarkAt(t0.Add(-time.Second)))
	assert.Equal(t, int64(1), p.HighWatermarkAt(t0.Add(5*time.Second)))
	assert.Equal(t, int64(2), p.HighWatermarkAt(t0.Add(10*time.Second)))
}

// BenchmarkAppend measures appending 16 KiB batches of 100-byte records.
func BenchmarkAppend(b *testing.B) {
	values := make([]string, 150)
	for i := range values {
		values[i] = string(make([]byte, 100))
	}
	raw := batch(b, same(len(values), 1), values...)
	parsed, err := ParseBatch(raw)
	require.NoError(b, err)
	p := NewPartition()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		p.Append(parsed, AppendOptions{Now: t0})
	}
}

// BenchmarkRead measures finding and slicing up to 1 MiB of batches from a
// full log. Reads return sub-slices of the log, so nothing is copied here;
// the one copy happens when the broker encodes the response.
func BenchmarkRead(b *testing.B) {
	values := make([]string, 150)
	for i := range values {
		values[i] = string(make([]byte, 100))
	}
	raw := batch(b, same(len(values), 1), values...)
	parsed, _ := ParseBatch(raw)
	p := NewPartition()
	for i := 0; i < 2000; i++ {
		p.Append(parsed, AppendOptions{Now: t0})
	}
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		res, err := p.Read(off, 1<<20)
		if err != nil || len(res.Records) == 0 {
			off = 0
			continue
		}
		off = Batch(res.Records).LastOffset() + 1 // the next read starts after the first batch
	}
}

// BenchmarkMemoryPerStoredByte reports heap bytes held per byte of batch
// stored, for 100-byte records in 16 KiB batches and in single-record
// batches (what an unbatched producer sends).
func BenchmarkMemoryPerStoredByte(b *testing.B) {
	for _, perBatch := range []int{150, 1} {
		b.Run(map[int]string{150: "batched", 1: "single"}[perBatch], func(b *testing.B) {
			values := make([]string, perBatch)
			for i := range values {
				values[i] = string(make([]byte, 100))
			}
			raw := batch(b, same(perBatch, 1), values...)
			parsed, _ := ParseBatch(raw)
			var ratio float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				p := NewPartition()
				const total = 64 << 20
				for stored := 0; stored < total; stored += len(raw) {
					p.Append(parsed, AppendOptions{Now: t0})
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				ratio = float64(after.HeapAlloc-before.HeapAlloc) / float64(p.Bytes())
				runtime.KeepAlive(p)
			}
			b.ReportMetric(ratio, "heap-bytes/stored-byte")
		})
	}
}

func TestValidateChecksRecordFraming(t *testing.T) {
	t.Parallel()
	good := batch(t, []int64{1, 2}, "a", "b")
	// Claim three records while carrying two, with a valid CRC.
	bad := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(bad[offNumRecords:], 3)
	binary.BigEndian.PutUint32(bad[offLastOffsetDelta:], 2)
	binary.BigEndian.PutUint32(bad[offCRC:], crc32.Checksum(bad[offAttributes:], crc32c))
	b, err := ParseBatch(bad)
	require.NoError(t, err, "the header alone is consistent")
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrInvalidRecord)

	// Garbage where the records should be, with a valid CRC.
	garbage := append([]byte(nil), good[:BatchHeaderSize]...)
	garbage = append(garbage, 0x7f, 0x7f, 0x7f)
	binary.BigEndian.PutUint32(garbage[offLength:], uint32(len(garbage)-12))
	binary.BigEndian.PutUint32(garbage[offCRC:], crc32.Checksum(garbage[offAttributes:], crc32c))
	b, err = ParseBatch(garbage)
	require.NoError(t, err)
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrInvalidRecord)
}

func TestValidateMeasuresKeysValuesAndTimestamps(t *testing.T) {
	t.Parallel()
	raw := batch(t, []int64{1000, 900, 1200}, "a", strings.Repeat("v", 300), "bc")
	b, err := ParseBatch(raw)
	require.NoError(t, err)
	stats, err := b.Validate()
	require.NoError(t, err)
	assert.Equal(t, RecordStats{MaxKey: 1, MaxValue: 300, MinTimestamp: 900, MaxTimestamp: 1200}, stats)
}

// withRecords wraps an encoded record section in a v2 batch header claiming
// count records, with the given attributes, a right length and CRC.
func withRecords(attrs int16, count int32, records []byte) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.Attributes = attrs
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = 1000, 1000
	rb.LastOffsetDelta, rb.NumRecords = count-1, count
	rb.Records = records
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out
}

// record encodes one record with kmsg: offset delta i, key "k", value v,
// no headers; edit, when set, rewrites the body (everything after the
// length varint) before the length is prefixed. With small deltas, the
// body is: attributes, timestamp delta, offset delta, key length (at
// index 3), key, value length, value, header count.
func record(i int32, v string, edit func([]byte) []byte) []byte {
	r := kmsg.NewRecord()
	r.OffsetDelta = i
	r.Key, r.Value = []byte("k"), []byte(v)
	body := r.AppendTo(nil)[1:] // Length 0 encodes as one byte
	if edit != nil {
		body = edit(append([]byte(nil), body...))
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// brokenRecords are record sections that Kafka's log validator refuses,
// each with the record count its batch header claims.
func brokenRecords() map[string]brokenRecord {
	varint := func(v int64) []byte { return binary.AppendVarint(nil, v) }
	// splice replaces body[at:at+n] with repl.
	splice := func(at, n int, repl []byte) func([]byte) []byte {
		return func(body []byte) []byte {
			return append(append(append([]byte(nil), body[:at]...), repl...), body[at+n:]...)
		}
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return map[string]brokenRecord{
		"negative key length":          {1, record(0, "v", splice(3, 1, varint(-5)))},
		"key length past the record":   {1, record(0, "v", splice(3, 1, varint(1000)))},
		"key length over int32":        {1, record(0, "v", splice(3, 1, varint(1<<33)))},
		"value length -2^31":           {1, record(0, "v", splice(5, 1, varint(-1<<31)))},
		"header count 2^31-1":          {1, record(0, "v", splice(7, 1, varint(1<<31-1)))},
		"header count -2^31":           {1, record(0, "v", splice(7, 1, varint(-1<<31)))},
		"negative header key length":   {1, record(0, "v", splice(7, 1, cat(varint(1), varint(-3), varint(-1))))},
		"offset delta out of order":    {2, cat(record(1, "a", nil), record(0, "b", nil))},
		"offset delta repeated":        {2, cat(record(0, "a", nil), record(0, "b", nil))},
		"fewer records than the count": {3, cat(record(0, "a", nil), record(1, "b", nil))},
		"more records than the count":  {1, cat(record(0, "a", nil), record(1, "b", nil))},
		"record length too short":      {1, record(0, "v", func(b []byte) []byte { return b[:len(b)-1] })},
		"record length too long":       {1, record(0, "v", func(b []byte) []byte { return append(b, 0) })},
		"negative record length":       {1, cat(varint(-8), record(0, "v", nil)[1:])},
		"ten-byte varint":              {1, record(0, "v", splice(2, 1, bytes.Repeat([]byte{0x80}, 9)))},
		"overlong timestamp varint":    {1, record(0, "v", splice(1, 1, bytes.Repeat([]byte{0xff}, 11)))},
		"empty record":                 {1, varint(0)},
	}
}

type brokenRecord struct {
	count   int32
	records []byte
}

func TestValidateRefusesBrokenRecords(t *testing.T) {
	t.Parallel()
	cases := brokenRecords()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := ParseBatch(withRecords(0, c.count, c.records))
			require.NoError(t, err, "the header is consistent")
			_, err = b.Validate()
			assert.ErrorIs(t, err, ErrInvalidRecord)
		})
	}
	// The same builder makes a valid batch.
	b, err := ParseBatch(withRecords(0, 2, append(record(0, "a", nil), record(1, "b", nil)...)))
	require.NoError(t, err)
	_, err = b.Validate()
	require.NoError(t, err)
}

// xerialSnappy frames src as snappy-java does: its header, then 32 KiB
// blocks each prefixed with its length.
func xerialSnappy(src []byte) []byte {
	out := append([]byte(nil), xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(len(src), 32<<10)
		block := s2.EncodeSnappy(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// codecCases names each way a producer compresses a record section, with
// the batch attribute it sets.
func codecCases() map[string]struct {
	codec    int16
	compress func(testing.TB, []byte) []byte
} {
	type c = struct {
		codec    int16
		compress func(testing.TB, []byte) []byte
	}
	return map[string]c{
		"gzip":          {1, compressors[1]},
		"snappy":        {2, compressors[2]},
		"snappy xerial": {2, func(_ testing.TB, src []byte) []byte { return xerialSnappy(src) }},
		"lz4":           {3, compressors[3]},
		"zstd":          {4, func(tb testing.TB, src []byte) []byte { return zstdStream(tb, src, 1<<20) }},
	}
}

// headered encodes a record with offset delta i, timestamp delta ts, a
// value of n zero bytes and two headers.
func headered(i int32, ts int64, n int) []byte {
	r := kmsg.NewRecord()
	r.OffsetDelta, r.TimestampDelta64 = i, ts
	r.Key, r.Value = []byte("key"), make([]byte, n)
	r.Headers = []kmsg.Header{{Key: "h1", Value: []byte("one")}, {Key: "h2"}}
	body := r.AppendTo(nil)[1:]
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// TestStreamedRecordsGetTheSameChecks: records checked as they stream past
// (as those longer than the read buffer are) are refused for every reason
// in-place records are, and measured the same, in every codec.
func TestStreamedRecordsGetTheSameChecks(t *testing.T) {
	// Not parallel: it moves the package's inPlaceMax.
	defer func(old int) { inPlaceMax = old }(inPlaceMax)
	valid := append(append(headered(0, 5, 10), headered(1, -3, 300)...), headered(2, 0, 0)...)
	nullKey := kmsg.NewRecord()
	nullKey.OffsetDelta = 3
	body := nullKey.AppendTo(nil)[1:]
	valid = append(append(valid, binary.AppendVarint(nil, int64(len(body)))...), body...)
	plain, err := ParseBatch(withRecords(0, 4, valid))
	require.NoError(t, err)
	want, err := plain.Validate()
	require.NoError(t, err)
	require.Equal(t, 1, want.NullKeys)
	for _, place := range []int{streamBufferSize, 0} {
		inPlaceMax = place
		for name, cc := range codecCases() {
			t.Run(fmt.Sprintf("%s, in place up to %d", name, place), func(t *testing.T) {
				b, err := ParseBatch(withRecords(cc.codec, 4, cc.compress(t, valid)))
				require.NoError(t, err)
				stats, err := b.Validate()
				require.NoError(t, err)
				assert.Equal(t, want, stats)
				for why, c := range brokenRecords() {
					b, err := ParseBatch(withRecords(cc.codec, c.count, cc.compress(t, c.records)))
					require.NoError(t, err)
					_, err = b.Validate()
					assert.ErrorIs(t, err, ErrInvalidRecord, why)
				}
			})
		}
	}
}

// compressors compress a record section the way Kafka producers do, per
// codec number.
var compressors = map[int16]func(testing.TB, []byte) []byte{
	1: func(tb testing.TB, src []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, err := w.Write(src)
		require.NoError(tb, err)
		require.NoError(tb, w.Close())
		return buf.Bytes()
	},
	2: func(_ testing.TB, src []byte) []byte { return s2.EncodeSnappy(nil, src) },
	3: func(tb testing.TB, src []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		_, err := w.Write(src)
		require.NoError(tb, err)
		require.NoError(tb, w.Close())
		return buf.Bytes()
	},
	4: func(tb testing.TB, src []byte) []byte {
		enc, err := zstd.NewWriter(nil)
		require.NoError(tb, err)
		defer enc.Close()
		return enc.EncodeAll(src, nil)
	},
}

func TestValidateDecompresses(t *testing.T) {
	t.Parallel()
	records := append(record(0, "first", nil), record(1, strings.Repeat("v", 5000), nil)...)
	broken := append(record(0, "first", nil), record(0, "again", nil)...)
	for codec, compress := range compressors {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			b, err := ParseBatch(withRecords(codec, 2, compress(t, records)))
			require.NoError(t, err)
			stats, err := b.Validate()
			require.NoError(t, err)
			assert.Equal(t, 5000, stats.MaxValue)

			b, err = ParseBatch(withRecords(codec, 2, records))
			require.NoError(t, err)
			_, err = b.Validate()
			assert.ErrorIs(t, err, ErrDecompress, "uncompressed records in a batch claiming the codec")

			b, err = ParseBatch(withRecords(codec, 2, compress(t, broken)))
			require.NoError(t, err)
			_, err = b.Validate()
			assert.ErrorIs(t, err, ErrInvalidRecord, "valid in the codec, broken inside")
		})
	}
}

func TestValidateReadsXerialSnappy(t *testing.T) {
	t.Parallel()
	records := append(record(0, "a", nil), record(1, "b", nil)...)
	// snappy-java's stream: magic, version 1, compatible version 1, then
	// blocks prefixed with their length.
	framed := append([]byte(nil), xerialMagic...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	for _, part := range [][]byte{records[:3], records[3:]} {
		block := s2.EncodeSnappy(nil, part)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	b, err := ParseBatch(withRecords(2, 2, framed))
	require.NoError(t, err)
	_, err = b.Validate()
	require.NoError(t, err)

	b, err = ParseBatch(withRecords(2, 2, framed[:len(framed)-2]))
	require.NoError(t, err)
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrDecompress, "a block cut short")
}

func TestValidateBoundsDecompressedSize(t *testing.T) {
	t.Parallel()
	// One record whose value is just over the limit, so that every record
	// check passes until the limit is reached.
	size := MaxDecompressedBytes + 1
	fields := []byte{0}                               // attributes
	fields = binary.AppendVarint(fields, 0)           // timestamp delta
	fields = binary.AppendVarint(fields, 0)           // offset delta
	fields = binary.AppendVarint(fields, -1)          // null key
	fields = binary.AppendVarint(fields, int64(size)) // value length
	// The length covers the fields, the value and the header count.
	head := append(binary.AppendVarint(nil, int64(len(fields)+size+1)), fields...)
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)
	_, err = enc.Write(head)
	require.NoError(t, err)
	chunk := make([]byte, 1<<20)
	for left := size; left > 0; left -= len(chunk) {
		_, err = enc.Write(chunk[:min(left, len(chunk))])
		require.NoError(t, err)
	}
	_, err = enc.Write(binary.AppendVarint(nil, 0)) // no headers
	require.NoError(t, err)
	require.NoError(t, enc.Close())

	b, err := ParseBatch(withRecords(4, 1, buf.Bytes()))
	require.NoError(t, err)
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrTooLarge)
}

// BenchmarkValidate validates a batch of 1,000 100-byte records, as
// BenchmarkProduceRequest's producer sends it.
func BenchmarkValidate(b *testing.B) {
	values := make([]string, 1000)
	for i := range values {
		values[i] = strings.Repeat("v", 100)
	}
	parsed, err := ParseBatch(batch(b, same(1000, 1_700_000_000_000), values...))
	require.NoError(b, err)
	b.SetBytes(int64(len(parsed)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parsed.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// zstdStream compresses src as a zstd stream with the given window, as a
// streaming producer (librdkafka, zstd-jni) writes it: the frame header
// names the window instead of the content size.
func zstdStream(tb testing.TB, src []byte, window int) []byte {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1))
	require.NoError(tb, err)
	_, err = enc.Write(src)
	require.NoError(tb, err)
	require.NoError(tb, enc.Flush()) // a header of its own, not one block with its size
	require.NoError(tb, enc.Close())
	var h zstd.Header
	require.NoError(tb, h.Decode(buf.Bytes()))
	require.Equal(tb, uint64(window), h.WindowSize, "the frame names its window")
	return buf.Bytes()
}

func TestValidateRefusesLargeZstdWindow(t *testing.T) {
	t.Parallel()
	records := append(record(0, "first", nil), record(1, strings.Repeat("v", 5000), nil)...)
	b, err := ParseBatch(withRecords(4, 2, zstdStream(t, records, 8<<20)))
	require.NoError(t, err)
	_, err = b.Validate()
	require.NoError(t, err, "an 8 MiB window, what high zstd levels use, is read")

	// A decoder keeps history up to the window: a 64 MiB window would
	// keep 64 MiB per decoder after one small batch.
	b, err = ParseBatch(withRecords(4, 2, zstdStream(t, records, 64<<20)))
	require.NoError(t, err)
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrDecompress)
}

// TestSnappyWindowIsBounded: a snappy block is decoded keeping only the
// history its copies reach back to, up to MaxSnappyWindow; a block whose
// copies reach further is refused like one that does not decode.
func TestSnappyWindowIsBounded(t *testing.T) {
	t.Parallel()
	literal := func(out, b []byte) []byte {
		out = append(out, 63<<2) // a literal with a four-byte length
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)-1))
		return append(out, b...)
	}
	for _, gap := range []int{MaxSnappyWindow / 2, MaxSnappyWindow + 1<<20} {
		// A value of gap random bytes, then 64 bytes repeating its start,
		// encoded as one copy from gap bytes back.
		value := make([]byte, gap+64)
		_, _ = rand.New(rand.NewSource(1)).Read(value[:gap])
		copy(value[gap:], value[:64])
		decoded := record(0, string(value), nil)
		at := bytes.Index(decoded, value) + gap
		block := binary.AppendUvarint(nil, uint64(len(decoded)))
		block = literal(block, decoded[:at])
		block = append(block, 63<<2|3) // a 64-byte copy with a four-byte offset
		block = binary.LittleEndian.AppendUint32(block, uint32(gap))
		block = literal(block, decoded[at+64:])
		got, err := snappy.Decode(nil, block)
		require.NoError(t, err)
		require.Equal(t, decoded, got, "the block is valid snappy")

		b, err := ParseBatch(withRecords(2, 1, block))
		require.NoError(t, err)
		_, err = b.Validate()
		if gap <= MaxSnappyWindow {
			assert.NoError(t, err, "copies %d bytes back", gap)
		} else {
			assert.ErrorIs(t, err, ErrDecompress, "copies %d bytes back", gap)
		}
	}
}

func TestValidateRefusesS2UnderSnappy(t *testing.T) {
	t.Parallel()
	// Repeats with small changes: S2 encodes the matches after each change
	// with its repeat-offset copy, which snappy decoders do not know.
	var value strings.Builder
	for i := range 200 {
		fmt.Fprintf(&value, "%c-the same forty bytes of text, over and over-", 'a'+i%26)
	}
	records := record(0, value.String(), nil)
	encoded := s2.EncodeBest(nil, records)
	_, err := snappy.DecodeStrict(nil, encoded)
	require.Error(t, err, "S2 and snappy differ on this input")

	b, err := ParseBatch(withRecords(2, 1, encoded))
	require.NoError(t, err)
	_, err = b.Validate()
	assert.ErrorIs(t, err, ErrDecompress)

	b, err = ParseBatch(withRecords(2, 1, s2.EncodeSnappy(nil, records)))
	require.NoError(t, err)
	_, err = b.Validate()
	assert.NoError(t, err, "the same records in snappy")
}

// TestValidateKeepsNoRequestBytes checks that the pooled decoders let go
// of the batch they read, so a pool does not keep a request alive.
func TestValidateKeepsNoRequestBytes(t *testing.T) {
	t.Parallel()
	records := record(0, "v", nil)
	for codec, compress := range compressors {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			raw := withRecords(codec, 1, compress(t, records))
			freed := make(chan struct{})
			runtime.AddCleanup(&raw[0], func(ch chan struct{}) { close(ch) }, freed)
			b, err := ParseBatch(raw)
			require.NoError(t, err)
			_, err = b.Validate()
			require.NoError(t, err)
			raw, b = nil, nil
			runtime.GC() // one cycle: the pools keep what was put in them
			select {
			case <-freed:
			case <-time.After(10 * time.Second):
				t.Fatal("the batch is still referenced after validation")
			}
		})
	}
}

// BenchmarkValidateCompressed validates BenchmarkValidate's batch
// compressed in each codec.
func BenchmarkValidateCompressed(b *testing.B) {
	var records []byte
	for i := range int32(1000) {
		records = append(records, record(i, strings.Repeat("v", 100), nil)...)
	}
	for _, codec := range []int16{1, 2, 3, 4} {
		b.Run(fmt.Sprint("codec ", codec), func(b *testing.B) {
			parsed, err := ParseBatch(withRecords(codec, 1000, compressors[codec](b, records)))
			require.NoError(b, err)
			b.SetBytes(int64(len(records)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parsed.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// checkBatches fails unless records is a run of whole batches with right
// CRCs, each holding one record whose value is one repeated letter.
func checkBatches(t *testing.T, records []byte) {
	t.Helper()
	for rest := records; len(rest) > 0; {
		n := 12 + int(binary.BigEndian.Uint32(rest[offLength:]))
		b, err := ParseBatch(rest[:n])
		if err != nil {
			t.Errorf("read a broken batch: %v", err)
			return
		}
		recs, err := b.Records()
		if err != nil || len(recs) != 1 || len(recs[0].Value) == 0 {
			t.Errorf("read a batch whose records do not decode: %v", err)
			return
		}
		v := string(recs[0].Value)
		if strings.Repeat(v[:1], len(v)) != v {
			t.Errorf("a batch mixes two partitions' bytes")
			return
		}
		rest = rest[n:]
	}
}

// TestReleasedPartitionMemoryIsReused: the chunks of a released partition
// go back to its Memory and a new partition's batches are copied into
// them, and every byte reads back.
func TestReleasedPartitionMemoryIsReused(t *testing.T) {
	t.Parallel()
	m := new(Memory)
	fill := func(p *Partition, letter string) {
		for i := range 200 {
			appendRaw(t, p, batch(t, []int64{1}, strings.Repeat(letter, 1+(i*997)%(100<<10))), AppendOptions{})
		}
	}
	p := m.NewPartition()
	fill(p, "a")
	stored := p.Bytes()
	p.Release()
	free := m.FreeBytes()
	assert.GreaterOrEqual(t, int64(free), stored, "chunks given back")
	res, err := p.Read(0, 1<<30)
	require.NoError(t, err)
	assert.Nil(t, res.Records, "a released partition reads nothing")

	q := m.NewPartition()
	fill(q, "b")
	assert.Less(t, m.FreeBytes(), free, "a new partition takes the free chunks")
	var got int64
	for off := int64(0); off < q.HighWatermark(); {
		res, err := q.Read(off, 1<<30)
		require.NoError(t, err)
		checkBatches(t, res.Records)
		got += int64(len(res.Records))
		for rest := res.Records; len(rest) > 0; rest = rest[12+int(binary.BigEndian.Uint32(rest[offLength:])):] {
			off = Batch(rest).LastOffset() + 1
		}
		res.Release()
	}
	assert.Equal(t, q.Bytes(), got)
}

// TestReadKeepsReleasedMemoryUntilDone: a read of a partition that is
// released while its result is in use (a fetch answer being written while
// the topic is deleted) keeps the memory from reuse until the result is
// released.
func TestReadKeepsReleasedMemoryUntilDone(t *testing.T) {
	t.Parallel()
	m := new(Memory)
	p := m.NewPartition()
	// Over half of minChunk, so the batch is in a chunk a Memory keeps
	// (smaller ones start in smaller chunks, left to the garbage
	// collector).
	appendRaw(t, p, batch(t, []int64{1}, strings.Repeat("a", 3000)), AppendOptions{})
	res, err := p.Read(0, 1<<30)
	require.NoError(t, err)
	want := bytes.Clone(res.Records)
	p.Release()
	assert.Zero(t, m.FreeBytes(), "memory a read still holds is not free")

	q := m.NewPartition()
	for range 100 {
		appendRaw(t, q, batch(t, []int64{1}, strings.Repeat("b", 1000)), AppendOptions{})
	}
	assert.Equal(t, want, res.Records, "the read's bytes are unchanged")
	res.Release()
	assert.Positive(t, m.FreeBytes(), "given back once the read is done")
	res.Release() // a second release does nothing
}

// TestConcurrentReleaseNeverShowsReusedMemory: partitions are filled,
// read and released while others reuse their memory; every read sees only
// whole batches of its own partition.
func TestConcurrentReleaseNeverShowsReusedMemory(t *testing.T) {
	t.Parallel()
	m := new(Memory)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			letter := string(rune('a' + w))
			for round := range 20 {
				p := m.NewPartition()
				stop := make(chan struct{})
				readerDone := make(chan struct{})
				go func() {
					defer close(readerDone)
					for {
						res, err := p.Read(0, 1<<30)
						if err == nil {
							checkBatches(t, res.Records)
							res.Release()
						}
						select {
						case <-stop:
							return
						default:
						}
					}
				}()
				for i := range 30 {
					appendRaw(t, p, batch(t, []int64{1}, strings.Repeat(letter, 1+(i*round*997)%(40<<10))), AppendOptions{})
				}
				p.Release() // while the reader may hold a result
				close(stop)
				<-readerDone
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, m.FreeBytes(), MaxFreeBytes)
}

// inPlaceBatch returns a frame holding a batch of size bytes at offset 100,
// the batch parsed in place.
func inPlaceBatch(t *testing.T, size int) ([]byte, Batch) {
	value := strings.Repeat("k", 1000)
	raw := batch(t, []int64{1}, value)
	raw = batch(t, []int64{1}, value+strings.Repeat("k", size-len(raw)))
	require.Len(t, raw, size)
	frame := make([]byte, 3*size)
	copy(frame[100:], raw)
	b, err := ParseBatch(frame[100 : 100+size])
	require.NoError(t, err)
	return frame, b
}

// TestInPlaceBatchesGoBackOnlyThroughTheirLoan: a batch staged in place is
// read from the memory it was lent in, never goes to a Memory even when it
// is exactly a chunk size (the rest of the memory may hold other
// partitions' batches), and its loan is given back only once its lender,
// its released partition and every read of it have let go.
func TestInPlaceBatchesGoBackOnlyThroughTheirLoan(t *testing.T) {
	t.Parallel()
	const size = 8 << 10 // a chunk class
	frame, b := inPlaceBatch(t, size)
	m := new(Memory)
	p := m.NewPartition()
	given := 0
	loan := NewLoan(func() { given++ })
	appendRaw(t, p, batch(t, []int64{1}, strings.Repeat("c", 3000)), AppendOptions{}) // copied, into a minChunk chunk
	p.Publish(p.StageInPlace(b, loan), AppendOptions{Now: t0})
	loan.Done()
	res, err := p.Read(1, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, unsafe.SliceData(frame[100:]), unsafe.SliceData(res.Records), "read from the lent memory itself")
	want := bytes.Clone(frame)

	p.Release()
	assert.Zero(t, given, "a read still uses the batch")
	assert.Zero(t, m.FreeBytes(), "nor are chunks free")
	res.Release()
	assert.Equal(t, 1, given, "given back once the read is done")
	assert.Equal(t, minChunk, m.FreeBytes(), "only the copied batch's chunk went to the Memory")
	q := m.NewPartition()
	for range 100 {
		appendRaw(t, q, batch(t, []int64{1}, strings.Repeat("x", 2000)), AppendOptions{})
	}
	assert.Equal(t, want, frame, "the lent memory is untouched")
}

// TestInPlaceBatchesDroppedEarlyKeepTheirLoan: a batch in place that leaves
// the log before its partition is released (records deleted, retention)
// never gives its loan back, since a reader may still alias it; nor does
// one in a partition without a Memory.
func TestInPlaceBatchesDroppedEarlyKeepTheirLoan(t *testing.T) {
	t.Parallel()
	_, b := inPlaceBatch(t, 8<<10)
	given := 0
	loan := NewLoan(func() { given++ })
	p := new(Memory).NewPartition()
	p.Publish(p.StageInPlace(b, loan), AppendOptions{Now: t0})
	_, err := p.DeleteBefore(1)
	require.NoError(t, err)
	q := NewPartition()
	q.Publish(q.StageInPlace(b, loan), AppendOptions{Now: t0})
	loan.Done()
	p.Release()
	q.Release()
	assert.Zero(t, given)
}

// TestDroppedInPlaceBatchesGiveBackTheirPages: a batch stored in place that
// leaves the log while another batch keeps its frame alive (records
// deleted here; retention and compaction alike) gives its own pages back
// to the kernel, once no read that may still see it is in flight; the
// frame's other batch is untouched.
func TestDroppedInPlaceBatchesGiveBackTheirPages(t *testing.T) {
	t.Parallel()
	raw := batch(t, []int64{1}, strings.Repeat("d", 64<<10))
	size := len(raw)
	frame := make([]byte, 2*size+100)
	copy(frame[50:], raw)
	copy(frame[50+size:], raw)
	b1, err := ParseBatch(frame[50 : 50+size])
	require.NoError(t, err)
	b2, err := ParseBatch(frame[50+size : 50+2*size])
	require.NoError(t, err)
	m := new(Memory)
	p, q := m.NewPartition(), m.NewPartition()
	loan := NewLoan(func() { t.Error("the loan was given back") })
	p.Publish(p.StageInPlace(b1, loan), AppendOptions{Now: t0})
	q.Publish(q.StageInPlace(b2, loan), AppendOptions{Now: t0})
	loan.Done()
	kept := bytes.Clone(b2)

	res, err := p.Read(0, 1<<30)
	require.NoError(t, err)
	want := bytes.Clone(res.Records)
	_, err = p.DeleteBefore(1)
	require.NoError(t, err)
	assert.Equal(t, want, res.Records, "a read in flight still sees the batch")
	res.Release()
	if runtime.GOOS == "linux" {
		page := os.Getpagesize()
		inside := frame[(50+page-1)/page*page : (50+size)/page*page]
		assert.Equal(t, make([]byte, len(inside)), inside, "the dropped batch's whole pages were given back")
	}
	got, err := q.Read(0, 1<<30)
	require.NoError(t, err)
	assert.Equal(t, kept, got.Records, "the frame's other batch")
	got.Release()
}

// TestRetentionBytes: batches go from the front while the log would still
// hold retention.bytes without them, as Kafka deletes segments; an open
// transaction's first offset may go with them, and the last stable offset
// then stays at the log start until it ends.
func TestRetentionBytes(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	for _, v := range []string{"a", "b", "c"} {
		appendRaw(t, p, batch(t, same(1, t0.UnixMilli()), v), AppendOptions{})
	}
	appendRaw(t, p, txnData(t, 7, "o"), AppendOptions{}) // 3
	appendRaw(t, p, batch(t, same(1, t0.UnixMilli()), "e"), AppendOptions{})
	size := p.Bytes() / 5 // every batch holds one record of one byte
	require.Equal(t, 5*size, p.Bytes())

	assert.Equal(t, 0, p.ApplyRetentionBytes(-1), "-1 keeps everything")
	assert.Equal(t, 0, p.ApplyRetentionBytes(5*size))
	assert.Equal(t, 0, p.ApplyRetentionBytes(5*size-1), "a batch goes only if what is left still holds the limit")
	assert.Equal(t, 1, p.ApplyRetentionBytes(4*size))
	assert.Equal(t, int64(1), p.LogStartOffset())
	assert.Equal(t, int64(3), p.LastStableOffset())
	assert.Equal(t, 3, p.ApplyRetentionBytes(size-1))
	assert.Equal(t, int64(4), p.LogStartOffset())
	assert.Equal(t, int64(4), p.LastStableOffset(), "the open transaction's first offset is gone: the log start bounds it")
	assert.Equal(t, []OpenTxn{{ProducerID: 7, FirstOffset: 3}}, p.OpenTransactions(), "the transaction is still open")
	p.AppendMarker(MarkerBatch(7, 0, false, 0, t0), 7, false, t0)
	assert.Equal(t, p.HighWatermark(), p.LastStableOffset())
	assert.Equal(t, []AbortedTxn{{ProducerID: 7, FirstOffset: 3, LastOffset: 5}}, p.AbortedTransactions())
	assert.Equal(t, 1, p.ApplyRetentionBytes(0), "everything goes but the newest batch (the marker), as Kafka keeps its active segment")
	assert.Equal(t, 0, p.ApplyRetentionBytes(0), "the newest batch stays")
	assert.Equal(t, int64(5), p.LogStartOffset())
}

// readSlices reads p from offset 0 to its high watermark, one Read at a time,
// and returns each batch's value of its first record by base offset, and
// how many reads it took.
func readSlices(t *testing.T, p *Partition) (map[int64]string, int) {
	t.Helper()
	got, reads := map[int64]string{}, 0
	for off := int64(0); off < p.HighWatermark(); reads++ {
		res, err := p.Read(off, 1<<30)
		require.NoError(t, err)
		require.NotEmpty(t, res.Records)
		EachBatch(res.Records, func(b Batch) bool {
			_, err := ParseBatch(b)
			require.NoError(t, err, "a whole batch with its CRC right")
			require.NoError(t, b.EachRecord(func(r Record) bool {
				got[b.BaseOffset()] = string(r.Value)
				return false
			}))
			off = b.LastOffset() + 1
			return true
		})
		res.Release()
	}
	return got, reads
}

// TestSmallPartitionGrowsByMoving: a partition's first chunk is as small as
// its first batch, and grows by moving its batches into a chunk twice as
// large, so that a partition of a few small batches (transaction markers)
// takes memory of its size, yet a read from the start still gets all its
// batches in one slice; a batch staged before a move and published after
// it stays readable, in the memory it was copied into.
func TestSmallPartitionGrowsByMoving(t *testing.T) {
	t.Parallel()
	m := new(Memory)
	p := m.NewPartition()
	want := map[int64]string{}
	for i := range 40 {
		v := fmt.Sprintf("v%02d", i)
		want[appendRaw(t, p, batch(t, []int64{int64(i)}, v), AppendOptions{})] = v
		if i == 0 {
			assert.Equal(t, minSmallChunk, cap(p.chunk), "the first chunk fits the first batch")
		}
	}
	require.Less(t, p.Bytes(), int64(minChunk))
	assert.Less(t, cap(p.chunk), 2*int(p.Bytes()), "memory of the partition's size")
	got, reads := readSlices(t, p)
	assert.Equal(t, want, got)
	assert.Equal(t, 1, reads, "every batch in one slice, as in one chunk")

	// A batch staged, then a move by another batch's stage, then both
	// published, in either order.
	for _, firstFirst := range []bool{true, false} {
		q := NewPartition()
		b0, err := ParseBatch(batch(t, []int64{1}, strings.Repeat("a", 60)))
		require.NoError(t, err)
		b1, err := ParseBatch(batch(t, []int64{2}, strings.Repeat("b", 200)))
		require.NoError(t, err)
		s0 := q.Stage(b0)
		s1 := q.Stage(b1) // does not fit the first chunk: moves it, without s0, not yet published
		require.NotSame(t, unsafe.SliceData(s0.chunk), unsafe.SliceData(s1.chunk))
		if firstFirst {
			q.Publish(s0, AppendOptions{Now: t0})
			q.Publish(s1, AppendOptions{Now: t0})
		} else {
			q.Publish(s1, AppendOptions{Now: t0})
			q.Publish(s0, AppendOptions{Now: t0})
		}
		got, _ := readSlices(t, q)
		assert.ElementsMatch(t, []string{strings.Repeat("a", 60), strings.Repeat("b", 200)}, []string{got[0], got[1]})
	}

	// While a compaction runs (its snapshot forbids rewriting entries),
	// the partition starts a new chunk instead of moving.
	q := NewPartition()
	appendRaw(t, q, batch(t, []int64{1}, "first"), AppendOptions{})
	q.compactMu.Lock()
	appendRaw(t, q, batch(t, []int64{2}, strings.Repeat("c", 200)), AppendOptions{})
	q.compactMu.Unlock()
	got, reads = readSlices(t, q)
	assert.Equal(t, map[int64]string{0: "first", 1: strings.Repeat("c", 200)}, got)
	assert.Equal(t, 2, reads, "two chunks, two slices")
}

// TestConcurrentSmallAppendsWhileMoving: small batches staged and published
// by several writers at once, while the partition's first chunk grows by
// moving and a reader reads from the start, are all stored whole, each
// once, and reads only ever see whole batches.
func TestConcurrentSmallAppendsWhileMoving(t *testing.T) {
	t.Parallel()
	const writers, each = 4, 60
	for range 20 {
		p := NewPartition()
		appendConcurrently(t, p, writers, each, func(i int) int { return 1 + (i*37)%150 })
		got, _ := readSlices(t, p)
		require.Len(t, got, writers*each)
		for off, v := range got {
			assert.Equal(t, strings.Repeat(v[:1], len(v)), v, "batch at %d mixes writers' bytes", off)
		}
	}
}

// TestMaxTimestampNamesTheRecord: ListOffsets(-3) gets the offset of the
// first record carrying the log's largest timestamp, as Kafka 3.8+ answers
// it, not the last offset of its batch: in an uncompressed and in every
// compressed batch, with ties going to the first record, and the base
// offset of a LogAppendTime batch.
func TestMaxTimestampNamesTheRecord(t *testing.T) {
	t.Parallel()
	for _, codec := range []int16{0, 1, 2, 3, 4} {
		t.Run(fmt.Sprint("codec ", codec), func(t *testing.T) {
			p := NewPartition()
			appendRaw(t, p, keyed(int16(codec), compressors[codec], t, rec("a", "a", 100)), AppendOptions{})
			appendRaw(t, p, keyed(int16(codec), compressors[codec], t,
				rec("b", "b", 200), rec("c", "c", 900), rec("d", "d", 300), rec("e", "e", 900)), AppendOptions{})
			appendRaw(t, p, keyed(int16(codec), compressors[codec], t, rec("f", "f", 900)), AppendOptions{})
			ts, off := p.MaxTimestamp()
			assert.Equal(t, []int64{900, 2}, []int64{ts, off}, "the first record of the first batch with the largest timestamp")
		})
	}
	p := NewPartition()
	appendRaw(t, p, keyed(0, nil, t, rec("a", "a", 100), rec("b", "b", 50), rec("c", "c", 70)), AppendOptions{Now: t0, LogAppendTime: true})
	ts, off := p.MaxTimestamp()
	assert.Equal(t, []int64{t0.UnixMilli(), 0}, []int64{ts, off}, "LogAppendTime: every record carries the max; the first")
}

// TestMaxTimestampAfterCompactionAndLargeBatches: a LogAppendTime batch
// whose first record compaction removed answers its first record left,
// which keeps the base offset it had; reading a large compressed batch for
// ListOffsets(-3) leaves no oversized or filled buffer in the pool.
func TestMaxTimestampAfterCompactionAndLargeBatches(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	opts := AppendOptions{Now: t0, LogAppendTime: true}
	appendRaw(t, p, keyed(0, nil, t, rec("x", "1", 1), rec("y", "2", 1)), opts) // 0, 1
	appendRaw(t, p, keyed(0, nil, t, rec("x", "3", 1)), opts)                   // 2
	appendRaw(t, p, keyed(0, nil, t, rec("z", "4", 1)), opts)                   // 3, the active tail
	res, err := p.Compact(CompactOptions{Now: t0})
	require.NoError(t, err)
	require.True(t, res.Compacted)
	_, off := p.MaxTimestamp()
	assert.Equal(t, int64(1), off, "offset 0 was compacted away")

	big := NewPartition()
	appendRaw(t, big, keyed(4, compressors[4], t, rec("a", string(make([]byte, 6<<20)), 100)), AppendOptions{})
	ts, off := big.MaxTimestamp()
	assert.Equal(t, []int64{100, 0}, []int64{ts, off})
	buf := bufPool.Get().(*bytes.Buffer)
	assert.LessOrEqual(t, buf.Cap(), poolMax)
	assert.Zero(t, buf.Len())
}

// TestHeldHighWatermark: while the high watermark is held, appends are
// stored past it but reads, ListOffsets by time, the last stable offset
// and DeleteRecords stop at it, and an offset between it and the log end
// reads nothing rather than out of range, as on a Kafka leader whose
// follower lags; the release makes everything readable.
func TestHeldHighWatermark(t *testing.T) {
	t.Parallel()
	p := NewPartition()
	appendRaw(t, p, batch(t, []int64{100}, "before"), AppendOptions{})
	p.HoldHighWatermark()
	appendRaw(t, p, batch(t, []int64{200}, "after"), AppendOptions{})
	p.HoldHighWatermark() // a second hold keeps the first's place
	appendRaw(t, p, batch(t, []int64{300}, "later"), AppendOptions{})

	assert.Equal(t, int64(3), p.LogEndOffset())
	assert.Equal(t, int64(1), p.HighWatermark())
	_, hw := p.Watermarks()
	assert.Equal(t, int64(1), hw)
	assert.Equal(t, int64(1), p.LastStableOffset())
	res, err := p.Read(0, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.HighWatermark)
	var values []string
	EachBatch(res.Records, func(b Batch) bool {
		_ = b.EachRecord(func(r Record) bool { values = append(values, string(r.Value)); return true })
		return true
	})
	assert.Equal(t, []string{"before"}, values)
	res, err = p.Read(2, 1<<20)
	require.NoError(t, err, "between the high watermark and the log end: nothing yet, not out of range")
	assert.Empty(t, res.Records)
	off, _ := p.OffsetForTime(150)
	assert.Equal(t, int64(-1), off, "no record past the high watermark is found by time")
	_, err = p.DeleteBefore(2)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)

	assert.True(t, p.ReleaseHighWatermark())
	assert.False(t, p.ReleaseHighWatermark(), "nothing held")
	assert.Equal(t, int64(3), p.HighWatermark())
	off, _ = p.OffsetForTime(150)
	assert.Equal(t, int64(1), off)
	res, err = p.Read(1, 1<<20)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Records)
}
