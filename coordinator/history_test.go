package coordinator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// TestRebalanceHistory records a generation when the leader hands out the
// assignments and when the last member leaves.
func TestRebalanceHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 2)

	hist := h.c.Rebalances()
	require.Len(t, hist, 1)
	r := hist[0]
	assert.Equal(t, "g", r.Group)
	assert.Equal(t, gen, r.Generation)
	assert.Equal(t, "Stable", r.State)
	assert.Equal(t, "range", r.Protocol)
	assert.Equal(t, h.clk.Now(), r.Time)
	require.Len(t, r.Members, 2)
	assert.Equal(t, ids[0], r.Members[0].MemberID)
	assert.Equal(t, "a-"+ids[1], string(r.Members[1].Assignment))

	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 5
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}, {MemberID: ids[1]}}
	require.Equal(t, errNone, h.c.LeaveGroup(l).ErrorCode)
	h.waitUntil("group is Empty", func() bool { return h.c.groups["g"].state == stateEmpty })

	hist = h.c.Rebalances()
	require.Len(t, hist, 2)
	assert.Equal(t, "Empty", hist[1].State)
	assert.Equal(t, gen+1, hist[1].Generation)
	assert.Empty(t, hist[1].Members)
}

// TestReset deletes groups with members and offsets; a blocked JoinGroup is
// answered and the next join creates the group anew.
func TestReset(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 1)
	require.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", ids[0], gen, "t", map[int32]int64{0: 5}))))
	// A second member waits in JoinGroup for the first to rejoin.
	waiting := h.joinAsync(joinReq("g", h.memberID("g")))
	h.waitJoining("g", 1)

	h.c.Reset()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, waiting).ErrorCode)
	assert.Empty(t, h.c.Groups())
	assert.Empty(t, h.c.Rebalances())
	_, ok := h.c.CommittedOffset("g", "t", 0)
	assert.False(t, ok)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("g", ids[0], gen)).ErrorCode)

	ids, gen = h.stable("g", 1)
	assert.Equal(t, int32(1), gen, "a new group starts at generation 1")
}
