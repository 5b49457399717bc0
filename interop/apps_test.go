package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/testutil"
)

// needApp returns the first of paths that is an executable (a bare name
// is looked up on PATH); with none, it skips the test with hint, or fails
// it when CI is set (.ci/run installs the apps).
func needApp(t *testing.T, hint string, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if found, err := exec.LookPath(p); err == nil {
			return found
		}
	}
	missingApp(t, paths[0]+" ("+hint+")")
	return ""
}

// missingApp skips the test for want, or fails it when CI is set.
func missingApp(t *testing.T, want string) {
	t.Helper()
	msg := t.Name() + " needs " + want
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// daemon is an app a test runs in the foreground as a user runs it, until
// stop: its output is kept and logged when the test fails.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	out    testutil.LockedBuffer
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startDaemon starts name with args (and env added to the test's own),
// stopped with SIGTERM (then killed after 10 s) when the test ends, if it
// was not stopped before.
func startDaemon(t *testing.T, env []string, name string, args ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{name: name, cancel: cancel, done: make(chan struct{})}
	d.cmd = exec.CommandContext(ctx, name, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	d.cmd.Cancel = func() error { return d.cmd.Process.Signal(syscall.SIGTERM) }
	d.cmd.WaitDelay = 10 * time.Second
	if err := d.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = d.cmd.Wait() // how it exits on SIGTERM is the app's business
		close(d.done)
	}()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("%s printed:\n%s", name, d.out.String())
		}
	})
	return d
}

// stop sends the app SIGTERM, as a user stops it, and waits until it has
// exited (killed 10 s after the signal at the latest).
func (d *daemon) stop() {
	d.once.Do(d.cancel)
	<-d.done
}

// waitFor waits on cond with the fixtures' deadline, naming the app and
// what it printed when the wait fails.
func (d *daemon) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	fixtures.WaitFor(t, d.name+": "+what, func() bool {
		select {
		case <-d.done:
			t.Fatalf("%s exited while the test waited for %s:\n%s", d.name, what, d.out.String())
		default:
		}
		return cond()
	})
}

// topicRecords counts the records of topic's partitions 0 to n-1 by
// their end offsets (Records lists a compressed batch as one).
func topicRecords(k *fixtures.Kafka, topic string, n int32) int {
	total := 0
	for p := range n {
		total += int(k.EndOffset(topic, p))
	}
	return total
}

// logLines returns n numbered log lines, as an app would log them.
func logLines(n int) string {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "app: order %d shipped\n", i)
	}
	return b.String()
}

// librdkafkaCompression checks that rep holds one finding: NoCompression on
// the topic logs, from a librdkafka app under librdkafka's default client
// id. It returns the finding, whose advice each app's test checks.
func librdkafkaCompression(t *testing.T, rep broker.AuditReport) broker.Finding {
	t.Helper()
	require.Len(t, rep.Findings, 1, "%+v", rep.Findings)
	f := rep.Findings[0]
	assert.Equal(t, "NoCompression", f.Rule)
	assert.Equal(t, "rdkafka", f.ClientID)
	assert.Equal(t, "librdkafka", f.ClientSoftware)
	assert.Equal(t, "logs", f.Topic)
	return f
}
