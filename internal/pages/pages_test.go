package pages

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPopulateKeepsContents: mapping pages in changes no byte, whatever
// the slice's alignment.
func TestPopulateKeepsContents(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 5*os.Getpagesize()+123)
	for i := range buf {
		buf[i] = byte(i)
	}
	want := bytes.Clone(buf)
	Populate(buf[17:])
	Populate(buf[:0])
	assert.Equal(t, want, buf)
}

// TestReleaseGivesBackOnlyWholePagesInside: bytes on a page the slice
// shares with memory around it are kept; only pages wholly inside the
// slice may read as zeros afterwards (where the platform releases them).
func TestReleaseGivesBackOnlyWholePagesInside(t *testing.T) {
	t.Parallel()
	page := os.Getpagesize()
	alloc := make([]byte, 7*page)
	off := (page - int(uintptr(unsafe.Pointer(&alloc[0]))%uintptr(page))) % page
	buf := alloc[off : off+6*page] // starts on a page boundary
	for i := range buf {
		buf[i] = 0xAB
	}
	start, end := page+100, 4*page+100 // from mid-page 1 to mid-page 4
	Release(buf[start:end])
	for i, b := range buf {
		inside := i >= 2*page && i < 4*page // pages 2 and 3 lie wholly inside
		if !inside {
			assert.Equal(t, byte(0xAB), b, "byte %d outside the released pages", i)
			if b != 0xAB {
				return
			}
		} else if b != 0 && b != 0xAB {
			t.Fatalf("byte %d of a released page reads %#x", i, b)
		}
	}
	Release(buf[:page-1]) // less than a page: nothing to release
	assert.Equal(t, byte(0xAB), buf[0])
}
