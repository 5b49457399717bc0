package coordinator

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/rules"
)

// location is a test's Config.Locate: where each group is coordinated and
// whether that broker serves.
type location struct {
	mu      sync.Mutex
	at      int32
	serving bool
}

func (l *location) locate(string) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at, l.serving
}

func (l *location) set(at int32, serving bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at, l.serving = at, serving
}

// TestClassicSessionsWaitForTheCoordinator: while a classic group's
// coordinator is away no member's session runs out, however long; the
// broker that takes the group over gives every member a fresh session
// timeout from then on, as Kafka's coordinator does when it loads a group.
// A move between two serving brokers is a takeover too.
func TestClassicSessionsWaitForTheCoordinator(t *testing.T) {
	t.Parallel()
	loc := &location{at: 1, serving: true}
	h := newHarness(t, rules.Kafka(), func(c *Config) { c.Locate = loc.locate })
	ids, gen := h.stable("g", 2) // sessions of 10 s
	h.clk.Advance(8 * time.Second)

	loc.set(1, false)
	h.c.CoordinatorsMoved()
	h.clk.Advance(time.Minute)
	assert.Equal(t, "Stable", h.state("g"), "no session ran out while the coordinator was away")

	loc.set(2, true) // another broker takes the group over
	h.c.CoordinatorsMoved()
	h.clk.Advance(9 * time.Second)
	for _, id := range ids {
		assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", id, gen)).ErrorCode, "a fresh session of 10 s from the takeover")
	}
	h.clk.Advance(9 * time.Second)
	loc.set(3, true) // moved again, both brokers serving
	h.c.CoordinatorsMoved()
	h.clk.Advance(9 * time.Second)
	assert.Equal(t, "Stable", h.state("g"), "the move gave fresh sessions")
	h.clk.Advance(2 * time.Second)
	assert.Equal(t, "Empty", h.state("g"), "sessions run out as ever once the coordinator serves")
}

// TestClassicRebalanceWaitsForTheCoordinator: a join phase in progress when
// the coordinator goes away neither ends nor expels anyone while it is
// away, however long; once a broker takes the group over, the phase runs
// on its fresh timers (the members that do not rejoin are gone after
// their fresh sessions of 10 s) and the member waiting in JoinGroup is
// answered.
func TestClassicRebalanceWaitsForTheCoordinator(t *testing.T) {
	t.Parallel()
	loc := &location{at: 1, serving: true}
	h := newHarness(t, rules.Kafka(), func(c *Config) { c.Locate = loc.locate })
	_, gen := h.stable("g", 2)
	newcomer := h.memberID("g")
	joined := h.joinAsync(joinReq("g", newcomer)) // a rebalance: the others have 30 s to rejoin
	h.waitUntil("the rebalance", func() bool { return h.c.groups["g"].state == statePreparingRebalance })
	loc.set(1, false)
	h.c.CoordinatorsMoved()
	h.clk.Advance(time.Hour)
	assert.Equal(t, "PreparingRebalance", h.state("g"))
	still(t, joined)
	g, _ := h.c.Group("g")
	assert.Len(t, g.Members, 3, "no one expelled while the coordinator was away")

	loc.set(2, true)
	h.c.CoordinatorsMoved()
	h.clk.Advance(10*time.Second - time.Millisecond)
	still(t, joined)
	h.clk.Advance(time.Millisecond)
	r := get(t, joined)
	require.Equal(t, errNone, r.ErrorCode)
	assert.Equal(t, gen+1, r.Generation)
	g, _ = h.c.Group("g")
	assert.Len(t, g.Members, 1, "the members that did not rejoin are gone, after their fresh sessions")
}

// TestConsumerGroupSessionsWaitForTheCoordinator: the same for a KIP-848
// group: no member is fenced while the coordinator is away, and each gets
// a fresh session timeout when another broker takes the group over.
func TestConsumerGroupSessionsWaitForTheCoordinator(t *testing.T) {
	t.Parallel()
	loc := &location{at: 1, serving: true}
	h := newCGHarness(t, func(c *Config) { c.Locate = loc.locate })
	h.addTopic("t", 2)
	a, b := h.member("g", "a"), h.member("g", "b")
	require.Zero(t, a.join("t").ErrorCode)
	require.Zero(t, b.join("t").ErrorCode)
	g := h.settle("g", a, b)
	epoch := g.GroupEpoch
	h.clk.Advance(DefaultConsumerSessionTimeout - time.Second)

	loc.set(1, false)
	h.c.CoordinatorsMoved()
	h.clk.Advance(time.Hour)
	assert.Len(t, h.group("g").Members, 2, "no member fenced while the coordinator was away")

	loc.set(2, true)
	h.c.CoordinatorsMoved()
	h.clk.Advance(DefaultConsumerSessionTimeout - time.Second)
	require.Zero(t, a.beat(nil).ErrorCode)
	require.Zero(t, b.beat(nil).ErrorCode)
	assert.Equal(t, epoch, h.group("g").GroupEpoch, "no rebalance: the same members, the same epoch")
	h.clk.Advance(DefaultConsumerSessionTimeout)
	assert.Empty(t, h.group("g").Members, "sessions run out as ever once the coordinator serves")
}

// TestGroupsCreatedWhileAwayWait: a group the coordinator holds before
// Locate has seen it is located when created, so a later move is a
// takeover for it too.
func TestGroupsCreatedWhileAwayWait(t *testing.T) {
	t.Parallel()
	loc := &location{at: 1, serving: true}
	h := newHarness(t, rules.Kafka(), func(c *Config) { c.Locate = loc.locate })
	ids, gen := h.stable("g", 1)
	h.clk.Advance(9 * time.Second)
	loc.set(2, true)
	h.c.CoordinatorsMoved()
	h.clk.Advance(9 * time.Second)
	assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", ids[0], gen)).ErrorCode, "a fresh session at the move")
}

// TestShareGroupSessionsWaitForTheCoordinator: the same for a share group
// (KIP-932): no member is fenced while the coordinator is away, and each
// gets a fresh share session timeout when another broker takes the group
// over, as Kafka's coordinator schedules them when it loads the group.
func TestShareGroupSessionsWaitForTheCoordinator(t *testing.T) {
	t.Parallel()
	loc := &location{at: 1, serving: true}
	h := newShareHarness(t, func(c *Config) { c.Locate = loc.locate })
	a, b := shareMemberID(1), shareMemberID(2)
	h.join("g", a)
	h.join("g", b)
	h.clk.Advance(DefaultShareSessionTimeout - time.Second)

	loc.set(1, false)
	h.c.CoordinatorsMoved()
	h.clk.Advance(time.Hour)
	assert.Len(t, h.c.groups["g"].sg.members, 2, "no member fenced while the coordinator was away")

	loc.set(2, true)
	h.c.CoordinatorsMoved()
	h.clk.Advance(DefaultShareSessionTimeout - time.Second)
	assert.Len(t, h.c.groups["g"].sg.members, 2, "a fresh session from the takeover")
	for _, m := range []string{a, b} {
		require.Zero(t, h.heartbeat("g", m, h.c.groups["g"].sg.members[m].epoch).ErrorCode)
	}
	h.clk.Advance(DefaultShareSessionTimeout)
	assert.Empty(t, h.c.groups["g"].sg.members, "sessions run out as ever once the coordinator serves")
}
