// Package pages maps in and gives back the memory under byte slices, where
// the platform lets a process ask: the broker's frame buffers and the log's
// chunks use it to pay for fresh memory in one system call instead of one
// page fault per page, and to return memory they no longer need; and Make
// allocates large slices that the kernel can back with huge pages.
//
// Populate and Release are advice: neither changes what a slice holds for
// the program (Release leaves zeros, which readers of released memory must
// not rely on either way), and both do nothing where the platform offers no
// such call.
package pages

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Resident returns the resident memory of process pid in bytes, from
// /proc/pid/statm. It fails where there is no /proc.
func Resident(pid int) (int64, error) {
	statm, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(statm))
	if len(f) < 2 {
		return 0, errors.New("short statm")
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// HugePage is the size of a transparent huge page on the platforms Go runs
// Linux on; Make aligns slices of this size or more to it.
const HugePage = 2 << 20
