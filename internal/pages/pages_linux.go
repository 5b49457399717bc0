package pages

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Linux's madvise advice: MADV_DONTNEED, and MADV_POPULATE_WRITE (5.14 and
// later).
const (
	madvDontneed      = 4
	madvPopulateWrite = 23
)

// populateUnsupported is set once the kernel refuses MADV_POPULATE_WRITE:
// before Linux 5.14, or under a seccomp filter or sandbox that forbids it.
var populateUnsupported atomic.Bool

// pageSize is the system's page size, to which madvise's range must align.
var pageSize = uintptr(syscall.Getpagesize())

// Populate maps in the pages under b, which is about to be written, in one
// system call instead of one page fault per page; a fault costs several
// times more, most of all on a virtual machine. It never changes b's
// contents.
func Populate(b []byte) {
	if len(b) == 0 || populateUnsupported.Load() {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start, end := p&^(pageSize-1), (p+uintptr(len(b))+pageSize-1)&^(pageSize-1)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite)
	if errno == syscall.EINVAL || errno == syscall.ENOSYS || errno == syscall.EPERM {
		populateUnsupported.Store(true)
	}
}

// Release gives the whole pages inside b back to the kernel: they stop
// counting in the process's resident memory and read as zeros when next
// touched. Only bytes of b are released, never a page that b shares with
// other memory. Nothing may be in b that is still needed.
func Release(b []byte) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start, end := (p+pageSize-1)&^(pageSize-1), (p+uintptr(len(b)))&^(pageSize-1)
	if end > start {
		syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvDontneed)
	}
}
