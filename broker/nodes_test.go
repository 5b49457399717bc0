package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSeveralBrokersInMetadata: three broker ids on three addresses, every
// one in Metadata, partition leaders and group coordinators by the
// documented rules, which LeaderOf and CoordinatorOf compute.
func TestSeveralBrokersInMetadata(t *testing.T) {
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
		assert.Equal(t, []int32{pd.Leader}, pd.Replicas)
	}
	groups := []string{"billing", "orders-app", "g", "a-much-longer-group-name"}
	coords := adm.FindGroupCoordinators(ctx, groups...)
	for _, g := range groups {
		require.NoError(t, coords[g].Err, g)
		assert.Equal(t, b.CoordinatorOf(g), coords[g].NodeID, g)
	}
	// The rule is Kafka's partitionFor: Java's hashCode, its sign bit
	// masked, mod 50, then that partition's leader.
	assert.Equal(t, int32(99162322), javaStringHash("hello"))
	assert.Equal(t, int32(1772899), javaStringHash("😀"), "a surrogate pair, as Java sees it")
	assert.Equal(t, b.LeaderOf(offsetsTopic, int32(99162322%50)), b.CoordinatorOf("hello"))
}

// TestBrokerDownAndUp: a broker taken down refuses connections and drops the
// ones it has while the others serve; up serves again on the same address.
// A producer with acks=all carries on through it and a consumer group reads
// every acknowledged record once.
func TestBrokerDownAndUp(t *testing.T) {
	b, err := New(WithBrokers(3), WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 6}))
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

	// While it is down, the partitions it leads wait and the others are
	// acknowledged.
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
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		others := 0
		for part, c := range acked {
			if b.LeaderOf("orders", part) != down {
				others += c
			}
		}
		return others > 0
	}, 30*time.Second, 10*time.Millisecond, "records for the partitions other brokers lead are acknowledged")
	mu.Lock()
	for part := range acked {
		assert.NotEqual(t, down, b.LeaderOf("orders", part), "nothing is acknowledged for partition %d while its leader is down", part)
	}
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
