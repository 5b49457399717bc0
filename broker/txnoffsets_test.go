package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
)

// TestTransactionalOffsetsAreWrittenWhenCommitted: a TxnOffsetCommit
// writes its records to the group's partition of __consumer_offsets at
// once, as one transactional batch that read_committed readers cannot see
// (the partition's last stable offset stays before it), and EndTxn writes
// only the marker there, as Kafka's coordinator does; an aborted
// transaction's records stay in the topic, aborted.
func TestTransactionalOffsetsAreWrittenWhenCommitted(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
		WithTopics(TopicSpec{Name: "in", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionalID, initReq.TransactionTimeoutMillis = kmsg.StringPtr("etl"), 60_000
	ini, err := initReq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, ini.ErrorCode)
	offsets := b.data.get(offsetsTopic).partition(OffsetsTopicPartition("g"))

	// run adds the group, commits offsets of the three partitions in one
	// TxnOffsetCommit and ends the transaction.
	run := func(first int64, commit bool) {
		t.Helper()
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "etl", ini.ProducerID, ini.ProducerEpoch, "g"
		addResp, err := add.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Zero(t, addResp.ErrorCode)
		hwm := offsets.HighWatermark()

		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "etl", ini.ProducerID, ini.ProducerEpoch, "g"
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		for p := range int32(3) {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, first+int64(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		for _, p := range resp.Topics[0].Partitions {
			require.Zero(t, p.ErrorCode)
		}
		assert.Equal(t, hwm+3, offsets.HighWatermark(), "the three records are written at TxnOffsetCommit")
		assert.Equal(t, hwm, offsets.LastStableOffset(), "and held back from read_committed readers")

		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Group, fetch.RequireStable = "g", true
		ft := kmsg.NewOffsetFetchRequestTopic()
		ft.Topic, ft.Partitions = "in", []int32{0}
		fetch.Topics = append(fetch.Topics, ft)
		fresp, err := fetch.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.UnstableOffsetCommit.Code, fresp.Topics[0].Partitions[0].ErrorCode)

		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "etl", ini.ProducerID, ini.ProducerEpoch, commit
		endResp, err := end.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Zero(t, endResp.ErrorCode)
		if endResp.Version >= 5 { // KIP-890's second part: the next transaction's epoch
			ini.ProducerID, ini.ProducerEpoch = endResp.ProducerID, endResp.ProducerEpoch
		}
		assert.Equal(t, hwm+4, offsets.HighWatermark(), "EndTxn writes the marker alone")
		assert.Equal(t, hwm+4, offsets.LastStableOffset())
	}

	run(10, true)
	for p := range int32(3) {
		o, ok := b.coord.CommittedOffset("g", "in", p)
		assert.True(t, ok)
		assert.Equal(t, 10+int64(p), o)
	}
	assert.Empty(t, offsets.AbortedTransactions())

	run(20, false)
	o, _ := b.coord.CommittedOffset("g", "in", 2)
	assert.Equal(t, int64(12), o, "the abort commits nothing")
	require.Len(t, offsets.AbortedTransactions(), 1, "its records stay, aborted")
	assert.Equal(t, int64(4), offsets.AbortedTransactions()[0].FirstOffset)
}
