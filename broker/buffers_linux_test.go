package broker

import (
	"bytes"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestHugePageAdviceDoesNotPileUpMappings: advising a buffer's range splits
// the heap's mapping, and withdrawing the advice once the buffer is freed
// leaves it split; as the heap reuses those ranges the process's mappings
// stay bounded however many large buffers come and go (the kernel allows
// 65,530 by default).
func TestHugePageAdviceDoesNotPileUpMappings(t *testing.T) {
	if thpMode != "madvise" {
		t.Skip("huge pages are not given on request on this machine")
	}
	mappings := func() int {
		b, err := os.ReadFile("/proc/self/maps")
		require.NoError(t, err)
		return bytes.Count(b, []byte("\n"))
	}
	var p bufferPool
	before := mappings()
	for range 10 {
		var bufs []*frameBuf
		for range 64 { // more than the free list keeps: most are dropped
			fb := p.get(3 << 20)
			fb.b[0], fb.b[len(fb.b)-1] = 1, 1
			bufs = append(bufs, fb)
		}
		for _, fb := range bufs {
			p.put(fb)
		}
		runtime.GC()
		runtime.GC()
	}
	grown := mappings() - before
	t.Logf("640 huge-page buffers made and dropped: %d more mappings", grown)
	assert.Less(t, grown, 1000, "mappings added")
}
