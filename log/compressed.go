package log

// Decompression of compressed batches, for Validate only: batches are
// stored and served as received, never re-encoded.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedBytes caps what one compressed batch may decompress to.
// Kafka has no such cap (it streams records); vastfake decompresses a batch
// whole to validate it, and refuses a larger one with MESSAGE_TOO_LARGE so
// that a hostile batch cannot exhaust memory. It is far above what any
// producer batches (clients cap a batch's uncompressed size near 1 MiB by
// default).
const MaxDecompressedBytes = 128 << 20

// Compression codecs of a batch's attributes.
const (
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// Pools of decompressed buffers and stream decoders, so that validating
// compressed batches allocates little. Buffers that grew past poolMax are
// left to the garbage collector instead of being kept.
var (
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipPool sync.Pool // *gzip.Reader
	lz4Pool  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

	zstdOnce    sync.Once
	zstdDecoder *zstd.Decoder
)

const poolMax = 4 << 20

// xerialMagic starts snappy data framed the way the Java producer frames it
// (snappy-java's stream format): the magic, a version and a compatible
// version, then blocks each prefixed with its big-endian int32 length.
// Anything else is one raw snappy block, as snappy-java also reads it.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// decompress decompresses src in the given codec and calls fn with the
// result, which is only valid during the call. It returns fn's error,
// ErrDecompress (wrapped with the codec's complaint) when src is not valid
// in the codec, or ErrTooLarge past MaxDecompressedBytes.
func decompress(codec int8, src []byte, fn func([]byte) error) error {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= poolMax {
			bufPool.Put(buf)
		}
	}()
	var err error
	switch codec {
	case codecGzip:
		err = gunzip(buf, src)
	case codecSnappy:
		err = unsnappy(buf, src)
	case codecLZ4:
		r := lz4Pool.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		err = readLimited(buf, r)
		r.Reset(nil)
		lz4Pool.Put(r)
	case codecZstd:
		err = unzstd(buf, src)
	default:
		err = fmt.Errorf("unknown compression codec %d", codec)
	}
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDecompress, err)
	}
	return fn(buf.Bytes())
}

// readLimited reads r to its end into buf, up to MaxDecompressedBytes.
func readLimited(buf *bytes.Buffer, r io.Reader) error {
	n, err := buf.ReadFrom(io.LimitReader(r, MaxDecompressedBytes+1))
	if err != nil {
		return err
	}
	if n > MaxDecompressedBytes {
		return ErrTooLarge
	}
	return nil
}

func gunzip(buf *bytes.Buffer, src []byte) error {
	zr, _ := gzipPool.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return err
	}
	defer gzipPool.Put(zr)
	return readLimited(buf, zr)
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

// unsnappyBlock appends one decoded snappy block to buf.
func unsnappyBlock(buf *bytes.Buffer, block []byte) error {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return err
	}
	if buf.Len()+n > MaxDecompressedBytes {
		return ErrTooLarge
	}
	buf.Grow(n)
	dst := buf.AvailableBuffer()[:n]
	if _, err := s2.Decode(dst, block); err != nil {
		return err
	}
	buf.Write(dst) // dst is buf's own free space: Write only extends buf
	return nil
}

func unzstd(buf *bytes.Buffer, src []byte) error {
	zstdOnce.Do(func() {
		// DecodeAll needs no goroutines; the decoder is shared by every
		// connection and never closed.
		zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxDecompressedBytes))
	})
	out, err := zstdDecoder.DecodeAll(src, buf.AvailableBuffer())
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return ErrTooLarge
	}
	if err != nil {
		return err
	}
	buf.Write(out)
	return nil
}
