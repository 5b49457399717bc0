package log

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BatchHeaderSize is the size of a v2 record batch header, from the base
// offset to the record count.
const BatchHeaderSize = 61

// Offsets of the header fields inside a v2 record batch.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21 // the CRC covers everything from here on
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57
)

// Attribute bits of a v2 record batch.
const (
	compressionMask        = 0x07
	timestampTypeLogAppend = 0x08
	transactionalBit       = 0x10
	controlBit             = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Errors returned while reading a record batch. The broker maps them to
// Kafka error codes: ErrCorrupt to CORRUPT_MESSAGE, ErrInvalidRecord to
// INVALID_RECORD.
var (
	ErrCorrupt       = errors.New("record batch is corrupt")
	ErrInvalidRecord = errors.New("record batch is not a single valid v2 batch")
)

// Batch is a read-only view of one v2 record batch as it sits on the wire.
// Its accessors read the header in place; nothing is decoded or copied.
type Batch []byte

// ParseBatch checks that raw holds exactly one complete v2 record batch
// with a correct CRC and returns it as a Batch. Produce v3+ carries exactly
// one batch per partition, and Kafka refuses anything else with
// INVALID_RECORD; a bad CRC or length is CORRUPT_MESSAGE.
func ParseBatch(raw []byte) (Batch, error) {
	if len(raw) < BatchHeaderSize {
		return nil, ErrCorrupt
	}
	b := Batch(raw)
	if b.Magic() != 2 {
		return nil, ErrInvalidRecord
	}
	length := int(int32(binary.BigEndian.Uint32(raw[offLength:])))
	if length < BatchHeaderSize-12 || 12+length > len(raw) {
		return nil, ErrCorrupt
	}
	if 12+length != len(raw) {
		return nil, ErrInvalidRecord // more than one batch
	}
	if crc32.Checksum(raw[offAttributes:], crc32c) != binary.BigEndian.Uint32(raw[offCRC:]) {
		return nil, ErrCorrupt
	}
	if b.NumRecords() <= 0 || b.LastOffsetDelta() != b.NumRecords()-1 {
		return nil, ErrInvalidRecord
	}
	if b.Compression() == 0 && !b.recordsFramed() {
		return nil, ErrCorrupt
	}
	return b, nil
}

// recordsFramed reports whether an uncompressed batch's record section is
// exactly NumRecords length-prefixed records, as Kafka's log validator
// requires; it reads only the length varints.
func (b Batch) recordsFramed() bool {
	rest := []byte(b[BatchHeaderSize:])
	for i := int32(0); i < b.NumRecords(); i++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length <= 0 || int64(len(rest)-n) < length {
			return false
		}
		rest = rest[n+int(length):]
	}
	return len(rest) == 0
}

// LargestRecord is the length of the largest record of an uncompressed,
// parsed batch: no key or value in the batch is longer. It reads only the
// records' length varints; 0 for a compressed batch.
func (b Batch) LargestRecord() int {
	if b.Compression() != 0 {
		return 0
	}
	largest := 0
	rest := []byte(b[BatchHeaderSize:])
	for i := int32(0); i < b.NumRecords(); i++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length <= 0 || int64(len(rest)-n) < length {
			break // ParseBatch refuses such a batch
		}
		largest = max(largest, int(length))
		rest = rest[n+int(length):]
	}
	return largest
}

// BaseOffset is the offset of the batch's first record.
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// Magic is the record format version; vastfake stores only magic 2.
func (b Batch) Magic() int8 { return int8(b[offMagic]) }

// Attributes is the batch's attribute bit field.
func (b Batch) Attributes() int16 { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }

// Compression is the codec in the attributes: 0 none, 1 gzip, 2 snappy, 3 lz4,
// 4 zstd.
func (b Batch) Compression() int8 { return int8(b.Attributes() & compressionMask) }

// Transactional reports whether the batch is part of a transaction.
func (b Batch) Transactional() bool { return b.Attributes()&transactionalBit != 0 }

// Control reports whether the batch holds control records.
func (b Batch) Control() bool { return b.Attributes()&controlBit != 0 }

// LogAppendTime reports whether the batch's timestamps are the broker's.
func (b Batch) LogAppendTime() bool { return b.Attributes()&timestampTypeLogAppend != 0 }

// LastOffsetDelta is the last record's offset relative to the base offset.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
}

// FirstTimestamp is the first record's timestamp in milliseconds.
func (b Batch) FirstTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[offFirstTimestamp:]))
}

// MaxTimestamp is the largest record timestamp in milliseconds.
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }

// ProducerID is the idempotent producer id, or -1.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }

// NumRecords is the count of records in the batch.
func (b Batch) NumRecords() int32 { return int32(binary.BigEndian.Uint32(b[offNumRecords:])) }

// Record is one record of an uncompressed batch, with its absolute offset
// and timestamp. Key and Value alias the batch's bytes.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
}

// Records decodes the records of an uncompressed batch with kmsg. It returns
// ErrCorrupt if the records do not parse, and ErrCompressed for a compressed
// batch (vastfake serves those as stored and never decompresses them).
func (b Batch) Records() ([]Record, error) {
	if b.Compression() != 0 {
		return nil, ErrCompressed
	}
	n := int(b.NumRecords())
	if n < 0 || n > len(b) {
		return nil, ErrCorrupt
	}
	out := make([]Record, 0, n)
	err := b.EachRecord(func(r Record) bool { out = append(out, r); return true })
	return out, err
}

// ErrCompressed is returned when records of a compressed batch are asked for.
var ErrCompressed = errors.New("record batch is compressed")

// EachRecord calls fn for each record of an uncompressed batch, in offset
// order, until fn returns false. Key and Value alias the batch.
func (b Batch) EachRecord(fn func(Record) bool) error {
	if b.Compression() != 0 {
		return ErrCompressed
	}
	base, first, maxTS := b.BaseOffset(), b.FirstTimestamp(), b.MaxTimestamp()
	logAppend := b.LogAppendTime()
	rest := []byte(b[BatchHeaderSize:])
	for i := int32(0); i < b.NumRecords(); i++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length < 0 || int64(len(rest)-n) < length {
			return ErrCorrupt
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rest[:n+int(length)]); err != nil {
			return ErrCorrupt
		}
		rest = rest[n+int(length):]
		ts := first + rec.TimestampDelta64
		if logAppend {
			ts = maxTS
		}
		if !fn(Record{
			Offset:    base + int64(rec.OffsetDelta),
			Timestamp: ts,
			Key:       rec.Key,
			Value:     rec.Value,
			Headers:   rec.Headers,
		}) {
			return nil
		}
	}
	if len(rest) != 0 {
		return ErrCorrupt
	}
	return nil
}

// setBaseOffset writes the base offset and the partition leader epoch, two
// fields outside the CRC, so the batch is stored exactly as received.
func (b Batch) setBaseOffset(base int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
}

// setLogAppendTime marks the batch's timestamps as the broker's and sets
// its max timestamp to now, as Kafka does for message.timestamp.type =
// LogAppendTime. Both fields are inside the CRC, which is recomputed.
func (b Batch) setLogAppendTime(nowMillis int64) {
	attrs := uint16(b.Attributes()) | timestampTypeLogAppend
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(nowMillis))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
}
