package broker

import (
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
