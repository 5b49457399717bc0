package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/fixtures"
)

// TestOrdersSurviveAFailover: three broker addresses; a VAST virtual-IP
// failover resets every connection on the one that leads partition 1, and
// the producer carries on. Every order is stored once.
func TestOrdersSurviveAFailover(t *testing.T) {
	k := fixtures.Start(t, fixtures.Brokers(3), fixtures.Topic("orders", 3))
	b := k.Broker()

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression())) // VAST refuses both
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for i, order := range []string{"o-1", "o-2", "o-3"} {
		if i == 1 {
			require.NoError(t, b.FailOverAddress(b.LeaderOf("orders", 1), 0)) // connections reset, address back
		}
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte(order)}).FirstErr())
	}
	orders, _ := b.Topic("orders")
	require.Equal(t, int64(3), orders.Partitions[1].HighWatermark, "three orders, each stored once")
}
