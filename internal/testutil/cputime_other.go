//go:build !unix

package testutil

import "time"

// ProcessCPU reports false: the process's CPU time is not read here.
func ProcessCPU() (time.Duration, bool) { return 0, false }
