package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// TestAuditRoutineErrorsAreNoAlarm: a healthy group of two kgo members set
// up for VAST (range, no fetch sessions) in the audit profile. The second
// member's join makes the first one rejoin (its heartbeat gets
// REBALANCE_IN_PROGRESS, each JoinGroup first MEMBER_ID_REQUIRED): the
// report counts those as routine, names the group on each row, still says
// "No findings", and never says an error is likely why an app fails.
func TestAuditRoutineErrorsAreNoAlarm(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("logs", 2))
	opts := []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.DisableFetchSessions(), kgo.HeartbeatInterval(100 * time.Millisecond)}
	groupConsumer(t, k.Addr(), "billing", "logs", opts...)
	k.WaitFor("one member in a stable group", func() bool {
		g := k.Group("billing")
		return g.State == "Stable" && len(g.Members) == 1
	})
	groupConsumer(t, k.Addr(), "billing", "logs", opts...)
	k.WaitFor("two members in a stable group", func() bool {
		g := k.Group("billing")
		return g.State == "Stable" && len(g.Members) == 2
	})

	rep := k.Broker().AuditReport()
	require.Empty(t, rep.Findings, "%+v", rep.Findings)
	seen := map[string]bool{}
	for _, e := range rep.Errors {
		assert.True(t, e.Routine, "%+v", e)
		assert.Equal(t, "billing", e.Group, "%+v", e)
		seen[e.API+" "+e.Error] = true
	}
	assert.True(t, seen["Heartbeat REBALANCE_IN_PROGRESS"], "%v", seen)
	assert.True(t, seen["JoinGroup MEMBER_ID_REQUIRED"], "%v", seen)
	md := rep.Markdown()
	assert.Contains(t, md, "No findings")
	assert.NotContains(t, md, "likely why an app fails")
	assert.Contains(t, md, "routine: steps of the protocol every client takes and recovers from on its own")
	var row string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| Heartbeat | REBALANCE_IN_PROGRESS |") {
			row = l
		}
	}
	assert.Contains(t, row, "| group billing |", "the row names its group")
}
