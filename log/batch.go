package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

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
// INVALID_RECORD, ErrDecompress to UNKNOWN_SERVER_ERROR (what Kafka answers
// when a batch does not decompress), ErrTooLarge to MESSAGE_TOO_LARGE.
var (
	ErrCorrupt       = errors.New("record batch is corrupt")
	ErrInvalidRecord = errors.New("invalid record batch")
	ErrDecompress    = errors.New("failed to decompress record stream")
	ErrTooLarge      = errors.New("record batch decompresses to more than MaxDecompressedBytes")
)

// Batch is a read-only view of one v2 record batch as it sits on the wire.
// Its accessors read the header in place; nothing is decoded or copied.
type Batch []byte

// ParseBatch checks that raw holds exactly one complete v2 record batch
// with a correct CRC and a consistent offset range and record count, and
// returns it as a Batch. Produce v3+ carries exactly one batch per
// partition, and Kafka refuses anything else with INVALID_RECORD; a bad CRC
// or length is CORRUPT_MESSAGE. It reads only the header: Validate reads the
// records.
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
	return b, nil
}

// RecordStats is what Validate learns about a batch's records on its way
// through them, for the broker's size and timestamp checks.
type RecordStats struct {
	// MaxKey and MaxValue are the lengths of the longest key and value; a
	// null key or value counts as 0.
	MaxKey, MaxValue int
	// MinTimestamp and MaxTimestamp bound the records' timestamps, leaving
	// out records without one (-1), as Kafka's timestamp check does. When
	// no record has a timestamp, MinTimestamp > MaxTimestamp.
	MinTimestamp, MaxTimestamp int64
	// NullKeys counts the records without a key, which a compacted topic
	// refuses.
	NullKeys int
	// NullKeyIndexes lists the indexes in the batch of the first records
	// without a key, up to the number ValidateListingNullKeys was asked
	// for; Validate lists none.
	NullKeyIndexes []int32
	listNullKeys   int
}

// nullKey counts record i, which has no key, and lists it if there is room.
func (s *RecordStats) nullKey(i int32) {
	s.NullKeys++
	if len(s.NullKeyIndexes) < s.listNullKeys {
		s.NullKeyIndexes = append(s.NullKeyIndexes, i)
	}
}

// Validate reads every record of a parsed batch once, as Kafka's log
// validator does before appending (DefaultRecord.readFrom and the batch's
// record iterator), and returns what it learned. It refuses with
// ErrInvalidRecord (Kafka's INVALID_RECORD) a record whose length, key,
// value or header lengths do not fit inside it or are negative (other than
// -1 for null), a header count below zero or above the bytes left, a varint
// longer than its type allows, an offset delta other than the record's
// index, and a record section holding more or fewer records than the
// header's count. Where Kafka would rewrite a batch whose offset deltas are
// not 0, 1, 2, …, vastfake stores batches as received and refuses it
// instead.
//
// An uncompressed batch is read in place without allocating. A compressed
// batch (gzip, snappy, lz4, zstd) is validated as it decompresses, field by
// field, stopping at the first error, and keys, values and headers are
// skipped, not kept: memory is the codec's window and a 64 KiB read buffer,
// whatever the size of a record. A batch that does not decompress in its
// codec (or a zstd frame whose window is over MaxZstdWindow, a snappy copy
// reaching back more than MaxSnappyWindow, or snappy with S2's extensions)
// returns ErrDecompress, and one that decompresses to more than
// MaxDecompressedBytes returns ErrTooLarge.
func (b Batch) Validate() (RecordStats, error) {
	return b.validate(RecordStats{})
}

// ValidateListingNullKeys is Validate that also lists, in NullKeyIndexes,
// the indexes of the first max records without a key as it reads them, in
// the same memory: what a compacted topic's refusal lists.
func (b Batch) ValidateListingNullKeys(max int) (RecordStats, error) {
	return b.validate(RecordStats{listNullKeys: max})
}

func (b Batch) validate(stats RecordStats) (RecordStats, error) {
	stats.MinTimestamp, stats.MaxTimestamp = math.MaxInt64, math.MinInt64
	if b.Compression() == 0 {
		return b.validateRecords(b[BatchHeaderSize:], stats)
	}
	return b.validateCompressed(stats)
}

// validateRecords checks the record section of an uncompressed batch in
// place; see Validate.
func (b Batch) validateRecords(section []byte, stats RecordStats) (RecordStats, error) {
	first := b.FirstTimestamp()
	n := b.NumRecords()
	at := 0
	for i := int32(0); i < n; i++ {
		length, p := varint32(section, at)
		if p < 0 || length <= 0 || int(length) > len(section)-p {
			return stats, invalidRecord(i, "record length does not fit the batch")
		}
		at = p + int(length)
		if err := validateRecord(section[p:at], i, first, &stats); err != nil {
			return stats, err
		}
	}
	if at != len(section) {
		return stats, fmt.Errorf("%w: more records than the batch's count of %d", ErrInvalidRecord, n)
	}
	return stats, nil
}

// validateRecord checks record i of a batch whose first timestamp is first,
// given its bytes after the length varint, and adds its key and value
// lengths and timestamp to stats; see Validate for what it refuses. It is
// the one check of a record's fields, for uncompressed batches read in
// place and compressed ones read as a stream. Its varint reads are written
// to inline: each takes the bytes and a position and returns the value and
// the position after it, or a position < 0.
func validateRecord(rec []byte, i int32, first int64, stats *RecordStats) error {
	p := 1 // attributes: unused in v2 records
	tsDelta, p := varint64(rec, p)
	if p < 0 {
		return invalidRecord(i, "bad timestamp delta")
	}
	if ts := first + tsDelta; ts != -1 {
		stats.MinTimestamp = min(stats.MinTimestamp, ts)
		stats.MaxTimestamp = max(stats.MaxTimestamp, ts)
	}
	offsetDelta, p := varint32(rec, p)
	if p < 0 || offsetDelta != i {
		return invalidRecord(i, "offset delta is not the record's index")
	}
	keyLen, p := varint32(rec, p)
	if p = skipBytes(rec, p, keyLen); p < 0 {
		return invalidRecord(i, "bad key length")
	}
	if keyLen < 0 {
		stats.nullKey(i)
	}
	valueLen, p := varint32(rec, p)
	if p = skipBytes(rec, p, valueLen); p < 0 {
		return invalidRecord(i, "bad value length")
	}
	stats.MaxKey, stats.MaxValue = max(stats.MaxKey, int(keyLen)), max(stats.MaxValue, int(valueLen))
	headers, p := varint32(rec, p)
	if p < 0 || headers < 0 || int(headers) > len(rec)-p {
		return invalidRecord(i, "bad header count")
	}
	for range headers {
		keyLen, p = varint32(rec, p)
		if p = skipBytes(rec, p, keyLen); p < 0 || keyLen < 0 {
			return invalidRecord(i, "bad header key length")
		}
		valueLen, p = varint32(rec, p)
		if p = skipBytes(rec, p, valueLen); p < 0 {
			return invalidRecord(i, "bad header value length")
		}
	}
	if p != len(rec) {
		return invalidRecord(i, "record length does not match its fields")
	}
	return nil
}

// varint32 reads a zigzag varint of at most five bytes whose value fits an
// int32 at b[p:], as Kafka's ByteUtils.readVarint does, and returns it with
// the position after it, or a position < 0.
func varint32(b []byte, p int) (int32, int) {
	var u uint32
	for shift := 0; shift < 35; shift += 7 {
		if uint(p) >= uint(len(b)) {
			return 0, -1
		}
		c := b[p]
		p++
		u |= uint32(c&0x7f) << shift
		if c < 0x80 {
			if shift == 28 && c > 0x0f {
				return 0, -1 // past 32 bits
			}
			return int32(u>>1) ^ -int32(u&1), p
		}
	}
	return 0, -1
}

// varint64 reads a zigzag varint of at most ten bytes at b[p:], as Kafka's
// ByteUtils.readVarlong does; see varint32.
func varint64(b []byte, p int) (int64, int) {
	var u uint64
	for shift := 0; shift < 70; shift += 7 {
		if uint(p) >= uint(len(b)) {
			return 0, -1
		}
		c := b[p]
		p++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if shift == 63 && c > 1 {
				return 0, -1 // past 64 bits
			}
			return int64(u>>1) ^ -int64(u&1), p
		}
	}
	return 0, -1
}

// skipBytes skips a bytes field of length l (-1 for null) at b[p:] and
// returns the position after it, or -1 for a length below -1 or past the
// end of b.
func skipBytes(b []byte, p int, l int32) int {
	if p < 0 || l < -1 || int(l) > len(b)-p {
		return -1
	}
	return p + max(int(l), 0)
}

// invalidRecord is ErrInvalidRecord with the record's index and the reason.
func invalidRecord(i int32, why string) error {
	return fmt.Errorf("%w: record %d: %s", ErrInvalidRecord, i, why)
}

// BaseOffset is the offset of the batch's first record.
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

// LeaderEpoch is the batch's partition leader epoch: for a stored batch,
// the epoch of the leader that appended it; -1 as producers send it.
func (b Batch) LeaderEpoch() int32 { return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])) }

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

// ProducerEpoch is the idempotent producer's epoch, or -1.
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }

// BaseSequence is the idempotent producer's sequence number of the first
// record, or -1.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }

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
// batch (reads serve those as stored; only Validate decompresses).
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

// RecordBatch returns a plain batch of one record, as a broker writes to
// an internal topic: no producer id, no compression, timestamped now. A
// nil value is a tombstone.
func RecordBatch(key, value []byte, now time.Time) Batch {
	return RecordsBatch([][]byte{key}, [][]byte{value}, now)
}

// RecordsBatch returns a plain batch of one record for each key and value
// (a nil value is a tombstone), as a broker writes to an internal topic:
// no producer id, no compression, timestamped now.
func RecordsBatch(keys, values [][]byte, now time.Time) Batch {
	return internalBatch(keys, values, -1, -1, now)
}

// TransactionalRecordBatch returns a transactional batch of producerID and
// epoch holding one record of each key and value, with no sequence number
// and no compression, timestamped now: what Kafka's group coordinator
// writes to __consumer_offsets for a TxnOffsetCommit, which the
// transaction's marker commits or aborts.
func TransactionalRecordBatch(keys, values [][]byte, producerID int64, epoch int16, now time.Time) Batch {
	return internalBatch(keys, values, producerID, epoch, now)
}

func internalBatch(keys, values [][]byte, producerID int64, epoch int16, now time.Time) Batch {
	rb := kmsg.NewRecordBatch()
	for i := range keys {
		rec := kmsg.NewRecord()
		rec.Key, rec.Value = keys[i], values[i]
		rec.OffsetDelta = int32(i)
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the body: a zero Length encodes as one byte
		rb.Records = rec.AppendTo(rb.Records)
	}
	rb.PartitionLeaderEpoch = -1
	rb.Magic = 2
	rb.LastOffsetDelta = int32(len(keys) - 1)
	rb.FirstTimestamp, rb.MaxTimestamp = now.UnixMilli(), now.UnixMilli()
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = producerID, epoch, -1
	if producerID >= 0 {
		rb.Attributes = int16(transactionalBit)
	}
	rb.NumRecords = int32(len(keys))
	out := rb.AppendTo(make([]byte, 0, BatchHeaderSize+len(rb.Records)))
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return Batch(out)
}
