package broker

// Request frame and answer buffers, shared by every connection of a broker
// through a free list of power-of-two size classes. A connection takes a
// buffer when a frame starts and gives it back when the request has been
// answered; a large answer (a fetch) is encoded into one and given back
// once written. Idle connections hold none, and a producer's or consumer's
// new connection reuses pages another request already touched instead of
// growing fresh ones.
//
// The free list is not a sync.Pool: a garbage collection empties a
// sync.Pool, and a broker storing records collects often while its log
// grows, so every collection would cost the next requests fresh buffers
// (page faults, copies) and leave the old ones as garbage that the process
// keeps resident until the runtime returns it. The list keeps at most
// maxFreeBuffers bytes instead.

import (
	"math/bits"
	"runtime/debug"
	"sync"

	"github.com/vastfake/vastfake/internal/pages"
	"github.com/vastfake/vastfake/log"
)

// Buffer size classes: powers of two from minFrameBuffer to
// maxPooledFrameBuffer. A buffer larger than the largest class is its own
// allocation, left to the garbage collector.
const (
	minFrameBuffer       = 4 << 10
	maxPooledFrameBuffer = 16 << 20
)

const (
	minFrameClass = 12 // log2(minFrameBuffer)
	maxFrameClass = 24 // log2(maxPooledFrameBuffer)
)

// maxFreeBuffers bounds the bytes of free buffers a broker keeps for
// reuse; a buffer given back beyond it is left to the garbage collector.
// 32 MiB holds the frames of five producers sending 3 MiB requests (4 MiB
// buffers that take 6 MiB where they are aligned to huge pages).
const maxFreeBuffers = 32 << 20

// frameBuf is a buffer from the free list; the pointer is what the list
// holds, so that giving a buffer back allocates nothing. cost is the
// memory it takes, which the free list counts: more than len(b) for a
// buffer aligned to huge pages. released is set while its pages are given
// back to the kernel (putReleased).
type frameBuf struct {
	b        []byte
	cost     int
	released bool
	// loan is set on a buffer for produce frames whose batches the log may
	// keep (bufferPool.own): it lends the buffer to the log, and such a
	// buffer never goes back to the free list.
	loan *log.Loan
}

// kept reports whether fb is a buffer for produce frames the log may keep
// (bufferPool.own) rather than one of the free list's.
func (fb *frameBuf) kept() bool { return fb.loan != nil }

// bufferPool is a broker's free list of buffers. The zero value is empty
// and ready.
type bufferPool struct {
	mu    sync.Mutex
	free  [maxFrameClass - minFrameClass + 1][]*frameBuf
	bytes int // the cost of the buffers in free
	made  int // how many class-size buffers get has allocated
	owned int // how many buffers own has handed out

	// kept holds buffers of produce frames the log gave back (own), up to
	// log.MaxFreeBytes of them, as the log bounds its own free chunks;
	// keptBytes is their size.
	kept      []*frameBuf
	keptBytes int
}

// frameClass returns the class index of the smallest class holding n
// bytes, or -1 when n is larger than every class.
func frameClass(n int) int {
	if n > maxPooledFrameBuffer {
		return -1
	}
	c := bits.Len(uint(max(n, minFrameBuffer) - 1))
	return c - minFrameClass
}

// get returns a buffer with room for at least n bytes, its first n bytes
// mapped in: a free one (getFree), or else a new one of the smallest class
// that holds n (less than 2n bytes), or exactly n above the largest class.
func (p *bufferPool) get(n int) *frameBuf {
	c := frameClass(n)
	if c < 0 {
		return &frameBuf{b: make([]byte, n), cost: n}
	}
	if fb := p.getFree(n); fb != nil {
		if fb.released {
			pages.Populate(fb.b[:n])
			fb.released = false
		}
		return fb
	}
	p.mu.Lock()
	p.made++
	p.mu.Unlock()
	b, cost := pages.Make(1 << (c + minFrameClass))
	pages.Populate(b[:n])
	return &frameBuf{b: b, cost: cost}
}

// getFree returns a free buffer with room for n bytes, or nil when there
// is none; it never allocates nor maps pages in. It takes the smallest
// resident buffer that fits, else the smallest one whose pages were
// released (its released flag still set): a larger buffer already in
// memory serves before another is made resident, so a small answer may hold
// a large buffer while it is written. Taking a resident buffer costs no new
// memory, and a released one's pages come back only as they are written,
// so a frame may take one of its declared size before its bytes arrive.
func (p *bufferPool) getFree(n int) *frameBuf {
	c := frameClass(n)
	if c < 0 {
		return nil
	}
	p.mu.Lock()
	pick, at := -1, -1 // class and index of the buffer to take
	for k := c; k < len(p.free); k++ {
		for i, fb := range p.free[k] {
			if !fb.released {
				pick, at = k, i
				break
			}
			if pick < 0 {
				pick, at = k, i
			}
		}
		if pick >= 0 && !p.free[pick][at].released {
			break
		}
	}
	if pick < 0 {
		p.mu.Unlock()
		return nil
	}
	list := p.free[pick]
	fb := list[at]
	last := len(list) - 1
	list[at], list[last] = list[last], nil
	p.free[pick] = list[:last]
	p.bytes -= fb.cost
	p.mu.Unlock()
	return fb
}

// own returns a buffer of n bytes for a produce frame whose batches the log
// may keep (clientConn.readKeptFrame), with a loan to lend it to the log
// (log.Partition.StageInPlace). Once the connection and every batch stored
// in it have let go of the loan (the batches when their topic is deleted or
// the broker reset), the buffer goes back to the pool for the next such
// frame, which reuses its pages rather than mapping fresh ones. A buffer
// given back is reused for a frame it holds with at most an eighth to
// spare, so that little memory is wasted while a frame is stored; else the
// buffer is a new one of exactly n bytes, huge-page aligned where it can be
// (pages.Make). A resident buffer serves before one whose pages were
// released (a frame that stored nothing, see clientConn.releaseFrame); a
// new or released one is marked released, and clientConn.readKeptFrame maps
// its pages in as the frame's bytes arrive. put and putReleased never take a
// kept buffer.
func (p *bufferPool) own(n int) *frameBuf {
	p.mu.Lock()
	p.owned++
	var fb *frameBuf
	best := -1
	for i, k := range p.kept {
		if c := cap(k.b); c < n || c-n > n/8 {
			continue
		}
		if best < 0 || servesBefore(k, p.kept[best]) {
			best = i
		}
	}
	if best >= 0 {
		fb = p.kept[best]
		last := len(p.kept) - 1
		p.kept[best], p.kept[last] = p.kept[last], nil
		p.kept = p.kept[:last]
		p.keptBytes -= cap(fb.b)
	}
	p.mu.Unlock()
	if fb == nil {
		b, cost := pages.Make(n)
		fb = &frameBuf{b: b, cost: cost, released: true} // not mapped in yet; own sets its loan below
	}
	fb.b = fb.b[:n]
	fb.loan = log.NewLoan(func() { p.giveBackKept(fb) })
	return fb
}

// servesBefore reports whether kept buffer a is taken before b: a resident
// one before a released one, then the smaller.
func servesBefore(a, b *frameBuf) bool {
	if a.released != b.released {
		return !a.released
	}
	return cap(a.b) < cap(b.b)
}

// giveBackKept keeps a buffer whose loan ended for reuse by own, within
// log.MaxFreeBytes; beyond it the buffer is left to the garbage collector.
func (p *bufferPool) giveBackKept(fb *frameBuf) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keptBytes+cap(fb.b) <= log.MaxFreeBytes {
		fb.b = fb.b[:cap(fb.b)]
		p.kept = append(p.kept, fb)
		p.keptBytes += cap(fb.b)
	}
}

// put gives fb back for reuse, or to the garbage collector when it is not
// of a class size or the free list is full. Nothing may use its bytes
// afterwards.
func (p *bufferPool) put(fb *frameBuf) {
	n := cap(fb.b)
	if fb.kept() {
		return
	}
	c := frameClass(n)
	if c < 0 || n != 1<<(c+minFrameClass) {
		dropFree(fb)
		return
	}
	fb.b = fb.b[:n]
	p.mu.Lock()
	kept := p.bytes+fb.cost <= maxFreeBuffers
	if kept {
		p.free[c] = append(p.free[c], fb)
		p.bytes += fb.cost
	}
	p.mu.Unlock()
	if !kept {
		dropFree(fb)
	}
}

// dropFree leaves fb, which the free list does not keep, to the garbage
// collector, first giving its pages back to the kernel when it is
// minReleased bytes or more: a buffer is garbage once its request is
// answered (nothing a request leaves behind points into it, which is what
// lets the free list reuse buffers), and the memory of a large refused
// request must not stay resident until the next collection.
func dropFree(fb *frameBuf) {
	if cap(fb.b) >= minReleased && !fb.released {
		pages.Release(fb.b[:cap(fb.b)])
	}
	fb.b = nil
}

// putReleased gives fb back for reuse like put, but first gives its pages
// back to the kernel when it is minReleased bytes or more: a frame that
// outgrew fb is unlikely to need a buffer of its size again soon, and a
// free buffer that is not resident costs the machine nothing until it is
// taken again (get maps back what it hands out in one system call; a
// frame's pages come back as its bytes arrive).
func (p *bufferPool) putReleased(fb *frameBuf) {
	if len(fb.b) >= minReleased && !fb.kept() {
		pages.Release(fb.b)
		fb.released = true
	}
	p.put(fb)
}

// reclaimAfter is the smallest request after which the broker collects
// its garbage and gives the memory back at once (Broker.reclaimLarge): the
// largest free-list buffer. Produce requests are left out: their memory is
// the batches they store, and their frames are handled on their own
// (clientConn.readKeptFrame).
const reclaimAfter = maxPooledFrameBuffer

// startLarge waits for the broker's one turn to decode and handle a
// request of reclaimAfter bytes or more that is not a Produce, and returns
// the function that gives it back; it returns nil if done is closed first.
// A request's decoded copy costs up to about 3.5 times its bytes when it is
// an array of small elements (kmsg's structs), on top of its frame: taking
// turns bounds that cost to one request's, however many connections send
// large requests at once; their frames, which are what each client sent,
// are read meanwhile. JoinGroup and SyncGroup give the turn back once
// decoded, since they wait for other members of their group.
func (b *Broker) startLarge(done <-chan struct{}) func() {
	select {
	case b.largeTurn <- struct{}{}:
	case <-done:
		return nil
	}
	return func() { <-b.largeTurn }
}

// reclaimLarge runs a garbage collection and gives the freed memory back to
// the kernel, after a request of reclaimAfter bytes or more was answered:
// its decoded copy (as large as the request again) and its frame must not
// stay resident until the runtime gets round to them, nor add up across
// requests before a collection; and after reclaimConns connections closed
// (connClosed), for what a burst of them left. It blocks the calling
// connection, after its answer was written, for one collection; while one
// runs, other connections skip theirs, as it covers them or the next one
// does.
func (b *Broker) reclaimLarge() {
	if !b.reclaimMu.TryLock() {
		return
	}
	defer b.reclaimMu.Unlock()
	debug.FreeOSMemory()
}

// minReleased is the smallest buffer putReleased gives back to the kernel:
// below it a page fault or two costs less than the system call.
const minReleased = 64 << 10

// freeBytes returns the memory of the buffers kept for reuse.
func (p *bufferPool) freeBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// keptFreeBytes returns the bytes of the kept buffers held for reuse.
func (p *bufferPool) keptFreeBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keptBytes
}

// ownedFrames returns how many buffers own has handed out.
func (p *bufferPool) ownedFrames() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owned
}

// allocated returns how many class-size buffers have been allocated, as
// opposed to reused.
func (p *bufferPool) allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}
