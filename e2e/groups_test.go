package e2e_test

// Consumer groups end to end through kgo and kadm: sharing partitions,
// committing and resuming, the seed 001 crash stories, and VAST's group
// rules.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// pollNothingNew produces a marker record and polls until it arrives,
// returning every record seen before it: what the group had not yet consumed.
func pollUntilMarker(t *testing.T, producer, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	produceSync(t, producer, &kgo.Record{Topic: topic, Value: []byte("marker")})
	ctx := ctxT(t)
	var before []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, r := range fs.Records() {
			if string(r.Value) == "marker" {
				return before
			}
			before = append(before, r)
		}
	}
}

func assignedSizes(t *testing.T, adm *kadm.Client, group string) []int {
	groups, err := adm.DescribeGroups(ctxT(t), group)
	require.NoError(t, err)
	var sizes []int
	for _, m := range groups[group].Members {
		n := 0
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				n += len(tp.Partitions)
			}
		}
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	return sizes
}

// scenarioGroups is seed 000's group story, run against every broker: a
// group reads everything and commits, a new member resumes from the commit,
// two members share three partitions 1 and 2, and another group reads the
// whole topic independently.
func scenarioGroups(t *testing.T, addr string) {
	producer := newClient(t, addr)
	createTopic(t, producer, "orders", 3, nil)
	for i := 0; i < 30; i++ {
		produceSync(t, producer, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprintf("order-%d", i)), Value: []byte(fmt.Sprint(i))})
	}
	adm := kadm.NewClient(producer)

	c := groupConsumer(t, addr, "billing", "orders")
	got := pollN(t, c, 30)
	assert.Len(t, got, 30)
	require.NoError(t, c.CommitUncommittedOffsets(ctxT(t)))
	offsets, err := adm.FetchOffsets(ctxT(t), "billing")
	require.NoError(t, err)
	ends, err := adm.ListEndOffsets(ctxT(t), "orders")
	require.NoError(t, err)
	for p := int32(0); p < 3; p++ {
		committed, _ := offsets.Lookup("orders", p)
		end, _ := ends.Lookup("orders", p)
		assert.Equal(t, end.Offset, committed.At, "partition %d: committed is the next offset to read, lag 0", p)
	}
	c.Close()

	for i := 30; i < 35; i++ {
		produceSync(t, producer, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprintf("order-%d", i)), Value: []byte(fmt.Sprint(i))})
	}
	resumed := groupConsumer(t, addr, "billing", "orders")
	var values []string
	for _, r := range pollN(t, resumed, 5) {
		values = append(values, string(r.Value))
	}
	sort.Strings(values)
	assert.Equal(t, []string{"30", "31", "32", "33", "34"}, values, "a new member resumes from the committed offsets")
	resumed.Close()

	c1 := groupConsumer(t, addr, "rebalance", "orders")
	c2 := groupConsumer(t, addr, "rebalance", "orders")
	fixtures.WaitFor(t, "two members sharing three partitions", func() bool {
		s := assignedSizes(t, adm, "rebalance")
		return len(s) == 2 && s[0] == 1 && s[1] == 2
	})
	_, _ = c1, c2

	other := groupConsumer(t, addr, "audit", "orders")
	assert.Len(t, pollN(t, other, 35), 35, "another group reads everything, independently")

	deleted, err := adm.DeleteGroups(ctxT(t), "rebalance")
	require.NoError(t, err)
	assert.ErrorIs(t, deleted["rebalance"].Err, kerr.NonEmptyGroup, "a group with members cannot be deleted")
	c1.Close()
	c2.Close()
	fixtures.WaitFor(t, "the group to empty", func() bool {
		groups, err := adm.DescribeGroups(ctxT(t), "rebalance")
		return err == nil && groups["rebalance"].State == "Empty"
	})
	deleted, err = adm.DeleteGroups(ctxT(t), "rebalance")
	require.NoError(t, err)
	assert.NoError(t, deleted["rebalance"].Err)
}

// TestGroupScenarios runs the group story against vastfake in both profiles
// and against kfake: they agree.
func TestGroupScenarios(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile))
		scenarioGroups(t, b.Addr())
	})
	t.Run("kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(-1))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		scenarioGroups(t, c.ListenAddrs()[0])
	})
}

// TestCrashStories retells seed 001: with auto-commit the client commits
// what it polled before the app processed it, so a crash loses the record;
// committing after processing redelivers it instead.
func TestCrashStories(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "payments", Partitions: 1}))
	producer := newClient(t, b.Addr())

	t.Run("auto-commit loses the record", func(t *testing.T) {
		produceSync(t, producer, &kgo.Record{Topic: "payments", Value: []byte("pay-1")})
		crashing := newClient(t, b.Addr(), kgo.ConsumerGroup("auto"), kgo.ConsumeTopics("payments"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(100*time.Millisecond))
		got := pollN(t, crashing, 1)
		assert.Equal(t, "pay-1", string(got[0].Value))
		// The app hands pay-1 to a worker and polls again; kgo then treats
		// the first poll's records as done and its auto-commit timer
		// commits them.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		crashing.PollFetches(done)
		fixtures.WaitFor(t, "the background commit", func() bool {
			off, ok := b.CommittedOffset("auto", "payments", 0)
			return ok && off == 1
		})
		crashing.Close() // the app dies before the worker processed pay-1

		restarted := newClient(t, b.Addr(), kgo.ConsumerGroup("auto"), kgo.ConsumeTopics("payments"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		assert.Empty(t, pollUntilMarker(t, producer, restarted, "payments"), "pay-1 is never seen again")
	})

	t.Run("commit after processing redelivers", func(t *testing.T) {
		crashing := groupConsumer(t, b.Addr(), "manual", "payments")
		first := pollN(t, crashing, 1)
		crashing.Close() // dies before processing and committing

		restarted := groupConsumer(t, b.Addr(), "manual", "payments")
		again := pollN(t, restarted, 1)
		assert.Equal(t, first[0].Value, again[0].Value, "the record is delivered again")
		assert.Equal(t, first[0].Offset, again[0].Offset)
	})
}

// TestCooperativeStickyRefused: VAST rebalances eagerly only, so a member
// offering only cooperative-sticky is refused.
func TestCooperativeStickyRefused(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 3}))
		produceSync(t, newClient(t, b.Addr()), &kgo.Record{Topic: "t", Value: []byte("x")})
		c := groupConsumer(t, b.Addr(), "coop", "t", kgo.Balancers(kgo.CooperativeStickyBalancer()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			fs := c.PollFetches(ctx)
			require.NoError(t, ctx.Err(), "neither a record nor an error arrived")
			if err := fs.Err0(); err != nil {
				if profile == "vast" {
					assert.ErrorIs(t, err, kerr.InconsistentGroupProtocol, "a member offering only cooperative-sticky is refused")
					return
				}
				t.Fatalf("kafka profile: %v", err)
			}
			if fs.NumRecords() > 0 {
				assert.Equal(t, "kafka", profile, "only the kafka profile accepts cooperative-sticky")
				return
			}
		}
	})
}

// TestStaticMembershipIgnored: VAST accepts group.instance.id but the member
// is dynamic, so a restart with the same id rebalances; Kafka replaces the
// static member without a rebalance.
func TestStaticMembershipIgnored(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 3}))
		produceSync(t, newClient(t, b.Addr()), &kgo.Record{Topic: "t", Value: []byte("x")})
		first := groupConsumer(t, b.Addr(), "static", "t", kgo.InstanceID("pod-1"))
		pollN(t, first, 1)
		g, _ := b.Group("static")
		require.Equal(t, "Stable", g.State)
		gen := g.Generation
		first.Close() // a static member does not leave on close
		g, _ = b.Group("static")
		assert.Len(t, g.Members, 1, "kgo sent no LeaveGroup for its instance id, so the member stays until its session ends")

		restarted := groupConsumer(t, b.Addr(), "static", "t", kgo.InstanceID("pod-1"))
		if profile == "vast" {
			// The restarted pod is a new member; the old one never left,
			// so the rebalance waits for it until its rebalance timeout
			// passes on the broker's clock.
			fixtures.WaitFor(t, "the restart to start a rebalance", func() bool {
				g, _ := b.Group("static")
				return g.State == "PreparingRebalance"
			})
			clk.Advance(6 * time.Second)
		}
		pollN(t, restarted, 1)
		g, _ = b.Group("static")
		if profile == "vast" {
			assert.Greater(t, g.Generation, gen, "the restart rebalanced the group")
			assert.Empty(t, g.Members[0].InstanceID, "the instance id is ignored")
		} else {
			assert.Equal(t, gen, g.Generation, "Kafka swaps the static member in without a rebalance")
			assert.Equal(t, "pod-1", g.Members[0].InstanceID)
		}
	})
}

// TestGroupLimit: a view holds at most 256 groups; the 257th is refused and
// listing returns 256.
func TestGroupLimit(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
		adm := kadm.NewClient(newClient(t, b.Addr()))
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1})
		for i := 0; i < 256; i++ {
			// A commit with generation -1 creates an empty group, as
			// assign()+commit does.
			resp, err := adm.CommitOffsets(ctxT(t), fmt.Sprintf("g%03d", i), offs)
			require.NoError(t, err)
			require.NoError(t, resp.Error())
		}
		resp, err := adm.CommitOffsets(ctxT(t), "g256", offs)
		require.NoError(t, err)
		listed, err := adm.ListGroups(ctxT(t))
		require.NoError(t, err)
		if profile == "vast" {
			assert.ErrorIs(t, resp.Error(), kerr.GroupMaxSizeReached, "the 257th group is refused")
			assert.Len(t, listed, 256)
			// A consumer joining as the 257th group is refused too.
			c := groupConsumer(t, b.Addr(), "joiner", "t")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fs := c.PollFetches(ctx)
			assert.ErrorIs(t, fs.Err0(), kerr.GroupMaxSizeReached)
		} else {
			assert.NoError(t, resp.Error())
			assert.Len(t, listed, 257)
		}
	})
}

// TestSessionTimeoutOnBrokerClock: a member that stops heartbeating is
// removed when the broker's clock passes its session timeout, with no real
// waiting.
func TestSessionTimeoutOnBrokerClock(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
	cl := newClient(t, b.Addr())

	// A member that joins and syncs over the wire, then goes silent.
	join := rawJoin("silent", 10_000, 10_000)
	resp, err := join.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = resp.MemberID
		resp, err = join.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
	}
	require.Equal(t, int16(0), resp.ErrorCode)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "silent", resp.MemberID, resp.Generation
	sresp, err := sync.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), sresp.ErrorCode)
	g, _ := b.Group("silent")
	require.Equal(t, "Stable", g.State)
	require.Len(t, g.Members, 1)

	clk.Advance(9 * time.Second)
	g, _ = b.Group("silent")
	assert.Len(t, g.Members, 1, "still inside its session timeout")
	clk.Advance(2 * time.Second)
	g, _ = b.Group("silent")
	assert.Equal(t, "Empty", g.State, "removed once the session timeout passed on the broker's clock")
	assert.Empty(t, g.Members)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "silent", resp.MemberID, resp.Generation
	hresp, err := hb.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.UnknownMemberID.Code, hresp.ErrorCode, "the removed member learns it on its next heartbeat")
}

// TestFailoverDropsOffsets: after a VAST failover committed offsets are gone
// and a group restarts from auto.offset.reset.
func TestFailoverDropsOffsets(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
	producer := newClient(t, b.Addr())
	for i := 0; i < 3; i++ {
		produceSync(t, producer, &kgo.Record{Topic: "t", Value: []byte{byte(i)}})
	}
	c := groupConsumer(t, b.Addr(), "g", "t")
	pollN(t, c, 3)
	require.NoError(t, c.CommitUncommittedOffsets(ctxT(t)))
	c.Close()
	off, ok := b.CommittedOffset("g", "t", 0)
	require.True(t, ok)
	require.Equal(t, int64(3), off)

	b.Failover()
	_, ok = b.CommittedOffset("g", "t", 0)
	assert.False(t, ok, "committed offsets are not replicated")
	again := groupConsumer(t, b.Addr(), "g", "t")
	assert.Len(t, pollN(t, again, 3), 3, "the group starts again from earliest")
}

// TestDeleteTopicDeletesOffsets: deleting a topic removes every group's
// committed offsets for it.
func TestDeleteTopicDeletesOffsets(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}, broker.TopicSpec{Name: "keep", Partitions: 1}))
	adm := kadm.NewClient(newClient(t, b.Addr()))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "keep", Partition: 0, At: 0, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctxT(t), "g", offs)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	_, err = adm.DeleteTopics(ctxT(t), "t")
	require.NoError(t, err)
	_, ok := b.CommittedOffset("g", "t", 0)
	assert.False(t, ok)
	_, ok = b.CommittedOffset("g", "keep", 0)
	assert.True(t, ok)
}

// rawJoin is a consumer JoinGroup for topic "t" with the range protocol, no
// member id and the given timeouts, to send by hand.
func rawJoin(group string, sessionMillis, rebalanceMillis int32) *kmsg.JoinGroupRequest {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, sessionMillis, rebalanceMillis, "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	join.Protocols = append(join.Protocols, proto)
	return join
}

// renamedBalancer is an eager kgo balancer under another protocol name, as
// kafkajs's "RoundRobinAssigner" or an application's own assignor is.
type renamedBalancer struct {
	kgo.GroupBalancer
	name string
}

func (b renamedBalancer) ProtocolName() string { return b.name }

// TestEagerAssignorsByAnyName: VAST refuses cooperative rebalancing, not
// eager assignors with other names. Groups whose members offer kafkajs's
// RoundRobinAssigner, a custom name or the eager sticky assignor consume in
// both profiles; a member offering cooperative-sticky and range joins with
// range under VAST and with cooperative-sticky, its first choice, under
// Kafka.
func TestEagerAssignorsByAnyName(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 3}))
		produceSync(t, newClient(t, b.Addr()), &kgo.Record{Topic: "t", Value: []byte("x")})
		mixed := "cooperative-sticky"
		if profile == "vast" {
			mixed = "range"
		}
		for _, tc := range []struct {
			group, protocol string
			balancers       []kgo.GroupBalancer
		}{
			{"kafkajs", "RoundRobinAssigner", []kgo.GroupBalancer{renamedBalancer{kgo.RoundRobinBalancer(), "RoundRobinAssigner"}}},
			{"custom", "by-region", []kgo.GroupBalancer{renamedBalancer{kgo.RangeBalancer(), "by-region"}}},
			{"sticky", "sticky", []kgo.GroupBalancer{kgo.StickyBalancer()}},
			{"mixed", mixed, []kgo.GroupBalancer{kgo.CooperativeStickyBalancer(), kgo.RangeBalancer()}},
		} {
			c := groupConsumer(t, b.Addr(), tc.group, "t", kgo.Balancers(tc.balancers...))
			pollN(t, c, 1)
			g, ok := b.Group(tc.group)
			require.True(t, ok, tc.group)
			assert.Equal(t, tc.protocol, g.Protocol, tc.group)
			c.Close()
		}
	})
}

// TestSessionTimeoutBounds: as in Kafka, a JoinGroup whose session timeout
// is outside group.min.session.timeout.ms (6 s) and
// group.max.session.timeout.ms (30 min) gets INVALID_SESSION_TIMEOUT, in
// both profiles; any rebalance timeout is accepted (Kafka Streams sends
// Integer.MAX_VALUE). The broker options move the bounds.
func TestSessionTimeoutBounds(t *testing.T) {
	t.Parallel()
	const maxInt32 = 1<<31 - 1
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile))
		cl := newClient(t, b.Addr())
		for _, tc := range []struct {
			session int32
			want    int16
		}{
			{5_999, kerr.InvalidSessionTimeout.Code},
			{maxInt32, kerr.InvalidSessionTimeout.Code},
			{-1, kerr.InvalidSessionTimeout.Code},
			{6_000, kerr.MemberIDRequired.Code},
			{30 * 60 * 1000, kerr.MemberIDRequired.Code},
		} {
			resp, err := rawJoin("bounds", tc.session, maxInt32).RequestWith(ctxT(t), cl)
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.ErrorCode, "session timeout %d ms", tc.session)
		}
	})
	t.Run("settable", func(t *testing.T) {
		b := fixtures.StartBroker(t, broker.WithMinSessionTimeout(time.Second), broker.WithMaxSessionTimeout(0))
		cl := newClient(t, b.Addr())
		for session, want := range map[int32]int16{999: kerr.InvalidSessionTimeout.Code, 1000: kerr.MemberIDRequired.Code, maxInt32: kerr.MemberIDRequired.Code} {
			resp, err := rawJoin("bounds", session, 1000).RequestWith(ctxT(t), cl)
			require.NoError(t, err)
			assert.Equal(t, want, resp.ErrorCode, "session timeout %d ms", session)
		}
	})
}

// TestDisconnectedJoinDoesNotHoldTheGroup: a client that gets a member id
// with MEMBER_ID_REQUIRED (here with the longest session timeout and a
// rebalance timeout of 2^31-1 ms) and goes away without using it does not
// hold up the group: its id is forgotten when its connection closes, so a
// real consumer forms the group at once. The broker's clock never moves:
// nothing here waits for a timeout.
func TestDisconnectedJoinDoesNotHoldTheGroup(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
		produceSync(t, newClient(t, b.Addr()), &kgo.Record{Topic: "t", Value: []byte("x")})

		gone := newClient(t, b.Addr())
		resp, err := rawJoin("g", 30*60*1000, 1<<31-1).RequestWith(ctxT(t), gone)
		require.NoError(t, err)
		require.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
		gone.Close()

		c := groupConsumer(t, b.Addr(), "g", "t")
		pollN(t, c, 1)
	})
}

// TestAbandonedJoinsFreeTheGroupLimit: clients that get MEMBER_ID_REQUIRED
// and go away leave groups that are Empty with no committed offsets. Kafka's
// cleanup deletes such groups; vastfake deletes them when a new group needs
// room under VAST's 256-group limit, so a real consumer group still joins
// after 255 abandoned joins fill the view beside a group with committed
// offsets, which stays. While the abandoning client is connected its member
// ids may still be used, and its groups count.
func TestAbandonedJoinsFreeTheGroupLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	b := fixtures.StartBroker(t, broker.WithClock(clk), broker.WithTopics(broker.TopicSpec{Name: "t", Partitions: 1}))
	producer := newClient(t, b.Addr())
	produceSync(t, producer, &kgo.Record{Topic: "t", Value: []byte("x")})
	adm := kadm.NewClient(producer)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctxT(t), "committed", offs)
	require.NoError(t, err)
	require.NoError(t, committed.Error())

	abandoner := newClient(t, b.Addr())
	for i := range 255 {
		resp, err := rawJoin(fmt.Sprintf("abandoned-%03d", i), 45_000, 60_000).RequestWith(ctxT(t), abandoner)
		require.NoError(t, err)
		require.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	}
	listed, err := adm.ListGroups(ctxT(t))
	require.NoError(t, err)
	require.Len(t, listed, 256)
	resp, err := rawJoin("app", 45_000, 60_000).RequestWith(ctxT(t), producer)
	require.NoError(t, err)
	require.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode, "the abandoning client is still connected")

	abandoner.Close()
	c := groupConsumer(t, b.Addr(), "app", "t")
	ctx := ctxT(t)
	for {
		// Until the broker has seen the connection close, the join may
		// still be refused; the consumer retries.
		fs := c.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the consumer group never joined: %v", fs.Err0())
		if fs.NumRecords() > 0 {
			break
		}
	}
	listed, err = adm.ListGroups(ctxT(t))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"app", "committed"}, listed.Groups())
	off, ok := b.CommittedOffset("committed", "t", 0)
	assert.True(t, ok, "a group with committed offsets stays")
	assert.Equal(t, int64(1), off)
}

// TestGroupRefusalsRecordTheirRule: the coordinator's refusals reach the
// request log with their rule, like the produce path's, so Refusals and
// AssertRefused see them: a cooperative-only JoinGroup (EagerAssignorsOnly)
// and a JoinGroup or OffsetCommit that would create one group too many
// (MaxGroups).
func TestGroupRefusalsRecordTheirRule(t *testing.T) {
	t.Parallel()
	r := rules.VAST()
	r.MaxGroups = 1
	k := fixtures.Start(t, fixtures.Rules(r), fixtures.Topic("t", 1))
	k.Produce("t", 0, "x")

	coop := k.Client(kgo.ConsumerGroup("coop"), kgo.ConsumeTopics("t"), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	fs := coop.PollFetches(ctxT(t))
	require.ErrorIs(t, fs.Err0(), kerr.InconsistentGroupProtocol)
	coop.Close()
	k.AssertRefused("EagerAssignorsOnly")

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	first, err := k.Admin().CommitOffsets(ctxT(t), "first", offs)
	require.NoError(t, err)
	require.NoError(t, first.Error())
	second, err := k.Admin().CommitOffsets(ctxT(t), "second", offs)
	require.NoError(t, err)
	require.ErrorIs(t, second.Error(), kerr.GroupMaxSizeReached)
	join, err := rawJoin("third", 45_000, 60_000).RequestWith(ctxT(t), k.Client())
	require.NoError(t, err)
	require.Equal(t, kerr.GroupMaxSizeReached.Code, join.ErrorCode)

	type refusal struct {
		api  kmsg.Key
		rule string
		code int16
	}
	var got []refusal
	for _, rec := range k.Refusals() {
		got = append(got, refusal{rec.API, rec.Rule, rec.ErrorCode})
	}
	assert.Contains(t, got, refusal{kmsg.JoinGroup, "EagerAssignorsOnly", kerr.InconsistentGroupProtocol.Code})
	assert.Contains(t, got, refusal{kmsg.OffsetCommit, "MaxGroups", kerr.GroupMaxSizeReached.Code})
	assert.Contains(t, got, refusal{kmsg.JoinGroup, "MaxGroups", kerr.GroupMaxSizeReached.Code})
	for _, rec := range k.Refusals() {
		// JoinGroup and OffsetCommit answers have no message field: the
		// record carries the coordinator's reason instead.
		assert.NotEmpty(t, rec.Message, "%s refused by %s", rec.API.Name(), rec.Rule)
	}
}

// TestCommitToUnknownTopicsSkipsTheCoordinator: as in Kafka, an OffsetCommit
// with no partition of an existing topic (none at all, or only unknown
// topics) is answered without the coordinator: it creates no group, and at
// the MaxGroups limit records no MaxGroups refusal the client never sees.
// (kadm checks topics in Metadata first and sends no such commit, so the
// commits are raw.)
func TestCommitToUnknownTopicsSkipsTheCoordinator(t *testing.T) {
	t.Parallel()
	r := rules.VAST()
	r.MaxGroups = 1
	k := fixtures.Start(t, fixtures.Rules(r), fixtures.Topic("t", 1))
	cl, adm := k.Client(), k.Admin()
	commit := func(group string, topics ...string) *kmsg.OffsetCommitResponse {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		for _, topic := range topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		return resp
	}
	codes := func(resp *kmsg.OffsetCommitResponse) []int16 {
		var out []int16
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out = append(out, rp.ErrorCode)
			}
		}
		return out
	}

	assert.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, codes(commit("unknown-topics", "nope")))
	assert.Empty(t, codes(commit("no-topics")))
	listed, err := adm.ListGroups(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, listed.Groups(), "a commit with no existing partition creates no group")

	require.Equal(t, []int16{0}, codes(commit("first", "t")))
	assert.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, codes(commit("second", "nope")))
	assert.Equal(t, []int16{0, kerr.UnknownTopicOrPartition.Code}, codes(commit("first", "t", "nope")))
	for _, rec := range k.Refusals() {
		assert.NotEqual(t, "MaxGroups", rec.Rule, "%s refused by %s: %s", rec.API.Name(), rec.Rule, rec.Message)
	}
}

// TestBrokerConfigsShowGroupBounds: DescribeConfigs on the broker reports
// the session timeout bounds JoinGroup enforces, Kafka's by default.
func TestBrokerConfigsShowGroupBounds(t *testing.T) {
	t.Parallel()
	brokerConfigs := func(t *testing.T, b *broker.Broker) map[string]string {
		t.Helper()
		rc, err := fixtures.Admin(t, b).DescribeBrokerConfigs(ctxT(t))
		require.NoError(t, err)
		out := map[string]string{}
		for _, r := range rc {
			require.NoError(t, r.Err)
			for _, c := range r.Configs {
				out[c.Key] = c.MaybeValue()
			}
		}
		return out
	}
	got := brokerConfigs(t, fixtures.StartBroker(t))
	assert.Equal(t, "6000", got["group.min.session.timeout.ms"])
	assert.Equal(t, "1800000", got["group.max.session.timeout.ms"])
	assert.Equal(t, "600000", got["connections.max.idle.ms"])
	got = brokerConfigs(t, fixtures.StartBroker(t, broker.WithMinSessionTimeout(time.Second), broker.WithMaxSessionTimeout(time.Minute)))
	assert.Equal(t, "1000", got["group.min.session.timeout.ms"])
	assert.Equal(t, "60000", got["group.max.session.timeout.ms"])
	// Removed bounds read as Kafka would have them: no minimum is 0, no
	// maximum is the largest int.
	got = brokerConfigs(t, fixtures.StartBroker(t, broker.WithMinSessionTimeout(0), broker.WithMaxSessionTimeout(0)))
	assert.Equal(t, "0", got["group.min.session.timeout.ms"])
	assert.Equal(t, "2147483647", got["group.max.session.timeout.ms"])
}

// TestGroupMetadataIsBounded: over the wire, in both profiles, a member
// whose protocol metadata alone is larger than a group may keep (1 MiB, the
// record Kafka writes for a group) gets GROUP_MAX_SIZE_REACHED, and a group
// name longer than Kafka can write INVALID_GROUP_ID; a kgo consumer then
// joins the same group normally.
func TestGroupMetadataIsBounded(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("t", 1))
		cl := newClient(t, k.Addr())
		big := rawJoin("g", 45_000, 60_000)
		big.Protocols[0].Metadata = make([]byte, 2<<20)
		resp, err := big.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode)
		resp, err = rawJoin(strings.Repeat("g", 40_000), 45_000, 60_000).RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.InvalidGroupID.Code, resp.ErrorCode)

		consumer := newClient(t, k.Addr(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
		k.Produce("t", 0, "x")
		fetches := consumer.PollFetches(ctxT(t))
		require.NoError(t, fetches.Err0())
		assert.Equal(t, 1, fetches.NumRecords())
	})
}
