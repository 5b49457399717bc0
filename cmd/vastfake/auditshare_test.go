package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
)

// jobsQueueApp is a queue app written for Kafka 4.2: it sets its share
// group's share.auto.offset.reset to earliest, produces jobs, and a kgo
// share consumer (kgo.ShareGroup) accepts each one. It runs unchanged
// against any broker that serves share groups.
func jobsQueueApp(t *testing.T, addr string, jobs int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("jobs-service"))
	require.NoError(t, err)
	defer producer.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "workers"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, producer)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	for i := range jobs {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Value: []byte(fmt.Sprintf("job %d", i))}).FirstErr())
	}
	worker, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("worker"), kgo.ShareGroup("workers"), kgo.ConsumeTopics("jobs"))
	require.NoError(t, err)
	defer worker.Close()
	for done := 0; done < jobs; {
		fetches := worker.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "processed %d of %d jobs", done, jobs)
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("share fetch %s/%d: %v", topic, p, err) })
		for _, r := range fetches.Records() {
			r.Ack(kgo.AckAccept)
			done++
		}
	}
	require.NoError(t, worker.FlushAcks(ctx))
}

// TestAuditReportOfAShareConsumer runs the binary with -profile audit and
// -audit-report, points jobsQueueApp at it unchanged (its share consumer
// is served as on Kafka 4.2, so every job is processed), stops the binary,
// and reads the report: the share group's requests are findings of rule
// NoShareGroups, advised in kgo's terms.
func TestAuditReportOfAShareConsumer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-profile", "audit", "-topic", "jobs:3",
			"-audit-report", filepath.Join(dir, "report"), "-log-level", "warn"}, w, io.Discard, stop)
		w.Close()
	}()
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	jobsQueueApp(t, addr, 20)

	close(stop)
	_, err = io.ReadAll(rd)
	require.NoError(t, err)
	require.NoError(t, <-done)

	var report broker.AuditReport
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &report))
	apis := map[string]bool{}
	for _, f := range report.Findings {
		if f.Rule != "NoShareGroups" {
			continue
		}
		apis[f.API] = true
		assert.Equal(t, "workers", f.Group)
		assert.Equal(t, "kgo", f.ClientSoftware)
		assert.Contains(t, f.Advice, "replace kgo.ShareGroup(...) with kgo.ConsumerGroup(...)")
	}
	for _, api := range []string{"IncrementalAlterConfigs", "ShareGroupHeartbeat", "ShareFetch"} {
		assert.True(t, apis[api], "the report has a NoShareGroups finding for %s: %v", api, apis)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| refused | NoShareGroups | kgo ")
}
