package pages

import (
	"bytes"
	"os"
	"runtime"
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
