//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// limitFiles sets this process's file descriptor limit, soft and hard, to n.
func limitFiles(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}

// maxRSS returns the peak resident memory of an exited process, in bytes.
func maxRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss), true // bytes there
	}
	return int64(ru.Maxrss) << 10, true // KiB on Linux and the BSDs
}
