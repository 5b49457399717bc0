package broker

// Inspection: copies of the broker's state for tests, safe to take while
// clients run. The request log is in requestlog.go.

import (
	"bytes"
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
