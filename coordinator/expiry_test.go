package coordinator

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// heldClock is a clock whose time moves without running its timers: fire
// runs the ones that are due. It tells what a read does to state that is
// due to expire but that the clock has not expired yet.
type heldClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[int]*heldTimer
	seq    int
}

type heldTimer struct {
	at time.Time
	f  func()
}

func newHeldClock() *heldClock {
	return &heldClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), timers: make(map[int]*heldTimer)}
}

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *heldClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := c.seq
	c.timers[id] = &heldTimer{at: c.now.Add(d), f: f}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// move sets the time forward by d and runs nothing.
func (c *heldClock) move(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fire runs every timer that is due, and those they make due, and returns
// how many ran.
func (c *heldClock) fire() int {
	ran := 0
	for {
		c.mu.Lock()
		var next *heldTimer
		for id, t := range c.timers {
			if !t.at.After(c.now) {
				next = t
				delete(c.timers, id)
				break
			}
		}
		c.mu.Unlock()
		if next == nil {
			return ran
		}
		next.f()
		ran++
	}
}

// emptyGroup joins one member to group and makes it leave: an abandoned
// group, Empty with no committed offsets.
func emptyGroup(t *testing.T, c *Coordinator, group string) {
	t.Helper()
	j := joinReq(group, "")
	j.Version = 3 // no MEMBER_ID_REQUIRED round
	resp := c.JoinGroup(context.Background(), NoCaller, j)
	require.Equal(t, errNone, resp.ErrorCode)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = group, resp.MemberID
	require.Equal(t, errNone, c.LeaveGroup(leave).ErrorCode)
}

// TestReadsDoNotExpire: past the moment an abandoned group and a group's
// offsets are due to go, every read (OffsetFetch, DescribeGroups,
// ListGroups, Groups, Group, CommittedOffset) sees them unchanged; the
// clock's timer removes them.
func TestReadsDoNotExpire(t *testing.T) {
	t.Parallel()
	clk := newHeldClock()
	c := New(Config{Rules: rules.Kafka(), Clock: clk})
	defer c.Close()
	emptyGroup(t, c, "abandoned")
	c.OffsetCommit(NoCaller, commitReq("committed", "", -1, "t", map[int32]int64{0: 5}))
	clk.move(rules.Kafka().OffsetsRetention + emptyGroupCleanup)
	before := c.Groups()
	require.Len(t, before, 2)

	for range 3 {
		fetch := kmsg.NewPtrOffsetFetchRequest()
		fetch.Version = 8
		for _, g := range []string{"abandoned", "committed"} {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			fetch.Groups = append(fetch.Groups, rg)
		}
		resp := c.OffsetFetch(fetch)
		require.Len(t, resp.Groups[1].Topics, 1)
		assert.Equal(t, int64(5), resp.Groups[1].Topics[0].Partitions[0].Offset, "the offset is read, not expired")
		describe := kmsg.NewPtrDescribeGroupsRequest()
		describe.Groups = []string{"abandoned", "committed"}
		for _, g := range c.DescribeGroups(describe).Groups {
			assert.Equal(t, "Empty", g.State, g.Group)
		}
		assert.Len(t, c.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups, 2)
		_, ok := c.Group("abandoned")
		assert.True(t, ok)
		_, ok = c.CommittedOffset("committed", "t", 0)
		assert.True(t, ok)
	}
	assert.Equal(t, before, c.Groups(), "reads changed no group")

	require.NotZero(t, clk.fire(), "the expiry timer was due")
	assert.Empty(t, c.Groups(), "the clock removed the abandoned group and the expired offsets with their group")
}

// TestExpiryOnTheManualClock: Advance alone removes an abandoned group once
// it has been Empty for the cleanup interval, and a group whose offsets
// expire, with nothing reading them.
func TestExpiryOnTheManualClock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	emptyGroup(t, h.c, "abandoned")
	h.c.OffsetCommit(NoCaller, commitReq("committed", "", -1, "t", map[int32]int64{0: 5}))
	count := func() int {
		h.c.mu.Lock()
		defer h.c.unlock()
		return len(h.c.groups)
	}
	h.clk.Advance(emptyGroupCleanup - time.Second)
	assert.Equal(t, 2, count())
	h.clk.Advance(time.Second)
	assert.Equal(t, 1, count(), "the abandoned group went at 10 minutes")
	h.clk.Advance(rules.Kafka().OffsetsRetention - emptyGroupCleanup)
	assert.Equal(t, 0, count(), "the offsets expired, and their group with them")
}

// TestGroupLimitFreesRoomAtOnce: with MaxGroups reached by abandoned groups
// whose cleanup is not due, a new group still gets room at once.
func TestGroupLimitFreesRoomAtOnce(t *testing.T) {
	t.Parallel()
	clk := newHeldClock()
	r := rules.VAST()
	r.MaxGroups = 2
	c := New(Config{Rules: r, Clock: clk})
	defer c.Close()
	emptyGroup(t, c, "a")
	emptyGroup(t, c, "b")
	j := joinReq("c", "")
	j.Version = 3
	assert.Equal(t, errNone, c.JoinGroup(context.Background(), NoCaller, j).ErrorCode)
	var names []string
	for _, g := range c.Groups() {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"c"}, names)
}
