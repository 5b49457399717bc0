//go:build !linux

package pages

// Populate does nothing where Linux's MADV_POPULATE_WRITE is not available;
// pages fault in as they are written.
func Populate([]byte) {}

// Release does nothing where Linux's MADV_DONTNEED is not available: the
// memory stays resident until it is reused.
func Release([]byte) {}

// Make returns a zeroed slice of size bytes and the bytes of heap it takes.
func Make(size int) (buf []byte, cost int) { return make([]byte, size), size }
