//go:build !unix

package bench

import "time"

// SelfCPU returns 0 where getrusage is missing: the client CPU rows of
// vastbench then read 0.
func SelfCPU() time.Duration { return 0 }
