package log

// Transactions in a partition: what Kafka's ProducerStateManager and
// transaction index keep for read_committed readers. A partition knows the
// first offset of each producer's open transaction (which bounds the last
// stable offset) and the range of each aborted one; the transaction
// coordinator ends a transaction by appending a control batch (AppendMarker).

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AbortedTxn is one aborted transaction in a partition: its producer, the
// offset of the first batch it wrote there and the offset of its abort
// marker, as a Fetch answer lists it for read_committed readers.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// OpenTxn is a producer's transaction that has written to a partition and
// is not yet ended there.
type OpenTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// noteTransactionalLocked records, for a transactional data batch just
// published at base, that its producer's transaction is open here.
func (p *Partition) noteTransactionalLocked(b Batch, base int64) {
	if !b.Transactional() || b.Control() {
		return
	}
	if p.open == nil {
		p.open = make(map[int64]int64)
	}
	if _, ok := p.open[b.ProducerID()]; !ok {
		p.open[b.ProducerID()] = base
		if len(p.open) == 1 || base < p.openMin {
			p.openMin = base
		}
	}
}

// lastStableLocked is the last stable offset: the first offset of the
// earliest open transaction, or the high watermark when none is open; never
// below the log start.
func (p *Partition) lastStableLocked() int64 {
	lso := p.highWatermarkLocked()
	if len(p.open) > 0 {
		lso = min(lso, p.openMin)
	}
	return max(lso, p.logStart)
}

// LastStableOffset returns the offset below which every transaction is
// ended: what read_committed readers may read up to, and what ListOffsets
// answers them for the latest offset.
func (p *Partition) LastStableOffset() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lastStableLocked()
}

// OpenTransactions returns the producers with an open transaction in the
// partition, by first offset.
func (p *Partition) OpenTransactions() []OpenTxn {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]OpenTxn, 0, len(p.open))
	for id, first := range p.open {
		out = append(out, OpenTxn{ProducerID: id, FirstOffset: first})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// AbortedTransactions returns the aborted transactions the partition still
// holds data of, oldest first.
func (p *Partition) AbortedTransactions() []AbortedTxn {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]AbortedTxn(nil), p.aborted...)
}

// abortedLocked returns the aborted transactions a read_committed reader of
// [from, to) must know of: those ending at or after from that began before
// to, as Kafka's transaction index answers a fetch.
func (p *Partition) abortedLocked(from, to int64) []AbortedTxn {
	i := sort.Search(len(p.aborted), func(i int) bool { return p.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range p.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// dropAbortedBelowStartLocked forgets aborted transactions whose marker is
// below the log start: no reader can fetch their data any more.
func (p *Partition) dropAbortedBelowStartLocked() {
	i := 0
	for i < len(p.aborted) && p.aborted[i].LastOffset < p.logStart {
		i++
	}
	if i > 0 {
		p.aborted = append(p.aborted[:0:0], p.aborted[i:]...)
	}
}

// MarkerBatch returns the control batch that ends a transaction, as Kafka's
// transaction coordinator has partition leaders write it: one control
// record whose key is the marker type (commit or abort) and whose value is
// the coordinator's epoch, in a transactional batch of the producer's id
// and epoch with no sequence number, timestamped now.
func MarkerBatch(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, now time.Time) Batch {
	key := kmsg.NewControlRecordKey()
	key.Type = kmsg.ControlRecordKeyTypeAbort
	if commit {
		key.Type = kmsg.ControlRecordKeyTypeCommit
	}
	value := kmsg.NewEndTxnMarker()
	value.CoordinatorEpoch = coordinatorEpoch
	rec := kmsg.NewRecord()
	rec.Key, rec.Value = key.AppendTo(nil), value.AppendTo(nil)
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a zero Length encodes as one byte
	rb := kmsg.NewRecordBatch()
	rb.PartitionLeaderEpoch = -1
	rb.Magic = 2
	rb.Attributes = int16(transactionalBit | controlBit)
	rb.FirstTimestamp, rb.MaxTimestamp = now.UnixMilli(), now.UnixMilli()
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = producerID, epoch, -1
	rb.NumRecords = 1
	rb.Records = rec.AppendTo(nil)
	out := rb.AppendTo(make([]byte, 0, BatchHeaderSize+len(rb.Records)))
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return Batch(out)
}

// MarkerType returns whether a control batch is a transaction marker and,
// if so, whether it commits (true) or aborts.
func (b Batch) MarkerType() (isMarker, commit bool) {
	if !b.Control() {
		return false, false
	}
	if b.Compression() == 0 && b.NumRecords() == 1 {
		// In place, without decoding: compaction asks this of every
		// marker it passes.
		var key []byte
		ok := eachRawRecord(b[BatchHeaderSize:], 1, func(_ []byte, f recordFields) { key = f.key }) == nil
		if !ok || len(key) < 4 {
			return false, false
		}
		switch int16(binary.BigEndian.Uint16(key[2:])) {
		case int16(kmsg.ControlRecordKeyTypeCommit):
			return true, true
		case int16(kmsg.ControlRecordKeyTypeAbort):
			return true, false
		}
		return false, false
	}
	recs, err := b.Records()
	if err != nil || len(recs) != 1 {
		return false, false
	}
	var key kmsg.ControlRecordKey
	if key.ReadFrom(recs[0].Key) != nil {
		return false, false
	}
	switch key.Type {
	case kmsg.ControlRecordKeyTypeCommit:
		return true, true
	case kmsg.ControlRecordKeyTypeAbort:
		return true, false
	}
	return false, false
}

// AppendMarker appends a transaction marker made by MarkerBatch for
// producerID and ends that producer's open transaction in the partition: a
// commit makes its data readable to read_committed readers, an abort adds
// it to the aborted transactions they skip. A producer with nothing written
// in the partition still gets its marker, as in Kafka. A marker that does
// not follow a batch in its chunk is kept unencoded (markers.go). It
// returns the marker's offset.
func (p *Partition) AppendMarker(marker Batch, producerID int64, commit bool, now time.Time) int64 {
	p.mu.Lock()
	if p.released {
		defer p.mu.Unlock()
		return p.hwm
	}
	base, ok := p.appendMarkerLocked(marker, now)
	p.mu.Unlock()
	if !ok {
		base, _ = p.Publish(p.Stage(marker), AppendOptions{Now: now})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return base
	}
	first, ok := p.open[producerID]
	delete(p.open, producerID)
	if ok && first == p.openMin && len(p.open) > 0 {
		// The earliest left: once per transaction ended, not per read.
		p.openMin = math.MaxInt64
		for _, f := range p.open {
			p.openMin = min(p.openMin, f)
		}
	}
	if ok && !commit {
		p.aborted = append(p.aborted, AbortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: base})
	}
	return base
}

// dropCleanedAbortedLocked forgets the aborted transactions whose marker
// is below offset, the end of a range compaction just cleaned: cleaning
// removed every batch of theirs, so no reader needs to be told of them. An
// aborted transaction whose marker is past the range may still have
// records left, and stays listed.
func (p *Partition) dropCleanedAbortedLocked(offset int64) {
	kept := p.aborted[:0:0]
	for _, a := range p.aborted {
		if a.LastOffset >= offset {
			kept = append(kept, a)
		}
	}
	if len(kept) != len(p.aborted) {
		p.aborted = kept
	}
}
