package coordinator

// Share sessions, ShareFetch and ShareAcknowledge (KIP-932): the requests a
// share group member sends to the leaders of its partitions. A share
// session is per group, member and broker, as Kafka's ShareSessionCache
// keeps it: epoch 0 opens it with the partitions to fetch (and ends the
// member's previous session on that broker, releasing what it acquired),
// each later request carries the session's next epoch and adds or forgets
// partitions, epoch -1 closes it (ShareFetch or ShareAcknowledge), and so
// does the connection's end. Acknowledgements ride on ShareFetch or come
// alone in ShareAcknowledge; both answer per partition.
//
// The broker reads the log (ShareLog); the coordinator decides what each
// member acquires.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds of share sessions, vastfake's own guards: Kafka bounds the
// sessions of a broker (group.share.max.share.sessions) but not their
// partitions.
const (
	// MaxShareSessionPartitions bounds the partitions one share session
	// fetches; a request that would add more gets INVALID_REQUEST.
	MaxShareSessionPartitions = 10_000
	// MaxShareSessionPartitionsTotal bounds the partitions of every share
	// session together; a request that would add more gets
	// SHARE_SESSION_LIMIT_REACHED.
	MaxShareSessionPartitionsTotal = 200_000
	// defaultShareMaxRecords is what a ShareFetch that names no
	// MaxRecords acquires at most (KIP-1206's default).
	defaultShareMaxRecords = 500
	// shareFetchMaxBytes caps the records of one ShareFetch answer, as
	// fetch.max.bytes (55 MiB) caps a Fetch's.
	shareFetchMaxBytes = 55 << 20
)

// Share session epochs with a meaning of their own.
const (
	shareEpochOpen  = 0
	shareEpochFinal = -1
)

// ShareLog is the broker's side of ShareFetch and ShareAcknowledge: where a
// partition is led and what its log holds. The coordinator calls it with
// its lock held; it must not call back into the Coordinator.
type ShareLog interface {
	// Locate names the topic whose ID is id and says whether the broker
	// the request reached serves partition p: code 0, or
	// UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION or
	// NOT_LEADER_OR_FOLLOWER with the current leader.
	Locate(id [16]byte, p int32) (topic string, leader ShareLeader, code int16)
	// Offsets returns the partition's log start offset, the end a share
	// group reads to (the high watermark, or the last stable offset when
	// committed: share.isolation.level=read_committed) and its leader
	// epoch.
	Offsets(topic string, p int32, committed bool) (logStart, end int64, leaderEpoch int32)
	// OffsetForTime returns the first offset whose record has a timestamp
	// at or after ts (unix milliseconds), or the end when none has.
	OffsetForTime(topic string, p int32, ts int64) int64
	// Read returns the stored batches from the one holding offset on, up
	// to maxBytes but at least one, below the end Offsets names, without
	// copying: Records must stay valid until the answer is written.
	Read(topic string, p int32, offset int64, maxBytes int, committed bool) (records []byte, batches []ShareBatch)
}

// ShareLeader is a partition's leader and its epoch, for the CurrentLeader
// hint of NOT_LEADER_OR_FOLLOWER.
type ShareLeader struct{ ID, Epoch int32 }

// shareSessionKey names a share session: Kafka keys them by group, member
// and the broker that holds them.
type shareSessionKey struct {
	group, member string
	node          int32
}

// shareSession is one share session. Every field is guarded by
// Coordinator.mu.
type shareSession struct {
	key shareSessionKey
	// epoch is the epoch the session's next request must carry.
	epoch int32
	// parts are the session's partitions, each true until an answer has
	// named it (a partition added is answered once, even empty).
	parts map[tpid]bool
	// conn is the connection that opened it: the session ends with it.
	conn <-chan struct{}
	// fetches counts the fetches of the session, for round-robin order.
	fetches int
}

// shareConn is a connection that holds share sessions.
type shareConn struct {
	sessions map[shareSessionKey]*shareSession
	unwatch  func() bool
}

func nextShareEpoch(e int32) int32 {
	if e >= 1<<31-1 {
		return 1
	}
	return e + 1
}

// partAcks are one partition's acknowledgement batches.
type partAcks struct {
	key     tpid
	batches []ackBatch
}

// shareAnswer collects the partitions of a ShareFetch answer, each once.
type shareAnswer struct {
	order []tpid
	parts map[tpid]*kmsg.ShareFetchResponseTopicPartition
}

func (a *shareAnswer) at(k tpid) *kmsg.ShareFetchResponseTopicPartition {
	if p := a.parts[k]; p != nil {
		return p
	}
	if a.parts == nil {
		a.parts = make(map[tpid]*kmsg.ShareFetchResponseTopicPartition)
	}
	p := new(kmsg.ShareFetchResponseTopicPartition)
	*p = kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = k.part
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	a.parts[k] = p
	a.order = append(a.order, k)
	return p
}

// fill writes the partitions into resp, grouped by topic in the order
// they were first named.
func (a *shareAnswer) fill(resp *kmsg.ShareFetchResponse) {
	resp.Topics = resp.Topics[:0]
	idx := map[[16]byte]int{}
	for _, k := range a.order {
		i, ok := idx[k.id]
		if !ok {
			i = len(resp.Topics)
			idx[k.id] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = k.id
			resp.Topics = append(resp.Topics, t)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, *a.parts[k])
	}
}

// checkShareCaller validates the group and member ids of a ShareFetch or
// ShareAcknowledge.
func checkShareCaller(group, member *string) (int16, string) {
	if group == nil || blank(*group) {
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	}
	if member == nil {
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	}
	return checkShareMemberID(*member)
}

// shareMemberGroup returns the share group in which member may open a
// session: UNKNOWN_MEMBER_ID when the group does not have it (it never
// joined, left, or was fenced), GROUP_ID_NOT_FOUND when the group is a
// classic or consumer group.
func (c *Coordinator) shareMemberGroup(group, member string) (*group, int16, string) {
	g := c.groups[group]
	switch {
	case g != nil && g.sg == nil:
		return nil, kerr.GroupIDNotFound.Code, "Group " + group + " is not a share group."
	case g == nil || g.sg.members[member] == nil:
		return nil, kerr.UnknownMemberID.Code, "Member " + member + " is not a member of share group " + group + ": it must join with ShareGroupHeartbeat first."
	}
	return g, errNone, ""
}

// ShareFetch answers ShareFetch v1-v2 (KIP-932, KIP-1206, KIP-1222) for
// the broker node the request reached: it opens, updates or closes the
// member's share session (epoch 0, the next epoch, -1), applies the
// acknowledgements it carries, then acquires available records of the
// session's partitions for the member, at most MaxRecords (500 when
// unset; whole batches, unless ShareAcquireMode is 1, record-limit) and
// MaxBytes (at most 55 MiB, at least one batch). conn is the connection's
// context, for its end only: the sessions it opened end with it.
//
// Errors are Kafka's: top level INVALID_REQUEST (empty group, a member id
// of the wrong shape, acknowledgements on epoch 0, forgotten topics on
// epoch -1, a renew request with fetch parameters),
// SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED, UNKNOWN_MEMBER_ID (opening a session for a
// member the group does not have) and GROUP_ID_NOT_FOUND; per partition
// UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER (with the leader), and as
// AcknowledgeErrorCode INVALID_REQUEST or INVALID_RECORD_STATE.
//
// When nothing was acquired and the request may wait (MaxWaitMillis > 0,
// no partition error, not a renew), it also returns a ShareFetchWait: the
// broker waits for new records or released ones and tries again with it,
// and answers with its Response. It never blocks.
func (c *Coordinator) ShareFetch(conn context.Context, node int32, req *kmsg.ShareFetchRequest, slog ShareLog) (*kmsg.ShareFetchResponse, *ShareFetchWait) {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrShareFetchResponse()
	resp.Version = req.Version
	fail := func(code int16, msg string) (*kmsg.ShareFetchResponse, *ShareFetchWait) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	if code, msg := checkShareCaller(req.GroupID, req.MemberID); code != errNone {
		return fail(code, msg)
	}
	groupID, member := *req.GroupID, *req.MemberID
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxWaitMillis != 0 || req.MinBytes != 0 || req.MaxRecords != 0) {
		return fail(kerr.InvalidRequest.Code, "A renew-acknowledgement ShareFetch (IsRenewAck) must not ask for records: MaxWaitMs, MinBytes and MaxRecords must be 0.")
	}
	acks := fetchAcks(req.Topics)
	key := shareSessionKey{groupID, member, node}
	sess := c.shareSessions[key]
	var g *group
	switch epoch := req.ShareSessionEpoch; {
	case epoch == shareEpochOpen:
		if len(acks) > 0 {
			return fail(kerr.InvalidRequest.Code, "Acknowledgements are not allowed on the ShareFetch that opens a share session (epoch 0).")
		}
		var code int16
		var msg string
		if g, code, msg = c.shareMemberGroup(groupID, member); g == nil {
			return fail(code, msg)
		}
		if sess != nil {
			c.endShareSession(sess, true)
		}
		parts := map[tpid]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts[tpid{t.TopicID, p.Partition}] = true
			}
		}
		if code, msg := c.shareSessionRoom(node, 0, len(parts)); code != errNone {
			return fail(code, msg)
		}
		sess = c.openShareSession(key, conn, parts)
	case epoch == shareEpochFinal:
		if sess == nil {
			return fail(kerr.ShareSessionNotFound.Code, "")
		}
		if len(req.ForgottenTopicsData) > 0 {
			return fail(kerr.InvalidRequest.Code, "The ShareFetch that closes a share session (epoch -1) must not forget topics.")
		}
		g = c.groups[groupID]
	case epoch > 0:
		if sess == nil {
			return fail(kerr.ShareSessionNotFound.Code, "")
		}
		if epoch != sess.epoch {
			return fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("The share session expects epoch %d, not %d.", sess.epoch, epoch))
		}
		added := 0
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if _, ok := sess.parts[tpid{t.TopicID, p.Partition}]; !ok {
					added++
				}
			}
		}
		if code, msg := c.shareSessionRoom(node, len(sess.parts), added); code != errNone {
			return fail(code, msg)
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				k := tpid{t.TopicID, p.Partition}
				if _, ok := sess.parts[k]; !ok {
					sess.parts[k] = true
					c.shareSessionParts++
				}
			}
		}
		for _, t := range req.ForgottenTopicsData {
			for _, p := range t.Partitions {
				k := tpid{t.TopicID, p}
				if _, ok := sess.parts[k]; ok {
					delete(sess.parts, k)
					c.shareSessionParts--
				}
			}
		}
		sess.epoch = nextShareEpoch(epoch)
		g = c.groups[groupID]
	default:
		return fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("Share session epoch %d is invalid.", epoch))
	}
	if g == nil || g.sg == nil { // the group was deleted under the session
		c.endShareSession(sess, false)
		return fail(kerr.UnknownMemberID.Code, "")
	}
	lim := c.shareLimits(groupID)
	resp.AcquisitionLockTimeoutMillis = int32(lim.lock / time.Millisecond)
	w := &ShareFetchWait{c: c, sess: sess, g: g, member: member, log: slog}
	c.applyShareAcks(g, member, slog, acks, renew, func(k tpid, code int16, msg string, leader ShareLeader) {
		p := w.answer.at(k)
		p.AcknowledgeErrorCode = code
		if msg != "" {
			p.AcknowledgeErrorMessage = kmsg.StringPtr(msg)
		}
		if code == kerr.NotLeaderForPartition.Code {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leader.ID, leader.Epoch
		}
	})
	if req.ShareSessionEpoch == shareEpochFinal {
		c.endShareSession(sess, true)
		w.answer.fill(resp)
		return resp, nil
	}
	if renew {
		w.answer.fill(resp)
		return resp, nil
	}
	w.maxRecords = int(req.MaxRecords)
	if w.maxRecords <= 0 {
		w.maxRecords = defaultShareMaxRecords
	}
	w.exact = req.Version >= 2 && req.ShareAcquireMode == 1
	w.maxBytes = min(max(int(req.MaxBytes), 0), shareFetchMaxBytes)
	w.resp = resp
	w.acquire()
	if w.acquired == 0 && !w.errors && req.MaxWaitMillis > 0 {
		w.avail = c.shareAvailable()
		return resp, w
	}
	w.answer.fill(resp)
	return resp, nil
}

// fetchAcks reads the acknowledgement batches of a ShareFetch, per
// partition, a partition named twice taking its first copy's.
func fetchAcks(topics []kmsg.ShareFetchRequestTopic) []partAcks {
	var out []partAcks
	var seen map[tpid]bool
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			k := tpid{t.TopicID, p.Partition}
			if seen[k] {
				continue
			}
			if seen == nil {
				seen = map[tpid]bool{}
			}
			seen[k] = true
			pa := partAcks{key: k, batches: make([]ackBatch, len(p.AcknowledgementBatches))}
			for i, b := range p.AcknowledgementBatches {
				pa.batches[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			out = append(out, pa)
		}
	}
	return out
}

// acknowledgeAcks reads the acknowledgement batches of a ShareAcknowledge,
// every partition named (even with no batch) answered once.
func acknowledgeAcks(topics []kmsg.ShareAcknowledgeRequestTopic) []partAcks {
	var out []partAcks
	seen := map[tpid]bool{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			k := tpid{t.TopicID, p.Partition}
			if seen[k] {
				continue
			}
			seen[k] = true
			pa := partAcks{key: k, batches: make([]ackBatch, len(p.AcknowledgementBatches))}
			for i, b := range p.AcknowledgementBatches {
				pa.batches[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			out = append(out, pa)
		}
	}
	return out
}

// applyShareAcks applies member's acknowledgements, partition by
// partition, and reports each partition's result to done: 0 or
// UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER (with the leader),
// INVALID_REQUEST for malformed batches (see checkAckBatches) or
// INVALID_RECORD_STATE (see sharePartition.acknowledge). A partition's
// batches apply all or none; the others are unaffected.
func (c *Coordinator) applyShareAcks(g *group, member string, slog ShareLog, acks []partAcks, renew bool, done func(k tpid, code int16, msg string, leader ShareLeader)) {
	if len(acks) == 0 {
		return
	}
	lim := c.shareLimits(g.name)
	now := c.clock.Now()
	released := false
	for _, pa := range acks {
		_, leader, code := slog.Locate(pa.key.id, pa.key.part)
		if code != errNone {
			done(pa.key, code, "", leader)
			continue
		}
		if code, msg := checkAckBatches(pa.batches, renew); code != errNone {
			done(pa.key, code, msg, leader)
			continue
		}
		if len(pa.batches) == 0 {
			done(pa.key, errNone, "", leader)
			continue
		}
		sp := g.sg.partitions[pa.key]
		if sp == nil {
			done(pa.key, kerr.InvalidRecordState.Code, "No record of the partition was acquired in this share group.", leader)
			continue
		}
		code, msg, rel := sp.acknowledge(member, pa.batches, now, lim)
		released = released || rel
		c.armLocks(g, pa.key, sp)
		done(pa.key, code, msg, leader)
	}
	if released {
		c.shareRecordsAvailable()
	}
}

// shareSessionRoom reports whether node may hold a session of have
// partitions with adding more: SHARE_SESSION_LIMIT_REACHED past
// group.share.max.share.sessions or MaxShareSessionPartitionsTotal,
// INVALID_REQUEST past MaxShareSessionPartitions.
func (c *Coordinator) shareSessionRoom(node int32, have, adding int) (int16, string) {
	switch {
	case have == 0 && c.shareSessionsByNode[node] >= c.share.MaxSessions:
		return kerr.ShareSessionLimitReached.Code, fmt.Sprintf("The broker holds %d share sessions, group.share.max.share.sessions.", c.share.MaxSessions)
	case have+adding > MaxShareSessionPartitions:
		return kerr.InvalidRequest.Code, fmt.Sprintf("A share session fetches at most %d partitions.", MaxShareSessionPartitions)
	case c.shareSessionParts+adding > MaxShareSessionPartitionsTotal:
		return kerr.ShareSessionLimitReached.Code, fmt.Sprintf("The broker's share sessions hold %d partitions together, vastfake's bound.", MaxShareSessionPartitionsTotal)
	}
	return errNone, ""
}

// openShareSession makes a session at epoch 1 (the epoch its next request
// carries) and has it end with conn.
func (c *Coordinator) openShareSession(key shareSessionKey, conn context.Context, parts map[tpid]bool) *shareSession {
	sess := &shareSession{key: key, epoch: 1, parts: parts}
	if c.shareSessions == nil {
		c.shareSessions = make(map[shareSessionKey]*shareSession)
		c.shareSessionsByNode = make(map[int32]int)
		c.shareConns = make(map[<-chan struct{}]*shareConn)
	}
	c.shareSessions[key] = sess
	c.shareSessionsByNode[key.node]++
	c.shareSessionParts += len(parts)
	if conn == nil || conn.Done() == nil {
		return sess
	}
	sess.conn = conn.Done()
	sc := c.shareConns[sess.conn]
	if sc == nil {
		sc = &shareConn{sessions: map[shareSessionKey]*shareSession{}}
		c.shareConns[sess.conn] = sc
		done := sess.conn
		c.watchers.Add(1)
		sc.unwatch = context.AfterFunc(conn, func() {
			defer c.watchers.Done()
			c.mu.Lock()
			defer c.unlock()
			if c.closed || c.shareConns[done] != sc {
				return
			}
			sc.unwatch = nil
			for _, s := range sc.sessions {
				c.endShareSession(s, true)
			}
			delete(c.shareConns, done)
		})
	}
	sc.sessions[key] = sess
	return sess
}

// endShareSession removes sess and, with release, releases the records its
// member acquired in its partitions, as Kafka does when a session closes
// (epoch -1), is replaced (epoch 0) or its connection ends.
func (c *Coordinator) endShareSession(sess *shareSession, release bool) {
	if c.shareSessions[sess.key] != sess {
		return
	}
	delete(c.shareSessions, sess.key)
	c.shareSessionsByNode[sess.key.node]--
	if c.shareSessionsByNode[sess.key.node] == 0 {
		delete(c.shareSessionsByNode, sess.key.node)
	}
	c.shareSessionParts -= len(sess.parts)
	if sc := c.shareConns[sess.conn]; sc != nil {
		delete(sc.sessions, sess.key)
		if len(sc.sessions) == 0 {
			if sc.unwatch != nil && sc.unwatch() {
				c.watchers.Done()
			}
			delete(c.shareConns, sess.conn)
		}
	}
	if !release {
		return
	}
	g := c.groups[sess.key.group]
	if g == nil || g.sg == nil {
		return
	}
	lim := c.shareLimits(g.name)
	released := false
	for k := range sess.parts {
		sp := g.sg.partitions[k]
		if sp == nil || sp.acquired == 0 {
			continue
		}
		if sp.releaseOwned(sess.key.member, lim) {
			released = true
		}
		c.armLocks(g, k, sp)
	}
	if released {
		c.shareRecordsAvailable()
	}
}

// dropShareSessionsOf ends every session of member in group, on any
// broker, without releasing: the caller releases all the member holds.
func (c *Coordinator) dropShareSessionsOf(group, member string) {
	for key, sess := range c.shareSessions {
		if key.group == group && key.member == member {
			c.endShareSession(sess, false)
		}
	}
}

// ShareFetchWait is a ShareFetch that acquired nothing and may wait for
// records: new ones appended to its partitions, or ones released in its
// group. The broker waits on its own data signal and on Released, calls
// Retry after each wake-up, and answers with Response once Retry reports
// done or MaxWaitMillis passed.
type ShareFetchWait struct {
	c      *Coordinator
	sess   *shareSession
	g      *group
	member string
	log    ShareLog
	resp   *kmsg.ShareFetchResponse
	answer shareAnswer

	maxRecords, maxBytes int
	exact                bool
	acquired             int
	errors               bool
	avail                <-chan struct{}
}

// Released returns a channel closed when records of any share group have
// been released since the last try.
func (w *ShareFetchWait) Released() <-chan struct{} { return w.avail }

// Retry tries to acquire again, and reports whether the fetch is done:
// records were acquired, a partition failed, or the session or its member
// is gone.
func (w *ShareFetchWait) Retry() bool {
	c := w.c
	c.mu.Lock()
	defer c.unlock()
	if c.closed || c.shareSessions[w.sess.key] != w.sess || c.groups[w.g.name] != w.g || w.g.sg.members[w.member] == nil {
		return true
	}
	w.acquire()
	w.avail = c.shareAvailable()
	return w.acquired > 0 || w.errors
}

// Response returns the answer with what was acquired.
func (w *ShareFetchWait) Response() *kmsg.ShareFetchResponse {
	c := w.c
	c.mu.Lock()
	defer c.unlock()
	w.answer.fill(w.resp)
	return w.resp
}

// acquire acquires records of the session's partitions, starting at a
// partition that moves on with each fetch, so that a member fetching fewer
// records than its partitions hold reads them all in turn. Call it with
// c.mu held.
func (w *ShareFetchWait) acquire() {
	c, sess, g := w.c, w.sess, w.g
	lim := c.shareLimits(g.name)
	set := c.shareSetting(g.name)
	now := c.clock.Now()
	keys := make([]tpid, 0, len(sess.parts))
	for k := range sess.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tpid) int {
		if a.id != b.id {
			return slices.Compare(a.id[:], b.id[:])
		}
		return int(a.part - b.part)
	})
	if n := len(keys); n > 1 {
		s := sess.fetches % n
		keys = append(keys[s:], keys[:s]...)
	}
	sess.fetches++
	for _, k := range keys {
		topic, leader, code := w.log.Locate(k.id, k.part)
		if code != errNone {
			p := w.answer.at(k)
			p.ErrorCode = code
			if code == kerr.NotLeaderForPartition.Code {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leader.ID, leader.Epoch
			}
			sess.parts[k] = true
			w.errors = true
			continue
		}
		if sess.parts[k] {
			w.answer.at(k) // a partition new to the session is answered once
			sess.parts[k] = false
		}
		if w.acquired >= w.maxRecords || w.maxBytes <= 0 {
			continue
		}
		logStart, end, _ := w.log.Offsets(topic, k.part, set.committed)
		sp := g.sg.partitions[k]
		if sp == nil {
			start := end
			switch {
			case set.reset == "earliest":
				start = logStart
			case set.resetBefore > 0:
				start = max(w.log.OffsetForTime(topic, k.part, now.Add(-set.resetBefore).UnixMilli()), logStart)
			}
			sp = &sharePartition{topic: topic, part: k.part, start: start, end: start}
			g.sg.partitions[k] = sp
		}
		if sp.moveStart(logStart) {
			c.armLocks(g, k, sp)
		}
		from, ok := sp.firstAvailable(lim)
		if !ok || from >= end {
			continue
		}
		records, batches := w.log.Read(topic, k.part, from, w.maxBytes, set.committed)
		// Only what lies below the end is for the group.
		for len(batches) > 0 && batches[len(batches)-1].First >= end {
			batches = batches[:len(batches)-1]
		}
		want := w.maxRecords - w.acquired
		if w.exact {
			batches = limitBatches(sp, batches, want)
		}
		got, n, fb, lb := sp.acquire(w.member, batches, want, now, lim)
		c.armLocks(g, k, sp)
		if n == 0 {
			continue
		}
		from0 := 0
		if fb > 0 {
			from0 = batches[fb-1].End
		}
		p := w.answer.at(k)
		p.Records = records[from0:batches[lb].End]
		p.AcquiredRecords = got
		w.acquired += n
		w.maxBytes -= len(p.Records)
	}
}

// limitBatches cuts batches so that acquiring them takes at most want
// records (ShareAcquireMode 1, record-limit): it walks the available
// records they hold and ends the last batch after the want-th.
func limitBatches(sp *sharePartition, batches []ShareBatch, want int) []ShareBatch {
	left := int64(want)
	for i, b := range batches {
		if b.Skip {
			continue
		}
		avail := int64(0)
		if b.First < sp.end {
			last := min(b.Last, sp.end-1)
			for j := sp.find(b.First); j < len(sp.runs) && sp.runs[j].first <= last; j++ {
				r := &sp.runs[j]
				if r.state == recordAvailable {
					avail += min(r.last, last) - max(r.first, b.First) + 1
				}
			}
		}
		if b.Last >= sp.end {
			avail += b.Last - max(b.First, sp.end) + 1
		}
		if avail < left {
			left -= avail
			continue
		}
		// The batch holds the last record wanted: find where it is.
		out := slices.Clone(batches[:i+1])
		cut := &out[i]
		off := max(b.First, sp.start)
		for off <= b.Last && left > 0 {
			if off >= sp.end {
				take := min(left, b.Last-off+1)
				off += take
				left -= take
				break
			}
			j := sp.find(off)
			if j == len(sp.runs) || sp.runs[j].first > off {
				next := sp.end
				if j < len(sp.runs) {
					next = sp.runs[j].first
				}
				off = min(next, b.Last+1)
				continue
			}
			r := &sp.runs[j]
			upto := min(r.last, b.Last)
			if r.state == recordAvailable {
				take := min(left, upto-off+1)
				left -= take
				off += take
				continue
			}
			off = upto + 1
		}
		cut.Last = off - 1
		return out
	}
	return batches
}

// ShareAcknowledge answers ShareAcknowledge v1-v2 (KIP-932, KIP-1222) for
// the broker node the request reached: it applies the acknowledgements,
// partition by partition, within the member's share session, whose epoch
// it moves on; epoch -1 closes the session after applying them, releasing
// what the member still holds in its partitions. Errors are Kafka's: top
// level INVALID_REQUEST (empty group, a member id of the wrong shape),
// INVALID_SHARE_SESSION_EPOCH (epoch 0, which only ShareFetch opens, or
// not the session's) and SHARE_SESSION_NOT_FOUND; per partition
// UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER (with the leader),
// INVALID_REQUEST and INVALID_RECORD_STATE. It never blocks.
func (c *Coordinator) ShareAcknowledge(node int32, req *kmsg.ShareAcknowledgeRequest, slog ShareLog) *kmsg.ShareAcknowledgeResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.Version = req.Version
	fail := func(code int16, msg string) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	if code, msg := checkShareCaller(req.GroupID, req.MemberID); code != errNone {
		return fail(code, msg)
	}
	groupID, member := *req.GroupID, *req.MemberID
	lim := c.shareLimits(groupID)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(lim.lock / time.Millisecond)
	}
	sess := c.shareSessions[shareSessionKey{groupID, member, node}]
	switch epoch := req.ShareSessionEpoch; {
	case epoch == shareEpochOpen:
		return fail(kerr.InvalidShareSessionEpoch.Code, "ShareAcknowledge cannot open a share session (epoch 0): ShareFetch opens it.")
	case sess == nil:
		return fail(kerr.ShareSessionNotFound.Code, "")
	case epoch == shareEpochFinal:
	case epoch != sess.epoch:
		return fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("The share session expects epoch %d, not %d.", sess.epoch, epoch))
	default:
		sess.epoch = nextShareEpoch(epoch)
	}
	g := c.groups[groupID]
	if g == nil || g.sg == nil {
		c.endShareSession(sess, false)
		return fail(kerr.UnknownMemberID.Code, "")
	}
	renew := req.Version >= 2 && req.IsRenewAck
	topicIdx := map[[16]byte]int{}
	c.applyShareAcks(g, member, slog, acknowledgeAcks(req.Topics), renew, func(k tpid, code int16, msg string, leader ShareLeader) {
		i, ok := topicIdx[k.id]
		if !ok {
			i = len(resp.Topics)
			topicIdx[k.id] = i
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = k.id
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareAcknowledgeResponseTopicPartition()
		p.Partition = k.part
		p.ErrorCode = code
		if msg != "" {
			p.ErrorMessage = kmsg.StringPtr(msg)
		}
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		if code == kerr.NotLeaderForPartition.Code {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = leader.ID, leader.Epoch
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	})
	if req.ShareSessionEpoch == shareEpochFinal {
		c.endShareSession(sess, true)
	}
	return resp
}
