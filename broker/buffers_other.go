//go:build !linux

package broker

// newBuffer returns a zeroed buffer of size bytes for the free list.
func newBuffer(size int) []byte { return make([]byte, size) }
