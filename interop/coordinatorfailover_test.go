package interop_test

// A group's coordinator going down with real clients at 3 brokers (kafka
// profile), at Kafka's defaults: 9 s to fence the broker, on a manual
// clock, and sessions of 6 s. In Kafka no member's session runs out while
// its coordinator is down, and the broker that takes the group over gives
// every member a fresh session timeout: the group goes on in the same
// generation, with the same members, and rebalances no more.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
)

// failoverBrokers starts 3 brokers on a manual clock at Kafka's election
// delay, "orders" of 3 partitions with 3 replicas each, and returns them
// with a group broker 1 coordinates.
func failoverBrokers(t *testing.T) (*broker.Broker, *clock.Manual, string) {
	clk := clock.NewManual(time.Now())
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"), broker.WithClock(clk),
		broker.WithInitialRebalanceDelay(0), broker.WithConsumerGroupTimeouts(6*time.Second, 100*time.Millisecond),
		broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3, ReplicationFactor: 3}))
	return b, clk, groupOn(b, 1)
}

// settledGroup waits, while poll keeps the members polling, until group is
// Stable with n members, and returns it.
func settledGroup(t *testing.T, b *broker.Broker, group string, n int, poll func()) coordinator.GroupInfo {
	t.Helper()
	var g coordinator.GroupInfo
	waitFor(t, ckTimeout, func() bool {
		poll()
		g, _ = b.Group(group)
		return g.State == "Stable" && len(g.Members) == n && (g.Type == "classic" || g.Reconciled())
	}, "group %s stable with %d members", group, n)
	return g
}

// coordinatorFailover runs the scenario: the group settled with two
// members; broker 1, its coordinator, down; the election delay passed on
// the broker's clock (the broker is fenced, the group's __consumer_offsets
// partition and so its coordinator move); the members polling a while in
// real time, so that they find the new coordinator; then the broker's
// clock passing two sessions in steps of two thirds of one, the members
// polling between steps. The group must still have the same members in
// the same generation, with no rebalance recorded; with rejoins, the
// members may have joined again under their member ids (a client that
// ends its session when it cannot reach its coordinator), which in Kafka
// rebalances the group once when the leader is among them: then the same
// members in at most one generation more.
func coordinatorFailover(t *testing.T, b *broker.Broker, clk *clock.Manual, group string, rejoins bool, poll func()) {
	t.Helper()
	before := settledGroup(t, b, group, 2, poll)
	rebalances := len(b.Rebalances())
	require.NoError(t, b.BrokerDown(1))
	clk.Advance(broker.DefaultElectionDelay)
	waitFor(t, ckTimeout, func() bool { return b.CoordinatorOf(group) != 1 }, "the coordinator moves")
	after, _ := b.Group(group)
	assert.Len(t, after.Members, 2, "no member expelled during the %v the coordinator was away", broker.DefaultElectionDelay)
	for step := 0; step < 3; step++ {
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			poll()
		}
		clk.Advance(4 * time.Second)
	}
	after = settledGroup(t, b, group, 2, poll)
	assert.Equal(t, memberIDs(before), memberIDs(after), "the same members: none expelled and joined anew")
	if rejoins {
		assert.LessOrEqual(t, after.Generation, before.Generation+1, "at most the rebalance of the members' rejoin")
		assert.LessOrEqual(t, len(b.Rebalances()), rebalances+1, "at most the rebalance of the members' rejoin")
	} else {
		assert.Equal(t, before.Generation, after.Generation, "the same generation")
		assert.Len(t, b.Rebalances(), rebalances, "no rebalance")
	}
	t.Logf("group %s: coordinator %d -> %d after %v on the broker's clock, generation %d kept, %d members kept",
		group, 1, b.CoordinatorOf(group), broker.DefaultElectionDelay, after.Generation, len(after.Members))
}

func memberIDs(g coordinator.GroupInfo) []string {
	var out []string
	for _, m := range g.Members {
		out = append(out, m.MemberID)
	}
	slices.Sort(out)
	return out
}

// TestConfluentCoordinatorFailover: two librdkafka members, classic
// (session.timeout.ms=6000) and KIP-848 (group.protocol=consumer), keep
// their group through their coordinator's failover.
func TestConfluentCoordinatorFailover(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			b, clk, group := failoverBrokers(t)
			conf := func() *kafka.ConfigMap {
				if protocol == "consumer" {
					return ckConsumerProtocolConf(b.Addr(), group, "reconnect.backoff.ms", 20, "reconnect.backoff.max.ms", 200)
				}
				return ckGroupConf(b.Addr(), group, "session.timeout.ms", 6000, "reconnect.backoff.ms", 20, "reconnect.backoff.max.ms", 200)
			}
			cs := []*kafka.Consumer{ckConsumer(t, conf()), ckConsumer(t, conf())}
			for _, c := range cs {
				require.NoError(t, c.Subscribe("orders", nil))
			}
			coordinatorFailover(t, b, clk, group, false, func() {
				for _, c := range cs {
					c.Poll(20)
				}
			})
		})
	}
}

// TestSaramaCoordinatorFailover: two sarama members (classic, a session
// of 6 s) keep their group through their coordinator's failover. sarama
// retries a heartbeat that cannot connect without backing off, so a
// heartbeat due while the coordinator is down spends its retries at once
// and ends the session; the members join again under their member ids,
// which in Kafka rebalances the group once (the leader rejoined) and
// expels no one.
func TestSaramaCoordinatorFailover(t *testing.T) {
	t.Parallel()
	b, clk, group := failoverBrokers(t)
	cfg := saramaConfig()
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 100, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, group, cfg)
		require.NoError(t, err)
		h := &moveHandler{seen: map[string]int{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{"orders"}, h); err != nil && ctx.Err() == nil {
					time.Sleep(20 * time.Millisecond) // back off before joining again, as sarama's examples do
				}
			}
		}()
		t.Cleanup(func() { cg.Close() })
	}
	defer func() { cancel(); wg.Wait() }()
	coordinatorFailover(t, b, clk, group, true, func() { time.Sleep(20 * time.Millisecond) })
}
