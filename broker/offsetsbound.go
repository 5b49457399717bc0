package broker

// __consumer_offsets stays compacted whatever a client sets on it. Kafka
// lets AlterConfigs and IncrementalAlterConfigs change an internal topic's
// configs (it refuses only creating, deleting and producing to it), and
// vastfake accepts them too, so DescribeConfigs shows what was set. But
// the topic lives in memory here, and every commit and group change adds a
// record to it: a cleanup.policy without compact, a large
// min.compaction.lag.ms or delete.retention.ms would let a commit storm
// grow it without bound (517 MiB in 10 s). So its compaction keeps Kafka's
// defaults for what holds records back, whatever is set: it is always
// compacted, with no minimum lag, tombstones kept at most 24 h
// (delete.retention.ms's default); settings that make it remove more
// (cleanup.policy with delete, retention.ms, retention.bytes, a shorter
// delete.retention.ms) apply as set.

import "time"

// offsetsTopicDeleteRetention is Kafka's delete.retention.ms default, the
// longest __consumer_offsets keeps a tombstone.
const offsetsTopicDeleteRetention = 24 * time.Hour

// pinOffsetsCompaction makes c, a config a client set on
// __consumer_offsets, compact as the bound on the topic needs.
func pinOffsetsCompaction(c *topicConfig) {
	c.compact = true
	c.minCompactionLag = 0
	c.deleteRetention = min(c.deleteRetention, offsetsTopicDeleteRetention)
}
