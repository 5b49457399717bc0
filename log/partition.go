// Package log keeps Kafka partition logs in memory: record batches stored as
// received, offsets, watermarks, a timestamp index, retention, and the
// idempotent producers' state (Producers). It knows nothing of sockets or of
// wall-clock time; callers pass the time in.
package log

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vastfake/vastfake/internal/pages"
)

// ErrOffsetOutOfRange is returned for a read below the log start offset or
// above the high watermark (Kafka's OFFSET_OUT_OF_RANGE).
var ErrOffsetOutOfRange = errors.New("offset out of range")

// Chunk sizes: a partition's first chunk is as small as its first batch,
// and grows by moving up to maxMovedChunk (growLocked), so that a topic
// with 20,000 quiet partitions, or partitions holding only transaction
// markers, stays small; then chunks double up to maxChunk so
// that a busy partition wastes little room at chunk tails and a fetch of a
// client's default 1 MiB per partition is usually one slice of one chunk.
// Batches of a quarter of maxChunk or more are stored alone, in memory of
// their size.
//
// Where the platform allows it, the pages of new memory a batch is about to
// fill are mapped in one system call before it is copied in, once they are
// minPrefault bytes or more (a page fault each costs several times more).
const (
	minChunk = 4 << 10
	maxChunk = 4 << 20
	// minSmallChunk is the least chunk: a partition's first chunk is
	// as small as its first batch allows, and grows by moving up to
	// maxMovedChunk (growLocked).
	minSmallChunk = 128
	maxMovedChunk = 16 << 10
	// slowGrowEntries is the length up to which a partition's index
	// grows by a quarter (Publish); append grows it from there on.
	slowGrowEntries = 256
	minPrefault     = 8 << 10
)

// entry indexes one stored batch.
type entry struct {
	chunk      []byte // the whole chunk the batch lives in
	pos, n     int32  // the batch is chunk[pos:pos+n]
	loan       *Loan  // set when chunk is memory lent to the log (StageInPlace) rather than a chunk of its own
	base       int64
	last       int64
	maxTS      int64 // the batch's own max timestamp
	prefixMax  int64 // max timestamp of this batch and every earlier one
	appendedAt int64 // broker time of the append, unix ms
	// horizon is when compaction may drop the batch's tombstones, unix
	// ms, set by the first compaction that keeps one (Kafka's delete
	// horizon, kept here rather than in the batch); 0 when unset.
	horizon int64
}

// Partition is one partition's log. It is safe for concurrent use: batches
// are copied in (Stage) in parallel, made part of the log (Publish) one at
// a time, and reads run in parallel with each other and with copies.
type Partition struct {
	mu sync.RWMutex

	// mem, when set, is where chunks come from and go back to on Release.
	// pins counts reads and copies using chunk memory outside mu, plus
	// releasedPin once Release has run; the chunks in dead go back to mem
	// when both are done. released is set under mu by Release.
	mem      *Memory
	pins     atomic.Int64
	released bool
	dead     [][]byte
	loans    []*Loan // the loans of the batches stored in place at Release, one per batch

	// dropped holds batches stored in place that left the log (retention,
	// DeleteRecords, compaction) while reads were in flight; their pages
	// are given back once none is (forgetLocked). hasDropped is set while
	// it is not empty, for unpin to check without the lock.
	dropped    []Batch
	hasDropped atomic.Bool

	entries []entry
	chunk   []byte // the chunk being filled; len is its used size
	// chunkBase is the high watermark when chunk was started: only
	// entries from it on can be in chunk.
	chunkBase int64
	mapped    int // chunk[:mapped] is in memory: written, prefaulted or reused from a Memory
	logStart  int64
	hwm       int64 // the log end offset: the offset the next record gets
	bytes     int64 // stored batch bytes still in the log
	// held, while set, keeps the high watermark readers see at heldAt:
	// HoldHighWatermark.
	held   bool
	heldAt int64

	// maxTS and maxTSOffset answer ListOffsets(-3, max timestamp).
	maxTS       int64
	maxTSOffset int64

	// skip is how many offsets the next batch skips (SkipOffsets), and
	// sinceGap how many records were appended since the last skip, for
	// AppendOptions.Gap.
	skip     int64
	sinceGap int64

	// compactMu lets one compaction at a time run on the partition;
	// cleanedTo is the end of the range the last one cleaned (Kafka's
	// cleaner checkpoint), for the dirty ratio.
	compactMu sync.Mutex
	cleanedTo int64

	// open is the first offset of each producer's open transaction here
	// and aborted the aborted transactions still in the log, by marker
	// offset (see txn.go).
	open    map[int64]int64
	openMin int64 // the least first offset in open, while open is not empty
	aborted []AbortedTxn

	// encodeMarkers stores every transaction marker encoded (tests
	// compare a log that keeps markers unencoded with one that does not;
	// markers.go).
	encodeMarkers bool
	// epochs is the leader-epoch history (epochs.go); nil until a leader
	// takes the partition over, meaning epoch 0 from the log start.
	epochs []EpochStart
}

// NewPartition returns an empty log whose first offset is 0. Its memory is
// left to the garbage collector; see Memory for a log whose memory is
// reused.
func NewPartition() *Partition {
	return &Partition{maxTS: -1, maxTSOffset: -1}
}

// MaxFreeBytes bounds the chunks a Memory keeps for reuse; chunks released
// beyond it are left to the garbage collector.
const MaxFreeBytes = 64 << 20

// chunkClasses are the chunk sizes a Memory keeps: powers of two from
// minChunk to maxChunk.
const (
	minChunkClass = 12 // log2(minChunk)
	chunkClasses  = 11 // up to log2(maxChunk)
)

// Memory is a store of free chunks for the partitions it makes: a released
// partition's chunks (Partition.Release) go back to it, up to MaxFreeBytes,
// and new batches are copied into them instead of into fresh memory, which
// the kernel must first map and zero. A broker that deletes topics and
// makes new ones (a test suite resetting it between tests) so reuses its
// log memory. It is safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	free  [chunkClasses][][]byte
	bytes int
}

// NewPartition returns an empty log whose chunks come from m and go back to
// it on Release.
func (m *Memory) NewPartition() *Partition {
	p := NewPartition()
	p.mem = m
	return p
}

// FreeBytes returns the bytes of the chunks m holds for reuse.
func (m *Memory) FreeBytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// chunkClass returns the class of a chunk of size bytes, or -1 if size is
// not one.
func chunkClass(size int) int {
	if size < minChunk || size > maxChunk || size&(size-1) != 0 {
		return -1
	}
	return bits.Len(uint(size)) - 1 - minChunkClass
}

// get returns a free chunk of size bytes (a class size), or nil.
func (m *Memory) get(size int) []byte {
	c := chunkClass(size)
	if m == nil || c < 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.free[c]
	if len(list) == 0 {
		return nil
	}
	chunk := list[len(list)-1]
	list[len(list)-1] = nil
	m.free[c] = list[:len(list)-1]
	m.bytes -= len(chunk)
	return chunk
}

// put keeps chunks of class sizes for reuse, up to MaxFreeBytes.
func (m *Memory) put(chunks [][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, chunk := range chunks {
		chunk = chunk[:cap(chunk)]
		if c := chunkClass(len(chunk)); c >= 0 && m.bytes+len(chunk) <= MaxFreeBytes {
			m.free[c] = append(m.free[c], chunk)
			m.bytes += len(chunk)
		}
	}
}

// releasedPin marks Partition.pins once the partition is released; the
// count of pins is below it.
const releasedPin = 1 << 40

// unpin ends a read or copy that used chunk memory outside the lock; the
// last one after Release gives the chunks back, and the last one of any
// gives back the pages of batches stored in place that left the log.
func (p *Partition) unpin() {
	switch p.pins.Add(-1) {
	case releasedPin:
		p.recycle()
	case 0:
		if p.hasDropped.Load() {
			p.mu.Lock()
			if p.pins.Load() == 0 { // else a later unpin does it
				p.releaseDroppedLocked()
			}
			p.mu.Unlock()
		}
	}
}

// forgetLocked is called, with p.mu held, for each batch that leaves the
// log otherwise than by Release. A batch stored in place keeps its loan, so
// its memory is never reused while its frame lives for the frame's other
// batches, but its own whole pages are given back to the kernel: at once
// when no read or copy uses the partition's memory, else once the last one
// ends (a read that started after the batch left cannot see it). Chunks are
// left to the garbage collector as before, and so is all memory of a
// partition without a Memory, whose reads are not counted.
func (p *Partition) forgetLocked(e *entry) {
	if e.loan == nil || p.mem == nil {
		return
	}
	p.dropped = append(p.dropped, e.raw())
	p.hasDropped.Store(true)
	if p.pins.Load() == 0 {
		p.releaseDroppedLocked()
	}
}

// releaseDroppedLocked gives back the pages of the dropped batches; no read
// may be using them.
func (p *Partition) releaseDroppedLocked() {
	for _, b := range p.dropped {
		pages.Release(b)
	}
	clear(p.dropped)
	p.dropped = p.dropped[:0]
	p.hasDropped.Store(false)
}

// recycle gives the released partition's chunks to its Memory, and lets go
// of the loans of its batches stored in place.
func (p *Partition) recycle() {
	if p.mem != nil {
		p.mem.put(p.dead)
	}
	for _, l := range p.loans {
		l.Done()
	}
	p.mu.Lock()
	p.releaseDroppedLocked()
	p.mu.Unlock()
	p.dead, p.loans = nil, nil
}

// Release empties a partition that is no longer part of any topic (deleted
// with its topic, or by Reset) and gives its chunks back to the Memory it
// came from once no read or copy still uses them: a fetch answer that
// holds a ReadResult keeps them until ReadResult.Release. Afterwards reads
// return nothing, and stages and publishes store nothing. Release is safe
// to call more than once.
func (p *Partition) Release() {
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return
	}
	p.released = true
	var dead [][]byte
	if p.mem != nil {
		// Each chunk once, however entries share them (compaction can
		// interleave its own chunks with kept ones).
		seen := make(map[*byte]bool)
		add := func(c []byte) {
			if c != nil && chunkClass(cap(c)) >= 0 && !seen[unsafe.SliceData(c)] {
				seen[unsafe.SliceData(c)] = true
				dead = append(dead, c)
			}
		}
		for i := range p.entries {
			if l := p.entries[i].loan; l != nil {
				p.loans = append(p.loans, l)
			} else {
				add(p.entries[i].chunk)
			}
		}
		add(p.chunk)
	}
	p.dead = dead
	p.entries, p.chunk, p.bytes = nil, nil, 0
	p.open, p.aborted = nil, nil
	last := p.pins.Add(releasedPin) == releasedPin
	p.mu.Unlock()
	if last {
		p.recycle()
	}
}

// Released reports whether Release has run on the partition, after which
// it stores nothing. It takes no lock.
func (p *Partition) Released() bool { return p.pins.Load() >= releasedPin }

// AppendOptions says how the broker wants a batch stored.
type AppendOptions struct {
	// Now is the broker's time, stored with the batch for retention,
	// LogAppendTime and the stale end offset.
	Now time.Time
	// LogAppendTime replaces the batch's max timestamp with Now, as
	// message.timestamp.type=LogAppendTime does.
	LogAppendTime bool
	// Gap leaves offsets unused before the batch; see Gap.
	Gap Gap
}

// Gap makes a partition's offsets jump: a batch appended once at least
// Every records (1 when 0) have been appended since the last jump starts
// Skip offsets past the high watermark, leaving the gap compaction would.
// A zero Gap leaves none.
type Gap struct {
	Skip, Every int64
}

// MaxOffset bounds the offsets a skip may reach (2^62), far below where
// base offset plus offset delta could overflow an int64.
const MaxOffset = 1 << 62

// ErrSkip is returned by SkipOffsets for a count below 1 or one that would
// take offsets past MaxOffset.
var ErrSkip = errors.New("offsets to skip must be at least 1 and keep offsets below 2^62")

// SkipOffsets makes the next batch appended start n offsets past the high
// watermark (plus any skip still pending), as if compaction had removed n
// records before it: readers see the gap once that batch is in the log,
// and not before, so the high watermark is always the end of a batch. It
// returns ErrSkip for n < 1 or a skip that would pass MaxOffset.
func (p *Partition) SkipOffsets(n int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n < 1 || n > MaxOffset-p.hwm-p.skip {
		return ErrSkip
	}
	p.skip += n
	return nil
}

// Staged is a batch copied into a partition's memory but not yet in its
// log: no reader sees it until Publish.
type Staged struct {
	chunk  []byte // the whole chunk the batch was copied into
	pos, n int32  // the batch is chunk[pos:pos+n]
	loan   *Loan  // set when chunk is the batch itself, in memory lent (StageInPlace)
}

// StageInPlace stages a parsed batch without copying it: the log keeps b's
// memory, part of what loan lends it, as it is for as long as the batch is
// stored. Nothing may write b afterwards. The broker stages a producer's
// large batches so, in the memory their request was read into: that saves
// the copy and, more than that, writing the batch into memory the process
// has not touched yet.
func (p *Partition) StageInPlace(b Batch, loan *Loan) Staged {
	return Staged{chunk: b[:len(b):len(b)], n: int32(len(b)), loan: loan}
}

// A Loan is memory a caller lends the log for batches staged in place
// (StageInPlace). Each batch published in it holds the loan, as does the
// caller until it calls Done; once all have let go, the loan calls the
// function it was made with, and the caller may reuse the memory. A batch
// lets go when its partition is released (Partition.Release, once no read
// uses the partition's memory), as a chunk goes back to its Memory then. A
// batch the log drops otherwise (retention, DeleteRecords, compaction)
// never lets go, since a reader may still alias it: the memory is then left
// to the garbage collector. A partition without a Memory never lets go
// either.
type Loan struct {
	holds    atomic.Int64
	giveBack func()
}

// NewLoan returns a loan held by its caller, which calls giveBack once the
// caller and every batch stored in it have let go.
func NewLoan(giveBack func()) *Loan {
	l := &Loan{giveBack: giveBack}
	l.holds.Store(1)
	return l
}

// Stored reports whether a batch stored in place holds the loan. Once the
// caller's request is done it turns false only when every such batch has
// let go, so memory it reports unused is used by nothing the log serves.
func (l *Loan) Stored() bool { return l.holds.Load() > 1 }

// Done lets go of the loan: the caller's hold, or a released batch's.
func (l *Loan) Done() {
	if l.holds.Add(-1) == 0 {
		l.giveBack()
	}
}

// Stage copies a parsed batch into the partition's memory, where Publish
// later makes it part of the log. Only the space is reserved under the
// partition's lock; the copy runs outside it, so that readers of the
// partition and other producers' stages do not wait for it. A staged batch
// that is never published only wastes its space.
func (p *Partition) Stage(b Batch) Staged {
	n := len(b)
	if n >= maxChunk/4 {
		// A large batch gets memory of its own size: packed into shared
		// chunks it could leave most of a chunk empty.
		chunk := make([]byte, n)
		pages.Populate(chunk)
		copy(chunk, b)
		return Staged{chunk: chunk, n: int32(n)}
	}
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return Staged{} // Publish stores nothing in a released partition
	}
	if cap(p.chunk)-len(p.chunk) < n {
		p.growLocked(n)
	}
	pos := len(p.chunk)
	p.chunk = p.chunk[:pos+n]
	chunk := p.chunk[:cap(p.chunk)]
	var unmapped []byte // new memory this batch is the first to write
	if p.mapped < pos+n {
		unmapped = chunk[p.mapped : pos+n]
		p.mapped = pos + n
	}
	p.pins.Add(1)
	p.mu.Unlock()
	if len(unmapped) >= minPrefault {
		pages.Populate(unmapped)
	}
	copy(chunk[pos:pos+n], b)
	p.unpin()
	return Staged{chunk: chunk, pos: int32(pos), n: int32(n)}
}

// growLocked makes room for a batch of n bytes in a new chunk. Chunks are
// powers of two, so that a Memory can reuse them. Below maxMovedChunk a
// chunk grows by moving: its published batches are copied, at the same
// places, into one twice as large (under maxMovedChunk bytes moved in all,
// once in a partition's life or after it empties), so that a quiet
// partition, one holding a few transaction markers, takes memory of its
// size, and reads still find its batches in one slice. A chunk left so is
// left to the garbage collector, not to a Memory: a read may still use it. A batch staged in the old chunk and
// not yet published stays there, where its copy is under way outside the
// lock, and its entry will point there. The move rewrites entries in
// place, which a compaction's snapshot forbids: while one runs, the
// partition starts a new chunk instead.
func (p *Partition) growLocked(n int) {
	if c, used := cap(p.chunk), len(p.chunk); c < maxMovedChunk && used+n <= maxMovedChunk {
		size := max(2*c, minSmallChunk, 1<<bits.Len(uint(used+n-1)))
		if used == 0 {
			p.newChunkLocked(size)
			return
		}
		if p.compactMu.TryLock() {
			p.moveChunkLocked(size)
			p.compactMu.Unlock()
			return
		}
	}
	p.newChunkLocked(min(max(2*cap(p.chunk), minChunk, 1<<bits.Len(uint(n-1))), maxChunk))
}

// newChunkLocked starts an empty chunk of size bytes.
func (p *Partition) newChunkLocked(size int) {
	if chunk := p.mem.get(size); chunk != nil {
		p.chunk, p.mapped = chunk[:0], size
	} else {
		p.chunk, p.mapped = make([]byte, 0, size), 0
	}
	p.chunkBase = p.hwm
}

// moveChunkLocked moves the chunk's published batches into a new chunk of
// size bytes; see growLocked. Only entries published since the chunk was
// started (from chunkBase on) can be in it.
func (p *Partition) moveChunkLocked(size int) {
	old, base := p.chunk, p.chunkBase
	p.newChunkLocked(size)
	p.chunk, p.chunkBase = p.chunk[:len(old)], base
	p.mapped = max(p.mapped, len(old))
	whole := p.chunk[:cap(p.chunk)]
	for i := len(p.entries) - 1; i >= 0 && p.entries[i].base >= base; i-- {
		if e := &p.entries[i]; sameChunk(e.chunk, old) {
			copy(whole[e.pos:e.pos+e.n], old[e.pos:e.pos+e.n])
			e.chunk = whole
		}
	}
}

// Publish appends a staged batch to the log, assigns its base offset and
// returns it with the log start offset after the append. The base offset is
// the high watermark, plus a pending SkipOffsets or the Gap of opts. The
// batch's bytes are stored as received; only the base offset and the
// partition leader epoch (LeaderEpoch: the epoch of the leader appending
// it), both outside the CRC, are written in place, as Kafka's leader
// assigns them, and for LogAppendTime the max timestamp and CRC as Kafka
// does.
func (p *Partition) Publish(s Staged, opts AppendOptions) (base, logStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return p.hwm, p.logStart // its memory may be another partition's now
	}
	stored := Batch(s.chunk[s.pos : s.pos+s.n : s.pos+s.n])
	if g := opts.Gap; p.skip == 0 && g.Skip > 0 && p.sinceGap >= max(g.Every, 1) && g.Skip <= MaxOffset-p.hwm {
		p.skip = g.Skip
	}
	base = p.hwm + p.skip
	if p.skip > 0 {
		p.skip, p.sinceGap = 0, 0
	}
	p.sinceGap += int64(stored.NumRecords())
	stored.setBaseOffset(base, p.leaderEpochLocked())
	now := opts.Now.UnixMilli()
	if opts.LogAppendTime {
		stored.setLogAppendTime(now)
	}
	e := entry{
		chunk:      s.chunk,
		pos:        s.pos,
		n:          s.n,
		loan:       s.loan,
		base:       base,
		last:       stored.LastOffset(),
		maxTS:      stored.MaxTimestamp(),
		appendedAt: now,
	}
	if e.loan != nil && e.loan.holds.Add(1) == 1 {
		panic("log: a batch published under a loan already given back")
	}
	p.addEntryLocked(e)
	p.noteTransactionalLocked(stored, base)
	return base, p.logStart
}

// addEntryLocked appends e, a batch or an unencoded marker (markers.go)
// at the high watermark, to the index, with its timestamp prefix, and
// counts it in the partition's size, high watermark and max timestamp.
func (p *Partition) addEntryLocked(e entry) {
	e.prefixMax = e.maxTS
	if k := len(p.entries); k > 0 && p.entries[k-1].prefixMax > e.prefixMax {
		e.prefixMax = p.entries[k-1].prefixMax
	}
	if k := len(p.entries); k == cap(p.entries) && k < slowGrowEntries {
		// A short index grows by a quarter, not by doubling as append
		// does: most of a quiet partition's memory (one of a few
		// transaction markers) is its index.
		grown := make([]entry, k, k+k/4+1)
		copy(grown, p.entries)
		p.entries = grown
	}
	p.entries = append(p.entries, e)
	p.hwm = e.last + 1
	p.bytes += int64(e.n)
	if e.maxTS > p.maxTS {
		p.maxTS, p.maxTSOffset = e.maxTS, e.last
	}
}

// Append stages a parsed batch and publishes it at once; see Stage and
// Publish.
func (p *Partition) Append(b Batch, opts AppendOptions) int64 {
	base, _ := p.Publish(p.Stage(b), opts)
	return base
}

// ReadResult is what a read returns: a run of whole stored batches and the
// partition's watermarks at the time of the read.
type ReadResult struct {
	// Records aliases the log's memory: callers must not modify it, nor
	// use it after Release. It is nil when there is nothing at or after
	// the offset.
	Records        []byte
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is the partition's (see LastStableOffset), and
	// Aborted, for a ReadCommitted read, the aborted transactions with data
	// in Records.
	LastStableOffset int64
	Aborted          []AbortedTxn

	pinned *Partition // set when Records must be released
}

// Release ends the use of Records: if the partition is released (its topic
// deleted), its memory may then be reused. Call it once Records has been
// copied out (the broker: once the fetch answer is encoded); a result that
// is never released only keeps a deleted partition's memory from reuse.
// Release on a result without records does nothing.
func (r *ReadResult) Release() {
	if p := r.pinned; p != nil {
		r.pinned, r.Records = nil, nil
		p.unpin()
	}
}

// Read returns the stored batches from the one holding offset onward, up to
// maxBytes, without copying them. Like Kafka it always returns at least one
// whole batch when there is one, even if it is larger than maxBytes. It
// stops early where the memory the batches are in ends, so that the result
// is one slice: at the end of a chunk, and after a batch stored in place
// (StageInPlace), as Kafka's reads stop at the end of a log segment; callers
// fetch again for the rest. An offset below the log start or above the high
// watermark returns ErrOffsetOutOfRange.
func (p *Partition) Read(offset int64, maxBytes int) (ReadResult, error) {
	return p.read(offset, maxBytes, false)
}

// ReadCommitted is Read for a read_committed reader: it returns only
// batches below the last stable offset, and the aborted transactions whose
// data it returns, which the reader must skip, as Kafka answers a fetch
// with isolation level READ_COMMITTED.
func (p *Partition) ReadCommitted(offset int64, maxBytes int) (ReadResult, error) {
	return p.read(offset, maxBytes, true)
}

func (p *Partition) read(offset int64, maxBytes int, committed bool) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	lso, hw := p.lastStableLocked(), p.highWatermarkLocked()
	res := ReadResult{HighWatermark: hw, LogStartOffset: p.logStart, LastStableOffset: lso}
	if offset < p.logStart || offset > p.hwm {
		return res, ErrOffsetOutOfRange
	}
	i := p.find(offset)
	if i == len(p.entries) || p.released || p.entries[i].base >= hw || committed && p.entries[i].base >= lso {
		return res, nil
	}
	first := &p.entries[i]
	if first.unencoded() {
		var next int64
		res.Records, next = p.readMarkersLocked(i, maxBytes, committed, lso)
		if committed && len(p.aborted) > 0 {
			res.Aborted = p.abortedLocked(offset, next)
		}
		return res, nil
	}
	end := first.pos + first.n
	next := first.last + 1
	for j := i + 1; j < len(p.entries); j++ {
		e := &p.entries[j]
		if !sameChunk(e.chunk, first.chunk) || e.pos != end || int(end+e.n-first.pos) > maxBytes || e.base >= hw || committed && e.base >= lso {
			break
		}
		end += e.n
		next = e.last + 1
	}
	res.Records = first.chunk[first.pos:end:end]
	if committed && len(p.aborted) > 0 {
		res.Aborted = p.abortedLocked(offset, next)
	}
	if p.mem != nil {
		p.pins.Add(1)
		res.pinned = p
	}
	return res, nil
}

// EachBatch calls fn with each batch of records, a run of whole stored
// batches as Read returns it, in order, until fn returns false. The batches
// alias records.
func EachBatch(records []byte, fn func(Batch) bool) {
	for len(records) >= BatchHeaderSize {
		n := min(len(records), 12+int(binary.BigEndian.Uint32(records[offLength:])))
		if !fn(Batch(records[:n:n])) {
			return
		}
		records = records[n:]
	}
}

// raw returns the stored batch: for an unencoded marker, a new encoding of
// it (markers.go).
func (e *entry) raw() Batch {
	if e.unencoded() {
		return e.encodeMarker()
	}
	return Batch(e.chunk[e.pos : e.pos+e.n : e.pos+e.n])
}

func sameChunk(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// find returns the index of the first entry whose last offset is >= offset.
func (p *Partition) find(offset int64) int {
	return sort.Search(len(p.entries), func(i int) bool { return p.entries[i].last >= offset })
}

// HighWatermark returns the offset readers may read up to: the offset the
// next record will get, or, while the high watermark is held
// (HoldHighWatermark), where it was held.
func (p *Partition) HighWatermark() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.highWatermarkLocked()
}

// LogEndOffset returns the offset the next record will get, past the high
// watermark while it is held.
func (p *Partition) LogEndOffset() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.hwm
}

func (p *Partition) highWatermarkLocked() int64 {
	if p.held {
		return p.heldAt
	}
	return p.hwm
}

// HoldHighWatermark keeps the high watermark where it is now while
// records are appended after it, until ReleaseHighWatermark: a Kafka
// leader does not move its high watermark past what every replica of the
// in-sync set has, so while a follower that stopped fetching is still in
// that set, records appended after it stop are stored but not readable,
// listed by ListOffsets(latest), nor counted in lag. A hold already in
// place stays where it is.
func (p *Partition) HoldHighWatermark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		p.held, p.heldAt = true, p.hwm
	}
}

// ReleaseHighWatermark moves the high watermark to the log end again, as a
// Kafka leader does once the stopped follower is out of the in-sync set or
// has caught up. It reports whether a hold was released.
func (p *Partition) ReleaseHighWatermark() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.held
	p.held = false
	return was
}

// LogStartOffset returns the earliest offset still readable.
func (p *Partition) LogStartOffset() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.logStart
}

// Watermarks returns the log start offset and the high watermark together.
func (p *Partition) Watermarks() (logStart, highWatermark int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.logStart, p.highWatermarkLocked()
}

// HighWatermarkAt returns the high watermark as it was at time t: the end of
// the last batch appended at or before t, or the log start if none was. It
// backs VAST's stale end offset.
func (p *Partition) HighWatermarkAt(t time.Time) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ms := t.UnixMilli()
	i := sort.Search(len(p.entries), func(i int) bool { return p.entries[i].appendedAt > ms })
	if i == 0 {
		return p.logStart
	}
	return p.entries[i-1].last + 1
}

// Bytes returns the size of the stored batches still in the log.
func (p *Partition) Bytes() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.bytes
}

// MaxTimestamp returns the largest timestamp in the log and the offset of the
// first record that carries it, or (-1, -1) for an empty log; see
// MaxTimestampRecord, which it calls with no decompression turn.
func (p *Partition) MaxTimestamp() (timestamp, offset int64) {
	timestamp, offset, _ = p.MaxTimestampRecord(nil)
	return timestamp, offset
}

// MaxTimestampRecord answers ListOffsets(-3, max timestamp) as Kafka 3.8+
// does: the largest timestamp in the log, (-1, -1) for an empty log, and
// the offset of the first record carrying it in the first batch that has
// it, as Kafka's RecordBatch.offsetOfMaxTimestamp finds it. The batch is
// read outside the partition's lock, so appends do not wait for it; a
// compressed one is decompressed, after turn (when not nil) gives a
// decompression turn, which it returns when done. It returns turn's error
// if turn fails; a batch that does not decompress answers its last
// offset, as before Kafka 3.8.
func (p *Partition) MaxTimestampRecord(turn func() (func(), error)) (timestamp, offset int64, err error) {
	p.mu.RLock()
	if len(p.entries) == 0 {
		p.mu.RUnlock()
		return -1, -1, nil
	}
	timestamp, offset = p.maxTS, p.maxTSOffset
	i := p.find(offset)
	if i == len(p.entries) || p.entries[i].last != offset || p.released {
		p.mu.RUnlock()
		return timestamp, offset, nil
	}
	b := p.entries[i].raw()
	p.pins.Add(1) // b is read outside the lock
	p.mu.RUnlock()
	defer p.unpin()
	offset, err = b.offsetOfMaxTimestamp(turn)
	return timestamp, offset, err
}

// offsetOfMaxTimestamp returns the offset of the batch's first record whose
// timestamp is the batch's max timestamp, as Kafka's
// RecordBatch.offsetOfMaxTimestamp does (in a LogAppendTime batch every
// record carries it: the first record, which compaction may have moved past
// the base offset); its last offset when no record does or the records do
// not parse or decompress. A compressed batch is decompressed as compaction
// decompresses one, after turn; turn's error is returned.
func (b Batch) offsetOfMaxTimestamp(turn func() (func(), error)) (int64, error) {
	c := compactor{turn: turn}
	defer c.release()
	section, err := c.section(b)
	if errors.Is(err, ErrDecompress) || errors.Is(err, ErrTooLarge) {
		return b.LastOffset(), nil
	} else if err != nil {
		return 0, err
	}
	offset, found := b.LastOffset(), false
	first, maxTS, logAppend := b.FirstTimestamp(), b.MaxTimestamp(), b.LogAppendTime()
	_ = eachRawRecord(section, b.NumRecords(), func(_ []byte, f recordFields) {
		if !found && (logAppend || first+f.timestampDelta == maxTS) {
			offset, found = b.BaseOffset()+int64(f.offsetDelta), true
		}
	}) // a record that does not parse ends the walk: the last offset stands in
	return offset, nil
}

// OffsetForTime returns the first offset at or after the log start whose
// record timestamp is >= ts, and the timestamp of that record, as Kafka's
// ListOffsets does. It returns (-1, -1) when every record is older. For a
// compressed batch the batch's base offset and max timestamp stand in for
// its records: reads never decompress.
func (p *Partition) OffsetForTime(ts int64) (offset, timestamp int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	i := sort.Search(len(p.entries), func(i int) bool { return p.entries[i].prefixMax >= ts })
	for hw := p.highWatermarkLocked(); i < len(p.entries) && p.entries[i].base < hw; i++ {
		e := &p.entries[i]
		if e.maxTS < ts {
			continue
		}
		if e.raw().Compression() != 0 {
			return max(e.base, p.logStart), e.maxTS
		}
		found, foundTS := int64(-1), int64(-1)
		_ = e.raw().EachRecord(func(r Record) bool {
			if r.Offset >= p.logStart && r.Timestamp >= ts {
				found, foundTS = r.Offset, r.Timestamp
				return false
			}
			return true
		})
		if found >= 0 {
			return found, foundTS
		}
	}
	return -1, -1
}

// DeleteBefore moves the log start offset up to offset, as DeleteRecords
// does, and drops every batch wholly below it. Offset -1 means the high
// watermark. It returns the new log start offset, or ErrOffsetOutOfRange
// for an offset above the high watermark.
func (p *Partition) DeleteBefore(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset == -1 {
		offset = p.highWatermarkLocked()
	}
	if offset < 0 || offset > p.highWatermarkLocked() {
		return p.logStart, ErrOffsetOutOfRange
	}
	if offset > p.logStart {
		p.logStart = offset
		p.dropBelowStartLocked()
	}
	return p.logStart, nil
}

// ApplyRetention drops batches whose max timestamp is older than now minus
// retention, from the front of the log, and moves the log start offset past
// them, as Kafka's retention.ms does (per batch rather than per segment, so
// tests see it exactly). A retention <= 0 keeps everything. It returns how
// many batches it dropped.
func (p *Partition) ApplyRetention(now time.Time, retention time.Duration) int {
	if retention <= 0 {
		return 0
	}
	cutoff := now.Add(-retention).UnixMilli()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.entries) && p.entries[n].maxTS < cutoff {
		n++
	}
	if n == 0 {
		return 0
	}
	p.logStart = max(p.logStart, p.entries[n-1].last+1)
	p.dropBelowStartLocked()
	return n
}

// ApplyRetentionBytes drops batches from the front of the log while the
// log without them would still hold at least limit bytes, and moves the
// log start offset past them, as Kafka's retention.bytes does (per batch
// rather than per segment). The newest batch always stays, as Kafka never
// deletes the active segment by size: a limit of 0 leaves the last record
// produced. A limit < 0 keeps everything. As with
// retention.ms, an open transaction's first offset may go: the last
// stable offset then stays at the log start until the transaction ends,
// as in Kafka. It returns how many batches it dropped.
func (p *Partition) ApplyRetentionBytes(limit int64) int {
	if limit < 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	over := p.bytes - limit
	n := 0
	for n < len(p.entries)-1 && over-int64(p.entries[n].n) >= 0 {
		over -= int64(p.entries[n].n)
		n++
	}
	if n == 0 {
		return 0
	}
	p.logStart = max(p.logStart, p.entries[n-1].last+1)
	p.dropBelowStartLocked()
	return n
}

// dropBelowStartLocked forgets the batches wholly below the log start so
// their chunks can be freed once no reader holds them.
func (p *Partition) dropBelowStartLocked() {
	p.dropAbortedBelowStartLocked()
	p.truncateEpochsLocked()
	n := 0
	for n < len(p.entries) && p.entries[n].last < p.logStart {
		p.bytes -= int64(p.entries[n].n)
		p.forgetLocked(&p.entries[n])
		n++
	}
	if n == 0 {
		return
	}
	rest := make([]entry, len(p.entries)-n, cap(p.entries)-n)
	copy(rest, p.entries[n:])
	p.entries = rest
	if len(p.entries) == 0 {
		p.chunk = nil // let the last chunk go too; the next append starts small
	}
}

// Batches calls fn with each stored batch at or after offset, in order,
// until fn returns false. The batches alias the log; fn must not keep or
// modify them past its return. It is for inspection, not the fetch path.
func (p *Partition) Batches(offset int64, fn func(Batch) bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for i := p.find(max(offset, p.logStart)); i < len(p.entries); i++ {
		if !fn(p.entries[i].raw()) {
			return
		}
	}
}
