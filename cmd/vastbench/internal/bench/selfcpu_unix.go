//go:build unix

package bench

import (
	"syscall"
	"time"
)

// SelfCPU is this process's own CPU time (user and system), not its
// children's.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
