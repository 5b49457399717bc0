package broker

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Go runs
// Linux on.
const hugePage = 2 << 20

// madvHugepage is Linux's MADV_HUGEPAGE.
const madvHugepage = 14

// hugePages reports whether the kernel backs memory with transparent huge
// pages on request (transparent_hugepage "always" or "madvise").
var hugePages = func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !bytes.Contains(b, []byte("[never]"))
}()

// newBuffer returns a zeroed buffer of size bytes for the free list. One of
// hugePage or more is aligned to huge pages and asked to be backed by them:
// filling fresh memory costs a page fault per 4 KiB page, which on a
// virtual machine is most of what reading a producer's first large frames
// costs (a 2 MiB page faults once). The alignment costs address space, not
// resident memory: the bytes before the aligned start are never touched.
func newBuffer(size int) []byte {
	if size < hugePage || !hugePages {
		return make([]byte, size)
	}
	alloc := make([]byte, size+hugePage)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(alloc)))
	off := int((start+hugePage-1)&^(hugePage-1) - start)
	buf := alloc[off : off+size : off+size]
	syscall.Syscall(syscall.SYS_MADVISE, start+uintptr(off), uintptr(size), madvHugepage)
	return buf
}
