package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/fixtures"
)

// readOrders stands for your code: it reads n orders as the consumer group
// "billing" and commits what it read.
func readOrders(ctx context.Context, bootstrap string, n int) ([]string, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumerGroup("billing"),
		kgo.ConsumeTopics("orders"),
		kgo.Balancers(kgo.RangeBalancer()), // VAST refuses kgo's default, cooperative-sticky
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var orders []string
	for len(orders) < n {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return orders, err
		}
		fetches.EachRecord(func(r *kgo.Record) { orders = append(orders, string(r.Value)) })
	}
	return orders, cl.CommitUncommittedOffsets(ctx)
}

func TestBillingCommitsWhatItRead(t *testing.T) {
	k := fixtures.Start(t, fixtures.Topic("orders", 1)) // a VAST broker on a free port, closed with the test
	k.Produce("orders", 0, "o-1", "o-2", "o-3")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orders, err := readOrders(ctx, k.Addr(), 3)
	require.NoError(t, err)

	assert.Equal(t, []string{"o-1", "o-2", "o-3"}, orders)
	k.AssertCommitted("billing", "orders", 0, 3) // the next offset to read
	assert.Empty(t, k.Refusals(), "no request was refused by a VAST rule")
}
