package coordinator

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/internal/testutil"
	"github.com/vastfake/vastfake/rules"
)

// deadline bounds how long a test waits for something that must happen; it
// never decides behaviour, all coordinator time is on the manual clock.
const deadline = 5 * time.Second

type harness struct {
	t   testing.TB
	c   *Coordinator
	clk *clock.Manual
	wg  sync.WaitGroup
	log *testutil.LockedBuffer
}

// newHarness starts a coordinator on a manual clock. At cleanup it closes the
// coordinator and checks that every blocked call returned and no timer is
// left on the clock.
func newHarness(t testing.TB, r rules.Rules, opts ...func(*Config)) *harness {
	clk := clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	buf := &testutil.LockedBuffer{}
	cfg := Config{Rules: r, Clock: clk, Logger: slog.New(slog.NewJSONHandler(buf, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, c: New(cfg), clk: clk, log: buf}
	t.Cleanup(func() {
		h.c.Close()
		done := make(chan struct{})
		go func() { h.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(deadline):
			t.Errorf("a JoinGroup or SyncGroup call outlived Close")
		}
		if n := clk.Pending(); n != 0 {
			t.Errorf("%d timers left on the clock after Close", n)
		}
	})
	return h
}

func protos(names ...string) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(names))
	for i, n := range names {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: n, Metadata: []byte("md-" + n)}
	}
	return out
}

// joinReq is a v9 consumer JoinGroup: session 10s, rebalance 30s, "range".
func joinReq(group, memberID string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = memberID
	r.SessionTimeoutMillis = 10_000
	r.RebalanceTimeoutMillis = 30_000
	r.ProtocolType = "consumer"
	r.Protocols = protos("range")
	return r
}

func syncReq(group, memberID string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = group
	r.MemberID = memberID
	r.Generation = gen
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr("range")
	for id, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	return r
}

func hbReq(group, memberID string, gen int32) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group = group
	r.MemberID = memberID
	r.Generation = gen
	return r
}

func commitReq(group, memberID string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = memberID
	r.Generation = gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = o
		rp.LeaderEpoch = 3
		rp.Metadata = kmsg.StringPtr("meta")
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

// commitCodes returns the error code of every partition of a commit.
func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	return h.joinAsyncCtx(context.Background(), req)
}

// joinAsyncCtx joins with ctx as the connection's context and no client.
func (h *harness) joinAsyncCtx(ctx context.Context, req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	return h.joinAsyncAs(ctx, NoCaller, req)
}

// joinAsyncAs joins with ctx as the connection's context and caller as
// the client.
func (h *harness) joinAsyncAs(ctx context.Context, caller Caller, req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ch <- h.c.JoinGroup(ctx, caller, req)
	}()
	return ch
}

// testCaller is a Caller naming a client that records what the
// coordinator tells it; onRefused, when set, runs on each refusal.
type testCaller struct {
	id, host  string
	onRefused func(rule rules.ID)

	mu       sync.Mutex
	refused  []string // "rule: reason"
	findings []string // "rule kind group: detail"
	created  []string
}

func (c *testCaller) Client() (id, host string) { return c.id, c.host }

func (c *testCaller) Refused(rule rules.ID, reason string) {
	c.mu.Lock()
	c.refused = append(c.refused, rule.String()+": "+reason)
	c.mu.Unlock()
	if c.onRefused != nil {
		c.onRefused(rule)
	}
}

func (c *testCaller) Finding(rule rules.ID, kind rules.Kind, group, detail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.findings = append(c.findings, rule.String()+" "+kind.String()+" "+group+": "+detail)
}

func (c *testCaller) GroupCreated(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = append(c.created, group)
}

// told returns copies of what the caller was told.
func (c *testCaller) told() (refused, findings, created []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.refused), slices.Clone(c.findings), slices.Clone(c.created)
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ch <- h.c.SyncGroup(context.Background(), req)
	}()
	return ch
}

// join calls JoinGroup for a request that must answer without blocking.
func (h *harness) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	return get(h.t, h.joinAsync(req))
}

func get[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(deadline):
		t.Fatalf("no answer within %s", deadline)
	}
	var zero T
	return zero
}

// still asserts that a blocked call has not answered.
func still[T any](t testing.TB, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("expected the call to block, it answered %+v", v)
	default:
	}
}

// waitUntil waits, without sleeping, until cond holds under the
// coordinator's lock.
func (h *harness) waitUntil(what string, cond func() bool) {
	h.t.Helper()
	limit := time.After(deadline)
	for {
		h.c.mu.Lock()
		ok := cond()
		if h.c.changed == nil {
			h.c.changed = make(chan struct{})
		}
		changed := h.c.changed
		h.c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-limit:
			h.t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// waitJoining waits until n members of group are blocked in JoinGroup.
func (h *harness) waitJoining(group string, n int) {
	h.t.Helper()
	h.waitUntil("members are blocked in JoinGroup", func() bool {
		g := h.c.groups[group]
		if g == nil {
			return false
		}
		k := 0
		for _, m := range g.members {
			if m.joinWait != nil {
				k++
			}
		}
		return k == n
	})
}

// waitSyncing waits until n members of group are blocked in SyncGroup.
func (h *harness) waitSyncing(group string, n int) {
	h.t.Helper()
	h.waitUntil("members are blocked in SyncGroup", func() bool {
		g := h.c.groups[group]
		if g == nil {
			return false
		}
		k := 0
		for _, m := range g.members {
			if m.syncWait != nil {
				k++
			}
		}
		return k == n
	})
}

func (h *harness) state(group string) string {
	h.t.Helper()
	gi, ok := h.c.Group(group)
	if !ok {
		return "none"
	}
	return gi.State
}

// memberID runs the MEMBER_ID_REQUIRED step and returns the id handed out.
func (h *harness) memberID(group string) string {
	h.t.Helper()
	r := h.join(joinReq(group, ""))
	require.Equal(h.t, kerr.MemberIDRequired.Code, r.ErrorCode)
	require.NotEmpty(h.t, r.MemberID)
	return r.MemberID
}

// stable forms a Stable group of n dynamic members and returns their ids (the
// first is the leader) and the generation. Member i is assigned "a-<id>".
func (h *harness) stable(group string, n int) ([]string, int32) {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.memberID(group)
	}
	chans := make([]<-chan *kmsg.JoinGroupResponse, n)
	for i, id := range ids {
		chans[i] = h.joinAsync(joinReq(group, id))
		if i == 0 && n > 1 {
			h.waitJoining(group, 1) // the first to join leads
		}
	}
	var gen int32
	for i, ch := range chans {
		r := get(h.t, ch)
		require.Equal(h.t, errNone, r.ErrorCode)
		require.Equal(h.t, ids[0], r.LeaderID)
		gen = r.Generation
		if i == 0 {
			require.Len(h.t, r.Members, n)
		} else {
			require.Empty(h.t, r.Members)
		}
	}
	assign := make(map[string]string, n)
	for _, id := range ids {
		assign[id] = "a-" + id
	}
	var follow []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids[1:] {
		follow = append(follow, h.syncAsync(syncReq(group, id, gen, nil)))
	}
	lr := h.c.SyncGroup(context.Background(), syncReq(group, ids[0], gen, assign))
	require.Equal(h.t, errNone, lr.ErrorCode)
	require.Equal(h.t, "a-"+ids[0], string(lr.MemberAssignment))
	for i, ch := range follow {
		r := get(h.t, ch)
		require.Equal(h.t, errNone, r.ErrorCode)
		require.Equal(h.t, "a-"+ids[i+1], string(r.MemberAssignment))
	}
	require.Equal(h.t, "Stable", h.state(group))
	return ids, gen
}
