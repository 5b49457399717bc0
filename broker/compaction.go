package broker

// Compaction and offset gaps: cleanup.policy=compact, on demand and on the
// broker's clock, and gaps a test makes without compacting.

import (
	"errors"
	"fmt"
	"time"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/log"
)

// WithCompactionInterval makes the broker compact every partition of every
// topic with cleanup.policy=compact each d on its clock, as Kafka's log
// cleaner does in the background: a partition is compacted when the bytes
// appended since its last compaction are at least min.cleanable.dirty.ratio
// (0.5 by default) of its cleanable bytes, or when a tombstone's delete
// horizon has passed. It is 0 (off) by default, so that a test's records
// stay as produced until it calls Compact; on a manual clock compaction
// runs when the test advances the clock past the interval.
func WithCompactionInterval(d time.Duration) Option {
	return func(c *config) { c.compactionEv = d }
}

// OffsetGap makes every partition of the topic named Topic leave Skip
// offsets unused once Every records (1 when 0) have been appended since the
// last gap, as compaction would leave them, so that an app can be run
// against gaps without a test driving them. It applies to a topic of that
// name whenever it exists, seeded or created by a client.
type OffsetGap struct {
	Topic string
	Skip  int64
	Every int64
}

// WithOffsetGaps sets offset gaps per topic name; a later gap for the same
// topic replaces an earlier one. New fails for an invalid topic name, a
// Skip below 1 or above 2^40, or a negative Every.
func WithOffsetGaps(gaps ...OffsetGap) Option {
	return func(c *config) {
		for _, g := range gaps {
			if !validTopicName(g.Topic) || g.Skip < 1 || g.Skip > maxGapSkip || g.Every < 0 {
				c.err = fmt.Errorf("vastfake: offset gap %+v: want a topic name, a skip of 1 to 2^40 and every >= 0", g)
				return
			}
			if c.gaps == nil {
				c.gaps = map[string]log.Gap{}
			}
			c.gaps[g.Topic] = log.Gap{Skip: g.Skip, Every: g.Every}
		}
	}
}

// maxGapSkip bounds one configured gap, so that a partition can take a
// gap after every batch for a very long time before log.MaxOffset.
const maxGapSkip = 1 << 40

// ErrNotCompacted is returned by Compact for a topic whose cleanup.policy
// does not include compact.
var ErrNotCompacted = errors.New("topic's cleanup.policy does not include compact")

// ErrUnknownPartition is returned for a topic or partition that does not
// exist.
var ErrUnknownPartition = errors.New("unknown topic or partition")

// PartitionCompaction is what compacting one partition did.
type PartitionCompaction struct {
	Partition int32
	log.CompactResult
}

// Compact compacts every partition of a topic with cleanup.policy=compact
// now, on the broker's clock, as Kafka's log cleaner would (see
// log.Partition.Compact): in every batch but each partition's last and
// before its last stable offset, only the newest committed record of each
// key stays, aborted transactions' records go, and tombstones and the
// markers of transactions with no record left go once delete.retention.ms
// has passed since the compaction that first found them removable;
// min.compaction.lag.ms holds back young batches; min.cleanable.dirty.ratio
// is not consulted. Offsets keep their values, so consumers see gaps.
// Readers and producers of the topic wait only while each partition's new
// batches are swapped in. It returns ErrUnknownPartition for a topic that
// does not exist and ErrNotCompacted for one that is not compacted.
func (b *Broker) Compact(topic string) ([]PartitionCompaction, error) {
	t := b.data.get(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPartition, topic)
	}
	cfg := t.config()
	if !cfg.compact {
		return nil, fmt.Errorf("%w: %s", ErrNotCompacted, topic)
	}
	opts := b.compactOptions(t, cfg, b.clock.Now())
	opts.MinDirtyRatio = 0
	out := make([]PartitionCompaction, 0, len(t.partitions))
	for i, p := range t.partitions {
		res, err := p.Compact(opts)
		if err != nil {
			return out, fmt.Errorf("vastfake: compact %s-%d: %w", topic, i, err)
		}
		out = append(out, PartitionCompaction{Partition: int32(i), CompactResult: res})
	}
	return out, nil
}

// offsetsMergedBatchBytes is how large the batches compaction merges
// __consumer_offsets' one-commit batches into may grow
// (log.CompactOptions.MergeBatchBytes): a fetch of the topic stays small,
// and a committed offset costs its record rather than a batch header and
// an index entry.
const offsetsMergedBatchBytes = 64 << 10

// compactOptions returns how t's partitions are compacted at now: its
// configs (cfg), the broker's decompression turns and, for
// __consumer_offsets, merged batches.
func (b *Broker) compactOptions(t *topic, cfg topicConfig, now time.Time) log.CompactOptions {
	opts := cfg.compactOptions(now)
	opts.Turn = b.storedBatchTurn
	if t.name == offsetsTopic && t.internal {
		opts.MergeBatchBytes = offsetsMergedBatchBytes
	}
	return opts
}

// compactDirty is the periodic compaction: every compacted topic's
// partitions whose dirty ratio calls for it. A partition that fails to
// compact is logged and left as it was.
func (b *Broker) compactDirty() {
	now := b.clock.Now()
	for _, t := range b.data.listed() { // __consumer_offsets too
		cfg := t.config()
		if !cfg.compact {
			continue
		}
		opts := b.compactOptions(t, cfg, now)
		for i, p := range t.partitions {
			if b.ctx.Err() != nil {
				return // Close waits for this pass: end it
			}
			if _, err := p.Compact(opts); err != nil && !errors.Is(err, errClosing) {
				b.log.Error("compaction failed", "topic", t.name, "partition", i, "err", err)
			}
		}
	}
}

// scheduleCompaction runs compactDirty every compaction interval on the
// broker's clock, when one is set.
func (b *Broker) scheduleCompaction() {
	b.sweepMu.Lock()
	defer b.sweepMu.Unlock()
	if b.ctx.Err() != nil || b.cfg.compactionEv <= 0 {
		return
	}
	b.stopCompact = clock.Every(b.clock, b.cfg.compactionEv, func() { b.background(b.compactDirty) })
}

// SkipOffsets makes the next batch produced to a partition start n offsets
// past its high watermark, leaving the gap compaction leaves: consumers,
// ListOffsets, lag and inspection see it once that batch is in, as they
// would after compaction. Skips before one batch add up. It returns
// ErrUnknownPartition for a partition that does not exist (or of the
// internal __consumer_offsets), and an error
// wrapping log.ErrSkip for n < 1 or a skip past offset 2^62.
func (b *Broker) SkipOffsets(topic string, partition int32, n int64) error {
	part, _ := lookupWritable(b.data.get(topic), partition, false)
	if part == nil {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, partition)
	}
	if err := part.SkipOffsets(n); err != nil {
		return fmt.Errorf("skip %d offsets of %s-%d: %w", n, topic, partition, err)
	}
	return nil
}

// errClosing stops a compaction waiting for a turn when the broker closes.
var errClosing = errors.New("vastfake: the broker is closing")

// storedBatchTurn takes one of the broker's decompression turns for a
// compaction or a ListOffsets(max timestamp) about to decompress a stored
// batch (see startDecompression), and returns the function that gives it
// back: they and compressed produces share the bound on decompressions at
// once. It returns errClosing if the broker closes first.
func (b *Broker) storedBatchTurn() (func(), error) {
	if !b.startDecompression(b.ctx.Done()) {
		return nil, errClosing
	}
	return func() { <-b.decompress }, nil
}
