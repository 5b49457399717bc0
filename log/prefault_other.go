//go:build !linux

package log

// prefault does nothing where Linux's MADV_POPULATE_WRITE is not available;
// pages fault in as they are written.
func prefault([]byte) {}
