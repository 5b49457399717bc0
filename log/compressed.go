package log

// Validation of compressed batches: records are validated as they
// decompress, field by field, and the bytes of keys, values and headers are
// skipped rather than kept, so memory is the decoder's window and one read
// buffer whatever the size of a record or of the batch. Batches are stored
// and served as received; only compaction re-encodes one, in its own codec.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedBytes caps what one compressed batch may decompress to.
// Kafka has no such cap (it streams records); vastfake refuses a larger
// batch with MESSAGE_TOO_LARGE so that a hostile batch cannot keep a
// connection busy. It is far above what any producer batches (clients cap a
// batch's uncompressed size near 1 MiB by default).
const MaxDecompressedBytes = 128 << 20

// MaxZstdWindow is the largest zstd window vastfake decodes; a frame that
// asks for more (or a single-segment frame whose content is larger) is
// refused like any batch that does not decompress. A decoder keeps history
// up to the window, so this bounds what each pooled decoder holds. Producers
// use at most 8 MiB (zstd levels up to 19, and klauspost/compress's default
// window, which kgo uses).
const MaxZstdWindow = 8 << 20

// MaxSnappyWindow is how far back a snappy copy may reach: a snappy block
// is decoded as a stream that keeps only its largest copy distance of
// history, so a block's memory is that distance rather than its decoded
// length. A block reaching further is refused like any batch that does not
// decompress. snappy-java, librdkafka and golang/snappy encode 64 KiB
// fragments (copies reach at most 64 KiB); S2's snappy encoder, which kgo
// uses, reaches across the whole batch, which producers cap near 1 MiB.
const MaxSnappyWindow = MaxZstdWindow

// Compression codecs of a batch's attributes.
const (
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// Pools of stream decoders and buffers, so that validating compressed
// batches allocates little. Each is reset before it goes back, so that no
// pool keeps a request's bytes; buffers that grew past poolMax are left to
// the garbage collector instead of being kept.
var (
	streamPool = sync.Pool{New: func() any {
		s := new(recordStream)
		s.br = bufio.NewReaderSize(&s.src, streamBufferSize)
		return s
	}}
	snappyPool = sync.Pool{New: func() any { return new(snappyStream) }}
	bufPool    = sync.Pool{New: func() any { return new(bytes.Buffer) }} // compaction's decompressed sections
	gzipPool   sync.Pool                                                 // *gzip.Reader
	lz4Pool    = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdPool   = sync.Pool{New: func() any {
		// One block at a time in the calling goroutine: no goroutines
		// to stop, so a decoder the pool drops needs no Close.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxDecompressedBytes))
		if err != nil {
			panic(err) // the options are constants
		}
		return d
	}}
)

const (
	poolMax          = 4 << 20
	streamBufferSize = 64 << 10
)

// inPlaceMax is the longest record of a compressed batch checked in place
// in the read buffer; longer ones are checked as they stream past. Tests
// lower it to check every record as a stream.
var inPlaceMax = streamBufferSize

// emptyGzip is a gzip member holding nothing; a pooled gzip reader is
// reset onto it so that it lets go of the last batch.
var emptyGzip = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// xerialMagic starts snappy data framed the way the Java producer frames it
// (snappy-java's stream format): the magic, a version and a compatible
// version, then blocks each prefixed with its big-endian int32 length.
// Anything else is one raw snappy block, as snappy-java also reads it.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// maxSnappyRatio bounds how much a snappy block can expand: its densest
// element is a 3-byte copy of 64 bytes. A block claiming more is refused
// before anything is allocated for it.
const maxSnappyRatio = 22

// validateCompressed validates the records of a compressed batch as it
// decompresses; see Validate.
func (b Batch) validateCompressed(stats RecordStats) (RecordStats, error) {
	src := []byte(b[BatchHeaderSize:])
	switch b.Compression() {
	case codecGzip:
		zr, err := gzipReader(src)
		if err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer putGzip(zr)
		return b.validateStream(zr, stats)
	case codecSnappy:
		sr := snappyPool.Get().(*snappyStream)
		defer sr.release()
		if err := sr.reset(src); err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		return b.validateStream(sr, stats)
	case codecLZ4:
		r := lz4Pool.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		defer func() {
			r.Reset(nil)
			lz4Pool.Put(r)
		}()
		return b.validateStream(r, stats)
	case codecZstd:
		d := zstdPool.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer func() {
			_ = d.Reset(nil) // lets go of src; never fails
			zstdPool.Put(d)
		}()
		return b.validateStream(d, stats)
	default:
		return RecordStats{}, fmt.Errorf("%w: unknown compression codec %d", ErrDecompress, b.Compression())
	}
}

// recordStream reads the records of a decompressing batch one at a time.
type recordStream struct {
	src countingReader
	br  *bufio.Reader // reads src
}

// countingReader passes on a decompressor's output, up to
// MaxDecompressedBytes, and remembers the decompressor's error (other than
// io.EOF), so that a record cut short by a broken stream is told apart from
// one cut short by the stream's end.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if left := MaxDecompressedBytes + 1 - c.n; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > MaxDecompressedBytes {
		c.err = ErrTooLarge
		return n, c.err
	}
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// failed returns the decompressor's error as Validate reports it, or nil
// when the stream only ended.
func (c *countingReader) failed() error {
	switch {
	case c.err == nil:
		return nil
	case errors.Is(c.err, ErrTooLarge):
		return ErrTooLarge
	default:
		return fmt.Errorf("%w: %v", ErrDecompress, c.err)
	}
}

// validateStream validates the records that r decompresses, stopping at
// the first error, with the same record checks as an uncompressed batch.
// A record that fits the read buffer is checked in place (validateRecord);
// a larger one field by field as it streams past (validateLongRecord),
// skipping its keys, values and headers, so that memory never follows a
// record's size. It reads r to its end, so that a checksum at the end of
// the stream is checked and bytes after the last record are refused.
func (b Batch) validateStream(r io.Reader, stats RecordStats) (RecordStats, error) {
	s := streamPool.Get().(*recordStream)
	s.src = countingReader{r: r}
	s.br.Reset(&s.src)
	defer s.release()

	first := b.FirstTimestamp()
	n := b.NumRecords()
	for i := int32(0); i < n; i++ {
		head, _ := s.br.Peek(binary.MaxVarintLen32)
		length, p := varint32(head, 0)
		if p < 0 || length <= 0 {
			if err := s.src.failed(); err != nil && len(head) < binary.MaxVarintLen32 {
				return stats, err
			}
			return stats, invalidRecord(i, "record length does not fit the batch")
		}
		_, _ = s.br.Discard(p)
		var err error
		if int(length) <= inPlaceMax {
			var rec []byte
			if rec, err = s.br.Peek(int(length)); err == nil {
				_, _ = s.br.Discard(int(length))
				err = validateRecord(rec, i, first, &stats)
			}
		} else {
			err = validateLongRecord(&longRecord{br: s.br, left: int(length)}, i, first, &stats)
		}
		if err != nil {
			if errors.Is(err, ErrInvalidRecord) {
				return stats, err
			}
			if err := s.src.failed(); err != nil {
				return stats, err
			}
			return stats, invalidRecord(i, "record length does not fit the batch")
		}
	}
	if _, err := s.br.ReadByte(); err == nil {
		return stats, fmt.Errorf("%w: more records than the batch's count of %d", ErrInvalidRecord, n)
	}
	return stats, s.src.failed()
}

// longRecord reads the fields of a record larger than the read buffer from
// the stream: left is how many of its bytes are still to come. Reads past
// left fail as reads past the end of an in-place record do; a stream that
// ends early returns its read error.
type longRecord struct {
	br   *bufio.Reader
	left int
	err  error // the stream's error, which ends the record
}

// varint reads a zigzag varint of at most maxBytes bytes inside the record
// and returns it, with ok false when it is malformed, overflows bits, or
// runs past the record or the stream.
func (r *longRecord) varint(maxBytes int, bits uint) (int64, bool) {
	var u uint64
	for k := 0; k < maxBytes; k++ {
		if r.left == 0 {
			return 0, false
		}
		c, err := r.br.ReadByte()
		if err != nil {
			r.err = err
			return 0, false
		}
		r.left--
		u |= uint64(c&0x7f) << (7 * k)
		if c < 0x80 {
			if k == maxBytes-1 && c>>(bits-7*uint(k)) != 0 {
				return 0, false // past the type's bits
			}
			return int64(u>>1) ^ -int64(u&1), true
		}
	}
	return 0, false
}

func (r *longRecord) varint32() (int32, bool) {
	v, ok := r.varint(binary.MaxVarintLen32, 32)
	return int32(v), ok
}

// skip skips a bytes field of length l (-1 for null) without keeping it,
// and reports false for a length below -1 or past the record's end.
func (r *longRecord) skip(l int32) bool {
	if l < -1 || int(l) > r.left {
		return false
	}
	n := max(int(l), 0)
	got, err := r.br.Discard(n)
	r.left -= got
	if err != nil {
		r.err = err
		return false
	}
	return true
}

// validateLongRecord is validateRecord for a record read from a stream;
// it refuses what validateRecord refuses, with the same reasons, and
// returns the stream's error when the stream ends inside the record.
func validateLongRecord(r *longRecord, i int32, first int64, stats *RecordStats) error {
	fail := func(why string) error {
		if r.err != nil {
			return r.err
		}
		return invalidRecord(i, why)
	}
	if _, err := r.br.ReadByte(); err != nil { // attributes: unused in v2 records
		return err
	}
	r.left--
	tsDelta, ok := r.varint(binary.MaxVarintLen64, 64)
	if !ok {
		return fail("bad timestamp delta")
	}
	if ts := first + tsDelta; ts != -1 {
		stats.MinTimestamp = min(stats.MinTimestamp, ts)
		stats.MaxTimestamp = max(stats.MaxTimestamp, ts)
	}
	if offsetDelta, ok := r.varint32(); !ok || offsetDelta != i {
		return fail("offset delta is not the record's index")
	}
	keyLen, ok := r.varint32()
	if !ok || !r.skip(keyLen) {
		return fail("bad key length")
	}
	if keyLen < 0 {
		stats.nullKey(i)
	}
	valueLen, ok := r.varint32()
	if !ok || !r.skip(valueLen) {
		return fail("bad value length")
	}
	stats.MaxKey, stats.MaxValue = max(stats.MaxKey, int(keyLen)), max(stats.MaxValue, int(valueLen))
	headers, ok := r.varint32()
	if !ok || headers < 0 || int(headers) > r.left {
		return fail("bad header count")
	}
	for range headers {
		keyLen, ok = r.varint32()
		if !ok || keyLen < 0 || !r.skip(keyLen) {
			return fail("bad header key length")
		}
		valueLen, ok = r.varint32()
		if !ok || !r.skip(valueLen) {
			return fail("bad header value length")
		}
	}
	if r.left != 0 {
		return fail("record length does not match its fields")
	}
	return nil
}

// release returns s to its pool holding nothing of the batch it read.
func (s *recordStream) release() {
	s.src = countingReader{}
	s.br.Reset(&s.src)
	streamPool.Put(s)
}

// gzipReader returns a pooled gzip reader reading src, or the error of its
// header.
func gzipReader(src []byte) (*gzip.Reader, error) {
	zr, _ := gzipPool.Get().(*gzip.Reader)
	if zr == nil {
		return gzip.NewReader(bytes.NewReader(src))
	}
	if err := zr.Reset(bytes.NewReader(src)); err != nil {
		putGzip(zr)
		return nil, err
	}
	return zr, nil
}

// putGzip resets zr onto an empty member, so that it keeps no reference to
// the batch it read, and pools it.
func putGzip(zr *gzip.Reader) {
	if zr.Reset(bytes.NewReader(emptyGzip)) == nil {
		gzipPool.Put(zr)
	}
}

// snappyStream decodes snappy-java's framed stream or one raw snappy
// block as an io.Reader. A block of up to snappyKeep bytes is decoded
// whole; a larger one keeps only the history its copies reach back to: it
// is checked whole before it is decoded (every element in bounds, copies
// within what the block has produced and within MaxSnappyWindow, the
// decoded length as declared), which needs no memory, then decoded in
// steps into a buffer of its largest copy distance plus snappyStep.
type snappyStream struct {
	rest   []byte // xerial blocks after the current one
	xerial bool
	block  []byte // the current block's elements not yet decoded
	left   int    // bytes the current block has still to produce
	lit    int    // bytes of a literal at block[0:] still to emit
	buf    []byte // decoded bytes: history, then buf[r:] not yet read
	r      int
	hist   int // history the current block needs: its largest copy distance
}

// snappyStep is how much a snappy stream decodes at a time; a pooled
// stream keeps a buffer of up to snappyKeep, enough for the history of a
// producer's usual 1 MiB batch.
const (
	snappyStep = 64 << 10
	snappyKeep = 1<<20 + 2*snappyStep
)

// reset makes s read the snappy data src: framed (xerialMagic) or one raw
// block.
func (s *snappyStream) reset(src []byte) error {
	*s = snappyStream{buf: s.buf[:0]}
	if !bytes.HasPrefix(src, xerialMagic) {
		return s.startBlock(src)
	}
	if len(src) < xerialHeaderSize {
		return errors.New("snappy: short xerial header")
	}
	s.xerial, s.rest = true, src[xerialHeaderSize:]
	return nil
}

// release returns s to its pool holding no batch bytes and no more memory
// than a small block needs.
func (s *snappyStream) release() {
	buf := s.buf
	if cap(buf) > snappyKeep {
		buf = nil
	}
	*s = snappyStream{buf: buf[:0]}
	snappyPool.Put(s)
}

// nextBlock starts the next xerial block, or returns io.EOF after the last.
func (s *snappyStream) nextBlock() error {
	if !s.xerial || len(s.rest) == 0 {
		return io.EOF
	}
	if len(s.rest) < 4 {
		return errors.New("snappy: short xerial block length")
	}
	n := int(binary.BigEndian.Uint32(s.rest))
	s.rest = s.rest[4:]
	if n < 0 || n > len(s.rest) {
		return errors.New("snappy: xerial block past the end")
	}
	block := s.rest[:n]
	s.rest = s.rest[n:]
	return s.startBlock(block)
}

// startBlock checks a whole block (see snappyStream) and makes it the one
// being decoded, with no history: snappy blocks are independent. It
// decodes strict snappy, as snappy-java and librdkafka do: S2's extensions
// (a copy at offset 0 repeats the last offset) are refused.
func (s *snappyStream) startBlock(block []byte) error {
	n, k := binary.Uvarint(block)
	if k <= 0 || n > 0xffffffff {
		return errors.New("snappy: bad decoded length")
	}
	if n > uint64(maxSnappyRatio*len(block)) {
		return errors.New("snappy: decoded length past what the block can hold")
	}
	if n <= snappyKeep {
		// A block no larger than the history a stream may keep anyway
		// (a producer's usual batch) is decoded whole, which is faster.
		if cap(s.buf) < int(n) {
			s.buf = make([]byte, 0, snappyKeep)
		}
		out, err := snappy.DecodeStrict(s.buf[:n], block)
		if err != nil {
			return err
		}
		s.block, s.left, s.lit, s.hist = nil, 0, 0, 0
		s.buf, s.r = out, 0
		return nil
	}
	hist, err := snappyCheck(block[k:], int(n))
	if err != nil {
		return err
	}
	s.block, s.left, s.lit, s.hist = block[k:], int(n), 0, hist
	s.buf, s.r = s.buf[:0], 0
	return nil
}

// snappyCheck walks a block's elements without decoding them and returns
// the largest copy distance, or an error where a strict snappy decoder
// fails, or where a copy reaches further back than MaxSnappyWindow.
func snappyCheck(src []byte, decoded int) (int, error) {
	errCorrupt := errors.New("snappy: corrupt input")
	d, hist := 0, 0
	for s := 0; s < len(src); {
		length, offset, size := snappyElement(src[s:])
		if size <= 0 {
			return 0, errCorrupt
		}
		s += size
		if offset == 0 { // a literal: its bytes follow
			if length > len(src)-s {
				return 0, errCorrupt
			}
			s += length
		} else if offset > d {
			return 0, errCorrupt // before the block's start, or S2's repeat (offset 0 is a literal here)
		} else if offset > MaxSnappyWindow {
			return 0, fmt.Errorf("snappy: a copy reaches %d bytes back, over the %d-byte window", offset, MaxSnappyWindow)
		}
		if length > decoded-d {
			return 0, errCorrupt
		}
		d += length
		hist = max(hist, offset)
	}
	if d != decoded {
		return 0, errCorrupt
	}
	return hist, nil
}

// snappyElement parses the element at the start of src: a literal (offset
// 0; its length bytes follow the tag) or a copy. It returns the length
// produced, the copy offset, and the size of the tag, or size <= 0 when
// src is cut short or a copy has offset 0 (S2's repeat code, not snappy).
func snappyElement(src []byte) (length, offset, size int) {
	tag := src[0]
	switch tag & 3 {
	case 0: // literal
		x := int(tag >> 2)
		size = 1
		if x >= 60 {
			extra := x - 59 // 1 to 4 bytes of length
			if len(src) < 1+extra {
				return 0, 0, 0
			}
			x = 0
			for k := range extra {
				x |= int(src[1+k]) << (8 * k)
			}
			size += extra
		}
		return x + 1, 0, size
	case 1:
		if len(src) < 2 {
			return 0, 0, 0
		}
		length, offset, size = 4+int(tag>>2&7), int(tag&0xe0)<<3|int(src[1]), 2
	case 2:
		if len(src) < 3 {
			return 0, 0, 0
		}
		length, offset, size = 1+int(tag>>2), int(binary.LittleEndian.Uint16(src[1:])), 3
	default:
		if len(src) < 5 {
			return 0, 0, 0
		}
		length, offset, size = 1+int(tag>>2), int(binary.LittleEndian.Uint32(src[1:])), 5
	}
	if offset == 0 {
		return 0, 0, 0
	}
	return length, offset, size
}

// Read decodes into p what the blocks, checked by startBlock, produce.
func (s *snappyStream) Read(p []byte) (int, error) {
	for s.r == len(s.buf) {
		if s.left == 0 {
			if err := s.nextBlock(); err != nil {
				return 0, err
			}
			continue
		}
		s.decodeStep()
	}
	n := copy(p, s.buf[s.r:])
	s.r += n
	return n, nil
}

// decodeStep decodes up to snappyStep more bytes of the current block
// after the history its copies need, which it moves to the front of buf.
func (s *snappyStream) decodeStep() {
	if keep := min(len(s.buf), s.hist); len(s.buf) > keep {
		s.buf = s.buf[:copy(s.buf, s.buf[len(s.buf)-keep:])]
	}
	s.r = len(s.buf)
	if want := len(s.buf) + snappyStep + 64; cap(s.buf) < want {
		s.buf = append(make([]byte, 0, want), s.buf...)
	}
	for len(s.buf)-s.r < snappyStep && s.left > 0 {
		if s.lit > 0 { // the rest of a literal
			n := min(s.lit, snappyStep-(len(s.buf)-s.r))
			s.buf = append(s.buf, s.block[:n]...)
			s.block, s.lit, s.left = s.block[n:], s.lit-n, s.left-n
			continue
		}
		length, offset, size := snappyElement(s.block)
		s.block = s.block[size:]
		if offset == 0 {
			s.lit = length
			continue
		}
		// A copy may overlap what it produces: the output from start on
		// repeats with period offset, so each step can copy all of it.
		d := len(s.buf)
		s.buf = s.buf[:d+length] // decodeStep's buffer has room for one element past snappyStep
		for i := d; i < d+length; {
			i += copy(s.buf[i:d+length], s.buf[d-offset:i])
		}
		s.left -= length
	}
}

// decompress appends the record section of a compressed batch, decoded, to
// buf: for compaction and ListOffsets(max timestamp), the places vastfake
// reads a stored compressed batch. It returns ErrDecompress for data that does not decode in the
// batch's codec and ErrTooLarge past MaxDecompressedBytes.
func (b Batch) decompress(buf *bytes.Buffer) error {
	src := []byte(b[BatchHeaderSize:])
	var r io.Reader
	switch b.Compression() {
	case codecGzip:
		zr, err := gzipReader(src)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer putGzip(zr)
		r = zr
	case codecSnappy:
		sr := snappyPool.Get().(*snappyStream)
		defer sr.release()
		if err := sr.reset(src); err != nil {
			return fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		r = sr
	case codecLZ4:
		lr := lz4Pool.Get().(*lz4.Reader)
		lr.Reset(bytes.NewReader(src))
		defer func() {
			lr.Reset(nil)
			lz4Pool.Put(lr)
		}()
		r = lr
	case codecZstd:
		d := zstdPool.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer func() {
			_ = d.Reset(nil)
			zstdPool.Put(d)
		}()
		r = d
	default:
		return fmt.Errorf("%w: unknown compression codec %d", ErrDecompress, b.Compression())
	}
	c := countingReader{r: r}
	_, _ = buf.ReadFrom(&c)
	return c.failed()
}

// compress appends src, a record section, compressed with codec to dst:
// for compaction, which keeps a rebuilt batch's codec as Kafka's cleaner
// does. Each codec writes what Kafka's Java producer writes and every
// client reads: gzip; snappy in snappy-java's xerial framing with 32 KiB
// blocks (so copies stay within MaxSnappyWindow); an LZ4 frame of 64 KiB
// blocks; a zstd frame with a window of at most MaxZstdWindow. All of it
// decompresses again under decompress's limits.
func compress(dst, src []byte, codec int8) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	switch codec {
	case codecGzip:
		zw := gzipWriterPool.Get().(*gzip.Writer)
		zw.Reset(w)
		_, err := zw.Write(src)
		if err == nil {
			err = zw.Close()
		}
		zw.Reset(io.Discard)
		gzipWriterPool.Put(zw)
		return w.Bytes(), err
	case codecSnappy:
		return appendXerial(dst, src), nil
	case codecLZ4:
		lw := lz4WriterPool.Get().(*lz4.Writer)
		lw.Reset(w)
		_, err := lw.Write(src)
		if err == nil {
			err = lw.Close()
		}
		lw.Reset(io.Discard)
		lz4WriterPool.Put(lw)
		return w.Bytes(), err
	case codecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrDecompress, codec)
	}
}

// xerialBlockSize is the block snappy-java's stream writes, and so Kafka's
// Java producer.
const xerialBlockSize = 32 << 10

// appendXerial appends src to dst as snappy-java frames it: the magic, the
// version and compatible version (both 1), then per block of up to
// xerialBlockSize its big-endian length and one raw snappy block.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		need := snappy.MaxEncodedLen(len(chunk))
		dst = slices.Grow(dst, need)
		block := snappy.Encode(dst[len(dst):len(dst)+need], chunk)
		binary.BigEndian.PutUint32(dst[at:], uint32(len(block)))
		dst = dst[:len(dst)+len(block)]
	}
	return dst
}

// Encoders for compaction, pooled and reset onto nothing before they go
// back, so that no pool keeps a batch's bytes. None runs goroutines, so a
// dropped one needs no Close.
var (
	gzipWriterPool = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}
	lz4WriterPool  = sync.Pool{New: func() any {
		w := lz4.NewWriter(io.Discard)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1)); err != nil {
			panic(err) // the options are constants
		}
		return w
	}}
	// zstdEncoder is shared: EncodeAll may be called concurrently and
	// keeps no state between calls.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(MaxZstdWindow))
		if err != nil {
			panic(err) // the options are constants
		}
		return e
	})
)
