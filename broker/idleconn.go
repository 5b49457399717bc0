package broker

// What an idle connection holds. A client keeps its connections open
// between requests, most of them idle most of the time, so an idle
// connection holds no read buffer: waiting for its next request, it reads
// into a small array of its own (firstRead bytes, enough for a heartbeat,
// a commit or a fetch request whole), and takes a read buffer from the
// broker's free lists only once bytes have arrived; the buffer goes back
// when the connection is idle again. The wait runs in a shallow call
// (serve, awaitRequest), not inside handleOne, so that the garbage
// collector can shrink the goroutine's stack while it waits.

import (
	"bufio"
	"io"
)

// firstRead is the bytes an idle connection reads before it takes a read
// buffer: most requests that are not a Produce fit in it whole.
const firstRead = 512

// maxFreeSmallReaders bounds the free list of readBufferBeforeAuth
// readers (4 KiB each, so 4 MiB); the list of large ones is
// maxFreeReaders.
const maxFreeSmallReaders = 1024

// prefixReader reads the bytes an idle connection read first, then the
// connection itself.
type prefixReader struct {
	pre []byte
	rd  *deadlineReader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.rd.Read(b)
}

// awaitRequest waits, with the idle timeout, for the next request's first
// bytes when none are buffered, holding no read buffer meanwhile: the one
// it had goes back to the broker's free lists, and once bytes arrive it
// takes one (64 KiB once the connection has sent that much and, when SASL
// is required, authenticated; 4 KiB before). It returns errIdle, io.EOF or
// the connection's error when no byte arrives.
func (c *clientConn) awaitRequest() error {
	if c.r != nil && (c.r.Buffered() > 0 || len(c.pre.pre) > 0) {
		return nil
	}
	c.b.giveBackReader(c.r)
	c.r = nil
	c.rd.betweenReq = true
	n, err := c.rd.Read(c.first[:])
	c.rd.betweenReq = false
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	c.pre = prefixReader{pre: c.first[:n], rd: &c.rd}
	large := c.readBytes >= readBufferSize && (c.authenticated || !c.b.saslRequired())
	c.r = c.b.takeReader(&c.pre, large)
	return nil // an error with bytes comes again on the next read
}

// takeReader returns a free read buffer reading r, large (readBufferSize)
// or small (readBufferBeforeAuth), or a new one.
func (b *Broker) takeReader(r io.Reader, large bool) *bufio.Reader {
	size, list := readBufferBeforeAuth, &b.smallReaders
	if large {
		size, list = readBufferSize, &b.readers
	}
	b.readersMu.Lock()
	if n := len(*list); n > 0 {
		br := (*list)[n-1]
		(*list)[n-1] = nil
		*list = (*list)[:n-1]
		b.readersMu.Unlock()
		br.Reset(r)
		return br
	}
	b.readersMu.Unlock()
	return bufio.NewReaderSize(r, size)
}

// giveBackReader puts br on its free list if the list has room; the rest
// is garbage. It does nothing with nil.
func (b *Broker) giveBackReader(br *bufio.Reader) {
	if br == nil {
		return
	}
	br.Reset(nil)
	b.readersMu.Lock()
	defer b.readersMu.Unlock()
	switch br.Size() {
	case readBufferSize:
		if len(b.readers) < maxFreeReaders {
			b.readers = append(b.readers, br)
		}
	case readBufferBeforeAuth:
		if len(b.smallReaders) < maxFreeSmallReaders {
			b.smallReaders = append(b.smallReaders, br)
		}
	}
}
