package pages

import (
	"bytes"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeAlignsLargeSlicesToHugePages: slices of a huge page or more start
// on a huge page boundary, so the kernel can back them with huge pages, and
// are exactly the size asked for, so free lists of size classes take them
// back.
func TestMakeAlignsLargeSlicesToHugePages(t *testing.T) {
	t.Parallel()
	if thpMode == "never" {
		t.Skip("transparent huge pages are off on this machine")
	}
	for _, size := range []int{HugePage, 3 << 20, 16 << 20} {
		b, cost := Make(size)
		assert.Len(t, b, size)
		assert.Equal(t, size, cap(b))
		assert.Equal(t, size+HugePage, cost, "the cost counts the alignment too")
		assert.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%HugePage, "a %d-byte slice's start", size)
	}
	small, cost := Make(HugePage / 2)
	assert.Equal(t, HugePage/2, cap(small), "smaller slices are plain allocations")
	assert.Equal(t, HugePage/2, cost)
}

// TestHugePageAdviceDoesNotPileUpMappings: advising a slice's range splits
// the heap's mapping, and withdrawing the advice once the slice is freed
// leaves it split; as the heap reuses those ranges the process's mappings
// stay bounded however many large slices come and go (the kernel allows
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
	before := mappings()
	for range 10 {
		var kept [][]byte
		for range 64 {
			b, _ := Make(3 << 20)
			b[0], b[len(b)-1] = 1, 1
			kept = append(kept, b)
		}
		runtime.KeepAlive(kept)
		runtime.GC()
		runtime.GC()
	}
	grown := mappings() - before
	t.Logf("640 huge-page slices made and dropped: %d more mappings", grown)
	assert.Less(t, grown, 1000, "mappings added")
}

// TestMakeLeavesItsAlignmentUnmapped: the heap around a huge-page aligned
// slice is never used, and takes no resident memory even where the heap
// reuses (and so zeroes) memory that was written before.
func TestMakeLeavesItsAlignmentUnmapped(t *testing.T) {
	if thpMode == "never" {
		t.Skip("transparent huge pages are off on this machine")
	}
	dirty := make([][]byte, 32)
	for i := range dirty {
		dirty[i] = make([]byte, 4<<20)
		for j := range dirty[i] {
			dirty[i][j] = 1
		}
	}
	dirty = nil
	runtime.GC()
	runtime.GC()
	for range 16 {
		buf, alloc := makeAligned(3 << 20)
		off := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - uintptr(unsafe.Pointer(unsafe.SliceData(alloc))))
		assert.Zero(t, residentPages(t, alloc[:off]), "pages before the slice")
		assert.Zero(t, residentPages(t, alloc[off+len(buf):]), "pages after it")
	}
}

// residentPages counts the whole pages inside b that are resident
// (mincore).
func residentPages(t *testing.T, b []byte) int {
	start, end := wholePages(b)
	if end <= start {
		return 0
	}
	vec := make([]byte, (end-start)/pageSize)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno)
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
