package broker

// Leader epochs (KIP-320). Every partition has a leader epoch, one higher
// after each election, move or preferred election (replicas.go); the
// leader that takes a partition over begins its epoch in the partition's
// log (log.Partition.BeginLeaderEpoch), so that every batch appended from
// then on carries it and the log keeps the history of epochs Kafka's
// leader-epoch cache keeps. OffsetForLeaderEpoch answers from that
// history, and every request that carries a CurrentLeaderEpoch (Fetch,
// ListOffsets, OffsetForLeaderEpoch) is checked against the partition's
// epoch before anything else about the partition, as Kafka's replicas
// check it: at a follower too, whose answer is then FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH rather than NOT_LEADER_OR_FOLLOWER.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/log"
)

// noLeaderEpoch is the CurrentLeaderEpoch of a request that knows none
// (RecordBatch.NO_PARTITION_LEADER_EPOCH): the check is skipped.
const noLeaderEpoch = -1

// checkLeaderEpoch checks the leader epoch a request says it knows for
// partition p against the partition's, as Kafka's Partition does
// (checkCurrentLeaderEpoch): -1 skips the check; an older one (any other
// negative included) gets FENCED_LEADER_EPOCH, the client's metadata being
// stale; a newer one UNKNOWN_LEADER_EPOCH, the broker's being stale; 0 when
// it matches.
func (b *Broker) checkLeaderEpoch(topic string, p, known int32) int16 {
	if known == noLeaderEpoch {
		return 0
	}
	switch epoch := b.LeaderEpochOf(topic, p); {
	case known == epoch:
		return 0
	case known < epoch:
		return kerr.FencedLeaderEpoch.Code
	}
	return kerr.UnknownLeaderEpoch.Code
}

// beginLeaderEpoch starts epoch in the log of partition p of topic, when
// it has one, for the leader that takes it over now; batches appended from
// now on carry it. Call it with b.moves.mu held, whenever a partition gets
// a leader with a new epoch.
func (b *Broker) beginLeaderEpoch(topic string, p, epoch int32) {
	if t := b.data.get(topic); t != nil {
		if part := t.partition(p); part != nil {
			part.BeginLeaderEpoch(epoch)
		}
	}
}

// epochFirst returns the partitions of r that a broker here, which does not
// lead them, answers by their leader epoch rather than with
// NOT_LEADER_OR_FOLLOWER: those r names with a CurrentLeaderEpoch that is
// not the partition's, and of which here is a replica, as Kafka's
// follower checks the epoch before its leadership. It returns nil when
// there is none.
func (b *Broker) epochFirst(r *request, here int32) map[topicPartition]bool {
	var out map[topicPartition]bool
	eachTopic(reflect.ValueOf(r.kreq).Elem(), b.topicNameOf, func(topic string, parts reflect.Value) {
		if !parts.IsValid() || parts.Kind() != reflect.Slice {
			return
		}
		for i := 0; i < parts.Len(); i++ {
			part := parts.Index(i)
			known, ok := currentLeaderEpochOf(part)
			if !ok || known == noLeaderEpoch {
				continue
			}
			p := partitionOf(part)
			if b.LeaderOf(topic, p) == here || !b.isReplica(topic, p, here) || b.checkLeaderEpoch(topic, p, known) == 0 {
				continue
			}
			if out == nil {
				out = map[topicPartition]bool{}
			}
			out[topicPartition{topic, p}] = true
		}
	})
	return out
}

// currentLeaderEpochOf returns the CurrentLeaderEpoch of a request's
// partition element, and false when its type has none.
func currentLeaderEpochOf(part reflect.Value) (int32, bool) {
	if part.Kind() != reflect.Struct {
		return 0, false
	}
	f := part.FieldByName("CurrentLeaderEpoch")
	if !f.IsValid() || f.Kind() != reflect.Int32 {
		return 0, false
	}
	return int32(f.Int()), true
}

// partitionExists reports whether topic has a partition p.
func (b *Broker) partitionExists(topic string, p int32) bool {
	t := b.data.get(topic)
	return t != nil && t.partition(p) != nil
}

// isReplica reports whether broker id is one of partition p's replicas,
// and so hosts it as leader or follower.
func (b *Broker) isReplica(topic string, p, id int32) bool {
	if !b.partitionExists(topic, p) {
		return false
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	for _, r := range b.replicasLocked(topic, p) {
		if r == id {
			return true
		}
	}
	return false
}

// handleOffsetForLeaderEpoch answers OffsetForLeaderEpoch v2-v4 (KIP-320),
// served in the kafka and audit profiles: for each partition, the end
// offset of the leader epoch the client asks about and the epoch that
// offset belongs to, from the partition's leader-epoch history
// (log.Partition.EndOffsetForEpoch), as Kafka's leader answers a consumer
// that checks its position after a leader change: for the current epoch
// the log end offset; for an older one where the next epoch began; for
// one above every epoch the partition had (a future epoch) -1 and -1,
// with no error (UNDEFINED_EPOCH_OFFSET), as Kafka answers it.
// CurrentLeaderEpoch is checked first (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH; -1 skips it), then leadership: only the leader
// answers, since Kafka's replicas answer a consumer (ReplicaID -1, the
// only one a client sends; a follower's is answered the same way) as
// leader only. v2 adds the leader epoch to the answer, v3 the current
// leader epoch and replica id, v4 flexible encoding; v0-v1 are gone from
// Kafka 4. A partition named twice is answered once.
// VAST: hidden (NoOffsetForLeaderEpoch): VAST publishes nothing on it, so
// clients skip the check, as they do against a broker without it.
// Authorizes: KafkaDescribe on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleOffsetForLeaderEpoch(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	topics := mergeTopics(req.Topics,
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) string { return t.Topic },
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) *[]kmsg.OffsetForLeaderEpochRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.OffsetForLeaderEpochRequestTopicPartition) int32 { return p.Partition },
		firstOfEach)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, 0, len(topics))
	for _, rt := range topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := b.topicNamed(r, rt.Topic)
		describable := b.allowTopic(r, KafkaDescribe, rt.Topic)
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			var part *log.Partition
			if t != nil {
				part = t.partition(rp.Partition)
			}
			switch {
			case !describable:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case part == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				sp.ErrorCode = b.checkLeaderEpoch(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch)
				if sp.ErrorCode == 0 {
					sp.LeaderEpoch, sp.EndOffset = part.EndOffsetForEpoch(rp.LeaderEpoch)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
