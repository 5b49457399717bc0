package interop_test

// IBM/sarama against vastfake.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// saramaConfig is sarama set up the way VAST needs (the settings
// fixtures.ClientOpts documents for sarama): a protocol version recent
// enough for v2 record batches, no idempotence, no compression, the eager
// range assignor, a short heartbeat. Retries are short so refusals surface
// quickly.
func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "vastfake-interop"
	// sarama's default Version (2.1) already writes v2 batches; 3.6 makes it
	// use recent request versions, all of which vastfake serves.
	c.Version = sarama.V3_6_0_0
	c.Producer.Idempotent = false
	c.Producer.Compression = sarama.CompressionNone
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 1
	c.Producer.Retry.Backoff = 10 * time.Millisecond
	c.Metadata.Retry.Max = 1
	c.Metadata.Retry.Backoff = 10 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false // the tests commit explicitly
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	c.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	c.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	return c
}

func saramaClient(t *testing.T, addr string, cfg *sarama.Config) sarama.Client {
	t.Helper()
	if cfg == nil {
		cfg = saramaConfig()
	}
	cl, err := sarama.NewClient([]string{addr}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

func saramaAdmin(t *testing.T, addr string) sarama.ClusterAdmin {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig())
	require.NoError(t, err)
	t.Cleanup(func() { adm.Close() })
	return adm
}

func saramaProducer(t *testing.T, addr string, cfg *sarama.Config) sarama.SyncProducer {
	t.Helper()
	if cfg == nil {
		cfg = saramaConfig()
	}
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// saramaReadPartition reads n messages of one partition from the oldest
// offset, with no group. It returns them and the partition's high watermark
// as the consumer last saw it.
func saramaReadPartition(t *testing.T, cl sarama.Client, topic string, partition int32, n int) ([]*sarama.ConsumerMessage, int64) {
	t.Helper()
	cons, err := sarama.NewConsumerFromClient(cl)
	require.NoError(t, err)
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, partition, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.Close()
	ctx := ctxT(t)
	var out []*sarama.ConsumerMessage
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case err := <-pc.Errors():
			t.Fatalf("consume %s/%d: %v", topic, partition, err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d messages of %s/%d", len(out), n, topic, partition)
		}
	}
	return out, pc.HighWaterMarkOffset()
}

// TestSaramaProduceConsume: create a topic with ClusterAdmin, produce keyed
// messages to three partitions, read each partition back without a group.
func TestSaramaProduceConsume(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		adm := saramaAdmin(t, b.Addr())
		require.NoError(t, adm.CreateTopic("orders", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false))
		md, err := adm.DescribeTopics([]string{"orders"})
		require.NoError(t, err)
		require.Len(t, md, 1)
		assert.Len(t, md[0].Partitions, 3)

		prod := saramaProducer(t, b.Addr(), nil)
		for i := 0; i < 30; i++ {
			p, off, err := prod.SendMessage(&sarama.ProducerMessage{
				Topic: "orders", Partition: int32(i % 3),
				Key: sarama.StringEncoder(key(i)), Value: sarama.StringEncoder(value(i)),
				Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("v")}},
			})
			require.NoError(t, err)
			assert.Equal(t, int32(i%3), p)
			assert.Equal(t, int64(i/3), off, "offset of message %d", i)
		}

		cl := saramaClient(t, b.Addr(), nil)
		for p := int32(0); p < 3; p++ {
			msgs, hwm := saramaReadPartition(t, cl, "orders", p, 10)
			for j, m := range msgs {
				i := j*3 + int(p)
				assert.Equal(t, int64(j), m.Offset, "partition %d is read in order", p)
				assert.Equal(t, key(i), string(m.Key))
				assert.Equal(t, value(i), string(m.Value))
				if assert.Len(t, m.Headers, 1) {
					assert.Equal(t, "h", string(m.Headers[0].Key))
					assert.Equal(t, "v", string(m.Headers[0].Value))
				}
			}
			assert.Equal(t, int64(10), hwm, "high watermark seen by the consumer of partition %d", p)
			newest, err := cl.GetOffset("orders", p, sarama.OffsetNewest)
			require.NoError(t, err)
			assert.Equal(t, int64(10), newest, "newest offset of partition %d", p)
			oldest, err := cl.GetOffset("orders", p, sarama.OffsetOldest)
			require.NoError(t, err)
			assert.Equal(t, int64(0), oldest, "oldest offset of partition %d", p)
		}
	})
}

// TestSaramaCompression: a compressed produce is refused under VAST with
// UNSUPPORTED_COMPRESSION_TYPE and accepted and read back under kafka.
func TestSaramaCompression(t *testing.T) {
	t.Parallel()
	codecs := []sarama.CompressionCodec{sarama.CompressionSnappy, sarama.CompressionGZIP}
	text := strings.Repeat("compress me ", 100)
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		for _, codec := range codecs {
			cfg := saramaConfig()
			cfg.Producer.Compression = codec
			prod := saramaProducer(t, b.Addr(), cfg)
			_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "z", Value: sarama.StringEncoder(text)})
			if profile == "vast" {
				assert.ErrorIs(t, err, sarama.ErrUnsupportedCompressionType, "codec %s", codec)
				checkQuoted(t, "sarama", "NoCompression", err.Error())
			} else {
				assert.NoError(t, err, "codec %s", codec)
			}
		}
		if profile == "kafka" {
			msgs, _ := saramaReadPartition(t, saramaClient(t, b.Addr(), nil), "z", 0, len(codecs))
			for _, m := range msgs {
				assert.Equal(t, text, string(m.Value), "compressed messages decode")
			}
		}
	}, broker.WithTopics(broker.TopicSpec{Name: "z", Partitions: 1}))
}

// TestSaramaTopicConfigRefused: sarama's CreateTopic with a config VAST
// does not take gets INVALID_CONFIG, with VAST's reason in its text.
func TestSaramaTopicConfigRefused(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t)
	segment := "1000"
	err := saramaAdmin(t, b.Addr()).CreateTopic("refused", &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: map[string]*string{"segment.bytes": &segment},
	}, false)
	require.ErrorIs(t, err, sarama.ErrInvalidConfig)
	checkQuoted(t, "sarama", "VASTTopicConfigsOnly", err.Error())
}

// TestSaramaMessageTooLarge: a 127 KB value is refused by VAST (126 KB cap)
// and accepted by kafka; sarama's own limit (1 MB) lets it through.
func TestSaramaMessageTooLarge(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		prod := saramaProducer(t, b.Addr(), nil)
		_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "big", Value: sarama.ByteEncoder(make([]byte, 127<<10))})
		if profile == "vast" {
			assert.ErrorIs(t, err, sarama.ErrMessageSizeTooLarge)
			checkQuoted(t, "sarama", "MaxValueBytes", err.Error())
		} else {
			assert.NoError(t, err)
		}
		_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: "big", Value: sarama.ByteEncoder(make([]byte, limit))})
		assert.NoError(t, err, "exactly 126 KB is fine")
		if profile == "kafka" {
			msgs, _ := saramaReadPartition(t, saramaClient(t, b.Addr(), nil), "big", 0, 2)
			assert.Len(t, msgs[0].Value, 127<<10)
		}
	}, broker.WithTopics(broker.TopicSpec{Name: "big", Partitions: 1}))
}

// TestSaramaUnknownTopic: sarama asks for auto-creation (its default,
// Metadata.AllowAutoTopicCreation=true); VAST refuses and creates nothing,
// kafka creates the topic.
func TestSaramaUnknownTopic(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		cfg := saramaConfig()
		require.True(t, cfg.Metadata.AllowAutoTopicCreation)
		prod := saramaProducer(t, b.Addr(), cfg)
		_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "nope", Value: sarama.StringEncoder("x")})
		topics, lerr := saramaAdmin(t, b.Addr()).ListTopics()
		require.NoError(t, lerr)
		if profile == "vast" {
			assert.ErrorIs(t, err, sarama.ErrUnknownTopicOrPartition)
			checkQuoted(t, "sarama", "NoAutoCreateTopics", err.Error())
			assert.NotContains(t, topics, "nope", "VAST never creates topics on demand")
		} else {
			assert.NoError(t, err)
			assert.Contains(t, topics, "nope")
		}
	})
}

// saramaMember is one consumer-group member: a sarama ConsumerGroup whose
// handler records the session's claims and the messages it receives, and
// commits (synchronously) every message below commitBelow.
type saramaMember struct {
	cg          sarama.ConsumerGroup
	commitBelow int64
	cancel      context.CancelFunc
	done        chan struct{}
	closeOnce   sync.Once

	mu     sync.Mutex
	claims map[string][]int32 // of the current session; nil between sessions
	gen    int32
	got    []*sarama.ConsumerMessage
	err    error // the last error Consume returned
}

func startSaramaMember(t *testing.T, addr, group, topic string, commitBelow int64, cfg *sarama.Config) *saramaMember {
	t.Helper()
	if cfg == nil {
		cfg = saramaConfig()
	}
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	m := &saramaMember{cg: cg, commitBelow: commitBelow, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			err := cg.Consume(ctx, []string{topic}, m)
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
				select { // back off before joining again
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

// close leaves the group and waits for the member's goroutine.
func (m *saramaMember) close() {
	m.closeOnce.Do(func() {
		m.cg.Close()
		m.cancel()
		<-m.done
	})
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims, m.gen = s.Claims(), s.GenerationID()
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims = nil
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			m.mu.Lock()
			m.got = append(m.got, msg)
			m.mu.Unlock()
			if msg.Offset < m.commitBelow {
				s.MarkMessage(msg, "")
				if msg.Offset == m.commitBelow-1 {
					s.Commit()
				}
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// session returns the member's current claims on topic and generation.
func (m *saramaMember) session(topic string) ([]int32, int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.claims == nil {
		return nil, 0, false
	}
	return slices.Clone(m.claims[topic]), m.gen, true
}

func (m *saramaMember) messages() []*sarama.ConsumerMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.got)
}

// saramaProduceEach produces n messages to each of partitions 0..parts-1.
func saramaProduceEach(t *testing.T, addr, topic string, parts int32, n int) {
	t.Helper()
	prod := saramaProducer(t, addr, nil)
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			_, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("v")})
			require.NoError(t, err)
		}
	}
}

// TestSaramaConsumerGroup: two members of one group share a 3-partition
// topic (1 and 2 partitions), commit offset 2 on every partition, leave; a
// new member of the group resumes from the committed offsets.
func TestSaramaConsumerGroup(t *testing.T) {
	t.Parallel()
	const group, topic = "billing", "events"
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 3}))
	saramaProduceEach(t, b.Addr(), topic, 3, 4) // offsets 0-3 on every partition

	m1 := startSaramaMember(t, b.Addr(), group, topic, 2, nil)
	m2 := startSaramaMember(t, b.Addr(), group, topic, 2, nil)
	var sizes []int
	waitFor(t, testTimeout, func() bool {
		c1, g1, ok1 := m1.session(topic)
		c2, g2, ok2 := m2.session(topic)
		sizes = []int{len(c1), len(c2)}
		slices.Sort(sizes)
		return ok1 && ok2 && g1 == g2 && slices.Equal(sizes, []int{1, 2})
	}, "two members share three partitions 1+2 in one generation; last sizes %v", sizes)

	adm := saramaAdmin(t, b.Addr())
	committed := func() map[int32]int64 {
		resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
		require.NoError(t, err)
		out := map[int32]int64{}
		for p, blk := range resp.Blocks[topic] {
			out[p] = blk.Offset
		}
		return out
	}
	want := map[int32]int64{0: 2, 1: 2, 2: 2}
	waitFor(t, testTimeout, func() bool { return assert.ObjectsAreEqual(want, committed()) }, "offset 2 committed on every partition")
	m1.close()
	m2.close()

	m3 := startSaramaMember(t, b.Addr(), group, topic, 0, nil)
	waitFor(t, testTimeout, func() bool { return len(m3.messages()) >= 6 }, "the new member reads the 6 uncommitted messages")
	byPart := map[int32][]int64{}
	for _, msg := range m3.messages() {
		byPart[msg.Partition] = append(byPart[msg.Partition], msg.Offset)
	}
	assert.Equal(t, map[int32][]int64{0: {2, 3}, 1: {2, 3}, 2: {2, 3}}, byPart, "the new member resumes at the committed offsets")
	claims, _, ok := m3.session(topic)
	assert.True(t, ok)
	assert.ElementsMatch(t, []int32{0, 1, 2}, claims, "a lone member gets every partition")
}

// TestSaramaCooperativeRefused: a group whose only strategy is sarama's
// cooperative-sticky is refused by VAST (INCONSISTENT_GROUP_PROTOCOL from
// JoinGroup, returned by Consume) and forms under kafka.
func TestSaramaCooperativeRefused(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		cfg := saramaConfig()
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyCooperativeSticky()}
		if profile == "vast" {
			cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, "coop", cfg)
			require.NoError(t, err)
			t.Cleanup(func() { cg.Close() })
			err = cg.Consume(ctxT(t), []string{"c"}, &saramaMember{})
			assert.ErrorIs(t, err, sarama.ErrInconsistentGroupProtocol)
			checkQuoted(t, "sarama", "EagerAssignorsOnly", err.Error())
			return
		}
		m := startSaramaMember(t, b.Addr(), "coop", "c", 0, cfg)
		waitFor(t, testTimeout, func() bool {
			claims, _, ok := m.session("c")
			return ok && len(claims) == 3
		}, "the cooperative member gets the topic's partitions")
	}, broker.WithTopics(broker.TopicSpec{Name: "c", Partitions: 3}))
}

// TestSaramaDeleteActiveGroup: ClusterAdmin.DeleteConsumerGroup on a group
// with a member gets NON_EMPTY_GROUP; once the member has left it succeeds
// and the group's offsets are gone.
func TestSaramaDeleteActiveGroup(t *testing.T) {
	t.Parallel()
	const group, topic = "doomed", "d"
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 1}))
	saramaProduceEach(t, b.Addr(), topic, 1, 1)
	m := startSaramaMember(t, b.Addr(), group, topic, 1, nil)
	adm := saramaAdmin(t, b.Addr())
	offset := func() int64 {
		resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0}})
		require.NoError(t, err)
		return resp.GetBlock(topic, 0).Offset
	}
	waitFor(t, testTimeout, func() bool { return offset() == 1 }, "the member commits its one message")

	assert.ErrorIs(t, adm.DeleteConsumerGroup(group), sarama.ErrNonEmptyGroup)

	m.close()
	waitFor(t, testTimeout, func() bool {
		gs, err := adm.DescribeConsumerGroups([]string{group})
		require.NoError(t, err)
		return len(gs) == 1 && gs[0].State == "Empty"
	}, "the group is empty once its member left")
	require.NoError(t, adm.DeleteConsumerGroup(group))
	assert.Equal(t, int64(-1), offset(), "deleting the group removed its offsets")
}
