package vastfake_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/fixtures"
)

// TestReadmeFirstTest keeps README's "Getting started" test the one that
// examples/gettingstarted compiles and runs, so that a newcomer copying it
// gets a passing test.
func TestReadmeFirstTest(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("examples/gettingstarted/billing_test.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), "```go\n"+string(example)+"```\n"),
		"README.md must quote examples/gettingstarted/billing_test.go verbatim in a go block")
}

// TestFirstTestPassesAgainstARealCluster runs the getting-started test with
// KAFKA_BOOTSTRAP pointing at a broker standing in for a real VAST cluster:
// a test written for vastfake must pass there when the app is right, not
// end in a skip at a call that only vastfake could answer.
func TestFirstTestPassesAgainstARealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/gettingstarted with go test")
	}
	cluster := fixtures.StartBroker(t)
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestBillingCommitsWhatItRead$", "./examples/gettingstarted")
	cmd.Env = append(os.Environ(), "KAFKA_BOOTSTRAP="+cluster.Addr())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestBillingCommitsWhatItRead")
	assert.NotContains(t, string(out), "SKIP")
	apis := map[kmsg.Key]bool{}
	for _, r := range cluster.Requests() {
		apis[r.API] = true
	}
	assert.True(t, apis[kmsg.Produce] && apis[kmsg.OffsetCommit], "the test ran against the cluster it was pointed at: %v", apis)
}
