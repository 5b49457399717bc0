//go:build heavy

package broker

// The memory bounds of docs/limits.md that read resident memory from /proc
// (Linux): heavy, so test.sh runs them apart (go test -tags heavy), with
// the race detector and again without it, whose shadow memory hides
// resident memory.

import (
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
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

// TestMemoryOfLargeRequestsGoesBack: ten OffsetCommit requests of 1,000
// partitions with 64 KiB of metadata each (64 MiB, under the frame bound),
// all refused with OFFSET_METADATA_TOO_LARGE, cost the broker at most about
// twice one request while they are read and decoded (the frame and its
// decoded copy, not a pile of both across requests), and leave little
// resident once answered: the frame's pages go back and a collection runs
// after each (reclaimLarge).
func TestMemoryOfLargeRequestsGoesBack(t *testing.T) {
	if raceDetector {
		t.Skip("resident memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	b, err := New(WithTopics(TopicSpec{Name: "big", Partitions: 1000}))
	require.NoError(t, err)
	defer b.Close()
	meta := strings.Repeat("m", 64<<10)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = "g", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "big"
	for p := range int32(1000) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Metadata = p, &meta
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("big")).AppendRequest(nil, req, 1)
	require.Greater(t, len(frame), 62<<20)
	meta, req = "", nil

	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(2*time.Minute)))
	runtime.GC()
	debug.FreeOSMemory()
	before := residentBytes(t)
	// Peak resident memory from here on (writing 5 resets VmHWM).
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
	for i := range 10 {
		_, err := nc.Write(frame)
		require.NoError(t, err)
		body := readFrame(t, nc)[5:] // correlation id, header tags
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.SetVersion(8)
		require.NoError(t, resp.ReadFrom(body))
		require.Len(t, resp.Topics, 1)
		for _, p := range resp.Topics[0].Partitions {
			require.Equal(t, kerr.OffsetMetadataTooLarge.Code, p.ErrorCode, "request %d, partition %d", i, p.Partition)
		}
	}
	peak := peakResident(t) - before
	assert.Less(t, peak, int64(len(frame))*5/2, "about twice the request while it is read and decoded")
	var after int64
	assert.Eventually(t, func() bool {
		after = residentBytes(t) - before
		return after < 16<<20
	}, 30*time.Second, 10*time.Millisecond, "memory of the refused requests given back")
	runtime.KeepAlive(frame)
	t.Logf("request %d MiB: peak +%d MiB, after +%d MiB", len(frame)>>20, peak>>20, after>>20)
}

// peakResident returns this process's peak resident memory (VmHWM).
func peakResident(t *testing.T) int64 {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestMemoryOfConcurrentLargeRequests: four connections send a large
// request of small elements at once (an OffsetCommit of a million
// partitions without metadata, whose decoded copy costs several times its
// bytes): each is answered, they are decoded and handled one at a time, so
// the decoded copies never add up, and the memory goes back after.
func TestMemoryOfConcurrentLargeRequests(t *testing.T) {
	if raceDetector {
		t.Skip("resident memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = "g", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "none"
	rt.Partitions = make([]kmsg.OffsetCommitRequestTopicPartition, 1_100_000)
	for p := range rt.Partitions {
		rt.Partitions[p] = kmsg.NewOffsetCommitRequestTopicPartition()
		rt.Partitions[p].Partition = int32(p)
	}
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("big")).AppendRequest(nil, req, 1)
	require.GreaterOrEqual(t, len(frame), reclaimAfter+4)
	req, rt = nil, kmsg.OffsetCommitRequestTopic{}

	const conns = 4
	runtime.GC()
	debug.FreeOSMemory()
	before := residentBytes(t)
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
	errs := make(chan error, conns)
	for range conns {
		go func() {
			nc, err := net.Dial("tcp", b.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(2 * time.Minute))
			if _, err := nc.Write(frame); err != nil {
				errs <- err
				return
			}
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err != nil {
				errs <- err
				return
			}
			_, err = io.CopyN(io.Discard, nc, int64(size[0])<<24|int64(size[1])<<16|int64(size[2])<<8|int64(size[3]))
			errs <- err
		}()
	}
	for range conns {
		require.NoError(t, <-errs, "every request answered")
	}
	peak := peakResident(t) - before
	// Measured: about +300 MiB at peak with turns (the four frames, one
	// request's decoded copy and answer, and the collector's headroom),
	// +700 MiB without them, with 150-200 MiB still resident after.
	assert.Less(t, peak, int64(len(frame))*24, "the decoded copies do not add up: large requests take turns")
	var after int64
	assert.Eventually(t, func() bool {
		after = residentBytes(t) - before
		return after < 16<<20
	}, 30*time.Second, 10*time.Millisecond, "memory of the requests given back")
	runtime.KeepAlive(frame)
	t.Logf("%d requests of %d MiB at once: peak +%d MiB, after +%d MiB", conns, len(frame)>>20, peak>>20, after>>20)
}
