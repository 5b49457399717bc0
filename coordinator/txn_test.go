package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// txnHarness is a coordinator that records the markers it writes and hands
// out producer ids from 1.
type txnHarness struct {
	*harness
	markers []TxnMarkers
	nextPID int64
}

func newTxnHarness(t *testing.T) *txnHarness {
	h := &txnHarness{}
	h.harness = newHarness(t, rules.Kafka(), func(c *Config) {
		c.WriteTxnMarkers = func(m TxnMarkers) { h.markers = append(h.markers, m) }
	})
	return h
}

func (h *txnHarness) newID() int64 { h.nextPID++; return h.nextPID }

func (h *txnHarness) init(id string) (int64, int16) {
	h.t.Helper()
	pid, epoch, code := h.c.InitProducerID(id, time.Minute, -1, -1, h.newID)
	require.Zero(h.t, code)
	return pid, epoch
}

// TestTransactionalIDBound: at MaxTransactionalIDs ids a new one takes the
// place of the least recently used id with no open transaction; when every
// id has one open, a new id gets COORDINATOR_NOT_AVAILABLE until one ends.
func TestTransactionalIDBound(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	tp := []TopicPartition{{"t", 0}}
	pids := make([]int64, MaxTransactionalIDs)
	for i := range MaxTransactionalIDs {
		id := "txn-" + strconv.Itoa(i)
		pid, epoch := h.init(id)
		pids[i] = pid
		require.Zero(t, h.c.AddPartitionsToTxn(id, pid, epoch, tp))
	}
	require.Len(t, h.c.Transactions(), MaxTransactionalIDs)

	_, _, code := h.c.InitProducerID("one-more", time.Minute, -1, -1, h.newID)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, code, "every id has an open transaction")

	require.Zero(t, h.c.EndTxn("txn-7", pids[7], 0, true))
	h.init("one-more")
	assert.Len(t, h.c.Transactions(), MaxTransactionalIDs)
	_, ok := h.c.Transaction("txn-7")
	assert.False(t, ok, "the id with no open transaction made room")
	_, ok = h.c.Transaction("txn-8")
	assert.True(t, ok, "ids with open transactions are kept")
}

// TestTransactionGroupBound: a transaction commits offsets for at most
// MaxTransactionGroups groups.
func TestTransactionGroupBound(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	pid, epoch := h.init("groups")
	for i := range MaxTransactionGroups {
		require.Zero(t, h.c.AddOffsetsToTxn("groups", pid, epoch, "g"+strconv.Itoa(i)))
	}
	assert.Equal(t, kerr.InvalidTxnState.Code, h.c.AddOffsetsToTxn("groups", pid, epoch, "one-more"))
	assert.Zero(t, h.c.AddOffsetsToTxn("groups", pid, epoch, "g0"), "a group already in the transaction")
	info, _ := h.c.Transaction("groups")
	assert.Len(t, info.Groups, MaxTransactionGroups)
}

// TestTxnOffsetsCommitOnlyWithTheTransaction: offsets committed in a
// transaction are invisible (and unstable to a require_stable fetch) until
// it commits, and dropped when it aborts; their metadata counts against
// the coordinator's metadata bound while pending.
func TestTxnOffsetsCommitOnlyWithTheTransaction(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	pid, epoch := h.init("offs")
	commit := func(off int64, meta string) {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "offs", "g", pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = off, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := h.c.TxnOffsetCommit(req)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	fetch := func(stable bool) kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		req.Topics = append(req.Topics, rt)
		return h.c.OffsetFetch(req).Topics[0].Partitions[0]
	}

	require.Zero(t, h.c.AddOffsetsToTxn("offs", pid, epoch, "g"))
	commit(5, "m5")
	assert.Equal(t, int64(-1), fetch(false).Offset, "not visible before the commit")
	assert.Equal(t, kerr.UnstableOffsetCommit.Code, fetch(true).ErrorCode)
	assert.Equal(t, 2, h.c.metaBytes)
	require.Zero(t, h.c.EndTxn("offs", pid, epoch, false))
	assert.Equal(t, int64(-1), fetch(false).Offset, "dropped by the abort")
	assert.Zero(t, h.c.metaBytes)

	require.Zero(t, h.c.AddOffsetsToTxn("offs", pid, epoch, "g"))
	commit(7, "m7")
	require.Zero(t, h.c.EndTxn("offs", pid, epoch, true))
	got := fetch(true)
	assert.Zero(t, got.ErrorCode)
	assert.Equal(t, int64(7), got.Offset)
	assert.Equal(t, 2, h.c.metaBytes)
	assert.Empty(t, h.c.txns.pending, "no transaction holds an offset")
	require.Len(t, h.markers, 2, "one marker each, for the group's partition of __consumer_offsets")
	for _, m := range h.markers {
		assert.Empty(t, m.Partitions, "no partition was added")
		assert.Equal(t, []string{"g"}, m.Groups)
	}
}

// TestTransactionTimeoutFencesAndAborts: a transaction past its timeout is
// aborted on the clock with a bumped epoch; the producer can recover with
// InitProducerId naming its old epoch (KIP-360), and anything else with
// that epoch is fenced.
func TestTransactionTimeoutFencesAndAborts(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	pid, epoch, code := h.c.InitProducerID("slow", 10*time.Second, -1, -1, h.newID)
	require.Zero(t, code)
	require.Zero(t, h.c.AddPartitionsToTxn("slow", pid, epoch, []TopicPartition{{"t", 0}, {"t", 1}}))
	h.clk.Advance(10 * time.Second)
	require.Len(t, h.markers, 1)
	assert.Equal(t, TxnMarkers{TransactionalID: "slow", ProducerID: pid, ProducerEpoch: epoch + 1, Partitions: []TopicPartition{{"t", 0}, {"t", 1}}}, h.markers[0])
	assert.Equal(t, kerr.ProducerFenced.Code, h.c.EndTxn("slow", pid, epoch, true))
	code, _ = h.c.ProduceInTransaction("slow", pid, epoch, TopicPartition{"t", 0}, false)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, code)

	newPid, newEpoch, code := h.c.InitProducerID("slow", 10*time.Second, pid, epoch, h.newID)
	require.Zero(t, code, "recovering with the epoch the timeout bumped")
	assert.Equal(t, pid, newPid)
	assert.Equal(t, epoch+2, newEpoch)
	_, _, code = h.c.InitProducerID("slow", 10*time.Second, pid, epoch, h.newID)
	assert.Equal(t, kerr.ProducerFenced.Code, code, "an epoch two bumps old")
	info, _ := h.c.Transaction("slow")
	assert.Equal(t, 1, info.TimedOut)
}

// TestTxnCheckClosesWithTheTransaction: the check ProduceInTransaction hands out
// holds while the transaction is open and fails once it ends, even if a new
// one has begun since, so a batch checked against a transaction is never
// appended after that transaction's marker.
func TestTxnCheckClosesWithTheTransaction(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	pid, epoch := h.init("gate")
	tp := []TopicPartition{{"t", 0}}
	require.Zero(t, h.c.AddPartitionsToTxn("gate", pid, epoch, tp))
	code, still := h.c.ProduceInTransaction("gate", pid, epoch, tp[0], false)
	require.Zero(t, code)
	assert.True(t, still())
	require.Zero(t, h.c.EndTxn("gate", pid, epoch, true))
	assert.False(t, still(), "the transaction ended")
	require.Zero(t, h.c.AddPartitionsToTxn("gate", pid, epoch, tp))
	assert.False(t, still(), "a new transaction is not the one checked")
	code, _ = h.c.ProduceInTransaction("gate", pid, epoch, TopicPartition{"t", 1}, false)
	assert.Equal(t, kerr.TransactionAbortable.Code, code, "a partition not added: the broker answers Produce v11 so, older versions INVALID_TXN_STATE")
}

// TestTransactionalIDBytesBound: an id longer than MaxTransactionalIDBytes
// gets INVALID_REQUEST and is not kept; ids together are bounded by
// TransactionalIDTotalMaxBytes as their count is by MaxTransactionalIDs: a
// new id that does not fit forgets the least recently used idle ids, or gets
// COORDINATOR_NOT_AVAILABLE while every id kept has an open transaction. A
// group name longer than MaxGroupIDBytes gets INVALID_GROUP_ID from
// AddOffsetsToTxn and TxnOffsetCommit.
func TestTransactionalIDBytesBound(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	long := strings.Repeat("x", MaxTransactionalIDBytes)
	_, _, code := h.c.InitProducerID(long+"x", time.Minute, -1, -1, h.newID)
	assert.Equal(t, kerr.InvalidRequest.Code, code)
	assert.Empty(t, h.c.Transactions())

	n := TransactionalIDTotalMaxBytes / MaxTransactionalIDBytes
	pids := make([]int64, n)
	id := func(i int) string { return fmt.Sprintf("%08d", i) + long[8:] }
	for i := range n {
		pid, epoch := h.init(id(i))
		pids[i] = pid
		require.Zero(t, h.c.AddPartitionsToTxn(id(i), pid, epoch, []TopicPartition{{"t", 0}}))
	}
	_, _, code = h.c.InitProducerID(id(n), time.Minute, -1, -1, h.newID)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, code, "every id kept has an open transaction")
	_, _, code = h.c.InitProducerID("short", time.Minute, -1, -1, h.newID)
	assert.Zero(t, code, "a short id still fits")

	require.Zero(t, h.c.EndTxn(id(3), pids[3], 0, false))
	h.init(id(n))
	_, ok := h.c.Transaction(id(3))
	assert.False(t, ok, "the idle ids made room")
	_, ok = h.c.Transaction("short")
	assert.False(t, ok, "the least recently used idle id went first")
	_, ok = h.c.Transaction(id(4))
	assert.True(t, ok, "ids with an open transaction are kept")

	pid, epoch := h.init("short")
	require.Zero(t, h.c.AddPartitionsToTxn("short", pid, epoch, []TopicPartition{{"t", 0}}))
	assert.Equal(t, kerr.InvalidGroupID.Code, h.c.AddOffsetsToTxn("short", pid, epoch, strings.Repeat("g", MaxGroupIDBytes+1)))
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "short", strings.Repeat("g", MaxGroupIDBytes+1), pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	assert.Equal(t, kerr.InvalidGroupID.Code, h.c.TxnOffsetCommit(req).Topics[0].Partitions[0].ErrorCode)
}

// TestEachTransactionCopiesOneAtATime: EachTransaction holds no lock while
// its function runs (which may call the coordinator) and copies each id when
// it reaches it, so a transaction that ends meanwhile shows as it is then.
func TestEachTransactionCopiesOneAtATime(t *testing.T) {
	t.Parallel()
	h := newTxnHarness(t)
	pids := map[string]int64{}
	for _, id := range []string{"a", "b", "c"} {
		pid, epoch := h.init(id)
		pids[id] = pid
		require.Zero(t, h.c.AddPartitionsToTxn(id, pid, epoch, []TopicPartition{{"t", 2}, {"t", 0}, {"s", 1}, {"t", 0}}))
	}
	var seen []string
	h.c.EachTransaction(false, func(info TxnInfo) bool {
		seen = append(seen, info.TransactionalID+":"+info.State.String())
		if info.TransactionalID == "a" {
			assert.Equal(t, []TopicPartition{{"s", 1}, {"t", 0}, {"t", 2}}, info.Partitions, "sorted, each once")
			require.Zero(t, h.c.EndTxn("b", pids["b"], 0, true), "the coordinator serves while the walk is in its function")
		}
		return true
	})
	assert.Equal(t, []string{"a:Ongoing", "b:CompleteCommit", "c:Ongoing"}, seen)
	seen = nil
	h.c.EachTransaction(true, func(info TxnInfo) bool { seen = append(seen, info.TransactionalID); return true })
	assert.Equal(t, []string{"a", "c"}, seen)
}
