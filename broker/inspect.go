package broker

// Inspection: copies of the broker's state for tests, safe to take while
// clients run, and the request log.

import (
	"bytes"
	"slices"
	"sort"
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
	// Leader and LeaderEpoch are what Metadata answers: the broker id that
	// leads the partition (LeaderOf; -1 when offline) and its epoch.
	Leader, LeaderEpoch int32
	// Replicas (the preferred leader first) and ISR, the in-sync ones,
	// as Metadata lists them (PartitionState).
	Replicas, ISR []int32
}

// Record is one stored record, decoded: the "topic as a table" view of
// VAST's query topics (VAST's Consume events page).
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
	// ProducerID is the producer id of an idempotent or transactional
	// batch's records, -1 for others.
	ProducerID int64
	// Marker is "commit" or "abort" for a transaction marker, a control
	// record with no key or value of ours, which consumers never see as a
	// record but which takes an offset; empty for data records.
	Marker string
	// Transaction is the state of a transactional record's transaction in
	// this partition: "committed", "aborted" or "open"; empty for records
	// not written in a transaction.
	Transaction string
}

// Topics returns every topic, sorted by name.
func (b *Broker) Topics() []TopicInfo {
	var out []TopicInfo
	for _, t := range b.data.all() {
		out = append(out, b.topicInfo(t))
	}
	return out
}

// Topic returns one topic, and false if it does not exist.
func (b *Broker) Topic(name string) (TopicInfo, bool) {
	t := b.data.get(name)
	if t == nil {
		return TopicInfo{}, false
	}
	return b.topicInfo(t), true
}

func (b *Broker) topicInfo(t *topic) TopicInfo {
	ti := TopicInfo{Name: t.name, ID: t.id, Configs: map[string]string{}}
	for k, v := range t.config().set {
		ti.Configs[k] = v
	}
	for i, p := range t.partitions {
		start, hwm := p.Watermarks()
		pi := PartitionInfo{Partition: int32(i), LogStartOffset: start, HighWatermark: hwm, Bytes: p.Bytes()}
		pi.Leader, pi.LeaderEpoch, pi.Replicas, pi.ISR = b.PartitionState(t.name, int32(i))
		ti.Partitions = append(ti.Partitions, pi)
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
	var out []Record
	b.EachRecord(topic, partition, offset, func(r Record) bool {
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		hs := r.Headers
		r.Headers = nil
		for _, h := range hs {
			r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
		}
		out = append(out, r)
		return limit <= 0 || len(out) < limit
	})
	return out
}

// inspectReadBytes is how much of a log EachRecord takes at a time (at least
// one batch). The batches alias the log, so this bounds no copy; it only
// spaces out the partition's read lock.
const inspectReadBytes = 1 << 20

// EachRecord calls fn with each record of one partition from offset onward
// (below the log start it starts there), in offset order, until fn returns
// false or the high watermark is reached. A compressed batch is one Record
// with Compressed set, as Records lists it. Key, Value and header values
// alias the log: fn must not modify them, and copies what it keeps. No lock
// is held while fn runs, so fn may block (on a slow HTTP client, say) without
// holding up producers; records appended meanwhile are included. It
// returns false for a partition that does not exist.
func (b *Broker) EachRecord(topic string, partition int32, offset int64, fn func(Record) bool) bool {
	part, _ := lookupPartition(b.data.get(topic), partition, false)
	if part == nil {
		return false
	}
	txns := newTxnStates(part)
	for next, more := offset, true; more; {
		res, err := part.Read(next, inspectReadBytes)
		if err != nil { // out of range: below the log start moves up to it; above the high watermark ends
			if next < res.LogStartOffset {
				next = res.LogStartOffset
				continue
			}
			return true
		}
		if len(res.Records) == 0 {
			return true
		}
		log.EachBatch(res.Records, func(batch log.Batch) bool {
			next = batch.LastOffset() + 1
			base := Record{Topic: topic, Partition: partition, LogAppendTime: batch.LogAppendTime(), ProducerID: batch.ProducerID()}
			if isMarker, commit := batch.MarkerType(); isMarker {
				base.Offset, base.Timestamp, base.Marker = batch.BaseOffset(), time.UnixMilli(batch.MaxTimestamp()), "abort"
				if commit {
					base.Marker = "commit"
				}
				more = batch.BaseOffset() < offset || fn(base)
				return more
			}
			if batch.Transactional() {
				base.Transaction = txns.of(batch.ProducerID(), batch.BaseOffset())
			}
			if batch.Compression() != 0 {
				base.Offset, base.Timestamp, base.Compressed = batch.BaseOffset(), time.UnixMilli(batch.MaxTimestamp()), true
				more = fn(base)
				return more
			}
			_ = batch.EachRecord(func(r log.Record) bool {
				if r.Offset < offset || r.Offset < res.LogStartOffset {
					return true
				}
				rec := base
				rec.Offset, rec.Timestamp, rec.Key, rec.Value, rec.Headers = r.Offset, time.UnixMilli(r.Timestamp), r.Key, r.Value, r.Headers
				more = fn(rec)
				return more
			})
			return more
		})
		res.Release() // fn copied what it keeps
	}
	return true
}

// txnStates tells a transactional batch's transaction state from a
// partition's open and aborted transactions, as read when a listing began.
type txnStates struct {
	open    map[int64]int64 // producer id to first offset
	aborted []log.AbortedTxn
}

func newTxnStates(part *log.Partition) txnStates {
	s := txnStates{aborted: part.AbortedTransactions()}
	for _, o := range part.OpenTransactions() {
		if s.open == nil {
			s.open = make(map[int64]int64)
		}
		s.open[o.ProducerID] = o.FirstOffset
	}
	return s
}

// of returns the state of the transaction of producer that wrote a batch
// at offset.
func (s txnStates) of(producer, offset int64) string {
	for _, a := range s.aborted {
		if a.ProducerID == producer && a.FirstOffset <= offset && offset <= a.LastOffset {
			return "aborted"
		}
	}
	if first, ok := s.open[producer]; ok && first <= offset {
		return "open"
	}
	return "committed"
}

// RecordsPageEnd returns where a page of at most limit records (limit > 0)
// of one partition from offset, as EachRecord lists them, ends: the offset
// the next page starts at, and the high watermark. When the page reaches
// the high watermark, end equals it. It reads batch headers only. It
// returns false for a partition that does not exist.
func (b *Broker) RecordsPageEnd(topic string, partition int32, offset int64, limit int) (end, highWatermark int64, ok bool) {
	part, _ := lookupPartition(b.data.get(topic), partition, false)
	if part == nil {
		return 0, 0, false
	}
	start, hwm := part.Watermarks()
	from := max(offset, start)
	end = hwm
	left := int64(limit)
	part.Batches(from, func(batch log.Batch) bool {
		if batch.Compression() != 0 { // one entry for the whole batch
			left--
			if left == 0 {
				end = batch.LastOffset() + 1
			}
			return left > 0
		}
		first := max(batch.BaseOffset(), from)
		if n := batch.LastOffset() - first + 1; n < left {
			left -= n
			return true
		}
		end = first + left
		return false
	})
	return min(max(end, from), hwm), hwm, true
}

// EachTopic calls fn with a copy of each topic, sorted by name, until fn
// returns false; it copies one topic at a time and holds no lock while fn
// runs.
func (b *Broker) EachTopic(fn func(TopicInfo) bool) {
	for _, t := range b.data.all() {
		if !fn(b.topicInfo(t)) {
			return
		}
	}
}

// EachGroup calls fn with a copy of each consumer group, sorted by name,
// until fn returns false; it copies one group at a time (a group deleted
// meanwhile is left out) and holds no lock while fn runs.
func (b *Broker) EachGroup(fn func(coordinator.GroupInfo) bool) {
	for _, lg := range b.coord.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups {
		if g, ok := b.coord.Group(lg.Group); ok && !fn(g) {
			return
		}
	}
}

// Groups returns a copy of every consumer group: state, generation,
// protocol, members with their assignments, and committed offsets. It is
// safe to call while clients run.
func (b *Broker) Groups() []coordinator.GroupInfo { return b.coord.Groups() }

// Group returns a copy of one group, and false if it does not exist.
func (b *Broker) Group(name string) (coordinator.GroupInfo, bool) { return b.coord.Group(name) }

// Transactions returns every transactional id the broker's transaction
// coordinator keeps, by id: its producer id and epoch, state, and the
// partitions and groups of its open transaction.
func (b *Broker) Transactions() []coordinator.TxnInfo { return b.coord.Transactions() }

// EachTransaction calls fn with a copy of each transactional id's state, by
// id (only those with an open transaction when openOnly is set), until fn
// returns false; it copies one id at a time and holds no lock while fn
// runs.
func (b *Broker) EachTransaction(openOnly bool, fn func(coordinator.TxnInfo) bool) {
	b.coord.EachTransaction(openOnly, fn)
}

// Transaction returns one transactional id's state, and false if the
// broker does not know it.
func (b *Broker) Transaction(id string) (coordinator.TxnInfo, bool) { return b.coord.Transaction(id) }

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
