//go:build heavy

package broker

import (
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMemoryOfConcurrentLargeAnswers: four connections ask at once, each
// with a request of a few dozen bytes, for the ConsumerGroupDescribe of a
// group whose member subscribes to 9 MB of topic names: the answers are
// encoded and written one at a time, under the answer budget, so the peak
// is about one answer's, not four; and the memory goes back after. The
// test measures the same without the budget, for its log.
func TestMemoryOfConcurrentLargeAnswers(t *testing.T) {
	if raceDetector {
		t.Skip("resident memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	defer b.Close()
	const groups, names = 4, 60_000
	for g := range groups {
		bigSubscriptionGroup(t, b, fmt.Sprintf("big%d", g), names)
	}
	describeAll := func() (peak, after int64, answer int) {
		runtime.GC()
		debug.FreeOSMemory()
		before := residentBytes(t)
		require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
		sizes := make(chan int, groups)
		errs := make(chan error, groups)
		for g := range groups {
			go func() {
				nc, err := net.Dial("tcp", b.Addr())
				if err != nil {
					errs <- err
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(2 * time.Minute))
				d := kmsg.NewPtrConsumerGroupDescribeRequest()
				d.SetVersion(0)
				d.Groups = []string{fmt.Sprintf("big%d", g)}
				if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, d, 1)); err != nil {
					errs <- err
					return
				}
				var size [4]byte
				if _, err := io.ReadFull(nc, size[:]); err != nil {
					errs <- err
					return
				}
				n := int64(size[0])<<24 | int64(size[1])<<16 | int64(size[2])<<8 | int64(size[3])
				_, err = io.CopyN(io.Discard, nc, n)
				sizes <- int(n)
				errs <- err
			}()
		}
		for range groups {
			require.NoError(t, <-errs, "every describe answered")
			answer = max(answer, <-sizes)
		}
		peak = peakResident(t) - before
		// The broker gives the memory back once the last answer is
		// written, after the client has read it: wait for it, with a
		// deadline; it never decides the outcome by timing.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if after = residentBytes(t) - before; after < 16<<20 {
				break
			}
		}
		return peak, after, answer
	}
	b.largeAnswerForTest = math.MaxInt
	peakWithout, afterWithout, _ := describeAll()
	b.largeAnswerForTest = 0
	peak, after, answer := describeAll()
	t.Logf("four concurrent describes of %d-byte answers: +%d MiB at peak, +%d MiB after (without the budget: +%d MiB, +%d MiB after)",
		answer, peak>>20, after>>20, peakWithout>>20, afterWithout>>20)
	require.Greater(t, answer, answerBudgetBytes/2, "each answer takes more than half the budget, so they go one at a time")
	assert.Less(t, peak, int64(3*answer), "the answers are encoded one at a time")
	assert.Less(t, after, int64(16<<20), "memory of the answers given back")
}
