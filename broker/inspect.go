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
	// the broker never decompresses.
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
	// Time is when the broker answered, on its clock.
	Time     time.Time
	API      kmsg.Key
	Version  int16
	ClientID string
	// ErrorCode is the first non-zero error code in the answer, or 0.
	ErrorCode int16
	// Rule names the VAST rule (a rules.Rules field) that refused the
	// request or part of it, or is empty.
	Rule string
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
	// instead of) answering: failed or missing authentication.
	Closed bool
}

// maxRequestLog bounds the request log; the oldest entries go first.
const maxRequestLog = 100_000

// requestLogBlock is how many records the log allocates at a time. Records
// live in fixed blocks rather than one growing slice, so that adding one
// never copies the whole log while every connection waits on the lock.
const requestLogBlock = 1024

type requestLog struct {
	mu     sync.Mutex
	blocks [][]RequestRecord // oldest first; every block but the last is full
	start  int               // records of blocks[0] already dropped
	n      int               // records kept
}

func (l *requestLog) add(r RequestRecord) {
	r.ClientID, r.User, r.Denied = clip(r.ClientID), clip(r.User), clip(r.Denied) // client input, kept short
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == requestLogBlock {
		l.blocks = append(l.blocks, make([]RequestRecord, 0, requestLogBlock))
	}
	last := &l.blocks[len(l.blocks)-1]
	*last = append(*last, r)
	l.n++
	if l.n > maxRequestLog {
		l.n--
		l.blocks[0][l.start] = RequestRecord{} // let its strings go
		if l.start++; l.start == requestLogBlock {
			l.blocks[0] = nil
			l.blocks, l.start = l.blocks[1:], 0
		}
	}
}

// Requests returns a copy of the request log, oldest first: the last
// 100,000 requests the broker answered.
func (b *Broker) Requests() []RequestRecord {
	l := &b.reqLog
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]RequestRecord, 0, l.n)
	for i, block := range l.blocks {
		if i == 0 {
			block = block[l.start:]
		}
		out = append(out, block...)
	}
	return out
}

// ResetRequests empties the request log.
func (b *Broker) ResetRequests() {
	l := &b.reqLog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.blocks, l.start, l.n = nil, 0, 0
}
