package broker

// Offsets: ListOffsets and DeleteRecords (partition offsets), OffsetCommit
// and OffsetFetch (a group's committed offsets, kept by the coordinator).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
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
// v2 adds the isolation level, v4 leader epochs, v7 the max-timestamp query
// (-3), v8 earliest-local (-4, the log start: there is no tiered storage),
// v9 latest-tiered (-5, answered -1: nothing is tiered), v10 a timeout. A
// timestamp query returns the first offset whose record timestamp is at or
// after it, and -1 when every record is older [000].
// VAST: with StaleEndOffset set, latest (-1) returns the high watermark as
// it was that long ago on the broker's clock [000].
func handleListOffsets(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	stale := b.StaleEndOffset()
	now := b.clock.Now()
	b.appendMu.RLock()
	defer b.appendMu.RUnlock()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.data.get(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, 0
			var part *log.Partition
			if t != nil {
				part = t.partition(rp.Partition)
			}
			switch {
			case part == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.CurrentLeaderEpoch > 0:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				logStart, hwm := part.Watermarks()
				switch ts := rp.Timestamp; {
				case ts == listLatest:
					sp.Offset = hwm
					if stale > 0 {
						sp.Offset = part.HighWatermarkAt(now.Add(-stale))
					}
				case ts == listEarliest, ts == listEarliestLcl && r.version >= 8:
					sp.Offset = logStart
				case ts == listMaxTimestamp && r.version >= 7:
					sp.Timestamp, sp.Offset = part.MaxTimestamp()
				case ts == listLatestTiered && r.version >= 9:
					// No tiered storage: nothing has been uploaded.
				case ts >= 0:
					sp.Offset, sp.Timestamp = part.OffsetForTime(ts)
				default:
					sp.ErrorCode = kerr.InvalidRequest.Code
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
// OFFSET_OUT_OF_RANGE.
func handleDeleteRecords(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.data.get(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if t == nil || t.partition(rp.Partition) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				low, err := t.partition(rp.Partition).DeleteBefore(rp.Offset)
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
// active members, as admin tools do to reset offsets).
// VAST: a commit that would create group 257 gets GROUP_MAX_SIZE_REACHED
// (MaxGroups); committed offsets never expire (OffsetsNeverExpire).
func handleOffsetCommit(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	known := *req
	known.Topics = nil
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, rt := range req.Topics {
		t := b.data.get(rt.Topic)
		kt := rt
		kt.Partitions = nil
		var ut *kmsg.OffsetCommitResponseTopic
		for _, rp := range rt.Partitions {
			if t != nil && t.partition(rp.Partition) != nil {
				kt.Partitions = append(kt.Partitions, rp)
				continue
			}
			if ut == nil {
				unknown = append(unknown, kmsg.NewOffsetCommitResponseTopic())
				ut = &unknown[len(unknown)-1]
				ut.Topic = rt.Topic
			}
			up := kmsg.NewOffsetCommitResponseTopicPartition()
			up.Partition, up.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
			ut.Partitions = append(ut.Partitions, up)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
	}
	resp := b.coord.OffsetCommit(&known)
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

// handleOffsetFetch answers OffsetFetch v1-v9 through the coordinator: v8+
// ask for several groups at once; a partition with nothing committed reads
// -1.
func handleOffsetFetch(b *Broker, r *request) kmsg.Response {
	return b.coord.OffsetFetch(r.kreq.(*kmsg.OffsetFetchRequest))
}
