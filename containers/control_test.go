package containers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/containers"
	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

// TestControlCallsReachTheBroker runs every Control method against the
// control plane of a broker in this process (no container engine needed)
// and checks what each did to the broker: every method names a route the
// control plane serves, with the body and query it reads.
func TestControlCallsReachTheBroker(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := fixtures.Start(t, fixtures.Brokers(2), fixtures.Profile("kafka"), fixtures.Topic("orders", 2), fixtures.ManualClock(start))
	b := k.Broker()
	srv := httptest.NewServer(control.New(b, control.WithToken("s3cret")))
	t.Cleanup(srv.Close)
	c := containers.NewControl(srv.URL, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	require.NoError(t, c.Healthz(ctx))
	require.NoError(t, c.SetAdvertised(ctx, "a:1", "b:2"))
	assert.Equal(t, []string{"a:1", "b:2"}, b.Advertised())
	got, err := c.Advertised(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a:1", "b:2"}, got)
	require.NoError(t, c.SetAdvertised(ctx, b.BrokerAddr(0), b.BrokerAddr(1)))

	one := int32(1)
	require.NoError(t, c.InjectFault(ctx, broker.Fault{API: kmsg.Produce, Err: kerr.NotLeaderForPartition.Code, Count: 2,
		Topic: "orders", Partitions: []int32{1}, Broker: &one}))
	require.NoError(t, c.InjectFault(ctx, broker.Fault{API: kmsg.Fetch, DropAnswer: true, Group: "g"}))
	require.NoError(t, c.SetLatency(ctx, kmsg.Fetch, 5*time.Millisecond))
	require.NoError(t, c.SetBrokerLatency(ctx, 1, kmsg.Produce, 5*time.Millisecond))
	require.NoError(t, c.ClearFaults(ctx))
	require.NoError(t, c.DropConnections(ctx))
	require.NoError(t, c.DropBrokerConnections(ctx, 1))

	require.NoError(t, c.BrokerDown(ctx, 1))
	assert.True(t, b.BrokerIsDown(1))
	views, err := c.Brokers(ctx)
	require.NoError(t, err)
	require.Len(t, views, 2)
	assert.True(t, views[1].Down)
	assert.Equal(t, b.BrokerAddr(1), views[1].Addr)
	require.NoError(t, c.BrokerUp(ctx, 1))
	assert.False(t, b.BrokerIsDown(1))
	require.NoError(t, c.FailOverAddress(ctx, 1, 0))
	assert.ErrorIs(t, c.BrokerDown(ctx, 9), broker.ErrUnknownBroker)

	require.NoError(t, c.MoveLeader(ctx, "orders", 0, 1))
	assert.Equal(t, int32(1), b.LeaderOf("orders", 0))
	require.NoError(t, c.MoveCoordinator(ctx, "billing", 1))
	assert.Equal(t, int32(1), b.CoordinatorOf("billing"))
	require.NoError(t, c.SetStaleEndOffset(ctx, 3*time.Second))
	assert.Equal(t, 3*time.Second, b.StaleEndOffset())
	require.NoError(t, c.Advance(ctx, time.Minute))
	assert.Equal(t, start.Add(time.Minute), k.Clock().Now())

	findings, err := c.Findings(ctx)
	require.NoError(t, err)
	assert.Empty(t, findings, "the kafka profile audits nothing")
	_, err = c.Group(ctx, "nobody")
	assert.True(t, containers.IsNotFound(err), "%v", err)

	require.NoError(t, c.Failover(ctx))
	require.NoError(t, c.Restart(ctx))
	k.Produce("orders", 0, "before the reset")
	require.NoError(t, c.Reset(ctx))
	_, ok := b.Topic("orders")
	assert.False(t, ok, "Reset drops the topics")

	var topics []map[string]any
	require.NoError(t, c.Do(ctx, "GET", "/topics", nil, &topics))
	anon := containers.NewControl(srv.URL, "")
	var e *containers.Error
	require.True(t, errors.As(anon.Reset(ctx), &e))
	assert.Equal(t, http.StatusUnauthorized, e.Status)
	assert.Contains(t, e.Error(), "POST /reset: 401")
}
