//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time, user and system, that the process has
// used, every thread counted (not its children's), or false where it cannot
// be read.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
