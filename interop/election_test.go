package interop_test

// Leader elections in the kafka profile with real clients: three brokers,
// "orders" with three replicas per partition, and broker 1 (leader of
// partition 1 and coordinator of the group) taken down for good. Each
// client produces with acks=all and consumes as a group through it,
// without waiting for it to come back: partition 1 and the group's
// coordinator move to the next in-sync replica after the election delay,
// and nothing acknowledged is lost.

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// electionDelay is the election delay of the scenario: long enough that a
// client sees the leader gone, short for a test.
const electionDelay = 300 * time.Millisecond

// electionBrokers starts the scenario's broker: kafka profile, brokers 0
// to 2, "orders" of three partitions with three replicas each (partition p
// led by broker p), an election delay of electionDelay.
func electionBrokers(t *testing.T) *broker.Broker {
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"), broker.WithElectionDelay(electionDelay),
		broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3, ReplicationFactor: 3}))
	for p := range int32(3) {
		_, _, replicas, isr := b.PartitionState("orders", p)
		require.Len(t, replicas, 3)
		require.Equal(t, replicas, isr)
		require.Equal(t, p, replicas[0])
	}
	return b
}

// groupOn returns a group name broker id coordinates.
func groupOn(b *broker.Broker, id int32) string {
	for i := 0; ; i++ {
		if g := "billing-" + strconv.Itoa(i); b.CoordinatorOf(g) == id {
			return g
		}
	}
}

// throughAnElection runs the scenario with a client's send, which
// produces record i (key(i), value(i)) to partition i%3 with acks=all and
// returns once it is acknowledged, and seen, which says how often the
// client's group consumer has read each key so far: 30 records read;
// broker 1 down; record 30, to partition 0, acknowledged only once broker
// 1 is fenced and out of its in-sync set; 29 more sent (partition 1's wait
// for the election) and read, with broker 1 still down; partition 1 and the group's coordinator
// on another broker with a higher leader epoch; every record stored once
// and read. It returns how many reads were repeats, for the caller to
// judge by the client's delivery semantics.
func throughAnElection(t *testing.T, b *broker.Broker, group string, send func(i int) error, seen func() map[string]int) (duplicates int) {
	t.Helper()
	require.Equal(t, int32(1), b.CoordinatorOf(group))
	sent := 0
	batch := func(to int) {
		for ; sent < to; sent++ {
			require.NoError(t, send(sent), "record %d", sent)
		}
		waitFor(t, ckTimeout, func() bool {
			s := seen()
			for i := range to {
				if s[key(i)] == 0 {
					return false
				}
			}
			return true
		}, "the group reads records 0 to %d", to-1)
	}
	batch(30)
	require.NoError(t, b.BrokerDown(1))
	// Record 30 goes to partition 0, whose in-sync set holds broker 1
	// until it is fenced: acks=all answers only then, as Kafka's leader
	// does (the election delay on the broker's clock, here the wall clock).
	down := time.Now()
	require.NoError(t, send(30), "record 30")
	sent++
	stall := time.Since(down)
	_, _, _, isr0 := b.PartitionState("orders", 0)
	assert.NotContains(t, isr0, int32(1), "acknowledged only once broker 1 left partition 0's in-sync set")
	t.Logf("acks=all to partition 0 answered %v after broker 1 went down (election delay %v)", stall.Round(time.Millisecond), electionDelay)
	batch(60)
	require.True(t, b.BrokerIsDown(1), "the broker stayed down")
	leader, epoch, _, isr := b.PartitionState("orders", 1)
	assert.Equal(t, int32(2), leader, "the next in-sync replica leads partition 1")
	assert.Equal(t, int32(1), epoch)
	assert.Equal(t, []int32{2, 0}, isr)
	assert.NotEqual(t, int32(1), b.CoordinatorOf(group), "the coordinator moved with its __consumer_offsets partition")
	var stored int64
	ti, _ := b.Topic("orders")
	for _, p := range ti.Partitions {
		stored += p.HighWatermark
	}
	assert.Equal(t, int64(60), stored, "every acknowledged record stored once")
	validations, failed := 0, 0
	for _, r := range b.Requests() {
		if r.API == kmsg.OffsetForLeaderEpoch {
			validations++
			if r.ErrorCode != 0 {
				failed++
			}
		}
	}
	t.Logf("OffsetForLeaderEpoch (KIP-320): %d requests, %d with an error", validations, failed)
	s := seen()
	require.Len(t, s, 60)
	for k, n := range s {
		if n > 1 {
			t.Logf("%s read %d times", k, n)
		}
		duplicates += n - 1
	}
	return duplicates
}

// TestSaramaThroughAnElection: a sarama sync producer (acks=all) and a
// sarama consumer group, committing each message, ride through the
// election.
func TestSaramaThroughAnElection(t *testing.T) {
	t.Parallel()
	b := electionBrokers(t)
	group := groupOn(b, 1)
	p := saramaRetrying(t, b)
	cfg := saramaConfig()
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 100, 20*time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, group, cfg)
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
	dups := throughAnElection(t, b, group, func(i int) error {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i % 3), Key: sarama.StringEncoder(key(i)), Value: sarama.StringEncoder(value(i))})
		return err
	}, h.snapshot)
	assert.LessOrEqual(t, dups, 30, "at least once: what one rejoin can read again")
}

// TestConfluentThroughAnElection: a confluent-kafka-go producer (acks=all)
// and consumer group (librdkafka) ride through the election.
func TestConfluentThroughAnElection(t *testing.T) {
	t.Parallel()
	b := electionBrokers(t)
	group := groupOn(b, 1)
	p := ckProducer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "acks": "all", "retry.backoff.ms": 20,
		"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200, "log.connection.close": false})
	c := ckConsumer(t, ckGroupConf(b.Addr(), group, "enable.auto.commit", true, "auto.commit.interval.ms", 100,
		"reconnect.backoff.ms", 20, "reconnect.backoff.max.ms", 200))
	require.NoError(t, c.Subscribe("orders", nil))
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			switch ev := c.Poll(50).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error == nil {
					mu.Lock()
					seen[string(ev.Key)]++
					mu.Unlock()
				}
			case kafka.Error:
				t.Logf("consumer: %v", ev) // the broker going away is reported so; librdkafka reconnects
			}
		}
	}()
	defer func() { cancel(); <-done }()
	topic := "orders"
	dups := throughAnElection(t, b, group, func(i int) error {
		m := ckProduce(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % 3)},
			Key: []byte(key(i)), Value: []byte(value(i))})[0]
		return m.TopicPartition.Error
	}, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	})
	assert.LessOrEqual(t, dups, 30, "at least once: what one rejoin can read again")
}

// TestKafkaGoThroughAnElection: kafka-go writers (acks=all), one per
// partition, and a Reader in a group, committing each message, ride through
// the election.
func TestKafkaGoThroughAnElection(t *testing.T) {
	t.Parallel()
	b := electionBrokers(t)
	group := groupOn(b, 1)
	var ws []*kafkago.Writer
	for partition := range 3 {
		// A short batch timeout: each record is written on its own and
		// waited for (kafka-go waits a second for more by default).
		w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: "orders", RequiredAcks: kafkago.RequireAll, BatchTimeout: 5 * time.Millisecond,
			MaxAttempts: 100, WriteBackoffMin: 20 * time.Millisecond, WriteBackoffMax: 100 * time.Millisecond,
			Balancer: kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return partition })}
		t.Cleanup(func() { w.Close() })
		ws = append(ws, w)
	}
	seen := kafkaGoGroupReader(t, b.Addr(), group, "orders")
	dups := throughAnElection(t, b, group, func(i int) error {
		return ws[i%3].WriteMessages(ctxT(t), kafkago.Message{Key: []byte(key(i)), Value: []byte(value(i))})
	}, seen)
	assert.LessOrEqual(t, dups, 30, "at least once: what one rejoin can read again")
}

// electionBinaryArgs start the vastfake binary as electionBrokers starts
// the broker, for the client scripts.
var electionBinaryArgs = []string{"-brokers", "3", "-profile", "kafka", "-election-delay", electionDelay.String(),
	"-initial-rebalance-delay", "0", "-topic", "orders:3"}

// TestPythonClientsThroughAnElection runs the election scenario with the
// Confluent Python client (election/confluent.py) and kafka-python
// (election/kafka_python.py), each against its own vastfake binary: the
// group's coordinator, which leads a partition too, goes down for good
// through the control plane, and every record produced with acks=all
// before and after is read by the group. Like TestPythonClientMatrix it
// needs Debian's python3-confluent-kafka and python3-kafka: skipped
// without them, failed when CI is set.
func TestPythonClientsThroughAnElection(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	bin := buildVastfake(t)
	t.Run("confluent-kafka-python", func(t *testing.T) {
		runScript(t, bin, "election", "expected.txt", pythonWithConfluent, "confluent.py", electionBinaryArgs...)
	})
	t.Run("kafka-python", func(t *testing.T) {
		needKafkaPython(t)
		runScript(t, bin, "election", "expected.txt", pythonWithConfluent, "kafka_python.py", electionBinaryArgs...)
	})
}

// needKafkaPython skips the test without kafka-python (Debian's
// python3-kafka), or fails it when CI is set.
func needKafkaPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(pythonWithConfluent, "-c", "import kafka").CombinedOutput(); err != nil {
		msg := t.Name() + " needs " + pythonWithConfluent + " with kafka-python (apt-get install -y python3-kafka): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// TestKafkaJSThroughAnElection runs the election scenario with kafkajs
// (kafkajs/election.js): its output must be the Python clients'
// (election/expected.txt). It needs node and kafkajs/node_modules, as
// TestKafkaJSMatrix does.
func TestKafkaJSThroughAnElection(t *testing.T) {
	t.Parallel()
	node := needKafkaJS(t)
	runScript(t, buildVastfake(t), "kafkajs", "../election/expected.txt", node, "election.js", electionBinaryArgs...)
}
