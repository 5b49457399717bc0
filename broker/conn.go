package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/pages"
	"github.com/vastfake/vastfake/log"
)

// maxFrameSize is Kafka's socket.request.max.bytes default: a request
// claiming a larger size closes its connection.
const maxFrameSize = 100 << 20

// clientConn is one client connection. Like Kafka's network layer it
// processes one request at a time, in order: a request is read, handled and
// answered before the next is read, so responses always go out in request
// order.
type clientConn struct {
	b      *Broker
	node   *node // the broker id whose listener accepted it
	nc     net.Conn
	rd     deadlineReader // what pre reads from
	r      *bufio.Reader  // reads pre; nil while idle (idleconn.go)
	pre    prefixReader   // first, then rd
	first  [firstRead]byte
	ctx    context.Context
	cancel context.CancelFunc
	remote string

	frame      *frameBuf // the current request's frame, from the broker's free list or its own (readKeptFrame)
	lastFrame  int       // the size of the last whole frame read
	keepFrames bool      // the last produce request was mostly batches the log could keep in place
	reclaim    bool      // the request just answered was large and stored nothing: serve collects its garbage
	readBytes  int64     // the bytes of the frames read so far, for the read buffer's size (readSize)
	out        []byte    // the answer buffer for small answers, reused across requests
	lastAnswer int       // the size of the last answer written
	answerHint int       // the measured size of a large answer about to be written (budgetAnswer)

	clientID string // the last request's client id; only serve's goroutine touches it
	// software and softwareVersion are what ApiVersions v3+ said the
	// client is ("librdkafka", "2.0.2"), clipped; only serve's goroutine
	// touches them.
	software, softwareVersion string
	// inferred is the client software recognised by the versions the
	// connection asks for, when ApiVersions did not name it (see
	// fingerprint); opening is 1 + the version of the ApiVersions the
	// connection opened with, -1 when it opened with another request, 0
	// before its first request; remembered is set once the broker's
	// clientSoftware knows this connection's client id.
	inferred   string
	opening    int16
	remembered bool
	fetchRun   logRun // the request log record of this connection's run of empty fetches

	// SASL state, touched only by the connection's own goroutine.
	user          string // the authenticated user, or ""
	authenticated bool
	mechanism     string         // set by a successful SaslHandshake
	rawSASLNext   bool           // after a v0 SaslHandshake: the next frame is a raw token
	scram         *scramExchange // the SCRAM conversation under way, or nil
}

func newClientConn(b *Broker, n *node, nc net.Conn) *clientConn {
	ctx, cancel := context.WithCancel(b.ctx)
	c := &clientConn{
		b:      b,
		node:   n,
		nc:     nc,
		rd:     deadlineReader{nc: nc, idle: b.cfg.idleTimeout, read: b.cfg.readTimeout},
		ctx:    ctx,
		cancel: cancel,
		remote: nc.RemoteAddr().String(),
	}
	return c
}

// readBufferSize is the read buffer of a connection that has sent at least
// as many bytes (and authenticated, when SASL is required): several small
// requests arrive with one read. Until then a connection has a
// readBufferBeforeAuth one, so that its buffer is never larger than what it
// sent: a burst of connections that each send a request or two (and ones
// that never log in) hold little. A connection holds a read buffer only
// while a request arrives (awaitRequest); buffers go back to free lists of
// at most maxFreeReaders large and maxFreeSmallReaders small ones for the
// next connection that needs one; the rest is garbage, which the broker
// collects once reclaimConns connections have closed since it last did.
const (
	readBufferSize       = 64 << 10
	readBufferBeforeAuth = 4 << 10
	maxFreeReaders       = 128
	reclaimConns         = 1024
)

// connClosed gives a closed connection's large read buffer back to the free
// list, if it has room, and every reclaimConns closed connections collects
// the garbage they left: a burst of connections must not leave its buffers
// resident until the heap goal they raised is reached again.
func (b *Broker) connClosed(c *clientConn) {
	b.giveBackReader(c.r)
	c.r = nil
	b.readersMu.Lock()
	b.closedConns++
	reclaim := b.closedConns >= reclaimConns
	if reclaim {
		b.closedConns = 0
	}
	b.readersMu.Unlock()
	if reclaim {
		b.reclaimLarge()
	}
}

// deadlineReader reads a connection with a read deadline renewed before
// every read: between requests (waiting for a request's first byte) a read
// may wait the idle timeout, inside a request the read timeout; 0 means no
// deadline. A read that times out returns errIdle or a closeError saying the
// request stalled.
type deadlineReader struct {
	nc         net.Conn
	idle, read time.Duration
	betweenReq bool // waiting for a request's first byte
	armed      bool // a deadline is set on nc
}

// errIdle ends a connection that sent no request for the idle timeout.
var errIdle = errors.New("idle timeout")

func (r *deadlineReader) Read(p []byte) (int, error) {
	d := r.read
	if r.betweenReq || d == 0 {
		d = r.idle
	}
	if d > 0 {
		r.nc.SetReadDeadline(time.Now().Add(d))
		r.armed = true
	} else if r.armed {
		r.nc.SetReadDeadline(time.Time{})
		r.armed = false
	}
	n, err := r.nc.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if r.betweenReq {
			return n, errIdle
		}
		return n, &closeError{reason: fmt.Sprintf("request stalled: no bytes for %v before its end", d)}
	}
	return n, err
}

// brokerID returns the id of the broker whose listener accepted c.
func (c *clientConn) brokerID() int32 {
	if c.node == nil {
		return 0
	}
	return c.node.id
}

// protocolError is a malformed request: serve logs it and closes the
// connection.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func protoErr(format string, args ...any) error {
	return &protocolError{msg: fmt.Sprintf(format, args...)}
}

// serve runs the TLS handshake, if any, then reads and answers requests
// until the peer closes the connection, a malformed frame arrives, a
// timeout expires (TLS handshake, idle, stalled request, unread answer) or
// the broker closes. A panic in a handler is logged and closes this
// connection only.
func (c *clientConn) serve() {
	defer c.b.connClosed(c)
	defer c.cancel()
	defer c.nc.Close()
	defer func() {
		if r := recover(); r != nil {
			c.b.log.Error("handler panic; closing connection", "remote", c.remote, "panic", r)
		}
	}()
	if !c.handshakeTLS() {
		return
	}
	for {
		err := c.awaitRequest() // outside handleOne: a shallow stack while idle
		if err == nil {
			err = c.handleOne()
		}
		if c.reclaim { // handleOne has returned: its request is garbage now
			c.reclaim = false
			c.b.reclaimLarge()
		}
		if err != nil {
			c.logEnd(err)
			return
		}
	}
}

// logEnd logs why the connection ends. It is a function of its own so that
// serve's frame, under every idle connection's wait, stays small.
func (c *clientConn) logEnd(err error) {
	var pe *protocolError
	var ce *closeError
	switch {
	case errors.As(err, &pe):
		c.b.log.Warn("closing connection: bad request", "remote", c.remote, "client_id", c.clientID, "reason", pe.msg)
	case errors.As(err, &ce):
		c.b.log.Info("closing connection", "remote", c.remote, "client_id", c.clientID, "user", c.user, "reason", ce.reason)
	case errors.Is(err, errIdle):
		c.b.log.Debug("closing idle connection", "remote", c.remote, "client_id", c.clientID, "idle_timeout", c.rd.idle)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
	default:
		c.b.log.Debug("connection closed", "remote", c.remote, "err", err)
	}
}

// handshakeTLS runs the TLS handshake of a TLS connection, logging why it
// failed; it reports whether the connection may go on.
func (c *clientConn) handshakeTLS() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	err := c.handshake(tc)
	if err == nil {
		return true
	}
	level := slog.LevelInfo
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || c.ctx.Err() != nil {
		level = slog.LevelDebug // a port probe (connect, close), or the broker closing
	}
	c.b.log.Log(c.ctx, level, "closing connection: TLS handshake failed", "remote", c.remote, "err", err)
	return false
}

// handshake runs the TLS handshake within the TLS handshake timeout.
func (c *clientConn) handshake(tc *tls.Conn) error {
	if d := c.b.cfg.tlsHandshakeTimeout; d > 0 {
		tc.SetDeadline(time.Now().Add(d))
		defer tc.SetDeadline(time.Time{})
	}
	return tc.Handshake()
}

// handleOne handles one request, in the order every request takes
// through the broker: read its frame; gate it (a login first where SASL is
// required, an API this broker serves, a version in its range) and decode
// it; inject the latency and the fault a test set for it; serve it; record
// it in the request log; write the answer. It returns the error that ends
// the connection, or nil to read the next request.
func (c *clientConn) handleOne() error {
	defer c.releaseFrame()
	if c.rawSASLNext {
		return c.rawSASLAuthenticate()
	}
	in, err := c.readRequest()
	if err != nil {
		return err
	}
	a, err := c.gate(&in)
	if a == nil {
		return err // refused, or answered at the gate
	}
	req, endLarge, err := c.decode(&in)
	if err != nil {
		return err
	}
	defer endLarge() // if the request is not handled
	defer req.releaseReads()
	c.auditUngated(a, req)
	fault, err := c.inject(req)
	if err != nil {
		return err
	}
	resp := c.handle(a, req, fault)
	endLarge() // handled: a slow reader of the answer does not hold the turn
	c.record(req, resp, fault)
	return c.answer(in.corr, req, resp, fault)
}

// inbound is one request as the gate sees it: the fields of its header
// before the client id, the rest of its frame, and, once the gate has
// passed it, its request (at its version, not yet decoded) and body.
type inbound struct {
	key, version int16
	corr         int32
	hdr          []byte // the frame after the api key, version and correlation id
	// unauthenticated is set when SASL is required and the connection
	// has not logged in yet.
	unauthenticated bool

	kreq kmsg.Request
	body []byte
}

// readRequest reads one request's frame (readFrame) and its header's api
// key, version and correlation id. A frame under 8 bytes, over
// maxFrameSize, or over maxSASLFrameSize before a login SASL requires,
// and a frame cut short, are protocol errors.
func (c *clientConn) readRequest() (inbound, error) {
	size, err := c.readSize()
	if err != nil {
		return inbound{}, err
	}
	in := inbound{unauthenticated: c.b.saslRequired() && !c.authenticated}
	if size < 8 || size > maxFrameSize || in.unauthenticated && size > maxSASLFrameSize {
		return in, protoErr("frame size %d out of range", size)
	}
	frame, err := c.readFrame(int(size))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return in, protoErr("truncated frame")
		}
		return in, err
	}
	in.key = int16(binary.BigEndian.Uint16(frame[0:]))
	in.version = int16(binary.BigEndian.Uint16(frame[2:]))
	in.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	in.hdr = frame[8:]
	c.reclaim = len(frame) >= reclaimAfter && in.key != int16(kmsg.Produce)
	return in, nil
}

// decode reads in's body into its request, under the broker's turn for
// large requests (startLarge), and returns the request and the function
// that gives the turn back (a no-op when none was taken). JoinGroup and
// SyncGroup give it back as soon as they are decoded, since they wait for
// other members, who may be waiting for the turn. A body that does not
// parse is a protocol error.
func (c *clientConn) decode(in *inbound) (req *request, endLarge func(), err error) {
	endLarge = func() {}
	if c.reclaim {
		end := c.b.startLarge(c.ctx.Done())
		if end == nil {
			return nil, nil, c.ctx.Err()
		}
		endLarge = sync.OnceFunc(end)
	}
	if err := in.kreq.ReadFrom(in.body); err != nil {
		endLarge()
		return nil, nil, protoErr("%s v%d: %v", kmsg.NameForKey(in.key), in.version, err)
	}
	if in.key == int16(kmsg.JoinGroup) || in.key == int16(kmsg.SyncGroup) {
		endLarge()
	}
	req = &request{ctx: c.ctx, b: c.b, conn: c, version: in.version, clientID: c.clientID, kreq: in.kreq, user: c.user}
	return req, endLarge, nil
}

// answer writes resp, the answer to r, at r's version, and returns the
// error that closes the connection when r asked to close after it. A
// fault that drops the answer closes the connection instead of writing
// it, and an acks=0 Produce gets no answer at all, as in Kafka.
func (c *clientConn) answer(corr int32, r *request, resp kmsg.Response, fault *Fault) error {
	if fault != nil && fault.DropAnswer {
		return &closeError{reason: r.closeAfter}
	}
	if p, ok := r.kreq.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil // Kafka sends no answer at all to an acks=0 produce, faulted or not
	}
	resp.SetVersion(r.version)
	// ApiVersions answers with a v0 response header even when flexible,
	// so that clients can always parse it.
	flexHeader := r.kreq.IsFlexible() && r.kreq.Key() != int16(kmsg.ApiVersions)
	endAnswer := c.budgetAnswer(r.kreq.Key(), resp) // a large answer waits for its share (answers.go)
	if endAnswer == nil {
		return c.ctx.Err()
	}
	err := c.write(corr, resp, flexHeader)
	endAnswer()
	if err != nil {
		return err
	}
	if r.closeAfter != "" {
		return &closeError{reason: r.closeAfter}
	}
	return nil
}

// write encodes resp with kmsg behind its response header and flushes it.
func (c *clientConn) write(corr int32, resp kmsg.Response, flexHeader bool) error {
	out := c.out[:0]
	var fb *frameBuf
	// A large answer (records, or as large as this connection's last) is
	// encoded into a buffer of the free list, given back once written, so
	// that an idle consumer's connection holds none. A first large answer
	// of another kind grows c.out on the heap and is dropped below.
	need := max(responseSizeHint(resp), c.answerHint)
	c.answerHint = 0
	if c.lastAnswer > maxKeptAnswer {
		need = max(need, c.lastAnswer)
	}
	if cap(out) < need {
		fb = c.b.buffers.get(need)
		out = fb.b[:0]
	}
	out = append(out, 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if flexHeader {
		out = append(out, 0) // no tagged fields
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	c.lastAnswer = len(out)
	err := c.send(out) // one whole frame per write: no buffering to gain from
	switch {
	case fb != nil:
		c.b.buffers.put(fb)
	case cap(out) <= maxKeptAnswer:
		c.out = out
	default:
		c.out = nil
	}
	return err
}

// sendChunk is how much of an answer send writes under one deadline.
const sendChunk = 256 << 10

// send writes one whole frame. A client that reads none of it for the idle
// timeout has its connection closed: the deadline is renewed for every
// sendChunk bytes, so a client that reads a large answer slowly but steadily
// keeps its connection, as Kafka counts idleness from the last progress.
func (c *clientConn) send(frame []byte) error {
	d := c.b.cfg.idleTimeout
	if d <= 0 {
		_, err := c.nc.Write(frame)
		return err
	}
	for len(frame) > 0 {
		n := min(len(frame), sendChunk)
		c.nc.SetWriteDeadline(time.Now().Add(d))
		if _, err := c.nc.Write(frame[:n]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return &closeError{reason: fmt.Sprintf("the client read nothing of an answer for %v", d)}
			}
			return err
		}
		frame = frame[n:]
	}
	return nil
}

// maxKeptAnswer bounds the answer buffer a connection keeps for its next
// answer. Answers that carry records (fetches) are encoded into buffers of
// the broker's shared free list instead.
const maxKeptAnswer = 64 << 10

// responseSizeHint estimates the encoded size of a response that carries
// records, so the buffer is allocated once; 0 for other responses.
func responseSizeHint(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range f.Topics {
		n += 64 + len(f.Topics[i].Topic)
		for j := range f.Topics[i].Partitions {
			n += 64 + len(f.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}

// parseRequestHeader reads the client id (a nullable int16 string) and, for a
// flexible request (header v2), skips the header's tagged fields. It returns
// the request body and the client id's bytes, which alias b.
func parseRequestHeader(b []byte, flexible bool) (body []byte, clientID []byte, err error) {
	if len(b) < 2 {
		return nil, nil, protoErr("truncated request header")
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > 0 {
		if int(n) > len(b) {
			return nil, nil, protoErr("truncated client id")
		}
		clientID = b[:n]
		b = b[n:]
	} else if n < -1 {
		return nil, nil, protoErr("bad client id length %d", n)
	}
	if flexible {
		count, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, protoErr("bad header tagged fields")
		}
		b = b[k:]
		for i := uint64(0); i < count; i++ {
			if _, k = binary.Uvarint(b); k <= 0 {
				return nil, nil, protoErr("bad header tag")
			}
			b = b[k:]
			size, k := binary.Uvarint(b)
			if k <= 0 || size > uint64(len(b)-k) {
				return nil, nil, protoErr("bad header tag size")
			}
			b = b[k+int(size):]
		}
	}
	return b, clientID, nil
}

// readSize reads a frame's int32 size. It waits up to the idle timeout for
// the first byte, then the read timeout for each later read until the
// frame is complete. It returns io.ErrUnexpectedEOF for a size cut short.
func (c *clientConn) readSize() (int32, error) {
	c.rd.betweenReq = true
	first, err := c.r.ReadByte()
	c.rd.betweenReq = false
	if err != nil {
		return 0, err
	}
	size := uint32(first)
	for range 3 { // byte by byte from the buffer: no slice to escape per request
		b, err := c.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		size = size<<8 | uint32(b)
	}
	c.readBytes += 4 + int64(size)
	return int32(size), nil
}

// readFrame reads a frame body of size bytes into a buffer from the shared
// free list, which the connection holds until releaseFrame (after the request is
// answered). A free buffer of the frame's size (of the previous frame's,
// if that was larger) is taken at once: the broker holds it already (a
// released one's pages come back only as the frame's bytes arrive), and a
// producer whose requests vary in size keeps to one buffer. Otherwise the
// broker allocates at most twice the bytes the connection has sent (and at
// least minFrameBuffer): the buffer starts at the larger of what is already
// buffered and the connection's previous frame, and doubles only once
// full, so a client that sends only a huge length cannot make the broker
// allocate it, while a producer sending frames of one size reads each
// straight into a buffer of that size. The buffers a frame outgrows go
// back to the free list with their pages given back to the kernel. A
// producer's large frames may instead be read into memory of their own
// (readKeptFrame). It returns io.ErrUnexpectedEOF for a frame cut short.
func (c *clientConn) readFrame(size int) ([]byte, error) {
	c.releaseFrame()
	if c.keepFrames && size >= minKeptFrame && size <= maxKeptGrowth*c.lastFrame {
		if key, err := c.r.Peek(2); err == nil && binary.BigEndian.Uint16(key) == uint16(kmsg.Produce) {
			return c.readKeptFrame(size)
		}
	}
	want := size
	if size >= minReleased {
		want = max(size, c.lastFrame) // the buffer the connection's frames used
	}
	fb := c.b.buffers.getFree(want)
	if fb == nil {
		fb = c.b.buffers.get(min(size, max(minFrameBuffer, c.r.Buffered(), c.lastFrame)))
	}
	buf := fb.b[:0]
	for {
		n, err := io.ReadFull(c.r, buf[len(buf):min(size, cap(buf))])
		buf = buf[:len(buf)+n]
		if err != nil {
			c.b.buffers.put(fb)
			if errors.Is(err, io.EOF) && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(buf) == size {
			break
		}
		// Full: the next buffer is at most twice what has arrived.
		next := c.b.buffers.get(min(size, 2*len(buf)))
		buf = append(next.b[:0], buf...)
		c.b.buffers.putReleased(fb)
		fb = next
	}
	fb.released = false // its pages are in memory now, written by the frame
	c.frame, c.lastFrame = fb, size
	return buf, nil
}

// readKeptFrame reads a produce frame of size bytes into memory of its own,
// which the log may keep (log.Partition.StageInPlace) instead of copying
// its large batches: see loanFor. readFrame takes this path only on a
// connection whose last produce request was mostly such batches, and only
// for a frame at most maxKeptGrowth times the connection's previous one, so
// that what it allocates before the bytes arrive is bounded by what the
// connection has sent; pages are mapped in keptFrameStep ahead of the
// bytes, so resident memory follows them, and given back if the frame is
// cut short. The memory is huge-page aligned where it can be (pages.Make):
// writing fresh memory is most of what storing a batch costs, and a huge
// page faults once for 512 small ones.
func (c *clientConn) readKeptFrame(size int) ([]byte, error) {
	fb := c.b.buffers.own(size)
	for at := 0; at < size; {
		part := fb.b[at:min(size, at+keptFrameStep)]
		if fb.released {
			pages.Populate(part) // what arrives next, in one call
		}
		n, err := io.ReadFull(c.r, part)
		at += n
		if err != nil {
			pages.Release(fb.b[:at])
			fb.released = true
			fb.loan.Done()
			if errors.Is(err, io.EOF) && at > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	fb.released = false
	c.frame, c.lastFrame = fb, size
	return fb.b, nil
}

// keptFrameStep is how much of a frame read into memory of its own is
// mapped in ahead of its bytes: its resident memory follows what arrives.
const keptFrameStep = 1 << 20

// loanFor returns the loan under which a batch of the current request may be
// staged in place (log.Partition.StageInPlace), or nil when it is to be
// copied: a batch is kept in place when it is minKeptBatch bytes or more and
// lies in a frame read into memory of its own (readKeptFrame).
func (c *clientConn) loanFor(batch []byte) *log.Loan {
	if c.frame == nil || !c.frame.kept() || len(batch) < minKeptBatch {
		return nil
	}
	f := c.frame.b
	start := uintptr(unsafe.Pointer(unsafe.SliceData(f)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(batch)))
	if at < start || at+uintptr(len(batch)) > start+uintptr(len(f)) {
		return nil
	}
	return c.frame.loan
}

// minKeptBatch is the smallest batch kept in its request's frame: smaller
// ones are copied into the log's chunks, so that a frame of many small
// batches is not kept whole for a few of them. minKeptFrame is the smallest
// produce frame read into memory of its own.
const (
	minKeptBatch = 64 << 10
	minKeptFrame = 256 << 10
)

// maxKeptGrowth bounds a frame read into memory of its own by the
// connection's previous frame: a producer's requests grow as its batches
// fill (kgo's first three requests in a row: 1.1, 2.4 and 3.0 MB), more
// than the free list's ladder lets a buffer grow at once (twice).
const maxKeptGrowth = 4

// noteProduce records that large bytes of the current produce request are
// accepted batches of minKeptBatch bytes or more. When they are more than
// half of its frame, the connection's next large produce frames are read
// into memory of their own (readKeptFrame), and it reports whether this
// request's such batches may stay in its frame (loanFor): a frame is kept
// only for batches that fill most of it, so that what else it holds
// (headers, small or refused batches, which are copied or dropped) costs at
// most as much memory as the batches kept.
func (c *clientConn) noteProduce(large int) bool {
	c.keepFrames = 2*large > c.lastFrame
	return c.keepFrames
}

// releaseFrame gives the connection's frame buffer back to the free list. The
// request it held must be done with: whatever a handler keeps of a request
// (group metadata, assignments) it copies. A frame read into memory of its
// own (readKeptFrame) is instead let go of: batches staged in it hold it
// until the log gives them back; one that stored no batch goes back at once,
// its pages released, as it may not serve a frame again soon. So does a
// free-list buffer of a huge page or more on a connection that reads its
// large produce frames into memory of their own: the connection will not
// need it for them again.
func (c *clientConn) releaseFrame() {
	if c.frame != nil {
		if fb := c.frame; fb.kept() {
			if !fb.loan.Stored() {
				pages.Release(fb.b)
				fb.released = true
			}
			fb.loan.Done()
		} else if c.keepFrames && cap(c.frame.b) >= pages.HugePage {
			c.b.buffers.putReleased(c.frame)
		} else {
			c.b.buffers.put(c.frame)
		}
		c.frame = nil
	}
}

// remoteHost is the client's address as Kafka reports it in DescribeGroups:
// "/host".
func (c *clientConn) remoteHost() string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		host = c.remote
	}
	return "/" + host
}
