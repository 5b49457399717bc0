package broker

import (
	"context"
	"fmt"
	"net"
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
	"github.com/vastfake/vastfake/coordinator"
)

// TestSeveralBrokersInMetadata: three broker ids on three addresses, every
// one in Metadata, partition leaders and group coordinators by the
// documented rules, which LeaderOf and CoordinatorOf compute.
func TestSeveralBrokersInMetadata(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 6}))
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, []int32{1, 2, 3}, b.BrokerIDs())
	addrs := map[string]bool{}
	for _, id := range b.BrokerIDs() {
		addrs[b.BrokerAddr(id)] = true
	}
	assert.Len(t, addrs, 3, "an address per broker")
	assert.Equal(t, b.Addr(), b.BrokerAddr(1), "the first is the bootstrap")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, "orders")
	require.NoError(t, err)
	require.Len(t, md.Brokers, 3)
	for _, br := range md.Brokers {
		assert.Equal(t, b.BrokerAddr(br.NodeID), net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))))
	}
	for p, pd := range md.Topics["orders"].Partitions {
		assert.Equal(t, int32(1+p%3), pd.Leader, "partition %d: broker p mod 3 of the three", p)
		assert.Equal(t, b.LeaderOf("orders", p), pd.Leader)
		assert.Equal(t, []int32{int32(1 + p%3), int32(1 + (p+1)%3), int32(1 + (p+2)%3)}, pd.Replicas, "three replicas, the leader first")
		assert.Equal(t, pd.Replicas, pd.ISR)
	}
	groups := []string{"billing", "orders-app", "g", "a-much-longer-group-name"}
	coords := adm.FindGroupCoordinators(ctx, groups...)
	for _, g := range groups {
		require.NoError(t, coords[g].Err, g)
		assert.Equal(t, b.CoordinatorOf(g), coords[g].NodeID, g)
	}
	// The rule is Kafka's partitionFor: Utils.abs of Java's hashCode
	// (MinInt32 goes to 0, any other negative hash to its absolute
	// value, not its sign bit masked), mod 50, then that partition's
	// leader.
	assert.Equal(t, int32(99162322), javaStringHash("hello"))
	assert.Equal(t, int32(1772899), javaStringHash("😀"), "a surrogate pair, as Java sees it")
	assert.Equal(t, b.LeaderOf(offsetsTopic, int32(99162322%50)), b.CoordinatorOf("hello"))
	assert.Equal(t, int32(-1906497762), javaStringHash("my-group"))
	assert.Equal(t, int32(1906497762%50), OffsetsTopicPartition("my-group"))
	assert.Equal(t, int32(-1<<31), javaStringHash("polygenelubricants"))
	assert.Equal(t, int32(0), OffsetsTopicPartition("polygenelubricants"))
}

// TestBrokerDownAndUp: a broker taken down refuses connections and drops the
// ones it has while the others serve; up serves again on the same address.
// A producer with acks=all waits while it is down (every partition has it
// in its in-sync set), carries on once it is back, and a consumer group
// reads every acknowledged record once.
func TestBrokerDownAndUp(t *testing.T) {
	t.Parallel()
	// No election within the test: the broker is back before it is fenced.
	b, err := New(WithBrokers(3), WithProfile("kafka"), WithElectionDelay(time.Hour), WithTopics(TopicSpec{Name: "orders", Partitions: 6}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	down := b.BrokerIDs()[1]

	held, err := net.Dial("tcp", b.BrokerAddr(down))
	require.NoError(t, err)
	defer held.Close()

	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	require.NoError(t, err)
	defer p.Close()
	const n = 300
	for i := range n / 3 {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}).FirstErr())
	}

	require.NoError(t, b.BrokerDown(down))
	assert.True(t, b.BrokerIsDown(down))
	_, err = net.DialTimeout("tcp", b.BrokerAddr(down), time.Second)
	assert.Error(t, err, "a broker that is down refuses connections")
	require.NoError(t, held.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = held.Read(make([]byte, 1))
	assert.Error(t, err, "and drops the ones it had")

	// While it is down, nothing is acknowledged: the partitions it leads
	// wait for their leader, and the others for it to leave their in-sync
	// sets (acks=all, as in Kafka until the broker is fenced), stored.
	var mu sync.Mutex
	acked := map[int32]int{}
	var errs []error
	var wg sync.WaitGroup
	for i := n / 3; i < n; i++ {
		wg.Add(1)
		p.Produce(ctx, &kgo.Record{Topic: "orders", Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			acked[r.Partition]++
		})
	}
	require.Eventually(t, func() bool { held, _ := b.HeldProduces(); return held > 0 }, 30*time.Second, 10*time.Millisecond,
		"produces to the partitions other brokers lead are held for the down in-sync replica")
	mu.Lock()
	assert.Empty(t, acked, "nothing is acknowledged while an in-sync replica is down and not fenced")
	mu.Unlock()

	require.NoError(t, b.BrokerUp(down))
	assert.False(t, b.BrokerIsDown(down))
	wg.Wait()
	require.Empty(t, errs)
	for part := range int32(6) {
		assert.Positive(t, acked[part], "partition %d acknowledged once its leader is back", part)
	}

	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	seen := map[string]int{}
	for len(seen) < n && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	require.Len(t, seen, n, "every acknowledged record is read")
	for v, count := range seen {
		assert.Equal(t, 1, count, "record %s read once", v)
	}
}

// TestBrokerDownUpRefusals: the calls say what is wrong with an id that
// does not exist, a broker already down or up, several brokers that are
// too few or too many, and advertised addresses that do not match.
func TestBrokerDownUpRefusals(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1, MaxBrokers + 1} {
		_, err := New(WithBrokers(n))
		assert.ErrorContains(t, err, fmt.Sprintf("%d brokers: want 1 to %d", n, MaxBrokers))
	}
	_, err := New(WithBrokers(2), WithAdvertise("kafka.example:9092"))
	assert.ErrorContains(t, err, "one address per broker")
	_, err = New(WithBrokers(2), WithAdvertiseBrokers("a:1", "b:2", "c:3"))
	assert.ErrorContains(t, err, "3 advertised addresses for 2 brokers")
	_, err = New(WithBrokers(2), WithAdvertiseBrokers("a:1", "b"))
	assert.ErrorContains(t, err, `advertise "b": want host:port`)

	b, err := New(WithBrokers(2), WithAdvertiseBrokers("kafka-0.example:9092", "kafka-1.example:9092"))
	require.NoError(t, err)
	assert.Equal(t, "kafka-0.example:9092", b.AdvertisedAddr())
	assert.ErrorIs(t, b.BrokerDown(7), ErrUnknownBroker)
	assert.ErrorIs(t, b.BrokerUp(7), ErrUnknownBroker)
	assert.ErrorContains(t, b.BrokerUp(1), "broker 1 is up")
	require.NoError(t, b.BrokerDown(1))
	assert.ErrorContains(t, b.BrokerDown(1), "broker 1 is already down")
	require.NoError(t, b.Restart())
	assert.True(t, b.BrokerIsDown(1), "a restart leaves a broker that is down down")
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.BrokerUp(1), ErrClosed)
	assert.ErrorIs(t, b.BrokerDown(0), ErrClosed)
}

// rawProduce sends one record to each partition of topic in ps at version
// 10 on a connection to addr and returns the answer.
func rawProduce(t *testing.T, addr, topic string, ps ...int32) *kmsg.ProduceResponse {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(10)
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range ps {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, benchBatch(1)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	return roundTrip(t, nc, req).(*kmsg.ProduceResponse)
}

// TestRequestsOnAnotherBroker: in the kafka profile a partition sent to a
// broker that does not lead it gets NOT_LEADER_OR_FOLLOWER with the current
// leader and its address, while the partitions it leads are stored, and a
// group request to a broker that does not coordinate the group gets
// NOT_COORDINATOR; the VAST profile serves both anywhere (AnyAddressServes).
func TestRequestsOnAnotherBroker(t *testing.T) {
	t.Parallel()
	kb, err := New(WithBrokers(2), WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 2}))
	require.NoError(t, err)
	defer kb.Close()
	resp := rawProduce(t, kb.BrokerAddr(0), "t", 0, 1)
	byPart := map[int32]kmsg.ProduceResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			byPart[p.Partition] = p
		}
	}
	assert.Zero(t, byPart[0].ErrorCode, "broker 0 leads partition 0")
	assert.Equal(t, kerr.NotLeaderForPartition.Code, byPart[1].ErrorCode)
	assert.Equal(t, int32(1), byPart[1].CurrentLeader.LeaderID, "the current leader, KIP-951")
	require.Len(t, resp.Brokers, 1)
	assert.Equal(t, kb.BrokerAddr(1), net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))))
	_, hw := kb.data.get("t").partition(1).Watermarks()
	assert.Zero(t, hw, "nothing stored by the broker that does not lead it")

	group := ""
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("g%d", i); kb.CoordinatorOf(g) == 1 {
			group = g
		}
	}
	nc, err := net.Dial("tcp", kb.BrokerAddr(0))
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.MemberID, hb.Generation = group, "m", 1
	assert.Equal(t, kerr.NotCoordinator.Code, roundTrip(t, nc, hb).(*kmsg.HeartbeatResponse).ErrorCode)
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.SetVersion(5)
	desc.Groups = []string{group}
	assert.Equal(t, kerr.NotCoordinator.Code, roundTrip(t, nc, desc).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode)

	vb, err := New(WithBrokers(2), WithTopics(TopicSpec{Name: "t", Partitions: 2}))
	require.NoError(t, err)
	defer vb.Close()
	for _, p := range rawProduce(t, vb.BrokerAddr(0), "t", 0, 1).Topics[0].Partitions {
		assert.Zero(t, p.ErrorCode, "VAST profile: broker 0 serves partition %d", p.Partition)
	}
	assert.Empty(t, vb.Refusals())
}

// TestLeaderMove: a leader moved in the kafka profile (leader epoch + 1):
// the old leader refuses the partition, a fetch with the old epoch is fenced,
// and a kgo producer and consumer follow the move with no record lost or
// read twice.
func TestLeaderMove(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	require.NoError(t, err)
	defer p.Close()
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr())
		}
	}
	produce(0, 50)

	assert.ErrorIs(t, b.MoveLeader("orders", 0, 9), ErrUnknownBroker)
	assert.ErrorContains(t, b.MoveLeader("orders", 7, 1), "no partition 7")
	require.NoError(t, b.MoveLeader("orders", 0, 2))
	assert.Equal(t, int32(2), b.LeaderOf("orders", 0))
	assert.Equal(t, int32(1), b.LeaderEpochOf("orders", 0))
	refused := rawProduce(t, b.BrokerAddr(0), "orders", 0).Topics[0].Partitions[0]
	assert.Equal(t, kerr.NotLeaderForPartition.Code, refused.ErrorCode, "the old leader refuses")
	assert.Equal(t, int32(2), refused.CurrentLeader.LeaderID)
	assert.Equal(t, int32(1), refused.CurrentLeader.LeaderEpoch)
	assert.Equal(t, kerr.FencedLeaderEpoch.Code, b.checkLeaderEpoch("orders", 0, 0), "a fetch with the old epoch is fenced")
	assert.Equal(t, kerr.UnknownLeaderEpoch.Code, b.checkLeaderEpoch("orders", 0, 5))

	produce(50, 100) // kgo learns the new leader from the refusal
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer c.Close()
	var got []string
	for len(got) < 100 && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range 100 {
		assert.Equal(t, 1, seen[strconv.Itoa(i)], "record %d read once", i)
	}

	// A client of its own: kgo answers a Metadata request from its cache
	// for MetadataMinAge, and p learnt the move from the refusal's leader
	// hint (KIP-951) without asking for metadata since.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer fresh.Close()
	adm := kadm.NewClient(fresh)
	md, err := adm.Metadata(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int32(2), md.Topics["orders"].Partitions[0].Leader)
	assert.Equal(t, int32(1), md.Topics["orders"].Partitions[0].LeaderEpoch)
}

// TestCoordinatorMove: a group's coordinator moved in the kafka profile:
// the old one answers NOT_COORDINATOR, and a kgo group consumer finds the
// new one and goes on reading and committing.
func TestCoordinatorMove(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	g := newBillingGroup(t, b)
	g.produce(0, 30)
	g.read(30)

	old := b.CoordinatorOf("billing")
	to := b.BrokerIDs()[(int(old)+1)%3]
	assert.ErrorIs(t, b.MoveCoordinator("billing", 9), ErrUnknownBroker)
	require.NoError(t, b.MoveCoordinator("billing", to))
	coords := kadm.NewClient(g.p).FindGroupCoordinators(g.ctx, "billing")
	require.NoError(t, coords["billing"].Err)
	assert.Equal(t, to, coords["billing"].NodeID)

	g.produce(30, 60)
	g.read(60)
	g.readOnceAndCommitted(60, "the group commits through the new coordinator")
}

// billingGroup is a kgo producer to "orders" and a kgo consumer group
// "billing" reading it, for the tests that move or fail its coordinator.
type billingGroup struct {
	t    *testing.T
	ctx  context.Context
	p, c *kgo.Client
	seen map[string]int // each value read, and how often
}

func newBillingGroup(t *testing.T, b *Broker) *billingGroup {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &billingGroup{t: t, ctx: ctx, p: p, c: c, seen: map[string]int{}}
}

// produce writes the values from to to-1.
func (g *billingGroup) produce(from, to int) {
	for i := from; i < to; i++ {
		require.NoError(g.t, g.p.ProduceSync(g.ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr())
	}
}

// read polls, committing after each poll, until n distinct values were read.
func (g *billingGroup) read(n int) {
	for len(g.seen) < n && g.ctx.Err() == nil {
		g.c.PollFetches(g.ctx).EachRecord(func(r *kgo.Record) { g.seen[string(r.Value)]++ })
		require.NoError(g.t, g.c.CommitUncommittedOffsets(g.ctx))
	}
}

// readOnceAndCommitted checks that every value was read once and that the
// group's committed offsets reach n records.
func (g *billingGroup) readOnceAndCommitted(n int64, why string) {
	for v, count := range g.seen {
		assert.Equal(g.t, 1, count, "record %s read once", v)
	}
	require.Eventually(g.t, func() bool {
		offs, err := kadm.NewClient(g.p).FetchOffsets(g.ctx, "billing")
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == n
	}, 30*time.Second, 10*time.Millisecond, why)
}

// TestFailOverAddress: a VAST virtual-IP failover resets every connection
// on the address, which refuses connections for the blackout on the
// broker's clock and then serves again, with no leader moved; a producer
// carries on through it.
func TestFailOverAddress(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	b, err := New(WithBrokers(2), WithClock(clk), WithTopics(TopicSpec{Name: "orders", Partitions: 2}))
	require.NoError(t, err)
	defer b.Close()
	held, err := net.Dial("tcp", b.BrokerAddr(1))
	require.NoError(t, err)
	defer held.Close()

	assert.ErrorIs(t, b.FailOverAddress(5, 0), ErrUnknownBroker)
	assert.ErrorContains(t, b.FailOverAddress(1, -time.Second), "want 0 or more")
	require.NoError(t, b.FailOverAddress(1, 10*time.Second))
	require.NoError(t, held.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = held.Read(make([]byte, 1))
	assert.Error(t, err, "its connections are reset")
	assert.True(t, b.BrokerIsDown(1))
	_, err = net.DialTimeout("tcp", b.BrokerAddr(1), time.Second)
	assert.Error(t, err, "the address refuses during the blackout")
	assert.ErrorContains(t, b.FailOverAddress(1, 0), "broker 1 is down")

	clk.Advance(10 * time.Second)
	require.Eventually(t, func() bool { return !b.BrokerIsDown(1) }, 10*time.Second, time.Millisecond, "the blackout ends on the broker's clock")
	assert.Equal(t, int32(1), b.LeaderOf("orders", 1), "no leader moved")
	assert.Zero(t, b.LeaderEpochOf("orders", 1))
	c, err := net.Dial("tcp", b.BrokerAddr(1))
	require.NoError(t, err, "the same address serves again")
	c.Close()

	// Without a blackout the address comes back at once; a producer goes on.
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("a")}).FirstErr())
	require.NoError(t, b.FailOverAddress(1, 0))
	assert.False(t, b.BrokerIsDown(1))
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("b")}).FirstErr())
	_, hw := b.data.get("orders").partition(1).Watermarks()
	assert.Equal(t, int64(2), hw)

	// A blackout that BrokerUp ended early does not end a later down.
	require.NoError(t, b.FailOverAddress(1, time.Minute))
	require.NoError(t, b.BrokerUp(1))
	require.NoError(t, b.BrokerDown(1))
	clk.Advance(time.Minute)
	assert.True(t, b.BrokerIsDown(1), "the first blackout's end leaves the second down alone")
}

// TestFaultsOnOneBroker: a fault, a latency and dropped connections scoped
// to one broker id touch only the requests and connections of that broker.
func TestFaultsOnOneBroker(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(2), WithProfile("kafka"), WithTopics(TopicSpec{Name: "t", Partitions: 2}))
	require.NoError(t, err)
	defer b.Close()
	assert.ErrorIs(t, b.InjectFault(Fault{API: kmsg.Produce, Err: kerr.NotEnoughReplicas.Code, Broker: new(int32(7))}), ErrUnknownBroker)
	require.NoError(t, b.InjectFault(Fault{API: kmsg.Produce, Err: kerr.NotEnoughReplicas.Code, Broker: new(int32(1))}))
	assert.Zero(t, rawProduce(t, b.BrokerAddr(0), "t", 0).Topics[0].Partitions[0].ErrorCode, "broker 0 is not faulted")
	assert.Equal(t, kerr.NotEnoughReplicas.Code, rawProduce(t, b.BrokerAddr(1), "t", 1).Topics[0].Partitions[0].ErrorCode)
	b.ClearFaults()

	assert.ErrorIs(t, b.SetBrokerLatency(7, kmsg.Produce, time.Second), ErrUnknownBroker)
	require.NoError(t, b.SetBrokerLatency(1, kmsg.Produce, time.Minute))
	assert.Equal(t, time.Minute, b.latencyFor(int16(kmsg.Produce), 1))
	assert.Zero(t, b.latencyFor(int16(kmsg.Produce), 0))
	b.SetLatency(kmsg.Produce, time.Second)
	assert.Equal(t, time.Minute, b.latencyFor(int16(kmsg.Produce), 1), "the longer one applies")
	assert.Equal(t, time.Second, b.latencyFor(int16(kmsg.Produce), 0))
	b.ClearFaults()

	c0, err := net.Dial("tcp", b.BrokerAddr(0))
	require.NoError(t, err)
	defer c0.Close()
	c1, err := net.Dial("tcp", b.BrokerAddr(1))
	require.NoError(t, err)
	defer c1.Close()
	// perBroker counts the open connections of each broker id.
	perBroker := func() map[int32]int {
		b.connsMu.Lock()
		defer b.connsMu.Unlock()
		n := map[int32]int{}
		for c := range b.conns {
			n[c.brokerID()]++
		}
		return n
	}
	require.Eventually(t, func() bool {
		n := perBroker()
		return n[0] == 1 && n[1] == 1 // the raw produces' connections gone, these two in
	}, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, b.DropBrokerConnections(7), ErrUnknownBroker)
	require.NoError(t, b.DropBrokerConnections(1))
	require.NoError(t, c1.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c1.Read(make([]byte, 1))
	assert.Error(t, err, "broker 1's connection is dropped")
	require.Eventually(t, func() bool {
		n := perBroker()
		return n[0] == 1 && n[1] == 0
	}, 10*time.Second, time.Millisecond, "broker 0's connection stays")
}

// TestCoordinatorMovesAreBounded: the control plane cannot make the broker
// keep a moved coordinator for unboundedly many groups, nor names of
// unbounded size: a name over Kafka's group id bound gets ErrNameTooLong,
// and past MaxCoordinatorMoves groups or MaxCoordinatorMoveBytes of names
// a new one gets ErrTooManyMoves; moving one again is always allowed.
func TestCoordinatorMovesAreBounded(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(2))
	require.NoError(t, err)
	defer b.Close()
	for i := range MaxCoordinatorMoves {
		require.NoError(t, b.MoveCoordinator("g"+strconv.Itoa(i), 1))
	}
	assert.ErrorIs(t, b.MoveCoordinator("one-more", 1), ErrTooManyMoves)
	assert.NoError(t, b.MoveCoordinator("g0", 0), "a group already moved moves again")
	assert.Equal(t, int32(0), b.CoordinatorOf("g0"))

	b2, err := New(WithBrokers(2))
	require.NoError(t, err)
	defer b2.Close()
	long := strings.Repeat("g", coordinator.MaxGroupIDBytes)
	assert.ErrorIs(t, b2.MoveCoordinator(long+"g", 1), ErrNameTooLong)
	n := MaxCoordinatorMoveBytes / len(long)
	for i := range n {
		require.NoError(t, b2.MoveCoordinator(fmt.Sprintf("%08d", i)+long[8:], 1))
	}
	assert.ErrorIs(t, b2.MoveCoordinator(fmt.Sprintf("%08d", n)+long[8:], 1), ErrTooManyMoves)
	assert.NoError(t, b2.MoveCoordinator("short", 1), "a short name still fits")
}

// TestGroupThroughAFailOver: a kgo consumer group reads on through a VAST
// virtual-IP failover of its coordinator's address (every connection reset,
// the address back after a blackout on the broker's clock): every record
// is read once and the group's commits go on.
func TestGroupThroughAFailOver(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	b, err := New(WithBrokers(3), WithClock(clk), WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	defer b.Close()
	g := newBillingGroup(t, b)
	g.produce(0, 30)
	g.read(30)

	coord := b.CoordinatorOf("billing")
	require.NoError(t, b.FailOverAddress(coord, 5*time.Second))
	clk.Advance(5 * time.Second)
	require.False(t, b.BrokerIsDown(coord), "the blackout ended on the broker's clock")
	g.produce(30, 60)
	g.read(60)
	g.readOnceAndCommitted(60, "the group commits after the failover")
}

// TestDescribeConfigsOfEveryBroker: DescribeConfigs answers for each broker
// id, and refuses one that does not exist.
func TestDescribeConfigsOfEveryBroker(t *testing.T) {
	t.Parallel()
	b, err := New(WithBrokers(3), WithProfile("kafka"))
	require.NoError(t, err)
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, 0, 1, 2)
	require.NoError(t, err)
	require.Len(t, rcs, 3)
	for _, rc := range rcs {
		assert.NoError(t, rc.Err, "broker %s", rc.Name)
		assert.NotEmpty(t, rc.Configs, "broker %s", rc.Name)
	}
	rcs, err = kadm.NewClient(cl).DescribeBrokerConfigs(ctx, 5)
	if err == nil {
		require.Len(t, rcs, 1)
		err = rcs[0].Err
	}
	assert.Error(t, err, "no broker 5")
}

// TestSetAdvertised: the addresses Metadata and FindCoordinator hand out
// change at once, on a connection opened before the change, and a client
// connected before it keeps producing; a list of the wrong length or an
// address without a port or host changes nothing.
func TestSetAdvertised(t *testing.T) {
	t.Parallel()
	b, err := New(WithListen("127.0.0.1:0"), WithBrokers(2), WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 2}))
	require.NoError(t, err)
	defer b.Close()
	before := b.Advertised()
	require.Equal(t, []string{b.BrokerAddr(0), b.BrokerAddr(1)}, before)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr())

	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))

	for _, bad := range [][]string{
		{"localhost:1"},
		{"localhost:1", "localhost:2", "localhost:3"},
		{"localhost:1", "localhost"},
		{"localhost:1", "localhost:0"},
		{"localhost:1", "localhost:65536"},
		{"localhost:1", ":2"},
		{"localhost:1", strings.Repeat("h", MaxAdvertisedHost+1) + ":2"},
		{"localhost:1", "local host:2"},
		{"localhost:1", "http://localhost:2"},
	} {
		assert.Error(t, b.SetAdvertised(bad...), "%q", bad)
		assert.Equal(t, before, b.Advertised(), "a refused %q changes nothing", bad)
	}

	// The same ports by another name, so that clients can still reach them.
	_, p0, _ := net.SplitHostPort(b.BrokerAddr(0))
	_, p1, _ := net.SplitHostPort(b.BrokerAddr(1))
	after := []string{"localhost:" + p0, "localhost:" + p1}
	require.NoError(t, b.SetAdvertised(after...))
	assert.Equal(t, after, b.Advertised())
	assert.Equal(t, after[0], b.AdvertisedAddr())

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mdResp := roundTrip(t, nc, md).(*kmsg.MetadataResponse)
	var got []string
	for _, br := range mdResp.Brokers {
		got = append(got, net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))))
	}
	assert.ElementsMatch(t, after, got, "Metadata on a connection opened before the change")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g"}
	fcResp := roundTrip(t, nc, fc).(*kmsg.FindCoordinatorResponse)
	require.Len(t, fcResp.Coordinators, 1)
	c := fcResp.Coordinators[0]
	assert.Equal(t, after[b.CoordinatorOf("g")], net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), "FindCoordinator")

	require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(), "a client connected before the change")
}

// TestAdvertiseUnspecified: a broker listening on every interface (as in a
// container) advertises localhost with its port, not 0.0.0.0, which Kafka
// refuses to advertise and no client can reach on every system.
func TestAdvertiseUnspecified(t *testing.T) {
	t.Parallel()
	b, err := New(WithListen("0.0.0.0:0"))
	require.NoError(t, err)
	defer b.Close()
	_, port, _ := net.SplitHostPort(b.Addr())
	assert.Equal(t, "localhost:"+port, b.AdvertisedAddr())
}
