package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/internal/pages"
)

func TestRunPrintsAddressAndServes(t *testing.T) {
	t.Setenv("VASTFAKE_TOPICS", "env-topic:2")
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-topic", "orders:3", "-log-level", "warn"}, w, io.Discard, stop)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "listening on 127.0.0.1:"), "first line: %q", line)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	require.NoError(t, err)
	assert.Len(t, topics["orders"].Partitions, 3)
	assert.Len(t, topics["env-topic"].Partitions, 2)

	close(stop)
	require.NoError(t, <-done)
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	assert.Error(t, run([]string{"-profile", "zookeeper", "-listen", "127.0.0.1:0"}, io.Discard, io.Discard, nil))
	assert.Error(t, run([]string{"-topic", "x:zero", "-listen", "127.0.0.1:0"}, io.Discard, io.Discard, nil))
}

// TestExitOnStdinClose: with -exit-on-stdin-close (or its environment
// variable) the binary closes, cleanly, once its stdin ends, as it does when
// the launcher holding the other end of the pipe dies. It is off by
// default: a binary started from a shell keeps running without a stdin.
func TestExitOnStdinClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"-exit-on-stdin-close"}, ""},
		{"env", nil, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("VASTFAKE_EXIT_ON_STDIN_CLOSE", tc.env)
			}
			in, inW := io.Pipe()
			stdin = in
			t.Cleanup(func() { stdin = os.Stdin })
			out, w := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(append([]string{"-listen", "127.0.0.1:0", "-log-level", "warn"}, tc.args...), w, io.Discard, nil)
				w.Close()
			}()
			br := bufio.NewReader(out)
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(line, "listening on "), line)
			go io.Copy(io.Discard, br)
			_, err = inW.Write([]byte("anything the launcher writes is ignored\n"))
			require.NoError(t, err)

			require.NoError(t, inW.Close())
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("the binary did not close within 30s of its stdin ending")
			}
		})
	}

	// Off by default.
	cfg, err := parseConfig([]string{"-listen", "127.0.0.1:0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.False(t, cfg.ExitOnStdinClose)
}

// TestHeapReserveDefersCollectionsWithoutResidentMemory: the binary's heap
// reserve raises the garbage collector's first goal past twice its size and
// costs (almost) no resident memory, measured in a fresh process as the
// binary starts; it stays out of the way when the user tunes the collector.
func TestHeapReserveDefersCollectionsWithoutResidentMemory(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "50")
	reserveHeap()
	assert.Nil(t, reserved, "no reserve when GOGC is set")

	t.Setenv("GOGC", "")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "VASTFAKE_TEST_RESERVE=1")
	out, err := cmd.Output()
	require.NoError(t, err)
	if strings.HasPrefix(string(out), "no ") {
		t.Skip("cannot measure resident memory here:", strings.TrimSpace(string(out)))
	}
	var goal, grown int64
	_, err = fmt.Sscan(string(out), &goal, &grown)
	require.NoError(t, err, "child printed %q", out)
	assert.GreaterOrEqual(t, goal, int64(2*heapReserve), "heap goal with the reserve")
	assert.Less(t, grown, int64(heapReserve/8), "resident memory the reserve added")
}

// reserveChild is the test binary started by
// TestHeapReserveDefersCollectionsWithoutResidentMemory: it reserves the
// heap as main does and prints the heap goal and how much its resident
// memory grew, in bytes.
func reserveChild() int {
	before, err := pages.Resident(os.Getpid())
	if err != nil {
		fmt.Println("no /proc/self/statm")
		return 0
	}
	reserveHeap()
	runtime.GC()
	after, _ := pages.Resident(os.Getpid())
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(goal)
	fmt.Println(goal[0].Value.Uint64(), after-before)
	return 0
}
