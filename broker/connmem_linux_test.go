package broker

import (
	"net"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heapNow returns the heap's live and unswept bytes and its goal, without
// running a collection: what the process holds as it is.
func heapNow() (inUse, goal uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// TestMemoryOfABurstOfConnections: connections hold memory in proportion
// to what they sent: 4,000 connections that each sent an ApiVersions hold
// a small read buffer each, not 64 KiB (68 KiB a connection before, 6 KiB
// now), and once they close the broker collects what they left, so it does
// not wait, resident, for the heap goal they raised (+259 MiB with a goal
// of 533 MiB before, +8 MiB now).
func TestMemoryOfABurstOfConnections(t *testing.T) {
	if raceDetector {
		t.Skip("memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	const n = 4000
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	open := func() int {
		b.connsMu.Lock()
		defer b.connsMu.Unlock()
		return len(b.conns)
	}
	runtime.GC()
	base, _ := heapNow()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("burst")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range n {
		nc, err := net.Dial("tcp", b.Addr())
		require.NoError(t, err)
		conns = append(conns, nc)
		require.NoError(t, nc.SetDeadline(time.Now().Add(time.Minute)))
		_, err = nc.Write(frame)
		require.NoError(t, err)
		require.NoError(t, readAnswer(nc))
	}
	runtime.GC()
	live, _ := heapNow()
	perConn := (int64(live) - int64(base)) / n
	t.Logf("%d open connections that sent %d B each: heap +%d KiB, %d B a connection", n, len(frame), (int64(live)-int64(base))>>10, perConn)
	assert.Less(t, perConn, int64(16<<10), "an open connection holds a read buffer in proportion to what it sent")

	for _, nc := range conns {
		nc.Close()
	}
	conns = nil
	require.Eventually(t, func() bool { return open() == 0 }, time.Minute, time.Millisecond)
	// The broker's collection runs in the background: wait for it, with a
	// deadline; it never decides the outcome by timing.
	var inUse, goal uint64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if inUse, goal = heapNow(); int64(inUse)-int64(base) < 32<<20 {
			break
		}
	}
	t.Logf("after they closed, without a collection of the test's: heap +%d KiB, goal %d MiB", (int64(inUse)-int64(base))>>10, goal>>20)
	assert.Less(t, int64(inUse)-int64(base), int64(32<<20), "what closed connections left is collected")
}
