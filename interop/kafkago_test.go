package interop_test

// segmentio/kafka-go against vastfake.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// kgoEnv is one test's kafka-go plumbing: its own Transport (kafka-go's
// default one is global and caches metadata across tests) and a Client on
// it.
type kgoEnv struct {
	addr string
	tr   *kafka.Transport
	cl   *kafka.Client
}

func newKgoEnv(t *testing.T, b *broker.Broker) *kgoEnv {
	tr := &kafka.Transport{ClientID: "vastfake-interop"}
	t.Cleanup(tr.CloseIdleConnections)
	return &kgoEnv{addr: b.Addr(), tr: tr, cl: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: tr, Timeout: 10 * time.Second}}
}

// writer returns a synchronous Writer with VAST-compatible settings: no
// compression, acks=all, a short batch timeout (the default 1 s would delay
// every synchronous write), and one attempt so refusals surface at once.
// The balancer sends record i (key "order-i") to partition i%3.
func (e *kgoEnv) writer(t *testing.T, edit func(*kafka.Writer)) *kafka.Writer {
	w := &kafka.Writer{
		Addr:         kafka.TCP(e.addr),
		Transport:    e.tr,
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  1,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			var i int
			if _, err := fmt.Sscanf(string(m.Key), "order-%d", &i); err != nil {
				return partitions[0]
			}
			return partitions[i%len(partitions)]
		}),
	}
	if edit != nil {
		edit(w)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// writeErr returns the one error of a WriteMessages call: kafka-go returns
// refusals of produce requests as WriteErrors (one per message) and metadata
// failures as a plain error.
func writeErr(err error) error {
	var werr kafka.WriteErrors
	if errors.As(err, &werr) {
		for _, e := range werr {
			if e != nil {
				return e
			}
		}
	}
	return err
}

// readPartition reads n messages of one partition from the first offset,
// with no group.
func (e *kgoEnv) readPartition(t *testing.T, topic string, partition, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{e.addr},
		Topic:     topic,
		Partition: partition,
		MaxWait:   100 * time.Millisecond,
	})
	defer r.Close()
	ctx := ctxT(t)
	var out []kafka.Message
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		require.NoError(t, err, "read %d of %d messages of %s/%d", len(out), n, topic, partition)
		out = append(out, m)
	}
	return out
}

// TestKafkaGoProduceConsume: create a topic with Client.CreateTopics, write
// keyed messages to three partitions, read each partition back without a
// group, check offsets with Client.ListOffsets.
func TestKafkaGoProduceConsume(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		e := newKgoEnv(t, b)
		ctx := ctxT(t)
		ct, err := e.cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "orders", NumPartitions: 3, ReplicationFactor: 1}}})
		require.NoError(t, err)
		require.NoError(t, ct.Errors["orders"])

		var msgs []kafka.Message
		for i := 0; i < 30; i++ {
			msgs = append(msgs, kafka.Message{
				Topic: "orders", Key: []byte(key(i)), Value: []byte(value(i)),
				Headers: []kafka.Header{{Key: "h", Value: []byte("v")}},
			})
		}
		require.NoError(t, e.writer(t, nil).WriteMessages(ctx, msgs...))

		for p := 0; p < 3; p++ {
			got := e.readPartition(t, "orders", p, 10)
			for j, m := range got {
				i := j*3 + p
				assert.Equal(t, p, m.Partition)
				assert.Equal(t, int64(j), m.Offset, "partition %d is read in order", p)
				assert.Equal(t, key(i), string(m.Key))
				assert.Equal(t, value(i), string(m.Value))
				assert.Equal(t, []kafka.Header{{Key: "h", Value: []byte("v")}}, m.Headers)
				assert.Equal(t, int64(10), m.HighWaterMark, "high watermark in the fetch of partition %d", p)
			}
		}
		lo, err := e.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			"orders": {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1), kafka.FirstOffsetOf(2), kafka.LastOffsetOf(2)},
		}})
		require.NoError(t, err)
		require.Len(t, lo.Topics["orders"], 3)
		for _, po := range lo.Topics["orders"] {
			require.NoError(t, po.Error)
			assert.Equal(t, int64(0), po.FirstOffset, "first offset of partition %d", po.Partition)
			assert.Equal(t, int64(10), po.LastOffset, "last offset (high watermark) of partition %d", po.Partition)
		}
	})
}

// TestKafkaGoCompression: a compressed write is refused under VAST with
// UNSUPPORTED_COMPRESSION_TYPE and accepted and read back under kafka.
func TestKafkaGoCompression(t *testing.T) {
	t.Parallel()
	codecs := []compress.Compression{kafka.Snappy, kafka.Gzip}
	text := strings.Repeat("compress me ", 100)
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		e := newKgoEnv(t, b)
		for _, codec := range codecs {
			w := e.writer(t, func(w *kafka.Writer) { w.Topic, w.Compression = "z", codec })
			err := writeErr(w.WriteMessages(ctxT(t), kafka.Message{Value: []byte(text)}))
			if profile == "vast" {
				assert.ErrorIs(t, err, kafka.UnsupportedCompressionType, "codec %s", codec)
			} else {
				assert.NoError(t, err, "codec %s", codec)
			}
		}
		if profile == "kafka" {
			for _, m := range e.readPartition(t, "z", 0, len(codecs)) {
				assert.Equal(t, text, string(m.Value), "compressed messages decode")
			}
		}
	}, broker.WithTopics(broker.TopicSpec{Name: "z", Partitions: 1}))
}

// TestKafkaGoMessageTooLarge: a 127 KB value is refused by VAST (126 KB cap)
// and accepted by kafka.
func TestKafkaGoMessageTooLarge(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		e := newKgoEnv(t, b)
		w := e.writer(t, func(w *kafka.Writer) { w.Topic = "big" })
		err := writeErr(w.WriteMessages(ctxT(t), kafka.Message{Value: make([]byte, 127<<10)}))
		if profile == "vast" {
			assert.ErrorIs(t, err, kafka.MessageSizeTooLarge)
		} else {
			assert.NoError(t, err)
		}
		assert.NoError(t, w.WriteMessages(ctxT(t), kafka.Message{Value: make([]byte, limit)}), "exactly 126 KB is fine")
		if profile == "kafka" {
			assert.Len(t, e.readPartition(t, "big", 0, 2)[0].Value, 127<<10)
		}
	}, broker.WithTopics(broker.TopicSpec{Name: "big", Partitions: 1}))
}

// TestKafkaGoUnknownTopic: a Writer that allows auto-creation writes to a
// topic that does not exist. VAST refuses (kafka-go returns the Metadata
// error from WriteMessages, without retrying) and creates nothing; kafka
// creates the topic.
func TestKafkaGoUnknownTopic(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		e := newKgoEnv(t, b)
		w := e.writer(t, func(w *kafka.Writer) { w.Topic, w.AllowAutoTopicCreation = "nope", true })
		err := writeErr(w.WriteMessages(ctxT(t), kafka.Message{Value: []byte("x")}))
		md, merr := e.cl.Metadata(ctxT(t), &kafka.MetadataRequest{})
		require.NoError(t, merr)
		var names []string
		for _, tp := range md.Topics {
			names = append(names, tp.Name)
		}
		if profile == "vast" {
			assert.ErrorIs(t, err, kafka.UnknownTopicOrPartition)
			assert.NotContains(t, names, "nope", "VAST never creates topics on demand")
		} else {
			assert.NoError(t, err)
			assert.Contains(t, names, "nope")
		}
	})
}

// kgoMember is one consumer-group member: a group Reader that records what
// it reads and commits (synchronously) every message below commitBelow.
type kgoMember struct {
	r         *kafka.Reader
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	mu  sync.Mutex
	got []kafka.Message
}

func startKgoMember(t *testing.T, addr, group, topic string, commitBelow int64) *kgoMember {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		HeartbeatInterval: 100 * time.Millisecond,
		JoinGroupBackoff:  50 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           100 * time.Millisecond,
		CommitInterval:    0, // CommitMessages commits synchronously
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	m := &kgoMember{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				return
			}
			m.mu.Lock()
			m.got = append(m.got, msg)
			m.mu.Unlock()
			if msg.Offset < commitBelow {
				if err := r.CommitMessages(ctx, msg); err != nil {
					return
				}
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close stops reading and leaves the group.
func (m *kgoMember) close() {
	m.closeOnce.Do(func() {
		m.cancel()
		<-m.done
		m.r.Close()
	})
}

func (m *kgoMember) messages() []kafka.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

// produceEach writes n messages to each of partitions 0..parts-1.
func (e *kgoEnv) produceEach(t *testing.T, topic string, parts, n int) {
	t.Helper()
	w := e.writer(t, func(w *kafka.Writer) { w.Topic = topic })
	var msgs []kafka.Message
	for i := 0; i < parts*n; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte(key(i)), Value: []byte("v")}) // key order-i goes to i%3
	}
	require.NoError(t, w.WriteMessages(ctxT(t), msgs...))
}

// describe returns the group's state and its members' partition counts on
// topic, sorted.
func (e *kgoEnv) describe(t *testing.T, group, topic string) (string, []int) {
	resp, err := e.cl.DescribeGroups(ctxT(t), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	require.NoError(t, err)
	require.Len(t, resp.Groups, 1)
	g := resp.Groups[0]
	sizes := []int{}
	for _, mem := range g.Members {
		n := 0
		for _, tp := range mem.MemberAssignments.Topics {
			if tp.Topic == topic {
				n += len(tp.Partitions)
			}
		}
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	return g.GroupState, sizes
}

func (e *kgoEnv) committed(t *testing.T, group, topic string, parts ...int) map[int]int64 {
	resp, err := e.cl.OffsetFetch(ctxT(t), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	require.NoError(t, err)
	require.NoError(t, resp.Error)
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		require.NoError(t, p.Error)
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// TestKafkaGoConsumerGroup: two group Readers share a 3-partition topic (1
// and 2 partitions), commit offset 2 on every partition, leave; a new
// Reader of the group resumes from the committed offsets.
func TestKafkaGoConsumerGroup(t *testing.T) {
	t.Parallel()
	const group, topic = "billing", "events"
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 3}))
	e := newKgoEnv(t, b)
	e.produceEach(t, topic, 3, 4) // offsets 0-3 on every partition

	m1 := startKgoMember(t, b.Addr(), group, topic, 2)
	m2 := startKgoMember(t, b.Addr(), group, topic, 2)
	var state string
	var sizes []int
	waitFor(t, testTimeout, func() bool {
		state, sizes = e.describe(t, group, topic)
		return state == "Stable" && slices.Equal(sizes, []int{1, 2})
	}, "two members share three partitions 1+2; last state %q sizes %v", state, sizes)

	want := map[int]int64{0: 2, 1: 2, 2: 2}
	waitFor(t, testTimeout, func() bool { return assert.ObjectsAreEqual(want, e.committed(t, group, topic, 0, 1, 2)) }, "offset 2 committed on every partition")
	m1.close()
	m2.close()

	m3 := startKgoMember(t, b.Addr(), group, topic, 0)
	waitFor(t, testTimeout, func() bool { return len(m3.messages()) >= 6 }, "the new member reads the 6 uncommitted messages")
	byPart := map[int][]int64{}
	for _, msg := range m3.messages() {
		byPart[msg.Partition] = append(byPart[msg.Partition], msg.Offset)
	}
	assert.Equal(t, map[int][]int64{0: {2, 3}, 1: {2, 3}, 2: {2, 3}}, byPart, "the new member resumes at the committed offsets")
}

// cooperativeOnly is a kafka-go GroupBalancer that offers only the
// "cooperative-sticky" protocol name. kafka-go implements no cooperative
// rebalancing, but its GroupBalancer interface lets a program offer any
// protocol name, e.g. to share a group with Java consumers configured with
// CooperativeStickyAssignor; the broker sees exactly what such a group
// would send. Assignment itself is range.
type cooperativeOnly struct{ kafka.RangeGroupBalancer }

func (cooperativeOnly) ProtocolName() string { return "cooperative-sticky" }

// TestKafkaGoCooperativeRefused: a ConsumerGroup whose only balancer is
// named cooperative-sticky is refused by VAST (INCONSISTENT_GROUP_PROTOCOL,
// returned by ConsumerGroup.Next) and forms under kafka.
func TestKafkaGoCooperativeRefused(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
			ID:                "coop",
			Brokers:           []string{b.Addr()},
			Topics:            []string{"c"},
			GroupBalancers:    []kafka.GroupBalancer{cooperativeOnly{}},
			HeartbeatInterval: 100 * time.Millisecond,
			JoinGroupBackoff:  50 * time.Millisecond,
		})
		require.NoError(t, err)
		t.Cleanup(func() { cg.Close() })
		gen, err := cg.Next(ctxT(t))
		if profile == "vast" {
			assert.ErrorIs(t, err, kafka.InconsistentGroupProtocol)
			return
		}
		require.NoError(t, err)
		assert.Len(t, gen.Assignments["c"], 3, "the lone member gets every partition")
	}, broker.WithTopics(broker.TopicSpec{Name: "c", Partitions: 3}))
}

// TestKafkaGoDeleteActiveGroup: Client.DeleteGroups on a group with a member
// gets NON_EMPTY_GROUP; once the member has left it succeeds.
func TestKafkaGoDeleteActiveGroup(t *testing.T) {
	t.Parallel()
	const group, topic = "doomed", "d"
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 1}))
	e := newKgoEnv(t, b)
	e.produceEach(t, topic, 1, 1)
	m := startKgoMember(t, b.Addr(), group, topic, 1)
	waitFor(t, testTimeout, func() bool { return e.committed(t, group, topic, 0)[0] == 1 }, "the member commits its one message")

	del := func() error {
		resp, err := e.cl.DeleteGroups(ctxT(t), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
		require.NoError(t, err)
		return resp.Errors[group]
	}
	assert.ErrorIs(t, del(), kafka.NonEmptyGroup)

	m.close()
	waitFor(t, testTimeout, func() bool { state, _ := e.describe(t, group, topic); return state == "Empty" }, "the group is empty once its member left")
	require.NoError(t, del())
	assert.Equal(t, int64(-1), e.committed(t, group, topic, 0)[0], "deleting the group removed its offsets")
}

// TestKafkaGoCaughtUpReader: a Reader that has read everything keeps
// fetching at the end of the partition without errors, and gets a message
// written later. (kafka-go rejects a Fetch answer whose records field is
// null rather than empty: it logs an "unknown error", drops the connection
// and backs off, so a caught-up consumer sees new messages late. Kafka, and
// vastfake since this test found it, send an empty records field.)
func TestKafkaGoCaughtUpReader(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		e := newKgoEnv(t, b)
		// kafka-go's read deadline is exactly MaxWait. The VAST profile
		// answers an empty fetch after the empty fetch delay, the kafka
		// profile after half of MaxWait, so a MaxWait with room to spare
		// keeps the answer ahead of the deadline on a loaded machine.
		maxWait := 500 * time.Millisecond
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{e.addr}, Topic: "idle", MaxWait: maxWait})
		t.Cleanup(func() { r.Close() })
		got := make(chan kafka.Message, 1)
		go func() {
			m, err := r.ReadMessage(ctxT(t))
			if err == nil {
				got <- m
			}
			close(got)
		}()
		var fetches, errs int64
		waitFor(t, testTimeout, func() bool {
			s := r.Stats() // counters since the previous call
			fetches, errs = fetches+s.Fetches, errs+s.Errors
			return fetches >= 3
		}, "the reader fetches the empty partition")
		assert.Zero(t, errs, "fetches of an empty partition are not errors")

		w := e.writer(t, func(w *kafka.Writer) { w.Topic = "idle" })
		require.NoError(t, w.WriteMessages(ctxT(t), kafka.Message{Value: []byte("late")}))
		select {
		case m, ok := <-got:
			require.True(t, ok, "ReadMessage failed")
			assert.Equal(t, "late", string(m.Value))
		case <-ctxT(t).Done():
			t.Fatal("the caught-up reader never got the new message")
		}
	}, broker.WithTopics(broker.TopicSpec{Name: "idle", Partitions: 1}))
}
