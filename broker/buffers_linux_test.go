package broker

import (
	"bufio"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/pages"
)

// residentBytes returns this process's resident memory.
func residentBytes(t *testing.T) int64 {
	n, err := pages.Resident(os.Getpid())
	require.NoError(t, err)
	return n
}

// TestReleasedBuffersLeaveResidentMemory: a buffer given back with
// putReleased stops counting in the process's resident memory until it is
// taken again, and a free resident buffer serves before a released one, so
// that a producer's frames of varying sizes keep one buffer in memory.
func TestReleasedBuffersLeaveResidentMemory(t *testing.T) {
	var p bufferPool
	big := p.get(maxPooledFrameBuffer)
	for i := range big.b {
		big.b[i] = 1
	}
	before := residentBytes(t)
	p.putReleased(big)
	assert.Greater(t, before-residentBytes(t), int64(maxPooledFrameBuffer*3/4), "resident memory given back")
	assert.Equal(t, big.cost, p.freeBytes(), "a released buffer stays on the free list")

	got := p.get(1 << 20)
	assert.True(t, got == big, "the released buffer is handed out again")
	assert.False(t, got.released, "get maps back in what it hands out")
	got.b[len(got.b)-1] = 2 // writable past what was asked for, too

	mid := p.get(2 << 20) // a resident buffer of a smaller class
	p.putReleased(big)
	p.put(mid)
	assert.True(t, p.getFree(1<<20) == mid, "the smallest resident buffer that fits serves first")
	assert.True(t, p.getFree(1<<20) == big, "then a released one")

	small := p.get(minReleased / 2)
	p.putReleased(small)
	assert.False(t, small.released, "buffers below minReleased keep their pages")
}

// TestDeclaredSizeDoesNotMapReleasedBuffers: a frame whose header declares
// a size a released free buffer fits may take that buffer, but its pages
// come back only as the frame's bytes arrive: a header and a trickle cannot
// make the free list resident again.
func TestDeclaredSizeDoesNotMapReleasedBuffers(t *testing.T) {
	b := &Broker{}
	big := b.buffers.get(maxPooledFrameBuffer)
	for i := range big.b {
		big.b[i] = 1
	}
	b.buffers.putReleased(big)
	before := residentBytes(t)
	src := &trickle{left: 1000}
	c := &clientConn{b: b, r: bufio.NewReaderSize(src, 16)}
	_, err := c.readFrame(maxPooledFrameBuffer)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, residentBytes(t)-before, int64(maxPooledFrameBuffer/4), "resident memory a 1000-byte trickle brought back")
	assert.True(t, b.buffers.getFree(1) == big && big.released, "the buffer went back still released")
}

// TestKeptFrameMemoryFollowsArrivingBytes: a produce frame read into memory
// of its own may be allocated at its declared size (up to maxKeptGrowth
// times the connection's previous frame), but its pages are mapped in only
// a step ahead of its bytes, and given back if the frame is cut short.
func TestKeptFrameMemoryFollowsArrivingBytes(t *testing.T) {
	b := &Broker{}
	c := &clientConn{b: b, r: bufio.NewReaderSize(&trickle{left: 1000}, 16)} // zeros: api key 0, Produce
	c.keepFrames, c.lastFrame = true, 16<<20
	before := residentBytes(t)
	_, err := c.readFrame(64 << 20)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 1, b.buffers.ownedFrames(), "read into memory of its own")
	assert.Less(t, residentBytes(t)-before, int64(8<<20), "resident memory a 1000-byte trickle brought in")
	assert.Equal(t, 64<<20, b.buffers.keptFreeBytes(), "the buffer went back for reuse")
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
