package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/fixtures"
)

// Start-up values, as a class: every flag of the binary's flag set, given
// from each of its sources (the command line, its environment variables,
// the config file), with the hostile values of its kind (huge, negative,
// wrapping, /dev/zero, 120 KiB) and those of its own syntax. Each must stop
// the start (exit 2) with one short line naming the flag, its variable and
// what is wanted, having allocated little: a value is never echoed whole, a
// file never read past its bound, and nothing sized by the value is made.

const (
	hostileBytes    = 120 << 10 // a 120 KiB value, under Linux's 128 KiB for one variable
	maxStartLine    = 600       // bytes of the line main prints
	maxStartAlloc   = 24 << 20  // bytes allocated while refusing one value
	startRefuseWait = 20 * time.Second
)

// hostileByKind gives every kind of value its hostile values.
var hostileByKind = map[kind][]string{
	kindText:     {strings.Repeat("a", hostileBytes)},
	kindInt:      {"99999999999999999999", "-1", "4294967297", "-4294967295", strings.Repeat("9", hostileBytes), "many"},
	kindDuration: {"-1s", "1ns", "999us", "99999999999999h", strings.Repeat("9", hostileBytes) + "s", "soon"},
	kindBool:     {"maybe", strings.Repeat("t", hostileBytes)},
	kindAddress:  {strings.Repeat("a", hostileBytes) + ":1", "localhost:99999", "localhost:-1", "localhost:4294967297", "no-port"},
	kindFile:     {"/dev/zero", strings.Repeat("a", hostileBytes)},
}

// hostileOf gives settings the hostile values of their own syntax, beyond
// those of their kind; every repeatable flag has its own here.
var hostileOf = map[string][]string{
	"advertise":      {"localhost:0", ":9092", "a:1,b:2", "localhost:65536"},
	"num-partitions": {"10001", "2147483647"},
	"brokers":        {"17", "0"},
	"profile":        {"zookeeper"},
	"log-level":      {"loud"},
	"log-format":     {"xml"},
	"topic": {"t:4294967297", "t:2147483647", "t:10001", "t:-1", "t:99999999999999999999", "t:0",
		"a:6000,b:6000", ":3", strings.Repeat("t", hostileBytes)},
	"offset-gap": {"t:99999999999999999999", "t:-1", "t:1:0", "t", strings.Repeat("t", hostileBytes)},
	"rule": {"MaxGroups=4294967297", "MaxGroups=-1", "OffsetsRetention=1ns", "StaleEndOffset=-1s", "NoSuchRule=1",
		"MaxGroups", strings.Repeat("r", hostileBytes)},
	"user":                        {":p", "u", strings.Repeat("u", hostileBytes) + ":p"},
	"policy":                      {"allow u KafkaRead", "permit u KafkaRead vast:kafka:topic:v:t", "allow u " + strings.Repeat("A", hostileBytes) + " vast:kafka:topic:v:t"},
	"consumer-heartbeat-interval": {"1h"},
	"min-session-timeout":         {"2h"},
}

// companions are set beside a flag's hostile value so that it is hostile:
// VAST allows 20,000 partitions a topic, Kafka's request 10,000. (-tls-cert
// and -tls-key each get a good file for the other, so that theirs is read.)
var companions = map[string][2]string{
	"topic": {"profile", "kafka"},
}

// startCase is one hostile value of one flag from one source.
type startCase struct {
	flag, value, source string
}

// hostileCases lists every case, failing the test for a flag that has no
// hostile value: a new flag's kind must say what is hostile for it.
func hostileCases(t *testing.T) []startCase {
	var cases []startCase
	newFlagSet().VisitAll(func(f *flag.Flag) {
		if commands[f.Name] {
			return
		}
		var values []string
		sources := []string{"command line", "config file"}
		switch v := f.Value.(type) {
		case *value:
			values = append(values, hostileByKind[v.kind]...)
			sources = append(sources, envName(f.Name))
		case *listFlag:
			l := listNames[f.Name]
			sources = append(sources, l[0], l[1])
		default:
			t.Errorf("-%s is neither a *value nor a *listFlag: its values are not checked as the others are", f.Name)
		}
		values = append(values, hostileOf[f.Name]...)
		if !assert.NotEmpty(t, values, "-%s: give its kind, or hostileOf, the values that are hostile to it", f.Name) {
			return
		}
		for _, v := range values {
			for _, s := range sources {
				if f.Name == "config" && s == "config file" {
					continue // a config file names no other
				}
				cases = append(cases, startCase{f.Name, v, s})
			}
		}
	})
	return cases
}

// argsFor sets up c: its environment (t.Setenv) or config file, and
// returns the command line.
func argsFor(t *testing.T, c startCase) []string {
	var args []string
	if c.flag != "listen" {
		args = append(args, "-listen", "127.0.0.1:0")
	}
	if c.flag != "log-level" {
		args = append(args, "-log-level", "error")
	}
	set := map[string]string{c.flag: c.value}
	if comp, ok := companions[c.flag]; ok {
		set[comp[0]] = comp[1]
	}
	if c.flag == "tls-cert" || c.flag == "tls-key" {
		// The other of the pair is a good file, so that this one is read.
		dir := t.TempDir()
		cert, key, err := fixtures.SelfSignedCert()
		require.NoError(t, err)
		files := map[string][]byte{"tls-cert": cert, "tls-key": key}
		for name, data := range files {
			if name != c.flag {
				path := filepath.Join(dir, name+".pem")
				require.NoError(t, os.WriteFile(path, data, 0o600))
				set[name] = path
			}
		}
	}
	switch c.source {
	case "command line":
		for k, v := range set {
			args = append(args, "-"+k+"="+v)
		}
	case "config file":
		path := filepath.Join(t.TempDir(), "vastfake.json")
		data, err := json.Marshal(set)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		args = append(args, "-config", path)
	default:
		for k, v := range set {
			name := envName(k)
			if k == c.flag {
				name = c.source
			}
			t.Setenv(name, v)
		}
	}
	return args
}

func TestEveryStartValueIsBounded(t *testing.T) {
	for _, c := range hostileCases(t) {
		name := fmt.Sprintf("%s/%s/%s", c.flag, c.source, clip(c.value))
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			args := argsFor(t, c)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- run(args, io.Discard, io.Discard, stop) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(startRefuseWait):
				close(stop)
				err = <-done
				t.Fatalf("-%s %s from %s: the broker started (and ran %v) instead of refusing it", c.flag, clip(c.value), c.source, startRefuseWait)
			}
			runtime.ReadMemStats(&after)
			require.Error(t, err, "-%s %s from %s is refused", c.flag, clip(c.value), c.source)
			var ue *unhealthyError
			var fe *flagError
			assert.False(t, errors.As(err, &ue), "exit 1 is -healthcheck's")
			assert.False(t, errors.As(err, &fe), "the flag package has no say on a value")
			line := errorLine(err)
			assert.LessOrEqual(t, len(line), maxStartLine, "a short line: %s", line)
			assert.Contains(t, line, "-"+c.flag, "names the flag")
			env := envName(c.flag)
			if l, ok := listNames[c.flag]; ok {
				env = l[0]
			}
			assert.Contains(t, line, env, "names the variable")
			assert.Contains(t, line, "want", "says what is wanted")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(maxStartAlloc), "allocated while refusing it")
		})
	}
}

// TestStartErrorsExitTwo runs the binary, as its main does, with one
// hostile value of each kind, and checks what a user sees: exit code 2 and
// one short line naming the setting on stderr, and (on Linux) a process
// that stayed small.
func TestStartErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{
		{"VASTFAKE_TOPICS=t:4294967297"},
		{"VASTFAKE_TOPIC=t:2147483647", "VASTFAKE_PROFILE=kafka"},
		{"VASTFAKE_NUM_PARTITIONS=2147483647", "VASTFAKE_PROFILE=kafka"},
		{"VASTFAKE_CONFIG=/dev/zero"},
		{"VASTFAKE_RETENTION_CHECK_INTERVAL=1ns"},
		{"VASTFAKE_ADVERTISE=localhost:0"},
		{"VASTFAKE_VIEW=" + strings.Repeat("v", hostileBytes)},
		{"VASTFAKE_BROKERS=abc"},
	} {
		name, _, _ := strings.Cut(env[0], "=")
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), startRefuseWait)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(append(os.Environ(), "VASTFAKE_TEST_MAIN=-listen 127.0.0.1:0"), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
			assert.Equal(t, 2, ee.ExitCode())
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			require.Len(t, lines, 1, "one line: %q", stderr.String())
			assert.LessOrEqual(t, len(lines[0]), maxStartLine)
			assert.Contains(t, lines[0], name)
			assert.Contains(t, lines[0], "want")
			peak, ok := strings.CutPrefix(strings.TrimSpace(stdout.String()), "peak ")
			if runtime.GOOS == "linux" {
				require.True(t, ok, "the child tells its peak resident memory: %q", stdout.String())
			}
			if ok {
				n, err := strconv.ParseInt(peak, 10, 64)
				require.NoError(t, err, stdout.String())
				t.Logf("peak resident memory %d MiB", n>>20)
				assert.Less(t, n, int64(100<<20), "the process's peak resident memory")
			}
		})
	}
}

// mainChild is the test binary started with VASTFAKE_TEST_MAIN: the
// binary's main, with the arguments in that variable (space-separated),
// printing on stdout, where /proc tells it, its peak resident memory
// ("peak <bytes>") before it exits.
func mainChild() {
	reserveHeap()
	code := exitCode(run(strings.Fields(os.Getenv("VASTFAKE_TEST_MAIN")), os.Stdout, os.Stderr, nil), os.Stderr)
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64); err == nil {
					fmt.Printf("peak %d\n", n<<10)
				}
			}
		}
	}
	os.Exit(code)
}
