package coordinator

// The records of __consumer_offsets: Kafka's group coordinator writes every
// offset commit and every group change to its internal topic, and tools that
// monitor lag (Burrow's consumer module, scripts that tail the topic) read
// them there. The coordinator keeps its state in memory; with
// Config.OffsetsTopic set it also hands out, at each change, the record
// Kafka would write, so that the broker can append it to the topic (kafka
// profile). The records of one call (an OffsetCommit of many partitions)
// go out together when it ends, each group's as one batch, as Kafka writes
// them: a commit of N partitions costs the topic one batch, not N.
// Committed offsets are still served from the coordinator's memory, never
// read back from the topic.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The key and value versions Kafka 4.0 writes: offset commit keys v1 with
// values v3 (leader epoch, no expire timestamp), group metadata keys v2
// with values v3 (static members).
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

// OffsetsRecord is one record of __consumer_offsets, in Kafka's format:
// its key and value, the value nil for a tombstone.
type OffsetsRecord struct {
	Key, Value []byte
}

// groupRecords are the records one call handed out for a group.
type groupRecords struct {
	group   string
	records []OffsetsRecord
}

// emitOffsetsRecord queues a record of group's, which unlock hands out
// with the group's other records of the call. Call it with c.mu held.
func (c *Coordinator) emitOffsetsRecord(group string, key, value []byte) {
	rec := OffsetsRecord{key, value}
	if n := len(c.offsetsPending); n > 0 && c.offsetsPending[n-1].group == group { // most calls touch one group
		c.offsetsPending[n-1].records = append(c.offsetsPending[n-1].records, rec)
		return
	}
	if i, ok := c.offsetsPendingAt[group]; ok {
		c.offsetsPending[i].records = append(c.offsetsPending[i].records, rec)
		return
	}
	if c.offsetsPendingAt == nil {
		c.offsetsPendingAt = make(map[string]int)
	}
	c.offsetsPendingAt[group] = len(c.offsetsPending)
	c.offsetsPending = append(c.offsetsPending, groupRecords{group, []OffsetsRecord{rec}})
}

// flushOffsetsRecords hands out the records queued under the lock, each
// group's at once. Call it with c.mu held, as unlock does.
func (c *Coordinator) flushOffsetsRecords() {
	if len(c.offsetsPending) == 0 {
		return
	}
	for _, p := range c.offsetsPending {
		c.offsetsLog(p.group, p.records)
	}
	if cap(c.offsetsPending) > 64 { // a call that touched many groups (Reset, expiry) keeps nothing
		c.offsetsPending, c.offsetsPendingAt = nil, nil
		return
	}
	clear(c.offsetsPending)
	c.offsetsPending = c.offsetsPending[:0]
	clear(c.offsetsPendingAt)
}

// logOffset hands out the record of a committed offset. Call it with c.mu
// held.
func (c *Coordinator) logOffset(group, topic string, partition int32, o offset) {
	if c.offsetsLog == nil {
		return
	}
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata = o.off, o.epoch, o.meta
	v.CommitTimestamp = o.at.UnixMilli()
	c.emitOffsetsRecord(group, offsetKey(group, topic, partition), v.AppendTo(nil))
}

// logOffsetGone hands out the tombstone of a committed offset that was
// deleted or expired. Call it with c.mu held.
func (c *Coordinator) logOffsetGone(group, topic string, partition int32) {
	if c.offsetsLog != nil {
		c.emitOffsetsRecord(group, offsetKey(group, topic, partition), nil)
	}
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = offsetKeyVersion
	k.Group, k.Topic, k.Partition = group, topic, partition
	return k.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = groupKeyVersion
	k.Group = group
	return k.AppendTo(nil)
}

// logGroup hands out g's group metadata record, as Kafka writes it when a
// rebalance completes (the leader's assignment is stored, or no member is
// left and the group is Empty). Call it with c.mu held.
func (c *Coordinator) logGroup(g *group) {
	if c.offsetsLog == nil {
		return
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	v.CurrentStateTimestamp = c.clock.Now().UnixMilli()
	for _, m := range g.ordered() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID = m.id, m.instanceID
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalance.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.session.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol) // AppendTo copies
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	c.emitOffsetsRecord(g.name, groupKey(g.name), v.AppendTo(nil))
}

// logGroupGone hands out the tombstone of a deleted group. Call it with c.mu
// held.
func (c *Coordinator) logGroupGone(group string) {
	if c.offsetsLog != nil {
		c.emitOffsetsRecord(group, groupKey(group), nil)
	}
}
