package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pacedBroker is a VAST-profile broker whose empty fetches are paced for an
// hour, so that only new records, the fetch's own MaxWait, an error or the
// broker's end can answer one within a test's lifetime.
func pacedBroker(t *testing.T) (*Broker, *kgo.Client) {
	t.Helper()
	b, err := New(WithTopics(TopicSpec{Name: "p", Partitions: 2}), WithEmptyFetchDelay(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestRetries(0))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return b, cl
}

// fetchReq asks for partitions of topic p from offset 0, waiting up to
// maxWait.
func fetchReq(maxWait time.Duration, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12) // by name: VAST reports zero topic IDs
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = int32(maxWait/time.Millisecond), 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "p"
	for _, p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

type fetchResult struct {
	resp *kmsg.FetchResponse
	err  error
}

// fetchAsync sends req and delivers its answer on the returned channel.
func fetchAsync(ctx context.Context, cl *kgo.Client, req *kmsg.FetchRequest) <-chan fetchResult {
	done := make(chan fetchResult, 1)
	go func() {
		resp, err := req.RequestWith(ctx, cl)
		done <- fetchResult{resp, err}
	}()
	return done
}

// waitResult fails the test if the fetch is not answered within the
// test's deadline.
func waitResult(t *testing.T, done <-chan fetchResult) fetchResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the paced fetch was never answered")
		return fetchResult{}
	}
}

// waitPaced waits until n fetches are held by the pacing.
func waitPaced(t *testing.T, b *Broker, n int32) {
	t.Helper()
	require.Eventually(t, func() bool { return b.fetchWaiters.Load() == n }, 30*time.Second, time.Millisecond,
		"the empty fetch is paced")
}

func TestPacedEmptyFetchEndsWhenRecordsArrive(t *testing.T) {
	t.Parallel()
	b, cl := pacedBroker(t)
	done := fetchAsync(context.Background(), cl, fetchReq(time.Hour, 0, 1))
	waitPaced(t, b, 1)
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "p", Partition: 1, Value: []byte("v")}).FirstErr())
	r := waitResult(t, done)
	require.NoError(t, r.err)
	parts := r.resp.Topics[0].Partitions
	require.Len(t, parts, 2)
	assert.Empty(t, parts[0].RecordBatches)
	assert.NotEmpty(t, parts[1].RecordBatches, "the paced fetch answers with the new record")
	assert.Equal(t, int32(0), b.fetchWaiters.Load())
}

func TestPacedEmptyFetchKeepsWaitingForItsOwnPartitions(t *testing.T) {
	t.Parallel()
	b, cl := pacedBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := fetchAsync(ctx, cl, fetchReq(time.Hour, 0))
	waitPaced(t, b, 1)
	// A record elsewhere wakes the fetch, which finds nothing and waits on.
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "p", Partition: 1, Value: []byte("v")}).FirstErr())
	waitPaced(t, b, 1)
	select {
	case r := <-done:
		t.Fatalf("answered without records of its partition: %+v", r)
	default:
	}
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "p", Partition: 0, Value: []byte("v")}).FirstErr())
	r := waitResult(t, done)
	require.NoError(t, r.err)
	assert.NotEmpty(t, r.resp.Topics[0].Partitions[0].RecordBatches)
}

func TestPacedEmptyFetchNeverOutwaitsMaxWait(t *testing.T) {
	t.Parallel()
	_, cl := pacedBroker(t)
	// An hour's pacing, a 50ms MaxWait: the answer comes, empty.
	r := waitResult(t, fetchAsync(context.Background(), cl, fetchReq(50*time.Millisecond, 0)))
	require.NoError(t, r.err)
	assert.Empty(t, r.resp.Topics[0].Partitions[0].RecordBatches)
	assert.Equal(t, int16(0), r.resp.Topics[0].Partitions[0].ErrorCode)
}

func TestPacedFetchAnswersErrorsAtOnce(t *testing.T) {
	t.Parallel()
	_, cl := pacedBroker(t)
	r := waitResult(t, fetchAsync(context.Background(), cl, fetchReq(time.Hour, 0, 7)))
	require.NoError(t, r.err)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, r.resp.Topics[0].Partitions[1].ErrorCode)
}

func TestCloseEndsPacedFetch(t *testing.T) {
	t.Parallel()
	b, cl := pacedBroker(t)
	done := fetchAsync(context.Background(), cl, fetchReq(time.Hour, 0))
	waitPaced(t, b, 1)
	require.NoError(t, b.Close())
	waitResult(t, done) // an empty answer or a broken connection; either way it ends
	assert.Equal(t, int32(0), b.fetchWaiters.Load())
}

func TestNegativeEmptyFetchDelayRefused(t *testing.T) {
	t.Parallel()
	_, err := New(WithEmptyFetchDelay(-time.Second))
	require.ErrorContains(t, err, "empty fetch delay")
}

// TestWaitingFetchEndsWhenItsTopicIsDeleted: a fetch held for records (paced
// in the VAST profile, delayed in the kafka profile) is answered at once
// when its topic is deleted, UNKNOWN_TOPIC_OR_PARTITION by name or
// UNKNOWN_TOPIC_ID by ID (kgo fetches by ID where the broker has IDs), as
// Kafka completes a delayed fetch whose partition goes away, instead of
// waiting out its MaxWait for records that can no longer come.
func TestWaitingFetchEndsWhenItsTopicIsDeleted(t *testing.T) {
	t.Parallel()
	for profile, want := range map[string]*kerr.Error{"vast": kerr.UnknownTopicOrPartition, "kafka": kerr.UnknownTopicID} {
		t.Run(profile, func(t *testing.T) {
			b, err := New(WithProfile(profile), WithTopics(TopicSpec{Name: "p", Partitions: 2}), WithEmptyFetchDelay(time.Hour))
			require.NoError(t, err)
			defer b.Close()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(0))
			require.NoError(t, err)
			defer cl.Close()
			req := fetchReq(time.Hour, 0, 1)
			req.Topics[0].TopicID = b.data.get("p").id
			done := fetchAsync(context.Background(), cl, req)
			waitPaced(t, b, 1)
			b.deleteTopic(b.data.get("p"))
			r := waitResult(t, done)
			require.NoError(t, r.err)
			for _, p := range r.resp.Topics[0].Partitions {
				assert.Equal(t, want.Code, p.ErrorCode, "partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		})
	}
}
