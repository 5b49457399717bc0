package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// TestOffsetMetadataBound: a committed offset's metadata is bounded by
// offset.metadata.max.bytes (4096 by default, Config.OffsetMetadataMaxBytes
// otherwise): a longer one gets OFFSET_METADATA_TOO_LARGE and is not
// stored, while the request's other partitions are, as in Kafka.
func TestOffsetMetadataBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		max  int // Config.OffsetMetadataMaxBytes
		fits int
	}{{"Kafka's default", 0, 4096}, {"configured", 10, 10}, {"empty only", -1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, rules.VAST(), func(c *Config) { c.OffsetMetadataMaxBytes = tc.max })
			req := commitReq("g", "", -1, "t", map[int32]int64{0: 1, 1: 2})
			for i := range req.Topics[0].Partitions {
				p := &req.Topics[0].Partitions[i]
				p.Metadata = kmsg.StringPtr(strings.Repeat("m", tc.fits+int(p.Partition))) // 1 is one byte over
			}
			resp := h.c.OffsetCommit(NoCaller, req)
			codes := map[int32]int16{}
			for _, p := range resp.Topics[0].Partitions {
				codes[p.Partition] = p.ErrorCode
			}
			assert.Equal(t, map[int32]int16{0: errNone, 1: kerr.OffsetMetadataTooLarge.Code}, codes)
			gi, ok := h.c.Group("g")
			require.True(t, ok)
			require.Len(t, gi.Offsets["t"], 1, "only the partition within the bound is stored")
			assert.Equal(t, int64(1), gi.Offsets["t"][0].Offset)
			assert.Len(t, gi.Offsets["t"][0].Metadata, tc.fits)
		})
	}
}

// groupBytes is what the coordinator keeps for a group's members.
func groupBytes(c *Coordinator, group string) int {
	c.mu.Lock()
	defer c.unlock()
	if g := c.groups[group]; g != nil {
		return g.storedBytes("")
	}
	return 0
}

// TestGroupMetadataBound: what a group's members make the coordinator keep
// (ids, protocols with metadata, assignments) is bounded by
// GroupMetadataMaxBytes, Kafka's bound on a group's record: members keep
// joining with large metadata and the ones that would cross it get
// GROUP_MAX_SIZE_REACHED; a leader assigning more than fits gets
// UNKNOWN_SERVER_ERROR, nothing is stored and the group rebalances.
func TestGroupMetadataBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	h.stable("g", 1) // a small member that will not rejoin
	big := bytes.Repeat([]byte("x"), 300<<10)
	join := func() *kmsg.JoinGroupRequest {
		req := joinReq("g", "")
		req.Version = 3 // joins at once, no MEMBER_ID_REQUIRED round
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: big}}
		return req
	}
	var chans []<-chan *kmsg.JoinGroupResponse
	for i := range 3 {
		chans = append(chans, h.joinAsync(join()))
		h.waitJoining("g", i+1)
	}
	for range 2 {
		assert.Equal(t, kerr.GroupMaxSizeReached.Code, h.join(join()).ErrorCode, "a fourth member of 300 KiB does not fit in 1 MiB")
	}
	assert.LessOrEqual(t, groupBytes(h.c, "g"), GroupMetadataMaxBytes)

	h.clk.Advance(10 * time.Second) // the first member's session runs out: the join completes
	var leader string
	var gen int32
	var ids []string
	for _, ch := range chans {
		r := get(t, ch)
		require.Equal(t, errNone, r.ErrorCode)
		leader, gen = r.LeaderID, r.Generation
		ids = append(ids, r.MemberID)
	}
	var follow []<-chan *kmsg.SyncGroupResponse
	assign := map[string]string{}
	for _, id := range ids {
		assign[id] = strings.Repeat("a", 100<<10)
		if id != leader {
			follow = append(follow, h.syncAsync(syncReq("g", id, gen, nil)))
		}
	}
	h.waitSyncing("g", len(follow))
	lr := h.c.SyncGroup(context.Background(), syncReq("g", leader, gen, assign))
	assert.Equal(t, kerr.UnknownServerError.Code, lr.ErrorCode, "3 x 400 KiB do not fit")
	for _, ch := range follow {
		assert.Equal(t, kerr.UnknownServerError.Code, get(t, ch).ErrorCode)
	}
	assert.Equal(t, "PreparingRebalance", h.state("g"))
	assert.LessOrEqual(t, groupBytes(h.c, "g"), GroupMetadataMaxBytes)
	gi, _ := h.c.Group("g")
	require.Len(t, gi.Members, 3)
	for _, m := range gi.Members {
		assert.Empty(t, m.Assignment, fmt.Sprintf("member %s", m.MemberID))
	}
}

// metaBytes is the coordinator's count of committed metadata bytes.
func metaBytes(c *Coordinator) int {
	c.mu.Lock()
	defer c.unlock()
	return c.metaBytes
}

// TestOffsetMetadataTotalBound: the metadata of all committed offsets
// together is bounded (OffsetMetadataTotalMaxBytes, lowered here): a commit
// whose metadata does not fit gets OFFSET_METADATA_TOO_LARGE, one that
// shrinks or keeps its metadata fits, and deleting a group, a topic's
// offsets or failing over gives the room back.
func TestOffsetMetadataTotalBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	h.c.mu.Lock()
	h.c.metaBudget = 100
	h.c.unlock()
	commit := func(group, topic string, md int) int16 {
		req := commitReq(group, "", -1, topic, map[int32]int64{0: 1})
		req.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("m", md))
		return h.c.OffsetCommit(NoCaller, req).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, errNone, commit("a", "t", 60))
	assert.Equal(t, kerr.OffsetMetadataTooLarge.Code, commit("b", "t", 60), "60 + 60 > 100")
	assert.Equal(t, errNone, commit("b", "t", 40))
	assert.Equal(t, errNone, commit("a", "t", 60), "the same size again fits")
	assert.Equal(t, errNone, commit("a", "t", 10), "shrinking fits")
	assert.Equal(t, 50, metaBytes(h.c))

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"a"}
	require.Equal(t, errNone, h.c.DeleteGroups(del).Groups[0].ErrorCode)
	assert.Equal(t, 40, metaBytes(h.c))
	h.c.TopicDeleted("t")
	assert.Equal(t, 0, metaBytes(h.c))
	assert.Equal(t, errNone, commit("c", "u", 100))
	h.c.Failover()
	assert.Equal(t, 0, metaBytes(h.c))
	assert.Equal(t, errNone, commit("c", "u", 30))
	h.clk.Advance(rules.Kafka().OffsetsRetention)
	assert.Equal(t, 0, metaBytes(h.c), "expired offsets give their room back")
}

// TestGroupIDBound: a group the coordinator creates has a name of at most
// MaxGroupIDBytes, the longest Kafka can write into its offsets records:
// JoinGroup and OffsetCommit naming a longer one get INVALID_GROUP_ID and
// create nothing.
func TestGroupIDBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	long := strings.Repeat("g", MaxGroupIDBytes+1)
	assert.Equal(t, kerr.InvalidGroupID.Code, h.join(joinReq(long, "")).ErrorCode)
	resp := h.c.OffsetCommit(NoCaller, commitReq(long, "", -1, "t", map[int32]int64{0: 1}))
	assert.Equal(t, kerr.InvalidGroupID.Code, resp.Topics[0].Partitions[0].ErrorCode)
	assert.Empty(t, h.c.Groups())
	fits := strings.Repeat("g", MaxGroupIDBytes)
	assert.Equal(t, kerr.MemberIDRequired.Code, h.join(joinReq(fits, "")).ErrorCode)
}
