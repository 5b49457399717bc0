package interop_test

// Transactions with confluent-kafka-go (librdkafka) in the kafka and audit
// profiles: consume-transform-produce with offsets sent to the transaction,
// the abort path, a zombie producer fenced by a newer one with its
// transactional id, and a transaction the broker aborts at its timeout on a
// manual clock. read_committed consumers must never see an aborted record.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/fixtures"
)

// ckTxnProducer is a transactional librdkafka producer, its transactions
// initialized.
func ckTxnProducer(t *testing.T, addr, id string, kv ...any) *kafka.Producer {
	t.Helper()
	p := ckProducer(t, ckConf(addr, append([]any{"transactional.id", id, "enable.idempotence", true}, kv...)...))
	require.NoError(t, p.InitTransactions(ctxCK(t)))
	return p
}

// ckReadCommitted reads partition 0 of topic from the start with
// isolation.level read_committed until it has read past the partition's
// last offset before end (exclusive), and returns the values.
func ckReadCommitted(t *testing.T, addr, topic string, end int64) []string {
	t.Helper()
	c := ckConsumer(t, ckConf(addr, "group.id", "reader-"+topic, "isolation.level", "read_committed",
		"enable.auto.commit", false, "auto.offset.reset", "earliest", "enable.partition.eof", true))
	require.NoError(t, c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}))
	var got []string
	deadline := time.Now().Add(ckTimeout)
	for time.Now().Before(deadline) {
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, string(ev.Value))
		case kafka.PartitionEOF:
			if int64(ev.Offset) >= end {
				return got
			}
		case kafka.Error:
			t.Fatalf("consumer error: %v", ev)
		}
	}
	t.Fatalf("read_committed consumer did not reach offset %d within %v; read %q", end, ckTimeout, got)
	return nil
}

func ckMsg(topic, value string) *kafka.Message {
	return &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(value)}
}

// TestConfluentTransactionalETL copies ten records from one topic to
// another, each batch in a transaction that also sends the group's
// offsets; the first transaction aborts, and the consumer rewinds to the
// committed offsets and copies its records again. A read_committed reader
// sees every record once, and the group's committed offset is the input's
// end.
func TestConfluentTransactionalETL(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"kafka", "audit"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			b := fixtures.StartBroker(t, broker.WithProfile(profile),
				broker.WithTopics(broker.TopicSpec{Name: "ck-in", Partitions: 1}, broker.TopicSpec{Name: "ck-out", Partitions: 1}))
			addr := b.Addr()
			in := make([]*kafka.Message, 10)
			for i := range in {
				in[i] = ckMsg("ck-in", fmt.Sprintf("v%d", i))
			}
			for _, m := range ckProduce(t, ckProducer(t, ckConf(addr)), in...) {
				require.NoError(t, m.TopicPartition.Error)
			}

			c := ckConsumer(t, ckGroupConf(addr, "ck-etl", "isolation.level", "read_committed"))
			require.NoError(t, c.Subscribe("ck-in", nil))
			p := ckTxnProducer(t, addr, "ck-etl")
			copied, round := 0, 0
			for copied < 10 {
				msgs := ckPoll(t, c, 1)
				for {
					m, ok := c.Poll(50).(*kafka.Message)
					if !ok {
						break
					}
					msgs = append(msgs, m)
				}
				require.NoError(t, p.BeginTransaction())
				out := make([]*kafka.Message, len(msgs))
				for i, m := range msgs {
					out[i] = ckMsg("ck-out", "out-"+string(m.Value))
				}
				// Delivered before the transaction ends, so that the aborted
				// records are in the log (librdkafka drops unsent ones on abort).
				for _, m := range ckProduce(t, p, out...) {
					require.NoError(t, m.TopicPartition.Error)
				}
				pos, err := c.Position(mustAssignment(t, c))
				require.NoError(t, err)
				meta, err := c.GetConsumerGroupMetadata()
				require.NoError(t, err)
				require.NoError(t, p.SendOffsetsToTransaction(ctxCK(t), pos, meta))
				if round == 0 {
					require.NoError(t, p.AbortTransaction(ctxCK(t)))
					committed, err := c.Committed(mustAssignment(t, c), 5000)
					require.NoError(t, err)
					for _, tp := range committed {
						if tp.Offset < 0 {
							tp.Offset = kafka.OffsetBeginning
						}
						require.NoError(t, c.Seek(tp, 5000))
					}
				} else {
					require.NoError(t, p.CommitTransaction(ctxCK(t)))
					copied += len(msgs)
				}
				round++
			}
			want := make([]string, 10)
			for i := range want {
				want[i] = fmt.Sprintf("out-v%d", i)
			}
			_, hwm := partitionEnds(t, b, "ck-out")
			assert.Equal(t, want, ckReadCommitted(t, addr, "ck-out", hwm))
			off, ok := b.CommittedOffset("ck-etl", "ck-in", 0)
			assert.True(t, ok)
			assert.Equal(t, int64(10), off)
			var markers []string
			for _, r := range b.Records("ck-out", 0, 0) {
				if r.Marker != "" {
					markers = append(markers, r.Marker)
				}
			}
			require.NotEmpty(t, markers)
			assert.Equal(t, "abort", markers[0], "the first transaction aborted")
			assert.NotContains(t, markers[1:], "abort")
			assert.Greater(t, hwm, int64(10+len(markers)), "the aborted records are in the log too")
			info, _ := b.Transaction("ck-etl")
			assert.Equal(t, 1, info.Aborted)
			assert.Equal(t, len(markers)-1, info.Committed)
			if profile == "audit" {
				var found bool
				for _, f := range b.Findings() {
					if f.Rule == "NoIdempotence" && strings.Contains(f.Advice, "transactional.id") {
						found = true
					}
				}
				assert.True(t, found, "the audit names transactional.id in librdkafka's terms: %+v", b.Findings())
			}
		})
	}
}

// ckDrainEvents reads the events a producer queued (the fatal error of a
// fenced one), which its close would otherwise wait for.
func ckDrainEvents(p *kafka.Producer) {
	for len(p.Events()) > 0 {
		<-p.Events()
	}
}

func mustAssignment(t *testing.T, c *kafka.Consumer) []kafka.TopicPartition {
	t.Helper()
	a, err := c.Assignment()
	require.NoError(t, err)
	require.NotEmpty(t, a)
	return a
}

// partitionEnds returns partition 0's log start and high watermark.
func partitionEnds(t *testing.T, b *broker.Broker, topic string) (int64, int64) {
	t.Helper()
	info, ok := b.Topic(topic)
	require.True(t, ok)
	return info.Partitions[0].LogStartOffset, info.Partitions[0].HighWatermark
}

// TestConfluentTransactionFencedZombie: a second producer with the same
// transactional id fences the first, whose commit then fails fatally; only
// the second's records are committed.
func TestConfluentTransactionFencedZombie(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithTopics(broker.TopicSpec{Name: "ck-fence", Partitions: 1}))
	addr := b.Addr()
	zombie := ckTxnProducer(t, addr, "ck-fenced")
	require.NoError(t, zombie.BeginTransaction())
	for _, m := range ckProduce(t, zombie, ckMsg("ck-fence", "zombie")) {
		require.NoError(t, m.TopicPartition.Error)
	}

	fresh := ckTxnProducer(t, addr, "ck-fenced")
	require.NoError(t, fresh.BeginTransaction())
	ckProduce(t, fresh, ckMsg("ck-fence", "fresh"))
	require.NoError(t, fresh.CommitTransaction(ctxCK(t)))

	err := zombie.CommitTransaction(ctxCK(t))
	require.Error(t, err, "the zombie cannot commit")
	var kerr kafka.Error
	require.ErrorAs(t, err, &kerr)
	assert.True(t, kerr.IsFatal(), "fenced is fatal: %v", err)
	assert.Equal(t, kafka.ErrFenced, kerr.Code(), "%v", err)
	ckDrainEvents(zombie)

	_, hwm := partitionEnds(t, b, "ck-fence")
	assert.Equal(t, []string{"fresh"}, ckReadCommitted(t, addr, "ck-fence", hwm))
}

// TestConfluentTransactionTimesOut: a transaction left open past
// transaction.timeout.ms is aborted by the broker when its manual clock
// passes the timeout; the producer's commit then fails, and a
// read_committed reader never sees its record.
func TestConfluentTransactionTimesOut(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithClock(clk),
		broker.WithTopics(broker.TopicSpec{Name: "ck-slow", Partitions: 1}))
	addr := b.Addr()
	p := ckTxnProducer(t, addr, "ck-slow", "transaction.timeout.ms", 60000)
	require.NoError(t, p.BeginTransaction())
	for _, m := range ckProduce(t, p, ckMsg("ck-slow", "late")) {
		require.NoError(t, m.TopicPartition.Error)
	}
	info, ok := b.Transaction("ck-slow")
	require.True(t, ok)
	require.Equal(t, "Ongoing", info.State.String())

	clk.Advance(time.Minute)
	info, _ = b.Transaction("ck-slow")
	assert.Equal(t, "CompleteAbort", info.State.String())
	assert.Equal(t, 1, info.TimedOut)
	require.Error(t, p.CommitTransaction(ctxCK(t)), "the broker aborted it")
	ckDrainEvents(p)

	next := ckTxnProducer(t, addr, "ck-slow")
	require.NoError(t, next.BeginTransaction())
	ckProduce(t, next, ckMsg("ck-slow", "on time"))
	require.NoError(t, next.CommitTransaction(ctxCK(t)))
	_, hwm := partitionEnds(t, b, "ck-slow")
	assert.Equal(t, []string{"on time"}, ckReadCommitted(t, addr, "ck-slow", hwm))
}

// TestPythonTransactions runs transactions/transactions.py with the
// Confluent Python client against the vastfake binary in the kafka profile
// on a manual clock, and compares what it prints with
// transactions/expected.txt: consume-transform-produce with an abort, a
// fenced zombie, and a timeout the control plane's clock drives.
func TestPythonTransactions(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	runScript(t, buildVastfake(t), "transactions", "expected.txt", pythonWithConfluent, "transactions.py", "-profile", "kafka", "-manual-clock")
}

// TestKafkaJSTransactions runs kafkajs/transactions.js (kafkajs 2.2.4)
// against the vastfake binary in the kafka profile on a manual clock, and
// compares what it prints with kafkajs/expected-transactions.txt:
// consume-transform-produce with offsets sent to each transaction and the
// first aborted, a fenced zombie, and a timeout the control plane's clock
// drives.
func TestKafkaJSTransactions(t *testing.T) {
	t.Parallel()
	node := needKafkaJS(t)
	runScript(t, buildVastfake(t), "kafkajs", "expected-transactions.txt", node, "transactions.js", "-profile", "kafka", "-manual-clock")
}

// saramaTxnProducer is a sarama transactional sync producer for addr.
func saramaTxnProducer(t *testing.T, addr, id string) sarama.SyncProducer {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = id
	cfg.Producer.Retry.Max = 10
	cfg.Net.MaxOpenRequests = 1
	return saramaProducer(t, addr, cfg)
}

// saramaReadCommitted reads partition 0 of topic with isolation level
// read_committed until the partition's last data record, want records in
// all, and returns the values.
func saramaReadCommitted(t *testing.T, addr, topic string, want int) []string {
	t.Helper()
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	require.NoError(t, err)
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.Close()
	var got []string
	timeout := time.After(testTimeout)
	for len(got) < want {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case <-timeout:
			t.Fatalf("read_committed read %q, want %d records", got, want)
		}
	}
	return got
}

// TestSaramaTransactions: a sarama transactional producer's abort and
// commit, offsets sent to the transaction, and a zombie fenced by a newer
// producer with its transactional id. A read_committed sarama consumer reads
// only what committed.
func TestSaramaTransactions(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"),
		broker.WithTopics(broker.TopicSpec{Name: "sr-in", Partitions: 1}, broker.TopicSpec{Name: "sr-out", Partitions: 1}))
	addr := b.Addr()
	p := saramaTxnProducer(t, addr, "sr-etl")
	send := func(value string) {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sr-out", Partition: 0, Value: sarama.StringEncoder(value)})
		require.NoError(t, err)
	}
	require.NoError(t, p.BeginTxn())
	send("dropped")
	require.NoError(t, p.AbortTxn())
	require.NoError(t, p.BeginTxn())
	send("kept")
	require.NoError(t, p.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{"sr-in": {{Partition: 0, Offset: 7}}}, "sr-group"))
	off, ok := b.CommittedOffset("sr-group", "sr-in", 0)
	assert.False(t, ok && off == 7, "not committed before the transaction")
	require.NoError(t, p.CommitTxn())
	off, ok = b.CommittedOffset("sr-group", "sr-in", 0)
	assert.True(t, ok)
	assert.Equal(t, int64(7), off, "committed with the transaction")

	// A zombie: a second producer with the id fences the first.
	require.NoError(t, p.BeginTxn())
	send("zombie")
	fresh := saramaTxnProducer(t, addr, "sr-etl")
	require.NoError(t, fresh.BeginTxn())
	_, _, err := fresh.SendMessage(&sarama.ProducerMessage{Topic: "sr-out", Partition: 0, Value: sarama.StringEncoder("fresh")})
	require.NoError(t, err)
	require.NoError(t, fresh.CommitTxn())
	require.Error(t, p.CommitTxn(), "the zombie cannot commit")

	assert.Equal(t, []string{"kept", "fresh"}, saramaReadCommitted(t, addr, "sr-out", 2))
	var markers []string
	for _, r := range b.Records("sr-out", 0, 0) {
		if r.Marker != "" {
			markers = append(markers, r.Marker)
		}
	}
	assert.Equal(t, []string{"abort", "commit", "abort", "commit"}, markers, "the zombie's transaction was aborted when it was fenced")
}
