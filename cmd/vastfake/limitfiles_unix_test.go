//go:build unix

package main

import "syscall"

// limitFiles sets this process's file descriptor limit, soft and hard, to n.
func limitFiles(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
}
