//go:build unix

package broker

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the test process has
// used, every thread counted, or false where it cannot be read.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
