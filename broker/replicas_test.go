package broker

import (
	"context"
	"strconv"
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

	"github.com/vastfake/vastfake/clock"
)

// state is one partition's leadership, as PartitionState returns it.
type state struct {
	leader, epoch int32
	replicas, isr []int32
}

func stateOf(b *Broker, topic string, p int32) state {
	l, e, r, i := b.PartitionState(topic, p)
	return state{l, e, r, i}
}

// TestElectionOnBrokerDown: in the kafka profile at 3 brokers a broker
// taken down keeps its partitions for the election delay on the broker's
// clock; then it leaves every in-sync set and each partition it led gets
// the next in-sync replica as leader, epoch one higher, in Metadata too,
// and the group coordinators on the __consumer_offsets partitions it led
// move with them. Brought back, it rejoins as a follower; a preferred
// election (ElectLeaders) gives it its partitions back, epoch one higher
// again.
func TestElectionOnBrokerDown(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithClock(clk), WithElectionDelay(5*time.Second),
		WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, state{2, 0, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "orders", 1))
	group := ""
	for i := 0; group == ""; i++ {
		if g := "g" + strconv.Itoa(i); b.CoordinatorOf(g) == 2 {
			group = g
		}
	}

	require.NoError(t, b.BrokerDown(2))
	clk.Advance(5*time.Second - time.Millisecond)
	assert.Equal(t, state{2, 0, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "orders", 1), "within the delay nothing moves")
	clk.Advance(time.Millisecond)
	assert.Equal(t, state{3, 1, []int32{2, 3, 1}, []int32{3, 1}}, stateOf(b, "orders", 1), "the next in-sync replica leads")
	assert.Equal(t, state{1, 0, []int32{1, 2, 3}, []int32{1, 3}}, stateOf(b, "orders", 0), "a follower leaves the in-sync set")
	assert.Equal(t, state{3, 0, []int32{3, 1, 2}, []int32{3, 1}}, stateOf(b, "orders", 2))
	assert.NotEqual(t, int32(2), b.CoordinatorOf(group), "the coordinator moves with its __consumer_offsets partition")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, "orders")
	require.NoError(t, err)
	p1 := md.Topics["orders"].Partitions[1]
	assert.Equal(t, int32(3), p1.Leader)
	assert.Equal(t, int32(1), p1.LeaderEpoch)
	assert.Equal(t, []int32{2, 3, 1}, p1.Replicas)
	assert.Equal(t, []int32{3, 1}, p1.ISR)
	assert.Equal(t, []int32{2}, p1.OfflineReplicas)
	assert.NotContains(t, md.Brokers.NodeIDs(), int32(2), "a fenced broker is not listed")
	coords := adm.FindGroupCoordinators(ctx, group)
	require.NoError(t, coords[group].Err)
	assert.Equal(t, b.CoordinatorOf(group), coords[group].NodeID)

	require.NoError(t, b.BrokerUp(2))
	assert.Equal(t, state{3, 1, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "orders", 1), "back as a follower, in sync")

	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"orders": {0: {}, 1: {}}})
	require.NoError(t, err)
	assert.NoError(t, res["orders"][1].Err)
	assert.ErrorIs(t, res["orders"][0].Err, kerr.ElectionNotNeeded)
	assert.Equal(t, state{2, 2, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "orders", 1), "the preferred replica leads again")
}

// TestEveryBrokerDown: with every broker down the partitions are offline
// (leader -1, LEADER_NOT_AVAILABLE), each in-sync set keeping its last
// member; a broker that was not that member does not lead when it comes
// back (no unclean election), the last member does, and no leader epoch
// goes backwards.
func TestEveryBrokerDown(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	epochs := map[int32]int32{}
	check := func(why string) {
		for p := range int32(3) {
			e := stateOf(b, "t", p).epoch
			assert.GreaterOrEqual(t, e, epochs[p], "%s: partition %d's epoch went backwards", why, p)
			epochs[p] = e
		}
	}
	for _, id := range []int32{1, 2, 3} {
		require.NoError(t, b.BrokerDown(id))
		check("down " + strconv.Itoa(int(id)))
	}
	for p := range int32(3) {
		st := stateOf(b, "t", p)
		assert.Equal(t, int32(-1), st.leader, "partition %d offline", p)
		assert.Equal(t, []int32{3}, st.isr, "partition %d keeps its last in-sync replica", p)
	}
	require.NoError(t, b.BrokerUp(1))
	check("up 1")
	assert.Equal(t, int32(-1), stateOf(b, "t", 0).leader, "broker 1 fell out of the in-sync set: no unclean election")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, kerr.LeaderNotAvailable.Code, p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int32(-1), p.Leader)
	}
	require.Len(t, resp.Brokers, 1, "brokers 2 and 3 are fenced")
	assert.Equal(t, int32(1), resp.Brokers[0].NodeID)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "some-group"
	fresp, err := fc.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.CoordinatorNotAvailable.Code, fresp.ErrorCode, "its __consumer_offsets partition is offline")

	require.NoError(t, b.BrokerUp(3))
	check("up 3")
	for p := range int32(3) {
		assert.Equal(t, int32(3), stateOf(b, "t", p).leader, "partition %d: the last in-sync replica leads again", p)
	}
	require.NoError(t, b.BrokerUp(2))
	check("up 2")
	n, err := b.ElectPreferredLeaders("")
	require.NoError(t, err)
	assert.Positive(t, n)
	check("preferred election")
	for p := range int32(3) {
		st := stateOf(b, "t", p)
		assert.Equal(t, st.replicas[0], st.leader, "partition %d: its preferred replica leads", p)
		assert.Equal(t, st.replicas, st.isr)
	}
}

// TestBrokerFlapping: a broker that goes down and comes back within the
// election delay, again and again, is never fenced: no leader moves and no
// epoch changes; once it stays down past the delay, it is.
func TestBrokerFlapping(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithClock(clk), WithElectionDelay(time.Second),
		WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	for range 10 {
		require.NoError(t, b.BrokerDown(2))
		clk.Advance(600 * time.Millisecond)
		require.NoError(t, b.BrokerUp(2))
		clk.Advance(600 * time.Millisecond)
		assert.Equal(t, state{2, 0, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "t", 1))
	}
	require.NoError(t, b.BrokerDown(2))
	clk.Advance(time.Second)
	assert.Equal(t, state{3, 1, []int32{2, 3, 1}, []int32{3, 1}}, stateOf(b, "t", 1))
}

// TestReplicationFactor: CreateTopics' replication factor sets the
// replicas (default 3 at 3 brokers), one above the broker count gets
// INVALID_REPLICATION_FACTOR in the kafka profile and is ignored in the
// VAST one; acks=all to a partition with fewer in-sync replicas than
// min.insync.replicas gets NOT_ENOUGH_REPLICAS while acks=1 is stored.
func TestReplicationFactor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)

	_, err = adm.CreateTopic(ctx, 1, 4, nil, "too-many")
	assert.ErrorIs(t, err, kerr.InvalidReplicationFactor)
	r, err := adm.CreateTopic(ctx, 2, 2, nil, "two")
	require.NoError(t, err)
	assert.Equal(t, int16(2), r.ReplicationFactor)
	r, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "strict")
	require.NoError(t, err)
	assert.Equal(t, int16(3), r.ReplicationFactor, "default.replication.factor: 3 at 3 brokers")
	assert.Equal(t, []int32{1, 2}, stateOf(b, "two", 0).replicas)
	assert.Equal(t, []int32{1, 2, 3}, stateOf(b, "strict", 0).replicas)

	all, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0))
	require.NoError(t, err)
	defer all.Close()
	require.NoError(t, all.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("in sync")}).FirstErr())
	require.NoError(t, b.BrokerDown(3))
	err = all.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("short")}).FirstErr()
	assert.ErrorIs(t, err, kerr.NotEnoughReplicas)
	one, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer one.Close()
	require.NoError(t, one.ProduceSync(ctx, &kgo.Record{Topic: "strict", Value: []byte("acks=1")}).FirstErr())

	_, err = New(WithBrokers(2), WithProfile("kafka"), WithTopics(TopicSpec{Name: "x", Partitions: 1, ReplicationFactor: 3}))
	assert.ErrorContains(t, err, "INVALID_REPLICATION_FACTOR")
	vb, err := New(WithBrokers(2), WithTopics(TopicSpec{Name: "x", Partitions: 1, ReplicationFactor: 3}))
	require.NoError(t, err, "VAST: the replication factor is not a concept")
	vb.Close()
}

// TestProduceAndConsumeThroughAnElection: a kgo producer with acks=all
// and a consumer group carry on through a broker going down, without
// waiting for it to come back: the partitions it led and the group's
// coordinator get new leaders, and every acknowledged record is read once.
func TestProduceAndConsumeThroughAnElection(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(200*time.Millisecond),
		WithTopics(TopicSpec{Name: "orders", Partitions: 6}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	require.NoError(t, err)
	defer p.Close()
	group := groupsCoordinatedBy(b, 1)[2][0] // its coordinator goes down too
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	require.NoError(t, err)
	defer c.Close()

	const n = 600
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		if i == n/3 {
			require.NoError(t, b.BrokerDown(2))
		}
		wg.Add(1)
		p.Produce(ctx, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	seen := map[string]int{}
	for len(seen) < n && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	wg.Wait()
	require.Empty(t, errs)
	require.True(t, b.BrokerIsDown(2), "the broker stayed down")
	require.Len(t, seen, n, "every acknowledged record is read")
	for v, count := range seen {
		assert.Equal(t, 1, count, "record %s read once", v)
	}
	for part := range int32(6) {
		assert.NotEqual(t, int32(2), b.LeaderOf("orders", part))
	}
	assert.NotEqual(t, int32(2), b.CoordinatorOf(group))
}

// TestElectionByProfile: the VAST profile keeps leadership where it is when
// a broker goes down (its virtual IPs move instead: FailOverAddress) and
// lists one replica per partition; the audit profile elects as Kafka and
// records a finding of AnyAddressServes.
func TestElectionByProfile(t *testing.T) {
	t.Parallel()
	vb, err := New(WithBrokers(3), WithNodeID(1), WithElectionDelay(0), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer vb.Close()
	require.NoError(t, vb.BrokerDown(2))
	assert.Equal(t, state{2, 0, []int32{2}, []int32{2}}, stateOf(vb, "t", 1), "VAST: leadership stays")
	assert.Empty(t, vb.Findings())

	ab, err := New(WithBrokers(3), WithNodeID(1), WithProfile("audit"), WithElectionDelay(0), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer ab.Close()
	require.NoError(t, ab.BrokerDown(2))
	assert.Equal(t, state{3, 1, []int32{2, 3, 1}, []int32{3, 1}}, stateOf(ab, "t", 1), "audit: elected as in Kafka")
	var found []string
	for _, f := range ab.Findings() {
		found = append(found, f.Rule+": "+f.Detail)
	}
	require.Len(t, found, 1)
	assert.Contains(t, found[0], "AnyAddressServes: broker 2 went down: Kafka elected new leaders")
}

// TestTransactionThroughAnElection: the broker that coordinates a
// transactional id, and leads a partition of its open transaction, goes
// down; the transaction coordinator moves with its __transaction_state
// partition, the producer carries on at the new leader and coordinator,
// and the commit makes every record readable at read_committed.
func TestTransactionThroughAnElection(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0), WithTopics(TopicSpec{Name: "t", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := ""
	for i := 0; id == ""; i++ {
		if s := "tx-" + strconv.Itoa(i); b.TxnCoordinatorOf(s) == 2 {
			id = s
		}
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.BeginTransaction())
	for _, part := range []int32{0, 1} {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: part, Value: []byte("before")}).FirstErr())
	}
	require.NoError(t, b.BrokerDown(2))
	assert.NotEqual(t, int32(2), b.TxnCoordinatorOf(id), "the coordinator moved with its __transaction_state partition")
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("after")}).FirstErr())
	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))

	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.ElementsMatch(t, []string{"before", "before", "after"}, got)
}

// TestReplicationFactorAtOneBroker: one broker in the kafka profile refuses
// a replication factor of 2 as Kafka does, and accepts 1 and -1.
func TestReplicationFactorAtOneBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(WithProfile("kafka"))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 1, 2, nil, "two")
	assert.ErrorIs(t, err, kerr.InvalidReplicationFactor)
	for _, f := range []int16{1, -1} {
		r, err := adm.CreateTopic(ctx, 1, f, nil, "rf"+strconv.Itoa(int(f)))
		require.NoError(t, err)
		assert.Equal(t, int16(1), r.ReplicationFactor)
	}
}

// TestFlappingBrokerWithClients: a kgo producer (acks=all) and consumer
// group carry on while the broker leading a partition and coordinating the
// group flaps down and up faster than the election delay (nothing moves,
// no epoch changes), then stays down past it: its partition and the
// group's coordinator move, and every acknowledged record is read once.
func TestFlappingBrokerWithClients(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithClock(clk), WithElectionDelay(time.Second),
		WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backoff := kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), backoff)
	require.NoError(t, err)
	defer p.Close()
	group := groupsCoordinatedBy(b, 1)[2][0]
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), backoff)
	require.NoError(t, err)
	defer c.Close()

	const n = 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			p.Produce(ctx, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	for round := range 5 {
		produce(round*n/6, (round+1)*n/6)
		require.NoError(t, b.BrokerDown(2))
		clk.Advance(600 * time.Millisecond)
		require.NoError(t, b.BrokerUp(2))
		clk.Advance(600 * time.Millisecond)
		assert.Equal(t, state{2, 0, []int32{2, 3, 1}, []int32{2, 3, 1}}, stateOf(b, "orders", 1), "round %d: nothing moved", round)
	}
	require.NoError(t, b.BrokerDown(2))
	clk.Advance(time.Second)
	produce(5*n/6, n)
	seen := map[string]int{}
	for len(seen) < n && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	wg.Wait()
	require.Empty(t, errs)
	require.Len(t, seen, n, "every acknowledged record is read")
	for v, count := range seen {
		assert.Equal(t, 1, count, "record %s read once", v)
	}
	assert.Equal(t, state{3, 1, []int32{2, 3, 1}, []int32{3, 1}}, stateOf(b, "orders", 1))
	assert.NotEqual(t, int32(2), b.CoordinatorOf(group))
}

// TestControllerDown: with the broker Metadata names as controller fenced,
// Metadata names another, so that admin requests (which clients send to
// the controller) go on.
func TestControllerDown(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.BrokerAddr(2)))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	controller := func() int32 {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.ControllerID
	}
	require.Equal(t, int32(1), controller())
	require.NoError(t, b.BrokerDown(1))
	assert.Equal(t, int32(2), controller())
	r, err := adm.CreateTopic(ctx, 3, -1, nil, "after")
	require.NoError(t, err)
	assert.Equal(t, int16(3), r.ReplicationFactor)
	leader, _, _, isr := b.PartitionState("after", 0)
	assert.Equal(t, int32(2), leader, "partition 0's preferred replica is fenced: the next leads")
	assert.Equal(t, []int32{2, 3}, isr)
}

// TestReplicaAssignment: CreateTopics and CreatePartitions with explicit
// replica assignments list those replicas in Metadata (librdkafka's
// 0081_admin checks them); an assignment naming an unknown broker or one
// broker twice, of inconsistent lengths, or given with a partition count,
// is refused as Kafka refuses it.
func TestReplicaAssignment(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	create := func(name string, partitions int32, factor int16, assign ...[]int32) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, factor
		for p, reps := range assign {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(p), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0]
	}
	st := create("assigned", -1, -1, []int32{3, 1}, []int32{1, 2})
	require.Zero(t, st.ErrorCode)
	assert.Equal(t, int16(2), st.ReplicationFactor)
	assert.Equal(t, state{3, 0, []int32{3, 1}, []int32{3, 1}}, stateOf(b, "assigned", 0))
	assert.Equal(t, state{1, 0, []int32{1, 2}, []int32{1, 2}}, stateOf(b, "assigned", 1))
	// Every way Kafka's controller refuses a manual assignment, with its
	// code: a list is checked before the replication factor it implies,
	// so more brokers than the cluster has, or none, is
	// INVALID_REPLICA_ASSIGNMENT, never INVALID_REPLICATION_FACTOR.
	for name, tc := range map[string]struct {
		partitions int32
		factor     int16
		assign     [][]int32
		code       int16
	}{
		"unknown broker":        {-1, -1, [][]int32{{1, 9}}, kerr.InvalidReplicaAssignment.Code},
		"more than the brokers": {-1, -1, [][]int32{{1, 2, 3, 4}}, kerr.InvalidReplicaAssignment.Code},
		"empty list":            {-1, -1, [][]int32{{}}, kerr.InvalidReplicaAssignment.Code},
		"empty second list":     {-1, -1, [][]int32{{1}, {}}, kerr.InvalidReplicaAssignment.Code},
		"broker twice":          {-1, -1, [][]int32{{1, 1}}, kerr.InvalidReplicaAssignment.Code},
		"lengths differ":        {-1, -1, [][]int32{{1, 2}, {3}}, kerr.InvalidReplicaAssignment.Code},
		"with partitions":       {2, -1, [][]int32{{1, 2}, {2, 3}}, kerr.InvalidRequest.Code},
		"with a factor":         {-1, 2, [][]int32{{1, 2}, {2, 3}}, kerr.InvalidRequest.Code},
		"bad list and a factor": {-1, 2, [][]int32{{1, 9}}, kerr.InvalidRequest.Code},
	} {
		assert.Equal(t, tc.code, create("bad-"+strings.ReplaceAll(name, " ", "-"), tc.partitions, tc.factor, tc.assign...).ErrorCode, name)
	}
	// Partition indexes must be 0 to n-1, each once.
	indexed := func(name string, parts ...int32) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for _, p := range parts {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{1}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].ErrorCode
	}
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, indexed("twice", 0, 0), "a partition assigned twice")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, indexed("gap", 0, 2), "partitions 0 and 2")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, indexed("negative", -1), "partition -1")
	assert.Zero(t, indexed("unordered", 1, 0), "partitions 1 and 0")

	grow := func(count int32, assign ...[]int32) int16 {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "assigned", count
		for _, reps := range assign {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = reps
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].ErrorCode
	}
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(4, []int32{2, 3}), "two partitions, one assignment")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(3, []int32{2}), "replication factor 1, not 2")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(3, []int32{}), "an empty list")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(3, []int32{1, 2, 3}), "three replicas, not 2")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(3, []int32{2, 9}), "an unknown broker")
	assert.Equal(t, kerr.InvalidPartitions.Code, grow(2, []int32{2, 3}), "no new partition")
	require.Zero(t, grow(3, []int32{2, 3}))
	assert.Equal(t, state{2, 0, []int32{2, 3}, []int32{2, 3}}, stateOf(b, "assigned", 2))

	// A list of fenced brokers only cannot lead: Kafka refuses it.
	require.NoError(t, b.BrokerDown(2))
	require.NoError(t, b.BrokerDown(3))
	require.Eventually(t, func() bool { return b.isFenced(2) && b.isFenced(3) }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, grow(4, []int32{2, 3}), "every replica fenced")
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, create("fenced", -1, -1, []int32{3, 2}).ErrorCode, "every replica fenced")
	assert.Zero(t, grow(4, []int32{1, 3}), "one live replica is enough")
}
