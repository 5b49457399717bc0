package broker

// Request frame buffers, shared by every connection through a pool of
// power-of-two size classes. A connection takes a buffer when a frame
// starts and gives it back when the request has been answered, so idle
// connections hold none, and a producer's connection reuses pages another
// request already touched instead of growing fresh ones.

import (
	"math/bits"
	"sync"
)

// Frame buffer size classes: powers of two from minFrameBuffer to
// maxPooledFrameBuffer. A frame larger than the largest class gets a
// buffer of its own that is left to the garbage collector.
const (
	minFrameBuffer       = 4 << 10
	maxPooledFrameBuffer = 16 << 20
)

const (
	minFrameClass = 12 // log2(minFrameBuffer)
	maxFrameClass = 24 // log2(maxPooledFrameBuffer)
)

// framePools holds free buffers of each class; sync.Pool lets the garbage
// collector take them back when they go unused.
var framePools [maxFrameClass - minFrameClass + 1]sync.Pool

// frameBuf is a pooled buffer; the pointer is what the pool holds, so that
// putting a buffer back allocates nothing.
type frameBuf struct{ b []byte }

// frameClass returns the class index of the smallest class holding n
// bytes, or -1 when n is larger than every class.
func frameClass(n int) int {
	if n > maxPooledFrameBuffer {
		return -1
	}
	c := bits.Len(uint(max(n, minFrameBuffer) - 1))
	return c - minFrameClass
}

// getFrameBuf returns a buffer with room for at least n bytes: the
// smallest class that holds n (less than 2n bytes), or exactly n above the
// largest class.
func getFrameBuf(n int) *frameBuf {
	c := frameClass(n)
	if c < 0 {
		return &frameBuf{b: make([]byte, n)}
	}
	if fb, ok := framePools[c].Get().(*frameBuf); ok {
		return fb
	}
	return &frameBuf{b: make([]byte, 1<<(c+minFrameClass))}
}

// putFrameBuf gives fb back to its class. Nothing may use its bytes
// afterwards.
func putFrameBuf(fb *frameBuf) {
	n := cap(fb.b)
	if c := frameClass(n); c >= 0 && n == 1<<(c+minFrameClass) {
		fb.b = fb.b[:n]
		framePools[c].Put(fb)
	}
}
