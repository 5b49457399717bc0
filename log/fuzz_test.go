package log

import (
	"bytes"
	"testing"
	"time"
)

// FuzzParseBatch parses and validates arbitrary bytes as a record batch. A
// batch that parses must be readable record by record without panicking; a
// batch that validates must decode with kmsg, no key or value may be longer
// than Validate measured, and it must survive a trip through a partition
// unchanged apart from its offsets.
//
//	go test -run '^$' -fuzz FuzzParseBatch -fuzztime 60s ./log/
func FuzzParseBatch(f *testing.F) {
	f.Add(batch(f, []int64{1}, "v"))
	f.Add(batch(f, []int64{5, 7, 6}, "a", "bb", ""))
	f.Add(batch(f, same(20, 1e12), "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
		"10", "11", "12", "13", "14", "15", "16", "17", "18", "19"))
	compressed := batch(f, []int64{1}, "v")
	compressed[offAttributes+1] |= 1 // gzip, CRC now wrong
	f.Add(compressed)
	f.Add(make([]byte, BatchHeaderSize))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.Clone(raw)
		// Accessors and record decoding on any header-sized bytes, parsed
		// or not: the broker reads stored batches with them.
		if len(raw) >= BatchHeaderSize {
			_, _ = Batch(raw).Records()
		}
		b, err := ParseBatch(raw)
		if err != nil {
			return
		}
		_, _ = b.Records()
		stats, err := b.Validate()
		if err != nil || b.Compression() != 0 {
			return
		}
		recs, err := b.Records()
		if err != nil {
			t.Fatalf("a batch that validates does not decode: %v", err)
		}
		if len(recs) != int(b.NumRecords()) {
			t.Fatalf("Records returned %d records, the header says %d", len(recs), b.NumRecords())
		}
		// The broker checks keys and values against the rules by what
		// Validate measured.
		for i, r := range recs {
			if len(r.Key) > stats.MaxKey || len(r.Value) > stats.MaxValue {
				t.Fatalf("record %d has a %d-byte key and %d-byte value, over the measured %d and %d", i, len(r.Key), len(r.Value), stats.MaxKey, stats.MaxValue)
			}
		}
		p := NewPartition()
		base := p.Append(b, AppendOptions{Now: time.Unix(1e6, 0)})
		if base != 0 {
			t.Fatalf("first append at offset %d", base)
		}
		if hw := p.HighWatermark(); hw != int64(b.LastOffsetDelta())+1 {
			t.Fatalf("high watermark %d after a batch with last offset delta %d", hw, b.LastOffsetDelta())
		}
		res, err := p.Read(0, 1<<30)
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		back, err := ParseBatch(res.Records)
		if err != nil {
			t.Fatalf("the stored batch does not parse: %v", err)
		}
		again, err := back.Records()
		if err != nil || len(again) != len(recs) {
			t.Fatalf("read back %d records (%v), stored %d", len(again), err, len(recs))
		}
		for i := range recs {
			if !bytes.Equal(again[i].Key, recs[i].Key) || !bytes.Equal(again[i].Value, recs[i].Value) {
				t.Fatalf("record %d changed in the partition", i)
			}
		}
	})
}
