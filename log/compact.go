package log

// Compaction: cleanup.policy=compact as Kafka's log cleaner does it, the one
// place where vastfake re-encodes stored batches.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"hash/maphash"
	"math/bits"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxCompactionKeys bounds the distinct keys one compaction pass indexes:
// Kafka's cleaner offset map, log.cleaner.dedupe.buffer.size (128 MiB) of
// 24-byte slots (a 16-byte hash of the key and an offset) filled to
// log.cleaner.io.buffer.load.factor (0.9). A pass whose range holds more
// stops at the batch that would overflow it and cleans only up to there;
// the next pass goes on from that batch, as Kafka's cleaner does.
const MaxCompactionKeys = 134217728 / 24 * 9 / 10

// maxCompactionKeys is MaxCompactionKeys; tests lower it.
var maxCompactionKeys = MaxCompactionKeys

// CompactOptions are a compacted topic's configs, as Kafka names them, and
// the broker's time.
type CompactOptions struct {
	Now time.Time
	// DeleteRetention is delete.retention.ms: a tombstone (a record with
	// a null value) that is the newest of its key is kept until this long
	// after the first compaction that kept it, then dropped by the next
	// compaction, as Kafka's cleaner does since Kafka 3.1 (KIP-534).
	DeleteRetention time.Duration
	// MinCompactionLag is min.compaction.lag.ms: a batch whose newest
	// record timestamp is more recent than this, and every batch after
	// it, are left for a later compaction.
	MinCompactionLag time.Duration
	// MinDirtyRatio is min.cleanable.dirty.ratio: when above 0, the
	// partition is compacted only if the bytes appended since the last
	// compaction are at least this share of the cleanable range, or a
	// tombstone's delete horizon has passed. On-demand compaction leaves
	// it 0.
	MinDirtyRatio float64
	// MergeBatchBytes, when above 0, merges runs of consecutive batches
	// the compaction keeps into batches of up to this many bytes, where
	// they are plain records of one leader epoch: uncompressed, not
	// transactional nor idempotent, not control batches, create-time
	// timestamps, no tombstone. Kafka's cleaner keeps batch boundaries;
	// the broker merges only the batches of __consumer_offsets, one per
	// commit, which a store of small batches would otherwise keep with a
	// header and an index entry each.
	MergeBatchBytes int
	// Turn, when set, is called before a compressed batch is decompressed
	// and blocks until the compaction may go on; the compaction calls done
	// once it is done with that batch's records, and lets a decompressed
	// section over the pooled size go with the turn. An error stops the
	// compaction, which returns it and leaves the log as it was. A broker
	// passes its decompression turns, so that compactions count among the
	// decompressions it runs at once.
	Turn func() (done func(), err error)
}

// CompactResult says what a compaction did.
type CompactResult struct {
	// Compacted reports whether the log changed.
	Compacted bool
	// CleanedTo is the offset the cleanable range ended at: the active
	// tail from it on was left as it is.
	CleanedTo int64
	// RecordsRemoved counts the records dropped, TombstonesRemoved those
	// of them that were tombstones past their delete horizon.
	RecordsRemoved    int64
	TombstonesRemoved int64
	// AbortedRemoved counts the removed records that were of aborted
	// transactions (counted in RecordsRemoved too), MarkersRemoved the
	// transaction markers removed.
	AbortedRemoved int64
	MarkersRemoved int64
	// BatchesBefore and BatchesAfter count the batches of the cleanable
	// range; BytesBefore and BytesAfter their bytes.
	BatchesBefore, BatchesAfter int
	BytesBefore, BytesAfter     int64
}

// errLogChanged means that retention or DeleteRecords moved the front of
// the log while a compaction was computing; the compaction starts again.
var errLogChanged = errors.New("the log changed during compaction")

// Compact compacts the partition as Kafka's log cleaner does for
// cleanup.policy=compact: in the cleanable range, every batch but the last
// one (the active segment: vastfake's segments are its batches, so the
// tail that producers append to is never cleaned) and before any batch
// younger than MinCompactionLag, only the newest record of each key stays,
// and a tombstone goes once its delete horizon has passed. Records without
// a key are dropped, as Kafka's cleaner drops them. Offsets keep their
// values, so gaps appear; a batch keeps its base offset and last offset
// delta (so its last offset), producer fields, timestamp type and
// compression codec, and is re-encoded with its first timestamp, max
// timestamp, record count and CRC recomputed, as Kafka's cleaner rebuilds
// a batch (so a compressed batch never comes back many times its size). A batch
// that loses nothing is kept byte for byte (also a compressed one); one
// that loses everything goes. With MergeBatchBytes, small plain batches are
// then merged (see CompactOptions), each record at its offset; after a
// compaction the partition's active chunk starts again at the size of the
// batches left in it (restartChunkLocked).
//
// Transactions are cleaned as Kafka's cleaner cleans them: the cleanable
// range ends at the last stable offset, so no batch of an open transaction
// (nor anything after its first) is touched; the key map holds committed
// and non-transactional records only, so a committed value is never
// replaced by an aborted one; the batches of aborted transactions go whole;
// a transaction marker goes once a compaction finds no batch of its
// transaction before it and DeleteRetention has passed since (the first
// such compaction sets its delete horizon, a later one removes it), and an
// aborted transaction leaves the list read_committed readers are given
// once a compaction has cleaned past its marker, and so removed all its
// records. Other control batches stay.
//
// The new batches are computed without the partition's lock, into new
// memory, and swapped in under it after checking that the front of the log
// did not move meanwhile (retention, DeleteRecords; if it did, the
// compaction starts again, at most three times in all), so readers and
// producers wait only for the swap, and a fetch answer holding the old
// batches keeps reading them whole. Appends during the compaction stay. One
// compaction runs at a time per partition.
//
// It returns ErrDecompress or ErrTooLarge for a stored compressed batch
// that does not decompress (which produce validation makes impossible), or
// the error opts.Turn returned, leaving the log as it was.
func (p *Partition) Compact(opts CompactOptions) (CompactResult, error) {
	p.compactMu.Lock()
	defer p.compactMu.Unlock()
	for range maxCompactTries - 1 {
		res, err := p.compactOnce(opts)
		if !errors.Is(err, errLogChanged) {
			return res, err
		}
	}
	res, err := p.compactOnce(opts)
	if errors.Is(err, errLogChanged) {
		return CompactResult{}, nil // the front keeps moving: the next compaction tries again
	}
	return res, err
}

// maxCompactTries bounds how often one Compact starts again because the
// front of the log moved; after that it gives up, changing nothing.
const maxCompactTries = 3

// compactSnapshot is the part of the log a compaction works on: entries
// are never modified in place (appends go past them, drops copy), so the
// slice stays valid without the lock.
type compactSnapshot struct {
	entries   []entry
	logStart  int64
	cleanedTo int64
	// lso is the last stable offset and aborted the aborted
	// transactions, both as the log was when the entries were taken.
	lso     int64
	aborted []AbortedTxn
}

func (p *Partition) compactOnce(opts CompactOptions) (CompactResult, error) {
	p.mu.RLock()
	if p.released {
		p.mu.RUnlock()
		return CompactResult{}, nil
	}
	snap := compactSnapshot{entries: p.entries[:len(p.entries):len(p.entries)], logStart: p.logStart, cleanedTo: p.cleanedTo,
		lso: p.lastStableLocked(), aborted: append([]AbortedTxn(nil), p.aborted...)}
	p.pins.Add(1) // the snapshot's chunks are read outside the lock
	p.mu.RUnlock()
	defer p.unpin()
	now := opts.Now.UnixMilli()

	end := snap.cleanableEnd(opts)
	res := CompactResult{}
	if end == 0 {
		return res, nil
	}
	if opts.MinDirtyRatio > 0 && !snap.dirtyEnough(end, opts.MinDirtyRatio, now) {
		return res, nil
	}
	c := compactor{now: now, deleteRetention: opts.DeleteRetention.Milliseconds(), logStart: snap.logStart, dirtyFrom: snap.cleanedTo,
		turn: opts.Turn, mergeBytes: opts.MergeBatchBytes}
	defer c.release()
	dirty := sort.Search(end, func(i int) bool { return snap.entries[i].last >= snap.cleanedTo })
	var dirtyStart int64
	if dirty < end {
		dirtyStart = snap.entries[dirty].base
	}
	indexed, err := c.index(snap.entries[dirty:end], newTxnTracker(snap.aborted, dirtyStart))
	if err != nil {
		return res, err
	}
	if end = dirty + indexed; end == 0 {
		return res, nil
	}
	// Room for the entries after the range, and a few appended meanwhile,
	// so that the swap under the lock copies only those.
	out, changed, err := c.rewrite(snap.entries[:end], newTxnTracker(snap.aborted, snap.logStart), len(snap.entries)-end+16, &res)
	if err != nil {
		return res, err
	}
	res.CleanedTo = snap.entries[end-1].last + 1
	return res, p.swap(snap, end, out, changed, &res)
}

// cleanableEnd returns how many of the snapshot's first entries may be
// cleaned: all but the last, none at or past the last stable offset (so no
// batch of an open transaction, nor anything after one: Kafka's cleaner
// never cleans past it), and none from the first one younger than the
// minimum compaction lag.
func (s *compactSnapshot) cleanableEnd(opts CompactOptions) int {
	end := max(len(s.entries)-1, 0)
	end = sort.Search(end, func(i int) bool { return s.entries[i].last >= s.lso })
	if lag := opts.MinCompactionLag; lag > 0 {
		cutoff := opts.Now.Add(-lag).UnixMilli()
		for i := range end {
			if s.entries[i].maxTS > cutoff {
				return i
			}
		}
	}
	return end
}

// dirtyEnough reports whether the first end entries are worth cleaning
// under min.cleanable.dirty.ratio: the bytes past the last compaction's end
// are at least ratio of them, or a tombstone's horizon has passed.
func (s *compactSnapshot) dirtyEnough(end int, ratio float64, now int64) bool {
	var dirty, total int64
	for i := range end {
		e := &s.entries[i]
		total += int64(e.n)
		if e.last >= s.cleanedTo {
			dirty += int64(e.n)
		}
		if e.horizon > 0 && e.horizon <= now {
			return true
		}
	}
	return total > 0 && float64(dirty) >= ratio*float64(total)
}

// keyHash is a 128-bit hash of a record key. Kafka's offset map keeps an
// MD5 of each key; two 64-bit maphashes under seeds chosen at start are as
// wide, many times faster, and give no producer a way to aim a collision
// (which would drop a record) at the broker.
type keyHash [2]uint64

var keySeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashKey(key []byte) keyHash {
	return keyHash{maphash.Bytes(keySeeds[0], key), maphash.Bytes(keySeeds[1], key)}
}

// compactor holds one compaction pass's offset map and buffers.
type compactor struct {
	now             int64
	deleteRetention int64
	logStart        int64
	// latest maps the hash of each key in the dirty part of the range
	// (the offsets from dirtyFrom on, appended since the last compaction)
	// to the offset of its newest record there, as Kafka's SkimpyOffsetMap
	// does; the part before was cleaned already.
	latest     map[keyHash]int64
	dirtyFrom  int64
	mergeBytes int                    // CompactOptions.MergeBatchBytes
	buf        *bytes.Buffer          // a decompressed record section
	turn       func() (func(), error) // CompactOptions.Turn
	endTurn    func()                 // ends the turn the section in buf holds, or nil
}

func (c *compactor) release() {
	c.finishSection()
	if c.buf != nil && c.buf.Cap() <= poolMax {
		c.buf.Reset()
		bufPool.Put(c.buf)
	}
}

// finishSection ends the decompression turn of the last section, if any;
// a section larger than the pool keeps goes with it.
func (c *compactor) finishSection() {
	if c.endTurn != nil {
		if c.buf != nil && c.buf.Cap() > poolMax {
			c.buf = nil
		}
		c.endTurn()
		c.endTurn = nil
	}
}

// section returns the record section of a stored batch, decompressed into
// c's buffer when the batch is compressed; it is valid until the next call.
// A compressed batch's section holds a decompression turn (see
// CompactOptions.Turn) until that call or release.
func (c *compactor) section(b Batch) ([]byte, error) {
	c.finishSection()
	if b.Compression() == 0 {
		return b[BatchHeaderSize:], nil
	}
	if c.turn != nil {
		done, err := c.turn()
		if err != nil {
			return nil, err
		}
		c.endTurn = done
	}
	if c.buf == nil {
		c.buf = bufPool.Get().(*bytes.Buffer)
	}
	c.buf.Reset()
	if err := b.decompress(c.buf); err != nil {
		return nil, err
	}
	return c.buf.Bytes(), nil
}

// txnTracker follows transactions through one pass over a partition's
// batches, as Kafka's cleaner does (its CleanedTransactionMetadata), to
// tell which batches are of aborted transactions and which transaction
// markers no record of their transaction precedes any more.
type txnTracker struct {
	// pending are the aborted transactions not reached yet, by first
	// offset; inAborted holds, by producer, those reached and not yet
	// ended by their marker, and whether a batch of each was seen.
	pending   []AbortedTxn
	inAborted map[int64]bool
	// inCommitted holds the producers of which a transactional batch
	// that is not aborted was seen since their last marker.
	inCommitted map[int64]bool
}

// newTxnTracker returns a tracker for a pass starting at offset from,
// knowing the partition's aborted transactions.
func newTxnTracker(aborted []AbortedTxn, from int64) *txnTracker {
	t := &txnTracker{inAborted: map[int64]bool{}, inCommitted: map[int64]bool{}}
	for _, a := range aborted {
		if a.LastOffset >= from {
			t.pending = append(t.pending, a)
		}
	}
	sort.Slice(t.pending, func(i, j int) bool { return t.pending[i].FirstOffset < t.pending[j].FirstOffset })
	return t
}

// reach enters the aborted transactions that began at or before offset.
func (t *txnTracker) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		if _, ok := t.inAborted[t.pending[0].ProducerID]; !ok {
			t.inAborted[t.pending[0].ProducerID] = false
		}
		t.pending = t.pending[1:]
	}
}

// data reports whether a data batch is of an aborted transaction.
func (t *txnTracker) data(b Batch) bool {
	t.reach(b.LastOffset())
	if !b.Transactional() {
		return false
	}
	pid := b.ProducerID()
	if _, ok := t.inAborted[pid]; ok {
		t.inAborted[pid] = true
		return true
	}
	t.inCommitted[pid] = true
	return false
}

// control reports whether a control batch is a transaction marker that no
// batch of its transaction precedes in this pass, so that it may go.
func (t *txnTracker) control(b Batch) bool {
	t.reach(b.LastOffset())
	marker, commit := b.MarkerType()
	if !marker {
		return false // some other control record: kept, as Kafka keeps it
	}
	pid := b.ProducerID()
	if commit {
		seen := t.inCommitted[pid]
		delete(t.inCommitted, pid)
		return !seen
	}
	seen, ok := t.inAborted[pid]
	delete(t.inAborted, pid)
	return !ok || !seen
}

// index fills the offset map from the dirty entries' committed records
// (txns, started at the first of them, tells aborted batches, whose keys
// are left out as Kafka's cleaner leaves them out) and returns how many of
// the entries it covers: all of them, or fewer when the next batch could
// take the map past maxCompactionKeys.
func (c *compactor) index(entries []entry, txns *txnTracker) (int, error) {
	c.latest = make(map[keyHash]int64)
	for i := range entries {
		b := entries[i].raw()
		if b.Control() {
			txns.control(b)
			continue
		}
		if txns.data(b) {
			continue // an aborted transaction's records never enter the map
		}
		if len(c.latest)+int(b.NumRecords()) > maxCompactionKeys {
			return i, nil
		}
		section, err := c.section(b)
		if err != nil {
			return 0, err
		}
		err = eachRawRecord(section, b.NumRecords(), func(rec []byte, f recordFields) {
			if f.key != nil && b.BaseOffset()+int64(f.offsetDelta) >= c.logStart {
				c.latest[hashKey(f.key)] = b.BaseOffset() + int64(f.offsetDelta)
			}
		})
		if err != nil {
			return 0, err
		}
	}
	c.finishSection()
	return len(entries), nil
}

// rewrite returns the entries as compaction leaves them, their batches
// packed into one new buffer, with their timestamp index filled in and
// room for tailRoom more, and whether anything changed. txns, started at
// the log start, tells the batches of aborted transactions, which go, and
// the transaction markers that no record of their transaction precedes
// any more, which go after their delete horizon.
func (c *compactor) rewrite(entries []entry, txns *txnTracker, tailRoom int, res *CompactResult) ([]entry, bool, error) {
	var out []kept
	size, changed := 0, false
	for i := range entries {
		src := entries[i]
		b := src.raw()
		res.BatchesBefore++
		res.BytesBefore += int64(src.n)
		if b.Control() {
			e, keep := src, true
			if txns.control(b) {
				// No record of its transaction is left below it: it goes
				// once its delete horizon, set now, has passed, as Kafka
				// delays removing a marker by delete.retention.ms.
				switch {
				case e.horizon == 0:
					e.horizon = c.now + c.deleteRetention
					changed = true
				case c.now >= e.horizon:
					keep = false
					changed = true
					res.MarkersRemoved++
				}
			}
			if keep {
				out = append(out, kept{e: e})
				if !e.unencoded() {
					size += int(e.n)
				}
			}
			continue
		}
		if txns.data(b) {
			// An aborted transaction's batch goes whole, unread.
			res.RecordsRemoved += int64(b.NumRecords())
			res.AbortedRemoved += int64(b.NumRecords())
			changed = true
			continue
		}
		section, err := c.section(b)
		if err != nil {
			return nil, false, err
		}
		var keep [][]byte // the kept records, length-prefixed, aliasing section
		tombstone, dropped := false, 0
		err = eachRawRecord(section, b.NumRecords(), func(rec []byte, f recordFields) {
			offset := b.BaseOffset() + int64(f.offsetDelta)
			newest := false
			if f.key != nil && offset >= c.logStart {
				latest, ok := c.latest[hashKey(f.key)]
				newest = latest == offset || !ok && offset < c.dirtyFrom
			}
			if newest && f.valueNull && src.horizon > 0 && c.now >= src.horizon {
				res.TombstonesRemoved++
				newest = false
			}
			if !newest {
				dropped++
				return
			}
			tombstone = tombstone || f.valueNull
			keep = append(keep, rec)
		})
		if err != nil {
			return nil, false, err
		}
		res.RecordsRemoved += int64(dropped)
		e := src
		switch {
		case tombstone && e.horizon == 0:
			e.horizon = c.now + c.deleteRetention
			changed = true
		case !tombstone:
			e.horizon = 0
		}
		if len(keep) == 0 {
			changed = true
			continue
		}
		if dropped == 0 {
			out = append(out, kept{e: e})
			size += int(e.n)
			continue
		}
		changed = true
		rebuilt, maxTS, err := rebuildBatch(b, keep)
		if err != nil {
			return nil, false, err
		}
		e.maxTS = maxTS
		out = append(out, kept{e: e, batch: rebuilt})
		size += len(rebuilt)
	}
	c.finishSection() // nothing kept aliases the last section
	if c.mergeBytes > 0 {
		var merged bool
		var err error
		if out, merged, err = mergeSmallBatches(out, c.mergeBytes); err != nil {
			return nil, false, err
		}
		changed = changed || merged
	}
	if !changed {
		return nil, false, nil
	}
	size = 0
	for _, k := range out {
		if !k.e.unencoded() {
			size += k.size()
		}
	}
	buf := make([]byte, 0, size)
	entriesOut := make([]entry, len(out), len(out)+tailRoom)
	for i, k := range out {
		res.BatchesAfter++
		if k.e.unencoded() { // a marker stays as it is kept (markers.go)
			entriesOut[i] = k.e
			res.BytesAfter += int64(k.e.n)
			continue
		}
		raw := k.batch
		if raw == nil {
			raw = k.e.raw()
		}
		k.e.pos, k.e.n = int32(len(buf)), int32(len(raw))
		buf = append(buf, raw...)
		entriesOut[i] = k.e
		res.BytesAfter += int64(len(raw))
	}
	prefix := int64(-1)
	for i := range entriesOut {
		e := &entriesOut[i]
		if !e.unencoded() {
			e.chunk, e.loan = buf, nil
		}
		if i == 0 || e.maxTS > prefix {
			prefix = e.maxTS
		}
		e.prefixMax = prefix
	}
	return entriesOut, true, nil
}

// kept is a batch a compaction keeps: its entry, and its new encoding.
type kept struct {
	e     entry
	batch []byte // nil: the source batch unchanged
}

// raw returns the batch as it will be stored.
func (k *kept) raw() Batch {
	if k.batch != nil {
		return Batch(k.batch)
	}
	return k.e.raw()
}

func (k *kept) size() int {
	if k.batch != nil {
		return len(k.batch)
	}
	return int(k.e.n)
}

// mergeable reports whether k may be merged with its neighbours
// (CompactOptions.MergeBatchBytes).
func (k *kept) mergeable() bool {
	if k.e.unencoded() || k.e.horizon != 0 {
		return false
	}
	b := k.raw()
	return !b.Control() && !b.Transactional() && b.ProducerID() < 0 && b.Compression() == 0 && !b.LogAppendTime()
}

// mergeSmallBatches merges each run of consecutive mergeable batches of
// one leader epoch in out into as few batches of up to limit bytes as it
// takes, and reports whether it merged any.
func mergeSmallBatches(out []kept, limit int) ([]kept, bool, error) {
	merged := out[:0:0]
	did := false
	for i := 0; i < len(out); {
		if !out[i].mergeable() {
			merged = append(merged, out[i])
			i++
			continue
		}
		epoch := out[i].raw().LeaderEpoch()
		j, size := i+1, out[i].size()
		for j < len(out) && out[j].mergeable() && out[j].raw().LeaderEpoch() == epoch && size+out[j].size()-BatchHeaderSize <= limit {
			size += out[j].size() - BatchHeaderSize
			j++
		}
		if j-i == 1 {
			merged = append(merged, out[i])
			i++
			continue
		}
		batches := make([]Batch, j-i)
		for k := range batches {
			batches[k] = out[i+k].raw()
		}
		raw, maxTS, err := mergeBatches(batches)
		if err != nil {
			return nil, false, err
		}
		e := out[i].e
		e.last, e.maxTS, e.appendedAt = out[j-1].e.last, maxTS, out[j-1].e.appendedAt
		merged = append(merged, kept{e: e, batch: raw})
		did = true
		i = j
	}
	return merged, did, nil
}

// mergeBatches encodes one batch holding the records of batches
// (uncompressed, of one leader epoch, in offset order) at their offsets and
// timestamps: the first batch's base offset, the last's last offset, the
// first record's timestamp as the first timestamp. Each record is copied
// with only its timestamp and offset deltas, and its length, written anew.
// It returns the batch and its max timestamp.
func mergeBatches(batches []Batch) ([]byte, int64, error) {
	size := BatchHeaderSize
	for _, b := range batches {
		size += len(b) - BatchHeaderSize + 8*int(b.NumRecords()) // room for longer deltas
	}
	out := make([]byte, BatchHeaderSize, size)
	copy(out, batches[0][:BatchHeaderSize])
	base, first, maxTS := batches[0].BaseOffset(), int64(0), int64(-1)
	n := int32(0)
	var body []byte
	for _, b := range batches {
		var bad bool
		err := eachRawRecord(b[BatchHeaderSize:], b.NumRecords(), func(raw []byte, f recordFields) {
			_, attributes := varint32(raw, 0)   // after the length
			_, p := varint64(raw, attributes+1) // after the timestamp delta
			_, p = varint32(raw, p)             // after the offset delta
			if attributes < 0 || p < 0 {
				bad = true
				return
			}
			ts := b.FirstTimestamp() + f.timestampDelta
			if n == 0 {
				first = ts
			}
			maxTS = max(maxTS, ts)
			body = append(body[:0], raw[attributes])
			body = binary.AppendVarint(body, ts-first)
			body = binary.AppendVarint(body, b.BaseOffset()+int64(f.offsetDelta)-base)
			body = append(body, raw[p:]...)
			out = binary.AppendVarint(out, int64(len(body)))
			out = append(out, body...)
			n++
		})
		if err == nil && bad {
			err = ErrCorrupt
		}
		if err != nil {
			return nil, 0, err
		}
	}
	last := batches[len(batches)-1].LastOffset()
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offLastOffsetDelta:], uint32(last-base))
	binary.BigEndian.PutUint64(out[offFirstTimestamp:], uint64(first))
	binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(maxTS))
	binary.BigEndian.PutUint32(out[offNumRecords:], uint32(n))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out, maxTS, nil
}

// swap replaces the first end entries of the log with out, unless the front
// of the log moved since the snapshot (errLogChanged). Under the lock it
// copies and re-indexes only the entries after the range (out came with
// room for them and its own index); the partition's max timestamp is found
// again over every entry's own max timestamp.
func (p *Partition) swap(snap compactSnapshot, end int, out []entry, changed bool, res *CompactResult) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return nil // deleted meanwhile: nothing to keep
	}
	if p.logStart != snap.logStart || len(p.entries) < end || !sameEntry(&p.entries[0], &snap.entries[0]) ||
		!sameEntry(&p.entries[end-1], &snap.entries[end-1]) {
		return errLogChanged
	}
	p.cleanedTo = max(p.cleanedTo, res.CleanedTo)
	if !changed {
		return nil
	}
	for i := range p.entries[:end] {
		p.forgetLocked(&p.entries[i]) // every kept batch was copied into out
	}
	p.dropCleanedAbortedLocked(res.CleanedTo)
	entries := append(out, p.entries[end:]...)
	prefix := int64(-1)
	if len(out) > 0 {
		prefix = out[len(out)-1].prefixMax
	}
	for i := len(out); i < len(entries); i++ {
		e := &entries[i]
		if i == 0 || e.maxTS > prefix {
			prefix = e.maxTS
		}
		e.prefixMax = prefix
	}
	p.entries = entries
	p.maxTS, p.maxTSOffset = p.maxTimestampLocked()
	p.bytes += res.BytesAfter - res.BytesBefore
	p.restartChunkLocked(len(out))
	res.Compacted = true
	return nil
}

// restartChunkLocked moves the batches of the active chunk that are past
// the compacted range (entries from first on: the tail the compaction left,
// and what was appended meanwhile) into a chunk of their size, which the
// next appends then fill. The old chunk, mostly batches the compaction
// just replaced, is left to the garbage collector (a read may still use
// it), rather than staying the partition's until it fills. A batch staged
// in the old chunk and not yet published stays there, as in growLocked.
func (p *Partition) restartChunkLocked(first int) {
	old := p.chunk
	if len(old) == 0 {
		return // nothing written in it: it is all room for the next appends
	}
	used := 0
	for i := first; i < len(p.entries); i++ {
		if e := &p.entries[i]; !e.unencoded() && sameChunk(e.chunk, old) {
			used += int(e.n)
		}
	}
	if 2*used > len(old) {
		return // mostly live: keep filling it
	}
	p.newChunkLocked(max(minSmallChunk, 1<<bits.Len(uint(max(used, 1)-1))))
	whole := p.chunk[:cap(p.chunk)]
	pos := int32(0)
	for i := first; i < len(p.entries); i++ {
		e := &p.entries[i]
		if e.unencoded() || !sameChunk(e.chunk, old) {
			continue
		}
		if pos == 0 {
			p.chunkBase = e.base
		}
		copy(whole[pos:pos+e.n], e.chunk[e.pos:e.pos+e.n])
		e.chunk, e.pos = whole, pos
		pos += e.n
	}
	p.chunk = p.chunk[:pos]
	p.mapped = max(p.mapped, int(pos))
}

// maxTimestampLocked finds the largest batch max timestamp and the last
// offset of the first batch that has it, as Publish keeps them; -1, -1 for
// an empty log or one without timestamps. The prefix maxima make it a walk back from the end to
// where the maximum first appears.
func (p *Partition) maxTimestampLocked() (int64, int64) {
	n := len(p.entries)
	if n == 0 {
		return -1, -1
	}
	top := p.entries[n-1].prefixMax
	if top <= -1 {
		return -1, -1 // as Publish: no batch beat the initial -1
	}
	i := sort.Search(n, func(i int) bool { return p.entries[i].prefixMax >= top })
	return p.entries[i].maxTS, p.entries[i].last
}

func sameEntry(a, b *entry) bool {
	return sameChunk(a.chunk, b.chunk) && a.pos == b.pos && a.base == b.base
}

// recordFields are what compaction reads of a record in place.
type recordFields struct {
	timestampDelta int64
	offsetDelta    int32
	key            []byte // nil for a null key
	valueNull      bool
}

// eachRawRecord calls fn with each record of a record section holding n
// records: its bytes with the length prefix, and its fields. It returns
// ErrCorrupt for a record that does not parse (stored batches were
// validated, so only a broken invariant gets it).
func eachRawRecord(section []byte, n int32, fn func(rec []byte, f recordFields)) error {
	at := 0
	for range n {
		length, p := varint32(section, at)
		if p < 0 || length <= 0 || int(length) > len(section)-p {
			return ErrCorrupt
		}
		rec := section[at : p+int(length)]
		body := section[p : p+int(length)]
		at = p + int(length)
		f, ok := readFields(body)
		if !ok {
			return ErrCorrupt
		}
		fn(rec, f)
	}
	return nil
}

// readFields reads a record's offset delta, key and whether its value is
// null, from its bytes after the length.
func readFields(rec []byte) (recordFields, bool) {
	var f recordFields
	var p int
	f.timestampDelta, p = varint64(rec, 1) // after the attributes
	if p < 0 {
		return f, false
	}
	f.offsetDelta, p = varint32(rec, p)
	keyLen, p := varint32(rec, p)
	keyEnd := skipBytes(rec, p, keyLen)
	if keyEnd < 0 {
		return f, false
	}
	if keyLen >= 0 {
		f.key = rec[p:keyEnd]
	}
	valueLen, p := varint32(rec, keyEnd)
	if p < 0 {
		return f, false
	}
	f.valueNull = valueLen < 0
	return f, true
}

// rebuildBatch encodes, with kmsg, the batch b keeping only the records
// keep (length-prefixed, in order), as Kafka's cleaner rebuilds a batch:
// the same base offset, last offset delta, producer fields, leader epoch
// and timestamp type; the same compression codec, the record section
// compressed again; the first kept record's timestamp as the first
// timestamp (record timestamp deltas rebased on it); the kept records' max
// timestamp (the batch's own for LogAppendTime); the kept record count; a
// new length and CRC (over the section as stored). It returns the batch and its max
// timestamp.
func rebuildBatch(b Batch, keep [][]byte) ([]byte, int64, error) {
	recs := make([]kmsg.Record, len(keep))
	first := b.FirstTimestamp()
	maxTS := int64(-1)
	for i, raw := range keep {
		if err := recs[i].ReadFrom(raw); err != nil {
			return nil, 0, ErrCorrupt
		}
		maxTS = max(maxTS, first+recs[i].TimestampDelta64)
	}
	rb := kmsg.NewRecordBatch()
	rb.FirstOffset = b.BaseOffset()
	rb.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	rb.Magic = 2
	rb.Attributes = b.Attributes()
	rb.LastOffsetDelta = b.LastOffsetDelta()
	rb.FirstTimestamp = first + recs[0].TimestampDelta64
	rb.MaxTimestamp = maxTS
	if b.LogAppendTime() {
		rb.MaxTimestamp = b.MaxTimestamp()
	}
	rb.ProducerID = b.ProducerID()
	rb.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	rb.FirstSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	rb.NumRecords = int32(len(recs))
	for i := range recs {
		r := &recs[i]
		r.TimestampDelta64 = first + r.TimestampDelta64 - rb.FirstTimestamp
		r.TimestampDelta = int32(r.TimestampDelta64)
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero Length encodes as one byte
		rb.Records = r.AppendTo(rb.Records)
	}
	if codec := b.Compression(); codec != 0 {
		compressed, err := compress(nil, rb.Records, codec)
		if err != nil {
			return nil, 0, err
		}
		rb.Records = compressed
	}
	out := rb.AppendTo(make([]byte, 0, BatchHeaderSize+len(rb.Records)))
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out, rb.MaxTimestamp, nil
}
