package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFloorServesProducerAndGroup runs the benchmark's own workloads
// against the floor: a producer is acknowledged, a group consumer reads as
// many records back, and a new group gets its first record.
func TestFloorServesProducerAndGroup(t *testing.T) {
	f, err := StartFloor()
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := Client(f.Addr())
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, CreateTopic(ctx, cl, "t", 3))
	require.NoError(t, Produce(ctx, cl, "t", 20_000))
	require.NoError(t, ConsumeGroup(ctx, f.Addr(), "g", "t", 20_000))
	_, err = FirstRecord(ctx, f.Addr(), "first", "t")
	require.NoError(t, err)
}
