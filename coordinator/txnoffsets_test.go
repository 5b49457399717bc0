package coordinator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// txnOffsetCommit commits offsets of topic's partitions 0..n-1 (offset
// first+p each) in the producer's transaction.
func (h *txnHarness) txnOffsetCommit(id string, pid int64, epoch int16, group, topic string, n int, first int64) *kmsg.TxnOffsetCommitResponse {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := range n {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = int32(p), first+int64(p), kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return h.c.TxnOffsetCommit(req)
}

// TestTxnOffsetsAreWrittenAtTxnOffsetCommit: each TxnOffsetCommit hands out
// its records at once, as one transactional batch of the producer's id and
// epoch, and EndTxn hands out only markers, the groups' among them, as
// Kafka's coordinator writes them.
func TestTxnOffsetsAreWrittenAtTxnOffsetCommit(t *testing.T) {
	var written []TxnOffsetRecords
	var plain int
	h := &txnHarness{}
	h.harness = newHarness(t, rules.Kafka(), func(c *Config) {
		c.WriteTxnMarkers = func(m TxnMarkers) { h.markers = append(h.markers, m) }
		c.TxnOffsetsTopic = func(r TxnOffsetRecords) { written = append(written, r) }
		c.OffsetsTopic = func(string, []OffsetsRecord) { plain++ }
	})
	pid, epoch := h.init("etl")
	require.Zero(t, h.c.AddOffsetsToTxn("etl", pid, epoch, "g"))
	resp := h.txnOffsetCommit("etl", pid, epoch, "g", "t", 3, 10)
	for _, p := range resp.Topics[0].Partitions {
		require.Zero(t, p.ErrorCode)
	}
	require.Len(t, written, 1, "one batch per TxnOffsetCommit")
	assert.Equal(t, "g", written[0].Group)
	assert.Equal(t, pid, written[0].ProducerID)
	assert.Equal(t, epoch, written[0].ProducerEpoch)
	require.Len(t, written[0].Keys, 3)
	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(written[0].Keys[2]))
	var v kmsg.OffsetCommitValue
	require.NoError(t, v.ReadFrom(written[0].Values[2]))
	assert.Equal(t, "t", k.Topic)
	assert.Equal(t, int32(2), k.Partition)
	assert.Equal(t, int64(12), v.Offset)

	require.Zero(t, h.c.EndTxn("etl", pid, epoch, true))
	assert.Len(t, written, 1, "EndTxn writes no offset record")
	assert.Zero(t, plain, "nor a plain one")
	require.Len(t, h.markers, 1)
	assert.Equal(t, []string{"g"}, h.markers[0].Groups)
	o, ok := h.c.CommittedOffset("g", "t", 2)
	assert.True(t, ok)
	assert.Equal(t, int64(12), o)
}

// TestLargeTransactionCommitsEveryOffset: a transaction holding more
// offsets than one apply chunk commits all of them, with the metadata
// accounting back to what the committed offsets hold; an abort of as many
// drops them at once.
func TestLargeTransactionCommitsEveryOffset(t *testing.T) {
	h := newTxnHarness(t)
	const n = 3*applyOffsetsChunk + 17
	pid, epoch := h.init("big")
	require.Zero(t, h.c.AddOffsetsToTxn("big", pid, epoch, "g"))
	h.txnOffsetCommit("big", pid, epoch, "g", "t", n, 0)
	assert.Equal(t, n, h.c.metaBytes)
	require.Zero(t, h.c.EndTxn("big", pid, epoch, true))
	for _, p := range []int32{0, applyOffsetsChunk, n - 1} {
		o, ok := h.c.CommittedOffset("g", "t", p)
		assert.True(t, ok, "partition %d", p)
		assert.Equal(t, int64(p), o)
	}
	assert.Equal(t, n, h.c.metaBytes, "one byte of metadata per committed offset")
	assert.Empty(t, h.c.txns.pending)

	require.Zero(t, h.c.AddOffsetsToTxn("big", pid, epoch, "g"))
	h.txnOffsetCommit("big", pid, epoch, "g", "t", n, 100)
	require.Zero(t, h.c.EndTxn("big", pid, epoch, false))
	o, _ := h.c.CommittedOffset("g", "t", n-1)
	assert.Equal(t, int64(n-1), o, "the abort changed nothing")
	assert.Equal(t, n, h.c.metaBytes)
	assert.Empty(t, h.c.txns.pending)
}

// TestLaterPlainCommitWinsOverTransaction: of a transactional offset and a
// plain OffsetCommit for the same partition, the later one stays, as
// Kafka keeps whichever record is later in __consumer_offsets.
func TestLaterPlainCommitWinsOverTransaction(t *testing.T) {
	h := newTxnHarness(t)
	plainCommit := func(partition int32, off int64) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		require.Zero(t, h.c.OffsetCommit(NoCaller, req).Topics[0].Partitions[0].ErrorCode)
	}
	pid, epoch := h.init("etl")
	require.Zero(t, h.c.AddOffsetsToTxn("etl", pid, epoch, "g"))
	plainCommit(0, 1)                                    // before the transaction's: the transaction's wins
	h.txnOffsetCommit("etl", pid, epoch, "g", "t", 2, 5) // partitions 0 and 1: 5 and 6
	plainCommit(1, 2)                                    // after it: stays
	require.Zero(t, h.c.EndTxn("etl", pid, epoch, true))
	o0, _ := h.c.CommittedOffset("g", "t", 0)
	o1, _ := h.c.CommittedOffset("g", "t", 1)
	assert.Equal(t, int64(5), o0)
	assert.Equal(t, int64(2), o1)
}
