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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAcksZeroProduceGetsNoAnswerEvenWhenFaulted(t *testing.T) {
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
	for _, claimed := range []int{maxFrameSize, maxSASLFrameSize} {
		src := &trickle{left: 1000}
		c := &clientConn{b: &Broker{}, r: bufio.NewReaderSize(src, 16)}
		_, err := c.readFrame(claimed)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.LessOrEqual(t, src.committed, 64<<10, "memory committed to a %d-byte frame after 1000 bytes", claimed)
		assert.Nil(t, c.frame, "a frame cut short keeps no buffer")
	}
}

// TestNoLargeBufferKeptBeforeAuthentication: a client that must still
// authenticate and sends one large frame does not leave the connection
// holding a buffer that size; after authentication it does, for speed.
func TestNoLargeBufferKeptBeforeAuthentication(t *testing.T) {
	const size = 300 << 10
	b := &Broker{cfg: config{users: map[string]string{"app": "secret"}}}
	c := &clientConn{b: b, r: bufio.NewReader(bytes.NewReader(make([]byte, 2*size)))}
	_, err := c.readFrame(size)
	require.NoError(t, err)
	assert.LessOrEqual(t, cap(c.frame), 64<<10, "buffer kept before authentication")

	c.authenticated = true
	_, err = c.readFrame(size)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cap(c.frame), size, "buffer kept after authentication")
}

// TestSmallReadBufferBeforeAuthentication: a connection that must log in
// reads through a small buffer until it has, then a full-size one.
func TestSmallReadBufferBeforeAuthentication(t *testing.T) {
	b := &Broker{cfg: config{users: map[string]string{"app": "secret"}}, ctx: context.Background()}
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	c := newClientConn(b, server)
	defer c.cancel()
	assert.LessOrEqual(t, c.r.Size(), 4<<10, "read buffer before authentication")

	c.authenticated = true
	go client.Write([]byte{0, 0, 0, 8})
	size, err := c.readSize()
	require.NoError(t, err)
	assert.Equal(t, int32(8), size)
	assert.Equal(t, readBufferSize, c.r.Size(), "read buffer after authentication")
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

// syncBuffer is a bytes.Buffer a logger and a test may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestAcceptRetriesWhenOutOfFileDescriptors: accepts that fail with
// "too many open files" are retried, and a client then connects and
// produces.
func TestAcceptRetriesWhenOutOfFileDescriptors(t *testing.T) {
	fl := &failingListener{}
	fl.fails.Store(4)
	var logs syncBuffer
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
	for _, opt := range []Option{WithIdleTimeout(-1), WithReadTimeout(-time.Second), WithTLSHandshakeTimeout(-1),
		WithMinSessionTimeout(-1), WithMaxSessionTimeout(-time.Minute)} {
		b, err := New(opt)
		if err == nil {
			b.Close()
		}
		assert.ErrorContains(t, err, "want 0 (none) or more")
	}
}
