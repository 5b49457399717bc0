package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinAs sends one JoinGroup for group from cl, with an instance id when
// instance is not empty, offering protocols.
func joinAs(t *testing.T, cl *kgo.Client, group, instance string, protocols ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = group, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p
		req.Protocols = append(req.Protocols, jp)
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	return resp
}

// brokerAndClient starts a broker of profile and a kgo client of it with
// clientID, both closed with the test.
func brokerAndClient(t *testing.T, profile, clientID string) (*Broker, *kgo.Client) {
	t.Helper()
	b, err := New(WithProfile(profile))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(clientID))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return b, cl
}

// lastRecord returns the request log's last record of api.
func lastRecord(t *testing.T, b *Broker, api kmsg.Key) RequestRecord {
	t.Helper()
	rs := b.Requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].API == api {
			return rs[i]
		}
	}
	t.Fatalf("no %v in the request log", api)
	return RequestRecord{}
}

// TestCallerCarriesTheRequest: the request the broker passes the
// coordinator as its caller carries the client into the group (member
// client id and host), and what the coordinator reports back reaches the
// client's findings, its request log record and the group forecast: a
// finding of a join that creates a group names the client, its software
// and the API, and a refusal names its rule and reason.
func TestCallerCarriesTheRequest(t *testing.T) {
	t.Parallel()
	b, cl := brokerAndClient(t, "audit", "billing-app")

	resp := joinAs(t, cl, "billing", "billing-1", "range")
	require.Zero(t, resp.ErrorCode)
	g, ok := b.coord.Group("billing")
	require.True(t, ok)
	require.Len(t, g.Members, 1)
	assert.Equal(t, "billing-app", g.Members[0].ClientID)
	assert.Equal(t, "/127.0.0.1", g.Members[0].ClientHost)
	assert.True(t, strings.HasPrefix(resp.MemberID, "billing-app-"), resp.MemberID)

	var found []Finding
	for _, f := range b.Findings() {
		if f.Rule == "IgnoreGroupInstanceID" {
			found = append(found, f)
		}
	}
	require.Len(t, found, 1, "findings: %+v", b.Findings())
	assert.Equal(t, "billing-app", found[0].ClientID)
	assert.Equal(t, "kgo", found[0].ClientSoftware)
	assert.Equal(t, "JoinGroup", found[0].API)
	assert.Equal(t, "billing", found[0].Group)
	assert.Equal(t, "IgnoreGroupInstanceID", lastRecord(t, b, kmsg.JoinGroup).Finding)

	groups := b.GroupsCreated()
	require.Len(t, groups, 1)
	assert.Equal(t, "billing-app", groups[0].ClientID)
	assert.Equal(t, 1, groups[0].Created)

	vast, vcl := brokerAndClient(t, "vast", "coop-app")
	refused := joinAs(t, vcl, "coop", "", "cooperative-sticky")
	assert.NotZero(t, refused.ErrorCode)
	rec := lastRecord(t, vast, kmsg.JoinGroup)
	assert.Equal(t, "EagerAssignorsOnly", rec.Rule)
	assert.Equal(t, "coop-app", rec.ClientID)
	assert.Contains(t, rec.Message, "is cooperative; VAST rebalances eagerly only")
}
