package testutil

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestLockedBufferTakesConcurrentWrites: writers and readers at once lose
// nothing (and the race detector sees no race).
func TestLockedBufferTakesConcurrentWrites(t *testing.T) {
	t.Parallel()
	var buf LockedBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&buf, "%d\n", i)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	assert.Len(t, buf.String(), 8*100*2)
}

// TestProcessCPUGrowsWithWork: the CPU time read after spinning is more
// than before it, where it can be read (every unix).
func TestProcessCPUGrowsWithWork(t *testing.T) {
	start, ok := ProcessCPU()
	if !ok {
		t.Skipf("the process's CPU time is not read on %s", runtime.GOOS)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if now, _ := ProcessCPU(); now > start {
			return
		}
	}
	t.Fatal("the process used no CPU time in 30 s of spinning")
}
