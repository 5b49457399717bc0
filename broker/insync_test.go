package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
)

// inSyncBroker is a kafka-profile broker of 3 (ids 1-3) on a manual clock,
// with "t" of 3 partitions (partition p led by broker p+1, every broker in
// its in-sync set) and "strict" of 1 with min.insync.replicas=3.
func inSyncBroker(t *testing.T) (*Broker, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Now())
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithClock(clk),
		WithTopics(TopicSpec{Name: "t", Partitions: 3}, TopicSpec{Name: "strict", Partitions: 1, Configs: map[string]string{"min.insync.replicas": "3"}}))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b, clk
}

// produceAsync sends one record to topic-p at broker at, with acks and
// timeout, from a client of its own, and returns where its answer (or
// error) arrives.
func produceAsync(t *testing.T, b *Broker, at int32, topic string, p int32, acks int16, timeout int32) <-chan produceResult {
	t.Helper()
	acksOpt := kgo.RequiredAcks(kgo.AllISRAcks()) // kgo sends its own acks in every produce
	if acks == 1 {
		acksOpt = kgo.RequiredAcks(kgo.LeaderAck())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.BrokerAddr(at)), acksOpt, kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, timeout
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, b.data.get(topic).id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, benchBatch(1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	out := make(chan produceResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl) // to the partition's leader
		if err != nil {
			out <- produceResult{err: err}
			return
		}
		out <- produceResult{p: resp.Topics[0].Partitions[0]}
	}()
	return out
}

type produceResult struct {
	p   kmsg.ProduceResponseTopicPartition
	err error
}

// held waits until the broker holds n produces.
func held(t *testing.T, b *Broker, n int) {
	t.Helper()
	require.Eventually(t, func() bool { got, _ := b.HeldProduces(); return got == n }, 30*time.Second, time.Millisecond, "%d held produces", n)
}

// notYet asserts that a produce has not been answered.
func notYet(t *testing.T, ch <-chan produceResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered while an in-sync replica is down and not fenced: %+v", r)
	default:
	}
}

func answer(t *testing.T, ch <-chan produceResult) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.p
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
	return kmsg.ProduceResponseTopicPartition{}
}

// TestAcksAllWaitsForADownInSyncReplica: with a follower down and not yet
// fenced, an acks=all produce is stored at once and answered once the
// follower is fenced, the election delay later on the broker's clock, as
// Kafka's leader answers once the controller takes the follower out of the
// in-sync set; acks=1 is answered at once. Meanwhile both records are
// stored but not readable: the high watermark stays where it was until the
// follower is fenced, as a Kafka leader's does.
func TestAcksAllWaitsForADownInSyncReplica(t *testing.T) {
	t.Parallel()
	b, clk := inSyncBroker(t)
	require.NoError(t, b.BrokerDown(2))
	all := produceAsync(t, b, 1, "t", 0, -1, 30_000)
	held(t, b, 1)
	one := answer(t, produceAsync(t, b, 1, "t", 0, 1, 30_000))
	assert.Zero(t, one.ErrorCode, "acks=1 is not held")
	part := b.data.get("t").partition(0)
	assert.Equal(t, int64(2), part.LogEndOffset(), "both stored")
	assert.Equal(t, int64(0), part.HighWatermark(), "neither readable while the follower is in the in-sync set")
	clk.Advance(DefaultElectionDelay - time.Millisecond)
	notYet(t, all)
	clk.Advance(time.Millisecond) // broker 2 is fenced
	assert.Equal(t, int64(2), part.HighWatermark(), "readable once the follower is fenced")
	got := answer(t, all)
	assert.Zero(t, got.ErrorCode)
	assert.Equal(t, int64(0), got.BaseOffset)
	held(t, b, 0)
	assert.Zero(t, answer(t, produceAsync(t, b, 1, "t", 0, -1, 30_000)).ErrorCode, "out of the in-sync set: no wait")
}

// TestAcksAllHeldUntilTheRequestTimeout: the request's timeout, on the
// broker's clock, answers REQUEST_TIMED_OUT with the record stored, as
// Kafka's delayed produce expires; a timeout of 0 at once.
func TestAcksAllHeldUntilTheRequestTimeout(t *testing.T) {
	t.Parallel()
	b, clk := inSyncBroker(t)
	require.NoError(t, b.BrokerDown(3))
	ch := produceAsync(t, b, 1, "t", 0, -1, 2_000)
	held(t, b, 1)
	clk.Advance(2*time.Second - time.Millisecond)
	notYet(t, ch)
	clk.Advance(time.Millisecond)
	assert.Equal(t, kerr.RequestTimedOut.Code, answer(t, ch).ErrorCode)
	assert.Equal(t, int64(1), b.data.get("t").partition(0).LogEndOffset(), "the record stays, as in Kafka's leader log")
	assert.Equal(t, int64(0), b.data.get("t").partition(0).HighWatermark(), "unreadable while broker 3 is in the in-sync set")
	assert.Equal(t, kerr.RequestTimedOut.Code, answer(t, produceAsync(t, b, 1, "t", 0, -1, 0)).ErrorCode)
	held(t, b, 0)
}

// TestAcksAllReleasedWhenTheReplicaComesBack: a follower back up within
// the election delay catches up at once and the held produce is answered.
func TestAcksAllReleasedWhenTheReplicaComesBack(t *testing.T) {
	t.Parallel()
	b, _ := inSyncBroker(t)
	require.NoError(t, b.BrokerDown(2))
	ch := produceAsync(t, b, 3, "t", 2, -1, 30_000)
	held(t, b, 1)
	notYet(t, ch)
	assert.Equal(t, int64(0), b.data.get("t").partition(2).HighWatermark())
	require.NoError(t, b.BrokerUp(2))
	assert.Zero(t, answer(t, ch).ErrorCode)
	assert.Equal(t, int64(1), b.data.get("t").partition(2).HighWatermark(), "the follower caught up: readable")
}

// TestAcksAllAfterAppendBelowMinInsync: when the fence takes the in-sync
// set below min.insync.replicas, the held produce gets
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, as from Kafka's leader, and the next
// one NOT_ENOUGH_REPLICAS.
func TestAcksAllAfterAppendBelowMinInsync(t *testing.T) {
	t.Parallel()
	b, clk := inSyncBroker(t)
	require.NoError(t, b.BrokerDown(2))
	ch := produceAsync(t, b, 1, "strict", 0, -1, 30_000)
	held(t, b, 1)
	clk.Advance(DefaultElectionDelay)
	assert.Equal(t, kerr.NotEnoughReplicasAfterAppend.Code, answer(t, ch).ErrorCode)
	assert.Equal(t, kerr.NotEnoughReplicas.Code, answer(t, produceAsync(t, b, 1, "strict", 0, -1, 30_000)).ErrorCode)
}

// TestHeldProducesHoldNothingElse: while a produce is held, other
// connections produce to the same partition, fetch it and read metadata;
// past the bound a produce is answered at once; Close ends a hold.
func TestHeldProducesHoldNothingElse(t *testing.T) {
	t.Parallel()
	b, _ := inSyncBroker(t)
	b.held.maxN = 2
	require.NoError(t, b.BrokerDown(2))
	first := produceAsync(t, b, 1, "t", 0, -1, 30_000)
	second := produceAsync(t, b, 1, "t", 0, -1, 30_000)
	held(t, b, 2)
	third := answer(t, produceAsync(t, b, 1, "t", 0, -1, 30_000))
	assert.Zero(t, third.ErrorCode, "past the bound: answered at once")
	assert.Equal(t, int64(3), b.data.get("t").partition(0).LogEndOffset())

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.BrokerAddr(1)))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "t", b.data.get("t").id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := cl.Broker(1).RetriableRequest(ctx, fetch) // the leader
	require.NoError(t, err)
	fr := resp.(*kmsg.FetchResponse)
	require.NoError(t, err)
	assert.Zero(t, fr.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, int64(0), fr.Topics[0].Partitions[0].HighWatermark, "the fetch is answered, at the held high watermark")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Close() }()
	for _, ch := range []<-chan produceResult{first, second} {
		select {
		case <-ch: // the connection closed, unanswered
		case <-time.After(30 * time.Second):
			t.Fatal("Close left a produce held")
		}
	}
	wg.Wait()
	n, bytes := b.HeldProduces()
	assert.Zero(t, n)
	assert.Zero(t, bytes)
}
