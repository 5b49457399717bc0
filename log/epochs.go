package log

// Leader epochs: what Kafka's LeaderEpochFileCache keeps for a partition.
// Each leader that takes a partition over records the epoch it leads with
// and the offset its first batch will get (BeginLeaderEpoch), and every
// batch appended from then on carries that epoch in its header's partition
// leader epoch field. The history answers OffsetForLeaderEpoch (KIP-320),
// with which a consumer that read through an election checks that the log
// it read was not truncated, and the leader epoch of ListOffsets answers.

import "sort"

// EpochStart is one entry of a partition's leader-epoch history: the
// leader epoch and the first offset written under it.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// BeginLeaderEpoch records that a leader took the partition over with
// epoch, as Kafka's new leader assigns its epoch the log end offset when it
// becomes leader: batches appended from now on carry epoch, and entries
// of the history at epoch or later, or starting at or after the high
// watermark, are dropped first (they held no batch). An epoch no higher
// than the current one changes nothing: epochs only grow.
func (p *Partition) BeginLeaderEpoch(epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if epoch <= p.leaderEpochLocked() || epoch < 0 {
		return
	}
	if p.epochs == nil {
		p.epochs = []EpochStart{{Epoch: 0, StartOffset: p.logStart}}
	}
	kept := p.epochs[:0]
	for _, e := range p.epochs {
		if e.Epoch < epoch && e.StartOffset < p.hwm {
			kept = append(kept, e)
		}
	}
	p.epochs = append(kept, EpochStart{Epoch: epoch, StartOffset: p.hwm})
}

// leaderEpochLocked is the epoch batches are appended with: the history's
// latest. A partition no leader took over yet is at epoch 0.
func (p *Partition) leaderEpochLocked() int32 {
	if len(p.epochs) == 0 {
		return 0
	}
	return p.epochs[len(p.epochs)-1].Epoch
}

// LeaderEpoch returns the epoch batches are appended with now.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaderEpochLocked()
}

// LeaderEpochs returns the partition's leader-epoch history, oldest first:
// every epoch that still has a batch in the log or is the latest, with the
// first offset written under it (the log start for the oldest).
func (p *Partition) LeaderEpochs() []EpochStart {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.epochs == nil {
		return []EpochStart{{Epoch: 0, StartOffset: p.logStart}}
	}
	return append([]EpochStart(nil), p.epochs...)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for a consumer, as
// Kafka's LeaderEpochFileCache.endOffsetFor does with the log end offset:
// for the latest epoch, that epoch and the high watermark (the log end:
// every replica shares the log); for an older one, the greatest epoch of
// the history at or below it and the start offset of the first epoch
// above it, where the log written under it ends; for one below every
// epoch the history keeps, that epoch itself and the start of the oldest
// kept; and for -1, or an epoch above every one the history has (a future
// epoch), -1 and -1 (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
func (p *Partition) EndOffsetForEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	epochs := p.epochs
	if epochs == nil {
		epochs = []EpochStart{{Epoch: 0, StartOffset: p.logStart}}
	}
	if epoch < 0 {
		return -1, -1
	}
	if epochs[len(epochs)-1].Epoch == epoch {
		return epoch, p.hwm
	}
	higher := sort.Search(len(epochs), func(i int) bool { return epochs[i].Epoch > epoch })
	switch {
	case higher == len(epochs):
		return -1, -1
	case higher == 0:
		return epoch, epochs[0].StartOffset
	}
	return epochs[higher-1].Epoch, epochs[higher].StartOffset
}

// EpochForOffset returns the leader epoch offset was written under, as
// Kafka's epochForOffset finds it in the history: the epoch of the last
// entry starting at or before it, or -1 when the history starts after it.
func (p *Partition) EpochForOffset(offset int64) int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.epochs == nil {
		if offset < p.logStart {
			return -1
		}
		return 0
	}
	at := sort.Search(len(p.epochs), func(i int) bool { return p.epochs[i].StartOffset > offset })
	if at == 0 {
		return -1
	}
	return p.epochs[at-1].Epoch
}

// truncateEpochsLocked drops the history below the log start, as Kafka's
// truncateFromStart does when the log start moves: entries starting at or
// before it go, the last of them kept as starting at the log start.
func (p *Partition) truncateEpochsLocked() {
	n := 0
	for n < len(p.epochs) && p.epochs[n].StartOffset <= p.logStart {
		n++
	}
	if n == 0 {
		return
	}
	last := p.epochs[n-1]
	last.StartOffset = p.logStart
	rest := append(p.epochs[:0:0], last)
	p.epochs = append(rest, p.epochs[n:]...)
}
