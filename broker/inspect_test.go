package broker

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/internal/testutil"
	"github.com/vastfake/vastfake/rules"
)

func TestRequestLogKeepsTheLastRequestsInOrder(t *testing.T) {
	t.Parallel()
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	total := maxRequestLog + 2*requestLogBlock + 7
	for i := range total {
		b.reqLog.add(RequestRecord{Version: int16(i % 30000), ClientID: "c"})
	}
	got := b.Requests()
	require.Len(t, got, maxRequestLog)
	for i, r := range got {
		if want := int16((total - maxRequestLog + i) % 30000); r.Version != want {
			t.Fatalf("record %d has version %d, want %d", i, r.Version, want)
		}
	}

	b.ResetRequests()
	assert.Empty(t, b.Requests())
	b.reqLog.add(RequestRecord{Version: 1})
	assert.Len(t, b.Requests(), 1)
}

// TestRefusalsOutliveAFloodOfFetches: 200,000 ordinary requests after a
// refusal (an idle VAST consumer sends that many empty fetches in seconds)
// leave the refusal in the log, in its place at the start.
func TestRefusalsOutliveAFloodOfFetches(t *testing.T) {
	t.Parallel()
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	b.reqLog.add(RequestRecord{API: kmsg.JoinGroup, Rule: "EagerAssignorsOnly", ErrorCode: kerr.InconsistentGroupProtocol.Code})
	for i := range 200_000 {
		b.reqLog.add(RequestRecord{API: kmsg.Fetch, Version: int16(i % 30000), ClientID: "idle"})
	}
	var refused []RequestRecord
	for _, r := range b.Requests() {
		if r.Rule != "" {
			refused = append(refused, r)
		}
	}
	require.Len(t, refused, 1, "Requests still holds the refusal")
	assert.Equal(t, "EagerAssignorsOnly", refused[0].Rule)
	assert.Equal(t, "EagerAssignorsOnly", b.Requests()[0].Rule, "oldest first")
	require.Len(t, b.Refusals(), 1)
	assert.Equal(t, kmsg.JoinGroup, b.Refusals()[0].API)
	assert.Len(t, b.Requests(), maxRequestLog+1)
}

// TestNotableRecordsMergeInOrder: refusals, denials, faults and closed
// connections are stored apart from ordinary requests, bounded on their
// own, and Requests merges both in answer order.
func TestNotableRecordsMergeInOrder(t *testing.T) {
	t.Parallel()
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	const total = maxNotableLog + 5000
	for i := range total {
		r := RequestRecord{Version: int16(i)}
		switch i % 4 {
		case 0:
			r.Rule = "NoCompression"
		case 1:
			r.Denied = "default deny"
		case 2:
			r.Fault = true
		}
		b.reqLog.add(r)
	}
	got := b.Requests()
	var notable, refusals, denials int
	for i, r := range got {
		if i > 0 && r.Version <= got[i-1].Version {
			t.Fatalf("record %d (version %d) comes after version %d", i, r.Version, got[i-1].Version)
		}
		if r.notable() {
			notable++
		}
		if r.Rule != "" {
			refusals++
		}
		if r.Denied != "" {
			denials++
		}
	}
	assert.Equal(t, maxNotableLog, notable, "the oldest notable records went first")
	assert.Equal(t, total/4, len(got)-notable, "no ordinary record was dropped")
	assert.Equal(t, refusals, len(b.Refusals()))
	assert.Equal(t, denials, len(b.Denials()))
	for _, r := range b.Refusals() {
		assert.Equal(t, "NoCompression", r.Rule)
	}
}

// wire is a raw connection to a broker that sends requests encoded with
// kmsg and reads whole answers.
type wire struct {
	t  *testing.T
	nc net.Conn
	f  *kmsg.RequestFormatter
}

func dialWire(t *testing.T, b *Broker, clientID string) *wire {
	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	return &wire{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// send writes req and reads its answer into a response of req's kind; it
// returns io.EOF when the broker closed the connection instead.
func (w *wire) send(req kmsg.Request) (kmsg.Response, error) {
	if _, err := w.nc.Write(w.f.AppendRequest(nil, req, 1)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(w.nc, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(w.nc, frame); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := frame[4:] // correlation id
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		body = body[1:] // no tagged fields in the response header
	}
	require.NoError(w.t, resp.ReadFrom(body))
	return resp, nil
}

// TestHiddenAPIsAreRefusedWithTheirRule: an API a rule keeps out of
// ApiVersions closes the connection, as Kafka does for an API it does not
// serve, and the request log and the log line name the rule.
func TestHiddenAPIsAreRefusedWithTheirRule(t *testing.T) {
	t.Parallel()
	var logs testutil.LockedBuffer
	b, err := New(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	defer b.Close()
	for _, c := range []struct {
		req  kmsg.Request
		rule string
	}{
		{kmsg.NewPtrConsumerGroupHeartbeatRequest(), "ClassicGroupsOnly"},
		{kmsg.NewPtrShareFetchRequest(), "NoShareGroups"},
		{kmsg.NewPtrOffsetDeleteRequest(), "NoOffsetDelete"},
		{kmsg.NewPtrCreatePartitionsRequest(), "FixedPartitions"},
		{kmsg.NewPtrInitProducerIDRequest(), "NoIdempotence"},
		{kmsg.NewPtrEndTxnRequest(), "NoIdempotence"},
	} {
		name := kmsg.NameForKey(c.req.Key())
		w := dialWire(t, b, "hidden-"+name)
		c.req.SetVersion(c.req.MaxVersion())
		_, err := w.send(c.req)
		require.ErrorIs(t, err, io.EOF, "%s: the broker closes the connection", name)

		var rec *RequestRecord
		for _, r := range b.Refusals() {
			if r.API == kmsg.Key(c.req.Key()) {
				rec = &r
			}
		}
		require.NotNil(t, rec, "%s is in Refusals", name)
		assert.Equal(t, c.rule, rec.Rule, name)
		assert.True(t, rec.Closed, name)
		assert.Equal(t, "hidden-"+name, rec.ClientID, name)
		assert.Equal(t, c.req.MaxVersion(), rec.Version, name)
		assert.Contains(t, rec.Message, c.rule, name)
		assert.Contains(t, logs.String(), `msg="refused by VAST rule" rule=`+c.rule+` api=`+name)
	}

	// The kafka profile serves OffsetDelete; vastfake serves no share-group
	// API in any profile, so ShareFetch closes the connection there too,
	// but no VAST rule is to blame.
	kb, err := New(WithRules(rules.Kafka()))
	require.NoError(t, err)
	defer kb.Close()
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	resp, err := dialWire(t, kb, "k").send(od)
	require.NoError(t, err)
	assert.Equal(t, kerr.GroupIDNotFound.Code, resp.(*kmsg.OffsetDeleteResponse).ErrorCode)
	_, err = dialWire(t, kb, "k").send(kmsg.NewPtrShareFetchRequest())
	require.ErrorIs(t, err, io.EOF)
	assert.Empty(t, kb.Refusals())

	// Before a SASL login a hidden API is a missing login, not a rule
	// refusal: a client that never logged in trips no VAST rule.
	sb, err := New(WithUsers(map[string]string{"u": "p"}))
	require.NoError(t, err)
	defer sb.Close()
	_, err = dialWire(t, sb, "anon").send(kmsg.NewPtrOffsetDeleteRequest())
	require.ErrorIs(t, err, io.EOF)
	assert.Empty(t, sb.Refusals())
	require.Len(t, sb.Denials(), 1)
	assert.Contains(t, sb.Denials()[0].Denied, "SASL authentication required")
	assert.Equal(t, "anon", sb.Denials()[0].ClientID)
}

// TestRefusalMessageIsLogged: the record and the log line of a refusal
// carry the message the client got.
func TestRefusalMessageIsLogged(t *testing.T) {
	t.Parallel()
	var logs testutil.LockedBuffer
	b, err := New(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = benchBatch(11_000) // over 1 MiB
	rt.Partitions = append(rt.Partitions, rp)
	produce.Topics = append(produce.Topics, rt)
	resp, err := dialWire(t, b, "big").send(produce)
	require.NoError(t, err)
	require.Equal(t, kerr.MessageTooLarge.Code, resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)

	refusals := b.Refusals()
	require.Len(t, refusals, 1)
	assert.Equal(t, "MaxMessageBytes", refusals[0].Rule)
	assert.Contains(t, refusals[0].Message, "over VAST's 1048576-byte limit (rule MaxMessageBytes): keep record batches at most 1 MB")
	line := logs.String()
	assert.Contains(t, line, `msg="refused by VAST rule" rule=MaxMessageBytes topic=t api=Produce version=9 error=MESSAGE_TOO_LARGE message="record batch of `)
	assert.Contains(t, line, "client_id=big")
}

func TestLogMessageIsCut(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", logMessage("short"))
	long := strings.Repeat("é", maxLoggedMessage) // two bytes each
	cut := logMessage(long)
	assert.LessOrEqual(t, len(cut), maxLoggedMessage+len("…"))
	assert.True(t, strings.HasSuffix(cut, "é…"), "cut on a character boundary")
}

// TestEmptyFetchesCollapse: consecutive empty fetches on one connection
// with the same outcome are one record with a count and the time of the
// last; another request on the connection ends the run, and two idle
// consumers keep a record each however their fetches interleave.
func TestEmptyFetchesCollapse(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	// Answered at once, as with -empty-fetch-delay 0: the spin at its worst.
	b, err := New(WithClock(clk), WithTopics(TopicSpec{Name: "bench", Partitions: 3}), WithEmptyFetchDelay(0))
	require.NoError(t, err)
	defer b.Close()
	fetch := func(w *wire) {
		t.Helper()
		resp, err := w.send(emptyFetchRequest("bench", 3))
		require.NoError(t, err)
		require.Zero(t, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
	}
	a := dialWire(t, b, "idle-a")
	incremental := kmsg.NewPtrFetchRequest()
	incremental.SetVersion(12)
	incremental.SessionID, incremental.SessionEpoch = 7, 1
	_, err = a.send(incremental) // refused: NoFetchSessions
	require.NoError(t, err)
	const n = 500
	for range n - 1 {
		fetch(a)
	}
	clk.Advance(time.Second)
	fetch(a)
	_, err = a.send(kmsg.NewPtrMetadataRequest())
	require.NoError(t, err)
	c := dialWire(t, b, "idle-c")
	for range n {
		fetch(a)
		fetch(c)
	}

	var fetches []RequestRecord
	var apis []kmsg.Key
	for _, r := range b.Requests() {
		apis = append(apis, r.API)
		if r.API == kmsg.Fetch && r.Rule == "" {
			fetches = append(fetches, r)
		}
	}
	assert.Equal(t, []kmsg.Key{kmsg.Fetch, kmsg.Fetch, kmsg.Metadata, kmsg.Fetch, kmsg.Fetch}, apis)
	require.Len(t, fetches, 3)
	assert.Equal(t, "idle-a", fetches[0].ClientID)
	assert.Equal(t, n-1, fetches[0].Repeats, "one record for the first run")
	assert.Equal(t, clk.Now(), fetches[0].Time, "the time of the last fetch of the run")
	assert.Equal(t, n-1, fetches[1].Repeats)
	assert.Equal(t, n-1, fetches[2].Repeats)
	assert.ElementsMatch(t, []string{"idle-a", "idle-c"}, []string{fetches[1].ClientID, fetches[2].ClientID})
	require.Len(t, b.Refusals(), 1)
	assert.Equal(t, "NoFetchSessions", b.Refusals()[0].Rule)
}

// TestEachRequestPagesThroughTheLog: EachRequest, which copies the log a
// page at a time, lists exactly what Requests copies whole, in the same
// order, for a log that wrapped, holds notable records among ordinary ones
// and collapsed runs of empty fetches; with a filter and with newest N it
// lists the matching records of Requests, the newest N of them.
func TestEachRequestPagesThroughTheLog(t *testing.T) {
	t.Parallel()
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	var run logRun
	for i := range maxRequestLog + 3*requestScan + 11 {
		switch {
		case i%97 == 0:
			b.reqLog.add(RequestRecord{API: kmsg.JoinGroup, Version: int16(i % 30000), Rule: "MaxGroups"})
		case i%13 == 0:
			b.reqLog.addRun(RequestRecord{API: kmsg.Fetch, ClientID: "idle"}, &run)
		default:
			b.reqLog.add(RequestRecord{API: kmsg.Produce, Version: int16(i % 30000)})
		}
	}
	each := func(keep func(*RequestRecord) bool, newest int) []RequestRecord {
		var out []RequestRecord
		b.EachRequest(keep, newest, func(r RequestRecord) bool { out = append(out, r); return true })
		return out
	}
	all := func(*RequestRecord) bool { return true }
	refused := func(r *RequestRecord) bool { return r.Rule != "" }
	want := b.Requests()
	require.Equal(t, want, each(all, 0))
	require.Equal(t, want[len(want)-5000:], each(all, 5000))
	require.Equal(t, want, each(all, len(want)+1))
	var wantRefused []RequestRecord
	for _, r := range want {
		if refused(&r) {
			wantRefused = append(wantRefused, r)
		}
	}
	require.Equal(t, wantRefused, each(refused, 0))
	require.Equal(t, wantRefused[len(wantRefused)-3:], each(refused, 3))

	n := 0
	b.EachRequest(all, 0, func(RequestRecord) bool { n++; return n < 10 })
	assert.Equal(t, 10, n, "fn returning false stops the walk")

	b.ResetRequests()
	assert.Empty(t, each(all, 0))
	assert.Empty(t, each(all, 3))
}
