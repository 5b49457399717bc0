//go:build !linux

package broker

// newBuffer returns a zeroed buffer of size bytes for the free list and the
// bytes of memory it takes.
func newBuffer(size int) (buf []byte, cost int) { return make([]byte, size), size }
