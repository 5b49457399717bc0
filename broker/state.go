package broker

// Whole-broker state for the HTTP control plane: reset to empty and the
// history of rebalances.

import "github.com/vastfake/vastfake/coordinator"

// Reset empties the broker as if it had just started with no topics: every
// topic is deleted with its records, and every group with its committed
// offsets and the rebalance history, every transactional id with its open
// transaction, and every idempotent producer's state. Rules, faults, latency, the request log
// and open connections stay. Clients still running see their topics
// disappear (UNKNOWN_TOPIC_OR_PARTITION) and their groups forget them
// (UNKNOWN_MEMBER_ID), as after deleting them by hand. The topics' log
// memory is kept for the topics made after, so a test suite that resets
// one broker between tests does not map fresh memory for every test: the
// log's chunks (up to log.MaxFreeBytes) and the produce frames its batches
// were kept in (up to as much again, see bufferPool.own).
func (b *Broker) Reset() {
	for _, t := range b.data.all() {
		b.deleteTopic(t)
	}
	b.coord.Reset()
	// __consumer_offsets (kafka profile) starts again empty, as the groups
	// it recorded are gone: the tombstones Reset wrote go with it.
	if t := b.data.get(offsetsTopic); t != nil {
		b.deleteTopic(t)
	}
	b.appendMu.Lock()
	b.producers.Clear()
	b.appendMu.Unlock()
}

// Rebalances returns the last 1,000 finished rebalances of every group,
// oldest first: the generation, its members and what each was assigned
// (decode consumer assignments with kmsg.ConsumerMemberAssignment).
func (b *Broker) Rebalances() []coordinator.Rebalance { return b.coord.Rebalances() }
