package interop_test

// Several brokers with the Go clients that are not kgo: a producer with
// acks=all writes to a partition whose leader is down and goes on once it
// is back, and to the other brokers meanwhile, and follows a partition whose
// leader moves; nothing acknowledged is lost or stored twice. A consumer
// group reads on through a coordinator move and a VAST virtual-IP failover
// of the new coordinator's address. (kgo and confluent-kafka-go: broker's
// TestBrokerDownAndUp and TestProduceThroughABrokerDown.)

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// threeBrokers starts a kafka-profile broker with three broker ids and the
// topic "orders" of three partitions with one replica each: partition p is
// led by broker p, and only by it, so that a broker down holds up the
// partitions it leads and no other (with three replicas, acks=all would
// wait for it everywhere until it is fenced, as in Kafka:
// election_test.go). A broker taken down keeps its partitions for an hour
// (the election delay), as a Kafka broker back within its session timeout
// does: these scenarios are about a leader that comes back.
func threeBrokers(t *testing.T) *broker.Broker {
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"), broker.WithElectionDelay(time.Hour),
		broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3, ReplicationFactor: 1}))
	for p := range int32(3) {
		require.Equal(t, p, b.LeaderOf("orders", p))
	}
	return b
}

// endOffsets returns each partition's high watermark.
func endOffsets(b *broker.Broker) []int64 {
	ti, _ := b.Topic("orders")
	var out []int64
	for _, p := range ti.Partitions {
		out = append(out, p.HighWatermark)
	}
	return out
}

// throughABrokerDown runs the scenario with a client's send, which produces
// value to partition of "orders" and returns once it is acknowledged: a
// record to each partition; broker 1 down; partition 0 and 2 acknowledged
// while partition 1 waits (and is not acknowledged meanwhile); broker 1
// up and partition 1 acknowledged; each record stored once.
func throughABrokerDown(t *testing.T, b *broker.Broker, send func(partition int32, value string) error) {
	t.Helper()
	for part := range int32(3) {
		require.NoError(t, send(part, "before"))
	}
	require.NoError(t, b.BrokerDown(1))
	require.NoError(t, send(0, "while down"), "broker 0 serves while broker 1 is down")
	var waited error
	done := make(chan struct{})
	go func() { defer close(done); waited = send(1, "waits for broker 1") }()
	require.NoError(t, send(2, "while down"))
	select {
	case <-done:
		t.Fatalf("partition 1 answered while its leader was down: %v", waited)
	default:
	}
	require.NoError(t, b.BrokerUp(1))
	<-done
	require.NoError(t, waited, "acknowledged once its leader is back")
	assert.Equal(t, []int64{2, 2, 2}, endOffsets(b), "every acknowledged record stored once")
}

// throughALeaderMove runs the scenario with a client's send: a record to
// each partition; partition 1's leader moves from broker 1 to broker 2
// (leader epoch + 1); a record to partition 1 is acknowledged, through
// broker 2 (broker 1 answered NOT_LEADER_OR_FOLLOWER to a client that
// still sent there); each record stored once.
func throughALeaderMove(t *testing.T, b *broker.Broker, send func(partition int32, value string) error) {
	t.Helper()
	for part := range int32(3) {
		require.NoError(t, send(part, "before"))
	}
	b.ResetRequests()
	require.NoError(t, b.MoveLeader("orders", 1, 2))
	require.NoError(t, send(1, "after the move"))
	assert.Equal(t, []int64{1, 2, 1}, endOffsets(b), "every acknowledged record stored once")
	var servedBy []int32
	for _, rec := range b.Requests() {
		if rec.API == 0 && rec.ErrorCode == 0 { // Produce
			servedBy = append(servedBy, rec.Broker)
		}
	}
	assert.Equal(t, []int32{2}, servedBy, "the record went to the new leader")
}

// saramaRetrying is a sync producer for the scenarios: acks=all, manual
// partitions, and retries enough for a leader to come back.
func saramaRetrying(t *testing.T, b *broker.Broker) sarama.SyncProducer {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 1000, 20*time.Millisecond
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 1000, 20*time.Millisecond
	return saramaProducer(t, b.Addr(), cfg)
}

func saramaSend(p sarama.SyncProducer) func(int32, string) error {
	return func(partition int32, v string) error {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: partition, Value: sarama.StringEncoder(v)})
		return err
	}
}

func TestSaramaThroughABrokerDown(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	throughABrokerDown(t, b, saramaSend(saramaRetrying(t, b)))
}

func TestSaramaThroughALeaderMove(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	throughALeaderMove(t, b, saramaSend(saramaRetrying(t, b)))
}

// kafkaGoSend returns a send over kafka-go writers, one per partition (as
// kafka-go's balancer picks it), acks=all, retrying enough for a leader to
// come back.
func kafkaGoSend(t *testing.T, b *broker.Broker) func(int32, string) error {
	var ws []*kafkago.Writer
	for partition := range 3 {
		w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: "orders", RequiredAcks: kafkago.RequireAll,
			MaxAttempts: 100, WriteBackoffMin: 20 * time.Millisecond, WriteBackoffMax: 100 * time.Millisecond,
			Balancer: kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return partition })}
		t.Cleanup(func() { w.Close() })
		ws = append(ws, w)
	}
	return func(partition int32, v string) error {
		return ws[partition].WriteMessages(ctxT(t), kafkago.Message{Value: []byte(v)})
	}
}

func TestKafkaGoThroughABrokerDown(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	throughABrokerDown(t, b, kafkaGoSend(t, b))
}

func TestKafkaGoThroughALeaderMove(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	throughALeaderMove(t, b, kafkaGoSend(t, b))
}

// groupThroughMoves runs the consumer-group scenario: 30 keyed records
// (ten per partition) read and committed by the group "billing"; its
// coordinator moves to the next broker and 30 more are read; the new
// coordinator's address fails over (VAST's virtual-IP failover, no
// blackout) and 30 more are read. seen returns how often the consumer has
// read each key so far. Every key must be read; duplicates are returned for
// the caller to judge by the client's semantics.
func groupThroughMoves(t *testing.T, b *broker.Broker, seen func() map[string]int) (duplicates int) {
	t.Helper()
	produce := fixtures.Client(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	batch := func(from int) {
		for i := from; i < from+30; i++ {
			r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Key: []byte(key(i)), Value: []byte(value(i))}
			require.NoError(t, produce.ProduceSync(ctxT(t), r).FirstErr())
		}
		waitFor(t, ckTimeout, func() bool {
			s := seen()
			for i := from; i < from+30; i++ {
				if s[key(i)] == 0 {
					return false
				}
			}
			return true
		}, "the group reads records %d to %d", from, from+29)
	}
	batch(0)
	to := (b.CoordinatorOf("billing") + 1) % 3
	require.NoError(t, b.MoveCoordinator("billing", to))
	batch(30)
	require.NoError(t, b.FailOverAddress(to, 0))
	batch(60)
	s := seen()
	require.Len(t, s, 90)
	for k, n := range s {
		if n > 1 {
			t.Logf("%s read %d times", k, n)
		}
		duplicates += n - 1
	}
	return duplicates
}

// moveHandler is a sarama group handler that marks and commits each
// message synchronously before taking the next, and counts the keys read.
type moveHandler struct {
	mu   sync.Mutex
	seen map[string]int
}

func (h *moveHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *moveHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *moveHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		h.mu.Lock()
		h.seen[string(msg.Key)]++
		h.mu.Unlock()
		s.MarkMessage(msg, "")
		s.Commit()
	}
	return nil
}

func (h *moveHandler) snapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.seen))
	for k, n := range h.seen {
		out[k] = n
	}
	return out
}

// TestSaramaGroupThroughMoves: a sarama consumer group, committing each
// message synchronously, reads on through a coordinator move and a
// virtual-IP failover. sarama reads at least once: a message read but not
// yet committed when its session ends is read again; here none is.
func TestSaramaGroupThroughMoves(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	cfg := saramaConfig()
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 100, 20*time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, "billing", cfg)
	require.NoError(t, err)
	h := &moveHandler{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{"orders"}, h); err != nil && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond) // back off before joining again, as sarama's examples do
			}
		}
	}()
	defer func() { cancel(); cg.Close(); <-done }()
	dups := groupThroughMoves(t, b, h.snapshot)
	assert.Zero(t, dups, "each record read once")
}

// TestKafkaGoGroupThroughMoves: a kafka-go Reader in a group, committing
// each message synchronously (ReadMessage, CommitInterval 0), reads on
// through a coordinator move and a virtual-IP failover. kafka-go reads at
// least once: when a commit fails (NOT_COORDINATOR from the old
// coordinator, or the connection reset by the failover) ReadMessage returns
// the error, the group rejoins and the records after the last commit are
// read again. Nothing is lost, and what is read again is bounded by what
// one rejoin can repeat: the records of one batch (30).
func TestKafkaGoGroupThroughMoves(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	dups := groupThroughMoves(t, b, kafkaGoGroupReader(t, b.Addr(), "billing", "orders"))
	assert.LessOrEqual(t, dups, 30, "at least once, each record read again at most once per move")
}

// TestConfluentThroughALeaderMove: librdkafka follows a partition whose
// leader moves (NOT_LEADER_OR_FOLLOWER, then a metadata refresh).
func TestConfluentThroughALeaderMove(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	p := ckProducer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "acks": "all", "retry.backoff.ms": 20})
	throughALeaderMove(t, b, func(partition int32, v string) error {
		topic := "orders"
		m := ckProduce(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition}, Value: []byte(v)})[0]
		return m.TopicPartition.Error
	})
}

// TestConfluentGroupThroughMoves: a confluent-kafka-go consumer group
// (librdkafka) reads on through a coordinator move and a VAST virtual-IP
// failover of the new coordinator's address: every record is read once and
// the group's commit goes through.
func TestConfluentGroupThroughMoves(t *testing.T) {
	t.Parallel()
	b := threeBrokers(t)
	p := ckProducer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "acks": "all"})
	c := ckConsumer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "group.id": "billing", "auto.offset.reset": "earliest",
		"enable.auto.commit": false, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})
	require.NoError(t, c.Subscribe("orders", nil))
	seen := map[string]int{}
	read := func(from, to int) {
		for _, m := range ckProduce(t, p, ckKeyed("orders", from, to-from)...) {
			require.NoError(t, m.TopicPartition.Error)
		}
		for _, m := range ckPollN(t, c, to-from, true) {
			seen[string(m.Key)]++
		}
		_, err := c.Commit()
		require.NoError(t, err)
	}
	read(0, 30)

	to := (b.CoordinatorOf("billing") + 1) % 3
	require.NoError(t, b.MoveCoordinator("billing", to))
	read(30, 60)
	require.NoError(t, b.FailOverAddress(to, 0))
	read(60, 90)
	require.Len(t, seen, 90)
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s read once", k)
	}
}

// TestConfluentListConsumerGroupsAtThreeBrokers: librdkafka's
// ListConsumerGroups asks every broker and adds the answers up; in the
// kafka profile each broker lists only the groups it coordinates, so each
// group is counted once, and DescribeConsumerGroups finds each at its
// coordinator. In the VAST profile every address lists every group, as
// VAST's virtual IPs front one cluster; librdkafka's sum repeats each.
func TestConfluentListConsumerGroupsAtThreeBrokers(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"kafka", "vast"} {
		t.Run(profile, func(t *testing.T) {
			b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3}))
			adm := ckAdmin(t, b.Addr())
			var groups []string
			for i := range 12 {
				g := "listed-" + strconv.Itoa(i)
				offs := []kafka.TopicPartition{{Topic: ckPtr("orders"), Partition: 0, Offset: 1}}
				_, err := adm.AlterConsumerGroupOffsets(ctxCK(t), []kafka.ConsumerGroupTopicPartitions{{Group: g, Partitions: offs}})
				require.NoError(t, err, g)
				groups = append(groups, g)
			}
			res, err := adm.ListConsumerGroups(ctxCK(t))
			require.NoError(t, err)
			require.Empty(t, res.Errors)
			var listed []string
			for _, g := range res.Valid {
				listed = append(listed, g.GroupID)
			}
			if profile == "vast" {
				assert.Len(t, listed, 3*len(groups), "VAST: each of the three addresses lists every group")
				return
			}
			assert.ElementsMatch(t, groups, listed, "each group once")
			desc, err := adm.DescribeConsumerGroups(ctxCK(t), groups)
			require.NoError(t, err)
			for _, d := range desc.ConsumerGroupDescriptions {
				assert.Equal(t, kafka.ErrNoError, d.Error.Code(), d.GroupID)
				assert.Equal(t, b.CoordinatorOf(d.GroupID), int32(d.Coordinator.ID), d.GroupID)
			}
		})
	}
}

// kafkaGoGroupReader starts a kafka-go group reader of topic (range
// balancer, short waits and backoffs, committing each message before
// ReadMessage returns it) that runs until the test ends, and returns a
// function giving how often each key has been read so far.
func kafkaGoGroupReader(t *testing.T, addr, group, topic string) func() map[string]int {
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: group, Topic: topic,
		StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		ReadBackoffMin: 20 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
		GroupBalancers: []kafkago.GroupBalancer{kafkago.RangeGroupBalancer{}}})
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.ReadMessage(ctx) // commits before it returns
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Logf("ReadMessage: %v", err)
				continue
			}
			mu.Lock()
			seen[string(m.Key)]++
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; r.Close() })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}
