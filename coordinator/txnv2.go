package coordinator

// Transactions v2 (KIP-890's second part, Kafka 4.x with
// transaction.version 2): a producer adds partitions to its transaction by
// producing to them (Produce v12+, ProduceInTransaction with add) and a
// group by committing its offsets (TxnOffsetCommit v5+), and every EndTxn
// v5+ bumps the producer epoch and returns it (EndTxnV2), so that a zombie
// of the last transaction is fenced by the markers themselves. As in Kafka,
// what a request gets follows its own version: a client of the older
// protocol (AddPartitionsToTxn v0-v3, EndTxn v0-v4) keeps its epoch across
// transactions against the same coordinator. Produce v3-v11 is verified
// against the transaction without adding to it (KIP-890's first part), and
// so is AddPartitionsToTxn v4+ with VerifyOnly (VerifyPartitionsInTxn).

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndTxnV2 answers EndTxn v5+: it commits or aborts the producer's open
// transaction with the markers at the next epoch, and returns the producer
// id and epoch to use from now on, as Kafka's coordinator does under
// transaction.version 2: the next epoch, or, when the epoch has run out, a
// new producer id from newID at epoch 0. Its offsets are applied as
// EndTxn applies them. Without an open transaction an abort still bumps
// the epoch (a client whose produces all failed aborts whatever they may
// have added), and a commit gets INVALID_TXN_STATE. A retry of the EndTxn
// that ended the last transaction (the epoch before, or the last producer
// id's last epoch) gets no error and the current id and epoch; a retry
// asking the other outcome gets INVALID_TXN_STATE. Any other epoch gets
// PRODUCER_FENCED, another producer id INVALID_PRODUCER_ID_MAPPING. On an
// error the id and epoch returned are -1.
func (c *Coordinator) EndTxnV2(id string, producerID int64, epoch int16, commit bool, newID func() int64) (int64, int16, int16) {
	c.mu.Lock()
	t, code, apply := c.endTxnV2(id, producerID, epoch, commit, newID)
	pid, ep := int64(-1), int16(-1)
	if code == errNone {
		pid, ep = t.producerID, t.epoch
	}
	for {
		apply = c.applyPendingOffsets(apply, applyOffsetsChunk)
		c.unlock()
		if len(apply) == 0 {
			return pid, ep, code
		}
		c.mu.Lock()
	}
}

// endTxnV2 is EndTxnV2's decision, as Kafka's TransactionCoordinator makes
// it for a client of transaction.version 2. Call it with c.mu held.
func (c *Coordinator) endTxnV2(id string, producerID int64, epoch int16, commit bool, newID func() int64) (*transaction, int16, []*pendingOffsets) {
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable.Code, nil
	}
	t := c.txns.byID[id]
	if t == nil {
		return nil, kerr.InvalidProducerIDMapping.Code, nil
	}
	complete := t.state == TxnCompleteCommit || t.state == TxnCompleteAbort
	retryOnOverflow := complete && t.v2 && producerID == t.prevProducerID && epoch == math.MaxInt16-1 && t.epoch == 0
	retryOnBump := complete && t.v2 && producerID == t.producerID && epoch == t.lastEpoch && t.epoch == epoch+1
	if producerID != t.producerID && !retryOnOverflow {
		return nil, kerr.InvalidProducerIDMapping.Code, nil
	}
	retry := retryOnBump || retryOnOverflow
	if epoch != t.epoch && !retry {
		return nil, kerr.ProducerFenced.Code, nil
	}
	c.touch(t)
	switch t.state {
	case TxnOngoing:
		return t, errNone, c.endTxn(t, commit, endByClientV2, newID)
	case TxnCompleteCommit:
		if commit && retry {
			return t, errNone, nil
		}
		if commit || retry {
			return nil, kerr.InvalidTxnState.Code, nil
		}
	case TxnCompleteAbort:
		if commit {
			return nil, kerr.InvalidTxnState.Code, nil
		}
		if retry {
			return t, errNone, nil
		}
	case TxnEmpty:
		if commit {
			return nil, kerr.InvalidTxnState.Code, nil
		}
	}
	// An abort with nothing open: the epoch moves on all the same, and no
	// marker is written (Kafka's noPartitionAdded).
	c.bumpEpoch(t, newID)
	t.v2, t.state = true, TxnCompleteAbort
	c.touch(t)
	return t, errNone, nil
}

// ProduceInTransaction checks a transactional batch of the producer's
// transaction id, producer id and epoch bound for a partition, as Kafka's
// partition leader checks it with the transaction coordinator. With add (a
// Produce v12+, KIP-890's second part) the partition joins the producer's
// transaction, which starts if none is open; without it (Produce v3-v11,
// KIP-890's first part) the partition must be in the open transaction, else
// TRANSACTION_ABORTABLE (the broker answers older Produce versions
// INVALID_TXN_STATE). An unknown id or another producer id gets
// INVALID_PRODUCER_ID_MAPPING, another epoch INVALID_PRODUCER_EPOCH (Kafka's
// PRODUCER_FENCED, which a producer expects as INVALID_PRODUCER_EPOCH). With
// no error it returns the check to make again just before the append
// (TxnCheck).
func (c *Coordinator) ProduceInTransaction(id string, producerID int64, epoch int16, p TopicPartition, add bool) (int16, TxnCheck) {
	c.mu.Lock()
	defer c.unlock()
	t, code := c.producer(id, producerID, epoch)
	switch {
	case code == kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code, nil
	case t == nil:
		return code, nil
	case add:
		c.begin(t)
		t.parts.add([]TopicPartition{p})
	case t.state != TxnOngoing || !t.parts.has(p):
		return kerr.TransactionAbortable.Code, nil
	}
	n := t.number
	return errNone, func() bool { return t.open.Load() == n }
}

// VerifyPartitionsInTxn answers AddPartitionsToTxn v4+ with VerifyOnly, a
// partition leader asking whether partitions are in a producer's open
// transaction (KIP-890's first part): one code per partition, 0 for one in
// it and TRANSACTION_ABORTABLE for another; or, for them all,
// INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id) or
// PRODUCER_FENCED (another epoch), which it returns as all.
func (c *Coordinator) VerifyPartitionsInTxn(id string, producerID int64, epoch int16, parts []TopicPartition) (codes []int16, all int16) {
	c.mu.Lock()
	defer c.unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	t := c.txns.byID[id]
	switch {
	case t == nil || t.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	}
	codes = make([]int16, len(parts))
	for i, p := range parts {
		if t.state != TxnOngoing || !t.parts.has(p) {
			codes[i] = kerr.TransactionAbortable.Code
		}
	}
	return codes, errNone
}

// addGroupImplicitly adds group to t's transaction for a TxnOffsetCommit
// v5+ (KIP-890's second part: no AddOffsetsToTxn), starting the
// transaction if none is open; one group past MaxTransactionGroups gets
// INVALID_TXN_STATE, as from AddOffsetsToTxn. Call it with c.mu held.
func (c *Coordinator) addGroupImplicitly(t *transaction, group string) int16 {
	c.begin(t)
	if _, ok := t.groups[group]; !ok && len(t.groups) >= MaxTransactionGroups {
		return kerr.InvalidTxnState.Code
	}
	t.groups[group] = struct{}{}
	return errNone
}
