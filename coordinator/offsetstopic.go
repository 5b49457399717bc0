package coordinator

// The records of __consumer_offsets: Kafka's group coordinator writes every
// offset commit and every group change to its internal topic, and tools that
// monitor lag (Burrow's consumer module, scripts that tail the topic) read
// them there. The coordinator keeps its state in memory; with
// Config.OffsetsTopic set it also hands out, at each change, the record
// Kafka would write, so that the broker can append it to the topic (kafka
// profile). Committed offsets are still served from the coordinator's
// memory, never read back from the topic.

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
	c.offsetsLog(group, offsetKey(group, topic, partition), v.AppendTo(nil))
}

// logOffsetGone hands out the tombstone of a committed offset that was
// deleted or expired. Call it with c.mu held.
func (c *Coordinator) logOffsetGone(group, topic string, partition int32) {
	if c.offsetsLog != nil {
		c.offsetsLog(group, offsetKey(group, topic, partition), nil)
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
	c.offsetsLog(g.name, groupKey(g.name), v.AppendTo(nil))
}

// logGroupGone hands out the tombstone of a deleted group. Call it with c.mu
// held.
func (c *Coordinator) logGroupGone(group string) {
	if c.offsetsLog != nil {
		c.offsetsLog(group, groupKey(group), nil)
	}
}
