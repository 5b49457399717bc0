package coordinator

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndTxnV2BumpsTheEpoch: an EndTxn v5+ writes its markers at the next
// epoch and returns it; the producer's next transaction runs at that epoch,
// added to by producing, and a zombie at the old epoch is fenced.
func TestEndTxnV2BumpsTheEpoch(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init("etl")
	tp := TopicPartition{"t", 0}
	code, _ := h.c.ProduceInTransaction("etl", pid, epoch, tp, true)
	require.Zero(t, code, "a Produce v12 adds its partition")
	info, _ := h.c.Transaction("etl")
	assert.Equal(t, TxnOngoing, info.State)
	assert.Equal(t, []TopicPartition{tp}, info.Partitions)

	newPID, newEpoch, code := h.c.EndTxnV2("etl", pid, epoch, true, h.newID)
	require.Zero(t, code)
	assert.Equal(t, pid, newPID)
	assert.Equal(t, epoch+1, newEpoch)
	require.Len(t, h.markers, 1)
	assert.Equal(t, epoch+1, h.markers[0].ProducerEpoch, "the marker fences the old epoch in the partition")

	code, _ = h.c.ProduceInTransaction("etl", pid, epoch, tp, true)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, code, "a zombie of the last transaction")
	code, _ = h.c.ProduceInTransaction("etl", pid, newEpoch, tp, true)
	assert.Zero(t, code, "the next transaction at the new epoch")
}

// TestTransactionsV2BadInput: what Kafka's coordinator answers a client of
// transaction.version 2 that sends a stale, future or foreign producer, a
// retry, or an end with nothing open; and the older protocol's answers
// where the two differ (TxnOffsetCommit without AddOffsetsToTxn).
func TestTransactionsV2BadInput(t *testing.T) {
	type state struct {
		h          *txnHarness
		pid        int64
		epoch      int16 // the producer's current epoch
		tp         TopicPartition
		nextMarker int
	}
	setup := func(t *testing.T, open bool) *state {
		s := &state{h: newTxnHarness(t), tp: TopicPartition{"t", 0}}
		s.pid, s.epoch = s.h.init("etl")
		if open {
			code, _ := s.h.c.ProduceInTransaction("etl", s.pid, s.epoch, s.tp, true)
			require.Zero(t, code)
		}
		return s
	}
	txnOffsetCommit := func(s *state, version int16) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = version
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "etl", s.pid, s.epoch, "g"
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		return s.h.c.TxnOffsetCommit(req).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name string
		open bool
		run  func(t *testing.T, s *state)
	}{
		{"EndTxn v5 with a stale epoch", true, func(t *testing.T, s *state) {
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch-1, true, s.h.newID)
			assert.Equal(t, kerr.ProducerFenced.Code, code)
			_, _, code = s.h.c.InitProducerID("etl", time.Minute, -1, -1, s.h.newID)
			require.Zero(t, code) // fence it: the epoch moves on, the open transaction aborts
			pid, epoch, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
			assert.Equal(t, kerr.ProducerFenced.Code, code, "the fenced producer's commit")
			assert.Equal(t, int64(-1), pid)
			assert.Equal(t, int16(-1), epoch)
		}},
		{"EndTxn v5 with a future epoch", true, func(t *testing.T, s *state) {
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch+1, true, s.h.newID)
			assert.Equal(t, kerr.ProducerFenced.Code, code)
		}},
		{"EndTxn v5 with another producer id", true, func(t *testing.T, s *state) {
			_, _, code := s.h.c.EndTxnV2("etl", s.pid+100, s.epoch, true, s.h.newID)
			assert.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
			_, _, code = s.h.c.EndTxnV2("nobody", s.pid, s.epoch, true, s.h.newID)
			assert.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
		}},
		{"EndTxn v5 retried", true, func(t *testing.T, s *state) {
			pid, epoch, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
			require.Zero(t, code)
			rpid, repoch, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
			assert.Zero(t, code, "the same commit again: its answer again")
			assert.Equal(t, [2]int64{pid, int64(epoch)}, [2]int64{rpid, int64(repoch)})
			_, _, code = s.h.c.EndTxnV2("etl", s.pid, s.epoch, false, s.h.newID)
			assert.Equal(t, kerr.InvalidTxnState.Code, code, "a retry asking the other outcome")
			assert.Len(t, s.h.markers, 1, "one marker for the one transaction")
		}},
		{"EndTxn v5 commit with nothing open", false, func(t *testing.T, s *state) {
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
			assert.Equal(t, kerr.InvalidTxnState.Code, code)
		}},
		{"EndTxn v5 abort with nothing open bumps the epoch", false, func(t *testing.T, s *state) {
			pid, epoch, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, false, s.h.newID)
			require.Zero(t, code)
			assert.Equal(t, s.pid, pid)
			assert.Equal(t, s.epoch+1, epoch)
			assert.Empty(t, s.h.markers, "nothing to mark")
			_, _, code = s.h.c.EndTxnV2("etl", s.pid, s.epoch, false, s.h.newID)
			assert.Zero(t, code, "a retry of the abort")
		}},
		{"EndTxn v5 after the transaction timed out", true, func(t *testing.T, s *state) {
			s.h.clk.Advance(time.Minute)
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, false, s.h.newID)
			assert.Equal(t, kerr.ProducerFenced.Code, code, "the timeout fenced it: not a retry")
		}},
		{"EndTxn v5 when the epoch runs out", true, func(t *testing.T, s *state) {
			s.h.c.mu.Lock()
			s.h.c.txns.byID["etl"].epoch = math.MaxInt16 - 1
			s.h.c.mu.Unlock()
			pid, epoch, code := s.h.c.EndTxnV2("etl", s.pid, math.MaxInt16-1, true, s.h.newID)
			require.Zero(t, code)
			assert.NotEqual(t, s.pid, pid, "a new producer id")
			assert.Zero(t, epoch)
			assert.Equal(t, s.pid, s.h.markers[0].ProducerID, "the markers are the old producer's")
			assert.Equal(t, int16(math.MaxInt16), s.h.markers[0].ProducerEpoch)
			rpid, repoch, code := s.h.c.EndTxnV2("etl", s.pid, math.MaxInt16-1, true, s.h.newID)
			assert.Zero(t, code, "a retry with the old producer id")
			assert.Equal(t, pid, rpid)
			assert.Zero(t, repoch)
			_, ep, code := s.h.c.InitProducerID("etl", time.Minute, s.pid, math.MaxInt16-1, s.h.newID)
			assert.Zero(t, code, "KIP-360 recovery from the old producer id's last epoch")
			assert.Equal(t, int16(1), ep)
		}},
		{"Produce v12 of a fenced producer", true, func(t *testing.T, s *state) {
			_, _, code := s.h.c.InitProducerID("etl", time.Minute, -1, -1, s.h.newID)
			require.Zero(t, code)
			code, _ = s.h.c.ProduceInTransaction("etl", s.pid, s.epoch, TopicPartition{"t", 1}, true)
			assert.Equal(t, kerr.InvalidProducerEpoch.Code, code)
			info, _ := s.h.c.Transaction("etl")
			assert.Empty(t, info.Partitions, "nothing added")
		}},
		{"Produce v12 with a future epoch or a foreign producer", true, func(t *testing.T, s *state) {
			code, _ := s.h.c.ProduceInTransaction("etl", s.pid, s.epoch+1, s.tp, true)
			assert.Equal(t, kerr.InvalidProducerEpoch.Code, code)
			code, _ = s.h.c.ProduceInTransaction("etl", s.pid+100, s.epoch, s.tp, true)
			assert.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
			code, _ = s.h.c.ProduceInTransaction("nobody", s.pid, s.epoch, s.tp, true)
			assert.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
		}},
		{"Produce v11 to a partition not added", true, func(t *testing.T, s *state) {
			code, _ := s.h.c.ProduceInTransaction("etl", s.pid, s.epoch, TopicPartition{"t", 1}, false)
			assert.Equal(t, kerr.TransactionAbortable.Code, code)
		}},
		{"TxnOffsetCommit without AddOffsetsToTxn, by version", true, func(t *testing.T, s *state) {
			assert.Equal(t, kerr.InvalidTxnState.Code, txnOffsetCommit(s, 3))
			assert.Equal(t, kerr.TransactionAbortable.Code, txnOffsetCommit(s, 4))
			assert.Zero(t, txnOffsetCommit(s, 5), "v5 adds the group")
			info, _ := s.h.c.Transaction("etl")
			assert.Equal(t, []string{"g"}, info.Groups)
		}},
		{"TxnOffsetCommit v5 starts a transaction", false, func(t *testing.T, s *state) {
			assert.Zero(t, txnOffsetCommit(s, 5))
			info, _ := s.h.c.Transaction("etl")
			assert.Equal(t, TxnOngoing, info.State)
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
			require.Zero(t, code)
			o, ok := s.h.c.CommittedOffset("g", "t", 0)
			assert.True(t, ok)
			assert.Zero(t, o)
		}},
		{"AddPartitionsToTxn VerifyOnly", true, func(t *testing.T, s *state) {
			codes, all := s.h.c.VerifyPartitionsInTxn("etl", s.pid, s.epoch, []TopicPartition{s.tp, {"t", 1}})
			require.Zero(t, all)
			assert.Equal(t, []int16{0, kerr.TransactionAbortable.Code}, codes)
			_, all = s.h.c.VerifyPartitionsInTxn("etl", s.pid, s.epoch-1, []TopicPartition{s.tp})
			assert.Equal(t, kerr.ProducerFenced.Code, all)
			_, all = s.h.c.VerifyPartitionsInTxn("etl", s.pid+1, s.epoch, []TopicPartition{s.tp})
			assert.Equal(t, kerr.InvalidProducerIDMapping.Code, all)
			info, _ := s.h.c.Transaction("etl")
			assert.Len(t, info.Partitions, 1, "verifying adds nothing")
		}},
		{"an older client's EndTxn keeps the epoch", true, func(t *testing.T, s *state) {
			require.Zero(t, s.h.c.EndTxn("etl", s.pid, s.epoch, true))
			assert.Equal(t, s.epoch, s.h.markers[0].ProducerEpoch)
			info, _ := s.h.c.Transaction("etl")
			assert.Equal(t, s.epoch, info.ProducerEpoch)
			_, _, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch-1, true, s.h.newID)
			assert.Equal(t, kerr.ProducerFenced.Code, code, "no v5 retry of a v4 end")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t, tc.open)
			if tc.name == "EndTxn v5 with a stale epoch" {
				// A stale epoch needs a history: one transaction ended
				// by EndTxn v5 first, and the next one open.
				_, ep, code := s.h.c.EndTxnV2("etl", s.pid, s.epoch, true, s.h.newID)
				require.Zero(t, code)
				s.epoch = ep
				code, _ = s.h.c.ProduceInTransaction("etl", s.pid, s.epoch, s.tp, true)
				require.Zero(t, code)
			}
			tc.run(t, s)
		})
	}
}
