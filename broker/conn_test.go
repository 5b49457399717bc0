package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/testutil"
)

func TestAcksZeroProduceGetsNoAnswerEvenWhenFaulted(t *testing.T) {
	t.Parallel()
	b, err := New(WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	b.InjectFault(Fault{API: kmsg.Produce, Err: kerr.NotLeaderForPartition.Code})
	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = 0, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = benchBatch(1)
	rt.Partitions = append(rt.Partitions, rp)
	produce.Topics = append(produce.Topics, rt)
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	_, err = nc.Write(append(f.AppendRequest(nil, produce, 1), f.AppendRequest(nil, versions, 2)...))
	require.NoError(t, err)

	// The first answer on the wire is the ApiVersions one.
	var head [8]byte
	_, err = io.ReadFull(nc, head[:])
	require.NoError(t, err)
	assert.Equal(t, int32(2), int32(binary.BigEndian.Uint32(head[4:])), "correlation id of the first answer")
	assert.Equal(t, kerr.NotLeaderForPartition.Code, b.Requests()[0].ErrorCode, "the request log still shows the fault")
}

// trickle is a connection that sends n bytes a hundred at a time and then
// closes. It records the most memory the reader ever committed to the
// frame: the bytes already handed over plus the capacity left in the slice
// it is asked to fill (a bufio.Reader of the minimum size passes a frame's
// slices straight through).
type trickle struct{ left, given, committed int }

func (t *trickle) Read(p []byte) (int, error) {
	t.committed = max(t.committed, t.given+cap(p))
	if t.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), t.left, 100)
	t.left -= n
	t.given += n
	return n, nil
}

// TestFrameMemoryFollowsArrivingBytes: a header claiming a large frame
// followed by a trickle costs the broker little more than the trickle, not
// the claimed size, whether or not the connection has authenticated.
func TestFrameMemoryFollowsArrivingBytes(t *testing.T) {
	t.Parallel()
	for _, claimed := range []int{maxFrameSize, maxSASLFrameSize} {
		src := &trickle{left: 1000}
		c := &clientConn{b: &Broker{}, r: bufio.NewReaderSize(src, 16)}
		_, err := c.readFrame(claimed)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.LessOrEqual(t, src.committed, 64<<10, "memory committed to a %d-byte frame after 1000 bytes", claimed)
		assert.Nil(t, c.frame, "a frame cut short keeps no buffer")
	}
}

// TestNoFrameBufferHeldBetweenRequests: once a request is answered its
// frame buffer goes back to the shared pool, before and after SASL
// authentication alike, so an idle connection holds no frame.
func TestNoFrameBufferHeldBetweenRequests(t *testing.T) {
	t.Parallel()
	b, err := New(WithUsers(map[string]string{"app": "secret"}))
	require.NoError(t, err)
	defer b.Close()
	server, client := net.Pipe()
	defer client.Close()
	c := newClientConn(b, b.nodes[0], server)
	done := make(chan struct{})
	go func() { defer close(done); c.serve() }()

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t")).AppendRequest(nil, versions, 1)
	go client.Write(frame)
	var size [4]byte
	_, err = io.ReadFull(client, size[:])
	require.NoError(t, err)
	_, err = io.ReadFull(client, make([]byte, binary.BigEndian.Uint32(size[:])))
	require.NoError(t, err)
	client.Close()
	<-done
	assert.Nil(t, c.frame, "frame buffer held after the answer")
}

// pipeListener accepts in-memory connections made by dial: a write to one
// returns only once the broker has read all of it, so a test knows what
// the broker has received.
type pipeListener struct {
	net.Listener // the broker's own listener, closed with this one
	conns        chan net.Conn
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	default:
	}
	// Accept on the real listener as well, so that Close ends Accept.
	type result struct {
		c   net.Conn
		err error
	}
	got := make(chan result, 1)
	go func() { c, err := l.Listener.Accept(); got <- result{c, err} }()
	select {
	case c := <-l.conns:
		go func() {
			if r := <-got; r.c != nil {
				r.c.Close()
			}
		}()
		return c, nil
	case r := <-got:
		return r.c, r.err
	}
}

func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

// TestFrameBuffersHoldAtMostTwiceWhatArrived: connections that each sent
// part of a frame declaring the largest size hold at most twice the bytes
// they sent, not the size the frame declared.
func TestFrameBuffersHoldAtMostTwiceWhatArrived(t *testing.T) {
	const conns, sent = 200, 512 << 10
	pl := &pipeListener{conns: make(chan net.Conn)}
	b, err := New(func(c *config) {
		c.wrapListener = func(ln net.Listener) net.Listener { pl.Listener = ln; return pl }
	})
	require.NoError(t, err)
	defer b.Close()
	msg := binary.BigEndian.AppendUint32(nil, maxFrameSize)
	msg = append(msg, make([]byte, sent)...)

	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // twice: pooled buffers go at the second
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	clients := make([]net.Conn, conns)
	for i := range clients {
		clients[i] = pl.dial()
		_, err := clients[i].Write(msg) // returns once the broker has read it all
		require.NoError(t, err)
	}
	grown := int64(heap()) - int64(before)
	perConn := int64(readBufferSize + 16<<10) // the read buffer and the connection's state
	t.Logf("%d connections that sent %d bytes each of a %d-byte frame: heap grew %d bytes (%.2f× what they sent)",
		conns, sent, maxFrameSize, grown, float64(grown)/float64(conns*sent))
	assert.LessOrEqual(t, grown, int64(conns)*(2*sent+perConn), "heap held by connections with partial frames")
	for _, c := range clients {
		c.Close()
	}
}

// TestSmallReadBufferBeforeAuthentication: a connection that must log in
// reads through a small buffer until it has, and until it has sent
// readBufferSize bytes, then a full-size one.
func TestSmallReadBufferBeforeAuthentication(t *testing.T) {
	t.Parallel()
	b := &Broker{creds: &credentials{plain: map[string][]byte{"app": nil}}, ctx: context.Background()}
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	c := newClientConn(b, nil, server)
	defer c.cancel()
	assert.Nil(t, c.r, "no read buffer before the first request")

	c.readBytes = readBufferSize
	go client.Write([]byte{0, 0, 0, 8, 0, 0, 0, 8})
	require.NoError(t, c.awaitRequest())
	size, err := c.readSize()
	require.NoError(t, err)
	assert.Equal(t, int32(8), size)
	assert.LessOrEqual(t, c.r.Size(), 4<<10, "read buffer of a connection that sent enough but has not logged in")

	c.authenticated = true
	c.r.Discard(c.r.Buffered())
	go client.Write([]byte{0, 0, 0, 8})
	require.NoError(t, c.awaitRequest())
	size, err = c.readSize()
	require.NoError(t, err)
	assert.Equal(t, int32(8), size)
	assert.Equal(t, readBufferSize, c.r.Size(), "read buffer after authentication")
}

// TestReadBufferFollowsWhatWasSent: without SASL a connection reads through
// a small buffer until it has sent readBufferSize bytes, then a full-size
// one, which goes back to the broker's free list when it closes.
func TestReadBufferFollowsWhatWasSent(t *testing.T) {
	t.Parallel()
	b := &Broker{ctx: context.Background()}
	server, client := net.Pipe()
	defer client.Close()
	c := newClientConn(b, nil, server)
	defer c.cancel()
	go client.Write([]byte{0, 0, 0, 8})
	require.NoError(t, c.awaitRequest())
	_, err := c.readSize()
	require.NoError(t, err)
	assert.LessOrEqual(t, c.r.Size(), 4<<10, "a connection that sent 12 bytes")
	c.readBytes = readBufferSize
	go client.Write([]byte{0, 0, 0, 8})
	require.NoError(t, c.awaitRequest())
	_, err = c.readSize()
	require.NoError(t, err)
	assert.Equal(t, readBufferSize, c.r.Size(), "a connection that sent readBufferSize bytes")
	server.Close()
	b.connClosed(c)
	assert.Len(t, b.readers, 1, "its buffer is free for the next connection")
}

// TestIdleConnectionHoldsNoReadBuffer: waiting for its next request, a
// connection gives its read buffer back to the broker's free list and holds
// only its small first-read array; bytes that arrive in pieces, or two
// requests in one write, are read whole.
func TestIdleConnectionHoldsNoReadBuffer(t *testing.T) {
	b := &Broker{ctx: context.Background()}
	server, client := net.Pipe()
	defer client.Close()
	c := newClientConn(b, nil, server)
	defer c.cancel()
	frame := func(body string) []byte { return append([]byte{0, 0, 0, byte(len(body))}, body...) }
	go client.Write(append(frame("first request"), frame("second")...))
	for _, want := range []string{"first request", "second"} {
		require.NoError(t, c.awaitRequest())
		size, err := c.readSize()
		require.NoError(t, err)
		body := make([]byte, size)
		_, err = io.ReadFull(c.r, body)
		require.NoError(t, err)
		assert.Equal(t, want, string(body))
	}
	free := func() int {
		b.readersMu.Lock()
		defer b.readersMu.Unlock()
		return len(b.smallReaders)
	}
	waited := make(chan error)
	go func() { waited <- c.awaitRequest() }()
	deadline := time.Now().Add(time.Minute)
	for free() != 1 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	assert.Equal(t, 1, free(), "the idle connection gave its read buffer back")
	go func() {
		client.Write([]byte{0, 0})
		client.Write([]byte{0, 5, 't', 'h', 'i'})
		client.Write([]byte{'r', 'd'})
	}()
	require.NoError(t, <-waited)
	size, err := c.readSize()
	require.NoError(t, err)
	body := make([]byte, size)
	_, err = io.ReadFull(c.r, body)
	require.NoError(t, err)
	assert.Equal(t, "third", string(body), "a request whose bytes arrive in pieces")
	assert.Zero(t, free(), "it took the buffer again")
}

// failingListener fails Accept with EMFILE, as accept does when the process
// is out of file descriptors, until fails runs out, then accepts.
type failingListener struct {
	net.Listener
	fails atomic.Int64
	calls atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// withFailingListener makes the broker accept through fl.
func withFailingListener(fl *failingListener) Option {
	return func(c *config) {
		c.wrapListener = func(ln net.Listener) net.Listener {
			fl.Listener = ln
			return fl
		}
	}
}

// TestAcceptRetriesWhenOutOfFileDescriptors: accepts that fail with
// "too many open files" are retried, and a client then connects and
// produces.
func TestAcceptRetriesWhenOutOfFileDescriptors(t *testing.T) {
	t.Parallel()
	fl := &failingListener{}
	fl.fails.Store(4)
	var logs testutil.LockedBuffer
	b, err := New(WithTopics(TopicSpec{Name: "t", Partitions: 1}), withFailingListener(fl),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	defer b.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(0))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
	assert.GreaterOrEqual(t, fl.calls.Load(), int64(5), "four failed accepts, then the client's")
	assert.Equal(t, 4, strings.Count(logs.String(), "accept failed; retrying"), logs.String())
}

// TestCloseWhileAcceptKeepsFailing: Close returns, and stops the accept
// loop, while every accept fails.
func TestCloseWhileAcceptKeepsFailing(t *testing.T) {
	t.Parallel()
	fl := &failingListener{}
	fl.fails.Store(1 << 62)
	b, err := New(withFailingListener(fl))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return fl.calls.Load() >= 3 }, 20*time.Second, time.Millisecond,
		"the accept loop keeps trying")
	require.NoError(t, b.Close()) // TestMain's goleak check fails if the loop outlives it
}

// TestUnreadAnswersCloseTheConnection: a client that sends fetches and
// never reads the answers has its connection closed once an answer has
// waited the idle timeout, instead of holding a goroutine and its buffers
// forever.
func TestUnreadAnswersCloseTheConnection(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 1}), WithIdleTimeout(200*time.Millisecond))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	value := make([]byte, 256<<10)
	for range 16 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: value}).FirstErr())
	}
	cl.Close()

	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxBytes, fetch.MinBytes, fetch.ReplicaID = 64<<20, 1, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 64<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("never-reads"))
	var reqs []byte
	for i := range 512 { // 128 MiB of answers: more than the socket buffers hold
		reqs = append(reqs, f.AppendRequest(nil, fetch, int32(i))...)
	}
	_, err = nc.Write(reqs)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		b.connsMu.Lock()
		defer b.connsMu.Unlock()
		return len(b.conns) == 0
	}, 20*time.Second, 5*time.Millisecond, "the broker still serves the connection that reads nothing")
}

// TestNegativeTimeoutsRefused: a negative timeout or session bound is a
// mistake, not a silent "none", so New refuses it.
func TestNegativeTimeoutsRefused(t *testing.T) {
	t.Parallel()
	for _, opt := range []Option{WithIdleTimeout(-1), WithReadTimeout(-time.Second), WithTLSHandshakeTimeout(-1),
		WithMinSessionTimeout(-1), WithMaxSessionTimeout(-time.Minute)} {
		b, err := New(opt)
		if err == nil {
			b.Close()
		}
		assert.ErrorContains(t, err, "want 0 (none) or more")
	}
}

// TestLargeAnswersLeaveNoBufferOnTheConnection: a fetch answer is encoded
// into a buffer of the broker's free list and given back once written, so
// a consumer's connection keeps at most maxKeptAnswer bytes between
// answers and the next large answer, on any connection, reuses the buffer.
func TestLargeAnswersLeaveNoBufferOnTheConnection(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: make([]byte, 900<<10)}).FirstErr())
	cl.Close()

	server, client := net.Pipe()
	defer client.Close()
	c := newClientConn(b, b.nodes[0], server)
	done := make(chan struct{})
	go func() { defer close(done); c.serve() }()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t")).AppendRequest(nil, fetchRequest("t", 1, 0, 1<<20), 1)
	fetch := func() int {
		go client.Write(frame)
		var size [4]byte
		_, err := io.ReadFull(client, size[:])
		require.NoError(t, err)
		n := int(binary.BigEndian.Uint32(size[:]))
		_, err = io.ReadFull(client, make([]byte, n))
		require.NoError(t, err)
		return n
	}
	answer := fetch()
	require.Greater(t, answer, 900<<10, "the fetch answer carries the record")
	// The second answer's buffer is taken after the first went back: the
	// connection answers in order.
	made := b.buffers.allocated()
	fetch()
	assert.Equal(t, made, b.buffers.allocated(), "the second answer reused the first's buffer")
	client.Close()
	<-done
	assert.LessOrEqual(t, cap(c.out), maxKeptAnswer, "answer buffer the connection kept")
	assert.GreaterOrEqual(t, b.buffers.freeBytes(), answer, "the answer's buffer went back to the free list")
}

// TestFreeBuffersAreBounded: the free list keeps buffers of its size
// classes, hands them out again, and never holds more than maxFreeBuffers
// bytes however many are given back.
func TestFreeBuffersAreBounded(t *testing.T) {
	t.Parallel()
	var p bufferPool
	first := p.get(3 << 20)
	assert.Equal(t, 4<<20, len(first.b), "a 3 MiB request gets the 4 MiB class")
	assert.GreaterOrEqual(t, first.cost, 4<<20, "its cost counts its memory, alignment included")
	p.put(first)
	assert.Equal(t, first.cost, p.freeBytes())
	assert.Same(t, first, p.get(3<<20), "a buffer given back is handed out again")
	assert.Zero(t, p.freeBytes())
	p.put(&frameBuf{b: make([]byte, 5000), cost: 5000}) // not a class size
	assert.Zero(t, p.freeBytes())
	for range 2 * maxFreeBuffers / (4 << 20) {
		p.put(&frameBuf{b: make([]byte, 4<<20), cost: 4 << 20})
	}
	assert.Equal(t, maxFreeBuffers, p.freeBytes())
	p.put(first)
	large := p.get(maxPooledFrameBuffer + 1)
	assert.Len(t, large.b, maxPooledFrameBuffer+1, "above the largest class a buffer is its own size")
	p.put(large)
	assert.Equal(t, maxFreeBuffers, p.freeBytes())
}

// TestVaryingFramesKeepToOneBuffer: once a connection has read a large
// frame, smaller frames that follow read into the same free buffer
// instead of making (and keeping resident) one of each size class.
func TestVaryingFramesKeepToOneBuffer(t *testing.T) {
	t.Parallel()
	sizes := []int{3 << 20, 1536 << 10, 700 << 10, 3 << 20, 100 << 10}
	var data []byte
	for _, n := range sizes {
		data = append(data, make([]byte, n)...)
	}
	c := &clientConn{b: &Broker{}, r: bufio.NewReaderSize(bytes.NewReader(data), readBufferSize)}
	var made int
	for i, n := range sizes {
		frame, err := c.readFrame(n)
		require.NoError(t, err)
		require.Len(t, frame, n)
		assert.Equal(t, 4<<20, cap(c.frame.b), "frame %d of %d bytes reads into the 4 MiB buffer", i, n)
		c.releaseFrame()
		if i == 0 {
			made = c.b.buffers.allocated()
		}
	}
	assert.Equal(t, made, c.b.buffers.allocated(), "buffers made after the first frame")
}

// TestKeptFramesNeverGoBackToTheFreeList: a produce frame read into memory
// of its own, which the log may keep, never goes to the free list, even
// when its size is a buffer class's; once let go of, it serves the next
// such frame, and frames of other requests still come from the free list,
// to which a large one goes back with its pages released.
func TestKeptFramesNeverGoBackToTheFreeList(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	produce := make([]byte, size) // api key 0: Produce
	fetch := make([]byte, size)
	binary.BigEndian.PutUint16(fetch, uint16(kmsg.Fetch))
	var data []byte
	for _, f := range [][]byte{produce, produce, fetch} {
		data = append(data, f...)
	}
	c := &clientConn{b: &Broker{}, r: bufio.NewReaderSize(bytes.NewReader(data), readBufferSize)}
	c.keepFrames, c.lastFrame = true, size
	first, err := c.readFrame(size)
	require.NoError(t, err)
	assert.True(t, c.frame.kept(), "a produce frame on a connection that keeps them")
	c.releaseFrame() // nothing stored in it: the loan ends here
	assert.Zero(t, c.b.buffers.freeBytes(), "the kept frame is not on the free list")

	second, err := c.readFrame(size)
	require.NoError(t, err)
	assert.True(t, c.frame.kept())
	assert.Equal(t, unsafe.SliceData(first), unsafe.SliceData(second), "the next produce frame reuses it")
	assert.Equal(t, 2, c.b.buffers.ownedFrames())
	c.releaseFrame()

	_, err = c.readFrame(size)
	require.NoError(t, err)
	assert.False(t, c.frame.kept(), "another request's frame")
	fb := c.frame
	c.releaseFrame()
	assert.True(t, c.b.buffers.getFree(1) == fb && fb.released, "its buffer went back released")
}
