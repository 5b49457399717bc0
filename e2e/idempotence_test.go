package e2e_test

// Idempotent producers (kafka profile): sequence numbers checked per
// producer id, epoch and partition as Kafka checks them, and retries of a
// produce whose answer was lost stored once.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/fixtures"
)

// idemBatch is one batch of an idempotent producer: n records whose values
// are their sequence numbers.
type idemBatch struct {
	pid   int64
	epoch int16
	seq   int32
	n     int
}

// produceIdem sends one idempotent batch with a raw Produce and returns the
// partition's answer.
func produceIdem(t *testing.T, cl *kgo.Client, topic string, partition int32, b idemBatch) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	recs := make([]kmsg.Record, b.n)
	for i := range recs {
		recs[i] = kmsg.NewRecord()
		recs[i].Value = []byte(strconv.Itoa(int(b.seq) + i))
	}
	return rawProduce(t, cl, topic, partition, func(rb *kmsg.RecordBatch) {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = b.pid, b.epoch, b.seq
	}, recs...)
}

// TestIdempotentSequenceChecks drives one partition through every case of
// Kafka's producer-state checks with hand-built batches and checks each
// answer and what the log holds after.
func TestIdempotentSequenceChecks(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithClock(clk), broker.WithTopics(
		broker.TopicSpec{Name: "idem", Partitions: 2},
		broker.TopicSpec{Name: "appendtime", Partitions: 1, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}},
	))
	cl := newClient(t, b.Addr())

	const none = int16(0)
	steps := []struct {
		name      string
		partition int32
		batch     idemBatch
		code      int16
		base      int64 // the answer's base offset when code is none
	}{
		{"first batch", 0, idemBatch{7, 0, 0, 3}, none, 0},
		{"retry of the first is answered with its offset", 0, idemBatch{7, 0, 0, 3}, none, 0},
		{"next in sequence", 0, idemBatch{7, 0, 3, 2}, none, 3},
		{"older retry, still among the last five", 0, idemBatch{7, 0, 0, 3}, none, 0},
		{"overlapping but not equal range", 0, idemBatch{7, 0, 3, 1}, kerr.OutOfOrderSequenceNumber.Code, -1},
		{"gap", 0, idemBatch{7, 0, 10, 1}, kerr.OutOfOrderSequenceNumber.Code, -1},
		{"new epoch not at 0", 0, idemBatch{7, 1, 5, 1}, kerr.OutOfOrderSequenceNumber.Code, -1},
		{"new epoch at 0", 0, idemBatch{7, 1, 0, 1}, none, 5},
		{"old epoch", 0, idemBatch{7, 0, 5, 1}, kerr.InvalidProducerEpoch.Code, -1},
		{"retry from the old epoch", 0, idemBatch{7, 0, 3, 2}, kerr.InvalidProducerEpoch.Code, -1},
		{"negative sequence with a producer id", 0, idemBatch{7, 1, -1, 1}, kerr.InvalidRecord.Code, -1},
		{"unknown producer may start anywhere (KIP-360)", 0, idemBatch{8, 0, 42, 1}, none, 6},
		{"same producer, other partition, own sequence", 1, idemBatch{7, 1, 0, 2}, none, 0},
		{"sequence wraps past MaxInt32", 0, idemBatch{9, 0, math.MaxInt32 - 1, 2}, none, 7},
		{"0 follows MaxInt32", 0, idemBatch{9, 0, 0, 1}, none, 9},
	}
	for _, s := range steps {
		resp := produceIdem(t, cl, "idem", s.partition, s.batch)
		if !assert.Equal(t, s.code, resp.ErrorCode, "%s: got %v", s.name, kerr.ErrorForCode(resp.ErrorCode)) {
			continue
		}
		assert.Equal(t, s.base, resp.BaseOffset, s.name)
		if s.code != none && s.code != kerr.InvalidRecord.Code {
			require.NotNil(t, resp.ErrorMessage, s.name)
			assert.Contains(t, *resp.ErrorMessage, "producer 7", s.name)
		}
	}
	// Every accepted batch is stored once; retries added nothing.
	var values []string
	for _, r := range b.Records("idem", 0, 0) {
		values = append(values, string(r.Value))
	}
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "0", "42", strconv.Itoa(math.MaxInt32 - 1), strconv.Itoa(math.MaxInt32), "0"}, values)

	// Only five batches are remembered: after five more, the first batch
	// of the epoch is out of sequence rather than a retry, as in Kafka.
	for seq := int32(1); seq <= 5; seq++ {
		require.Equal(t, none, produceIdem(t, cl, "idem", 1, idemBatch{7, 1, 2 * seq, 2}).ErrorCode)
	}
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, produceIdem(t, cl, "idem", 1, idemBatch{7, 1, 0, 2}).ErrorCode, "the sixth batch back is forgotten")
	resp := produceIdem(t, cl, "idem", 1, idemBatch{7, 1, 2, 2})
	assert.Equal(t, none, resp.ErrorCode, "the fifth batch back is a retry")
	assert.Equal(t, int64(2), resp.BaseOffset)

	// A retry's answer carries the first append's time, not the retry's.
	first := produceIdem(t, cl, "appendtime", 0, idemBatch{11, 0, 0, 1})
	require.Equal(t, none, first.ErrorCode)
	require.Equal(t, clk.Now().UnixMilli(), first.LogAppendTime)
	clk.Advance(time.Minute)
	retry := produceIdem(t, cl, "appendtime", 0, idemBatch{11, 0, 0, 1})
	assert.Equal(t, none, retry.ErrorCode)
	assert.Equal(t, first.BaseOffset, retry.BaseOffset)
	assert.Equal(t, first.LogAppendTime, retry.LogAppendTime)
	assert.Len(t, b.Records("appendtime", 0, 0), 1)
}

// TestIdempotentStateLifetime: a producer's state outlives a restart of
// the broker and the deletion of its records, as Kafka's does, and expires
// after producer.id.expiration.ms without appends on the broker's clock.
func TestIdempotentStateLifetime(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.ManualClock(time.Now()),
		fixtures.Topic("idem", 1))
	b := k.Broker()
	cl := newClient(t, b.Addr())

	require.Equal(t, int16(0), produceIdem(t, cl, "idem", 0, idemBatch{7, 0, 0, 2}).ErrorCode)
	k.Restart()
	resp := produceIdem(t, cl, "idem", 0, idemBatch{7, 0, 0, 2})
	assert.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int64(2), k.EndOffset("idem", 0), "a retry after a restart is still recognized")

	offs := make(kadm.Offsets)
	offs.AddOffset("idem", 0, 2, -1)
	res, err := k.Admin().DeleteRecords(ctxT(t), offs)
	require.NoError(t, err)
	require.NoError(t, res.Error())
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, produceIdem(t, cl, "idem", 0, idemBatch{7, 0, 5, 1}).ErrorCode,
		"the state outlives the producer's records")

	rc, err := k.Admin().DescribeBrokerConfigs(ctxT(t))
	require.NoError(t, err)
	require.Len(t, rc, 1)
	expiration := ""
	for _, c := range rc[0].Configs {
		if c.Key == "producer.id.expiration.ms" {
			expiration = c.MaybeValue()
		}
	}
	assert.Equal(t, "86400000", expiration, "DescribeConfigs shows the expiration in force")
	k.Advance(broker.DefaultProducerIDExpiration - time.Second)
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, produceIdem(t, cl, "idem", 0, idemBatch{7, 0, 5, 1}).ErrorCode,
		"not yet expired")
	k.Advance(2 * time.Second)
	resp = produceIdem(t, cl, "idem", 0, idemBatch{7, 0, 5, 1})
	assert.Equal(t, int16(0), resp.ErrorCode, "an expired producer may start anywhere")
	assert.Equal(t, int64(2), resp.BaseOffset)
}

// TestIdempotentRetryAfterLostAnswer is the proof with kgo: the answers to
// some produce requests are dropped after the records are stored, so the
// producer retries them. An idempotent producer ends with every record once,
// in order; a producer without idempotence stores the retried records
// twice, which is what makes the test able to fail.
func TestIdempotentRetryAfterLostAnswer(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
			opts := []kgo.Opt{kgo.SeedBrokers(k.Addr()), kgo.ProducerLinger(0), kgo.RecordRetries(10), kgo.MetadataMinAge(100 * time.Millisecond)}
			if !idempotent {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
			cl, err := kgo.NewClient(opts...)
			require.NoError(t, err)
			defer cl.Close()
			// Make sure the producer has its id before faults start.
			require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "orders", Value: []byte("0")}).FirstErr())

			// The answers to records 5, 10 and 15 are lost.
			const n = 20
			for i := 1; i < n; i++ {
				if i%5 == 0 {
					k.DropAnswerNext(kmsg.Produce, 1, fixtures.OnTopic("orders"))
				}
				require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}).FirstErr())
			}
			want := make([]string, n)
			for i := range want {
				want[i] = strconv.Itoa(i)
			}
			got := k.Values("orders", 0)
			if idempotent {
				assert.Equal(t, want, got, "every record once, in order")
			} else {
				// The producer cannot tell its lost answers from lost
				// requests and sends those records again.
				dup := slices.Concat(want[:6], want[5:11], want[10:16], want[15:])
				assert.Equal(t, dup, got, "without idempotence the retried records are stored twice")
			}
			dropped := 0
			for _, r := range k.Broker().Requests() {
				if r.API == kmsg.Produce && r.Fault && r.Closed {
					dropped++
				}
			}
			assert.Equal(t, 3, dropped, "three answers were dropped")
		})
	}
}
