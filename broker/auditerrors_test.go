package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestErrorsSectionTellsFailureFromRoutine: the errors section says an
// error is likely why an app fails only when a failure that is not
// retriable is there; routine protocol steps and errors a finding explains
// are listed apart and never raise it; each row names its topic or group.
func TestErrorsSectionTellsFailureFromRoutine(t *testing.T) {
	t.Parallel()
	routine := ErrorCount{API: "Heartbeat", Error: "REBALANCE_IN_PROGRESS", Retriable: true, Routine: true, ClientID: "rdkafka", Group: "billing", Count: 3}
	explained := ErrorCount{API: "Fetch", Error: "UNKNOWN_TOPIC_OR_PARTITION", ClientID: "kafka-console", Topic: "11111111-2222-3333-4444-555555555555", Finding: "NoTopicIDs", Count: 12}
	retriable := ErrorCount{API: "Produce", Error: "NOT_ENOUGH_REPLICAS", Retriable: true, ClientID: "app", Topic: "orders", Count: 2}
	failure := ErrorCount{API: "OffsetCommit", Error: "ILLEGAL_GENERATION", ClientID: "app", Topic: "orders", Group: "billing", Count: 1}

	for _, c := range []struct {
		name      string
		errors    []ErrorCount
		want, not []string
	}{
		{"routine only", []ErrorCount{routine},
			[]string{"3 answers were routine", "| Heartbeat | REBALANCE_IN_PROGRESS | client id rdkafka | group billing | 3 |"},
			[]string{"likely why an app fails", "carried an error that no VAST rule caused"}},
		{"explained by a finding", []ErrorCount{explained, routine},
			[]string{"12 answers carried an error whose cause is a finding above", "| 11111111-2222-3333-4444-555555555555 | 12 | NoTopicIDs |"},
			[]string{"likely why an app fails"}},
		{"retriable failures", []ErrorCount{retriable},
			[]string{"2 answers carried an error that no VAST rule caused", "All of them are retriable", "| orders | 2 |"},
			[]string{"likely why an app fails"}},
		{"a failure", []ErrorCount{retriable, failure},
			[]string{"3 answers carried an error that no VAST rule caused", "2 of them are retriable", "likely why an app fails", "| orders, group billing | 1 |"}, nil},
	} {
		md := AuditReport{Audited: []string{"NoCompression"}, Errors: c.errors}.Markdown()
		for _, w := range c.want {
			assert.Contains(t, md, w, c.name)
		}
		for _, n := range c.not {
			assert.NotContains(t, md, n, c.name)
		}
	}

	for _, c := range []struct {
		api     kmsg.Key
		err     *kerr.Error
		routine bool
	}{
		{kmsg.JoinGroup, kerr.MemberIDRequired, true},
		{kmsg.Heartbeat, kerr.RebalanceInProgress, true},
		{kmsg.SyncGroup, kerr.RebalanceInProgress, true},
		{kmsg.FindCoordinator, kerr.CoordinatorNotAvailable, true},
		{kmsg.OffsetCommit, kerr.NotCoordinator, true},
		{kmsg.Produce, kerr.NotLeaderForPartition, true},
		{kmsg.Heartbeat, kerr.IllegalGeneration, true},
		{kmsg.OffsetCommit, kerr.IllegalGeneration, false}, // the commit is lost
		{kmsg.Heartbeat, kerr.UnknownMemberID, false},      // the session ended
		{kmsg.Fetch, kerr.UnknownTopicOrPartition, false},
		{kmsg.Produce, kerr.MessageTooLarge, false},
	} {
		assert.Equal(t, c.routine, routineError(int16(c.api), c.err.Code), "%s %s", c.api.Name(), c.err.Message)
	}
}
