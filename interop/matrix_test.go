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
// rebalance onto a second member, and a VAST refusal, each checked by the
// script's output (matrix/expected.txt). Like TestSeedWalkthrough it needs
// python3-confluent-kafka: skipped without it, failed when CI is set.
func TestPythonClientMatrix(t *testing.T) {
	needConfluentPython(t)
	expected, err := os.ReadFile(filepath.Join("matrix", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "vastfake")
	walkthroughBuild(t, bin, "github.com/vastfake/vastfake/cmd/vastfake")
	lines := walkthroughStartBinaryLines(t, bin, 2, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0")
	httpURL, ok := strings.CutPrefix(lines[1], "control plane on ")
	if !ok {
		t.Fatalf("vastfake's second stdout line is %q, want \"control plane on http://host:port/\"", lines[1])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	py := exec.CommandContext(ctx, pythonWithConfluent, "matrix.py")
	py.Dir = "matrix"
	py.Env = append(walkthroughEnv(), "KAFKA_BOOTSTRAP="+lines[0], "VASTFAKE_HTTP="+httpURL, "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	py.Stdout, py.Stderr = &stdout, &stderr
	py.WaitDelay = 10 * time.Second
	if err := py.Run(); err != nil {
		t.Fatalf("matrix.py: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), stdout.String(), walkthroughTail(stderr.String(), 40))
	}
	if got := stdout.String(); got != string(expected) {
		t.Fatalf("matrix.py printed\n%s\nwant\n%s\nstderr:\n%s", got, expected, walkthroughTail(stderr.String(), 40))
	}
	if strings.Contains(stderr.String(), "|PROTOERR|") {
		t.Errorf("librdkafka reported protocol errors:\n%s", walkthroughTail(stderr.String(), 20))
	}
}
