package broker

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
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

// TestMemoryOfTransactionPartitions: what open transactions keep for their
// partitions follows the bytes their AddPartitionsToTxn requests sent: about
// as much with many partitions per topic (100 transactions × 10,000
// partitions of one topic), and at most 3 times as much with one partition
// per topic (100 transactions × 2,000 topics); a set of partitions per
// transaction kept 28 times the bytes sent.
func TestMemoryOfTransactionPartitions(t *testing.T) {
	for _, shape := range []struct {
		name   string
		topics int
		parts  int32
		txns   int
		factor float64
	}{
		{"many partitions per topic", 1, 10_000, 100, 1.5},
		{"one partition per topic", 2000, 1, 100, 3},
	} {
		t.Run(shape.name, func(t *testing.T) {
			var specs []TopicSpec
			for i := range shape.topics {
				specs = append(specs, TopicSpec{Name: fmt.Sprintf("t%04d", i), Partitions: shape.parts})
			}
			b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))), WithTopics(specs...))
			require.NoError(t, err)
			defer b.Close()
			nc, err := net.Dial("tcp", b.Addr())
			require.NoError(t, err)
			defer nc.Close()
			require.NoError(t, nc.SetDeadline(time.Now().Add(2*time.Minute)))
			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.SetVersion(3)
			for _, spec := range specs {
				at := kmsg.NewAddPartitionsToTxnRequestTopic()
				at.Topic = spec.Name
				for p := range spec.Partitions {
					at.Partitions = append(at.Partitions, p)
				}
				add.Topics = append(add.Topics, at)
			}
			sent := 0
			before := liveHeap()
			for i := range shape.txns {
				init := kmsg.NewPtrInitProducerIDRequest()
				init.SetVersion(4)
				init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(fmt.Sprintf("tx-%05d", i)), 60_000
				ir := roundTrip(t, nc, init).(*kmsg.InitProducerIDResponse)
				require.Zero(t, ir.ErrorCode)
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = *init.TransactionalID, ir.ProducerID, ir.ProducerEpoch
				sent += len(kmsg.NewRequestFormatter(kmsg.FormatterClientID("repeat")).AppendRequest(nil, add, 1))
				ar := roundTrip(t, nc, add).(*kmsg.AddPartitionsToTxnResponse)
				require.Zero(t, ar.Topics[0].Partitions[0].ErrorCode)
			}
			kept := int64(liveHeap()) - int64(before) - int64(b.buffers.freeBytes())
			t.Logf("%d transactions: AddPartitionsToTxn sent %d KiB, the broker keeps %d KiB (%.2f×)",
				shape.txns, sent>>10, kept>>10, float64(kept)/float64(sent))
			assert.Less(t, float64(kept), shape.factor*float64(sent))
		})
	}
}

// TestMemoryOfCommitMarkers: each commit marker a transaction's end writes
// in one of its partitions costs a bounded amount of memory: its 78-byte
// batch, its index entry, its share of the partition's chunk and of the
// producer-state table (at most MaxProducerStates entries), at most
// markerCostBound bytes (docs/limits.md); retention bounds markers as it
// bounds the records they end. The transactions wrote nothing in these
// partitions, the usual case for most partitions of a wide transaction and
// the dearest: a marker has nothing to share its partition's memory with.
func TestMemoryOfCommitMarkers(t *testing.T) {
	shapes := []struct{ txns, parts int }{{1, 10_000}, {20, 10_000}, {200, 1_000}}
	if !raceDetector {
		// The shape of docs/limits.md's figure: 2,000,000 markers, some
		// 400 MB, too many for the race detector's shadow memory.
		shapes = append(shapes, struct{ txns, parts int }{200, 10_000})
	}
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("%d×%d", shape.txns, shape.parts), func(t *testing.T) {
			b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
				WithTopics(TopicSpec{Name: "t", Partitions: int32(shape.parts)}))
			require.NoError(t, err)
			defer b.Close()
			var all []coordinator.TopicPartition
			for p := range int32(shape.parts) {
				all = append(all, coordinator.TopicPartition{Topic: "t", Partition: p})
			}
			before := liveHeap()
			for i := range shape.txns {
				id := fmt.Sprintf("tx-%d", i)
				pid, epoch, code := b.coord.InitProducerID(id, time.Minute, -1, -1, func() int64 { return b.nextProducerID.Add(1) })
				require.Zero(t, code)
				require.Zero(t, b.coord.AddPartitionsToTxn(id, pid, epoch, all))
				require.Zero(t, b.coord.EndTxn(id, pid, epoch, true))
			}
			markers := int64(shape.txns * shape.parts)
			kept := int64(liveHeap()) - int64(before)
			t.Logf("%d markers: %d KiB kept, %d B a marker", markers, kept>>10, kept/markers)
			assert.Less(t, kept/markers, int64(markerCostBound))
		})
	}
}

// markerCostBound is the most memory one commit or abort marker may cost
// (measured: 335 bytes with 1 marker a partition, 271 with 20, 251 with
// 200; it was 4,431, 489 and 397 when every partition's first chunk was
// 4 KiB, its index doubled and every producer state had room for five
// batches).
const markerCostBound = 360
