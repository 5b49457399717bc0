package log

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later).
const madvPopulateWrite = 23

// prefaultUnsupported is set once the kernel refuses MADV_POPULATE_WRITE:
// before Linux 5.14, or under a seccomp filter or sandbox that forbids it.
var prefaultUnsupported atomic.Bool

// pageSize is the system's page size, to which madvise's range must align.
var pageSize = syscall.Getpagesize()

// prefault maps in the pages under b, which is about to be written, in one
// system call instead of one page fault per page. It never changes b's
// contents. Fresh memory is the main cost of storing records: faulting
// pages in one at a time costs about twice as much.
func prefault(b []byte) {
	if len(b) < minPrefault || prefaultUnsupported.Load() {
		return
	}
	page := uintptr(pageSize)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) &^ (page - 1)
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)) + page - 1) &^ (page - 1)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite)
	if errno == syscall.EINVAL || errno == syscall.ENOSYS || errno == syscall.EPERM {
		prefaultUnsupported.Store(true)
	}
}
