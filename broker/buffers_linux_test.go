package broker

import (
	"bufio"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
