package broker

// The request log: a record of every request the broker answered (or
// closed the connection on), with the rule that refused it, the finding it
// caused or the policy that denied it; the bounded stores that keep them
// and the cursors that read them; and the server log's lines for refusals,
// limited to one a minute per rule, topic and client.

import (
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// RequestRecord is one entry of the request log. The raw SASL token that
// follows a v0 SaslHandshake, which is not a Kafka request, is logged as
// SaslAuthenticate with Version -1. ClientID, User and Denied keep at most
// 256 bytes of what the client sent, then "…(N bytes)".
type RequestRecord struct {
	// Time is when the broker answered, on its clock; for a collapsed
	// run of empty fetches (Repeats > 0), when it answered the last.
	Time     time.Time
	API      kmsg.Key
	Version  int16
	ClientID string
	// Broker is the id of the broker that served the request: the one
	// whose address the connection came in on (WithBrokers).
	Broker int32
	// ErrorCode is the first non-zero error code in the answer, or 0.
	ErrorCode int16
	// Message is the explanation that came with the error: the first
	// non-empty ErrorMessage in the answer (set whatever the version, so
	// also for clients too old to receive it), or, for a request the
	// broker closed the connection on instead of answering, why. It is
	// cut to 512 bytes.
	Message string
	// Rule names the VAST rule (a rules.Rules field) that refused the
	// request or part of it, or is empty.
	Rule string
	// Finding names the audited VAST rule (a rules.Rules field) of the
	// first finding the request caused, or is empty: the request was
	// answered as Kafka answers it, and Findings says how VAST's answer
	// would have differed.
	Finding string
	// Rules and Findings list every rule that refused part of the
	// request, and every audited rule it broke, comma-separated, first
	// one first, when there was more than one; empty when there was one
	// or none (Rule and Finding name it).
	Rules, Findings string
	// Fault is set when an injected fault answered the request.
	Fault bool
	// User is the SASL user the connection authenticated as, or empty
	// (no users configured, or not yet authenticated). For
	// SaslAuthenticate it is the user the client named.
	User string
	// Denied says why an identity policy denied the request or part of it
	// ("policy \"deny alice KafkaRead vast:kafka:topic:vastfake:orders\"
	// denies alice KafkaRead on vast:kafka:topic:vastfake:orders"), or why
	// authentication failed or was missing; empty otherwise. A topic or
	// group hidden from a listing (Metadata, ListGroups, OffsetFetch) is
	// recorded here too, with no error code.
	Denied string
	// Closed is set when the broker closed the connection after (or
	// instead of) answering: failed or missing authentication, or an API
	// that a rule hides (Rule names it).
	Closed bool
	// Repeats counts the further answers this record stands for. An idle
	// consumer in the VAST profile (NoDelayedFetch) fetches again as soon
	// as it is answered, 50 times a second with the default empty fetch
	// delay and in a tight loop without one; consecutive empty Fetch
	// answers on one connection with the
	// same outcome (version, client id, user, error) are collapsed into
	// one record, which moves to the end of the log with each repeat. 0
	// for a single answer.
	Repeats int
	// Fetch is, for a Fetch when the broker keeps fetch detail
	// (WithFetchDetail), what each partition returned; nil otherwise.
	Fetch *FetchDetail
}

// FetchDetail is what the partitions of one Fetch answer returned: at most
// maxFetchDetail (64) of them, in the order of the answer, and how many
// more there were.
type FetchDetail struct {
	Partitions []FetchPartition
	Omitted    int
}

// FetchPartition is what one partition of a Fetch returned, as the request
// log keeps it with WithFetchDetail.
type FetchPartition struct {
	Topic     string
	Partition int32
	// FetchOffset is the offset the client asked to read from; Records
	// and Bytes what the answer carried (records in the batches returned,
	// control records and records before the fetch offset in the first
	// batch included, as on the wire); HighWatermark the partition's, -1
	// with an error.
	FetchOffset   int64
	Records       int32
	Bytes         int32
	HighWatermark int64
	ErrorCode     int16
}

// maxFetchDetail bounds the partitions a request log record keeps.
const maxFetchDetail = 64

// fetchDetail returns what each partition of a Fetch answer returned.
func fetchDetail(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, name func([16]byte) string) *FetchDetail {
	n := 0
	for i := range resp.Topics {
		n += len(resp.Topics[i].Partitions)
	}
	out := make([]FetchPartition, 0, min(n, maxFetchDetail))
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		topic := rt.Topic
		if topic == "" && rt.TopicID != [16]byte{} {
			topic = name(rt.TopicID)
		}
		for j := range rt.Partitions {
			if len(out) == maxFetchDetail {
				return &FetchDetail{Partitions: out, Omitted: n - maxFetchDetail}
			}
			sp := &rt.Partitions[j]
			fp := FetchPartition{Topic: clip(topic), Partition: sp.Partition, FetchOffset: -1, Bytes: int32(len(sp.RecordBatches)),
				HighWatermark: sp.HighWatermark, ErrorCode: sp.ErrorCode}
			log.EachBatch(sp.RecordBatches, func(b log.Batch) bool {
				fp.Records += b.NumRecords()
				return true
			})
			fp.FetchOffset = requestedOffset(req, rt.Topic, rt.TopicID, sp.Partition)
			out = append(out, fp)
		}
	}
	return &FetchDetail{Partitions: out}
}

// requestedOffset is the fetch offset req asked for a partition, or -1.
func requestedOffset(req *kmsg.FetchRequest, topic string, id [16]byte, partition int32) int64 {
	for i := range req.Topics {
		t := &req.Topics[i]
		if t.Topic != topic || t.TopicID != id {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == partition {
				return t.Partitions[j].FetchOffset
			}
		}
	}
	return -1
}

// notable reports whether r goes to the store of refusals, denials,
// faults and closed connections, which ordinary requests cannot evict.
func (r *RequestRecord) notable() bool {
	return r.Rule != "" || r.Denied != "" || r.Fault || r.Closed
}

// sameOutcome reports whether b repeats a: the same record but for its time
// and count.
func sameOutcome(a, b *RequestRecord) bool {
	x, y := *a, *b
	x.Time, x.Repeats = y.Time, y.Repeats
	x.Fetch, y.Fetch = nil, nil
	if x != y {
		return false
	}
	switch {
	case a.Fetch == nil || b.Fetch == nil:
		return a.Fetch == b.Fetch
	}
	return a.Fetch.Omitted == b.Fetch.Omitted && slices.Equal(a.Fetch.Partitions, b.Fetch.Partitions)
}

// maxRequestLog bounds the ordinary records of the request log (a
// collapsed run of empty fetches counts once); the oldest go first.
const maxRequestLog = 100_000

// maxNotableLog bounds the notable records of the request log: those with
// a Rule, Denied, Fault or Closed. They are kept apart from the ordinary
// ones, so that no flood of fetches can evict a refusal; the oldest of
// them go first.
const maxNotableLog = 10_000

// maxLoggedMessage bounds RequestRecord.Message: an error message can
// quote a client's topic or user name, which may be of any length.
const maxLoggedMessage = 512

// requestLogBlock is how many slots the log allocates at a time. Records
// live in fixed blocks rather than one growing slice, so that adding one
// never copies the whole log while every connection waits on the lock.
const requestLogBlock = 1024

// requestLog is the broker's record of the requests it answered: ordinary
// records in a list of at most maxRequestLog, and notable ones in a ring of
// at most maxNotableLog. Every record carries a sequence number given when
// it was added (or, for a collapsed run, last repeated), and each store is
// in sequence order, so merging the two gives the log in answer order.
type requestLog struct {
	mu  sync.Mutex
	seq uint64 // the last sequence number given; never reset, so a stale logRun never matches

	// The ordinary records: a doubly linked list, oldest first, threaded
	// through slots allocated in blocks. Once the list is full the oldest
	// slot is reused for the newest record, and a repeated empty fetch
	// moves its record to the back, so neither copies nor allocates.
	blocks     [][]logSlot
	used       int32 // slots handed out so far
	head, tail int32 // valid while n > 0
	n          int

	notable []logSlot // a ring, oldest at nstart once full; prev and next unused
	nstart  int
}

type logSlot struct {
	rec        RequestRecord
	seq        uint64
	prev, next int32 // -1 at either end
}

// logRun is a connection's handle on its last record while that is an
// empty fetch, so that the next identical one is folded into it. The zero
// value holds nothing.
type logRun struct {
	slot int32
	seq  uint64
}

func (l *requestLog) slot(i int32) *logSlot {
	return &l.blocks[i/requestLogBlock][i%requestLogBlock]
}

// add records r.
func (l *requestLog) add(r RequestRecord) { l.addRun(r, nil) }

// addRun records r. With run, r is an empty fetch: it is folded into the
// record run holds when that record is still in the log and has the same
// outcome, and run then holds r's record. A notable r is never folded and
// clears run.
func (l *requestLog) addRun(r RequestRecord, run *logRun) {
	r.ClientID, r.User, r.Denied = clip(r.ClientID), clip(r.User), clip(r.Denied) // client input, kept short
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	if r.notable() {
		if run != nil {
			*run = logRun{}
		}
		rec := logSlot{rec: r, seq: l.seq}
		if len(l.notable) < maxNotableLog {
			l.notable = append(l.notable, rec)
			return
		}
		l.notable[l.nstart] = rec
		l.nstart = (l.nstart + 1) % maxNotableLog
		return
	}
	if run != nil && run.seq != 0 && run.slot < l.used {
		if s := l.slot(run.slot); s.seq == run.seq && sameOutcome(&s.rec, &r) {
			s.rec.Repeats++
			s.rec.Time = r.Time
			s.seq = l.seq
			l.unlink(run.slot)
			l.linkBack(run.slot)
			run.seq = l.seq
			return
		}
	}
	var i int32
	switch {
	case l.n == maxRequestLog:
		i = l.head
		l.unlink(i)
	default:
		if l.used%requestLogBlock == 0 {
			l.blocks = append(l.blocks, make([]logSlot, requestLogBlock))
		}
		i = l.used
		l.used++
	}
	*l.slot(i) = logSlot{rec: r, seq: l.seq}
	l.linkBack(i)
	if run != nil {
		*run = logRun{slot: i, seq: l.seq}
	}
}

func (l *requestLog) unlink(i int32) {
	s := l.slot(i)
	if s.prev >= 0 {
		l.slot(s.prev).next = s.next
	} else {
		l.head = s.next
	}
	if s.next >= 0 {
		l.slot(s.next).prev = s.prev
	} else {
		l.tail = s.prev
	}
	l.n--
}

func (l *requestLog) linkBack(i int32) {
	s := l.slot(i)
	s.next = -1
	if l.n == 0 {
		s.prev = -1
		l.head = i
	} else {
		s.prev = l.tail
		l.slot(l.tail).next = i
	}
	l.tail = i
	l.n++
}

// record records what a served request r showed and how it was answered
// (resp, fault: the fault injected, or nil): the client software of its
// connection, its request log record (an empty Fetch folded into the
// connection's run of them), an error answered without a rule for the
// audit's error counts, and the server log's line, one for a refusal
// (logRefusal), one for a denial, or else one at Debug.
func (c *clientConn) record(r *request, resp kmsg.Response, fault *Fault) {
	c.rememberSoftware(r.clientID)
	key, version := r.kreq.Key(), r.version
	rec := RequestRecord{
		API: kmsg.Key(key), Version: version, ClientID: r.clientID,
		ErrorCode: firstError(resp), Rule: r.rule, Finding: r.finding, Rules: strings.Join(r.rules, ","), Findings: strings.Join(r.findings, ","), Fault: fault != nil,
		User: r.user, Denied: r.denied, Closed: r.closeAfter != "",
	}
	if rec.ErrorCode != 0 || rec.Rule != "" || rec.Denied != "" {
		rec.Message = firstErrorMessage(resp)
		if rec.Message == "" {
			rec.Message = r.why
		}
		rec.Message = logMessage(refusalMessage(r.rule, key, rec.Message))
	}
	if c.b.cfg.fetchDetail && key == int16(kmsg.Fetch) {
		if fr, ok := resp.(*kmsg.FetchResponse); ok {
			rec.Fetch = fetchDetail(r.kreq.(*kmsg.FetchRequest), fr, func(id [16]byte) string { return c.b.topicName("", id) })
		}
	}
	var run *logRun // only an empty fetch continues a run; anything else ends it
	if emptyFetch(resp) {
		run = &c.fetchRun
	}
	c.logRequest(rec, run)
	if rec.ErrorCode != 0 && rec.Rule == "" && fault == nil {
		c.b.recordError(r, c.b.answerErrorOf(r, resp, rec.ErrorCode), func() string {
			d := kmsg.NameForKey(key) + " v" + strconv.Itoa(int(version))
			if rec.Message != "" {
				d += ": " + rec.Message
			}
			return d
		}, func() string { return errorAdvice(key, rec.ErrorCode, r.denied) })
	}
	switch {
	case r.rule != "":
		c.logRefusal(&rec, r.rule, r.refusedAbout, key, version)
	case r.denied != "":
		c.b.log.Info("denied", c.outcomeAttrs(&rec, "reason", r.denied, "api", kmsg.NameForKey(key), "version", version, "user", r.user)...)
	case c.b.log.Enabled(c.ctx, slog.LevelDebug):
		c.b.log.Debug("request", "api", kmsg.NameForKey(key), "version", version, "client_id", r.clientID)
	}
}

// logRequest adds rec to the request log, stamped with the time on the
// broker's clock and the id of the broker whose listener accepted c. run
// is c's run of empty fetches when rec is an empty fetch, which it may
// fold into (requestLog.addRun), or nil: any other record ends c's run.
// Every record of the request log is added here.
func (c *clientConn) logRequest(rec RequestRecord, run *logRun) {
	rec.Time, rec.Broker = c.b.clock.Now(), c.brokerID()
	if run == nil {
		c.fetchRun = logRun{}
	}
	c.b.reqLog.addRun(rec, run)
}

// Requests returns a copy of the request log in the order the broker
// answered, oldest first (a collapsed run of empty fetches sits where its
// last answer was): the last 100,000 ordinary requests together with the
// last 10,000 notable ones (refused by a rule, denied, faulted, or closing
// the connection), which ordinary requests never evict.
func (b *Broker) Requests() []RequestRecord {
	l := &b.reqLog
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]RequestRecord, 0, l.n+len(l.notable))
	nj := 0
	notableAt := func(j int) *logSlot { return &l.notable[(l.nstart+j)%len(l.notable)] }
	for i, left := l.head, l.n; left > 0; left-- {
		s := l.slot(i)
		for ; nj < len(l.notable) && notableAt(nj).seq < s.seq; nj++ {
			out = append(out, notableAt(nj).rec)
		}
		out = append(out, s.rec)
		i = s.next
	}
	for ; nj < len(l.notable); nj++ {
		out = append(out, notableAt(nj).rec)
	}
	return out
}

// requestPage is how many records EachRequest copies per hold of the
// request log's lock, and requestScan how many it looks at.
const (
	requestPage = 256
	requestScan = 4096
)

// EachRequest calls fn with each record of the request log that keep
// accepts, in the order Requests lists them, until fn returns false; with
// newest > 0, only the newest that many of them. It is Requests without the
// copy of the whole log: it copies at most a few hundred records at a time
// and holds no lock while fn runs, so fn may block. keep runs under the
// log's lock and must be quick. Records the broker adds after the call
// began are left out (so is a collapsed run of empty fetches that repeats
// meanwhile: it moves past the end).
func (b *Broker) EachRequest(keep func(*RequestRecord) bool, newest int, fn func(RequestRecord) bool) {
	l := &b.reqLog
	l.mu.Lock()
	c := requestCursor{end: l.seq, slot: -1}
	if newest > 0 {
		c.after = l.newestFrom(keep, newest, c.end)
	}
	l.mu.Unlock()
	buf := make([]RequestRecord, 0, requestPage)
	for {
		l.mu.Lock()
		var done bool
		buf, done = l.page(buf[:0], &c, keep)
		l.mu.Unlock()
		for _, r := range buf {
			if !fn(r) {
				return
			}
		}
		if done {
			return
		}
	}
}

// requestCursor is EachRequest's place in the log: records with a sequence
// number in (after, end] are still to come. slot is the ordinary record it
// looked at last, a valid place to go on from while that slot still holds
// sequence number slotSeq (it was neither evicted nor moved to the back).
type requestCursor struct {
	after, end uint64
	slot       int32
	slotSeq    uint64
}

// page appends to buf the next records in c's range that keep accepts, at
// most requestPage of them after looking at most at requestScan, and moves
// c past them; done reports that the range is exhausted.
func (l *requestLog) page(buf []RequestRecord, c *requestCursor, keep func(*RequestRecord) bool) ([]RequestRecord, bool) {
	// The next ordinary record: after the one looked at last if it is
	// still in place, else found from the head.
	i := int32(-1)
	if l.n > 0 {
		if c.slot >= 0 && c.slot < l.used && l.slot(c.slot).seq == c.slotSeq {
			i = l.slot(c.slot).next
		} else {
			for i = l.head; i >= 0 && l.slot(i).seq <= c.after; i = l.slot(i).next {
			}
		}
	}
	// The next notable record: the ring is in sequence order.
	j := sort.Search(len(l.notable), func(j int) bool { return l.notableAt(j).seq > c.after })
	for scanned := 0; scanned < requestScan && len(buf) < requestPage; scanned++ {
		var s *logSlot
		switch {
		case i >= 0 && (j >= len(l.notable) || l.slot(i).seq < l.notableAt(j).seq):
			s = l.slot(i)
			c.slot, c.slotSeq, i = i, s.seq, s.next
		case j < len(l.notable):
			s = l.notableAt(j)
			j++
		}
		if s == nil || s.seq > c.end {
			return buf, true
		}
		c.after = s.seq
		if keep(&s.rec) {
			buf = append(buf, s.rec)
		}
	}
	return buf, false
}

// newestFrom returns the sequence number after which the newest n records
// up to end that keep accepts begin, or 0 when there are fewer.
func (l *requestLog) newestFrom(keep func(*RequestRecord) bool, n int, end uint64) uint64 {
	i, j := l.tail, len(l.notable)-1
	if l.n == 0 {
		i = -1
	}
	for {
		var s *logSlot
		switch {
		case i >= 0 && (j < 0 || l.slot(i).seq > l.notableAt(j).seq):
			s = l.slot(i)
			i = s.prev
		case j >= 0:
			s = l.notableAt(j)
			j--
		default:
			return 0
		}
		if s.seq <= end && keep(&s.rec) {
			if n--; n == 0 {
				return s.seq - 1
			}
		}
	}
}

func (l *requestLog) notableAt(j int) *logSlot { return &l.notable[(l.nstart+j)%len(l.notable)] }

// Refusals returns the requests a VAST rule refused (in whole or in part),
// oldest first: the records of Requests with a Rule. They come from the
// store of notable records, so they are cheap to read however busy the
// broker is.
func (b *Broker) Refusals() []RequestRecord {
	return b.notable(func(r *RequestRecord) bool { return r.Rule != "" })
}

// Denials returns the requests an identity policy denied (in whole or in
// part, including topics and groups left out of a listing) and the
// connections refused for missing or failed authentication, oldest first:
// the records of Requests with Denied set.
func (b *Broker) Denials() []RequestRecord {
	return b.notable(func(r *RequestRecord) bool { return r.Denied != "" })
}

func (b *Broker) notable(keep func(*RequestRecord) bool) []RequestRecord {
	l := &b.reqLog
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []RequestRecord
	for j := range l.notable {
		if r := &l.notable[(l.nstart+j)%len(l.notable)].rec; keep(r) {
			out = append(out, *r)
		}
	}
	return out
}

// ResetRequests empties the request log.
func (b *Broker) ResetRequests() {
	l := &b.reqLog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocks, l.used, l.n = nil, 0, 0
	l.notable, l.nstart = nil, 0
}

// logMessage cuts an error message to maxLoggedMessage bytes, on a
// character boundary, marking the cut.
func logMessage(s string) string {
	if len(s) <= maxLoggedMessage {
		return s
	}
	return runePrefix(s, maxLoggedMessage) + "…"
}

// emptyFetch reports whether resp is a Fetch answer that carries no
// records, what an idle consumer gets in a loop.
func emptyFetch(resp kmsg.Response) bool {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return false
	}
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			if len(f.Topics[i].Partitions[j].RecordBatches) > 0 {
				return false
			}
		}
	}
	return true
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
