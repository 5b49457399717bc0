package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pythonWithConfluent is Debian's Python, which has the Debian package
// python3-confluent-kafka (confluent-kafka 1.7 on the system librdkafka).
// The python3 on PATH may be another interpreter without it.
const pythonWithConfluent = "/usr/bin/python3"

// TestSeedWalkthrough runs VAST's "Consume events" page (seed 000) as
// written, in Python with confluent-kafka, against the vastfake binary, and
// checks that it prints exactly the output the page shows
// (walkthrough/expected.txt). See walkthrough/walkthrough.py for the one
// change to the page's code (delete_group).
//
// It needs python3-confluent-kafka: without it the test is skipped, or fails
// when CI is set (CI installs the package).
func TestSeedWalkthrough(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	expected, err := os.ReadFile(filepath.Join("walkthrough", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	vastfakeBin := filepath.Join(dir, "vastfake")
	deleteGroupBin := filepath.Join(dir, "deletegroup")
	walkthroughBuild(t, vastfakeBin, "github.com/vastfake/vastfake/cmd/vastfake")
	walkthroughBuild(t, deleteGroupBin, "./cmd/deletegroup")

	addr := walkthroughStartBinary(t, vastfakeBin, "-listen", "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	py := exec.CommandContext(ctx, pythonWithConfluent, "walkthrough.py")
	py.Dir = "walkthrough"
	py.Env = append(walkthroughEnv(),
		"KAFKA_BOOTSTRAP="+addr,
		"VASTFAKE_DELETEGROUP="+deleteGroupBin,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	var stdout, stderr bytes.Buffer
	py.Stdout, py.Stderr = &stdout, &stderr
	py.WaitDelay = 10 * time.Second
	start := time.Now()
	err = py.Run()
	t.Logf("walkthrough.py ran for %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("walkthrough.py: %v (context: %v)\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), stdout.String(), walkthroughTail(stderr.String(), 40))
	}
	if got := stdout.String(); got != string(expected) {
		t.Fatalf("walkthrough.py printed\n%s\nthe page shows\n%s\nstderr:\n%s", got, expected, walkthroughTail(stderr.String(), 40))
	}
	// librdkafka logs a response it cannot parse as PROTOERR and carries
	// on, so the output can match while the broker sends bad responses (a
	// null record set in Fetch did exactly that).
	if strings.Contains(stderr.String(), "|PROTOERR|") {
		t.Errorf("librdkafka reported protocol errors:\n%s", walkthroughTail(stderr.String(), 20))
	} else if stderr.Len() > 0 {
		t.Logf("walkthrough.py stderr:\n%s", walkthroughTail(stderr.String(), 20))
	}
}

// needConfluentPython skips the test when /usr/bin/python3 cannot import
// confluent_kafka, or fails it when CI is set (CI installs the package).
func needConfluentPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(pythonWithConfluent, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		msg := t.Name() + " needs " + pythonWithConfluent + " with confluent_kafka " +
			"(apt-get install -y python3-confluent-kafka): " + err.Error() + ": " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// walkthroughBuild builds the Go package pkg (an import path or a path
// relative to this module) into out.
func walkthroughBuild(t *testing.T, out, pkg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// walkthroughStartBinary starts the vastfake binary with args and returns
// the address from its first stdout line ("listening on host:port"). The
// binary gets SIGTERM when the test ends, and the cleanup waits for it to
// exit; its stderr is logged if the test failed.
func walkthroughStartBinary(t *testing.T, bin string, args ...string) string {
	t.Helper()
	return walkthroughStartBinaryLines(t, bin, 1, args...)[0]
}

// walkthroughStartBinaryLines is walkthroughStartBinary returning the first
// n stdout lines, the first being the address (with -http the second is
// "control plane on http://host:port/").
func walkthroughStartBinaryLines(t *testing.T, bin string, n int, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = walkthroughEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, n)
	go func() {
		sc := bufio.NewScanner(stdout)
		for i := 0; i < n && sc.Scan(); i++ {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() { // keep draining so the binary never blocks on stdout
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("SIGTERM vastfake: %v", err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("vastfake exited: %v", err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("vastfake did not exit within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("vastfake stderr:\n%s", walkthroughTail(stderr.String(), 40))
		}
	})

	var out []string
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("vastfake printed %q and closed stdout, want %d lines", out, n)
			}
			out = append(out, line)
		case <-timeout:
			t.Fatalf("vastfake printed %q within 30s, want %d lines", out, n)
		}
	}
	addr, found := strings.CutPrefix(out[0], "listening on ")
	if !found || addr == "" {
		t.Fatalf("vastfake's first stdout line is %q, want \"listening on host:port\"", out[0])
	}
	out[0] = addr
	return out
}

// walkthroughEnv is the test's environment without the variables that would
// point the walkthrough or the broker elsewhere (credentials the broker was
// not started with, another bootstrap, a profile).
func walkthroughEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KAFKA_") || strings.HasPrefix(name, "VASTFAKE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// walkthroughTail returns the last n lines of s.
func walkthroughTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
