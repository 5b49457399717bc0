package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producerStates returns how many idempotent producer states b holds.
func producerStates(b *Broker) int {
	b.appendMu.RLock()
	defer b.appendMu.RUnlock()
	return b.producers.Len()
}

// TestProducerStateFollowsTopics: an idempotent producer's state per
// partition survives a restart, goes with its topic when the topic is
// deleted, and Reset clears all of it, so deleted topics leave no memory
// behind.
func TestProducerStateFollowsTopics(t *testing.T) {
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "a", Partitions: 2}, TopicSpec{Name: "b", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(100*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	for _, r := range []*kgo.Record{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}} {
		require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
	}
	require.Equal(t, 3, producerStates(b), "one producer, three partitions")

	require.NoError(t, b.Restart())
	require.Equal(t, 3, producerStates(b), "a restart keeps producer state, as Kafka's snapshots do")

	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	require.Equal(t, 1, producerStates(b), "a deleted topic's producer state goes with it")

	b.Reset()
	require.Equal(t, 0, producerStates(b))
}
