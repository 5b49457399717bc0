package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/control"
)

// runChild runs the binary with the arguments in VASTFAKE_TEST_CHILD
// (space-separated), holding at most VASTFAKE_TEST_NOFILE file descriptors
// (soft and hard limit), until its standard input closes.
func runChild() int {
	if n, err := strconv.ParseUint(os.Getenv("VASTFAKE_TEST_NOFILE"), 10, 64); err == nil {
		if err := limitFiles(n); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 2
		}
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	if err := run(strings.Fields(os.Getenv("VASTFAKE_TEST_CHILD")), os.Stdout, os.Stderr, stop); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestIdleHTTPConnectionsLeaveKafkaItsDescriptors runs the binary in a
// process allowed 256 file descriptors and holds 600 idle keep-alive
// connections to its control plane (each sent GET /healthz, then nothing).
// The control plane holds at most control.MaxConns of them, the rest wait
// in the kernel's accept queue at no descriptor's cost, so a Kafka client
// still connects and produces. Without the cap the control plane accepted
// until the process ran out of descriptors, and the Kafka client's dial
// timed out.
func TestIdleHTTPConnectionsLeaveKafkaItsDescriptors(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VASTFAKE_TEST_NOFILE=256",
		"VASTFAKE_TEST_CHILD=-listen 127.0.0.1:0 -http 127.0.0.1:0 -topic orders:1 -log-level error")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "the binary exits cleanly")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("the binary did not exit after its stop")
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	kafkaAddr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	httpAddr := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "control plane on http://")), "/")
	go func() { _, _ = io.Copy(io.Discard, out) }()

	answered := make(chan struct{}, 600)
	for range 600 {
		c, err := net.Dial("tcp", httpAddr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		require.NoError(t, err)
		go func() {
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
				answered <- struct{}{}
			}
		}()
	}
	for range control.MaxConns { // the control plane has taken all it will
		select {
		case <-answered:
		case <-time.After(30 * time.Second):
			t.Fatal("the control plane did not answer its first connections")
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic("orders"),
		kgo.DialTimeout(10*time.Second), kgo.RequestRetries(2))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("served")}).FirstErr(),
		"the Kafka listener accepts while 600 HTTP connections wait")
}

// TestHealthcheck: -healthcheck asks the control plane at -http (here from
// VASTFAKE_HTTP, as in the image, on 0.0.0.0) and answers through the
// error run returns: none while the broker serves, an *unhealthyError
// (exit code 1) once it is gone or without -http.
func TestHealthcheck(t *testing.T) {
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-http", "0.0.0.0:0", "-log-level", "warn"}, w, io.Discard, stop)
		w.Close()
	}()
	rd := bufio.NewReader(out)
	_, err := rd.ReadString('\n') // listening on
	require.NoError(t, err)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	u := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "control plane on http://")), "/")
	_, port, err := net.SplitHostPort(u)
	require.NoError(t, err, line)
	go io.Copy(io.Discard, rd)

	t.Setenv("VASTFAKE_HTTP", "0.0.0.0:"+port)
	require.NoError(t, run([]string{"-healthcheck"}, io.Discard, io.Discard, nil))
	close(stop)
	require.NoError(t, <-done)

	var ue *unhealthyError
	assert.ErrorAs(t, run([]string{"-healthcheck"}, io.Discard, io.Discard, nil), &ue, "the broker is gone")
	t.Setenv("VASTFAKE_HTTP", "")
	err = run([]string{"-healthcheck"}, io.Discard, io.Discard, nil)
	assert.ErrorAs(t, err, &ue)
	assert.ErrorContains(t, err, "set -http")
	t.Setenv("VASTFAKE_HEALTHCHECK", "true") // a command, not a setting: ignored
	cfg, err := parseConfig([]string{"-listen", "127.0.0.1:0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.NotNil(t, cfg)
}
