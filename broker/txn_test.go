package broker

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
)

// txnBatch is a one-record transactional batch of producer pid at epoch.
func txnBatch(pid int64, epoch int16, seq int32) log.Batch {
	raw := benchBatch(1)
	binary.BigEndian.PutUint16(raw[21:], uint16(0x10)) // attributes: transactional
	binary.BigEndian.PutUint64(raw[43:], uint64(pid))
	binary.BigEndian.PutUint16(raw[51:], uint16(epoch))
	binary.BigEndian.PutUint32(raw[53:], uint32(seq))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	b, err := log.ParseBatch(raw)
	if err != nil {
		panic(err)
	}
	return b
}

// TestBatchOfAnEndedTransactionIsNotAppended: a transactional batch checked
// while its transaction was open, whose transaction ends before the batch
// is appended (a client producing while it ends the transaction), is
// refused with INVALID_TXN_STATE rather than appended after the marker,
// where it would open a transaction nobody ends and hold read_committed
// readers at it for good.
func TestBatchOfAnEndedTransactionIsNotAppended(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
		WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	pid, epoch, code := b.coord.InitProducerID("late", time.Minute, -1, -1, func() int64 { return b.nextProducerID.Add(1) })
	require.Zero(t, code)
	require.Zero(t, b.coord.AddPartitionsToTxn("late", pid, epoch, []coordinator.TopicPartition{{Topic: "t", Partition: 0}}))
	part := b.data.get("t").partition(0)

	first := txnBatch(pid, epoch, 0)
	code, msg, check := b.checkTransactional("late", 11, first, "t", 0)
	require.Zero(t, code, msg)
	resp := kmsg.NewProduceResponseTopicPartition()
	b.appendPending([]pendingAppend{{resp: &resp, part: part, batch: first, txn: check}}, b.clock.Now())
	require.Zero(t, resp.ErrorCode, "appended while the transaction is open")

	late := txnBatch(pid, epoch, 1)
	code, _, check = b.checkTransactional("late", 11, late, "t", 0)
	require.Zero(t, code)
	require.Zero(t, b.coord.EndTxn("late", pid, epoch, true)) // ends between the check and the append
	resp = kmsg.NewProduceResponseTopicPartition()
	b.appendPending([]pendingAppend{{resp: &resp, part: part, batch: late, txn: check}}, b.clock.Now())
	assert.Equal(t, kerr.InvalidTxnState.Code, resp.ErrorCode)
	assert.Equal(t, int64(2), part.HighWatermark(), "the first batch and the commit marker, not the late batch")
	assert.Equal(t, part.HighWatermark(), part.LastStableOffset(), "no transaction left open")
	assert.Empty(t, part.OpenTransactions())
}
