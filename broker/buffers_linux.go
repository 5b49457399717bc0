package broker

import (
	"bytes"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Go runs
// Linux on.
const hugePage = 2 << 20

// Linux's madvise advice values for transparent huge pages.
const (
	madvHugepage   = 14
	madvNohugepage = 15
)

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

// newBuffer returns a zeroed buffer of size bytes for the free list and the
// bytes of memory it takes. One of hugePage or more is aligned to a huge
// page, so that the kernel can back it with huge pages: filling fresh
// memory costs a page fault per 4 KiB page, which on a virtual machine is
// most of what reading a producer's first large frames costs (a 2 MiB page
// faults once). The alignment takes hugePage more of the heap, never
// written. Where huge pages are given only on request ("madvise"), the
// buffer asks for them while it lives and gives the request up once the
// garbage collector frees it, so that memory the runtime reuses for other
// objects is not collapsed into huge pages.
func newBuffer(size int) (buf []byte, cost int) {
	if size < hugePage || thpMode == "never" {
		return make([]byte, size), size
	}
	alloc := make([]byte, size+hugePage)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(alloc)))
	aligned := (start + hugePage - 1) &^ (hugePage - 1)
	off := int(aligned - start)
	buf = alloc[off : off+size : off+size]
	if thpMode == "madvise" {
		madvise(aligned, uintptr(size), madvHugepage)
		runtime.AddCleanup(unsafe.SliceData(alloc), func(r [2]uintptr) { madvise(r[0], r[1], madvNohugepage) },
			[2]uintptr{aligned, uintptr(size)})
	}
	return buf, len(alloc)
}

// madvise gives the kernel advice about [addr, addr+n); advice it refuses
// changes nothing, so errors are ignored.
func madvise(addr, n, advice uintptr) {
	syscall.Syscall(syscall.SYS_MADVISE, addr, n, advice)
}
