package coordinator

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/rules"
)

// TestMain fails the package if any goroutine running coordinator code is
// left once every test (and its Close) has finished.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		limit := time.Now().Add(deadline)
		for {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			leaked := 0
			for _, s := range strings.Split(stacks, "\n\n") {
				if strings.Contains(s, "vastfake/coordinator.(*Coordinator)") && !strings.Contains(s, "TestMain") {
					leaked++
				}
			}
			if leaked == 0 {
				break
			}
			if time.Now().After(limit) {
				fmt.Fprintf(os.Stderr, "coordinator: %d goroutines leaked:\n%s\n", leaked, stacks)
				code = 1
				break
			}
			runtime.Gosched()
		}
	}
	os.Exit(code)
}

func TestMemberIDRequiredFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ctx := context.Background()
	billing := &testCaller{id: "billing", host: "/10.0.0.7"}

	r := get(t, h.joinAsyncAs(ctx, billing, joinReq("g", "")))
	require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode)
	require.True(t, strings.HasPrefix(r.MemberID, "billing-"), r.MemberID)
	assert.Equal(t, "Empty", h.state("g"), "a pending member does not start a rebalance")
	id := r.MemberID

	jr := get(t, h.joinAsyncAs(ctx, billing, joinReq("g", id)))
	require.Equal(t, errNone, jr.ErrorCode)
	assert.Equal(t, int32(1), jr.Generation)
	assert.Equal(t, id, jr.LeaderID)
	assert.Equal(t, id, jr.MemberID)
	assert.Equal(t, "range", *jr.Protocol)
	assert.Equal(t, "consumer", *jr.ProtocolType)
	require.Len(t, jr.Members, 1)
	assert.Equal(t, "md-range", string(jr.Members[0].ProtocolMetadata))
	assert.Equal(t, "CompletingRebalance", h.state("g"))

	sr := h.c.SyncGroup(ctx, syncReq("g", id, 1, map[string]string{id: "mine"}))
	require.Equal(t, errNone, sr.ErrorCode)
	assert.Equal(t, "mine", string(sr.MemberAssignment))
	assert.Equal(t, "range", *sr.Protocol)

	gi, ok := h.c.Group("g")
	require.True(t, ok)
	assert.Equal(t, "Stable", gi.State)
	assert.Equal(t, "consumer", gi.ProtocolType)
	assert.Equal(t, "range", gi.Protocol)
	assert.Equal(t, int32(1), gi.Generation)
	assert.Equal(t, id, gi.Leader)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, MemberInfo{MemberID: id, ClientID: "billing", ClientHost: "/10.0.0.7",
		Assignment: []byte("mine"), Metadata: []byte("md-range")}, gi.Members[0])

	// A rejoin with an id the group never handed out is refused.
	assert.Equal(t, kerr.UnknownMemberID.Code, h.join(joinReq("g", "nobody")).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.join(joinReq("other", "nobody")).ErrorCode)
}

func TestPendingMemberExpiresAfterSessionTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	id := h.memberID("g")
	h.clk.Advance(10 * time.Second)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.join(joinReq("g", id)).ErrorCode)
}

func TestOldJoinVersionsGetAnIDDirectly(t *testing.T) {
	t.Parallel()
	for _, v := range []int16{0, 3} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			h := newHarness(t, rules.VAST())
			req := joinReq("g", "")
			req.Version = v
			r := h.join(req)
			require.Equal(t, errNone, r.ErrorCode)
			assert.NotEmpty(t, r.MemberID)
			assert.Equal(t, r.MemberID, r.LeaderID)
			assert.Equal(t, int32(1), r.Generation)
		})
	}
}

// TestNegativeSessionTimeoutWithoutBounds: with both session bounds removed
// a negative session timeout is still refused, as Kafka refuses it against
// any group.min.session.timeout.ms; zero passes, as in Kafka with a minimum
// of 0.
func TestNegativeSessionTimeoutWithoutBounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka()) // MinSessionTimeout and MaxSessionTimeout 0: no bounds
	for _, ms := range []int32{-1, -1 << 31} {
		req := joinReq("g", "")
		req.SessionTimeoutMillis = ms
		assert.Equal(t, kerr.InvalidSessionTimeout.Code, h.join(req).ErrorCode, "session timeout %d ms", ms)
	}
	_, ok := h.c.Group("g")
	assert.False(t, ok, "a refused join creates no group")
	req := joinReq("zero", "")
	req.SessionTimeoutMillis = 0
	assert.Equal(t, kerr.MemberIDRequired.Code, h.join(req).ErrorCode)
}

func TestJoinGroupRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka(), func(c *Config) {
		c.MinSessionTimeout, c.MaxSessionTimeout = DefaultMinSessionTimeout, DefaultMaxSessionTimeout
	})

	req := joinReq("", "")
	assert.Equal(t, kerr.InvalidGroupID.Code, h.join(req).ErrorCode)

	for _, ms := range []int32{-1, 0, 5_999, 1_800_001, 1<<31 - 1} {
		req = joinReq("g", "")
		req.SessionTimeoutMillis = ms
		assert.Equal(t, kerr.InvalidSessionTimeout.Code, h.join(req).ErrorCode, "session timeout %d ms", ms)
	}
	_, ok := h.c.Group("g")
	assert.False(t, ok, "a refused join creates no group")
	for _, ms := range []int32{6_000, 1_800_000} {
		req = joinReq("bounds", "")
		req.SessionTimeoutMillis = ms
		req.RebalanceTimeoutMillis = 1<<31 - 1 // any rebalance timeout, as Kafka Streams sends
		assert.Equal(t, kerr.MemberIDRequired.Code, h.join(req).ErrorCode, "session timeout %d ms", ms)
	}

	req = joinReq("g", "")
	req.Protocols = nil
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode)

	req = joinReq("g", "")
	req.ProtocolType = ""
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode)

	h.stable("g", 1)
	req = joinReq("g", "")
	req.ProtocolType = "connect"
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode, "protocol type must match")
	req = joinReq("g", "")
	req.Protocols = protos("roundrobin")
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode, "no protocol in common")
}

// TestRebalanceStates walks a group through every state: a second member
// joining a Stable group, heartbeats and syncs in each state, and the errors
// Kafka answers along the way.
func TestRebalanceStates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 1)
	a := ids[0]
	assert.Equal(t, int32(1), gen)

	// Stable: heartbeats pass, wrong generation and unknown members fail.
	assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", a, 1)).ErrorCode)
	assert.Equal(t, kerr.IllegalGeneration.Code, h.c.Heartbeat(hbReq("g", a, 7)).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("g", "x", 1)).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("nope", a, 1)).ErrorCode)
	assert.Equal(t, kerr.InvalidGroupID.Code, h.c.Heartbeat(hbReq("", a, 1)).ErrorCode)

	// A new member joining a Stable group starts a rebalance.
	b := h.memberID("g")
	assert.Equal(t, "Stable", h.state("g"))
	bj := h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 1)
	assert.Equal(t, "PreparingRebalance", h.state("g"))
	still(t, bj)

	// PreparingRebalance: heartbeats tell members to rejoin, syncs are
	// refused, member commits of the current generation still pass.
	assert.Equal(t, kerr.RebalanceInProgress.Code, h.c.Heartbeat(hbReq("g", a, 1)).ErrorCode)
	assert.Equal(t, kerr.RebalanceInProgress.Code, h.c.SyncGroup(context.Background(), syncReq("g", a, 1, nil)).ErrorCode)
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", a, 1, "t", map[int32]int64{0: 5}))))

	aj := h.joinAsync(joinReq("g", a))
	ar, br := get(t, aj), get(t, bj)
	require.Equal(t, errNone, ar.ErrorCode)
	require.Equal(t, errNone, br.ErrorCode)
	assert.Equal(t, int32(2), ar.Generation)
	assert.Equal(t, int32(2), br.Generation)
	assert.Equal(t, a, ar.LeaderID, "the leader stays while it is a member")
	assert.Equal(t, a, br.LeaderID)
	assert.Len(t, ar.Members, 2)
	assert.Empty(t, br.Members, "followers get no member list")
	assert.Equal(t, "CompletingRebalance", h.state("g"))

	// CompletingRebalance: heartbeats pass, commits are refused, wrong
	// syncs are refused, a follower's sync waits for the leader.
	assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", b, 2)).ErrorCode)
	assert.Equal(t, []int16{kerr.RebalanceInProgress.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", b, 2, "t", map[int32]int64{0: 6}))))
	assert.Equal(t, kerr.IllegalGeneration.Code, h.c.SyncGroup(context.Background(), syncReq("g", b, 1, nil)).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.SyncGroup(context.Background(), syncReq("g", "x", 2, nil)).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.SyncGroup(context.Background(), syncReq("nope", b, 2, nil)).ErrorCode)
	bad := syncReq("g", b, 2, nil)
	bad.Protocol = kmsg.StringPtr("roundrobin")
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.c.SyncGroup(context.Background(), bad).ErrorCode)
	bad = syncReq("g", b, 2, nil)
	bad.ProtocolType = kmsg.StringPtr("connect")
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.c.SyncGroup(context.Background(), bad).ErrorCode)

	bs := h.syncAsync(syncReq("g", b, 2, nil))
	h.waitSyncing("g", 1)
	still(t, bs)
	lr := h.c.SyncGroup(context.Background(), syncReq("g", a, 2, map[string]string{a: "A", b: "B"}))
	require.Equal(t, errNone, lr.ErrorCode)
	assert.Equal(t, "A", string(lr.MemberAssignment))
	assert.Equal(t, "B", string(get(t, bs).MemberAssignment))
	assert.Equal(t, "Stable", h.state("g"))

	// Stable again: a late sync gets the assignment at once.
	assert.Equal(t, "B", string(h.c.SyncGroup(context.Background(), syncReq("g", b, 2, nil)).MemberAssignment))
	assert.Equal(t, errNone, h.c.Heartbeat(hbReq("g", b, 2)).ErrorCode)
}

// TestRebalanceDuringSync checks that a member joining while followers wait
// in SyncGroup fails those syncs with REBALANCE_IN_PROGRESS.
func TestRebalanceDuringSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a, b := h.memberID("g"), h.memberID("g")
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	bj := h.joinAsync(joinReq("g", b))
	gen := get(t, aj).Generation
	get(t, bj)
	bs := h.syncAsync(syncReq("g", b, gen, nil))
	h.waitSyncing("g", 1)

	c := h.memberID("g")
	cj := h.joinAsync(joinReq("g", c))
	assert.Equal(t, kerr.RebalanceInProgress.Code, get(t, bs).ErrorCode)
	assert.Equal(t, "PreparingRebalance", h.state("g"))
	aj, bj = h.joinAsync(joinReq("g", a)), h.joinAsync(joinReq("g", b))
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{aj, bj, cj} {
		r := get(t, ch)
		require.Equal(t, errNone, r.ErrorCode)
		assert.Equal(t, gen+1, r.Generation)
	}
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]

	h.clk.Advance(6 * time.Second)
	require.Equal(t, errNone, h.c.Heartbeat(hbReq("g", a, gen)).ErrorCode)
	h.clk.Advance(4 * time.Second) // b's 10s session is over; a heartbeated 4s ago
	gi, _ := h.c.Group("g")
	require.Len(t, gi.Members, 1)
	assert.Equal(t, a, gi.Members[0].MemberID)
	assert.Equal(t, "PreparingRebalance", gi.State)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("g", b, gen)).ErrorCode)
	assert.Equal(t, kerr.RebalanceInProgress.Code, h.c.Heartbeat(hbReq("g", a, gen)).ErrorCode)

	r := h.join(joinReq("g", a))
	require.Equal(t, errNone, r.ErrorCode)
	assert.Equal(t, gen+1, r.Generation)
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", a, gen+1, map[string]string{a: "all"})).ErrorCode)

	// The last member expiring leaves the group Empty.
	h.clk.Advance(10 * time.Second)
	gi, _ = h.c.Group("g")
	assert.Equal(t, "Empty", gi.State)
	assert.Empty(t, gi.Members)
	assert.Equal(t, gen+2, gi.Generation)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("g", a, gen+2)).ErrorCode)
}

func TestBlockedMemberDoesNotExpire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	c := h.memberID("g")
	cj := h.joinAsync(joinReq("g", c))
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 2)
	// b keeps heartbeating; a and c wait in JoinGroup longer than a
	// session, which must not expire them.
	for range 3 {
		h.clk.Advance(8 * time.Second)
		require.Equal(t, kerr.RebalanceInProgress.Code, h.c.Heartbeat(hbReq("g", b, gen)).ErrorCode)
	}
	bj := h.joinAsync(joinReq("g", b))
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{aj, bj, cj} {
		require.Equal(t, errNone, get(t, ch).ErrorCode)
	}
}

func TestRebalanceTimeoutRemovesMemberThatDidNotRejoin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]

	c := h.memberID("g")
	cj := h.joinAsync(joinReq("g", c))
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 2)
	// b keeps its session alive but never rejoins.
	for range 3 {
		h.clk.Advance(9 * time.Second)
		require.Equal(t, kerr.RebalanceInProgress.Code, h.c.Heartbeat(hbReq("g", b, gen)).ErrorCode)
		still(t, aj)
	}
	h.clk.Advance(3 * time.Second) // 30s rebalance timeout
	ar, cr := get(t, aj), get(t, cj)
	require.Equal(t, errNone, ar.ErrorCode)
	require.Equal(t, errNone, cr.ErrorCode)
	assert.Equal(t, gen+1, ar.Generation)
	assert.Len(t, ar.Members, 2)
	gi, _ := h.c.Group("g")
	assert.Equal(t, []string{a, c}, []string{gi.Members[0].MemberID, gi.Members[1].MemberID})
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.Heartbeat(hbReq("g", b, gen)).ErrorCode)
}

func TestRebalanceTimeoutWaitsForPendingMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a := h.memberID("g")
	req := joinReq("g", "")
	req.SessionTimeoutMillis = 60_000 // the pending id outlives the rebalance timeout
	r := h.join(req)
	require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode)
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	h.clk.Advance(29 * time.Second)
	still(t, aj) // Kafka waits for pending member ids too
	h.clk.Advance(time.Second)
	ar := get(t, aj)
	require.Equal(t, errNone, ar.ErrorCode)
	assert.Len(t, ar.Members, 1)
}

// TestPendingMemberForgottenWhenItsConnectionCloses: a member id handed out
// with MEMBER_ID_REQUIRED holds the join phase up only while the connection
// that asked for it is open; once it closes the phase completes with no
// time passing, and the id is unknown.
func TestPendingMemberForgottenWhenItsConnectionCloses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a := h.memberID("g")
	conn, hangUp := context.WithCancel(context.Background())
	req := joinReq("g", "")
	req.SessionTimeoutMillis = 1_800_000
	req.RebalanceTimeoutMillis = 1<<31 - 1
	gone := get(t, h.joinAsyncCtx(conn, req))
	require.Equal(t, kerr.MemberIDRequired.Code, gone.ErrorCode)
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	still(t, aj) // Kafka waits for pending member ids
	hangUp()
	ar := get(t, aj)
	require.Equal(t, errNone, ar.ErrorCode)
	assert.Len(t, ar.Members, 1)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.join(joinReq("g", gone.MemberID)).ErrorCode)
}

// TestPendingMemberIDsBoundedPerConnection: a connection that asks a group
// for a new member id while it still holds one it never used loses the
// older one, so one connection holds at most one pending id per group and
// cannot hold the join phase up with ids piling up on a manual clock. Ids
// asked for on other connections stay.
func TestPendingMemberIDsBoundedPerConnection(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	conn, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	var ids []string
	for range 100 {
		r := get(t, h.joinAsyncCtx(conn, joinReq("g", "")))
		require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode)
		ids = append(ids, r.MemberID)
	}
	// The join phase waits for no older id: it completes with no time passing.
	r := get(t, h.joinAsyncCtx(conn, joinReq("g", ids[len(ids)-1])))
	require.Equal(t, errNone, r.ErrorCode)
	assert.Len(t, r.Members, 1)
	assert.Equal(t, kerr.UnknownMemberID.Code, get(t, h.joinAsyncCtx(conn, joinReq("g", ids[0]))).ErrorCode)

	other, hangUpOther := context.WithCancel(context.Background())
	defer hangUpOther()
	x := get(t, h.joinAsyncCtx(other, joinReq("h", "")))
	require.Equal(t, kerr.MemberIDRequired.Code, x.ErrorCode)
	y := get(t, h.joinAsyncCtx(conn, joinReq("h", "")))
	require.Equal(t, kerr.MemberIDRequired.Code, y.ErrorCode)
	yj := h.joinAsyncCtx(conn, joinReq("h", y.MemberID))
	h.waitJoining("h", 1)
	still(t, yj) // the other connection's id is still awaited
	xr := get(t, h.joinAsyncCtx(other, joinReq("h", x.MemberID)))
	require.Equal(t, errNone, xr.ErrorCode)
	assert.Equal(t, errNone, get(t, yj).ErrorCode)
}

func TestSyncTimeoutRemovesMemberThatNeverSynced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a, b := h.memberID("g"), h.memberID("g")
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	bj := h.joinAsync(joinReq("g", b))
	gen := get(t, aj).Generation
	get(t, bj)
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", a, gen, map[string]string{a: "A", b: "B"})).ErrorCode)
	// b never syncs but heartbeats; the rebalance timeout removes it.
	for range 3 {
		h.clk.Advance(9 * time.Second)
		require.Equal(t, errNone, h.c.Heartbeat(hbReq("g", a, gen)).ErrorCode)
		require.Equal(t, errNone, h.c.Heartbeat(hbReq("g", b, gen)).ErrorCode)
	}
	h.clk.Advance(3 * time.Second)
	gi, _ := h.c.Group("g")
	assert.Equal(t, "PreparingRebalance", gi.State)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, a, gi.Members[0].MemberID)
}

func TestInitialRebalanceDelay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST(), func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	a, b := h.memberID("g"), h.memberID("g")
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	bj := h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 2)
	h.clk.Advance(2 * time.Second)
	still(t, aj)
	// A member joined during the first delay: Kafka waits another delay.
	h.clk.Advance(time.Second)
	still(t, aj)
	c := h.memberID("g")
	cj := h.joinAsync(joinReq("g", c))
	h.waitJoining("g", 3)
	h.clk.Advance(3 * time.Second)
	still(t, aj)
	h.clk.Advance(3 * time.Second) // no one new during this delay
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{aj, bj, cj} {
		r := get(t, ch)
		require.Equal(t, errNone, r.ErrorCode)
		assert.Equal(t, int32(1), r.Generation)
	}
	ids := make([]string, 0, 3)
	gi, _ := h.c.Group("g")
	for _, m := range gi.Members {
		ids = append(ids, m.MemberID)
	}
	assert.Equal(t, []string{a, b, c}, ids)
}

func TestInitialRebalanceDelayIsCappedByRebalanceTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST(), func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	req := joinReq("g", "")
	req.Version = 3
	req.RebalanceTimeoutMillis = 2000
	aj := h.joinAsync(req)
	h.waitJoining("g", 1)
	h.clk.Advance(2 * time.Second)
	assert.Equal(t, errNone, get(t, aj).ErrorCode)
}

func TestNoInitialDelayCompletesAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a := h.memberID("g")
	r := h.join(joinReq("g", a)) // completes without any clock movement
	assert.Equal(t, errNone, r.ErrorCode)
}

func TestProtocolVote(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		prefs [][]string
		want  string
	}{
		{"majority first choice", [][]string{{"roundrobin", "range"}, {"roundrobin", "range"}, {"range", "roundrobin"}}, "roundrobin"},
		{"only common protocol", [][]string{{"roundrobin", "range"}, {"roundrobin", "range"}, {"range"}}, "range"},
		{"tie goes to leader's order", [][]string{{"range", "roundrobin"}, {"roundrobin", "range"}}, "range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, rules.VAST())
			ids := make([]string, len(tc.prefs))
			for i := range ids {
				ids[i] = h.memberID("g")
			}
			var chans []<-chan *kmsg.JoinGroupResponse
			for i, id := range ids {
				req := joinReq("g", id)
				req.Protocols = protos(tc.prefs[i]...)
				chans = append(chans, h.joinAsync(req))
				if i < len(ids)-1 {
					h.waitJoining("g", i+1)
				}
			}
			for _, ch := range chans {
				r := get(t, ch)
				require.Equal(t, errNone, r.ErrorCode)
				assert.Equal(t, tc.want, *r.Protocol)
			}
		})
	}
}

func TestEagerAssignorsOnly(t *testing.T) {
	t.Parallel()
	t.Run("vast", func(t *testing.T) {
		h := newHarness(t, rules.VAST())
		req := joinReq("g", "")
		req.Protocols = protos("cooperative-sticky")
		assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode)
		assert.Contains(t, h.log.String(), `"rule":"EagerAssignorsOnly"`)

		// Offering an eager assignor too: only it takes part in the vote.
		id := h.memberID("g")
		req = joinReq("g", id)
		req.Protocols = protos("cooperative-sticky", "range")
		r := h.join(req)
		require.Equal(t, errNone, r.ErrorCode)
		assert.Equal(t, "range", *r.Protocol)
		assert.Equal(t, "md-range", string(r.Members[0].ProtocolMetadata))

		// Other protocol types are not consumer groups: unaffected.
		req = joinReq("connect", "")
		req.Version = 3
		req.ProtocolType = "connect"
		req.Protocols = protos("sessioned")
		r = h.join(req)
		require.Equal(t, errNone, r.ErrorCode)
		assert.Equal(t, "sessioned", *r.Protocol)
	})
	t.Run("vast votes among every eager protocol", func(t *testing.T) {
		// kafkajs's assignor, a custom one and the eager sticky one are
		// not cooperative: they join and take part in the vote.
		h := newHarness(t, rules.VAST())
		a, b := h.memberID("g"), h.memberID("g")
		ar := joinReq("g", a)
		ar.Protocols = protos("RoundRobinAssigner", "sticky")
		aj := h.joinAsync(ar)
		h.waitJoining("g", 1)
		br := joinReq("g", b)
		br.Protocols = protos("cooperative-sticky", "sticky", "RoundRobinAssigner")
		bj := h.joinAsync(br)
		for _, r := range []*kmsg.JoinGroupResponse{get(t, aj), get(t, bj)} {
			require.Equal(t, errNone, r.ErrorCode)
			assert.Equal(t, "RoundRobinAssigner", *r.Protocol, "a tie goes to the leader's first choice")
		}
		assert.NotContains(t, h.log.String(), `"rule"`)
	})
	t.Run("kafka", func(t *testing.T) {
		h := newHarness(t, rules.Kafka())
		id := h.memberID("g")
		req := joinReq("g", id)
		req.Protocols = protos("cooperative-sticky", "range")
		r := h.join(req)
		require.Equal(t, errNone, r.ErrorCode)
		assert.Equal(t, "cooperative-sticky", *r.Protocol)
	})
	t.Run("kafka with the rule switched on", func(t *testing.T) {
		r := rules.Kafka()
		r.EagerAssignorsOnly = true
		h := newHarness(t, r)
		req := joinReq("g", "")
		req.Protocols = protos("cooperative-sticky")
		assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(req).ErrorCode)
	})
}

// TestRefusalsGoToTheCaller: a refusal made because of a VAST rule goes to
// the request's caller, with the rule and why, and is logged only at Debug.
func TestRefusalsGoToTheCaller(t *testing.T) {
	t.Parallel()
	r := rules.VAST()
	r.MaxGroups = 1
	h := newHarness(t, r)
	caller := &testCaller{id: "app"}

	req := joinReq("coop", "")
	req.Protocols = protos("cooperative-sticky")
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, get(t, h.joinAsyncAs(context.Background(), caller, req)).ErrorCode)
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(caller, commitReq("a", "", -1, "t", map[int32]int64{0: 1}))))
	assert.Equal(t, []int16{kerr.GroupMaxSizeReached.Code}, commitCodes(h.c.OffsetCommit(caller, commitReq("b", "", -1, "t", map[int32]int64{0: 1}))))
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, get(t, h.joinAsyncAs(context.Background(), caller, joinReq("c", ""))).ErrorCode)

	got, _, _ := caller.told()
	require.Len(t, got, 3)
	assert.Equal(t, `EagerAssignorsOnly: every protocol offered, ["cooperative-sticky"], is cooperative; VAST rebalances eagerly only`, got[0])
	assert.Equal(t, "MaxGroups: the view already has 1 consumer groups, VAST's limit", got[1])
	assert.Equal(t, got[1], got[2])
	assert.NotContains(t, h.log.String(), `"rule"`, "the caller reports the refusal")
}

// TestRefusedMayCallBack: a caller is told of a refusal without the
// coordinator's lock, so a caller that reads the coordinator (as a request
// log that looks up the group might) does not deadlock, for JoinGroup and
// for OffsetCommit.
func TestRefusedMayCallBack(t *testing.T) {
	t.Parallel()
	r := rules.VAST()
	r.MaxGroups = 1
	// No harness: on a deadlock its cleanup's Close would hang too.
	c := New(Config{Rules: r, Clock: clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))})
	var seen [][]string
	caller := &testCaller{onRefused: func(rule rules.ID) {
		var names []string
		for _, g := range c.Groups() {
			names = append(names, g.Name)
		}
		seen = append(seen, append([]string{rule.String()}, names...))
	}}
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := joinReq("coop", "")
		req.Protocols = protos("cooperative-sticky")
		c.JoinGroup(ctx, caller, req)
		c.OffsetCommit(caller, commitReq("a", "", -1, "t", map[int32]int64{0: 1}))
		c.OffsetCommit(caller, commitReq("b", "", -1, "t", map[int32]int64{0: 1}))
		c.JoinGroup(ctx, caller, joinReq("c", ""))
	}()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatalf("a caller calling Groups on a refusal deadlocked the coordinator")
	}
	c.Close()
	assert.Equal(t, [][]string{{"EagerAssignorsOnly"}, {"MaxGroups", "a"}, {"MaxGroups", "a"}}, seen)
}

// TestRejoinWhileStable follows Kafka: a follower rejoining with the same
// protocols gets the current generation back; changed metadata (as a
// cooperative-sticky member's owned partitions change) or the leader
// rejoining starts a rebalance.
func TestRejoinWhileStable(t *testing.T) {
	t.Parallel()
	for _, r := range []rules.Rules{rules.VAST(), rules.Kafka()} {
		h := newHarness(t, r)
		ids, gen := h.stable("g", 2)
		a, b := ids[0], ids[1]

		fr := h.join(joinReq("g", b))
		require.Equal(t, errNone, fr.ErrorCode)
		assert.Equal(t, gen, fr.Generation)
		assert.Equal(t, a, fr.LeaderID)
		assert.Equal(t, "Stable", h.state("g"))

		changed := joinReq("g", b)
		changed.Protocols[0].Metadata = []byte("owned: t-0")
		bj := h.joinAsync(changed)
		h.waitJoining("g", 1)
		assert.Equal(t, "PreparingRebalance", h.state("g"))
		aj := h.joinAsync(joinReq("g", a))
		assert.Equal(t, gen+1, get(t, aj).Generation)
		assert.Equal(t, gen+1, get(t, bj).Generation)
		require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", a, gen+1, nil)).ErrorCode)
		assert.Equal(t, "Stable", h.state("g"))

		aj = h.joinAsync(joinReq("g", a))
		h.waitJoining("g", 1)
		assert.Equal(t, "PreparingRebalance", h.state("g"), "the leader rejoining rebalances")
		bj = h.joinAsync(changed)
		assert.Equal(t, gen+2, get(t, aj).Generation)
		assert.Equal(t, gen+2, get(t, bj).Generation)

		// CompletingRebalance: a member re-sending the same join gets
		// its answer again.
		again := h.join(joinReq("g", a))
		assert.Equal(t, gen+2, again.Generation)
		assert.Len(t, again.Members, 2)
	}
}

func TestLeaveGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 3)
	a, b, c := ids[0], ids[1], ids[2]

	// v0-v2: one member, error at the top level.
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 2
	l.Group = "g"
	l.MemberID = "nobody"
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.LeaveGroup(l).ErrorCode)
	l.MemberID = c
	assert.Equal(t, errNone, h.c.LeaveGroup(l).ErrorCode)
	assert.Equal(t, "PreparingRebalance", h.state("g"))

	aj, bj := h.joinAsync(joinReq("g", a)), h.joinAsync(joinReq("g", b))
	assert.Equal(t, gen+1, get(t, aj).Generation)
	assert.Equal(t, gen+1, get(t, bj).Generation)

	// v3+: a batch, one error per member, the leader leaving too.
	p := h.memberID("g") // a pending member id can leave as well
	l = kmsg.NewPtrLeaveGroupRequest()
	l.Version = 5
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}, {MemberID: "nobody"}, {MemberID: p}, {MemberID: b}}
	resp := h.c.LeaveGroup(l)
	require.Equal(t, errNone, resp.ErrorCode)
	require.Len(t, resp.Members, 4)
	assert.Equal(t, []int16{errNone, kerr.UnknownMemberID.Code, errNone, errNone},
		[]int16{resp.Members[0].ErrorCode, resp.Members[1].ErrorCode, resp.Members[2].ErrorCode, resp.Members[3].ErrorCode})
	gi, _ := h.c.Group("g")
	assert.Equal(t, "Empty", gi.State, "the last member leaving empties the group")
	assert.Empty(t, gi.Members)

	l.Group = "nope"
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.LeaveGroup(l).ErrorCode)
}

func TestPendingMemberLeavingAStableGroupDoesNotRebalance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	h.stable("g", 2)
	p := h.memberID("g") // handed out with MEMBER_ID_REQUIRED, never joined
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 5
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: p}}
	resp := h.c.LeaveGroup(l)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, errNone, resp.Members[0].ErrorCode)
	assert.Equal(t, "Stable", h.state("g"), "no member of the generation left")
}

func TestLeaveDuringJoinCompletesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, _ := h.stable("g", 2)
	aj := h.joinAsync(joinReq("g", ids[0]))
	h.waitJoining("g", 1)
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 3
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[1]}}
	require.Equal(t, errNone, h.c.LeaveGroup(l).Members[0].ErrorCode)
	r := get(t, aj)
	require.Equal(t, errNone, r.ErrorCode)
	assert.Len(t, r.Members, 1)
}

func TestStaticMembershipKafka(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	static := func(inst, memberID string) *kmsg.JoinGroupRequest {
		r := joinReq("g", memberID)
		r.InstanceID = kmsg.StringPtr(inst)
		return r
	}
	// v5+ static members get their id at once: no MEMBER_ID_REQUIRED.
	ar := h.join(static("i-a", ""))
	require.Equal(t, errNone, ar.ErrorCode)
	a := ar.MemberID
	require.Len(t, ar.Members, 1)
	assert.Equal(t, "i-a", *ar.Members[0].InstanceID)

	b := h.memberID("g")
	bj := h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 1)
	aj := h.joinAsync(static("i-a", a))
	gen := get(t, aj).Generation
	get(t, bj)
	sreq := syncReq("g", a, gen, map[string]string{a: "A", b: "B"})
	sreq.InstanceID = kmsg.StringPtr("i-a")
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), sreq).ErrorCode)
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", b, gen, nil)).ErrorCode)

	// Restart: the same instance id with no member id replaces the old
	// member without a rebalance; the leader keeps the assignment.
	rr := h.join(static("i-a", ""))
	require.Equal(t, errNone, rr.ErrorCode)
	a2 := rr.MemberID
	assert.NotEqual(t, a, a2)
	assert.Equal(t, gen, rr.Generation)
	assert.Equal(t, a2, rr.LeaderID)
	assert.True(t, rr.SkipAssignment)
	gi, _ := h.c.Group("g")
	assert.Equal(t, "Stable", gi.State)
	assert.Equal(t, gen, gi.Generation)
	assert.Equal(t, "A", string(gi.Members[0].Assignment))
	assert.Equal(t, "i-a", gi.Members[0].InstanceID)
	s2 := syncReq("g", a2, gen, nil)
	s2.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, "A", string(h.c.SyncGroup(context.Background(), s2).MemberAssignment))

	// The old member id is fenced.
	hb := hbReq("g", a, gen)
	hb.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, kerr.FencedInstanceID.Code, h.c.Heartbeat(hb).ErrorCode)
	old := syncReq("g", a, gen, nil)
	old.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, kerr.FencedInstanceID.Code, h.c.SyncGroup(context.Background(), old).ErrorCode)
	oc := commitReq("g", a, gen, "t", map[int32]int64{0: 1})
	oc.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, []int16{kerr.FencedInstanceID.Code}, commitCodes(h.c.OffsetCommit(NoCaller, oc)))
	assert.Equal(t, kerr.FencedInstanceID.Code, h.join(static("i-a", a)).ErrorCode)
	hb = hbReq("g", a2, gen)
	hb.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, errNone, h.c.Heartbeat(hb).ErrorCode)

	// A restart with changed protocols rebalances.
	changed := static("i-a", "")
	changed.Protocols[0].Metadata = []byte("new subscription")
	cj := h.joinAsync(changed)
	h.waitJoining("g", 1)
	assert.Equal(t, "PreparingRebalance", h.state("g"))
	bj = h.joinAsync(joinReq("g", b))
	cr := get(t, cj)
	require.Equal(t, errNone, cr.ErrorCode)
	assert.Equal(t, gen+1, cr.Generation)
	get(t, bj)

	// LeaveGroup by instance id; a wrong member id for it is fenced.
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 4
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a, InstanceID: kmsg.StringPtr("i-a")}}
	assert.Equal(t, kerr.FencedInstanceID.Code, h.c.LeaveGroup(l).Members[0].ErrorCode)
	l.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("i-a")}, {InstanceID: kmsg.StringPtr("i-zz")}}
	resp := h.c.LeaveGroup(l)
	assert.Equal(t, errNone, resp.Members[0].ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, resp.Members[1].ErrorCode)
	gi, _ = h.c.Group("g")
	require.Len(t, gi.Members, 1)
	assert.Equal(t, b, gi.Members[0].MemberID)
}

func TestStaticMemberFencedWhileWaiting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.Kafka())
	leader, extra := h.memberID("g"), h.memberID("g")
	lj := h.joinAsync(joinReq("g", leader))
	h.waitJoining("g", 1)
	sreq := joinReq("g", "")
	sreq.InstanceID = kmsg.StringPtr("i")
	sj := h.joinAsync(sreq)
	h.waitJoining("g", 2)
	// The pending member id leaves; the join phase is then complete.
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 3
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: extra}}
	require.Equal(t, errNone, h.c.LeaveGroup(l).Members[0].ErrorCode)
	sr, lr := get(t, sj), get(t, lj)
	require.Equal(t, errNone, sr.ErrorCode)
	require.Equal(t, leader, lr.LeaderID)

	// The static follower waits in SyncGroup when its replacement joins.
	old := syncReq("g", sr.MemberID, sr.Generation, nil)
	old.InstanceID = kmsg.StringPtr("i")
	os := h.syncAsync(old)
	h.waitSyncing("g", 1)
	nj := h.joinAsync(sreq)
	assert.Equal(t, kerr.FencedInstanceID.Code, get(t, os).ErrorCode)
	h.waitJoining("g", 1)
	assert.Equal(t, "PreparingRebalance", h.state("g"), "not Stable: the replacement rebalances")
	lj = h.joinAsync(joinReq("g", leader))
	nr := get(t, nj)
	require.Equal(t, errNone, nr.ErrorCode)
	assert.NotEqual(t, sr.MemberID, nr.MemberID)
	assert.Equal(t, sr.Generation+1, nr.Generation)
	assert.Len(t, get(t, lj).Members, 2)
}

func TestStaticMembershipIgnoredByVAST(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	static := func(memberID string) *kmsg.JoinGroupRequest {
		r := joinReq("g", memberID)
		r.InstanceID = kmsg.StringPtr("i-a")
		return r
	}
	r := h.join(static(""))
	require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode, "VAST: an instance id joins as a dynamic member")
	a := r.MemberID
	jr := h.join(static(a))
	require.Equal(t, errNone, jr.ErrorCode)
	assert.Nil(t, jr.Members[0].InstanceID)
	require.Equal(t, errNone, h.c.SyncGroup(context.Background(), syncReq("g", a, 1, nil)).ErrorCode)
	gi, _ := h.c.Group("g")
	assert.Equal(t, "", gi.Members[0].InstanceID)

	// Restart with the same instance id: a new member, and a rebalance.
	r = h.join(static(""))
	require.Equal(t, kerr.MemberIDRequired.Code, r.ErrorCode)
	a2 := r.MemberID
	assert.NotEqual(t, a, a2)
	j2 := h.joinAsync(static(a2))
	h.waitJoining("g", 1)
	assert.Equal(t, "PreparingRebalance", h.state("g"))

	// The old member is never fenced: it is told to rejoin.
	hb := hbReq("g", a, 1)
	hb.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, kerr.RebalanceInProgress.Code, h.c.Heartbeat(hb).ErrorCode)
	oc := commitReq("g", a, 1, "t", map[int32]int64{0: 1})
	oc.InstanceID = kmsg.StringPtr("i-a")
	assert.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(NoCaller, oc)))
	// It does not rejoin and its session ends: it is removed.
	h.clk.Advance(10 * time.Second)
	r2 := get(t, j2)
	require.Equal(t, errNone, r2.ErrorCode)
	assert.Equal(t, int32(2), r2.Generation)
	gi, _ = h.c.Group("g")
	require.Len(t, gi.Members, 1)
	assert.Equal(t, a2, gi.Members[0].MemberID)
	assert.NotContains(t, h.log.String(), "FENCED")

	// Leaving by instance id only finds nothing: ids are ignored.
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Version = 4
	l.Group = "g"
	l.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("i-a")}}
	assert.Equal(t, kerr.UnknownMemberID.Code, h.c.LeaveGroup(l).Members[0].ErrorCode)
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a2, InstanceID: kmsg.StringPtr("i-a")}}
	assert.Equal(t, errNone, h.c.LeaveGroup(l).Members[0].ErrorCode)
}

func TestContextCancelReleasesJoinAndSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	c := h.memberID("g")
	ctx, cancel := context.WithCancel(context.Background())
	cj := h.joinAsyncCtx(ctx, joinReq("g", c))
	h.waitJoining("g", 1)
	cancel()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, cj).ErrorCode)
	h.waitJoining("g", 0)

	// c is still a member; its session, restarted when its call ended,
	// runs out and the join completes without it.
	aj, bj := h.joinAsync(joinReq("g", a)), h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 2)
	h.clk.Advance(10 * time.Second)
	ar := get(t, aj)
	require.Equal(t, errNone, ar.ErrorCode)
	assert.Len(t, ar.Members, 2)
	get(t, bj)

	ctx, cancel = context.WithCancel(context.Background())
	sc := make(chan *kmsg.SyncGroupResponse, 1)
	h.wg.Add(1)
	go func() { defer h.wg.Done(); sc <- h.c.SyncGroup(ctx, syncReq("g", b, gen+1, nil)) }()
	h.waitSyncing("g", 1)
	cancel()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, sc).ErrorCode)
}

func TestCloseReleasesBlockedCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a, b := h.memberID("g"), h.memberID("g")
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1) // waits for the pending member b
	h.stable("h", 2)
	c := h.memberID("h")
	cj := h.joinAsync(joinReq("h", c))
	h.waitJoining("h", 1)
	require.NotZero(t, h.clk.Pending())

	h.c.Close()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, aj).ErrorCode)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, cj).ErrorCode)
	assert.Zero(t, h.clk.Pending(), "Close stops every timer")

	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, h.join(joinReq("g", b)).ErrorCode)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, h.c.SyncGroup(context.Background(), syncReq("g", a, 1, nil)).ErrorCode)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, h.c.Heartbeat(hbReq("g", a, 1)).ErrorCode)
	assert.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 1}))))
	h.c.Close() // idempotent
	_, ok := h.c.Group("h")
	assert.True(t, ok, "groups stay readable after Close")
}

func TestCloseReleasesBlockedSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.VAST())
	a, b := h.memberID("g"), h.memberID("g")
	aj := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	bj := h.joinAsync(joinReq("g", b))
	gen := get(t, aj).Generation
	get(t, bj)
	bs := h.syncAsync(syncReq("g", b, gen, nil))
	h.waitSyncing("g", 1)
	h.c.Close()
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, get(t, bs).ErrorCode)
}
