package log

// Transaction markers kept unencoded. A wide transaction ends with a
// marker in every partition it touched, most of which it wrote nothing to:
// there a marker follows other markers, or nothing, and reads of it are
// rare. Stored as its 78-byte batch, with its index entry and its share of
// a chunk, each such marker cost three to four times its size. So a marker
// that does not follow a data batch at the end of the partition's current
// chunk is kept as what it is made of, 16 bytes (producer id and epoch,
// commit or abort, coordinator epoch), with its index entry holding its
// offset, timestamp and leader epoch, and is encoded when read: a fetch of
// such markers gets them byte for byte as they would have been stored, CRC
// included. A marker that follows a data batch in its chunk is stored
// encoded, so that a consumer of a transactional topic reads each
// transaction's data and marker in one run, as before.
//
// An unencoded marker's entry has a negative pos (minus one minus its
// leader epoch) and, as its chunk, the 16 bytes; its n is the encoded
// size, so that retention.bytes and the partition's size count it as
// Kafka would.

import (
	"encoding/binary"
	"time"
)

// markerSize is the encoded size of a transaction marker (MarkerBatch).
const markerSize = 78

// markerMeta offsets: producer id, producer epoch, commit (1) or abort
// (0), coordinator epoch.
const (
	metaProducerID  = 0
	metaEpoch       = 8
	metaCommit      = 10
	metaCoordinator = 11
	metaSize        = 16
)

// unencoded reports whether e is a marker kept unencoded.
func (e *entry) unencoded() bool { return e.pos < 0 }

// encodeMarker returns the batch an unencoded marker's entry stands for,
// as the log would have stored it: its base offset and leader epoch set.
func (e *entry) encodeMarker() Batch {
	m := e.chunk
	b := MarkerBatch(int64(binary.BigEndian.Uint64(m[metaProducerID:])), int16(binary.BigEndian.Uint16(m[metaEpoch:])),
		m[metaCommit] == 1, int32(binary.BigEndian.Uint32(m[metaCoordinator:])), time.UnixMilli(e.maxTS))
	b.setBaseOffset(e.base, -1-e.pos)
	return b
}

// markerMetaOf returns what marker is made of, and whether it is a marker
// MarkerBatch made, which encodeMarker gives back byte for byte.
func markerMetaOf(marker Batch) ([]byte, bool) {
	isMarker, commit := marker.MarkerType()
	if !isMarker || len(marker) != markerSize || marker.Compression() != 0 || marker.NumRecords() != 1 ||
		marker.FirstTimestamp() != marker.MaxTimestamp() || marker.LastOffsetDelta() != 0 || marker.BaseSequence() != -1 ||
		marker.Attributes() != int16(transactionalBit|controlBit) {
		return nil, false
	}
	// The coordinator epoch is the last field of the record's value, before
	// its header count; the comparison below checks the guess.
	coordinator := int32(binary.BigEndian.Uint32(marker[markerSize-5:]))
	m := make([]byte, metaSize)
	binary.BigEndian.PutUint64(m[metaProducerID:], uint64(marker.ProducerID()))
	binary.BigEndian.PutUint16(m[metaEpoch:], uint16(marker.ProducerEpoch()))
	if commit {
		m[metaCommit] = 1
	}
	binary.BigEndian.PutUint32(m[metaCoordinator:], uint32(coordinator))
	if string(MarkerBatch(marker.ProducerID(), marker.ProducerEpoch(), commit, coordinator, time.UnixMilli(marker.MaxTimestamp()))[offAttributes:]) != string(marker[offAttributes:]) {
		return nil, false
	}
	return m, true
}

// appendMarkerLocked appends marker unencoded, at the high watermark, and
// returns its offset; it returns false, appending nothing, when marker
// must be stored encoded: it follows a data batch at the end of the
// current chunk (or a pending SkipOffsets applies), or is not one
// MarkerBatch made.
func (p *Partition) appendMarkerLocked(marker Batch, now time.Time) (int64, bool) {
	if p.skip > 0 || p.encodeMarkers {
		return 0, false
	}
	if k := len(p.entries); k > 0 {
		if last := &p.entries[k-1]; !last.unencoded() && sameChunk(last.chunk, p.chunk) && int(last.pos+last.n) == len(p.chunk) && !last.raw().Control() {
			return 0, false
		}
	}
	meta, ok := markerMetaOf(marker)
	if !ok {
		return 0, false
	}
	base := p.hwm
	p.sinceGap++
	e := entry{
		chunk:      meta,
		pos:        -1 - p.leaderEpochLocked(),
		n:          markerSize,
		base:       base,
		last:       base,
		maxTS:      marker.MaxTimestamp(),
		appendedAt: now.UnixMilli(),
	}
	p.addEntryLocked(e)
	return base, true
}

// readMarkersLocked answers a read whose first entry, i, is an unencoded
// marker: the run of unencoded markers from it, encoded into memory of
// their own (a read of markers is rare), up to maxBytes but at least one,
// and the offset after the last; for a read_committed reader only those
// below the last stable offset lso.
func (p *Partition) readMarkersLocked(i, maxBytes int, committed bool, lso int64) ([]byte, int64) {
	j, hw := i+1, p.highWatermarkLocked()
	for j < len(p.entries) && p.entries[j].unencoded() && (j-i+1)*markerSize <= maxBytes && p.entries[j].base < hw && !(committed && p.entries[j].base >= lso) {
		j++
	}
	out := make([]byte, 0, (j-i)*markerSize)
	for k := i; k < j; k++ {
		out = append(out, p.entries[k].encodeMarker()...)
	}
	return out, p.entries[j-1].last + 1
}
