package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// offsetsEntry is one record the coordinator handed to Config.OffsetsTopic,
// decoded: an offset commit (or its tombstone) or a group's metadata (or
// its tombstone).
type offsetsEntry struct {
	group, topic string
	partition    int32
	offset       int64 // -1: tombstone
	metadata     bool  // a group metadata record
	members      int
}

func decodeOffsetsRecord(t *testing.T, group string, key, value []byte) offsetsEntry {
	t.Helper()
	e := offsetsEntry{group: group, offset: -1}
	if version := int16(key[0])<<8 | int16(key[1]); version == groupKeyVersion {
		var k kmsg.GroupMetadataKey
		require.NoError(t, k.ReadFrom(key))
		require.Equal(t, group, k.Group)
		e.metadata = true
		if value != nil {
			var v kmsg.GroupMetadataValue
			require.NoError(t, v.ReadFrom(value))
			e.offset, e.members = int64(v.Generation), len(v.Members)
		}
		return e
	}
	var k kmsg.OffsetCommitKey
	require.NoError(t, k.ReadFrom(key))
	require.Equal(t, group, k.Group)
	e.topic, e.partition = k.Topic, k.Partition
	if value != nil {
		var v kmsg.OffsetCommitValue
		require.NoError(t, v.ReadFrom(value))
		e.offset = v.Offset
	}
	return e
}

// TestOffsetsTopicRecordsEveryChange: every way a committed offset or a
// group changes hands out its record: a commit, OffsetDelete, expiry and
// the group cleanup (tombstones), a finished rebalance and the group
// going Empty (metadata).
func TestOffsetsTopicRecordsEveryChange(t *testing.T) {
	t.Parallel()
	var got []offsetsEntry
	r := rules.Kafka()
	r.OffsetsRetention = time.Hour
	h := newHarness(t, r, func(c *Config) {
		c.OffsetsTopic = func(group string, records []OffsetsRecord) {
			for _, r := range records {
				got = append(got, decodeOffsetsRecord(t, group, r.Key, r.Value))
			}
		}
	})
	take := func() []offsetsEntry {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		out := got
		got = nil
		return out
	}

	// A member joins and syncs: one metadata record of the Stable group.
	join := h.join(joinReq("g", ""))
	join = h.join(joinReq("g", join.MemberID))
	require.Zero(t, join.ErrorCode)
	sync := h.c.SyncGroup(context.Background(), syncReq("g", join.MemberID, join.Generation, map[string]string{join.MemberID: "a"}))
	require.Zero(t, sync.ErrorCode)
	assert.Equal(t, []offsetsEntry{{group: "g", offset: int64(join.Generation), metadata: true, members: 1}}, take())

	// Commits.
	h.c.OffsetCommit(NoCaller, commitReq("g", join.MemberID, join.Generation, "orders", map[int32]int64{0: 5, 1: 7}))
	commits := take()
	assert.ElementsMatch(t, []offsetsEntry{{group: "g", topic: "orders", partition: 0, offset: 5}, {group: "g", topic: "orders", partition: 1, offset: 7}}, commits)

	// Leaving empties the group: its metadata with no member.
	h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Group: "g", MemberID: join.MemberID})
	assert.Equal(t, []offsetsEntry{{group: "g", offset: int64(join.Generation + 1), metadata: true}}, take())

	// OffsetDelete tombstones one partition.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	dt := kmsg.NewOffsetDeleteRequestTopic()
	dt.Topic = "orders"
	dt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}
	del.Topics = append(del.Topics, dt)
	h.c.OffsetDelete(del)
	assert.Equal(t, []offsetsEntry{{group: "g", topic: "orders", partition: 1, offset: -1}}, take())

	// Expiry tombstones the rest, and the cleanup the group.
	h.clk.Advance(2 * time.Hour)
	assert.Equal(t, []offsetsEntry{{group: "g", topic: "orders", partition: 0, offset: -1}, {group: "g", offset: -1, metadata: true}}, take())
}

// TestOffsetsTopicRecordsOfOneCallGoTogether: the records one call makes
// for a group reach Config.OffsetsTopic at once, as the call ends, so that
// they are written as one batch, as Kafka writes an OffsetCommit's offsets:
// a commit of 100 partitions is one call of 100 records; a call touching
// several groups makes one call per group, in the order of their first
// records.
func TestOffsetsTopicRecordsOfOneCallGoTogether(t *testing.T) {
	type call struct {
		group   string
		records int
	}
	var calls []call
	h := newHarness(t, rules.Kafka(), func(c *Config) {
		c.OffsetsTopic = func(group string, records []OffsetsRecord) { calls = append(calls, call{group, len(records)}) }
	})
	offsets := map[int32]int64{}
	for p := range int32(100) {
		offsets[p] = int64(p)
	}
	require.Equal(t, 100, len(commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", offsets)))))
	assert.Equal(t, []call{{"g", 100}}, calls)
	calls = nil
	require.Equal(t, 1, len(commitCodes(h.c.OffsetCommit(NoCaller, commitReq("h", "", -1, "t", map[int32]int64{0: 1})))))
	h.c.TopicDeleted("t") // tombstones for both groups' offsets, in one call
	assert.ElementsMatch(t, []call{{"h", 1}, {"g", 100}, {"h", 1}}, calls)
}
