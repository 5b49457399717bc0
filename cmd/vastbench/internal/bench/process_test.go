package bench

import (
	"crypto/sha256"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcUsageCountsThisProcess: the CPU time read from /proc grows with
// work done and agrees in size with getrusage, and the resident set is
// non-zero.
func TestProcUsageCountsThisProcess(t *testing.T) {
	t.Parallel()
	u0, err := ProcUsage(os.Getpid())
	require.NoError(t, err)
	self0 := SelfCPU()
	sum := sha256.Sum256(nil)
	for range 200_000 {
		sum = sha256.Sum256(sum[:])
	}
	u1, err := ProcUsage(os.Getpid())
	require.NoError(t, err)
	self1 := SelfCPU()
	assert.Greater(t, u1.CPU, u0.CPU)
	assert.Positive(t, u1.RSS)
	// Both count every thread; they differ by accounting granularity only.
	assert.InDelta(t, (self1 - self0).Seconds(), (u1.CPU - u0.CPU).Seconds(), 0.1+0.5*(self1-self0).Seconds())
}
