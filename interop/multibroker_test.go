package interop_test

// Several brokers with the Go clients that are not kgo: a producer with
// acks=all writes to a partition whose leader is down and goes on once it
// is back, and to the other brokers meanwhile; nothing acknowledged is lost
// or stored twice. (kgo and confluent-kafka-go: broker's TestBrokerDownAndUp
// and TestProduceThroughABrokerDown.)

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// threeBrokers starts a kafka-profile broker with three broker ids and the
// topic "orders" of three partitions: partition p is led by broker p.
func threeBrokers(t *testing.T) *broker.Broker {
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3}))
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

func TestSaramaThroughABrokerDown(t *testing.T) {
	b := threeBrokers(t)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 1000, 20*time.Millisecond
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 1000, 20*time.Millisecond
	p, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
	require.NoError(t, err)
	defer p.Close()
	throughABrokerDown(t, b, func(partition int32, v string) error {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: partition, Value: sarama.StringEncoder(v)})
		return err
	})
}

func TestKafkaGoThroughABrokerDown(t *testing.T) {
	b := threeBrokers(t)
	var ws []*kafkago.Writer // one per partition, as kafka-go's balancer picks it
	for partition := range 3 {
		w := &kafkago.Writer{Addr: kafkago.TCP(b.Addr()), Topic: "orders", RequiredAcks: kafkago.RequireAll,
			MaxAttempts: 100, WriteBackoffMin: 20 * time.Millisecond, WriteBackoffMax: 100 * time.Millisecond,
			Balancer: kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return partition })}
		defer w.Close()
		ws = append(ws, w)
	}
	throughABrokerDown(t, b, func(partition int32, v string) error {
		return ws[partition].WriteMessages(ctxT(t), kafkago.Message{Value: []byte(v)})
	})
}

// TestConfluentGroupThroughMoves: a confluent-kafka-go consumer group
// (librdkafka) reads on through a coordinator move and a VAST virtual-IP
// failover of the new coordinator's address: every record is read once and
// the group's commit goes through.
func TestConfluentGroupThroughMoves(t *testing.T) {
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
		for _, m := range ckPoll(t, c, to-from) {
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
