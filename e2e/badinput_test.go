package e2e_test

import (
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/testutil"
)

// header builds a request header v1: key, version, correlation id, client id.
func header(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
}

// TestBadInputClosesOnlyThatConnection sends malformed frames; each closes
// its own connection while a client on another connection keeps working.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "ok", Partitions: 1}))
	healthy := newClient(t, b.Addr())
	produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte("before")})

	cases := map[string][]byte{
		"negative length":        frame(-5, nil),
		"oversized length":       frame(200<<20, nil),
		"length below header":    frame(3, []byte{0, 1, 2}),
		"unknown api key":        frame(int32(len(header(999, 0, 1))), header(999, 0, 1)),
		"key not served":         frame(int32(len(header(int16(kmsg.InitProducerID), 0, 1))), header(int16(kmsg.InitProducerID), 0, 1)),
		"version above table":    frame(int32(len(header(3, 99, 1))), header(3, 99, 1)),
		"version below table":    frame(int32(len(header(0, 0, 1))), header(0, 0, 1)),
		"truncated body":         frame(int32(len(header(3, 4, 1))+2), append(header(3, 4, 1), 0, 0)),
		"array longer than body": frame(16, append(header(3, 4, 1), 0x7f, 0xff, 0xff, 0xff, 0, 0)),
		"flexible, bad tags":     frame(int32(len(header(3, 12, 1))+1), append(header(3, 12, 1), 0xff)),
		"bad client id length":   frame(12, []byte{0, 3, 0, 4, 0, 0, 0, 1, 0x80, 0, 0, 0}),
		"frame cut short":        frame(100, header(3, 4, 1)),
	}
	for name, bytes := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, b.Addr())
			_, err := c.Write(bytes)
			require.NoError(t, err)
			if name == "frame cut short" {
				c.(*net.TCPConn).CloseWrite()
			}
			assertClosed(t, c)
			produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte(name)})
		})
	}
	got := consumeAll(t, b.Addr(), "ok", len(cases)+1)
	assert.Len(t, got, len(cases)+1, "every record acknowledged around the bad input is there")
}

// TestCorruptBatchIsRefused answers a batch with a bad CRC with
// CORRUPT_MESSAGE and two batches in one partition with INVALID_RECORD,
// keeping the connection.
func TestCorruptBatchIsRefused(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "c", Partitions: 1}))
	c := dialRaw(t, b.Addr())
	send := func(records []byte) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "c"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrProduceResponse()
		roundTrip(t, c, 9, req, resp, 7)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	good := encodeBatch(func(*kmsg.RecordBatch) {})
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	assert.Equal(t, int16(2), send(bad), "CORRUPT_MESSAGE")
	assert.Equal(t, int16(87), send(append(append([]byte(nil), good...), good...)), "INVALID_RECORD")
	assert.Equal(t, int16(2), send(good[:20]), "CORRUPT_MESSAGE for a truncated batch")
	assert.Equal(t, int16(0), send(good), "the same connection still produces")
}

// TestStalledRequestIsClosed: a connection that starts a request and stops
// sending before its end is closed after the read timeout instead of
// holding its buffer, here before SASL login, while a client on another
// connection keeps working.
func TestStalledRequestIsClosed(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("ok", 1), fixtures.User("app", "app-secret"),
		fixtures.BrokerOptions(broker.WithReadTimeout(100*time.Millisecond)))
	healthy := k.Client()
	apiVersions := header(int16(kmsg.ApiVersions), 0, 1)
	cases := map[string][]byte{
		"part of the size":         {0, 0},
		"only a size":              frame(1000, nil),
		"only the largest size":    frame(512<<10, nil),
		"half of an ApiVersions":   frame(int32(len(apiVersions)+100), apiVersions),
		"half of the largest size": frame(512<<10, make([]byte, 256<<10)),
	}
	for name, bytes := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, k.Addr())
			_, err := c.Write(bytes)
			require.NoError(t, err)
			assertClosed(t, c)
			produceSync(t, healthy, &kgo.Record{Topic: "ok", Value: []byte(name)})
		})
	}
}

// TestIdleConnectionsAreClosed: a connection that sends no request for the
// idle timeout is closed; a request the broker is still answering (a long
// poll) is not idleness; a client whose idle connections were closed
// reconnects.
func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	var logs testutil.LockedBuffer
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithIdleTimeout(300*time.Millisecond),
		broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}),
		broker.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))

	assertClosed(t, dialRaw(t, b.Addr()))

	// An empty fetch in the kafka profile waits half its MaxWait, 1s, for
	// records: longer than the idle timeout.
	c := dialRaw(t, b.Addr())
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes, fetch.ReplicaID = 2000, 1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp := kmsg.NewPtrFetchResponse()
	roundTrip(t, c, 11, fetch, resp, 1)
	require.Len(t, resp.Topics, 1)
	assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	assertClosed(t, c)

	// Once every connection of an idle client is closed, it reconnects.
	var connects connectCounter
	cl := newClient(t, b.Addr(), kgo.ClientID("idler"), kgo.WithHooks(&connects))
	produceSync(t, cl, &kgo.Record{Topic: "t", Value: []byte("before")})
	fixtures.WaitFor(t, "the broker to close every connection of the idle client", func() bool {
		return int64(strings.Count(logs.String(), "client_id=idler idle_timeout")) >= connects.n.Load()
	})
	produceSync(t, cl, &kgo.Record{Topic: "t", Value: []byte("after")})
}

// connectCounter counts the connections a kgo client opens.
type connectCounter struct{ n atomic.Int64 }

func (c *connectCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}
