package log

// Validation of compressed batches: records are validated as they
// decompress, so memory follows the largest record rather than the batch's
// (claimed) decompressed size. Batches are stored and served as received,
// never re-encoded.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
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
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipPool sync.Pool // *gzip.Reader
	lz4Pool  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdPool = sync.Pool{New: func() any {
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

// validateCompressed validates the records of a compressed batch; see
// Validate. gzip, lz4 and zstd are validated as they decompress; snappy,
// whose blocks hold their decoded length, is decoded block by block into
// pooled memory and validated in place.
func (b Batch) validateCompressed() (RecordStats, error) {
	src := []byte(b[BatchHeaderSize:])
	switch b.Compression() {
	case codecGzip:
		zr, err := gzipReader(src)
		if err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer putGzip(zr)
		return b.validateStream(zr)
	case codecSnappy:
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		defer func() {
			if buf.Cap() <= poolMax {
				bufPool.Put(buf)
			}
		}()
		if err := unsnappy(buf, src); errors.Is(err, ErrTooLarge) {
			return RecordStats{}, err
		} else if err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		return b.validateRecords(buf.Bytes())
	case codecLZ4:
		r := lz4Pool.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		defer func() {
			r.Reset(nil)
			lz4Pool.Put(r)
		}()
		return b.validateStream(r)
	case codecZstd:
		d := zstdPool.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return RecordStats{}, fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		defer func() {
			_ = d.Reset(nil) // lets go of src; never fails
			zstdPool.Put(d)
		}()
		return b.validateStream(d)
	default:
		return RecordStats{}, fmt.Errorf("%w: unknown compression codec %d", ErrDecompress, b.Compression())
	}
}

// recordStream reads the records of a decompressing batch one at a time.
type recordStream struct {
	src countingReader
	br  *bufio.Reader // reads src
	rec []byte        // a record larger than br's buffer
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
// the first error, with the same record checks as an uncompressed batch
// (validateRecord). It reads r to its end, so that a checksum at the end
// of the stream is checked and bytes after the last record are refused.
func (b Batch) validateStream(r io.Reader) (RecordStats, error) {
	s := streamPool.Get().(*recordStream)
	s.src = countingReader{r: r}
	s.br.Reset(&s.src)
	defer s.release()

	stats := RecordStats{MinTimestamp: math.MaxInt64, MaxTimestamp: math.MinInt64}
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
		rec, err := s.next(int(length))
		if err != nil {
			if err := s.src.failed(); err != nil {
				return stats, err
			}
			return stats, invalidRecord(i, "record length does not fit the batch")
		}
		if err := validateRecord(rec, i, first, &stats); err != nil {
			return stats, err
		}
	}
	if _, err := s.br.ReadByte(); err == nil {
		return stats, fmt.Errorf("%w: more records than the batch's count of %d", ErrInvalidRecord, n)
	}
	return stats, s.src.failed()
}

// next reads the next n bytes, which are valid until the next read. A
// record that fits the read buffer is not copied; a larger one is read into
// a slice that grows with what actually arrives, never by a length the
// stream merely claims.
func (s *recordStream) next(n int) ([]byte, error) {
	if n <= s.br.Size() {
		rec, err := s.br.Peek(n)
		if err != nil {
			return nil, err
		}
		_, _ = s.br.Discard(n)
		return rec, nil
	}
	s.rec = s.rec[:0]
	for len(s.rec) < n {
		chunk := min(n-len(s.rec), max(len(s.rec), s.br.Size()))
		s.rec = slices.Grow(s.rec, chunk)
		got, err := io.ReadFull(s.br, s.rec[len(s.rec):len(s.rec)+chunk])
		s.rec = s.rec[:len(s.rec)+got]
		if err != nil {
			return nil, err
		}
	}
	return s.rec, nil
}

// release returns s to its pool holding nothing of the batch it read.
func (s *recordStream) release() {
	s.src = countingReader{}
	s.br.Reset(&s.src)
	if cap(s.rec) > poolMax {
		s.rec = nil
	}
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

// unsnappy decodes snappy-java's framed stream or one raw snappy block.
func unsnappy(buf *bytes.Buffer, src []byte) error {
	if !bytes.HasPrefix(src, xerialMagic) {
		return unsnappyBlock(buf, src)
	}
	if len(src) < xerialHeaderSize {
		return errors.New("snappy: short xerial header")
	}
	src = src[xerialHeaderSize:]
	for len(src) > 0 {
		if len(src) < 4 {
			return errors.New("snappy: short xerial block length")
		}
		n := int(binary.BigEndian.Uint32(src))
		src = src[4:]
		if n < 0 || n > len(src) {
			return errors.New("snappy: xerial block past the end")
		}
		if err := unsnappyBlock(buf, src[:n]); err != nil {
			return err
		}
		src = src[n:]
	}
	return nil
}

// unsnappyBlock appends one decoded snappy block to buf. It decodes strict
// snappy, as snappy-java and librdkafka do: S2's extensions, which an S2
// decoder would accept, are refused.
func unsnappyBlock(buf *bytes.Buffer, block []byte) error {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return err
	}
	if n > maxSnappyRatio*len(block) {
		return errors.New("snappy: decoded length past what the block can hold")
	}
	if buf.Len()+n > MaxDecompressedBytes {
		return ErrTooLarge
	}
	buf.Grow(n)
	dst := buf.AvailableBuffer()[:n]
	if _, err := snappy.DecodeStrict(dst, block); err != nil {
		return err
	}
	buf.Write(dst) // dst is buf's own free space: Write only extends buf
	return nil
}

// decompress appends the record section of a compressed batch, decoded, to
// buf: for compaction, the one place vastfake reads a stored compressed
// batch. It returns ErrDecompress for data that does not decode in the
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
		if err := unsnappy(buf, src); errors.Is(err, ErrTooLarge) {
			return err
		} else if err != nil {
			return fmt.Errorf("%w: %v", ErrDecompress, err)
		}
		return nil
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
