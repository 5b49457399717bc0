package interop

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/fixtures"
)

// TestAuditKcat runs Debian's kcat (librdkafka) unchanged against the audit
// profile at three brokers, as a user migrating it would: at its defaults
// (client id "rdkafka") with -z gzip, and a two-member -G group. The
// finding's advice carries librdkafka's property and kcat's own form; the
// group's rejoin is routine, not a failure. Rerun as the advice says
// (-X compression.type=none, no -z), the finding is gone. kcat named
// "otel-collector" is still librdkafka and never gets the Collector's YAML;
// named "kcat" it gets kcat's form alone.
func TestAuditKcat(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (apt-get install kcat)")
	}
	run := func(t *testing.T, addr, stdin string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-b", addr}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	members := func(t *testing.T, k *fixtures.Kafka) {
		// The second member's join makes the first rejoin; the second reads
		// its share to the end (-e) and leaves, then the first is stopped as
		// a user stops it (SIGTERM: kcat leaves the group).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		first := exec.CommandContext(ctx, kcat, "-b", k.Addr(), "-G", "billing", "-q", "-o", "beginning", "logs")
		require.NoError(t, first.Start())
		k.WaitFor("kcat's first member in a stable group", func() bool {
			g := k.Group("billing")
			return g.State == "Stable" && len(g.Members) == 1
		})
		second := exec.CommandContext(ctx, kcat, "-b", k.Addr(), "-G", "billing", "-q", "-e", "-o", "beginning", "logs")
		require.NoError(t, second.Start())
		assert.NoError(t, second.Wait())
		require.NoError(t, first.Process.Signal(syscall.SIGTERM))
		_ = first.Wait() // its exit status on a signal is kcat's business
	}
	lines := strings.Repeat("a log line\n", 200)

	k := fixtures.Start(t, fixtures.Audit(), fixtures.Brokers(3), fixtures.Topic("logs", 2))
	run(t, k.Addr(), lines, "-P", "-t", "logs", "-z", "gzip")
	members(t, k)
	rep := k.Broker().AuditReport()
	f := librdkafkaCompression(t, rep)
	assert.Contains(t, f.Advice, "set compression.type=none")
	assert.Contains(t, f.Advice, "kcat: run kcat with -X compression.type=none (compression.codec is its alias) and without -z")
	assert.Contains(t, f.Advice, `rsyslog: in omkafka, set confParam=["compression.type=none"]`)
	for _, e := range rep.Errors {
		assert.True(t, e.Routine, "a healthy group's errors are routine: %+v", e)
		assert.Equal(t, "billing", e.Group)
	}
	md := rep.Markdown()
	assert.Contains(t, md, "were routine")
	assert.NotContains(t, md, "likely why an app fails")

	rerun := fixtures.Start(t, fixtures.Audit(), fixtures.Brokers(3), fixtures.Topic("logs", 2))
	run(t, rerun.Addr(), lines, "-P", "-t", "logs", "-X", "compression.type=none")
	members(t, rerun)
	assert.Empty(t, rerun.Findings(), "the advice applied clears the finding")

	named := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("logs", 1))
	run(t, named.Addr(), lines, "-P", "-t", "logs", "-z", "gzip", "-X", "client.id=otel-collector")
	run(t, named.Addr(), lines, "-P", "-t", "logs", "-z", "gzip", "-X", "client.id=kcat")
	advice := map[string]string{}
	for _, f := range named.Findings() {
		advice[f.ClientID] = f.Advice
	}
	assert.NotContains(t, advice["otel-collector"], "YAML", "kcat named otel-collector is librdkafka")
	assert.Contains(t, advice["otel-collector"], "set compression.type=none")
	assert.Equal(t, "run kcat with -X compression.type=none (compression.codec is its alias) and without -z", advice["kcat"])
}
