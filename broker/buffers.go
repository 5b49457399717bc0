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
	"sync"
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
// buffer aligned to huge pages.
type frameBuf struct {
	b    []byte
	cost int
}

// bufferPool is a broker's free list of buffers. The zero value is empty
// and ready.
type bufferPool struct {
	mu    sync.Mutex
	free  [maxFrameClass - minFrameClass + 1][]*frameBuf
	bytes int // the cost of the buffers in free
	made  int // how many class-size buffers get has allocated
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

// get returns a buffer with room for at least n bytes: the smallest class
// that holds n (less than 2n bytes), or exactly n above the largest class.
func (p *bufferPool) get(n int) *frameBuf {
	c := frameClass(n)
	if c < 0 {
		return &frameBuf{b: make([]byte, n), cost: n}
	}
	p.mu.Lock()
	if list := p.free[c]; len(list) > 0 {
		fb := list[len(list)-1]
		list[len(list)-1] = nil
		p.free[c] = list[:len(list)-1]
		p.bytes -= fb.cost
		p.mu.Unlock()
		return fb
	}
	p.made++
	p.mu.Unlock()
	b, cost := newBuffer(1 << (c + minFrameClass))
	return &frameBuf{b: b, cost: cost}
}

// put gives fb back for reuse, or to the garbage collector when it is not
// of a class size or the free list is full. Nothing may use its bytes
// afterwards.
func (p *bufferPool) put(fb *frameBuf) {
	n := cap(fb.b)
	c := frameClass(n)
	if c < 0 || n != 1<<(c+minFrameClass) {
		return
	}
	fb.b = fb.b[:n]
	p.mu.Lock()
	if p.bytes+fb.cost <= maxFreeBuffers {
		p.free[c] = append(p.free[c], fb)
		p.bytes += fb.cost
	}
	p.mu.Unlock()
}

// freeBytes returns the memory of the buffers kept for reuse.
func (p *bufferPool) freeBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// allocated returns how many class-size buffers have been allocated, as
// opposed to reused.
func (p *bufferPool) allocated() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}
