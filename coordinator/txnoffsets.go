package coordinator

// Transactional offsets, as Kafka's group coordinator keeps them: a
// TxnOffsetCommit writes its offsets to __consumer_offsets at once, in a
// transactional batch of the producer's id and epoch that read_committed
// readers cannot see until the transaction's marker (Config.TxnOffsetsTopic),
// and keeps them pending; EndTxn writes only the markers, and a commit then
// makes the pending offsets the group's committed offsets, a chunk at a
// time (applyOffsetsChunk), so that no other client waits on the
// coordinator for more than one chunk however many offsets a transaction
// holds. Until an offset is applied, OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for its partition, as Kafka answers it while the
// marker is being written. Of a transactional offset and a plain one for the
// same partition, the one committed later wins, as Kafka keeps whichever
// record is later in __consumer_offsets.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// applyOffsetsChunk is how many pending offsets a committed transaction
// makes committed under one hold of the coordinator's lock: about a
// millisecond's work.
const applyOffsetsChunk = 4096

// TxnOffsetRecords are the records one TxnOffsetCommit writes to a group's
// partition of __consumer_offsets, in Kafka's key and value formats, to be
// written as one transactional batch of the producer's id and epoch.
type TxnOffsetRecords struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	Keys, Values  [][]byte
}

// pendingOffsets are the offsets one transaction commits for one group,
// in the order TxnOffsetCommit first named their partitions (a partition
// named again keeps its place and takes the later offset). Once the
// transaction commits they are applied from next on; entries before next
// are applied. It is registered in txns.pending from its first offset until
// it is applied whole or dropped.
type pendingOffsets struct {
	group   string
	entries []pendingOffset
	index   map[TopicPartition]int // the entry of each partition not gone (applied once before next)
	next    int
	meta    int // metadata bytes of the entries not applied or gone, counted in Coordinator.metaBytes
}

type pendingOffset struct {
	tp   TopicPartition
	o    offset
	gone bool // its topic was deleted
}

// registered reports whether po is still to be applied or dropped: Reset
// and Close forget every pending offset.
func (c *Coordinator) registered(po *pendingOffsets) bool {
	_, ok := c.txns.pending[po.group][po]
	return ok
}

// nextOffsetSeq numbers a committed or pending offset in the order of the
// records Kafka would write for them. Call it with c.mu held.
func (c *Coordinator) nextOffsetSeq() uint64 {
	c.offsetSeq++
	return c.offsetSeq
}

// pendTxnOffset keeps one partition's offset in t until it ends and
// returns it, or the error refusing it.
func (c *Coordinator) pendTxnOffset(t *transaction, group, topic string, rp kmsg.TxnOffsetCommitRequestTopicPartition) (offset, int16) {
	key := TopicPartition{topic, rp.Partition}
	po := t.offsets[group]
	var old offset
	i, had := -1, false
	if po != nil {
		i, had = po.index[key]
		if had {
			old = po.entries[i].o
		}
	}
	meta := ""
	if rp.Metadata != nil {
		meta = *rp.Metadata
	}
	if len(meta) > c.maxMetadata || len(meta) > len(old.meta) && c.metaBytes-len(old.meta)+len(meta) > c.metaBudget {
		return offset{}, kerr.OffsetMetadataTooLarge.Code
	}
	if po == nil {
		po = &pendingOffsets{group: group, index: make(map[TopicPartition]int)}
		if t.offsets == nil {
			t.offsets = make(map[string]*pendingOffsets)
		}
		t.offsets[group] = po
		if c.txns.pending[group] == nil {
			c.txns.pending[group] = make(map[*pendingOffsets]struct{})
		}
		c.txns.pending[group][po] = struct{}{}
	}
	o := offset{off: rp.Offset, epoch: rp.LeaderEpoch, meta: meta, at: c.clock.Now(), seq: c.nextOffsetSeq()}
	c.metaBytes += len(meta) - len(old.meta)
	po.meta += len(meta) - len(old.meta)
	if had {
		po.entries[i].o = o
	} else {
		po.index[key] = len(po.entries)
		po.entries = append(po.entries, pendingOffset{tp: key, o: o})
	}
	return o, errNone
}

// offsetRecord returns the __consumer_offsets key and value of one offset.
func offsetRecord(group string, tp TopicPartition, o offset) (key, value []byte) {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata = o.off, o.epoch, o.meta
	v.CommitTimestamp = o.at.UnixMilli()
	return offsetKey(group, tp.Topic, tp.Partition), v.AppendTo(nil)
}

// dropPendingOffsets forgets po's offsets not yet applied: its transaction
// aborted, or the coordinator was reset. It costs the same whatever their
// number. Call it with c.mu held.
func (c *Coordinator) dropPendingOffsets(po *pendingOffsets) {
	if !c.registered(po) {
		return
	}
	c.metaBytes -= po.meta
	po.meta = 0
	ps := c.txns.pending[po.group]
	delete(ps, po)
	if len(ps) == 0 {
		delete(c.txns.pending, po.group)
	}
}

// applyPendingOffsets makes up to budget of the offsets of the committed
// transactions' pending offsets in list their groups' committed offsets,
// creating a group that is gone, and returns what is left to apply. An
// offset committed later than the pending one (a plain OffsetCommit after
// the TxnOffsetCommit) is kept. Call it with c.mu held.
func (c *Coordinator) applyPendingOffsets(list []*pendingOffsets, budget int) []*pendingOffsets {
	for len(list) > 0 && budget > 0 {
		po := list[0]
		if !c.registered(po) || c.closed {
			c.dropPendingOffsets(po)
			list = list[1:]
			continue
		}
		g := c.lookup(po.group)
		if g == nil && len(po.group) <= MaxGroupIDBytes {
			g = c.newGroup(po.group)
		}
		var earliest time.Time // of the offsets this chunk commits
		for ; po.next < len(po.entries) && budget > 0; po.next++ {
			e := &po.entries[po.next]
			if e.gone {
				continue
			}
			budget--
			c.metaBytes -= len(e.o.meta)
			po.meta -= len(e.o.meta)
			ps := g.offsets[e.tp.Topic]
			if ps == nil {
				ps = make(map[int32]offset)
				g.offsets[e.tp.Topic] = ps
			}
			if old, ok := ps[e.tp.Partition]; ok && old.seq > e.o.seq {
				continue
			}
			c.metaBytes += len(e.o.meta) - len(ps[e.tp.Partition].meta)
			ps[e.tp.Partition] = e.o
			if earliest.IsZero() || e.o.at.Before(earliest) {
				earliest = e.o.at
			}
		}
		if !earliest.IsZero() {
			c.offsetsCommitted(g, earliest)
		}
		if po.next == len(po.entries) {
			c.dropPendingOffsets(po)
			list = list[1:]
		}
	}
	return list
}

// unstableOffset reports whether an open transaction, or a committed one
// whose offsets are still being applied, holds an offset for the group's
// partition: OffsetFetch with require_stable answers it
// UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) unstableOffset(group, topic string, partition int32) bool {
	for po := range c.txns.pending[group] {
		if i, ok := po.index[TopicPartition{topic, partition}]; ok && i >= po.next {
			return true
		}
	}
	return false
}

// pendingTopicDeleted forgets a deleted topic's pending offsets. Call it
// with c.mu held.
func (c *Coordinator) pendingTopicDeleted(topic string) {
	for _, ps := range c.txns.pending {
		for po := range ps {
			for tp, i := range po.index {
				if tp.Topic != topic || i < po.next {
					continue
				}
				e := &po.entries[i]
				e.gone = true
				c.metaBytes -= len(e.o.meta)
				po.meta -= len(e.o.meta)
				delete(po.index, tp)
			}
		}
	}
}
