package broker

// Offsets: ListOffsets and DeleteRecords (partition offsets), OffsetCommit
// and OffsetFetch (a group's committed offsets, kept by the coordinator).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// Special ListOffsets timestamps.
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3 // v7+
	listEarliestLcl  = -4 // v8+, tiered storage's local log start
	listLatestTiered = -5 // v9+, tiered storage's last uploaded offset
)

// handleListOffsets answers ListOffsets v1-v10.
//
// v2 adds the isolation level (read_committed's latest is the last stable
// offset: the first offset of the earliest open transaction), v4 leader
// epochs (CurrentLeaderEpoch checked first: FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH; the answer's epoch is the current leader's for
// latest and the one that wrote the offset otherwise, as Kafka answers),
// v7 the max-timestamp query
// (-3), v8 earliest-local (-4, the log start: there is no tiered storage),
// v9 latest-tiered (-5, answered -1: nothing is tiered), v10 a timeout. A
// timestamp query returns the first offset whose record timestamp is at or
// after it, and -1 when every record is older (VAST's Consume events page).
// VAST: with StaleEndOffset set, latest (-1) returns the high watermark as
// it was that long ago on the broker's clock (VAST's Consume events page).
// A partition named twice gets INVALID_REQUEST, as in Kafka, answered once.
// Authorizes: KafkaDescribe on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleListOffsets(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	type tp struct {
		topic string
		part  int32
	}
	topics := mergeTopics(req.Topics,
		func(t *kmsg.ListOffsetsRequestTopic) string { return t.Topic },
		func(t *kmsg.ListOffsetsRequestTopic) *[]kmsg.ListOffsetsRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.ListOffsetsRequestTopicPartition) int32 { return p.Partition },
		firstOfEach)
	var repeated map[tp]bool
	if !sameSlice(topics, req.Topics) {
		var all []tp
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				all = append(all, tp{rt.Topic, rp.Partition})
			}
		}
		repeated = repeatedKeys(all, self)
	}
	stale := b.StaleEndOffset()
	now := b.clock.Now()
	b.appendMu.RLock()
	defer b.appendMu.RUnlock()
	for _, rt := range topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.topicNamed(r, rt.Topic)
		describable := b.allowTopic(r, KafkaDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			var part *log.Partition
			if t != nil {
				part = t.partition(rp.Partition)
			}
			switch {
			case repeated[tp{rt.Topic, rp.Partition}]:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case !describable:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case part == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.checkLeaderEpoch(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = b.checkLeaderEpoch(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch)
			default:
				logStart, hwm := part.Watermarks()
				switch ts := rp.Timestamp; {
				case ts == listLatest:
					sp.Offset, sp.LeaderEpoch = hwm, b.LeaderEpochOf(rt.Topic, rp.Partition)
					if req.IsolationLevel == 1 {
						sp.Offset = part.LastStableOffset()
					}
					if stale > 0 {
						sp.Offset = min(sp.Offset, part.HighWatermarkAt(now.Add(-stale)))
					} else if lag := b.rules.StaleEndOffset; lag > 0 {
						if at := part.HighWatermarkAt(now.Add(-lag)); at != hwm {
							b.vast(r, rules.StaleEndOffset, rules.Differs, rt.Topic, "", func() string {
								return "ListOffsets(latest) answered " +
									strconv.FormatInt(hwm, 10) + "; with an end offset " + lag.String() + " behind, VAST could answer " + strconv.FormatInt(at, 10)
							})
						}
					}
				case ts == listEarliest, ts == listEarliestLcl && r.version >= 8:
					sp.Offset = logStart
				case ts == listMaxTimestamp && r.version >= 7:
					var err error
					if sp.Timestamp, sp.Offset, err = part.MaxTimestampRecord(b.storedBatchTurn); err != nil {
						sp.ErrorCode = kerr.UnknownServerError.Code // the broker is closing
					}
				case ts == listLatestTiered && r.version >= 9:
					// No tiered storage: nothing has been uploaded.
				case ts >= 0:
					sp.Offset, sp.Timestamp = part.OffsetForTime(ts)
				default:
					sp.ErrorCode = kerr.InvalidRequest.Code
				}
				if ts := rp.Timestamp; ts != listLatest && sp.Offset >= 0 {
					sp.LeaderEpoch = part.EpochForOffset(sp.Offset) // the epoch that wrote it, as Kafka answers
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleDeleteRecords answers DeleteRecords v0-v2: it moves a partition's
// log start offset up (offset -1 means the high watermark) and drops the
// batches wholly below it. An offset above the high watermark gets
// OFFSET_OUT_OF_RANGE. A topic whose cleanup.policy does not include
// delete (compact alone) gets POLICY_VIOLATION and keeps its records, as
// Kafka refuses to delete records of such a partition. A partition named
// twice is answered once with its last copy's offset, as Kafka collects
// the request into a map.
// Authorizes: KafkaDelete on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleDeleteRecords(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	topics := mergeTopics(req.Topics,
		func(t *kmsg.DeleteRecordsRequestTopic) string { return t.Topic },
		func(t *kmsg.DeleteRecordsRequestTopic) *[]kmsg.DeleteRecordsRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.DeleteRecordsRequestTopicPartition) int32 { return p.Partition },
		lastOfEach)
	for _, rt := range topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.topicNamed(r, rt.Topic)
		deletable := b.allowTopic(r, KafkaDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			part, code := lookupWritable(t, rp.Partition, false)
			if !deletable {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if part == nil {
				sp.ErrorCode = code
			} else if !t.config().delete {
				sp.ErrorCode = kerr.PolicyViolation.Code
			} else {
				low, err := part.DeleteBefore(rp.Offset)
				sp.LowWatermark = low
				if err != nil {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleOffsetCommit answers OffsetCommit v2-v9 through the coordinator.
//
// Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION, as
// in Kafka; the rest go to the coordinator, which checks the generation and
// member (generation -1 with no member id commits for a group with no
// active members, as admin tools do to reset offsets). A commit left with
// no partition (no topics, or only unknown or unreadable ones) is answered
// without the coordinator, as Kafka does: no group is created or checked.
// A partition named twice is answered once and stores its last copy, as
// Kafka's commit keeps the last record written for a partition. Metadata
// longer than offset.metadata.max.bytes (4096; WithOffsetMetadataMaxBytes)
// gets OFFSET_METADATA_TOO_LARGE for that partition, as in Kafka, and so
// does metadata that would take the metadata of all committed offsets past
// 64 MiB (coordinator.OffsetMetadataTotalMaxBytes; Kafka keeps offsets on
// disk).
// VAST: a commit that would create group 257 gets GROUP_MAX_SIZE_REACHED
// (MaxGroups); committed offsets never expire (OffsetsNeverExpire).
// Authorizes: KafkaRead on the group (every partition gets
// GROUP_AUTHORIZATION_FAILED), then KafkaRead on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func handleOffsetCommit(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	if topics := mergeOffsetCommit(req.Topics); !sameSlice(topics, req.Topics) {
		merged := *req
		merged.Topics = topics
		req = &merged
	}
	groupOK := b.allowGroup(r, KafkaRead, req.Group)
	known := *req
	known.Topics = nil
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, rt := range req.Topics {
		t := b.topicNamed(r, rt.Topic)
		code := kerr.UnknownTopicOrPartition.Code
		switch {
		case !groupOK:
			code = kerr.GroupAuthorizationFailed.Code
		case !b.allowTopic(r, KafkaRead, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case t != nil:
			code = 0
		}
		kt := rt
		kt.Partitions = nil
		var ut *kmsg.OffsetCommitResponseTopic
		for _, rp := range rt.Partitions {
			if code == 0 && t.partition(rp.Partition) != nil {
				kt.Partitions = append(kt.Partitions, rp)
				continue
			}
			if ut == nil {
				unknown = append(unknown, kmsg.NewOffsetCommitResponseTopic())
				ut = &unknown[len(unknown)-1]
				ut.Topic = rt.Topic
			}
			up := kmsg.NewOffsetCommitResponseTopicPartition()
			up.Partition, up.ErrorCode = rp.Partition, code
			if code == 0 {
				up.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			ut.Partitions = append(ut.Partitions, up)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	if !groupOK || len(known.Topics) == 0 {
		// As in Kafka, a commit with no partition to store (none asked,
		// or none that exists and may be read) skips the coordinator: it
		// neither creates nor checks the group.
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = unknown
		return resp
	}
	resp := b.coord.OffsetCommit(r, &known)
	b.checkOneRunGroups(r)
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

func mergeOffsetCommit(topics []kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopic {
	return mergeTopics(topics,
		func(t *kmsg.OffsetCommitRequestTopic) string { return t.Topic },
		func(t *kmsg.OffsetCommitRequestTopic) *[]kmsg.OffsetCommitRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition },
		lastOfEach)
}

// handleOffsetFetch answers OffsetFetch v1-v9 through the coordinator: v8+
// ask for several groups at once; a partition with nothing committed reads
// -1. A group, topic or partition named twice is answered once (a group
// asked for all topics by one copy gets all topics); Kafka answers each
// copy of a group again.
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED), then
// KafkaRead on each topic: a requested topic the user may not read gets
// TOPIC_AUTHORIZATION_FAILED, and one the user did not name is left out.
func handleOffsetFetch(b *Broker, r *request) kmsg.Response {
	req := mergeOffsetFetch(r.kreq.(*kmsg.OffsetFetchRequest))
	resp := b.coord.OffsetFetch(req)
	if !b.authz.active() {
		return resp
	}
	if r.version < 8 {
		if !b.allowGroup(r, KafkaRead, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			if r.version >= 2 {
				resp.Topics = nil
				return resp
			}
			for i := range resp.Topics { // v1 has no top-level error code
				for j := range resp.Topics[i].Partitions {
					p := &resp.Topics[i].Partitions[j]
					p.Offset, p.Metadata, p.ErrorCode = -1, nil, kerr.GroupAuthorizationFailed.Code
				}
			}
			return resp
		}
		resp.Topics = filterOffsetFetchTopics(b, r, resp.Topics, req.Topics == nil,
			func(t *kmsg.OffsetFetchResponseTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseTopic) {
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, nil
					p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			})
		return resp
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if !b.allowGroup(r, KafkaRead, g.Group) {
			g.Topics = nil
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			continue
		}
		all := i < len(req.Groups) && req.Groups[i].Topics == nil
		g.Topics = filterOffsetFetchTopics(b, r, g.Topics, all,
			func(t *kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseGroupTopic) {
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, nil
					p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			})
	}
	return resp
}

// mergeOffsetFetch returns req with each group, topic and partition named
// once. A group named again gathers the topics of every copy, or all topics
// when any copy asks for all (null topics). It returns req itself when
// nothing repeats.
func mergeOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchRequest {
	topics := mergeTopics(req.Topics,
		func(t *kmsg.OffsetFetchRequestTopic) string { return t.Topic },
		func(t *kmsg.OffsetFetchRequestTopic) *[]int32 { return &t.Partitions },
		self, firstOfEach)
	mergeGroupTopics := func(ts []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchRequestGroupTopic {
		return mergeTopics(ts,
			func(t *kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchRequestGroupTopic) *[]int32 { return &t.Partitions },
			self, firstOfEach)
	}
	groups := req.Groups
	groupName := func(g *kmsg.OffsetFetchRequestGroup) string { return g.Group }
	if hasRepeats(groups, groupName) {
		at := make(map[string]int, len(groups))
		groups = make([]kmsg.OffsetFetchRequestGroup, 0, len(req.Groups))
		for _, g := range req.Groups {
			j, ok := at[g.Group]
			if !ok {
				at[g.Group] = len(groups)
				if g.Topics != nil { // a copy: later copies append to it
					g.Topics = append(make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics)), g.Topics...)
				}
				groups = append(groups, g)
				continue
			}
			if groups[j].Topics == nil || g.Topics == nil {
				groups[j].Topics = nil // one copy asks for all topics
				continue
			}
			groups[j].Topics = append(groups[j].Topics, g.Topics...)
		}
	}
	for i := range groups {
		if ts := mergeGroupTopics(groups[i].Topics); !sameSlice(ts, groups[i].Topics) {
			if sameSlice(groups, req.Groups) {
				groups = append([]kmsg.OffsetFetchRequestGroup(nil), req.Groups...)
			}
			groups[i].Topics = ts
		}
	}
	if sameSlice(topics, req.Topics) && sameSlice(groups, req.Groups) {
		return req
	}
	merged := *req
	merged.Topics, merged.Groups = topics, groups
	return &merged
}

// filterOffsetFetchTopics applies KafkaRead on topics to an OffsetFetch
// answer: a topic the user may not read is dropped when the request asked
// for all topics, and otherwise marked denied.
func filterOffsetFetchTopics[T any](b *Broker, r *request, topics []T, all bool, name func(*T) string, markDenied func(*T)) []T {
	out := topics[:0]
	for i := range topics {
		t := &topics[i]
		if !b.allowTopic(r, KafkaRead, name(t)) {
			if all {
				continue
			}
			markDenied(t)
		}
		out = append(out, *t)
	}
	return out
}
