package coordinator

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/rules"
)

// TestCallerCarriesTheClient: what the broker passes as the Caller of a
// request reaches what the coordinator does with it: a new member carries
// its client id and host, a group the request creates and a finding it
// causes are told to its caller, and a finding no request causes (offsets
// expiring on the clock) goes to Config.Audit naming the client that
// committed them.
func TestCallerCarriesTheClient(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var audited []string
	h := newHarness(t, rules.AuditAll(), func(c *Config) {
		c.Audit = func(clients string, rule rules.ID, kind rules.Kind, group, _ string) {
			mu.Lock()
			defer mu.Unlock()
			audited = append(audited, clients+" "+rule.String()+" "+kind.String()+" "+group)
		}
	})
	billing := &testCaller{id: "billing", host: "/10.0.0.7"}

	req := joinReq("g", "")
	req.InstanceID = new("billing-1")
	jr := get(t, h.joinAsyncAs(context.Background(), billing, req))
	require.Equal(t, errNone, jr.ErrorCode)
	assert.True(t, strings.HasPrefix(jr.MemberID, "billing-"), jr.MemberID)
	gi, ok := h.c.Group("g")
	require.True(t, ok)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, "billing", gi.Members[0].ClientID)
	assert.Equal(t, "/10.0.0.7", gi.Members[0].ClientHost)

	refused, findings, created := billing.told()
	assert.Empty(t, refused, "audited rules refuse nothing")
	require.Len(t, findings, 1)
	assert.True(t, strings.HasPrefix(findings[0], `IgnoreGroupInstanceID differs g: group.instance.id "billing-1"`), findings[0])
	assert.Equal(t, []string{"g"}, created)

	committer := &testCaller{id: "committer"}
	require.Equal(t, []int16{errNone}, commitCodes(h.c.OffsetCommit(committer, commitReq("offsets", "", -1, "t", map[int32]int64{0: 5}))))
	_, _, created = committer.told()
	assert.Equal(t, []string{"offsets"}, created)

	h.clk.Advance(h.c.rules.OffsetsRetention)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"committer OffsetsNeverExpire differs offsets"}, audited,
		"a finding no request caused names the group's last committer")
}

// TestNoCallerNamesNoOne: a request with no client makes members with no
// client id, and what it would be told is dropped.
func TestNoCallerNamesNoOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rules.AuditAll())
	req := joinReq("g", "")
	req.Version = 3 // no MEMBER_ID_REQUIRED round
	jr := get(t, h.joinAsync(req))
	require.Equal(t, errNone, jr.ErrorCode)
	gi, _ := h.c.Group("g")
	require.Len(t, gi.Members, 1)
	assert.Empty(t, gi.Members[0].ClientID)
	assert.True(t, strings.HasPrefix(jr.MemberID, "-"), "Kafka's clientID-uuid with no client id: %s", jr.MemberID)
}
