package interop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPythonClientMatrix runs the client-matrix scenario with the Confluent
// Python client (matrix/matrix.py) against the vastfake binary started with
// its HTTP control plane: produce, consume in a group and commit, a
// rebalance onto a second member, a VAST refusal, and a compacted topic
// read across an offset gap and a compaction, each checked by the script's
// output (matrix/expected.txt). Like TestSeedWalkthrough it needs
// python3-confluent-kafka: skipped without it, failed when CI is set.
func TestPythonClientMatrix(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	_, stderr := runScript(t, buildVastfake(t), "matrix", "expected.txt", pythonWithConfluent, "matrix.py")
	if strings.Contains(stderr, "|PROTOERR|") {
		t.Errorf("librdkafka reported protocol errors:\n%s", walkthroughTail(stderr, 20))
	}
}

// TestKafkaJSMatrix runs the client-matrix scenario with kafkajs
// (kafkajs/matrix.js, npm kafkajs 2.2.4 on Node.js) against the vastfake
// binary started with its HTTP control plane, once per profile: create a
// topic with the admin client, produce, consume in a group and commit,
// rebalance onto a second member (kafkajs's assignor is named
// RoundRobinAssigner), delete the group and the topic, the VAST refusals
// as kafkajs reports them, and a compacted topic read across an offset gap
// and a compaction (driven through the control plane), with a keyless
// record refused. The script's output must equal
// kafkajs/expected.txt (VAST profile) or kafkajs/expected-kafka.txt.
//
// It needs node on PATH and kafkajs/node_modules (npm ci in interop/kafkajs):
// without them the test is skipped, or fails when CI is set (.ci/run
// installs them).
func TestKafkaJSMatrix(t *testing.T) {
	t.Parallel()
	node := needKafkaJS(t)
	bin := buildVastfake(t)
	for _, tc := range []struct{ profile, expected string }{
		{"vast", "expected.txt"},
		{"kafka", "expected-kafka.txt"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			// matrix.js stops itself after 90 s; runScript's context is the backstop.
			stdout, _ := runScript(t, bin, "kafkajs", tc.expected, node, "matrix.js", "-profile", tc.profile)
			if tc.profile == "vast" {
				checkKafkaJSQuotes(t, stdout)
			}
		})
	}
}

// buildVastfake builds the vastfake binary into the test's temporary
// directory and returns its path.
func buildVastfake(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vastfake")
	walkthroughBuild(t, bin, "github.com/vastfake/vastfake/cmd/vastfake")
	return bin
}

// runScript runs a client script in dir against the binary bin started
// with args (plus a listener and control plane on free ports, named to the
// script by KAFKA_BOOTSTRAP and VASTFAKE_HTTP), within two minutes, and
// compares its stdout with dir's file expectedFile. It returns what the
// script wrote, for more checks.
func runScript(t *testing.T, bin, dir, expectedFile, interpreter, script string, args ...string) (stdout, stderr string) {
	t.Helper()
	expected, err := os.ReadFile(filepath.Join(dir, expectedFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := walkthroughStartBinaryLines(t, bin, 2, append([]string{"-listen", "127.0.0.1:0", "-http", "127.0.0.1:0"}, args...)...)
	httpURL, ok := strings.CutPrefix(lines[1], "control plane on ")
	if !ok {
		t.Fatalf("vastfake's second stdout line is %q, want \"control plane on http://host:port/\"", lines[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, script)
	cmd.Dir = dir
	cmd.Env = append(walkthroughEnv(), "KAFKA_BOOTSTRAP="+lines[0], "VASTFAKE_HTTP="+httpURL, "PYTHONDONTWRITEBYTECODE=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", script, err, ctx.Err(), out.String(), walkthroughTail(errOut.String(), 40))
	}
	if got := out.String(); got != string(expected) {
		t.Fatalf("%s printed\n%s\nwant\n%s\nstderr:\n%s", script, got, expected, walkthroughTail(errOut.String(), 40))
	}
	return out.String(), errOut.String()
}

// needKafkaJS returns the path of node when it is on PATH and
// kafkajs/node_modules has kafkajs; otherwise it skips the test, or fails it
// when CI is set (.ci/run runs npm ci).
func needKafkaJS(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("kafkajs", "node_modules", "kafkajs", "package.json"))
	}
	if err != nil {
		msg := t.Name() + " needs node on PATH and kafkajs installed (cd interop/kafkajs && npm ci): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}
