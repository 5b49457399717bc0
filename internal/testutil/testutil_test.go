package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestNoWallClockFindsItsCalls: NoWallClock reports a package that calls
// time.Now, and passes one that only uses time's types.
func TestNoWallClockFindsItsCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644))
	}
	write("package p\n\nimport \"time\"\n\nfunc Age(now time.Time, d time.Duration) time.Time { return now.Add(d) }\n")
	rt := &recordingTB{TB: t}
	NoWallClock(rt, dir)
	assert.Empty(t, rt.errors)

	write("package p\n\nimport clk \"time\"\n\nfunc Now() clk.Time { return clk.Now() }\n")
	rt = &recordingTB{TB: t}
	NoWallClock(rt, dir)
	require.Len(t, rt.errors, 1)
	assert.Contains(t, rt.errors[0], "time.Now reads the wall clock")
}

// recordingTB records what a helper reports instead of failing the test.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
