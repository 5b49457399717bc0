package e2e_test

// KIP-848 consumer groups (group.protocol=consumer) end to end through kgo
// with kgo.ServerSideBalancer(): served in the kafka profile, recorded in
// the audit profile, not advertised in the VAST profile (kgo falls back to
// the classic protocol there).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// fastConsumerGroups makes KIP-848 members heartbeat every 50ms, so a
// rebalance settles in a few round trips rather than Kafka's 5s interval.
var fastConsumerGroups = broker.WithConsumerGroupTimeouts(coordinator.DefaultConsumerSessionTimeout, 50*time.Millisecond)

// serverSideMember returns a kgo consumer of topic in group that uses the
// KIP-848 protocol where the broker serves it.
func serverSideMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
	}, opts...)...)
}

// consumerGroupOf returns group, failing unless it is a KIP-848 consumer
// group.
func consumerGroupOf(t *testing.T, b *broker.Broker, group string) coordinator.GroupInfo {
	t.Helper()
	g, ok := b.Group(group)
	require.True(t, ok, "group %s exists", group)
	require.Equal(t, "consumer", g.Type, "group %s is a KIP-848 consumer group", group)
	return g
}

// stableWithMembers waits until group is Stable with n members, every one
// at its target.
func stableWithMembers(t *testing.T, b *broker.Broker, group string, n int) coordinator.GroupInfo {
	t.Helper()
	var g coordinator.GroupInfo
	fixtures.WaitFor(t, fmt.Sprintf("group %s stable with %d members", group, n), func() bool {
		g, _ = b.Group(group)
		return g.Type == "consumer" && g.State == "Stable" && len(g.Members) == n
	})
	return g
}

// ownedCount counts the partitions a group's members hold now.
func ownedCount(g coordinator.GroupInfo) map[string]int {
	out := map[string]int{}
	for _, m := range g.Members {
		for _, ps := range m.Current {
			out[m.MemberID] += len(ps)
		}
	}
	return out
}

// TestConsumerProtocolMembersComeAndGo: in the kafka profile, members join
// and leave a KIP-848 group while records flow; every record is read at
// least once, no partition is ever held by two members, and the final
// commits are at the end offsets.
func TestConsumerProtocolMembersComeAndGo(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("flow", 6), fixtures.BrokerOptions(fastConsumerGroups))
	b := k.Broker()
	producer := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))

	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	consume := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			mu.Lock()
			for _, r := range fs.Records() {
				seen[string(r.Value)] = true
			}
			mu.Unlock()
			// A commit refused with STALE_MEMBER_EPOCH during a
			// rebalance is retried by the next one: at least once.
			_ = cl.CommitUncommittedOffsets(ctx)
		}
	}
	start := func(name string) (*kgo.Client, context.CancelFunc, chan struct{}) {
		cl := serverSideMember(t, k.Addr(), "flow-g", "flow", kgo.ClientID(name))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); consume(ctx, cl) }()
		return cl, cancel, done
	}
	produced := 0
	produce := func(n int) {
		for i := 0; i < n; i++ {
			produceSync(t, producer, &kgo.Record{Topic: "flow", Partition: int32(produced % 6), Value: fmt.Appendf(nil, "r%d", produced)})
			produced++
		}
	}

	a, stopA, doneA := start("a")
	produce(60)
	stableWithMembers(t, b, "flow-g", 1)
	bcl, stopB, doneB := start("b")
	produce(60)
	g := stableWithMembers(t, b, "flow-g", 2)
	assert.Equal(t, map[string]int{g.Members[0].MemberID: 3, g.Members[1].MemberID: 3}, ownedCount(g), "uniform splits six partitions evenly")
	c, stopC, doneC := start("c")
	produce(60)
	g = stableWithMembers(t, b, "flow-g", 3)
	for id, n := range ownedCount(g) {
		assert.Equal(t, 2, n, "member %s", id)
	}
	assert.Equal(t, g.GroupEpoch, g.AssignmentEpoch)

	// b leaves (epoch -1) while records keep coming.
	stopB()
	<-doneB
	bcl.Close()
	produce(60)
	g = stableWithMembers(t, b, "flow-g", 2)
	assert.Len(t, ownedCount(g), 2)

	fixtures.WaitFor(t, "every record read", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == produced
	})
	// Final commits: the members left commit what they read.
	adm := kadm.NewClient(producer)
	ends, err := adm.ListEndOffsets(ctxT(t), "flow")
	require.NoError(t, err)
	fixtures.WaitFor(t, "commits at the end offsets", func() bool {
		// A commit refused with a stale epoch while the group moved on
		// is made again once its members have their new epochs.
		for _, cl := range []*kgo.Client{a, c} {
			_ = cl.CommitUncommittedOffsets(context.Background())
		}
		offs, err := adm.FetchOffsets(context.Background(), "flow-g")
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			o, found := offs.Lookup("flow", e.Partition)
			ok = ok && found && o.At == e.Offset
		})
		return ok
	})
	stopA()
	stopC()
	<-doneA
	<-doneC
}

// cuttable is a kgo dialer whose connections can all be cut at once, like
// a process killed without leaving its group.
type cuttable struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cuttable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("cut")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cuttable) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, conn := range c.conns {
		conn.Close()
	}
}

// TestConsumerProtocolSessionTimeout: a member killed without leaving keeps
// its partitions until its session timeout passes on the broker's (manual)
// clock; then it is fenced, its partitions move to the member left, and a
// commit with its member id is refused, as is one at an older epoch for a
// partition the member left was given after it.
func TestConsumerProtocolSessionTimeout(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("fence", 4),
		fixtures.BrokerOptions(broker.WithClock(clk), fastConsumerGroups))
	b := k.Broker()
	k.Produce("fence", 0, "a", "b")
	k.Produce("fence", 3, "c")

	var wire cuttable
	victim := serverSideMember(t, k.Addr(), "fence-g", "fence", kgo.ClientID("victim"), kgo.Dialer(wire.dial))
	stableWithMembers(t, b, "fence-g", 1)
	survivor := serverSideMember(t, k.Addr(), "fence-g", "fence", kgo.ClientID("survivor"))
	g := stableWithMembers(t, b, "fence-g", 2)
	var victimID, survivorID string
	var victimParts, survivorParts []int32
	for _, m := range g.Members {
		if m.ClientID == "victim" {
			victimID, victimParts = m.MemberID, m.Current["fence"]
		} else {
			survivorID, survivorParts = m.MemberID, m.Current["fence"]
		}
	}
	require.NotEmpty(t, victimParts)
	require.NotEmpty(t, survivorParts)
	require.NotEmpty(t, victimID)
	require.NotEmpty(t, survivorID)
	go survivor.PollFetches(ctxT(t)) // keep the survivor consuming

	wire.kill()
	victim.Close() // its leave cannot get through
	// Step the clock past the session timeout; after each step wait for
	// the survivor's heartbeat so that only the victim's session ends.
	step := coordinator.DefaultConsumerSessionTimeout / 5
	for elapsed := time.Duration(0); elapsed <= coordinator.DefaultConsumerSessionTimeout; elapsed += step {
		clk.Advance(step)
		now := clk.Now()
		fixtures.WaitFor(t, "the survivor heartbeats", func() bool {
			g, _ := b.Group("fence-g")
			for _, m := range g.Members {
				if m.MemberID == survivorID {
					return !m.Heartbeat.Before(now)
				}
			}
			return false
		})
	}
	g = stableWithMembers(t, b, "fence-g", 1)
	assert.Equal(t, survivorID, g.Members[0].MemberID, "the silent member was fenced")
	assert.Equal(t, map[string][]int32{"fence": {0, 1, 2, 3}}, g.Members[0].Current, "its partitions moved to the survivor")

	// The fenced member's commit is refused; so is one at an older epoch
	// of a partition the survivor was given later, while one of a
	// partition it held since that epoch passes (KIP-1251, Kafka 4.3).
	commit := func(member string, epoch, partition int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "fence-g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "fence"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), k.Client())
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	epoch := g.Members[0].MemberEpoch
	assert.Equal(t, kerr.UnknownMemberID.Code, commit(victimID, epoch, victimParts[0]))
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit(survivorID, epoch-1, victimParts[0]))
	assert.Equal(t, int16(0), commit(survivorID, epoch-1, survivorParts[0]))
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit(survivorID, epoch+1, survivorParts[0]))
	assert.Equal(t, int16(0), commit(survivorID, epoch, victimParts[0]))
}

// TestConsumerProtocolProfiles: the kafka profile serves KIP-848, the audit
// profile serves it and records each request under ClassicGroupsOnly with
// kgo's advice, and the VAST profile does not advertise it, so kgo with
// ServerSideBalancer falls back to the classic protocol. KIP-848 assigns
// partitions by topic ID, so NoTopicIDs on in the kafka profile (every ID
// reported is zero) hides it too; audited, each request is a finding of
// that rule.
func TestConsumerProtocolProfiles(t *testing.T) {
	t.Parallel()
	withRule := func(mode rules.Mode) fixtures.Option {
		r := rules.Kafka()
		r.SetMode(rules.NoTopicIDs, mode)
		return fixtures.Rules(r)
	}
	for _, c := range []struct {
		name    string
		opt     fixtures.Option
		classic bool   // kgo falls back to the classic protocol
		finding string // the rule each KIP-848 request is a finding of, or ""
	}{
		{"kafka", fixtures.Profile("kafka"), false, ""},
		{"audit", fixtures.Profile("audit"), false, rules.ClassicGroupsOnly.String()},
		{"vast", fixtures.Profile("vast"), true, ""},
		{"kafka with NoTopicIDs", withRule(rules.Enforce), true, ""},
		{"kafka with NoTopicIDs audited", withRule(rules.Audit), false, rules.NoTopicIDs.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := fixtures.Start(t, c.opt, fixtures.Topic("p", 2), fixtures.BrokerOptions(fastConsumerGroups))
			b := k.Broker()
			k.Produce("p", 0, "x")
			cl := serverSideMember(t, k.Addr(), "p-g", "p")
			pollN(t, cl, 1)
			g, ok := b.Group("p-g")
			require.True(t, ok)
			found := ""
			for _, f := range b.Findings() {
				if f.API == "ConsumerGroupHeartbeat" {
					found = f.Rule
					if f.Rule == rules.ClassicGroupsOnly.String() {
						assert.Contains(t, f.Advice, "kgo.ServerSideBalancer")
					}
				}
			}
			assert.Equal(t, c.finding, found, "the rule each KIP-848 request is a finding of")
			if c.classic {
				assert.Equal(t, "classic", g.Type, "kgo falls back to the classic protocol")
				assert.Equal(t, "consumer", g.ProtocolType)
			} else {
				assert.Equal(t, "consumer", g.Type)
			}
		})
	}
}

// TestConsumerProtocolBadInput sends every kind of bad ConsumerGroupHeartbeat
// on one connection: each gets the error Kafka sends, the connection stays
// usable, and neither the member's own group nor a classic group beside it
// is disturbed, nor their committed offsets.
func TestConsumerProtocolBadInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("bad", 2), fixtures.BrokerOptions(fastConsumerGroups))
	b := k.Broker()
	k.Produce("bad", 0, "x")
	classic := groupConsumer(t, k.Addr(), "classic-g", "bad")
	pollN(t, classic, 1)
	require.NoError(t, classic.CommitUncommittedOffsets(ctxT(t)))
	before, _ := b.Group("classic-g")
	require.Equal(t, "Stable", before.State)

	conn := dialRaw(t, k.Addr())
	corr := int32(0)
	beat := func(edit func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "bad-g", "m1", 10_000
		req.SubscribedTopicNames, req.Topics = []string{"bad"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		edit(req)
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		corr++
		roundTrip(t, conn, 1, req, resp, corr)
		return resp
	}
	joined := beat(func(*kmsg.ConsumerGroupHeartbeatRequest) {})
	require.Equal(t, int16(0), joined.ErrorCode)
	require.Equal(t, int32(1), joined.MemberEpoch)
	require.NotNil(t, joined.Assignment)
	require.Len(t, joined.Assignment.Topics, 1)
	assert.Equal(t, []int32{0, 1}, joined.Assignment.Topics[0].Partitions)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = "bad-g", "m1", 1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "bad"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	commitResp := kmsg.NewPtrOffsetCommitResponse()
	corr++
	roundTrip(t, conn, 9, commit, commitResp, corr)
	require.Equal(t, int16(0), commitResp.Topics[0].Partitions[0].ErrorCode)

	cases := []struct {
		name string
		edit func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"future member epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 7 }, kerr.FencedMemberEpoch},
		{"wrong member epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3; r.Topics = nil }, kerr.FencedMemberEpoch},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "nobody", 1 }, kerr.UnknownMemberID},
		{"empty group id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"overlong group id", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group = string(make([]byte, coordinator.MaxGroupIDBytes+1))
		}, kerr.InvalidGroupID},
		{"empty member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"heartbeat for a classic group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "classic-g" }, kerr.GroupIDNotFound},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.SubscribedTopicNames, r.SubscribedTopicRegex = "m2", nil, kmsg.StringPtr("ba(d")
		}, kerr.InvalidRegularExpression},
		{"overlong regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.SubscribedTopicNames = "m2", nil
			r.SubscribedTopicRegex = kmsg.StringPtr(string(make([]byte, coordinator.MaxSubscribedTopicRegexBytes+1)))
		}, kerr.InvalidRegularExpression},
		{"regex whose program passes the bound", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			// 220 bytes, over 20,000 instructions of Go's regexp program.
			r.MemberID, r.SubscribedTopicNames = "m2", nil
			r.SubscribedTopicRegex = kmsg.StringPtr(strings.Repeat("[a-z]{1000}", 20))
		}, kerr.InvalidRegularExpression},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberID, r.ServerAssignor = "m2", kmsg.StringPtr("sticky")
		}, kerr.UnsupportedAssignor},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.RebalanceTimeoutMillis = "m2", -1 }, kerr.InvalidRequest},
		{"negative rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.RebalanceTimeoutMillis = "m2", -5 }, kerr.InvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.Topics = "m2", nil }, kerr.InvalidRequest},
		{"invalid epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
	}
	for _, c := range cases {
		resp := beat(c.edit)
		assert.Equal(t, c.want.Code, resp.ErrorCode, "%s: got %s", c.name, kerr.ErrorForCode(resp.ErrorCode))
		assert.Nil(t, resp.Assignment, c.name)
	}

	costly := beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.MemberID, r.SubscribedTopicNames = "m2", nil
		r.SubscribedTopicRegex = kmsg.StringPtr(strings.Repeat("[a-z]{1000}", 20))
	})
	require.NotNil(t, costly.ErrorMessage)
	assert.Contains(t, *costly.ErrorMessage, "more than 10000 instructions", "the refusal names the bound")

	// The member still heartbeats at its epoch on the same connection.
	ok := beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 })
	require.Equal(t, int16(0), ok.ErrorCode)
	assert.Equal(t, int32(1), ok.MemberEpoch)

	// It leaves; a commit with its id is then refused.
	left := beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 })
	require.Equal(t, int16(0), left.ErrorCode)
	assert.Equal(t, int32(-1), left.MemberEpoch)
	// A commit from the member after it left (a fenced member's) is
	// refused; the group is Empty, so only an admin commit (epoch -1,
	// no member) goes through.
	commit.Topics[0].Partitions[0].Offset = 5
	commit.Generation = 2
	corr++
	roundTrip(t, conn, 9, commit, commitResp, corr)
	assert.Equal(t, kerr.UnknownMemberID.Code, commitResp.Topics[0].Partitions[0].ErrorCode)
	off, _ := b.CommittedOffset("bad-g", "bad", 0)
	assert.Equal(t, int64(1), off, "the member's commit is kept, the fenced one's not stored")

	after, _ := b.Group("classic-g")
	assert.Equal(t, "Stable", after.State)
	assert.Equal(t, before.Generation, after.Generation, "the classic group did not rebalance")
	assert.Equal(t, before.Offsets, after.Offsets)
}

// TestConsumerProtocolFaults: the broker's faults work on a KIP-848 group at
// three brokers: a heartbeat failed with FENCED_MEMBER_EPOCH (the member
// rejoins and gets its partitions back), the coordinator moved to another
// broker (NOT_COORDINATOR, the members find the new one) and the
// coordinator's broker down and up again within the session timeout. After
// each the group reconciles with the same members and records still flow.
// The control plane shows the group's protocol, epochs and targets.
func TestConsumerProtocolFaults(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Brokers(3), fixtures.Topic("faults", 4),
		fixtures.BrokerOptions(fastConsumerGroups))
	b := k.Broker()
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, id := range []string{"one", "two"} {
		cl := serverSideMember(t, k.Addr(), "faults-g", "faults", kgo.ClientID(id))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				mu.Lock()
				for _, r := range fs.Records() {
					seen[string(r.Value)] = true
				}
				mu.Unlock()
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	n := 0
	flow := func(what string) {
		t.Helper()
		for p := int32(0); p < 4; p++ {
			k.Produce("faults", p, fmt.Sprintf("%s-%d", what, p))
			n++
		}
		k.WaitFor("every record read after "+what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == n
		})
	}
	k.WaitGroupReconciled("faults-g", 2)
	flow("start")
	members := func() []string {
		var ids []string
		for _, m := range k.Group("faults-g").Members {
			ids = append(ids, m.MemberID)
		}
		return ids
	}
	before := members()

	k.FailNext(kmsg.ConsumerGroupHeartbeat, 1, kerr.FencedMemberEpoch, fixtures.OnGroup("faults-g"))
	k.WaitFor("the failed heartbeat", func() bool {
		for _, r := range b.Requests() {
			if r.API == kmsg.ConsumerGroupHeartbeat && r.ErrorCode == kerr.FencedMemberEpoch.Code {
				return true
			}
		}
		return false
	})
	k.WaitGroupReconciled("faults-g", 2)
	assert.ElementsMatch(t, before, members(), "the fenced member rejoined with its member id")
	flow("fenced")

	coord := b.CoordinatorOf("faults-g")
	require.NoError(t, b.MoveCoordinator("faults-g", (coord+1)%3))
	k.WaitFor("a heartbeat on the new coordinator", func() bool {
		for _, r := range b.Requests() {
			if r.API == kmsg.ConsumerGroupHeartbeat && r.Broker == (coord+1)%3 && r.ErrorCode == 0 {
				return true
			}
		}
		return false
	})
	k.WaitGroupReconciled("faults-g", 2)
	flow("moved")

	coord = b.CoordinatorOf("faults-g")
	require.NoError(t, b.BrokerDown(coord))
	require.NoError(t, b.BrokerUp(coord))
	k.WaitGroupReconciled("faults-g", 2)
	assert.ElementsMatch(t, before, members(), "no member was fenced while its coordinator was down")
	flow("down and up")

	g := k.Group("faults-g")
	assert.Equal(t, "consumer", g.Type)
	assert.Equal(t, g.GroupEpoch, g.AssignmentEpoch)
	for _, m := range g.Members {
		assert.Equal(t, g.AssignmentEpoch, m.MemberEpoch)
		assert.Equal(t, m.Target, m.Assigned)
	}
}

// TestConsumerProtocolRegexSeesNewTopics: a KIP-848 member subscribed by
// regular expression (kgo sends it as SubscribedTopicRegex) is assigned a
// matching topic created after it joined, and one deleted leaves its
// assignment.
func TestConsumerProtocolRegexSeesNewTopics(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("rx-a", 1), fixtures.BrokerOptions(fastConsumerGroups))
	b := k.Broker()
	cl := serverSideMember(t, k.Addr(), "rx-g", "rx-.*", kgo.ConsumeRegex())
	// The coordinator resolves a regex after the heartbeat that brings it,
	// as Kafka does: the member is first reconciled with nothing.
	k.WaitAssignment("rx-g", 1)
	k.WaitGroupReconciled("rx-g", 1)
	g := consumerGroupOf(t, b, "rx-g")
	assert.Contains(t, g.Members[0].Regex, "rx-.*", "kgo wraps it to match anywhere in a name")
	assert.Equal(t, map[string][]int32{"rx-a": {0}}, g.Members[0].Current)

	adm := kadm.NewClient(k.Client())
	_, err := adm.CreateTopic(ctxT(t), 2, 1, nil, "rx-b")
	require.NoError(t, err)
	k.Produce("rx-b", 1, "new")
	recs := pollN(t, cl, 1)
	assert.Equal(t, "rx-b", recs[0].Topic)
	k.WaitAssignment("rx-g", 3)
	k.WaitGroupReconciled("rx-g", 1)
	assert.Equal(t, map[string][]int32{"rx-a": {0}, "rx-b": {0, 1}}, consumerGroupOf(t, b, "rx-g").Members[0].Current)

	_, err = adm.DeleteTopic(ctxT(t), "rx-a")
	require.NoError(t, err)
	k.WaitFor("rx-a leaves the assignment", func() bool {
		g, _ := b.Group("rx-g")
		return g.State == "Stable" && len(g.Members) == 1 && len(g.Members[0].Current) == 1
	})
	assert.Equal(t, map[string][]int32{"rx-b": {0, 1}}, consumerGroupOf(t, b, "rx-g").Members[0].Current)
}

// TestConsumerGroupOptions: group.consumer.max.size and the session and
// heartbeat bounds are broker options; New refuses values Kafka refuses.
func TestConsumerGroupOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []broker.Option{
		broker.WithConsumerGroupTimeouts(5*time.Second, 5*time.Second),
		broker.WithConsumerGroupTimeouts(0, time.Second),
		broker.WithConsumerGroupMaxSize(0),
	} {
		_, err := broker.New(broker.WithProfile("kafka"), opt)
		assert.Error(t, err)
	}
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithConsumerGroupMaxSize(1),
		broker.WithConsumerGroupTimeouts(time.Minute, 2*time.Second))
	cl := newClient(t, b.Addr())
	join := func(member string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "small", member, 10_000
		req.SubscribedTopicNames, req.Topics = []string{}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		return resp
	}
	first := join("m1")
	require.Equal(t, int16(0), first.ErrorCode)
	assert.Equal(t, int32(2000), first.HeartbeatIntervalMillis, "members are told the broker's interval")
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, join("m2").ErrorCode)
}
