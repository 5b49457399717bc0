package log

// Idempotent producers: the state Kafka's ProducerStateManager keeps per
// producer id and partition, and the checks its ProducerAppendInfo runs on
// every batch that carries a producer id.

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// BatchesPerProducer is how many of a producer's latest batches a partition
// remembers to answer retries, Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
// Clients keep at most this many requests in flight per partition
// (max.in.flight.requests.per.connection <= 5 with idempotence).
const BatchesPerProducer = 5

// Errors Producers.Check refuses a batch with. The broker maps them to
// Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER and INVALID_PRODUCER_EPOCH.
var (
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	ErrInvalidEpoch       = errors.New("invalid producer epoch")
)

// Duplicate is where a retried batch was stored the first time.
type Duplicate struct {
	BaseOffset int64
	// Timestamp is the batch's max timestamp as stored (the append time
	// under LogAppendTime): what Kafka answers a duplicate's LogAppendTime
	// with.
	Timestamp int64
}

// batchMeta is what a partition remembers of one appended batch.
type batchMeta struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	timestamp         int64
}

// producer is one producer id's state in one partition. It is also a node
// of Producers' list ordered by last append, oldest first. Its ring of
// batches is allocated by its first batch: a state made by a transaction
// marker alone (a transaction that wrote nothing in the partition, the
// usual case for most partitions of a wide one) has none, and costs a
// quarter as much.
type producer struct {
	part       *Partition
	id         int64
	batches    *[BatchesPerProducer]batchMeta // a ring; next is where the next one goes; nil until the first batch
	lastAppend int64                          // broker time, unix ms
	prev, nxt  *producer
	epoch      int16
	n, next    int8
}

// newest returns the producer's latest batch; n must be > 0.
func (p *producer) newest() *batchMeta {
	return &p.batches[(p.next+BatchesPerProducer-1)%BatchesPerProducer]
}

type producerKey struct {
	part *Partition
	id   int64
}

// Producers holds the idempotence state of every producer id in every
// partition of a broker, up to a bound: when a new producer id would pass
// it, the one that appended least recently, in any partition, is forgotten
// first. It is not safe for concurrent use; the broker serializes it with
// its appends.
type Producers struct {
	max    int
	byKey  map[producerKey]*producer
	byPart map[*Partition]int // how many producers each partition has
	oldest *producer          // least recently appended
	newest *producer
}

// NewProducers returns an empty table that holds at most max producer
// states (one per producer id and partition); max must be at least 1.
func NewProducers(max int) *Producers {
	return &Producers{max: max, byKey: make(map[producerKey]*producer), byPart: make(map[*Partition]int)}
}

// Len returns how many producer states the table holds.
func (ps *Producers) Len() int { return len(ps.byKey) }

// LastSequence returns the last sequence number of a batch whose first is
// base and whose last record is lastOffsetDelta after its first, wrapping past math.MaxInt32 to 0 as Kafka's
// sequence numbers do.
func LastSequence(base int32, lastOffsetDelta int32) int32 {
	if base > math.MaxInt32-lastOffsetDelta {
		return lastOffsetDelta - (math.MaxInt32 - base) - 1
	}
	return base + lastOffsetDelta
}

// inSequence reports whether next follows last, 0 following math.MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// Check decides, as Kafka's broker does before appending, what to do with
// a batch that carries a producer id (ProducerID() >= 0) bound for part:
//
//   - A batch with the producer's current epoch and exactly the sequence
//     range of one of its last BatchesPerProducer batches is a retry: Check
//     returns where that batch was stored, and the batch must not be
//     stored again.
//   - An epoch older than the producer's returns ErrInvalidEpoch.
//   - A newer epoch must start at sequence 0, and the current epoch must
//     continue at the sequence after the producer's last batch; otherwise
//     ErrOutOfOrderSequence.
//   - A producer id the partition has no state of may start at any
//     sequence, as in Kafka since KIP-360 (its state may have expired).
//
// It returns (nil, nil) for a batch to append.
func (ps *Producers) Check(part *Partition, b Batch) (*Duplicate, error) {
	p := ps.byKey[producerKey{part, b.ProducerID()}]
	if p == nil {
		return nil, nil
	}
	epoch, first := b.ProducerEpoch(), b.BaseSequence()
	switch {
	case epoch < p.epoch:
		return nil, fmt.Errorf("%w: producer %d sent epoch %d; the partition has seen epoch %d", ErrInvalidEpoch, p.id, epoch, p.epoch)
	case epoch > p.epoch:
		if first != 0 && p.epoch != -1 {
			return nil, fmt.Errorf("%w: producer %d started epoch %d at sequence %d, not 0", ErrOutOfOrderSequence, p.id, epoch, first)
		}
		return nil, nil
	}
	last := LastSequence(first, b.LastOffsetDelta())
	for i := range int(p.n) {
		m := &p.batches[i]
		if m.firstSeq == first && m.lastSeq == last {
			return &Duplicate{BaseOffset: m.baseOffset, Timestamp: m.timestamp}, nil
		}
	}
	if p.epoch != -1 && p.n > 0 && !inSequence(p.newest().lastSeq, first) {
		return nil, fmt.Errorf("%w: producer %d sent sequence %d; the partition expects %d", ErrOutOfOrderSequence, p.id, first, LastSequence(p.newest().lastSeq, 1))
	}
	return nil, nil
}

// Record remembers a batch that Check allowed and that was stored at base
// with max timestamp maxTS, at broker time now. A producer id new to the
// partition takes the place of the least recently appended producer state
// when the table is full.
func (ps *Producers) Record(part *Partition, b Batch, base, maxTS int64, now time.Time) {
	key := producerKey{part, b.ProducerID()}
	p := ps.byKey[key]
	if p == nil {
		if len(ps.byKey) >= ps.max {
			ps.remove(ps.oldest)
		}
		p = &producer{part: part, id: key.id, epoch: b.ProducerEpoch()}
		ps.byKey[key] = p
		ps.byPart[part]++
	} else {
		ps.unlink(p)
	}
	if epoch := b.ProducerEpoch(); epoch != p.epoch {
		p.epoch, p.n, p.next = epoch, 0, 0
	}
	first := b.BaseSequence()
	if p.batches == nil {
		p.batches = new([BatchesPerProducer]batchMeta)
	}
	p.batches[p.next] = batchMeta{firstSeq: first, lastSeq: LastSequence(first, b.LastOffsetDelta()), baseOffset: base, timestamp: maxTS}
	p.next = (p.next + 1) % BatchesPerProducer
	p.n = min(p.n+1, BatchesPerProducer)
	p.lastAppend = now.UnixMilli()
	ps.pushNewest(p)
}

// Mark records a transaction marker written for producer id in part with
// epoch, at broker time now, as Kafka's producer state takes the marker's
// epoch: a higher epoch than the partition has seen becomes the producer's,
// so that a zombie still writing with the older one is refused
// (ErrInvalidEpoch) even where the new producer has not written yet. The
// sequence numbers go on within an epoch.
func (ps *Producers) Mark(part *Partition, id int64, epoch int16, now time.Time) {
	key := producerKey{part, id}
	p := ps.byKey[key]
	if p == nil {
		if len(ps.byKey) >= ps.max {
			ps.remove(ps.oldest)
		}
		p = &producer{part: part, id: id, epoch: epoch}
		ps.byKey[key] = p
		ps.byPart[part]++
	} else {
		ps.unlink(p)
	}
	if epoch > p.epoch {
		p.epoch, p.n, p.next = epoch, 0, 0
	}
	p.lastAppend = now.UnixMilli()
	ps.pushNewest(p)
}

// ProducerState is what a partition remembers of one producer, as Kafka's
// DescribeProducers reports it.
type ProducerState struct {
	ProducerID int64
	Epoch      int16
	// LastSequence and LastTimestamp are of the producer's latest batch,
	// -1 when it has none in its current epoch (a transaction marker
	// raised the epoch).
	LastSequence  int32
	LastTimestamp int64
}

// Of returns the producers each of parts remembers, least recently
// appended first. It walks the table once, whatever the number of parts
// (at most its bound of producer states).
func (ps *Producers) Of(parts map[*Partition]bool) map[*Partition][]ProducerState {
	out := make(map[*Partition][]ProducerState)
	for p := ps.oldest; p != nil; p = p.nxt {
		if !parts[p.part] {
			continue
		}
		st := ProducerState{ProducerID: p.id, Epoch: p.epoch, LastSequence: -1, LastTimestamp: -1}
		if p.n > 0 {
			st.LastSequence, st.LastTimestamp = p.newest().lastSeq, p.newest().timestamp
		}
		out[p.part] = append(out[p.part], st)
	}
	return out
}

// Expire forgets every producer state whose last append is idle or more
// before now, as Kafka's producer.id.expiration.ms does, and returns how
// many it forgot.
func (ps *Producers) Expire(now time.Time, idle time.Duration) int {
	cutoff := now.UnixMilli() - idle.Milliseconds()
	n := 0
	for ps.oldest != nil && ps.oldest.lastAppend <= cutoff {
		ps.remove(ps.oldest)
		n++
	}
	return n
}

// DropPartition forgets every producer state of part, for a deleted
// topic.
func (ps *Producers) DropPartition(part *Partition) {
	if ps.byPart[part] == 0 {
		return
	}
	for p := ps.oldest; p != nil; {
		next := p.nxt
		if p.part == part {
			ps.remove(p)
		}
		p = next
	}
}

// Clear forgets every producer state.
func (ps *Producers) Clear() {
	clear(ps.byKey)
	clear(ps.byPart)
	ps.oldest, ps.newest = nil, nil
}

func (ps *Producers) remove(p *producer) {
	ps.unlink(p)
	delete(ps.byKey, producerKey{p.part, p.id})
	if ps.byPart[p.part]--; ps.byPart[p.part] == 0 {
		delete(ps.byPart, p.part)
	}
}

func (ps *Producers) unlink(p *producer) {
	if p.prev != nil {
		p.prev.nxt = p.nxt
	} else {
		ps.oldest = p.nxt
	}
	if p.nxt != nil {
		p.nxt.prev = p.prev
	} else {
		ps.newest = p.prev
	}
	p.prev, p.nxt = nil, nil
}

func (ps *Producers) pushNewest(p *producer) {
	p.prev = ps.newest
	if ps.newest != nil {
		ps.newest.nxt = p
	} else {
		ps.oldest = p
	}
	ps.newest = p
}
