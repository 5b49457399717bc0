package pages

import (
	"bytes"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Linux's madvise advice: MADV_DONTNEED, MADV_POPULATE_WRITE (5.14 and
// later), and the transparent huge page requests.
const (
	madvDontneed      = 4
	madvHugepage      = 14
	madvNohugepage    = 15
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
	if start, end := wholePages(b); end > start {
		madvise(start, end-start, madvDontneed)
	}
}

// wholePages returns the range of the whole pages inside b, empty (end <=
// start) when there are none.
func wholePages(b []byte) (start, end uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return (p + pageSize - 1) &^ (pageSize - 1), (p + uintptr(len(b))) &^ (pageSize - 1)
}

// thpMode is the kernel's transparent huge page setting: "always",
// "madvise" or "never" (also when it cannot be read).
var thpMode = func() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return "never"
	}
	for _, mode := range []string{"always", "madvise"} {
		if bytes.Contains(b, []byte("["+mode+"]")) {
			return mode
		}
	}
	return "never"
}()

// Make returns a zeroed slice of size bytes and the bytes of heap it takes.
// One of HugePage or more is aligned to a huge page, so that the kernel can
// back it with huge pages: filling fresh memory costs a page fault per 4 KiB
// page, which on a virtual machine is most of what storing records or
// reading a producer's large frames costs (a 2 MiB page faults once). The
// alignment takes HugePage more of the heap, which the garbage collector
// counts; its pages are given back to the kernel, so it takes no resident
// memory. Where huge pages are given only on request ("madvise"), the slice
// asks for those entirely inside it, so one that ends part way into a huge
// page takes no memory past its end, and gives the request up once the
// garbage collector frees it, so that memory the runtime reuses for other
// objects is not collapsed into huge pages.
func Make(size int) (buf []byte, cost int) {
	buf, alloc := makeAligned(size)
	return buf, len(alloc)
}

// makeAligned is Make, also returning the whole allocation buf is part of.
func makeAligned(size int) (buf, alloc []byte) {
	if size < HugePage || thpMode == "never" {
		buf = make([]byte, size)
		return buf, buf
	}
	alloc = make([]byte, size+HugePage)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(alloc)))
	aligned := (start + HugePage - 1) &^ (HugePage - 1)
	off := int(aligned - start)
	buf = alloc[off : off+size : off+size]
	// The alignment's pages are never used; where the heap reused memory
	// for alloc, zeroing it made them resident.
	Release(alloc[:off])
	Release(alloc[off+size:])
	if thpMode == "madvise" {
		madvise(aligned, uintptr(size), madvHugepage)
		runtime.AddCleanup(unsafe.SliceData(alloc), func(r [2]uintptr) { madvise(r[0], r[1], madvNohugepage) },
			[2]uintptr{aligned, uintptr(size)})
	}
	return buf, alloc
}

// madvise gives the kernel advice about [addr, addr+n); advice it refuses
// changes nothing, so errors are ignored.
func madvise(addr, n, advice uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, addr, n, advice)
}
