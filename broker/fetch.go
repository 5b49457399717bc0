package broker

// Fetch.

import (
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

var noRecords = []byte{}

// handleFetch answers Fetch v4-v16.
//
// v4 adds isolation levels and the last stable offset, v5 the log start
// offset, v7 fetch sessions, v9 leader epochs (a partition's
// CurrentLeaderEpoch is checked before its data is read, at a follower
// too: FENCED_LEADER_EPOCH, naming the leader from v12, or
// UNKNOWN_LEADER_EPOCH), v11 rack ids and preferred
// read replicas, v12 flexible encoding, v13 topic IDs. Records are served as
// stored, never re-encoded. A partition named more than once is answered
// once, with the last copy's position and limits, as Kafka does. Byte
// limits follow KIP-74: each partition gets at most PartitionMaxBytes and
// the response at most MaxBytes, and never more than Kafka's default
// fetch.max.bytes (55 MiB) whatever MaxBytes asks, except that the first
// partition with data always gets one whole batch. A fetch below
// the log start or above the high watermark gets OFFSET_OUT_OF_RANGE.
// A read_committed fetch (IsolationLevel 1) is answered up to the last
// stable offset, the first offset of the earliest open transaction, with
// the aborted transactions its batches hold data of, which the client
// skips; read_uncommitted sees everything up to the high watermark. Both
// get the last stable offset. PreferredReadReplica is -1 (no racks).
// VAST: every fetch is a full fetch: SessionID is 0 and an incremental
// request gets FETCH_SESSION_ID_NOT_FOUND (NoFetchSessions); the answer
// comes at once, even when empty (NoDelayedFetch), except that an empty
// answer is paced by the empty fetch delay (WithEmptyFetchDelay, 20ms by
// default, never past half of MaxWaitMillis) standing in for a network round trip,
// and new records end the pause. In the kafka profile an empty fetch waits
// up to half of MaxWaitMillis for new records (sessions are not emulated
// there either: the broker answers SessionID 0 and clients fall back to
// full fetches, as Kafka allows).
// Authorizes: KafkaRead on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleFetch(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.FetchRequest)
	if req.SessionID != 0 || req.SessionEpoch > 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		b.vast(r, rules.NoFetchSessions, rules.Refused, "", "", func() string {
			return "incremental fetch (session " + strconv.Itoa(int(req.SessionID)) + ", epoch " + strconv.Itoa(int(req.SessionEpoch)) + ")"
		})
		return resp
	}
	req = mergeFetchDuplicates(req, r.version)
	denied := b.fetchDenied(r, req)
	if b.audited(rules.NoOffsetsTopic) {
		b.auditOffsetsTopicFetch(r, req)
	}
	if r.version <= 12 && b.modes.Of(rules.NoTopicIDs) != rules.Off {
		b.checkTopicIDsAsNames(r, req)
	}
	if req.MinBytes > 1 && req.MaxWaitMillis > 0 {
		b.vast(r, rules.NoDelayedFetch, rules.Differs, fetchTopic(req), "", func() string {
			return "fetch.min.bytes=" +
				strconv.Itoa(int(req.MinBytes)) + ", fetch.wait.max.ms=" + strconv.Itoa(int(req.MaxWaitMillis)) + ": VAST answers at once with what it has"
		})
	}
	resp, bytes := b.fetchOnce(r, req, denied)
	wait := b.fetchWait(req, bytes)
	if wait <= 0 || fetchHasError(resp) {
		return resp
	}
	// Wait for new data, the wait, or the connection's (or broker's) end.
	// Counting this fetch among the waiters before reading again makes the
	// producer either wake it or publish before the read.
	b.fetchWaiters.Add(1)
	defer b.fetchWaiters.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		woken := b.dataWaiter()
		// Re-check after taking the waiter so an append in between is seen.
		if resp, bytes = b.fetchOnce(r, req, denied); bytes > 0 || fetchHasError(resp) {
			return resp
		}
		select {
		case <-woken:
		case <-timer.C:
			return resp
		case <-r.ctx.Done():
			return resp
		}
	}
}

// fetchWait is how long a fetch that found bytes record bytes waits for
// more before it is answered: 0 when it has data or asks for no wait. In
// the VAST profile (NoDelayedFetch) an empty answer is paced by the empty
// fetch delay, or half of MaxWaitMillis if shorter. In the kafka profile a
// fetch short of MinBytes waits up to half of MaxWaitMillis. Half, in both:
// kafka-go sets its read deadline to exactly MaxWait, so an answer near the
// deadline races it (and under the race detector, loses often).
func (b *Broker) fetchWait(req *kmsg.FetchRequest, bytes int) time.Duration {
	maxWait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	switch {
	case bytes > 0 || maxWait <= 0:
		return 0
	case b.enforced(rules.NoDelayedFetch):
		return min(b.cfg.emptyFetchDelay, maxWait/2)
	case bytes >= int(req.MinBytes):
		return 0
	default:
		return maxWait / 2
	}
}

// fetchHasError reports whether any partition of resp carries an error: such
// an answer goes out at once, as Kafka answers a delayed fetch at once when
// a partition fails.
func fetchHasError(resp *kmsg.FetchResponse) bool {
	if resp.ErrorCode != 0 {
		return true
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode != 0 {
				return true
			}
		}
	}
	return false
}

// fetchMaxBytes is Kafka's fetch.max.bytes default: no fetch response
// carries more record bytes, whatever MaxBytes asks, except for the one
// batch KIP-74 always returns so that a consumer makes progress.
const fetchMaxBytes = 55 << 20

// mergeFetchDuplicates returns req with each partition named once, as
// Kafka's fetch does by collecting the request into a map of partitions:
// a partition named again takes the later copy's fetch position and limits
// but keeps its first place, and a topic named again keeps its first
// place. It returns req itself, unchanged, when nothing is repeated.
func mergeFetchDuplicates(req *kmsg.FetchRequest, version int16) *kmsg.FetchRequest {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	if !fetchHasDuplicates(req, version, n) {
		return req
	}
	// Later copies win: index each partition's last copy, then emit each
	// partition at its first place with that copy's fields.
	last := make(map[fetchKey]kmsg.FetchRequestTopicPartition, n)
	for i := range req.Topics {
		tk := topicFetchKey(&req.Topics[i], version)
		for _, rp := range req.Topics[i].Partitions {
			last[tk.at(rp.Partition)] = rp
		}
	}
	merged := *req
	merged.Topics = nil
	where := make(map[fetchKey]int, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		tk := topicFetchKey(rt, version)
		at, ok := where[tk]
		if !ok {
			at = len(merged.Topics)
			where[tk] = at
			out := *rt
			out.Partitions = nil
			merged.Topics = append(merged.Topics, out)
		}
		for _, rp := range rt.Partitions {
			pk := tk.at(rp.Partition)
			if rp, ok := last[pk]; ok {
				merged.Topics[at].Partitions = append(merged.Topics[at].Partitions, rp)
				delete(last, pk)
			}
		}
	}
	return &merged
}

// fetchHasDuplicates reports whether req names a topic or a partition more
// than once; n is its count of partitions. Small requests, the usual ones,
// are checked without allocating.
func fetchHasDuplicates(req *kmsg.FetchRequest, version int16, n int) bool {
	sameTopic := func(a, b *kmsg.FetchRequestTopic) bool {
		return topicFetchKey(a, version) == topicFetchKey(b, version)
	}
	if n <= 64 && len(req.Topics) <= 64 {
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range i {
				if sameTopic(rt, &req.Topics[j]) {
					return true
				}
			}
			for k := range rt.Partitions {
				for l := range k {
					if rt.Partitions[k].Partition == rt.Partitions[l].Partition {
						return true
					}
				}
			}
		}
		return false
	}
	seen := make(map[fetchKey]struct{}, n+len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		tk := topicFetchKey(rt, version)
		if _, ok := seen[tk]; ok {
			return true
		}
		seen[tk] = struct{}{}
		for _, rp := range rt.Partitions {
			if _, ok := seen[tk.at(rp.Partition)]; ok {
				return true
			}
			seen[tk.at(rp.Partition)] = struct{}{}
		}
	}
	return false
}

// fetchKey names a topic of a Fetch request (partition -1), by name or,
// from v13, by topic ID, or one partition of it.
type fetchKey struct {
	topic     string
	id        [16]byte
	partition int32
}

func topicFetchKey(rt *kmsg.FetchRequestTopic, version int16) fetchKey {
	if version >= 13 {
		return fetchKey{id: rt.TopicID, partition: -1}
	}
	return fetchKey{topic: rt.Topic, partition: -1}
}

// at names partition p of the topic k names.
func (k fetchKey) at(p int32) fetchKey { k.partition = p; return k }

// fetchDenied returns, per requested topic, whether r's user may not read
// it; nil when every topic may be read.
func (b *Broker) fetchDenied(r *request, req *kmsg.FetchRequest) []bool {
	if !b.authz.active() {
		return nil
	}
	denied := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		name := rt.Topic
		if r.version >= 13 {
			t := b.data.getID(rt.TopicID)
			if t == nil {
				continue // UNKNOWN_TOPIC_ID
			}
			name = t.name
		}
		denied[i] = !b.allowTopic(r, KafkaRead, name)
	}
	return denied
}

// fetchOnce reads every requested partition once, except the topics denied
// marks, and returns the response and how many record bytes it carries.
// The records alias the log: each read is kept in r.reads, released once
// the answer is written, so that a topic deleted meanwhile does not hand
// their memory to another topic before then.
func (b *Broker) fetchOnce(r *request, req *kmsg.FetchRequest, denied []bool) (*kmsg.FetchResponse, int) {
	version := r.version
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := min(max(int(req.MaxBytes), 0), fetchMaxBytes)
	total := 0
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))

	b.appendMu.RLock()
	defer b.appendMu.RUnlock()
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *topic
		if version >= 13 {
			t = b.data.getID(rt.TopicID)
		} else {
			t = b.topicNamed(r, rt.Topic)
		}
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			// Kafka sends an empty, non-null record set when there is
			// nothing to return; kafka-go's reader rejects a null one.
			sp.RecordBatches = noRecords
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			if denied != nil && denied[i] {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			part, code := lookupPartition(t, rp.Partition, version >= 13)
			if part == nil {
				sp.ErrorCode = code
				continue
			}
			if code := b.checkLeaderEpoch(t.name, rp.Partition, rp.CurrentLeaderEpoch); code != 0 {
				sp.ErrorCode = code
				continue
			}
			max := int(rp.PartitionMaxBytes)
			if max > budget-total {
				max = budget - total
			}
			var res log.ReadResult
			var err error
			if req.IsolationLevel == 1 {
				res, err = part.ReadCommitted(rp.FetchOffset, max)
			} else {
				res, err = part.Read(rp.FetchOffset, max)
			}
			if res.Records != nil {
				r.reads = append(r.reads, res)
			}
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
			if errors.Is(err, log.ErrOffsetOutOfRange) {
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
				continue
			}
			if len(res.Records) == 0 || total > 0 && len(res.Records) > max {
				continue // only the first partition with data may overshoot
			}
			sp.RecordBatches = res.Records
			total += len(res.Records)
			for _, a := range res.Aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				sp.AbortedTransactions = append(sp.AbortedTransactions, at)
			}
		}
	}
	return resp, total
}

// fetchTopic names the first topic a fetch asks for, by name ("" when by
// id), for a finding.
func fetchTopic(req *kmsg.FetchRequest) string {
	if len(req.Topics) == 0 {
		return ""
	}
	return req.Topics[0].Topic
}

// checkTopicIDsAsNames applies NoTopicIDs to a Fetch of v12 or lower that
// names a topic that looks like a topic ID ("00000000-0000-0000-0000-
// 000000000000"): a client that sends the topic ID where the name belongs
// (the npm kafka-console CLI's Fetch v12) fails on VAST, which serves no
// version with topic IDs. Audited, the finding is recorded even when a
// topic of that name exists (an auto-created one was served in its place);
// enforced, the request is recorded as refused when none exists (it gets
// UNKNOWN_TOPIC_OR_PARTITION).
func (b *Broker) checkTopicIDsAsNames(r *request, req *kmsg.FetchRequest) {
	for i := range req.Topics {
		name := req.Topics[i].Topic
		if !looksLikeTopicID(name) || b.enforced(rules.NoTopicIDs) && b.data.get(name) != nil {
			continue
		}
		b.vast(r, rules.NoTopicIDs, rules.Refused, name, "", func() string {
			return "Fetch v" + strconv.Itoa(int(r.version)) + " named topic " + strconv.Quote(name) +
				", which looks like a topic ID: the client sent a topic ID as a name; it cannot fetch from VAST"
		})
	}
}

// looksLikeTopicID reports whether a topic name has the form of a UUID as
// clients print topic IDs: 8-4-4-4-12 hex digits.
func looksLikeTopicID(name string) bool {
	if len(name) != 36 {
		return false
	}
	for i, c := range name {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// auditOffsetsTopicFetch records a NoOffsetsTopic finding for a fetch that
// reads __consumer_offsets, which VAST does not have.
func (b *Broker) auditOffsetsTopicFetch(r *request, req *kmsg.FetchRequest) {
	for i := range req.Topics {
		name := req.Topics[i].Topic
		if r.version >= 13 {
			if t := b.data.getID(req.Topics[i].TopicID); t != nil {
				name = t.name
			}
		}
		if name == offsetsTopic {
			b.vast(r, rules.NoOffsetsTopic, rules.Differs, offsetsTopic, "", func() string { return "Fetch from __consumer_offsets, which VAST does not have" })
			return
		}
	}
}
