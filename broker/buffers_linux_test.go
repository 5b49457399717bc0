package broker

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestLargeBuffersAreHugePageAligned: free-list buffers of a huge page or
// more start on a huge page boundary, so the kernel can back them with huge
// pages, and are exactly their class size, so they go back to their class.
func TestLargeBuffersAreHugePageAligned(t *testing.T) {
	if thpMode == "never" {
		t.Skip("transparent huge pages are off on this machine")
	}
	for _, size := range []int{hugePage, 4 << 20, maxPooledFrameBuffer} {
		b, cost := newBuffer(size)
		assert.Len(t, b, size)
		assert.Equal(t, size, cap(b))
		assert.Equal(t, size+hugePage, cost, "the free list counts the alignment too")
		assert.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%hugePage, "a %d-byte buffer's start", size)
	}
	small, cost := newBuffer(hugePage / 2)
	assert.Equal(t, hugePage/2, cap(small), "smaller buffers are plain allocations")
	assert.Equal(t, hugePage/2, cost)
}
