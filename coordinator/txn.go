package coordinator

// Transactions: Kafka's transaction coordinator (TransactionCoordinator and
// TransactionMetadata), for the kafka and audit profiles. Each transactional
// id has a producer id and epoch, a state, the partitions and groups of its
// open transaction, and the offsets it commits for those groups, which
// become a group's committed offsets only when the transaction commits.
// Ending a transaction writes its markers at once through
// Config.WriteTxnMarkers: vastfake's transaction states therefore go
// straight from Ongoing to CompleteCommit or CompleteAbort, and no request
// ever waits on a pending transition (CONCURRENT_TRANSACTIONS is never
// answered).

import (
	"container/list"
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultTransactionMaxTimeout is Kafka's transaction.max.timeout.ms: an
// InitProducerId asking for a longer transaction.timeout.ms gets
// INVALID_TRANSACTION_TIMEOUT.
const DefaultTransactionMaxTimeout = 15 * time.Minute

// MaxTransactionalIDs bounds the transactional ids the coordinator keeps.
// Kafka keeps an id until it has been idle for transactional.id.expiration.ms
// (7 days); vastfake keeps at most this many, and a new id at the bound
// takes the place of the least recently used one with no open transaction,
// as if it had expired. When every id has an open transaction, a new one's
// InitProducerId gets COORDINATOR_NOT_AVAILABLE, which clients retry: open
// transactions end within their timeout.
const MaxTransactionalIDs = 10_000

// MaxTransactionalIDBytes bounds the length of a transactional id. Kafka
// writes the id into the key of its __transaction_state records as a
// string with a 16-bit length, so no id it can keep is longer; a longer
// one's InitProducerId gets INVALID_REQUEST, the code Kafka gives an id it
// cannot take (an empty one).
const MaxTransactionalIDBytes = 32767

// TransactionalIDTotalMaxBytes bounds the bytes of all the transactional
// ids the coordinator keeps together: a new id that does not fit takes the
// place of the least recently used ids with no open transaction, as one past
// MaxTransactionalIDs does, and gets COORDINATOR_NOT_AVAILABLE when every id
// kept has an open transaction. Kafka keeps ids on disk and has no such
// bound; 10,000 ids of 32,767 bytes would otherwise keep 320 MiB.
const TransactionalIDTotalMaxBytes = 16 << 20

// MaxTransactionGroups bounds the consumer groups one transaction commits
// offsets for (AddOffsetsToTxn). Kafka has no such bound (a transaction
// adds at most the 50 partitions of __consumer_offsets); one more gets
// INVALID_TXN_STATE.
const MaxTransactionGroups = 1_000

// TxnState is a transaction's state, named as Kafka's DescribeTransactions
// and ListTransactions name it.
type TxnState int

// The states a transactional id's transaction goes through.
const (
	TxnEmpty TxnState = iota
	TxnOngoing
	TxnCompleteCommit
	TxnCompleteAbort
)

// String returns Kafka's name of the state.
func (s TxnState) String() string {
	switch s {
	case TxnOngoing:
		return "Ongoing"
	case TxnCompleteCommit:
		return "CompleteCommit"
	case TxnCompleteAbort:
		return "CompleteAbort"
	}
	return "Empty"
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// TxnMarkers is what ending a transaction writes: a commit or abort marker,
// with the producer's id and epoch, in each partition of the transaction.
type TxnMarkers struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Partitions      []TopicPartition
	// Groups are the consumer groups whose offsets the transaction
	// commits (AddOffsetsToTxn): Kafka adds each group's partition of
	// __consumer_offsets to the transaction and writes a marker there too.
	Groups []string
}

// TxnInfo describes one transactional id, as DescribeTransactions does.
type TxnInfo struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	State           TxnState
	Timeout         time.Duration
	// Start is when the open transaction began (its first partition or
	// group), zero when none is open.
	Start      time.Time
	Partitions []TopicPartition // sorted
	Groups     []string         // sorted
	// Committed and Aborted count the transactions the id ended, and
	// TimedOut those of the aborted ones the coordinator aborted at their
	// timeout.
	Committed, Aborted, TimedOut int
}

// transaction is one transactional id's state.
type transaction struct {
	id         string
	producerID int64
	epoch      int16
	lastEpoch  int16 // the epoch before the coordinator last bumped it, or -1
	// prevProducerID is the producer id before the epoch ran out and the
	// coordinator gave a new one, or -1 (Kafka's previousProducerId).
	prevProducerID int64
	// v2 says the last transaction ended by an EndTxn v5+, which bumped
	// the epoch (KIP-890's second part): an EndTxn v5+ with the epoch
	// before is then a retry (endTxnV2).
	v2      bool
	timeout time.Duration
	state   TxnState
	start   time.Time
	idle    *list.Element // in txns.idle while no transaction is open
	parts   partSet       // of the open transaction
	groups  map[string]struct{}
	offsets map[string]*pendingOffsets // by group, applied at commit (txnoffsets.go)
	timer   *timer
	// number counts the transactions begun; open is number while one is
	// open and 0 once it ends, read without the coordinator's lock by
	// InTransaction's check (TxnCheck).
	number uint64
	open   atomic.Uint64

	committed, aborted, timedOut int
}

// TxnCheck reports whether the transaction a batch was checked against
// (InTransaction) is still open. The broker calls it just before it appends
// the batch, under the same lock the markers are written under: a batch a
// client sends while its transaction ends is then either in the log before
// the marker or refused, never left after it as the start of a transaction
// nobody will end (the "hanging transaction" KIP-890 closes).
type TxnCheck func() bool

// txns is the coordinator's transaction state; its fields are guarded by
// Coordinator.mu.
type txns struct {
	byID map[string]*transaction
	// idle lists the ids with no open transaction, least recently used
	// first: the ones roomForTxn may forget.
	idle list.List
	// pending holds, per group, the offsets of open transactions and of
	// committed ones not yet applied (txnoffsets.go), for OffsetFetch's
	// require_stable.
	pending map[string]map[*pendingOffsets]struct{}
	// idBytes is the length of every id in byID together
	// (TransactionalIDTotalMaxBytes), idleBytes of those in idle.
	idBytes, idleBytes int
}

// sortedParts returns the partitions of t's open transaction by topic and
// partition.
func (t *transaction) sortedParts() []TopicPartition { return t.parts.all() }

func (t *transaction) info() TxnInfo {
	out := TxnInfo{
		TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch, State: t.state,
		Timeout: t.timeout, Start: t.start, Committed: t.committed, Aborted: t.aborted, TimedOut: t.timedOut,
	}
	out.Partitions = t.sortedParts()
	for g := range t.groups {
		out.Groups = append(out.Groups, g)
	}
	sort.Strings(out.Groups)
	return out
}

// InitProducerID gives a transactional id its producer id and a new epoch,
// as Kafka's InitProducerId does with a transactional id: a new id gets a
// producer id from newID and epoch 0; a known one keeps its producer id and
// has its epoch bumped, which fences any producer still using an older
// epoch, and an open transaction is aborted first. A request naming the
// producer's id and epoch (v3+, KIP-360) must name the current epoch or the
// one before the coordinator's last bump (a transaction it timed out), else
// PRODUCER_FENCED. A timeout of 0 or over DefaultTransactionMaxTimeout gets
// INVALID_TRANSACTION_TIMEOUT. It never blocks.
func (c *Coordinator) InitProducerID(id string, timeout time.Duration, producerID int64, epoch int16, newID func() int64) (int64, int16, int16) {
	c.mu.Lock()
	defer c.unlock()
	switch {
	case c.closed:
		return -1, -1, kerr.CoordinatorNotAvailable.Code
	case len(id) > MaxTransactionalIDBytes:
		return -1, -1, kerr.InvalidRequest.Code
	case timeout <= 0 || timeout > DefaultTransactionMaxTimeout:
		return -1, -1, kerr.InvalidTransactionTimeout.Code
	}
	t := c.txns.byID[id]
	if t == nil {
		if !c.roomForTxn(len(id)) {
			return -1, -1, kerr.CoordinatorNotAvailable.Code
		}
		t = &transaction{id: id, producerID: newID(), lastEpoch: -1, prevProducerID: -1}
		c.txns.byID[id] = t
		c.txns.idBytes += len(id)
	} else {
		if producerID >= 0 && epoch >= 0 && !t.initFrom(producerID, epoch) {
			return -1, -1, kerr.ProducerFenced.Code
		}
		if t.state == TxnOngoing {
			c.endTxn(t, false, endFence)
		}
		c.bumpEpoch(t, newID)
	}
	t.timeout = timeout
	t.state = TxnEmpty
	c.touch(t)
	return t.producerID, t.epoch, errNone
}

// initFrom reports whether an InitProducerId naming producerID and epoch
// (v3+, KIP-360) may bump t: the current epoch, the one before the
// coordinator's last bump (a transaction it timed out or an EndTxn v5
// bumped), or, after the epoch ran out, the previous producer id at its
// last epoch, as Kafka's isValidProducerId accepts.
func (t *transaction) initFrom(producerID int64, epoch int16) bool {
	if producerID == t.producerID {
		return epoch == t.epoch || epoch == t.lastEpoch
	}
	return producerID == t.prevProducerID && epoch >= math.MaxInt16-1
}

// roomForTxn makes room for one more transactional id of size bytes under
// MaxTransactionalIDs and TransactionalIDTotalMaxBytes, forgetting the least
// recently used ids with no open transaction, and reports whether there is
// room. It forgets nothing when forgetting every idle id would not make
// room.
func (c *Coordinator) roomForTxn(size int) bool {
	full := func() bool {
		return len(c.txns.byID) >= MaxTransactionalIDs || c.txns.idBytes+size > TransactionalIDTotalMaxBytes
	}
	if !full() {
		return true
	}
	if c.txns.idBytes-c.txns.idleBytes+size > TransactionalIDTotalMaxBytes ||
		len(c.txns.byID)-c.txns.idle.Len() >= MaxTransactionalIDs {
		return false
	}
	for full() {
		oldest := c.txns.idle.Remove(c.txns.idle.Front()).(*transaction)
		c.txns.idleBytes -= len(oldest.id)
		delete(c.txns.byID, oldest.id)
		c.txns.idBytes -= len(oldest.id)
	}
	return true
}

// bumpEpoch gives t its next epoch; past the last one it gets a new
// producer id at epoch 0, as Kafka does.
func (c *Coordinator) bumpEpoch(t *transaction, newID func() int64) {
	if t.epoch >= math.MaxInt16-1 {
		if newID != nil {
			t.prevProducerID = t.producerID
			t.producerID, t.epoch, t.lastEpoch = newID(), 0, -1
		} else if t.epoch < math.MaxInt16 {
			t.lastEpoch, t.epoch = t.epoch, math.MaxInt16
		}
		return
	}
	t.lastEpoch = t.epoch
	t.epoch++
}

// touch marks t used now: an idle id moves to the back of txns.idle, one
// with its transaction open leaves it. Call it with c.mu held.
func (c *Coordinator) touch(t *transaction) {
	if t.idle != nil {
		c.txns.idle.Remove(t.idle)
		c.txns.idleBytes -= len(t.id)
		t.idle = nil
	}
	if t.state != TxnOngoing {
		t.idle = c.txns.idle.PushBack(t)
		c.txns.idleBytes += len(t.id)
	}
}

// producer finds the transaction a transactional request names and checks
// its producer id and epoch, as Kafka's coordinator does:
// INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id,
// PRODUCER_FENCED for another epoch.
func (c *Coordinator) producer(id string, producerID int64, epoch int16) (*transaction, int16) {
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
	c.touch(t)
	return t, errNone
}

// begin makes t's transaction Ongoing if it is not yet, starting its
// timeout on the coordinator's clock.
func (c *Coordinator) begin(t *transaction) {
	if t.state == TxnOngoing {
		return
	}
	t.state, t.start = TxnOngoing, c.clock.Now()
	t.number++
	t.open.Store(t.number)
	c.touch(t) // no longer idle
	t.parts, t.groups, t.offsets = partSet{}, make(map[string]struct{}), nil
	t.timer = c.after(t.timeout, func() { c.endTxn(t, false, endFence) })
}

// AddPartitionsToTxn adds partitions to the producer's transaction,
// starting it if none is open. The broker answers partitions that do not
// exist itself. It returns the error code for every partition.
func (c *Coordinator) AddPartitionsToTxn(id string, producerID int64, epoch int16, parts []TopicPartition) int16 {
	c.mu.Lock()
	defer c.unlock()
	t, code := c.producer(id, producerID, epoch)
	if t == nil {
		return code
	}
	c.begin(t)
	t.parts.add(parts)
	return errNone
}

// AddOffsetsToTxn adds a consumer group to the producer's transaction, so
// that TxnOffsetCommit may commit the group's offsets in it.
func (c *Coordinator) AddOffsetsToTxn(id string, producerID int64, epoch int16, group string) int16 {
	c.mu.Lock()
	defer c.unlock()
	if group == "" || len(group) > MaxGroupIDBytes {
		return kerr.InvalidGroupID.Code
	}
	t, code := c.producer(id, producerID, epoch)
	if t == nil {
		return code
	}
	c.begin(t)
	if _, ok := t.groups[group]; !ok && len(t.groups) >= MaxTransactionGroups {
		return kerr.InvalidTxnState.Code
	}
	t.groups[group] = struct{}{}
	return errNone
}

// TxnOffsetCommit stores offsets a transaction commits for a group: they
// are written to __consumer_offsets at once, as one transactional batch
// (Config.TxnOffsetsTopic), and become the group's committed offsets when
// the transaction commits; they are dropped when it aborts (see
// txnoffsets.go). The transaction must have added the group
// (AddOffsetsToTxn), else INVALID_TXN_STATE (v0-v3) or
// TRANSACTION_ABORTABLE (v4); from v5 (KIP-890's second part) the commit
// adds the group itself, and starts the transaction if none is open. From v3 a commit naming a
// member is checked as OffsetCommit checks one (UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION, FENCED_INSTANCE_ID). Metadata is bounded as
// OffsetCommit bounds it. Topics are taken by name; the broker answers
// topics that do not exist.
func (c *Coordinator) TxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	t, code := c.producer(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	var partCheck func(string, int32) int16
	if t != nil {
		code, partCheck = c.txnCommitCheck(t, req)
	}
	var recs TxnOffsetRecords
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			if code == errNone && partCheck != nil {
				sp.ErrorCode = partCheck(rt.Topic, rp.Partition)
			}
			if sp.ErrorCode == errNone {
				var o offset
				if o, sp.ErrorCode = c.pendTxnOffset(t, req.Group, rt.Topic, rp); sp.ErrorCode == errNone && c.txnOffsetsLog != nil {
					k, v := offsetRecord(req.Group, TopicPartition{rt.Topic, rp.Partition}, o)
					recs.Keys, recs.Values = append(recs.Keys, k), append(recs.Values, v)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(recs.Keys) > 0 {
		recs.Group, recs.ProducerID, recs.ProducerEpoch = req.Group, t.producerID, t.epoch
		c.txnOffsetsLog(recs)
	}
	return resp
}

// txnCommitCheck checks a TxnOffsetCommit against t and its group, and
// returns the check of each partition a consumer group's member committing
// at an older epoch gets (see consumerGroup.commitCheck).
func (c *Coordinator) txnCommitCheck(t *transaction, req *kmsg.TxnOffsetCommitRequest) (int16, func(string, int32) int16) {
	if req.Group == "" || len(req.Group) > MaxGroupIDBytes {
		return kerr.InvalidGroupID.Code, nil
	}
	if _, ok := t.groups[req.Group]; !ok || t.state != TxnOngoing {
		switch {
		case req.Version >= 5: // KIP-890's second part: the commit adds the group
			if code := c.addGroupImplicitly(t, req.Group); code != errNone {
				return code, nil
			}
		case req.Version == 4: // KIP-890's first part: the client aborts
			return kerr.TransactionAbortable.Code, nil
		default:
			return kerr.InvalidTxnState.Code, nil
		}
	}
	if req.Version < 3 || req.MemberID == "" && req.Generation < 0 {
		return errNone, nil
	}
	g := c.lookup(req.Group)
	if g == nil {
		return kerr.IllegalGeneration.Code, nil
	}
	if g.sg != nil {
		return kerr.GroupIDNotFound.Code, nil // a share group commits no offsets
	}
	if g.cg != nil {
		// A consumer group's member commits with its member epoch, as
		// an OffsetCommit v9+ (Kafka's validateOffsetCommit).
		return g.cg.commitCheck(req.MemberID, req.Generation, 9, c.assignmentEpochs)
	}
	if _, code := g.validate(c.instanceID(req.InstanceID, true), req.MemberID, req.Generation); code != errNone {
		return code, nil
	}
	return errNone, nil
}

// EndTxn commits or aborts the producer's open transaction: its markers are
// written (Config.WriteTxnMarkers) and, for a commit, its offsets become
// their groups' committed offsets before EndTxn returns, applied a chunk at
// a time so that other clients wait at most one chunk (see txnoffsets.go).
// Ending again the way the last transaction ended answers no error (a
// retry); anything else without an open transaction gets
// INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(id string, producerID int64, epoch int16, commit bool) int16 {
	c.mu.Lock()
	code, apply := c.endTxnRequest(id, producerID, epoch, commit)
	for {
		apply = c.applyPendingOffsets(apply, applyOffsetsChunk)
		c.unlock()
		if len(apply) == 0 {
			return code
		}
		c.mu.Lock()
	}
}

// endTxnRequest is EndTxn's answer and the pending offsets its commit is to
// apply. Call it with c.mu held.
func (c *Coordinator) endTxnRequest(id string, producerID int64, epoch int16, commit bool) (int16, []*pendingOffsets) {
	t, code := c.producer(id, producerID, epoch)
	if t == nil {
		return code, nil
	}
	switch {
	case t.state == TxnOngoing:
		return errNone, c.endTxn(t, commit, endByClient)
	case commit && t.state == TxnCompleteCommit, !commit && t.state == TxnCompleteAbort:
		return errNone, nil
	}
	return kerr.InvalidTxnState.Code, nil
}

// endHow is who ends a transaction, which decides its markers' epoch.
type endHow int8

const (
	// endByClient: an EndTxn v0-v4; the epoch stays.
	endByClient endHow = iota
	// endByClientV2: an EndTxn v5+ (KIP-890's second part); the markers
	// carry the next epoch, which the producer gets back, or, with the
	// epoch run out, a new producer id (newID) at epoch 0.
	endByClientV2
	// endFence: the coordinator's own abort (a timeout, or a new
	// InitProducerId fencing the open transaction); the epoch is bumped
	// first, as Kafka's coordinator does, so the producer that began it
	// is fenced.
	endFence
)

// endTxn ends t's open transaction and returns, for a commit, the pending
// offsets to apply (applyPendingOffsets); an abort drops them. newID gives
// a new producer id for endByClientV2 when the epoch has run out. Call it
// with c.mu held.
func (c *Coordinator) endTxn(t *transaction, commit bool, how endHow, newID ...func() int64) []*pendingOffsets {
	t.timer.cancel()
	t.timer = nil
	if how == endFence && t.state != TxnOngoing {
		return nil // the timer fired after the transaction ended
	}
	t.open.Store(0) // before the markers: see TxnCheck
	m := TxnMarkers{TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch, Commit: commit}
	switch how {
	case endFence:
		c.bumpEpoch(t, nil)
		m.ProducerEpoch = t.epoch
		t.v2 = false // the producer is fenced, not retrying
		if c.clock.Now().Sub(t.start) >= t.timeout {
			t.timedOut++
		}
	case endByClientV2:
		m.ProducerEpoch = t.epoch + 1
		if t.epoch == math.MaxInt16 {
			m.ProducerEpoch = t.epoch
		}
	}
	m.Partitions = t.sortedParts()
	for g := range t.groups {
		m.Groups = append(m.Groups, g)
	}
	sort.Strings(m.Groups)
	if c.writeMarkers != nil && len(m.Partitions)+len(m.Groups) > 0 {
		c.writeMarkers(m)
	}
	if how == endByClientV2 {
		var id func() int64
		if len(newID) > 0 {
			id = newID[0]
		}
		c.bumpEpoch(t, id)
		t.v2 = true
	} else if how == endByClient {
		t.v2 = false
	}
	var apply []*pendingOffsets
	for _, name := range m.Groups {
		po := t.offsets[name]
		switch {
		case po == nil:
		case commit:
			apply = append(apply, po)
		default:
			c.dropPendingOffsets(po)
		}
	}
	if commit {
		t.state = TxnCompleteCommit
		t.committed++
	} else {
		t.state = TxnCompleteAbort
		t.aborted++
	}
	t.parts, t.groups, t.offsets = partSet{}, nil, nil
	c.touch(t)
	return apply
}

// txnTopicDeleted forgets a deleted topic's partitions and offsets in every
// transaction. Call it with c.mu held.
func (c *Coordinator) txnTopicDeleted(topic string) {
	for _, t := range c.txns.byID {
		t.parts.dropTopic(topic)
	}
	c.pendingTopicDeleted(topic)
}

// Transactions returns every transactional id the coordinator keeps, by id.
// See EachTransaction for a walk that copies one at a time.
func (c *Coordinator) Transactions() []TxnInfo {
	var out []TxnInfo
	c.EachTransaction(false, func(t TxnInfo) bool { out = append(out, t); return true })
	return out
}

// EachTransaction calls fn with a copy of each transactional id's state, by
// id, or only of those with an open transaction when openOnly is set, until
// fn returns false. It takes the ids under the coordinator's lock, then
// copies one id's state at a time, and holds no lock while fn runs: a slow
// or large walk holds up other clients of the coordinator for one copy at
// most. An id forgotten meanwhile is left out, one that ended or opened
// its transaction meanwhile shows as it is when copied.
func (c *Coordinator) EachTransaction(openOnly bool, fn func(TxnInfo) bool) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.txns.byID))
	for id, t := range c.txns.byID {
		if !openOnly || t.state == TxnOngoing {
			ids = append(ids, id)
		}
	}
	c.unlock()
	slices.Sort(ids)
	for _, id := range ids {
		info, ok := c.Transaction(id)
		if ok && (!openOnly || info.State == TxnOngoing) && !fn(info) {
			return
		}
	}
}

// Transaction returns one transactional id's state, and false if the
// coordinator does not know it.
func (c *Coordinator) Transaction(id string) (TxnInfo, bool) {
	c.mu.Lock()
	defer c.unlock()
	t := c.txns.byID[id]
	if t == nil {
		return TxnInfo{}, false
	}
	return t.info(), true
}

// DescribeTransactions answers DescribeTransactions: each id's state,
// producer, timeout, start and partitions; TRANSACTIONAL_ID_NOT_FOUND for
// an id the coordinator does not know.
func (c *Coordinator) DescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.Version = req.Version
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		t := c.txns.byID[id]
		switch {
		case c.closed:
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case t == nil:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			info := t.info()
			st.State = info.State.String()
			st.TimeoutMillis = int32(info.Timeout.Milliseconds())
			st.StartTimestamp = -1
			if info.State == TxnOngoing {
				st.StartTimestamp = info.Start.UnixMilli()
			}
			st.ProducerID, st.ProducerEpoch = info.ProducerID, info.ProducerEpoch
			for _, p := range info.Partitions {
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != p.Topic {
					tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					tt.Topic = p.Topic
					st.Topics = append(st.Topics, tt)
				}
				st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, p.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// ListTransactions answers ListTransactions: every transactional id, or
// those in the states and of the producer ids the request filters by, and
// (v1+) those whose open transaction has run at least DurationFilterMillis.
// Unknown state names are listed in UnknownStateFilters and match nothing.
func (c *Coordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.Version = req.Version
	if c.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	states := map[string]bool{}
	for _, s := range req.StateFilters {
		switch s {
		case "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "PrepareEpochFence", "Dead":
			states[s] = true
		default:
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	now := c.clock.Now()
	ids := make([]string, 0, len(c.txns.byID))
	for id := range c.txns.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := c.txns.byID[id]
		if len(req.StateFilters) > 0 && !states[t.state.String()] || len(pids) > 0 && !pids[t.producerID] {
			continue
		}
		if req.Version >= 1 && req.DurationFilterMillis >= 0 &&
			(t.state != TxnOngoing || now.Sub(t.start).Milliseconds() < req.DurationFilterMillis) {
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, t.producerID, t.state.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
