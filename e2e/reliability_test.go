package e2e_test

// Reliability over raw TCP, beyond the malformed frames of
// badinput_test.go: a client that dribbles its request a byte at a time,
// and thousands of connections opened and dropped.

import (
	"bytes"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// TestSlowClientDoesNotBlockOthers sends an ApiVersions request one byte at
// a time, slowloris style. Between bytes another client produces and is
// answered; once the last byte is in, the slow client gets its answer too.
func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "fast", Partitions: 1}))
	fast := newClient(t, b.Addr())

	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "slowloris", "1"
	wire := kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow")).AppendRequest(nil, req, 42)
	slow := dialRaw(t, b.Addr())

	// The dribble: a few single bytes with a pause, each followed by a
	// produce on the other connection that must be answered while the
	// slow frame is incomplete. The pause is the point of the test (a
	// client that really is slow), not a wait for state.
	const dribble = 3
	for i := 0; i < dribble; i++ {
		_, err := slow.Write(wire[i : i+1])
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		produceSync(t, fast, &kgo.Record{Topic: "fast", Value: []byte{byte(i)}})
	}
	_, err := slow.Write(wire[dribble:])
	require.NoError(t, err)

	body := readFrame(t, slow)
	require.Equal(t, int32(42), int32(binary.BigEndian.Uint32(body)))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	require.NoError(t, resp.ReadFrom(body[4:]))
	assert.Zero(t, resp.ErrorCode)
	assert.NotEmpty(t, resp.ApiKeys)
	assert.Len(t, consumeAll(t, b.Addr(), "fast", dribble), dribble, "every produce during the dribble was stored")
}

// TestConnectionChurn opens and drops 2,000 connections, 50 at a time, in
// every way a client can go away: at once, after a partial length, after a
// partial request, after a whole request without reading the answer, and
// after a produce. The broker then still serves, and once its clients are
// gone no connection goroutine is left (goleak checks the package's end
// too).
func TestConnectionChurn(t *testing.T) {
	// Not parallel: it counts the connection goroutines of every broker in
	// the process.
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "churn", Partitions: 2}))
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("churn"))
	apiVersions := fm.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	metadata := fm.AppendRequest(nil, md, 2)
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "churn"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = encodeBatch(func(*kmsg.RecordBatch) {})
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	produceWire := fm.AppendRequest(nil, produce, 3)

	payloads := [][]byte{
		nil,                        // connect and drop
		apiVersions[:2],            // half a length
		metadata[:len(metadata)-3], // a request cut short
		append(bytes.Clone(apiVersions), metadata...), // answered, never read
		produceWire, // a produce, answer never read
	}
	const total, parallel = 2000, 50
	var wg sync.WaitGroup
	errs := make(chan error, total)
	next := make(chan int)
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
				if err != nil {
					errs <- err
					continue
				}
				if p := payloads[i%len(payloads)]; len(p) > 0 {
					_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
					if _, err := c.Write(p); err != nil {
						errs <- err
					}
				}
				if i%2 == 0 && i%len(payloads) != len(payloads)-1 {
					c.(*net.TCPConn).SetLinger(0) // reset rather than close; not the produces, which must arrive
				}
				c.Close()
			}
		}()
	}
	for i := 0; i < total; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("churn: %v", err)
	}

	// Every produce was sent whole and closed with a FIN, so the broker
	// read and stored each; then one more through a real client.
	want := total/len(payloads) + 1
	cl := newClient(t, b.Addr(), kgo.ConsumeTopics("churn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	produceSync(t, cl, &kgo.Record{Topic: "churn", Partition: 1, Value: []byte("after")})
	got := pollN(t, cl, want)
	assert.Len(t, got, want, "every produce of the churn and the one after it")
	cl.Close()

	fixtures.WaitFor(t, "every connection goroutine to exit", func() bool { return serveGoroutines() == 0 })
}

// serveGoroutines counts the broker's connection goroutines.
func serveGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "broker.(*clientConn).serve(")
}

// TestHugePartitionCountsRefused: in the kafka profile, where no VAST view
// limit bounds creation, one request may not create more than Kafka's
// controller allows (10,000 partitions) — found by FuzzConn, where a
// CreateTopics for a billion partitions hung the broker.
func TestHugePartitionCountsRefused(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("small", 1))
	adm := k.Admin()
	_, err := adm.CreateTopic(ctxT(t), 1<<30, 1, nil, "huge")
	assert.ErrorIs(t, err, kerr.PolicyViolation)
	many, err := adm.CreateTopics(ctxT(t), 5001, 1, nil, "half-a", "half-b")
	require.NoError(t, err)
	for _, r := range many {
		assert.ErrorIs(t, r.Err, kerr.PolicyViolation, r.Topic)
	}
	grown, err := adm.UpdatePartitions(ctxT(t), 1<<30, "small")
	require.NoError(t, err)
	assert.ErrorIs(t, grown["small"].Err, kerr.PolicyViolation)
	_, err = adm.CreateTopic(ctxT(t), 10_000, 1, nil, "at-the-limit")
	assert.NoError(t, err)
	assert.Len(t, k.Topics(), 2)
}
