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
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/pages"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
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
	rd     deadlineReader // what r reads from
	r      *bufio.Reader
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
	mechanism     string // set by a successful SaslHandshake
	rawSASLNext   bool   // after a v0 SaslHandshake: the next frame is a raw token
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
	c.r = bufio.NewReaderSize(&c.rd, readBufferBeforeAuth) // see readSize
	return c
}

// readBufferSize is the read buffer of a connection that has sent at least
// as many bytes (and authenticated, when SASL is required): several small
// requests arrive with one read. Until then a connection has a
// readBufferBeforeAuth one, so that its buffer is never larger than what it
// sent: a burst of connections that each send a request or two (and ones
// that never log in) hold little. A closed connection's large buffer goes
// to a free list of at most maxFreeReaders for the next connection that
// needs one; the rest is garbage, which the broker collects once
// reclaimConns connections have closed since it last did.
const (
	readBufferSize       = 64 << 10
	readBufferBeforeAuth = 4 << 10
	maxFreeReaders       = 128
	reclaimConns         = 1024
)

// takeReader returns a free large read buffer reading r, or a new one.
func (b *Broker) takeReader(r io.Reader) *bufio.Reader {
	b.readersMu.Lock()
	defer b.readersMu.Unlock()
	if n := len(b.readers); n > 0 {
		br := b.readers[n-1]
		b.readers[n-1] = nil
		b.readers = b.readers[:n-1]
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, readBufferSize)
}

// connClosed gives a closed connection's large read buffer back to the free
// list, if it has room, and every reclaimConns closed connections collects
// the garbage they left: a burst of connections must not leave its buffers
// resident until the heap goal they raised is reached again.
func (b *Broker) connClosed(c *clientConn) {
	b.readersMu.Lock()
	if c.r.Size() == readBufferSize && len(b.readers) < maxFreeReaders {
		c.r.Reset(nil)
		b.readers = append(b.readers, c.r)
	}
	c.r = nil
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

// request is one decoded request as a handler sees it. It is also the
// coordinator's Caller (caller.go).
type request struct {
	ctx      context.Context
	b        *Broker
	conn     *clientConn
	version  int16
	clientID string
	kreq     kmsg.Request
	rule     string // the VAST rule that refused (part of) the request first
	finding  string // the audited VAST rule of the first finding the request caused
	// rules and findings list every rule that refused part of the
	// request, and every audited rule it broke, when there is more than
	// one; nil otherwise, so that a request breaking one rule allocates
	// nothing.
	rules, findings []string
	why             string // what the refusal told the client, when its answer has no message field

	user       string // the authenticated user, or "" (SaslAuthenticate: the user it names)
	denied     string // why a policy (or failed authentication) denied (part of) the request
	closeAfter string // when set, the connection closes after the answer, for this reason

	reads []log.ReadResult // log reads the answer aliases, released once it is written

	createdGroup string // the group the request created (JoinGroup, OffsetCommit), for the group forecast
	refusedAbout string // the topic (or group) of the first refusal, for the server log
}

// releaseReads ends the log reads the request's answer aliased; the answer
// must be written (encoded) by then.
func (r *request) releaseReads() {
	for i := range r.reads {
		r.reads[i].Release()
	}
	r.reads = nil
}

// principal is the name policies match for this request's user.
func (r *request) principal() string {
	if r.user == "" {
		return anonymous
	}
	return r.user
}

// deny records why a policy denied this request, for the request log.
func (r *request) deny(why string) {
	if r.denied == "" {
		r.denied = why
	}
}

// refuse records that a VAST rule refused this request, for the request log.
func (r *request) refuse(rule string) {
	r.rule, r.rules = addRule(r.rule, r.rules, rule)
}

// addRule adds rule to a request's first rule and list of all, and
// returns them: the list is made only when a second rule comes.
func addRule(first string, all []string, rule string) (string, []string) {
	switch {
	case first == "":
		return rule, nil
	case first == rule || slices.Contains(all, rule):
		return first, all
	case all == nil:
		return first, []string{first, rule}
	}
	return first, append(all, rule)
}

// refuseBecause is refuse with the reason, for answers that carry no error
// message of their own (JoinGroup, OffsetCommit): the request log and the
// log line show it instead.
func (r *request) refuseBecause(rule, why string) {
	if r.rule == "" {
		r.why = why
	}
	r.rule, r.rules = addRule(r.rule, r.rules, rule)
}

// fingerprint recognises, from the versions a connection asks for, the
// clients that do not name themselves in ApiVersions v3+, so that audit
// advice speaks their configuration whatever client id the app set:
//   - kafkajs 2.x opens with ApiVersions v2;
//   - kafka-python 2.0 and kafka-go open with ApiVersions v0; then
//     kafka-python asks for Metadata v0-v1 or Produce up to v7, kafka-go for
//     Metadata or Produce v8 and above;
//   - older sarama releases set below Version 2.4 (and any sarama with
//     ApiVersionsRequest off) sends no ApiVersions and opens with Metadata
//     v2 or above; kafka-python's connections after the first send no
//     ApiVersions either, and open with Metadata v0-v1.
//
// A connection that opens with Produce is not told apart here: the broker's
// clientSoftware names it from its client id's other connections. kgo,
// librdkafka (and the clients built on it), sarama otherwise, and the Java
// client send ApiVersions v3+ and name themselves.
func (c *clientConn) fingerprint(key, version int16) {
	if c.opening == 0 {
		c.opening = -1
		if key == int16(kmsg.ApiVersions) {
			c.opening = version + 1
		}
	}
	metadata, produce := key == int16(kmsg.Metadata), key == int16(kmsg.Produce)
	switch c.opening {
	case 3:
		c.inferred = "kafkajs"
	case 1:
		switch {
		case metadata && version <= 1, produce && version <= 7:
			c.inferred = "kafka-python"
		case metadata && version >= 8, produce && version >= 8:
			c.inferred = "kafka-go"
		}
	case -1:
		switch {
		case metadata && version <= 1:
			c.inferred = "kafka-python"
		case metadata:
			c.inferred = "sarama"
		}
	}
}

// brokerID returns the id of the broker whose listener accepted c.
func (c *clientConn) brokerID() int32 {
	if c.node == nil {
		return 0
	}
	return c.node.id
}

// softwareLabel names the connection's client software for findings: what
// ApiVersions said, else what fingerprint recognised, else "".
func (c *clientConn) softwareLabel() (software, version string) {
	switch {
	case c.software != "":
		return c.software, c.softwareVersion
	case c.inferred != "":
		return c.inferred + " (recognised by its requests)", ""
	}
	return "", ""
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
	if tc, ok := c.nc.(*tls.Conn); ok {
		if err := c.handshake(tc); err != nil {
			level := slog.LevelInfo
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || c.ctx.Err() != nil {
				level = slog.LevelDebug // a port probe (connect, close), or the broker closing
			}
			c.b.log.Log(c.ctx, level, "closing connection: TLS handshake failed", "remote", c.remote, "err", err)
			return
		}
	}
	for {
		err := c.handleOne()
		if c.reclaim { // handleOne has returned: its request is garbage now
			c.reclaim = false
			c.b.reclaimLarge()
		}
		if err == nil {
			continue
		}
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
		return
	}
}

// handshake runs the TLS handshake within the TLS handshake timeout.
func (c *clientConn) handshake(tc *tls.Conn) error {
	if d := c.b.cfg.tlsHandshakeTimeout; d > 0 {
		tc.SetDeadline(time.Now().Add(d))
		defer tc.SetDeadline(time.Time{})
	}
	return tc.Handshake()
}

// handleOne reads one frame, dispatches it and writes the answer.
func (c *clientConn) handleOne() error {
	defer c.releaseFrame()
	if c.rawSASLNext {
		return c.rawSASLAuthenticate()
	}
	size, err := c.readSize()
	if err != nil {
		return err
	}
	unauthenticated := c.b.saslRequired() && !c.authenticated
	if size < 8 || size > maxFrameSize || unauthenticated && size > maxSASLFrameSize {
		return protoErr("frame size %d out of range", size)
	}
	frame, err := c.readFrame(int(size))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return protoErr("truncated frame")
		}
		return err
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := int32(binary.BigEndian.Uint32(frame[4:]))
	c.reclaim = len(frame) >= reclaimAfter && key != int16(kmsg.Produce)

	if key < 0 || int(key) >= len(c.b.apiByKey) || c.b.apiByKey[key] == nil {
		if key >= 0 && int(key) < len(c.b.hiddenBy) && c.b.hiddenBy[key] != "" {
			if unauthenticated { // no rule refusal for a client that never logged in
				return c.requireLogin(key, version, frame[8:])
			}
			return c.refuseHidden(key, version, frame[8:])
		}
		if key >= 0 && int(key) < len(c.b.auditedBy) && c.b.auditedBy[key] != 0 && !unauthenticated {
			// Not served even in Kafka's behaviour (KIP-848, share groups):
			// the connection closes as for any unknown API, with the finding.
			c.noteClientID(frame[8:])
			c.b.recordFinding(&request{conn: c, clientID: c.clientID, kreq: kmsg.RequestForKey(key)}, c.b.auditedBy[key], rules.Refused, "", "",
				func() string {
					return kmsg.NameForKey(key) + " v" + strconv.Itoa(int(version)) + ": VAST does not advertise it"
				})
		}
		return protoErr("unsupported api key %d", key)
	}
	a := c.b.apiByKey[key]
	if version < a.min || version > a.max {
		if key == int16(kmsg.ApiVersions) {
			// Kafka answers an ApiVersions it cannot parse with a v0
			// response carrying UNSUPPORTED_VERSION and its versions,
			// so the client can retry at one it knows.
			resp := c.b.apiVersionsResponse(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			if version > a.max {
				c.noteSoftware(a.max, frame[8:])
			}
			c.fetchRun = logRun{}
			c.b.reqLog.add(RequestRecord{Time: c.b.clock.Now(), Broker: c.brokerID(), API: kmsg.ApiVersions, Version: version, ClientID: c.clientID, ErrorCode: resp.ErrorCode})
			return c.write(corr, resp, false)
		}
		return c.refuseVersion(a, key, version, frame[8:])
	}
	if c.software == "" && c.inferred == "" {
		c.fingerprint(key, version)
	}
	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	body, id, err := parseRequestHeader(frame[8:], kreq.IsFlexible())
	if err != nil {
		return err
	}
	if string(id) != c.clientID { // a client sends the same id every time: no new string then
		c.clientID = string(id)
	}
	clientID := c.clientID
	if unauthenticated && !a.beforeAuth {
		return c.requireLogin(key, version, nil)
	}
	endLarge := func() {}
	if c.reclaim {
		end := c.b.startLarge(c.ctx.Done())
		if end == nil {
			return c.ctx.Err()
		}
		endLarge = sync.OnceFunc(end)
		defer endLarge() // if the request is not handled
	}
	if err := kreq.ReadFrom(body); err != nil {
		return protoErr("%s v%d: %v", kmsg.NameForKey(key), version, err)
	}
	if key == int16(kmsg.JoinGroup) || key == int16(kmsg.SyncGroup) {
		endLarge() // these wait for other members, who may be waiting for the turn
	}

	req := &request{ctx: c.ctx, b: c.b, conn: c, version: version, clientID: clientID, kreq: kreq, user: c.user}
	defer req.releaseReads()
	if id := c.b.auditedBy[key]; id != 0 && (a.hiddenBy != "" || a.hiddenByCap() || version > a.advertised) {
		group := ""
		if a.share == groupCoordinator { // a KIP-848 heartbeat: the finding names its group
			if gs := groupsOf(reflect.ValueOf(kreq).Elem()); len(gs) > 0 {
				group = gs[0]
			}
		}
		c.b.recordFinding(req, id, rules.Refused, "", group, func() string {
			return kmsg.NameForKey(key) + " v" + strconv.Itoa(int(version)) + ": VAST does not serve it"
		})
	}
	if d := c.b.latencyFor(key, c.brokerID()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return c.ctx.Err()
		}
	}
	var resp kmsg.Response
	fault := c.b.takeFault(key, kreq, c.brokerID())
	if fault != nil && !fault.DropAnswer {
		resp = c.b.applyFault(fault, a, req)
	} else {
		resp = c.b.serve(a, req)
	}
	endLarge() // handled: a slow reader of the answer does not hold the turn
	if !c.remembered {
		if sw, v := c.softwareLabel(); sw != "" {
			c.remembered = true
			c.b.clientSoftware.remember(clientID, sw, v)
		}
	}
	if fault != nil && fault.DropAnswer && req.closeAfter == "" {
		req.closeAfter = "fault injection: the answer to " + kmsg.NameForKey(key) + " was dropped"
	}
	rec := RequestRecord{
		Time: c.b.clock.Now(), Broker: c.brokerID(), API: kmsg.Key(key), Version: version, ClientID: clientID,
		ErrorCode: firstError(resp), Rule: req.rule, Finding: req.finding, Rules: strings.Join(req.rules, ","), Findings: strings.Join(req.findings, ","), Fault: fault != nil,
		User: req.user, Denied: req.denied, Closed: req.closeAfter != "",
	}
	if rec.ErrorCode != 0 || rec.Rule != "" || rec.Denied != "" {
		rec.Message = firstErrorMessage(resp)
		if rec.Message == "" {
			rec.Message = req.why
		}
		rec.Message = logMessage(refusalMessage(req.rule, key, rec.Message))
	}
	if c.b.cfg.fetchDetail && key == int16(kmsg.Fetch) {
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			rec.Fetch = fetchDetail(kreq.(*kmsg.FetchRequest), fr, func(id [16]byte) string { return c.b.topicName("", id) })
		}
	}
	run := &c.fetchRun // only an empty fetch continues a run; anything else ends it
	if !emptyFetch(resp) {
		c.fetchRun, run = logRun{}, nil
	}
	c.b.reqLog.addRun(rec, run)
	if rec.ErrorCode != 0 && rec.Rule == "" && fault == nil && !routineError(rec.ErrorCode) {
		c.b.recordError(req, key, rec.ErrorCode, func() string {
			d := kmsg.NameForKey(key) + " v" + strconv.Itoa(int(version))
			if rec.Message != "" {
				d += ": " + rec.Message
			}
			return d
		}, func() string { return errorAdvice(key, rec.ErrorCode) })
	}
	if req.rule != "" {
		c.logRefusal(&rec, req.rule, req.refusedAbout, key, version)
	} else if req.denied != "" {
		c.b.log.Info("denied", c.outcomeAttrs(&rec, "reason", req.denied, "api", kmsg.NameForKey(key), "version", version, "user", req.user)...)
	} else if c.b.log.Enabled(c.ctx, slog.LevelDebug) {
		c.b.log.Debug("request", "api", kmsg.NameForKey(key), "version", version, "client_id", clientID)
	}
	if fault != nil && fault.DropAnswer {
		return &closeError{reason: req.closeAfter}
	}
	if p, ok := kreq.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil // Kafka sends no answer at all to an acks=0 produce, faulted or not
	}
	resp.SetVersion(version)
	// ApiVersions answers with a v0 response header even when flexible,
	// so that clients can always parse it.
	flexHeader := kreq.IsFlexible() && key != int16(kmsg.ApiVersions)
	if err := c.write(corr, resp, flexHeader); err != nil {
		return err
	}
	if req.closeAfter != "" {
		return &closeError{reason: req.closeAfter}
	}
	return nil
}

// logRefusal writes the server log's line for a request rule refused,
// naming the topic (or group) it was about, at most once a minute per rule,
// topic and client on the broker's clock: a client that retries a refused
// request every second (a producer waiting for a topic VAST will never
// auto-create) gets one line a minute, with "repeats" counting the
// refusals not logged since the last line.
func (c *clientConn) logRefusal(rec *RequestRecord, rule, about string, key, version int16) {
	repeats, ok := c.b.refusalLines.allow(refusalLineKey{rule, clip(about), rec.ClientID}, c.b.clock.Now())
	if !ok {
		return
	}
	attrs := []any{"rule", rule}
	if about != "" {
		attrs = append(attrs, "topic", about)
	}
	attrs = append(attrs, "api", kmsg.NameForKey(key), "version", version)
	if repeats > 0 {
		attrs = append(attrs, "repeats", repeats)
	}
	c.b.log.Info("refused by VAST rule", c.outcomeAttrs(rec, attrs...)...)
}

// refusalLineEvery is how often the server log repeats the line of one
// rule's refusals of one topic and client.
const refusalLineEvery = time.Minute

// maxRefusalLines bounds the (rule, topic, client) keys the limiter keeps;
// when full, keys quiet for refusalLineEvery are dropped, and past that a
// new key is logged without being kept.
const maxRefusalLines = 4096

type refusalLineKey struct{ rule, about, clientID string }

type refusalLine struct {
	at         time.Time // when the last line was written
	suppressed int64     // refusals since then not logged
}

// refusalLimiter decides which refusals the server log shows. The zero
// value is ready to use.
type refusalLimiter struct {
	mu    sync.Mutex
	lines map[refusalLineKey]*refusalLine
}

// allow reports whether a refusal of k at now gets a log line, and how
// many refusals of k were not logged since k's last line.
func (l *refusalLimiter) allow(k refusalLineKey, now time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.lines[k]; e != nil {
		if now.Sub(e.at) < refusalLineEvery {
			e.suppressed++
			return 0, false
		}
		n := e.suppressed
		e.at, e.suppressed = now, 0
		return n, true
	}
	if l.lines == nil {
		l.lines = make(map[refusalLineKey]*refusalLine)
	}
	if len(l.lines) >= maxRefusalLines {
		for key, e := range l.lines {
			if now.Sub(e.at) >= refusalLineEvery {
				delete(l.lines, key)
			}
		}
		if len(l.lines) >= maxRefusalLines {
			return 0, true
		}
	}
	l.lines[k] = &refusalLine{at: now}
	return 0, true
}

// outcomeAttrs ends the attributes of a refusal's or denial's log line
// with the error the client got, its message, and who sent the request.
func (c *clientConn) outcomeAttrs(rec *RequestRecord, attrs ...any) []any {
	if e, ok := kerr.ErrorForCode(rec.ErrorCode).(*kerr.Error); ok {
		attrs = append(attrs, "error", e.Message) // the name, MESSAGE_TOO_LARGE
	}
	if rec.Message != "" {
		attrs = append(attrs, "message", rec.Message)
	}
	return append(attrs, "client_id", rec.ClientID, "remote", c.remote)
}

// refuseHidden answers a request for an API that a rule hides from
// ApiVersions (OffsetDelete under NoOffsetDelete, ConsumerGroupHeartbeat
// under ClassicGroupsOnly) as Kafka answers an API it does not serve: it
// closes the connection without answering. Unlike a malformed request, it
// is recorded in the request log with the rule (and Closed), so that
// Refusals and AssertRefused see it. hdr is the frame after the api key,
// version and correlation id.
func (c *clientConn) refuseHidden(key, version int16, hdr []byte) error {
	rule := c.b.hiddenBy[key]
	c.noteClientID(hdr)
	msg := kmsg.NameForKey(key) + " is not served by VAST, which leaves it out of ApiVersions; the connection is closed, as Kafka does for an API it does not serve"
	if id, ok := rules.Lookup(rule); ok {
		msg = id.Refusal(msg, "")
	}
	rec := RequestRecord{Time: c.b.clock.Now(), Broker: c.brokerID(), API: kmsg.Key(key), Version: version, ClientID: c.clientID,
		Message: msg, Rule: rule, User: c.user, Closed: true}
	c.fetchRun = logRun{}
	c.b.reqLog.add(rec)
	c.logRefusal(&rec, rule, "", key, version)
	return &closeError{reason: msg}
}

// refuseVersion closes the connection of a request whose version is
// outside the range the broker advertises for its API, as Kafka does (it
// cannot parse it, so it cannot answer it), after recording it in the
// request log with UNSUPPORTED_VERSION and the client id, logging it, and
// counting it among the errors answered without a rule with advice: a
// version below the range is one Kafka 4 removed (KIP-896), so the client
// predates Kafka 4, and VAST does not accept it either. hdr is the frame
// after the api key, version and correlation id.
func (c *clientConn) refuseVersion(a *api, key, version int16, hdr []byte) error {
	c.noteClientID(hdr)
	name := kmsg.NameForKey(key)
	msg := name + " v" + strconv.Itoa(int(version)) + " is outside the versions this broker serves (" +
		strconv.Itoa(int(a.min)) + "-" + strconv.Itoa(int(a.max)) + "): closing the connection, as Kafka does"
	rec := RequestRecord{Time: c.b.clock.Now(), Broker: c.brokerID(), API: kmsg.Key(key), Version: version, ClientID: c.clientID,
		ErrorCode: kerr.UnsupportedVersion.Code, Message: msg, User: c.user, Closed: true}
	c.fetchRun = logRun{}
	c.b.reqLog.add(rec)
	c.b.log.Warn("closing connection: unsupported version", c.outcomeAttrs(&rec, "api", name, "version", version)...)
	c.b.recordError(&request{conn: c, clientID: c.clientID}, key, kerr.UnsupportedVersion.Code,
		func() string { return msg }, func() string {
			if version < a.min {
				return "the client predates Kafka 4: Kafka 4 removed " + name + " v" + strconv.Itoa(int(version)) +
					" (KIP-896) and VAST does not accept it either, so the app fails on both; upgrade the client (or the tool: Burrow 1.2 sends ListOffsets v0)"
			}
			return "the client sent a version newer than this broker knows without asking ApiVersions first; let it pick versions from ApiVersions"
		})
	return &closeError{reason: msg}
}

// refusalMessage returns the request log's message for a request rule
// refused (rule empty: not refused, msg as it is): msg when it already
// names the rule and its action (rules.ID.Refusal), else msg, or the API
// refused, followed by the rule and its action.
func refusalMessage(rule string, key int16, msg string) string {
	id, ok := rules.Lookup(rule)
	if !ok || strings.Contains(msg, "(rule "+rule+")") {
		return msg
	}
	if msg == "" {
		msg = kmsg.NameForKey(key) + " refused by VAST"
	}
	return id.Refusal(msg, "")
}

// errorAdvice is the advice for an error answered without a rule, or ""
// for the error's own description.
func errorAdvice(key, code int16) string {
	switch code {
	case kerr.UnknownTopicOrPartition.Code:
		if key == int16(kmsg.Produce) || key == int16(kmsg.Fetch) || key == int16(kmsg.Metadata) || key == int16(kmsg.ListOffsets) {
			return "the topic or partition does not exist: create the topic first (VAST never creates one on first use)"
		}
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code:
		return "an identity policy denies it: grant the user the permission (GET /denials names it)"
	}
	return ""
}

// requireLogin closes a connection that sent a request other than
// ApiVersions or SASL before authenticating, as Kafka does, and records the
// denial. hdr, when not nil, is the frame after the api key, version and
// correlation id, for the client id.
func (c *clientConn) requireLogin(key, version int16, hdr []byte) error {
	if hdr != nil {
		c.noteClientID(hdr)
	}
	why := "SASL authentication required: " + kmsg.NameForKey(key) + " before SaslAuthenticate"
	c.fetchRun = logRun{}
	c.b.reqLog.add(RequestRecord{Time: c.b.clock.Now(), Broker: c.brokerID(), API: kmsg.Key(key), Version: version, ClientID: c.clientID, Denied: why, Closed: true})
	return &closeError{reason: why}
}

// noteSoftware takes the client's software name and version from an
// ApiVersions request newer than the broker knows (hdr is the frame after
// the api key, version and correlation id), reading its start as version
// known: the name and version come first in every version since v3, and a
// client that gets UNSUPPORTED_VERSION may carry on without asking again
// (kgo does). Fields that follow and do not parse are ignored.
func (c *clientConn) noteSoftware(known int16, hdr []byte) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(known)
	body, _, err := parseRequestHeader(hdr, true)
	if err != nil {
		return
	}
	_ = req.ReadFrom(body) // the fields read before an error are set
	if req.ClientSoftwareName == "" {
		return
	}
	c.software, c.softwareVersion = clip(req.ClientSoftwareName), clip(req.ClientSoftwareVersion)
}

// noteClientID takes the client id from the header of a request that is not
// parsed further (hdr is the frame after the api key, version and
// correlation id): the id comes before anything that differs by version.
func (c *clientConn) noteClientID(hdr []byte) {
	if _, id, err := parseRequestHeader(hdr, false); err == nil && string(id) != c.clientID {
		c.clientID = string(id)
	}
}

// write encodes resp with kmsg behind its response header and flushes it.
func (c *clientConn) write(corr int32, resp kmsg.Response, flexHeader bool) error {
	out := c.out[:0]
	var fb *frameBuf
	// A large answer (records, or as large as this connection's last) is
	// encoded into a buffer of the free list, given back once written, so
	// that an idle consumer's connection holds none. A first large answer
	// of another kind grows c.out on the heap and is dropped below.
	need := responseSizeHint(resp)
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
	if c.r.Size() < readBufferSize && c.r.Buffered() == 0 && c.readBytes >= readBufferSize &&
		(c.authenticated || !c.b.saslRequired()) {
		c.r = c.b.takeReader(&c.rd)
	}
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
