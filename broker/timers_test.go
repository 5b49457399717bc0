package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
)

// TestTimersEndWithTheirOwners: every one-shot timer the broker starts on
// its clock belongs to something (a broker id's blackout, a group's member
// or rebalance, a member id handed out, a transaction, committed offsets)
// and stops when that ends; none is left pending once its owner is gone,
// and Close leaves no timer at all, periodic ones included.
func TestTimersEndWithTheirOwners(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	b, err := New(WithProfile("kafka"), WithBrokers(2), WithClock(clk), WithTopics(TopicSpec{Name: "t", Partitions: 2}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Zero(t, clk.PendingOnce(), "a new broker waits on no one-shot timer")
	none := func(owner string) {
		t.Helper()
		require.Eventually(t, func() bool { return clk.PendingOnce() == 0 }, 10*time.Second, time.Millisecond,
			"%s left %d timers pending", owner, clk.PendingOnce())
	}

	t.Run("a failover's blackout ends with BrokerUp", func(t *testing.T) {
		for range 100 {
			require.NoError(t, b.FailOverAddress(1, time.Hour))
			require.Equal(t, 1, clk.PendingOnce())
			require.NoError(t, b.BrokerUp(1))
			none("BrokerUp")
		}
		require.NoError(t, b.FailOverAddress(1, time.Hour))
		clk.Advance(time.Hour)
		none("a blackout that ran its course")
		assert.False(t, b.BrokerIsDown(1))
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()

	t.Run("a transaction's timeout ends with it", func(t *testing.T) {
		tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"))
		require.NoError(t, err)
		defer tx.Close()
		for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
			require.NoError(t, tx.BeginTransaction())
			require.NoError(t, tx.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr())
			require.Equal(t, 1, clk.PendingOnce(), "the open transaction's timeout")
			require.NoError(t, tx.EndTransaction(ctx, commit))
			none("EndTxn")
		}
	})

	t.Run("a member id handed out ends with its connection", func(t *testing.T) {
		nc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		require.NoError(t, err)
		join := kmsg.NewPtrJoinGroupRequest()
		join.SetVersion(9)
		join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 30_000, 30_000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp, err := join.RequestWith(ctx, nc)
		require.NoError(t, err)
		require.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
		require.NotZero(t, clk.PendingOnce(), "the member id waits for its join")
		nc.Close()
		// What stays is the empty group's: Kafka's periodic cleanup deletes
		// it 10 minutes on, and its timer with it.
		require.Eventually(t, func() bool { return clk.PendingOnce() == 1 }, 10*time.Second, time.Millisecond,
			"the member id's timer ended with its connection; %d pending", clk.PendingOnce())
		clk.Advance(10 * time.Minute)
		_, ok := b.Group("g")
		require.False(t, ok, "the abandoned group was deleted")
		none("a closed connection and its abandoned group")
	})

	t.Run("a group's member and offsets timers end with the group", func(t *testing.T) {
		for _, p := range []int32{0, 1} {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte("v")}).FirstErr())
		}
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("t"),
			kgo.DisableAutoCommit())
		require.NoError(t, err)
		for n := 0; n < 2; {
			fs := c.PollFetches(ctx)
			require.NoError(t, fs.Err0())
			n += fs.NumRecords()
		}
		require.NoError(t, c.CommitUncommittedOffsets(ctx))
		require.NotZero(t, clk.PendingOnce(), "the member's session")
		c.Close() // leaves the group
		_, err = kadm.NewClient(cl).DeleteGroup(ctx, "billing")
		require.NoError(t, err)
		none("a deleted group")
	})

	require.NoError(t, b.Close())
	assert.Zero(t, clk.Pending(), "Close stops every timer, periodic ones included")
}
