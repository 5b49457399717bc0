package coordinator

import (
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

func fetchV7(group string, topics map[string][]int32) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	if topics != nil {
		r.Topics = []kmsg.OffsetFetchRequestTopic{}
		for t, ps := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: ps})
		}
	}
	return r
}

func TestGenerationMinusOneCommits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())

	// assign()+commit: the commit creates the group, Empty.
	resp := h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 10, 1: 20}))
	assert.Equal(t, []int16{errNone, errNone}, commitCodes(resp))
	gi, ok := h.c.Group("g")
	require.True(t, ok)
	assert.Equal(t, "Empty", gi.State)
	assert.Equal(t, OffsetInfo{Offset: 10, LeaderEpoch: 3, Metadata: "meta"}, gi.Offsets["t"][0])
	off, ok := h.c.CommittedOffset("g", "t", 1)
	assert.True(t, ok)
	assert.Equal(t, int64(20), off)

	// v0 carries no generation: it is a -1 commit.
	v0 := commitReq("g", "", 0, "t", map[int32]int64{0: 11})
	v0.Version = 0
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, v0)))
	gi, _ = h.c.Group("g")
	assert.Equal(t, int32(-1), gi.Offsets["t"][0].LeaderEpoch, "v0-v5 carry no leader epoch")

	// With active members an admin reset is refused, as Kafka does.
	ids, gen := h.stable("g", 1)
	a := ids[0]
	assert.Equal(t, []int16{kerr.UnknownMemberID.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 0}))))
	assert.Equal(t, []int16{kerr.IllegalGeneration.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", a, -1, "t", map[int32]int64{0: 0}))))
	assert.Equal(t, []int16{kerr.IllegalGeneration.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", a, gen+1, "t", map[int32]int64{0: 0}))))
	assert.Equal(t, []int16{kerr.UnknownMemberID.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "x", gen, "t", map[int32]int64{0: 0}))))
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", a, gen, "t", map[int32]int64{0: 12}))))
	off, _ = h.c.CommittedOffset("g", "t", 0)
	assert.Equal(t, int64(12), off)

	// Once the last member leaves, resets work again.
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 1
	l.Group = "g"
	l.MemberID = a
	require.Equal(t, errNone, h.c.LeaveGroup(l).ErrorCode)
	assert.Equal(t, "Empty", h.state("g"))
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 0}))))
	assert.Equal(t, []int16{kerr.UnknownMemberID.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", a, gen+1, "t", map[int32]int64{0: 0}))),
		"a member commit to an Empty group")

	// A member commit to a group that does not exist.
	assert.Equal(t, []int16{kerr.GroupIDNotFound.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("nope", "m", 1, "t", map[int32]int64{0: 0}))))
	v8 := commitReq("nope", "m", 1, "t", map[int32]int64{0: 0})
	v8.Version = 8
	assert.Equal(t, []int16{kerr.IllegalGeneration.Code}, commitCodes(h.c.OffsetCommit(NoCaller, v8)))
	_, ok = h.c.Group("nope")
	assert.False(t, ok)
}

func TestOffsetFetch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "b", map[int32]int64{1: 7, 0: 5}))
	h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "a", map[int32]int64{0: 1}))

	// v0-v7: one group; nil topics returns everything, sorted.
	resp := h.c.OffsetFetch(fetchV7("g", nil))
	require.Equal(t, errNone, resp.ErrorCode)
	require.Len(t, resp.Topics, 2)
	assert.Equal(t, "a", resp.Topics[0].Topic)
	assert.Equal(t, "b", resp.Topics[1].Topic)
	require.Len(t, resp.Topics[1].Partitions, 2)
	p := resp.Topics[1].Partitions[1]
	assert.Equal(t, int32(1), p.Partition)
	assert.Equal(t, int64(7), p.Offset)
	assert.Equal(t, int32(3), p.LeaderEpoch)
	assert.Equal(t, "meta", *p.Metadata)

	// A partition with no commit is -1.
	resp = h.c.OffsetFetch(fetchV7("g", map[string][]int32{"b": {0, 9}}))
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, int64(5), resp.Topics[0].Partitions[0].Offset)
	assert.Equal(t, int64(-1), resp.Topics[0].Partitions[1].Offset)
	assert.Equal(t, int32(-1), resp.Topics[0].Partitions[1].LeaderEpoch)

	// An unknown group is not an error.
	resp = h.c.OffsetFetch(fetchV7("nope", map[string][]int32{"a": {0}}))
	assert.Equal(t, errNone, resp.ErrorCode)
	assert.Equal(t, int64(-1), resp.Topics[0].Partitions[0].Offset)
	assert.Empty(t, h.c.OffsetFetch(fetchV7("nope", nil)).Topics)
	_, ok := h.c.Group("nope")
	assert.False(t, ok, "fetching does not create a group")

	// v8+: a batch of groups.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 9
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "a", Partitions: []int32{0, 1}}}},
		{Group: "g"},
		{Group: "nope", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "a", Partitions: []int32{0}}}},
	}
	br := h.c.OffsetFetch(req)
	require.Len(t, br.Groups, 3)
	assert.Equal(t, int64(1), br.Groups[0].Topics[0].Partitions[0].Offset)
	assert.Equal(t, int64(-1), br.Groups[0].Topics[0].Partitions[1].Offset)
	assert.Len(t, br.Groups[1].Topics, 2)
	assert.Equal(t, errNone, br.Groups[2].ErrorCode)
	assert.Equal(t, int64(-1), br.Groups[2].Topics[0].Partitions[0].Offset)
}

func TestFailoverAndTopicDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 1)
	h.c.OffsetCommit(NoCaller, commitReq("g", ids[0], gen, "t", map[int32]int64{0: 5}))
	h.c.OffsetCommit(NoCaller, commitReq("g", ids[0], gen, "u", map[int32]int64{0: 6}))
	h.c.OffsetCommit(NoCaller, commitReq("h", "", -1, "t", map[int32]int64{0: 7}))

	h.c.TopicDeleted("t")
	_, ok := h.c.CommittedOffset("g", "t", 0)
	assert.False(t, ok)
	_, ok = h.c.CommittedOffset("h", "t", 0)
	assert.False(t, ok)
	off, ok := h.c.CommittedOffset("g", "u", 0)
	assert.True(t, ok)
	assert.Equal(t, int64(6), off)

	h.c.Failover()
	_, ok = h.c.CommittedOffset("g", "u", 0)
	assert.False(t, ok, "VAST does not replicate committed offsets")
	gi, ok := h.c.Group("g")
	require.True(t, ok, "groups survive a failover")
	assert.Equal(t, "Stable", gi.State)
	assert.Len(t, gi.Members, 1)
	assert.Empty(t, gi.Offsets)
	assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", ids[0], gen)).ErrorCode)
	assert.Equal(t, int64(-1), h.c.OffsetFetch(fetchV7("g", map[string][]int32{"u": {0}})).Topics[0].Partitions[0].Offset)
}

func TestOffsetRetention(t *testing.T) {
	t.Parallel()
	t.Run("kafka expires offsets of an empty group", func(t *testing.T) {
		h := newHarness(t, rules.Kafka())
		ids, gen := h.stable("g", 1)
		h.c.OffsetCommit(NoCaller, commitReq("g", ids[0], gen, "t", map[int32]int64{0: 5}))
		h.clk.Advance(10 * time.Second) // the session ends: Empty
		require.Equal(t, "Empty", h.state("g"))
		// A reset commit made a day later counts from its own time.
		h.clk.Advance(24 * time.Hour)
		h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{1: 6}))
		h.clk.Advance(6 * 24 * time.Hour)
		_, ok := h.c.CommittedOffset("g", "t", 0)
		assert.False(t, ok, "expired OffsetsRetention after the group became empty")
		_, ok = h.c.CommittedOffset("g", "t", 1)
		require.True(t, ok)
		h.clk.Advance(24*time.Hour - time.Second)
		_, ok = h.c.CommittedOffset("g", "t", 1)
		require.True(t, ok)
		h.clk.Advance(time.Second)
		_, ok = h.c.CommittedOffset("g", "t", 1)
		assert.False(t, ok)
		_, ok = h.c.Group("g")
		assert.False(t, ok, "an empty group without offsets is cleaned up")
	})
	t.Run("vast never expires", func(t *testing.T) {
		h := newHarness(t, rules.VAST())
		h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 5}))
		h.clk.Advance(365 * 24 * time.Hour)
		off, ok := h.c.CommittedOffset("g", "t", 0)
		assert.True(t, ok)
		assert.Equal(t, int64(5), off)
	})
}

func TestMaxGroups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		r       rules.Rules
		refused bool
	}{{"vast", rules.VAST(), true}, {"kafka", rules.Kafka(), false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.r)
			for i := range 256 {
				g := fmt.Sprintf("g%03d", i)
				if i%2 == 0 {
					h.memberID(g) // JoinGroup creates the group
				} else {
					require.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq(g, "", -1, "t", map[int32]int64{0: 1}))))
				}
			}
			join := h.join(joinReq("g256", ""))
			commit := commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g257", "", -1, "t", map[int32]int64{0: 1})))
			list := kmsg.NewPtrListGroupsRequest()
			list.Version = 5
			groups := h.c.ListGroups(list).Groups
			if tc.refused {
				assert.Equal(t, kerr.GroupMaxSizeReached.Code, join.ErrorCode)
				assert.Equal(t, []int16{kerr.GroupMaxSizeReached.Code}, commit)
				assert.Len(t, groups, 256)
				assert.Contains(t, h.log.String(), `"rule":"MaxGroups"`)
				// Existing groups still work.
				assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g001", "", -1, "t", map[int32]int64{0: 2}))))
				h.stable("g001", 1)
			} else {
				assert.Equal(t, kerr.MemberIDRequired.Code, join.ErrorCode)
				assert.Equal(t, []int16{errNone}, commit)
				assert.Len(t, groups, 258)
			}
		})
	}
}

// TestAbandonedGroupsAreDeleted follows Kafka's group cleanup: a group that
// is Empty with no committed offsets is deleted, by Kafka's periodic
// cleanup (here once it has been Empty for
// offsets.retention.check.interval.ms, 10 min), and at once when MaxGroups
// needs room. A group with committed offsets stays, and so does one holding
// a member id handed out on a connection that is still open.
func TestAbandonedGroupsAreDeleted(t *testing.T) {
	t.Parallel()
	t.Run("by Kafka's cleanup", func(t *testing.T) {
		h := newHarness(t, rules.VAST())
		h.memberID("never-joined") // the id expires with its session timeout
		ids, _ := h.stable("left", 1)
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group, leave.MemberID = 0, "left", ids[0]
		require.Equal(t, errNone, h.c.LeaveGroup(leave).ErrorCode)
		h.c.OffsetCommit(NoCaller, commitReq("committed", "", -1, "t", map[int32]int64{0: 1}))

		h.clk.Advance(10*time.Minute - time.Second)
		for _, g := range []string{"never-joined", "left", "committed"} {
			assert.Equal(t, "Empty", h.state(g), g)
		}
		h.clk.Advance(time.Second)
		assert.Equal(t, "none", h.state("never-joined"))
		assert.Equal(t, "none", h.state("left"))
		assert.Equal(t, "Empty", h.state("committed"), "a group with committed offsets stays")
		off, ok := h.c.CommittedOffset("committed", "t", 0)
		assert.True(t, ok)
		assert.Equal(t, int64(1), off)
	})
	t.Run("when MaxGroups needs room", func(t *testing.T) {
		h := newHarness(t, rules.VAST())
		conn, hangUp := context.WithCancel(context.Background())
		for i := range 254 {
			r := get(t, h.joinAsyncCtx(conn, joinReq(fmt.Sprintf("abandoned-%03d", i), "")))
			require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode)
		}
		h.memberID("joining") // its connection stays open
		h.c.OffsetCommit(NoCaller, commitReq("committed", "", -1, "t", map[int32]int64{0: 1}))
		assert.Equal(t, kerr.GroupMaxSizeReached.Code, h.join(joinReq("new", "")).ErrorCode, "the connection may still use its ids")

		hangUp()
		assert.Equal(t, kerr.MemberIDRequired.Code, h.join(joinReq("new", "")).ErrorCode)
		list := kmsg.NewPtrListGroupsRequest()
		var names []string
		for _, g := range h.c.ListGroups(list).Groups {
			names = append(names, g.Group)
		}
		assert.Equal(t, []string{"committed", "joining", "new"}, names)
	})
}

// TestGroupsStayReadableAfterClose: Close drops the member ids handed out
// with MEMBER_ID_REQUIRED, which leaves a group holding only such ids
// abandoned; reading groups after Close, however far the clock has moved,
// deletes nothing, as Close promises.
func TestGroupsStayReadableAfterClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	h.memberID("pending-only") // the id waits on a connection still open
	h.c.Close()
	h.clk.Advance(emptyGroupCleanup)
	gi, ok := h.c.Group("pending-only")
	require.True(t, ok, "a group read after Close is not deleted")
	assert.Equal(t, "Empty", gi.State)
	require.Len(t, h.c.Groups(), 1)
	assert.Equal(t, "pending-only", h.c.Groups()[0].Name)
}

func TestOffsetDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	md := kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"sub"}}
	id := h.memberID("g")
	req := joinReq("g", id)
	req.Protocols[0].Metadata = md.AppendTo(nil)
	r := h.join(req)
	require.Equal(t, errNone, r.ErrorCode)
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", id, r.Generation, nil)).ErrorCode)
	c := h.c.OffsetCommit(NoCaller, commitReq("g", id, r.Generation, "sub", map[int32]int64{0: 1}))
	require.Equal(t, []int16{errNone}, commitCodes(c))
	h.c.OffsetCommit(NoCaller, commitReq("g", id, r.Generation, "other", map[int32]int64{0: 1, 1: 2}))

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "sub", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}},
	}
	resp := h.c.OffsetDelete(del)
	require.Equal(t, errNone, resp.ErrorCode)
	assert.Equal(t, kerr.GroupSubscribedToTopic.Code, resp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, errNone, resp.Topics[1].Partitions[0].ErrorCode)
	_, ok := h.c.CommittedOffset("g", "other", 1)
	assert.False(t, ok)
	_, ok = h.c.CommittedOffset("g", "other", 0)
	assert.True(t, ok)
	_, ok = h.c.CommittedOffset("g", "sub", 0)
	assert.True(t, ok)

	del.Group = "nope"
	assert.Equal(t, kerr.GroupIDNotFound.Code, h.c.OffsetDelete(del).ErrorCode)

	// An Empty group's offsets can all be deleted.
	h.c.OffsetCommit(NoCaller, commitReq("e", "", -1, "sub", map[int32]int64{0: 1}))
	del.Group = "e"
	resp = h.c.OffsetDelete(del)
	assert.Equal(t, errNone, resp.Topics[0].Partitions[0].ErrorCode)
	_, ok = h.c.CommittedOffset("e", "sub", 0)
	assert.False(t, ok)

	// A non-consumer group with members refuses.
	cr := joinReq("connect", "")
	cr.Version = 3
	cr.ProtocolType = "connect"
	require.Equal(t, errNone, h.join(cr).ErrorCode)
	del.Group = "connect"
	assert.Equal(t, kerr.NonEmptyGroup.Code, h.c.OffsetDelete(del).ErrorCode)
}

func TestListGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	h.stable("stable", 1)
	h.c.OffsetCommit(NoCaller, commitReq("empty", "", -1, "t", map[int32]int64{0: 1}))
	a, b := h.memberID("preparing"), h.memberID("preparing")
	aj := h.joinAsync(joinReq("preparing", a))
	h.waitJoining("preparing", 1)
	_ = b

	list := func(v int16, states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		req.StatesFilter = states
		req.TypesFilter = types
		resp := h.c.ListGroups(req)
		require.Equal(t, errNone, resp.ErrorCode)
		var out []string
		for _, g := range resp.Groups {
			out = append(out, g.Group+":"+g.GroupState+":"+g.ProtocolType+":"+g.GroupType)
		}
		return out
	}
	assert.Equal(t, []string{"empty:Empty::classic", "preparing:PreparingRebalance:consumer:classic", "stable:Stable:consumer:classic"}, list(5, nil, nil))
	assert.Equal(t, []string{"empty:Empty::classic", "stable:Stable:consumer:classic"}, list(4, []string{"stable", "EMPTY"}, nil))
	assert.Empty(t, list(5, nil, []string{"consumer"}))
	assert.Len(t, list(5, nil, []string{"Classic"}), 3)
	assert.Len(t, list(3, []string{"Stable"}, []string{"consumer"}), 3, "filters are v4+/v5+ only")

	h.c.Close()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, aj).ErrorCode)
}

func TestDescribeGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, _ := h.stable("g", 2)
	desc := func(v int16, groups ...string) []kmsg.DescribeGroupsResponseGroup {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = v
		req.Groups = groups
		return h.c.DescribeGroups(req).Groups
	}
	gs := desc(5, "g", "nope")
	require.Len(t, gs, 2)
	g := gs[0]
	assert.Equal(t, errNone, g.ErrorCode)
	assert.Equal(t, "Stable", g.State)
	assert.Equal(t, "consumer", g.ProtocolType)
	assert.Equal(t, "range", g.Protocol)
	require.Len(t, g.Members, 2)
	assert.Equal(t, ids[0], g.Members[0].MemberID)
	assert.Equal(t, "md-range", string(g.Members[0].ProtocolMetadata))
	assert.Equal(t, "a-"+ids[1], string(g.Members[1].MemberAssignment))
	assert.Equal(t, "Dead", gs[1].State)
	assert.Equal(t, errNone, gs[1].ErrorCode, "v0-v5: an unknown group is Dead, no error")

	gs = desc(6, "nope")
	assert.Equal(t, "Dead", gs[0].State)
	assert.Equal(t, kerr.GroupIDNotFound.Code, gs[0].ErrorCode, "v6+: GROUP_ID_NOT_FOUND (KIP-1043)")
	require.NotNil(t, gs[0].ErrorMessage)
	assert.True(t, strings.Contains(*gs[0].ErrorMessage, "nope"))

	// While rebalancing, members show without protocol data.
	c := h.memberID("g")
	cj := h.joinAsync(joinReq("g", c))
	h.waitJoining("g", 1)
	g = desc(5, "g")[0]
	assert.Equal(t, "PreparingRebalance", g.State)
	assert.Equal(t, "", g.Protocol)
	assert.Len(t, g.Members, 3)
	assert.Empty(t, g.Members[0].MemberAssignment)
	h.c.Close()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, cj).ErrorCode)
}

func TestDeleteGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("active", 1)
	h.c.OffsetCommit(NoCaller, commitReq("active", ids[0], gen, "t", map[int32]int64{0: 1}))
	h.c.OffsetCommit(NoCaller, commitReq("idle", "", -1, "t", map[int32]int64{0: 1}))
	h.memberID("pending") // Empty with a pending member id

	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"active", "idle", "nope", "pending"}
	resp := h.c.DeleteGroups(req)
	require.Len(t, resp.Groups, 4)
	assert.Equal(t, kerr.NonEmptyGroup.Code, resp.Groups[0].ErrorCode)
	assert.Equal(t, errNone, resp.Groups[1].ErrorCode)
	assert.Equal(t, kerr.GroupIDNotFound.Code, resp.Groups[2].ErrorCode)
	assert.Equal(t, errNone, resp.Groups[3].ErrorCode)

	_, ok := h.c.Group("idle")
	assert.False(t, ok)
	_, ok = h.c.CommittedOffset("idle", "t", 0)
	assert.False(t, ok, "deleting a group deletes its offsets")
	_, ok = h.c.CommittedOffset("active", "t", 0)
	assert.True(t, ok)

	// A deleted group can be created again, from nothing.
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("idle", "", -1, "u", map[int32]int64{0: 3}))))
	gi, _ := h.c.Group("idle")
	assert.Equal(t, map[string]map[int32]OffsetInfo{"u": {0: {Offset: 3, LeaderEpoch: 3, Metadata: "meta"}}}, gi.Offsets)
}

func TestGroupsInspectionIsACopy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	h.stable("b", 1)
	h.c.OffsetCommit(NoCaller, commitReq("a", "", -1, "t", map[int32]int64{0: 1}))
	gs := h.c.Groups()
	require.Len(t, gs, 2)
	assert.Equal(t, "a", gs[0].Name)
	assert.Equal(t, "b", gs[1].Name)
	gs[1].Members[0].Assignment[0] = 'X'
	gs[0].Offsets["t"][0] = OffsetInfo{Offset: 99}
	again := h.c.Groups()
	assert.NotEqual(t, byte('X'), again[1].Members[0].Assignment[0])
	assert.Equal(t, int64(1), again[0].Offsets["t"][0].Offset)
}
