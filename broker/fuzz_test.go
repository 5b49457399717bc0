package broker

// Fuzz tests of frame reading and request handling. Each input is served to
// a fresh broker as one client connection's byte stream; the target fails
// if the broker logged a recovered handler panic, if the connection or the
// broker cannot be shut down within a bound, if the answers are not whole
// frames, or if a second connection does not get correct ApiVersions and
// Metadata answers afterwards. An unrecovered panic (in a timer, say)
// crashes the fuzz worker, which the fuzzer reports too.
//
// The seed corpus holds real requests from a real client (franz-go,
// recorded through a proxy while it creates a topic, produces, consumes in
// a group, commits and asks for offsets) plus a request of every key and
// version the broker serves, encoded with kmsg.
//
//	go test -run '^$' -fuzz FuzzConn -fuzztime 60s ./broker/
//	go test -run '^$' -fuzz FuzzRequest -fuzztime 60s ./broker/

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// Fuzz modes: which broker an input is served to.
const (
	modeVAST  = iota // the VAST profile
	modeKafka        // the kafka profile, without delayed fetches
	modeSASL         // the VAST profile with SASL/PLAIN users
	numModes
)

const (
	fuzzTopic = "fz" // exists in every fuzz broker
	fuzzUser  = "fuzz"
	fuzzPass  = "secret"

	// settle bounds how long an input's connection may take before the
	// checks go on without it: a JoinGroup waiting for other members
	// legitimately blocks until the broker closes.
	settle = 250 * time.Millisecond
	// bound is how long anything that must finish may take before the
	// target reports a hang.
	bound = 10 * time.Second
)

// FuzzConn serves an arbitrary byte stream, framed or not, as one
// connection.
func FuzzConn(f *testing.F) {
	for _, s := range seedStreams(f) {
		f.Add(s.mode, s.data)
	}
	f.Fuzz(func(t *testing.T, mode uint8, stream []byte) {
		serveFuzzInput(t, mode, stream)
	})
}

// FuzzRequest serves one request: the input is everything after the size
// prefix (header and body), which the target adds, so that the fuzzer
// spends its time on headers and bodies rather than framing.
func FuzzRequest(f *testing.F) {
	for _, s := range seedStreams(f) {
		if s.single {
			f.Add(s.mode, s.data[4:])
		}
	}
	f.Fuzz(func(t *testing.T, mode uint8, req []byte) {
		framed := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(req)), uint32(len(req)))
		framed = append(framed, req...)
		if mode%numModes == modeSASL {
			framed = append(saslPrefix(), framed...)
		}
		serveFuzzInput(t, mode, framed)
	})
}

// serveFuzzInput runs one input against a fresh broker and checks it.
func serveFuzzInput(t *testing.T, mode uint8, stream []byte) {
	logs := &panicLog{}
	b := newFuzzBroker(t, mode%numModes, logs)
	nc := newFeedConn(stream)
	done := serveFeed(b, nc)
	finished := false
	select {
	case <-done:
		finished = true
	case <-time.After(settle):
	}
	if finished {
		if err := wholeFrames(nc.output()); err != nil {
			t.Errorf("answers to the input: %v", err)
		}
	}
	checkHealthy(t, b, mode%numModes)
	closeWithin(t, b)
	nc.Close()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("the input's connection still runs %v after Close:\n%s", bound, goroutines())
	}
	if msgs := logs.messages(); len(msgs) > 0 {
		t.Fatalf("the broker logged a handler panic: %s", strings.Join(msgs, "; "))
	}
}

func newFuzzBroker(t testing.TB, mode uint8, logs *panicLog) *Broker {
	opts := []Option{
		WithLogger(slog.New(logs)),
		WithTopics(TopicSpec{Name: fuzzTopic, Partitions: 3}),
	}
	switch mode {
	case modeKafka:
		r := rules.Kafka()
		r.NoDelayedFetch = true // a delayed fetch only costs fuzzing time
		opts = append(opts, WithRules(r))
	case modeSASL:
		opts = append(opts, WithUsers(map[string]string{fuzzUser: fuzzPass}))
	}
	b, err := New(opts...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	return b
}

// closeWithin closes b and fails if Close does not return within bound.
func closeWithin(t *testing.T, b *Broker) {
	t.Helper()
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(bound):
		t.Fatalf("Close did not return within %v:\n%s", bound, goroutines())
	}
}

func goroutines() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	return buf.String()
}

// serveFeed serves nc as a client connection of b, as the accept loop
// would, and returns a channel closed when the connection is done.
func serveFeed(b *Broker, nc net.Conn) <-chan struct{} {
	c := newClientConn(b, b.nodes[0], nc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.serve()
	}()
	return done
}

// checkHealthy asks b, on a new connection, for ApiVersions and Metadata
// and checks the answers.
func checkHealthy(t *testing.T, b *Broker, mode uint8) {
	t.Helper()
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("health"))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "health", "1"
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	var in []byte
	if mode == modeSASL {
		in = saslPrefix()
	}
	in = append(in, fm.AppendRequest(nil, av, 101)...)
	in = append(in, fm.AppendRequest(nil, md, 102)...)
	nc := newFeedConn(in)
	select {
	case <-serveFeed(b, nc):
	case <-time.After(bound):
		t.Fatalf("a second connection was not answered within %v:\n%s", bound, goroutines())
	}
	out := nc.output()
	frames, err := splitFrames(out)
	if err != nil {
		t.Fatalf("health answers: %v", err)
	}
	if mode == modeSASL {
		if len(frames) < 2 {
			t.Fatalf("health: %d answers, want the SASL handshake and authentication first", len(frames))
		}
		frames = frames[2:]
	}
	if len(frames) != 2 {
		t.Fatalf("health: %d answers, want 2", len(frames))
	}
	for i, fr := range frames {
		if len(fr) < 4 || int32(binary.BigEndian.Uint32(fr)) != int32(101+i) {
			t.Fatalf("health answer %d: wrong correlation id in % x", i, fr[:min(len(fr), 8)])
		}
	}
	avResp := kmsg.NewPtrApiVersionsResponse()
	avResp.SetVersion(3)
	if err := avResp.ReadFrom(frames[0][4:]); err != nil {
		t.Fatalf("health: ApiVersions answer: %v", err)
	}
	if avResp.ErrorCode != 0 || len(avResp.ApiKeys) != len(b.apis) {
		t.Fatalf("health: ApiVersions answered error %d with %d keys, want 0 and %d", avResp.ErrorCode, len(avResp.ApiKeys), len(b.apis))
	}
	mdResp := kmsg.NewPtrMetadataResponse()
	mdResp.SetVersion(12)
	if len(frames[1]) < 5 {
		t.Fatalf("health: Metadata answer too short")
	}
	if err := mdResp.ReadFrom(frames[1][5:]); err != nil { // correlation id, header tags
		t.Fatalf("health: Metadata answer: %v", err)
	}
	if host, port := b.nodes[0].advertisedHostPort(); len(mdResp.Brokers) != 1 || mdResp.Brokers[0].Port != port || mdResp.Brokers[0].Host != host {
		t.Fatalf("health: Metadata brokers %+v, want this broker only", mdResp.Brokers)
	}
}

// saslPrefix is a SASL/PLAIN handshake and authentication as the fuzz user.
func saslPrefix() []byte {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("health"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + fuzzUser + "\x00" + fuzzPass)
	// AppendRequest writes the size at dst[0:4], so each request is
	// formatted on its own.
	return append(fm.AppendRequest(nil, hs, 91), fm.AppendRequest(nil, auth, 92)...)
}

// splitFrames splits size-prefixed frames and fails unless they add up to
// exactly b.
func splitFrames(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return out, fmt.Errorf("%d bytes after the last whole frame", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		if n < 4 || n > len(b)-4 {
			return out, fmt.Errorf("frame of size %d with %d bytes left", n, len(b)-4)
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out, nil
}

func wholeFrames(b []byte) error {
	_, err := splitFrames(b)
	return err
}

// panicLog is a slog handler that keeps the messages about panics.
type panicLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *panicLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (l *panicLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "panic") {
		return nil
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	l.mu.Lock()
	l.msgs = append(l.msgs, msg)
	l.mu.Unlock()
	return nil
}

func (l *panicLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *panicLog) WithGroup(string) slog.Handler      { return l }

func (l *panicLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// feedConn is a client connection whose client sends a fixed byte stream
// and then closes its side; it keeps whatever the broker writes.
type feedConn struct {
	in     *bytes.Reader
	closed atomic.Bool
	mu     sync.Mutex
	out    []byte
}

func newFeedConn(in []byte) *feedConn { return &feedConn{in: bytes.NewReader(in)} }

func (c *feedConn) Read(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return c.in.Read(p)
}

func (c *feedConn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, p...)
	return len(p), nil
}

func (c *feedConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out
}

func (c *feedConn) Close() error        { c.closed.Store(true); return nil }
func (c *feedConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092} }
func (c *feedConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *feedConn) SetDeadline(time.Time) error      { return nil }
func (c *feedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *feedConn) SetWriteDeadline(time.Time) error { return nil }

// ---- the seed corpus ----

type seed struct {
	mode   uint8
	data   []byte
	single bool // exactly one frame
}

var (
	seedsOnce sync.Once
	seeds     []seed
	seedsErr  error
)

// seedStreams returns the seed corpus: what franz-go sent on each of its
// connections (whole, and frame by frame), every key and version the broker
// serves encoded with kmsg, and some plain garbage.
func seedStreams(f *testing.F) []seed {
	f.Helper()
	seedsOnce.Do(func() { seeds, seedsErr = buildSeeds() })
	if seedsErr != nil {
		f.Fatalf("build the seed corpus: %v", seedsErr)
	}
	return seeds
}

func buildSeeds() ([]seed, error) {
	streams, err := recordClient()
	if err != nil {
		return nil, err
	}
	var out []seed
	for _, s := range streams {
		out = append(out,
			seed{mode: modeVAST, data: s},
			seed{mode: modeKafka, data: s},
			seed{mode: modeSASL, data: append(saslPrefix(), s...)})
		frames, _ := splitFrames(s) // the last frame may be cut short by closing
		for _, fr := range frames {
			framed := binary.BigEndian.AppendUint32(nil, uint32(len(fr)))
			out = append(out, seed{mode: modeVAST, data: append(framed, fr...), single: true})
		}
	}
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kmsg"))
	corr := int32(1)
	for _, a := range apiTable {
		for v := a.min - 1; v <= a.max+1; v++ {
			req := kmsg.RequestForKey(a.key)
			if v < 0 || v > req.MaxVersion() {
				continue
			}
			req.SetVersion(v)
			fillRequest(req)
			mode := uint8(modeVAST)
			if v > a.max-1 {
				mode = modeKafka // versions VAST caps (topic ids)
			}
			out = append(out, seed{mode: mode, data: fm.AppendRequest(nil, req, corr), single: true})
			corr++
		}
	}
	for _, garbage := range [][]byte{
		nil,
		{0, 0, 0},
		{0xff, 0xff, 0xff, 0xfb},
		{0x06, 0x40, 0x00, 0x01, 0, 18, 0, 3},
		{0, 0, 0, 8, 0, 18, 0, 9, 0, 0, 0, 1},
		{0, 0, 0, 10, 0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
	} {
		out = append(out, seed{mode: modeVAST, data: garbage})
	}
	return out, nil
}

// fillRequest names the fuzz topic, a partition and a group in req where
// its type has room for them, so that the encoded seeds reach past "unknown
// topic".
func fillRequest(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(fuzzTopic)
		r.Topics = append(r.Topics, t)
	case *kmsg.FetchRequest:
		t := kmsg.NewFetchRequestTopic()
		t.Topic = fuzzTopic
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 20
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		r.MaxBytes = 1 << 20
	case *kmsg.ListOffsetsRequest:
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = fuzzTopic
		t.Partitions = append(t.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.OffsetCommitRequest:
		r.Group = "g"
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = fuzzTopic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	case *kmsg.OffsetFetchRequest:
		r.Group = "g"
	case *kmsg.FindCoordinatorRequest:
		r.CoordinatorKey = "g"
		r.CoordinatorKeys = []string{"g"}
	case *kmsg.JoinGroupRequest:
		r.Group, r.ProtocolType = "g", "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 6000, 6000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		r.Protocols = append(r.Protocols, p)
	case *kmsg.CreateTopicsRequest:
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "created", 2, 1
		r.Topics = append(r.Topics, t)
	case *kmsg.DeleteTopicsRequest:
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(fuzzTopic)
		r.Topics = append(r.Topics, t)
		r.TopicNames = []string{fuzzTopic}
	case *kmsg.DescribeConfigsRequest:
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, fuzzTopic
		r.Resources = append(r.Resources, res)
	case *kmsg.DeleteRecordsRequest:
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = fuzzTopic
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	case *kmsg.DescribeGroupsRequest:
		r.Groups = []string{"g"}
	case *kmsg.DeleteGroupsRequest:
		r.Groups = []string{"g"}
	case *kmsg.SASLHandshakeRequest:
		r.Mechanism = "PLAIN"
	case *kmsg.SASLAuthenticateRequest:
		r.SASLAuthBytes = []byte("\x00" + fuzzUser + "\x00" + fuzzPass)
	}
}

// recordClient runs a franz-go client through a recording proxy in front of
// a broker and returns, per connection, the bytes the client sent.
func recordClient() ([][]byte, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b, err := New(WithTopics(TopicSpec{Name: fuzzTopic, Partitions: 3}), WithAdvertise(ln.Addr().String()))
	if err != nil {
		ln.Close()
		return nil, err
	}
	defer b.Close()
	p := startProxy(ln, b.Addr())
	defer p.close()
	if err := runClient(ln.Addr().String(), p); err != nil {
		return nil, err
	}
	p.close()
	return p.streams(), nil
}

// runClient creates a topic, produces, consumes in a group with a commit and
// a heartbeat, and asks for offsets and group descriptions.
func runClient(addr string, p *recordingProxy) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID("fuzz-seed"),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.Balancers(kgo.RangeBalancer(), kgo.RoundRobinBalancer()),
		kgo.HeartbeatInterval(20 * time.Millisecond),
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")}, "fz-created"); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{
			Topic:   fuzzTopic,
			Key:     []byte(fmt.Sprintf("k%d", i)),
			Value:   []byte(fmt.Sprintf("value %d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cons, err := kgo.NewClient(append(opts,
		kgo.ConsumerGroup("fuzz-group"),
		kgo.ConsumeTopics(fuzzTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())...)
	if err != nil {
		return err
	}
	defer cons.Close()
	for got := 0; got < len(recs); {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("consume: %d of %d records", got, len(recs))
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for !p.sent(kmsg.Heartbeat) {
		if ctx.Err() != nil {
			return fmt.Errorf("no heartbeat recorded")
		}
		time.Sleep(5 * time.Millisecond) // polling for the client's next heartbeat
	}
	cons.Close() // LeaveGroup
	if _, err := adm.ListEndOffsets(ctx, fuzzTopic); err != nil {
		return err
	}
	if _, err := adm.FetchOffsets(ctx, "fuzz-group"); err != nil {
		return err
	}
	if _, err := adm.DescribeGroups(ctx, "fuzz-group"); err != nil {
		return err
	}
	if _, err := adm.DescribeTopicConfigs(ctx, fuzzTopic); err != nil {
		return err
	}
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.CreateTopics, kmsg.Produce, kmsg.Fetch,
		kmsg.ListOffsets, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.OffsetFetch} {
		if !p.sent(k) {
			return fmt.Errorf("the client sent no %s request", kmsg.NameForKey(int16(k)))
		}
	}
	return nil
}

// recordingProxy forwards connections to a broker and records what each
// client sends.
type recordingProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	once   sync.Once

	mu     sync.Mutex
	closed bool
	conns  []net.Conn
	bufs   []*bytes.Buffer
}

func startProxy(ln net.Listener, target string) *recordingProxy {
	p := &recordingProxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			buf := &bytes.Buffer{}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.bufs = append(p.bufs, buf)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(c, up)
				c.Close()
			}()
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(up, io.TeeReader(c, lockedWriter{&p.mu, buf}))
				up.Close()
			}()
		}
	}()
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// sent reports whether a client has sent a request of key k (as far as
// whole frames have arrived).
func (p *recordingProxy) sent(k kmsg.Key) bool {
	for _, s := range p.streams() {
		for len(s) >= 6 {
			n := int(binary.BigEndian.Uint32(s))
			if n > len(s)-4 {
				break
			}
			if int16(binary.BigEndian.Uint16(s[4:])) == int16(k) {
				return true
			}
			s = s[4+n:]
		}
	}
	return false
}

func (p *recordingProxy) streams() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]byte
	for _, b := range p.bufs {
		if b.Len() > 0 {
			out = append(out, bytes.Clone(b.Bytes()))
		}
	}
	return out
}

func (p *recordingProxy) close() {
	p.once.Do(func() {
		p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}
