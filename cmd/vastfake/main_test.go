package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
	assert.Error(t, run([]string{"-profile", "zookeeper", "-listen", "127.0.0.1:0"}, io.Discard, io.Discard, nil))
	assert.Error(t, run([]string{"-topic", "x:zero", "-listen", "127.0.0.1:0"}, io.Discard, io.Discard, nil))
}
