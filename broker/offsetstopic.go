package broker

// __consumer_offsets: in the kafka profile the broker keeps Kafka's internal
// topic as Kafka does. The coordinator hands out a record for every offset
// commit and group change (coordinator.Config.OffsetsTopic), in Kafka's
// key/value formats, and the broker appends it to the partition of the
// group, so that lag monitors that read the topic (Burrow's consumer module,
// scripts that tail it) see groups and commits. Committed offsets are served
// from the coordinator, never read back from the topic. Clients cannot write
// to it (lookupWritable). The VAST profile has no such topic
// (rules.NoOffsetsTopic).

import (
	"sync/atomic"
	"time"

	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
)

// OffsetsTopicPartition returns the partition of __consumer_offsets that
// Kafka keeps a group's records in (and whose leader coordinates the
// group, and a transactional id's transaction state, in
// __transaction_state, by the same formula): Kafka's partitionFor,
// Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions (50), where
// hashCode is Java's String.hashCode and Utils.abs maps MinInt32 to 0.
// This is the one place vastfake computes it.
func OffsetsTopicPartition(group string) int32 {
	return kafkaPartitionFor(group, offsetsTopicPartitions)
}

// TransactionStatePartition returns the partition of __transaction_state
// Kafka keeps a transactional id in, and so which broker coordinates it:
// Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions (50).
func TransactionStatePartition(id string) int32 {
	return kafkaPartitionFor(id, transactionStatePartitions)
}

// kafkaPartitionFor is Utils.abs(id.hashCode()) % n, with Java's
// String.hashCode and Utils.abs, which maps MinInt32 to 0.
func kafkaPartitionFor(id string, n int32) int32 {
	h := javaStringHash(id)
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % n
}

// javaStringHash is Java's String.hashCode over s's UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// offsetsCompactMinBytes bounds what __consumer_offsets holds beyond its
// live records: a partition is compacted once it holds this much more than
// after its last compaction, or half as much more, whichever is more, as
// Kafka's log cleaner keeps the topic compacted. Without it every commit of
// a long-running consumer would stay in memory; compacted often, the
// one-commit batches are merged (offsetsMergedBatchBytes) before many pile
// up, so a committed offset costs about its record.
const offsetsCompactMinBytes = 8 << 10

// offsetsTopicState is what the broker keeps about __consumer_offsets'
// partitions: their bytes after the last compaction.
type offsetsTopicState struct {
	compacted [offsetsTopicPartitions]atomic.Int64
}

// appendOffsetsRecord appends one record to the group's partition of
// __consumer_offsets; see appendOffsetsRecords.
func (b *Broker) appendOffsetsRecord(group string, key, value []byte) {
	b.appendOffsetsRecords(group, []coordinator.OffsetsRecord{{Key: key, Value: value}})
}

// appendOffsetsRecords appends the records the coordinator hands out for a
// group at the end of a call to the group's partition of
// __consumer_offsets, as one batch, as Kafka writes the records of one
// request, when the topic exists (not in the VAST profile), and compacts
// that partition when it has grown past its bound. The coordinator calls
// it with its lock held.
func (b *Broker) appendOffsetsRecords(group string, records []coordinator.OffsetsRecord) {
	if _, _, part := b.offsetsPartition(group); part == nil {
		return
	}
	now := b.clock.Now()
	keys, values := make([][]byte, len(records)), make([][]byte, len(records))
	for i, r := range records {
		keys[i], values[i] = r.Key, r.Value
	}
	b.appendOffsetsBatch(group, log.RecordsBatch(keys, values, now), now)
}

// appendTxnOffsetsRecords appends the records of one TxnOffsetCommit to the
// group's partition of __consumer_offsets as one transactional batch of the
// producer's id and epoch, as Kafka's group coordinator writes them: the
// partition's last stable offset stays before them until the transaction's
// marker (writeTxnMarkers). The coordinator calls it with its lock held.
func (b *Broker) appendTxnOffsetsRecords(r coordinator.TxnOffsetRecords) {
	now := b.clock.Now()
	b.appendOffsetsBatch(r.Group, log.TransactionalRecordBatch(r.Keys, r.Values, r.ProducerID, r.ProducerEpoch, now), now)
}

// offsetsPartition returns the group's partition of __consumer_offsets, or
// nil when the topic does not exist (VAST profile).
func (b *Broker) offsetsPartition(group string) (*topic, int32, *log.Partition) {
	t := b.data.get(offsetsTopic)
	if t == nil || !t.internal {
		return nil, 0, nil
	}
	p := OffsetsTopicPartition(group)
	return t, p, t.partition(p)
}

// appendOffsetsBatch appends batch to the group's partition of
// __consumer_offsets, when the topic exists, and compacts that partition
// when it has grown past its bound.
func (b *Broker) appendOffsetsBatch(group string, batch log.Batch, now time.Time) {
	t, p, part := b.offsetsPartition(group)
	if part == nil {
		return
	}
	b.appendMu.Lock()
	part.Append(batch, log.AppendOptions{Now: now})
	b.appendMu.Unlock()
	b.notifyData()

	base := b.offsetsState.compacted[p].Load()
	if size := part.Bytes(); size >= max(base+offsetsCompactMinBytes, base+base/2) {
		opts := b.compactOptions(t, t.config(), now)
		opts.MinDirtyRatio = 0
		opts.Turn = nil // under the coordinator's lock: never wait for a turn (the broker writes no compressed batch here)
		if _, err := part.Compact(opts); err != nil {
			b.log.Error("compaction failed", "topic", offsetsTopic, "partition", p, "err", err)
			return
		}
		b.offsetsState.compacted[p].Store(part.Bytes())
	}
}
