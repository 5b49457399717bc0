package e2e_test

import (
	"net"
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

// TestTransactionsV2ByKafkaVersion runs one consume-transform-produce app
// (kgo's GroupTransactSession, read_committed) under Kafka 4.0 and 4.3.
// Under 4.3 the broker advertises transaction.version 2 and kgo runs
// KIP-890's second part: no AddPartitionsToTxn or AddOffsetsToTxn, every
// EndTxn at v5, and the producer's epoch one higher after each transaction.
// Under 4.0 it runs transactions v1: both Add requests, EndTxn below v5, one
// epoch throughout. Both commit the same records and offsets.
func TestTransactionsV2ByKafkaVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []broker.KafkaVersion{broker.Kafka4_0, broker.Kafka4_3} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.KafkaVersion(v),
				fixtures.Topic("in", 1), fixtures.Topic("out", 1))
			k.Produce("in", 0, "a", "b", "c")
			sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(k.Addr())},
				kgo.TransactionalID("etl"), kgo.ProducerLinger(10*time.Millisecond),
				kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
			require.NoError(t, err)
			defer sess.Close()
			ctx := ctxT(t)
			// kgo opts in to KIP-890's second part at BeginTransaction
			// once it has the broker's ApiVersions.
			require.NoError(t, sess.Client().Ping(ctx))
			for done := 0; done < 3; {
				require.NoError(t, sess.Begin())
				fs := sess.PollFetches(ctx)
				require.NoError(t, ctx.Err())
				fs.EachRecord(func(r *kgo.Record) {
					sess.Produce(ctx, &kgo.Record{Topic: "out", Value: append([]byte("x-"), r.Value...)}, func(_ *kgo.Record, err error) {
						assert.NoError(t, err)
					})
					done++
				})
				committed, err := sess.End(ctx, kgo.TryCommit)
				require.NoError(t, err)
				require.True(t, committed)
			}
			k.WaitCommitted("g", "in", 0, 3)
			k.WaitCommittedRecords("out", 0, "x-a", "x-b", "x-c")

			count := map[kmsg.Key]int{}
			maxVersion := map[kmsg.Key]int16{}
			for _, r := range k.Requests() {
				if r.ClientID != "" && r.ErrorCode == 0 {
					count[r.API]++
					maxVersion[r.API] = max(maxVersion[r.API], r.Version)
				}
			}
			info := k.Transactions()
			require.Len(t, info, 1)
			assert.Equal(t, count[kmsg.EndTxn], info[0].Committed)
			if v.TransactionsV2() {
				assert.Zero(t, count[kmsg.AddPartitionsToTxn], "Produce v12+ adds the partitions")
				assert.Zero(t, count[kmsg.AddOffsetsToTxn], "TxnOffsetCommit v5 adds the group")
				assert.Equal(t, int16(5), maxVersion[kmsg.EndTxn])
				assert.GreaterOrEqual(t, maxVersion[kmsg.Produce], int16(12))
				assert.Equal(t, int16(count[kmsg.EndTxn]), info[0].ProducerEpoch, "each EndTxn v5 bumped the epoch from 0")
			} else {
				assert.Positive(t, count[kmsg.AddPartitionsToTxn])
				assert.Positive(t, count[kmsg.AddOffsetsToTxn])
				assert.Less(t, maxVersion[kmsg.EndTxn], int16(5))
				assert.Zero(t, info[0].ProducerEpoch, "one epoch throughout")
			}
		})
	}
}

// txnWire drives one transactional id by hand over a raw connection, at
// the versions the test names.
type txnWire struct {
	t    *testing.T
	c    net.Conn
	corr int32
	id   string
	pid  int64
}

func (w *txnWire) send(version int16, req kmsg.Request, resp kmsg.Response) {
	w.t.Helper()
	w.corr++
	roundTrip(w.t, w.c, version, req, resp, w.corr)
}

// init sends InitProducerId v4 and returns the epoch.
func (w *txnWire) init() int16 {
	w.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(w.id), 60_000
	resp := kmsg.NewPtrInitProducerIDResponse()
	w.send(4, req, resp)
	require.Zero(w.t, resp.ErrorCode)
	w.pid = resp.ProducerID
	return resp.ProducerEpoch
}

// produce sends a one-record transactional batch of the producer at epoch
// with sequence seq and returns the partition's error code.
func (w *txnWire) produce(version int16, topic string, epoch int16, seq int32) int16 {
	w.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(w.id), -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = encodeBatch(func(b *kmsg.RecordBatch) {
		b.Attributes = 0x10 // transactional
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = w.pid, epoch, seq
	})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	w.send(version, req, resp)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// end sends EndTxn at version and returns the answer.
func (w *txnWire) end(version int16, epoch int16, commit bool) *kmsg.EndTxnResponse {
	w.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = w.id, w.pid, epoch, commit
	resp := kmsg.NewPtrEndTxnResponse()
	w.send(version, req, resp)
	return resp
}

// TestTransactionsV2BadInput sends, over the wire at the versions that
// carry KIP-890's second part, what a zombie or a confused client sends,
// and checks Kafka's error for each, and that nothing committed is lost:
// a Produce v12 of a fenced producer (INVALID_PRODUCER_EPOCH), an EndTxn v5
// with a stale epoch (PRODUCER_FENCED), a future epoch, a retried EndTxn v5
// (its first answer again), a commit with nothing open (INVALID_TXN_STATE),
// a transactional batch without a transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and an AddPartitionsToTxn v4
// VerifyOnly of a partition not in the transaction (TRANSACTION_ABORTABLE).
func TestTransactionsV2BadInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", 1), fixtures.Topic("u", 1))
	w := &txnWire{t: t, c: dialRaw(t, k.Addr()), id: "zombie-test"}
	e0 := w.init()

	require.Zero(t, w.produce(12, "t", e0, 0), "Produce v12 adds the partition")
	first := w.end(5, e0, true)
	require.Zero(t, first.ErrorCode)
	e1 := first.ProducerEpoch
	require.Equal(t, e0+1, e1)
	require.Equal(t, w.pid, first.ProducerID)

	again := w.end(5, e0, true)
	assert.Zero(t, again.ErrorCode, "a retry of the commit gets its answer again")
	assert.Equal(t, e1, again.ProducerEpoch)
	assert.Equal(t, kerr.InvalidTxnState.Code, w.end(5, e0, false).ErrorCode, "a retry asking the other outcome")
	assert.Equal(t, kerr.InvalidTxnState.Code, w.end(5, e1, true).ErrorCode, "a commit with nothing open")

	assert.Equal(t, kerr.InvalidProducerEpoch.Code, w.produce(12, "t", e0, 1), "the fenced epoch's Produce v12")
	require.Zero(t, w.produce(12, "t", e1, 0), "the new epoch starts at sequence 0")
	stale := w.end(5, e0, true)
	assert.Equal(t, kerr.ProducerFenced.Code, stale.ErrorCode, "EndTxn v5 with a stale epoch")
	assert.Equal(t, int64(-1), stale.ProducerID)
	assert.Equal(t, int16(-1), stale.ProducerEpoch)
	assert.Equal(t, kerr.ProducerFenced.Code, w.end(5, e1+1, true).ErrorCode, "a future epoch")

	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	vt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vt.TransactionalID, vt.ProducerID, vt.ProducerEpoch, vt.VerifyOnly = w.id, w.pid, e1, true
	for _, topic := range []string{"t", "u"} {
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topic, []int32{0}
		vt.Topics = append(vt.Topics, tt)
	}
	verify.Transactions = append(verify.Transactions, vt)
	vresp := kmsg.NewPtrAddPartitionsToTxnResponse()
	w.send(4, verify, vresp)
	require.Len(t, vresp.Transactions, 1)
	got := map[string]int16{}
	for _, tt := range vresp.Transactions[0].Topics {
		got[tt.Topic] = tt.Partitions[0].ErrorCode
	}
	assert.Equal(t, map[string]int16{"t": 0, "u": kerr.TransactionAbortable.Code}, got)

	noID := kmsg.NewPtrProduceRequest()
	noID.Acks, noID.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = encodeBatch(func(b *kmsg.RecordBatch) {
		b.Attributes = 0x10
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = w.pid, e1, 1
	})
	rt.Partitions = append(rt.Partitions, rp)
	noID.Topics = append(noID.Topics, rt)
	noIDResp := kmsg.NewPtrProduceResponse()
	w.send(12, noID, noIDResp)
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, noIDResp.Topics[0].Partitions[0].ErrorCode)

	second := w.end(5, e1, true)
	require.Zero(t, second.ErrorCode)
	k.WaitCommittedRecords("t", 0, "v", "v")
	info := k.Transactions()
	require.Len(t, info, 1)
	assert.Equal(t, 2, info[0].Committed)
	assert.Equal(t, e1+1, info[0].ProducerEpoch)
}

// TestOlderTransactionClientsOnAV2Broker: a client of the older protocol
// (AddPartitionsToTxn v3, Produce v11, EndTxn v4) runs its transactions
// against the broker that advertises transaction.version 2, keeping its
// epoch, and is refused only what Kafka refuses it: a partition it did not
// add gets TRANSACTION_ABORTABLE at Produce v11 and INVALID_TXN_STATE at
// v10.
func TestOlderTransactionClientsOnAV2Broker(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", 1), fixtures.Topic("u", 1))
	w := &txnWire{t: t, c: dialRaw(t, k.Addr()), id: "old-client"}
	epoch := w.init()
	for i := range 2 {
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = w.id, w.pid, epoch
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = "t", []int32{0}
		add.Topics = append(add.Topics, at)
		addResp := kmsg.NewPtrAddPartitionsToTxnResponse()
		w.send(3, add, addResp)
		require.Zero(t, addResp.Topics[0].Partitions[0].ErrorCode)
		require.Zero(t, w.produce(11, "t", epoch, int32(i)))
		assert.Equal(t, kerr.TransactionAbortable.Code, w.produce(11, "u", epoch, 0), "a partition not added, Produce v11")
		assert.Equal(t, kerr.InvalidTxnState.Code, w.produce(10, "u", epoch, 0), "the same at v10")
		end := w.end(4, epoch, true)
		require.Zero(t, end.ErrorCode)
	}
	k.WaitCommittedRecords("t", 0, "v", "v")
	info := k.Transactions()
	require.Len(t, info, 1)
	assert.Equal(t, epoch, info[0].ProducerEpoch, "EndTxn v4 keeps the epoch")
	assert.Empty(t, k.Values("u", 0))
}
