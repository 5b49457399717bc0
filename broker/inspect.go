package broker

// Inspection: copies of the broker's state for tests, safe to take while
// clients run, and the request log.

import (
	"bytes"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
)

// TopicInfo is a copy of one topic's shape.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions []PartitionInfo
	// Configs are the topic configs set explicitly; the rest are defaults.
	Configs map[string]string
}

// PartitionInfo is one partition's watermarks.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
	// Bytes is the size of the stored batches.
	Bytes int64
}

// Record is one stored record, decoded: the "topic as a table" view of
// VAST's query topics [000].
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	// LogAppendTime reports whether Timestamp is the broker's.
	LogAppendTime bool
	Key           []byte
	Value         []byte
	Headers       []kmsg.Header
	// Compressed is set for a batch stored compressed (kafka profile);
	// such records are listed one per batch with no key or value, since
	// the broker decompresses only to validate a produced batch.
	Compressed bool
}

// Topics returns every topic, sorted by name.
func (b *Broker) Topics() []TopicInfo {
	var out []TopicInfo
	for _, t := range b.data.all() {
		out = append(out, topicInfo(t))
	}
	return out
}

// Topic returns one topic, and false if it does not exist.
func (b *Broker) Topic(name string) (TopicInfo, bool) {
	t := b.data.get(name)
	if t == nil {
		return TopicInfo{}, false
	}
	return topicInfo(t), true
}

func topicInfo(t *topic) TopicInfo {
	ti := TopicInfo{Name: t.name, ID: t.id, Configs: map[string]string{}}
	for k, v := range t.config().set {
		ti.Configs[k] = v
	}
	for i, p := range t.partitions {
		start, hwm := p.Watermarks()
		ti.Partitions = append(ti.Partitions, PartitionInfo{Partition: int32(i), LogStartOffset: start, HighWatermark: hwm, Bytes: p.Bytes()})
	}
	return ti
}

// Records returns copies of the records of one partition from offset
// onward (use 0 for all that retention kept), in offset order. It returns
// nil for a partition that does not exist.
func (b *Broker) Records(topic string, partition int32, offset int64) []Record {
	return b.RecordsN(topic, partition, offset, 0)
}

// RecordsN is Records stopping after limit records (no limit when 0): it
// decodes and copies no more of the log than it returns.
func (b *Broker) RecordsN(topic string, partition int32, offset int64, limit int) []Record {
	part, _ := lookupPartition(b.data.get(topic), partition, false)
	if part == nil {
		return nil
	}
	var out []Record
	full := func() bool { return limit > 0 && len(out) >= limit }
	start := part.LogStartOffset()
	part.Batches(offset, func(batch log.Batch) bool {
		if batch.Compression() != 0 {
			out = append(out, Record{Topic: topic, Partition: partition, Offset: batch.BaseOffset(),
				Timestamp: time.UnixMilli(batch.MaxTimestamp()), LogAppendTime: batch.LogAppendTime(), Compressed: true})
			return !full()
		}
		_ = batch.EachRecord(func(r log.Record) bool {
			if r.Offset < offset || r.Offset < start {
				return true
			}
			rec := Record{Topic: topic, Partition: partition, Offset: r.Offset, Timestamp: time.UnixMilli(r.Timestamp),
				LogAppendTime: batch.LogAppendTime(), Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, kmsg.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
			}
			out = append(out, rec)
			return !full()
		})
		return !full()
	})
	return out
}

// Groups returns a copy of every consumer group: state, generation,
// protocol, members with their assignments, and committed offsets. It is
// safe to call while clients run.
func (b *Broker) Groups() []coordinator.GroupInfo { return b.coord.Groups() }

// Group returns a copy of one group, and false if it does not exist.
func (b *Broker) Group(name string) (coordinator.GroupInfo, bool) { return b.coord.Group(name) }

// CommittedOffset returns a group's committed offset for a partition, and
// false if none is committed.
func (b *Broker) CommittedOffset(group, topic string, partition int32) (int64, bool) {
	return b.coord.CommittedOffset(group, topic, partition)
}

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
	// consumer in the VAST profile (NoDelayedFetch) fetches in a tight
	// loop; consecutive empty Fetch answers on one connection with the
	// same outcome (version, client id, user, error) are collapsed into
	// one record, which moves to the end of the log with each repeat. 0
	// for a single answer.
	Repeats int
}

// notable reports whether r goes to the store of refusals, denials,
// faults and closed connections, which ordinary requests cannot evict.
func (r *RequestRecord) notable() bool {
	return r.Rule != "" || r.Denied != "" || r.Fault || r.Closed
}

// sameOutcome reports whether b repeats a: the same record but for its time
// and count.
func sameOutcome(a, b *RequestRecord) bool {
	x := *a
	x.Time, x.Repeats = b.Time, b.Repeats
	return x == *b
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
