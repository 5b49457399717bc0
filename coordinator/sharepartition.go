package coordinator

// Share partitions (KIP-932), the share-partition leader's half: for one
// share group and one partition, the state of each in-flight record
// (available, acquired, acknowledged, archived), the share-partition start
// offset, acquisition locks on the coordinator's clock, delivery counts
// and the acknowledgement types Accept, Release, Reject, Gap and Renew
// (KIP-1222), as Kafka 4.2's SharePartition keeps them.
//
// The in-flight records are kept as runs: consecutive offsets in one
// state, with one owner, delivery count and lock deadline. A run exists
// only for offsets that are records the partition read (a control batch
// or a gap left by compaction has none), and only from the start offset to
// the end of what was read, which group.share.partition.max.record.locks
// bounds; an acknowledgement that gives each record its own type splits
// runs down to one record. So the memory is in proportion to the records
// in flight, never to the offsets of the log or to members.

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordState is an in-flight record's state, named as Kafka's
// RecordState.
type recordState uint8

const (
	recordAvailable    recordState = iota // may be acquired
	recordAcquired                        // locked by a member until acknowledged, released or its lock ends
	recordAcknowledged                    // accepted: delivery complete
	recordArchived                        // rejected, or delivered too often: delivery complete, never again
)

func (s recordState) String() string {
	switch s {
	case recordAcquired:
		return "ACQUIRED"
	case recordAcknowledged:
		return "ACKNOWLEDGED"
	case recordArchived:
		return "ARCHIVED"
	}
	return "AVAILABLE"
}

func (s recordState) final() bool { return s == recordAcknowledged || s == recordArchived }

// Acknowledgement types of ShareFetch and ShareAcknowledge (Kafka's
// AcknowledgeType): Gap says there is no record at the offset (a control
// record, or one compaction removed); Renew (v2+, KIP-1222) extends the
// acquisition lock.
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// recordRun is a run of consecutive in-flight records in one state.
type recordRun struct {
	first, last int64
	// deadline is when an acquired run's lock ends, on the clock.
	deadline time.Time
	// owner is the member id that acquired the run.
	owner      string
	deliveries int16
	state      recordState
}

func (r *recordRun) len() int64 { return r.last - r.first + 1 }

// sameAs reports whether r and o may be one run: same state and, for
// records still in delivery, the same owner, delivery count and deadline.
func (r *recordRun) sameAs(o *recordRun) bool {
	if r.state != o.state {
		return false
	}
	if r.state.final() {
		return true
	}
	return r.owner == o.owner && r.deliveries == o.deliveries && r.deadline.Equal(o.deadline)
}

// sharePartition is one share group's state for one partition. Every field
// is guarded by Coordinator.mu.
type sharePartition struct {
	topic string // the topic's name when the state was made, for inspection
	part  int32
	// start is the share-partition start offset (SPSO): every record
	// before it is acknowledged or archived.
	start int64
	// end is one past the last offset read into the in-flight window: a
	// record from it on has not been read yet.
	end int64
	// runs are the in-flight records in [start, end), sorted, without
	// overlap; offsets between them are no records.
	runs []recordRun
	// records counts the records in runs, acquired the acquired ones.
	records, acquired int64
	// acknowledged and archived count the records that reached those
	// states since the state began, for inspection.
	acknowledged, archived int64

	timer   *timer
	timerAt time.Time
}

func (sp *sharePartition) stopTimer() {
	sp.timer.cancel()
	sp.timer = nil
	sp.timerAt = time.Time{}
}

// ShareBatch is one stored batch as a share partition reads it: its
// offsets, where it ends in the records the broker read, and whether it
// holds records to deliver (a control batch, or a batch of an aborted
// transaction read under read_committed, does not).
type ShareBatch struct {
	First, Last int64
	// End is the byte offset in the records read where the batch ends.
	End int
	// Skip marks a batch whose offsets are not records to deliver.
	Skip bool
}

// shareLimits are the settings a share partition acts on.
type shareLimits struct {
	lock     time.Duration
	delivery int16
	locks    int64
}

// firstAvailable returns where a fetch should read from: the first
// available record in flight, else the end of the window while the window
// has room for more; false when nothing can be acquired.
func (sp *sharePartition) firstAvailable(lim shareLimits) (int64, bool) {
	for i := range sp.runs {
		if sp.runs[i].state == recordAvailable {
			return sp.runs[i].first, true
		}
	}
	if sp.records < lim.locks {
		return sp.end, true
	}
	return 0, false
}

// moveStart moves the window to the log start: records deleted from the
// log (retention, DeleteRecords) leave the window, as Kafka's share
// partition moves its start offset to the log start offset. It returns
// whether anything changed.
func (sp *sharePartition) moveStart(logStart int64) bool {
	if logStart <= sp.start {
		return false
	}
	sp.cut(logStart)
	for len(sp.runs) > 0 && sp.runs[0].last < logStart {
		sp.dropRun(0)
	}
	sp.start = logStart
	sp.end = max(sp.end, logStart)
	sp.tidy()
	return true
}

// dropRun removes runs[i] from the window's counts and the window.
func (sp *sharePartition) dropRun(i int) {
	r := &sp.runs[i]
	sp.records -= r.len()
	if r.state == recordAcquired {
		sp.acquired -= r.len()
	}
	sp.runs = append(sp.runs[:i], sp.runs[i+1:]...)
}

// find returns the index of the first run whose last offset is at or after
// off.
func (sp *sharePartition) find(off int64) int {
	return sort.Search(len(sp.runs), func(i int) bool { return sp.runs[i].last >= off })
}

// cut splits the run holding off, if any, so that a run starts at off.
func (sp *sharePartition) cut(off int64) {
	i := sp.find(off)
	if i == len(sp.runs) || sp.runs[i].first >= off {
		return
	}
	r := sp.runs[i]
	left, right := r, r
	left.last, right.first = off-1, off
	sp.runs = append(sp.runs, recordRun{})
	copy(sp.runs[i+2:], sp.runs[i+1:])
	sp.runs[i], sp.runs[i+1] = left, right
}

// setState moves the runs of [first, last] to state, with the counts that
// follow; the caller has cut at first and last+1.
func (sp *sharePartition) setState(i int, state recordState) {
	r := &sp.runs[i]
	n := r.len()
	if r.state == recordAcquired {
		sp.acquired -= n
	}
	switch state {
	case recordAcquired:
		sp.acquired += n
	case recordAcknowledged:
		sp.acknowledged += n
	case recordArchived:
		sp.archived += n
	}
	r.state = state
	if state != recordAcquired {
		r.owner = ""
		r.deadline = time.Time{}
	}
}

// release makes runs[i] available again, or archives it once it was
// delivered lim.delivery times, as Kafka does when a lock ends or a member
// releases or leaves.
func (sp *sharePartition) release(i int, lim shareLimits) {
	if sp.runs[i].deliveries >= lim.delivery {
		sp.setState(i, recordArchived)
		return
	}
	sp.setState(i, recordAvailable)
}

// tidy merges neighbouring runs that can be one and moves the start offset
// past the records whose delivery is complete.
func (sp *sharePartition) tidy() {
	out := sp.runs[:0]
	for _, r := range sp.runs {
		if n := len(out); n > 0 && out[n-1].last+1 == r.first && out[n-1].sameAs(&r) {
			out[n-1].last = r.last
			continue
		}
		out = append(out, r)
	}
	clear(sp.runs[len(out):])
	sp.runs = out
	drop := 0
	for drop < len(sp.runs) && sp.runs[drop].state.final() {
		sp.records -= sp.runs[drop].len()
		drop++
	}
	if drop > 0 {
		n := copy(sp.runs, sp.runs[drop:])
		clear(sp.runs[n:])
		sp.runs = sp.runs[:n]
	}
	if len(sp.runs) > 0 {
		sp.start = sp.runs[0].first
	} else {
		sp.start = sp.end
	}
}

// acquire acquires for member the available records of batches (sorted, as
// read from the log from firstAvailable on), whole batches at a time until
// maxRecords are acquired: available records in the window first taken
// again, records past it read into it while the window holds fewer than
// lim.locks (the batch that crosses the bound is taken whole, as Kafka
// aligns acquisitions to batches). A record delivered lim.delivery times
// is archived instead. It returns the acquired records as ranges of one
// delivery count each, their number, and the indexes of the first and last
// batches that hold one (-1 for none).
func (sp *sharePartition) acquire(member string, batches []ShareBatch, maxRecords int, now time.Time, lim shareLimits) ([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, int, int, int) {
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	n, firstBatch, lastBatch := 0, -1, -1
	deadline := now.Add(lim.lock)
	note := func(first, last int64, deliveries int16) {
		if k := len(out); k > 0 && out[k-1].LastOffset+1 == first && out[k-1].DeliveryCount == deliveries {
			out[k-1].LastOffset = last
			return
		}
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = first, last, deliveries
		out = append(out, ar)
	}
	for bi, b := range batches {
		if n >= maxRecords {
			break
		}
		took := false
		// Records already in the window.
		if b.First < sp.end {
			last := min(b.Last, sp.end-1)
			sp.cut(b.First)
			sp.cut(last + 1)
			for i := sp.find(b.First); i < len(sp.runs) && sp.runs[i].first <= last; i++ {
				r := &sp.runs[i]
				if r.state != recordAvailable {
					continue
				}
				if r.deliveries >= lim.delivery {
					sp.setState(i, recordArchived)
					continue
				}
				sp.setState(i, recordAcquired)
				r.owner, r.deadline = member, deadline
				r.deliveries++
				note(r.first, r.last, r.deliveries)
				n += int(r.len())
				took = true
			}
		}
		// Records past the window.
		if b.Last >= sp.end {
			if sp.records >= lim.locks {
				break
			}
			first := max(b.First, sp.end)
			sp.end = b.Last + 1
			if !b.Skip {
				sp.runs = append(sp.runs, recordRun{first: first, last: b.Last, state: recordAcquired,
					owner: member, deadline: deadline, deliveries: 1})
				cnt := b.Last - first + 1
				sp.records += cnt
				sp.acquired += cnt
				note(first, b.Last, 1)
				n += int(cnt)
				took = true
			}
		}
		if took {
			if firstBatch < 0 {
				firstBatch = bi
			}
			lastBatch = bi
		}
	}
	sp.tidy()
	return out, n, firstBatch, lastBatch
}

// ackBatch is one acknowledgement batch of a request, for one partition.
type ackBatch struct {
	first, last int64
	types       []int8
}

// checkAckBatches validates a partition's acknowledgement batches as Kafka
// does before applying any: each batch's first offset at most its last,
// after the previous batch's last (ascending, no overlap), one type for the
// whole batch or one per offset, and each type one Kafka knows (Renew only
// where renew is allowed, ShareFetch and ShareAcknowledge v2+). It returns
// INVALID_REQUEST and why, or 0.
func checkAckBatches(batches []ackBatch, renew bool) (int16, string) {
	prev := int64(-1)
	for i, b := range batches {
		switch {
		case b.first < 0 || b.first > b.last:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Acknowledgement batch %d: first offset %d is not between 0 and its last offset %d.", i, b.first, b.last)
		case i > 0 && b.first <= prev:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Acknowledgement batch %d starts at %d, not after the previous batch's last offset %d: batches must be in offset order and must not overlap.", i, b.first, prev)
		case len(b.types) == 0:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Acknowledgement batch %d has no acknowledge type.", i)
		case len(b.types) > 1 && int64(len(b.types)) != b.last-b.first+1:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Acknowledgement batch %d has %d acknowledge types for %d offsets: give one type, or one per offset.", i, len(b.types), b.last-b.first+1)
		}
		for _, t := range b.types {
			if t < ackGap || t > ackRenew || t == ackRenew && !renew {
				return kerr.InvalidRequest.Code, fmt.Sprintf("Acknowledgement batch %d has the unknown acknowledge type %d.", i, t)
			}
		}
		prev = b.last
	}
	return errNone, ""
}

// acknowledge applies member's acknowledgement batches (checked with
// checkAckBatches) to the partition, all or none, as Kafka's
// SharePartition.acknowledge does: every record in a batch's range must be
// acquired by member, and offsets in the window that are no records are
// skipped. A record another member holds, one no member holds, one before
// the start offset (acknowledged or archived already: Kafka no longer has
// it in flight) or one past the window (never read, so never acquired)
// gets INVALID_RECORD_STATE and nothing changes. It returns whether a
// record became available again.
func (sp *sharePartition) acknowledge(member string, batches []ackBatch, now time.Time, lim shareLimits) (int16, string, bool) {
	for _, b := range batches {
		if b.first < sp.start {
			return kerr.InvalidRecordState.Code, fmt.Sprintf("Record %d was acknowledged or archived already: the share partition starts at %d.", b.first, sp.start), false
		}
		if b.last >= sp.end {
			return kerr.InvalidRecordState.Code, fmt.Sprintf("Offsets %d to %d were never acquired: the share partition has read up to offset %d.", max(b.first, sp.end), b.last, sp.end-1), false
		}
		for i := sp.find(b.first); i < len(sp.runs) && sp.runs[i].first <= b.last; i++ {
			r := &sp.runs[i]
			switch {
			case r.state != recordAcquired:
				return kerr.InvalidRecordState.Code, fmt.Sprintf("Record %d is %s, not acquired by this member.", max(r.first, b.first), r.state), false
			case r.owner != member:
				return kerr.InvalidRecordState.Code, fmt.Sprintf("Record %d is acquired by another member.", max(r.first, b.first)), false
			}
		}
	}
	released := false
	apply := func(first, last int64, t int8) {
		first = max(first, sp.start)
		if first > last {
			return
		}
		sp.cut(first)
		sp.cut(last + 1)
		for i := sp.find(first); i < len(sp.runs) && sp.runs[i].first <= last; i++ {
			switch t {
			case ackAccept:
				sp.setState(i, recordAcknowledged)
			case ackGap, ackReject:
				sp.setState(i, recordArchived)
			case ackRelease:
				sp.release(i, lim)
				released = released || sp.runs[i].state == recordAvailable
			case ackRenew:
				sp.runs[i].deadline = now.Add(lim.lock)
			}
		}
	}
	for _, b := range batches {
		if len(b.types) == 1 {
			apply(b.first, b.last, b.types[0])
			continue
		}
		// One type per offset: apply each run of equal types at once.
		from := 0
		for k := 1; k <= len(b.types); k++ {
			if k == len(b.types) || b.types[k] != b.types[from] {
				apply(b.first+int64(from), b.first+int64(k-1), b.types[from])
				from = k
			}
		}
	}
	sp.tidy()
	return errNone, "", released
}

// releaseOwned releases every record member holds, or archives it at the
// delivery limit, and reports whether one became available.
func (sp *sharePartition) releaseOwned(member string, lim shareLimits) bool {
	released := false
	for i := range sp.runs {
		if sp.runs[i].state == recordAcquired && sp.runs[i].owner == member {
			sp.release(i, lim)
			released = released || sp.runs[i].state == recordAvailable
		}
	}
	sp.tidy()
	return released
}

// expire releases every record whose lock ended at or before now, and
// reports whether one became available.
func (sp *sharePartition) expire(now time.Time, lim shareLimits) bool {
	released := false
	for i := range sp.runs {
		if sp.runs[i].state == recordAcquired && !sp.runs[i].deadline.After(now) {
			sp.release(i, lim)
			released = released || sp.runs[i].state == recordAvailable
		}
	}
	sp.tidy()
	return released
}

// nextDeadline returns the earliest lock deadline of the acquired records,
// and false when none is acquired.
func (sp *sharePartition) nextDeadline() (time.Time, bool) {
	var at time.Time
	for i := range sp.runs {
		r := &sp.runs[i]
		if r.state == recordAcquired && (at.IsZero() || r.deadline.Before(at)) {
			at = r.deadline
		}
	}
	return at, !at.IsZero()
}

// reset moves the partition to start offset off with no record in flight,
// as AlterShareGroupOffsets does.
func (sp *sharePartition) reset(off int64) {
	sp.stopTimer()
	sp.runs = nil
	sp.records, sp.acquired = 0, 0
	sp.start, sp.end = off, off
}

// ---- the coordinator's side ----

// armLocks sets sp's timer to its earliest lock deadline: when it passes,
// the records whose locks ended are released, fetches waiting for records
// are woken, and the timer is set again. Call it with c.mu held after sp
// changed.
func (c *Coordinator) armLocks(g *group, key tpid, sp *sharePartition) {
	at, ok := sp.nextDeadline()
	if !ok {
		sp.stopTimer()
		return
	}
	if sp.timer != nil && sp.timerAt.Equal(at) {
		return
	}
	sp.stopTimer()
	if c.closed {
		return
	}
	sp.timerAt = at
	sp.timer = c.after(max(at.Sub(c.clock.Now()), 0), func() {
		sp.timer, sp.timerAt = nil, time.Time{}
		if c.groups[g.name] != g || g.sg == nil || g.sg.partitions[key] != sp {
			return
		}
		if sp.expire(c.clock.Now(), c.shareLimits(g.name)) {
			c.shareRecordsAvailable()
		}
		c.armLocks(g, key, sp)
	})
}

// releaseMember releases the records member holds in every partition of
// g, as a leave or a fenced member does.
func (c *Coordinator) releaseMember(g *group, member string) {
	lim := c.shareLimits(g.name)
	released := false
	for key, sp := range g.sg.partitions {
		if sp.acquired == 0 {
			continue
		}
		if sp.releaseOwned(member, lim) {
			released = true
		}
		c.armLocks(g, key, sp)
	}
	if released {
		c.shareRecordsAvailable()
	}
}

// shareRecordsAvailable wakes the ShareFetch requests waiting for records:
// some were released. Call it with c.mu held.
func (c *Coordinator) shareRecordsAvailable() {
	if c.shareAvail != nil {
		close(c.shareAvail)
		c.shareAvail = nil
	}
}

// shareAvailable returns a channel closed the next time records of any
// share group become available again (released, their lock ended, or an
// offset reset). Call it with c.mu held.
func (c *Coordinator) shareAvailable() <-chan struct{} {
	if c.shareAvail == nil {
		c.shareAvail = make(chan struct{})
	}
	return c.shareAvail
}
