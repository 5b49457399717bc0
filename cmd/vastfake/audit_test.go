package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/rules"
)

// ordersApp is a small Kafka app as teams write it before they think of
// VAST: kgo at its defaults, an order producer and a billing consumer group
// that reads every order and commits. It runs unchanged against any
// broker.
func ordersApp(t *testing.T, addr string, orders int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("orders-service"))
	require.NoError(t, err)
	defer producer.Close()
	for i := range orders {
		order := fmt.Sprintf(`{"order": %d, "items": %q}`, i, strings.Repeat("widget,", 40))
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprint(i)), Value: []byte(order)}).FirstErr())
	}
	billing, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("billing-service"),
		kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	require.NoError(t, err)
	defer billing.Close()
	for seen := 0; seen < orders; {
		fetches := billing.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "billed %d of %d orders", seen, orders)
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		seen += fetches.NumRecords()
	}
	require.NoError(t, billing.CommitUncommittedOffsets(ctx))
}

// TestAuditReportAtExit runs the binary with -profile audit and
// -audit-report, points ordersApp at it unchanged, stops the binary, and
// reads the report: on stdout, in report.md and in report.json. docs/audit.md's
// "Will my app run on VAST?" quotes this report.
func TestAuditReportAtExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-profile", "audit", "-topic", "orders:3",
			"-audit-report", filepath.Join(dir, "report"), "-log-level", "warn"}, w, io.Discard, stop)
		w.Close()
	}()
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	ordersApp(t, addr, 10)

	close(stop)
	stdout, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.NoError(t, <-done)

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Equal(t, "\n"+string(md), string(stdout), "stdout carries the same report")
	var report broker.AuditReport
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &report))
	var got []string
	for _, f := range report.Findings {
		got = append(got, f.Rule+" "+f.Kind+" "+f.ClientID+" "+f.Topic+f.Group)
		assert.Equal(t, "kgo", f.ClientSoftware)
	}
	assert.Equal(t, []string{
		"EagerAssignorsOnly refused billing-service billing",
		"NoCompression refused orders-service orders",
		"NoIdempotence refused orders-service ",
		"NoIdempotence refused orders-service orders",
	}, got)
	assert.Contains(t, string(md), "| refused | NoCompression | kgo ")
	assert.Contains(t, string(md), "kgo.Balancers(kgo.RangeBalancer())")

	checkReadmeExcerpt(t, string(md))
}

// readmeBlock is the report excerpt in the docs (README.md or a page of
// docs/), between these markers.
var readmeBlock = regexp.MustCompile("(?s)<!-- audit-report begin -->\n(.*?)<!-- audit-report end -->")

// checkReadmeExcerpt keeps the docs' report excerpt what the binary
// prints: every table row of the excerpt must be a row of md, counts aside
// (they depend on how the client batched). VASTFAKE_UPDATE_README=1
// rewrites it, in whichever file holds it.
func checkReadmeExcerpt(t *testing.T, md string) {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	found := 0
	for _, path := range append([]string{"../../README.md"}, pages...) {
		doc, err := os.ReadFile(path)
		require.NoError(t, err)
		m := readmeBlock.FindSubmatchIndex(doc)
		if m == nil {
			continue
		}
		found++
		if os.Getenv("VASTFAKE_UPDATE_README") != "" {
			updated := string(doc[:m[2]]) + "```markdown\n" + md + "```\n" + string(doc[m[3]:])
			require.NoError(t, os.WriteFile(path, []byte(updated), 0o644))
			continue
		}
		count := regexp.MustCompile(`\| \d+ \|`)
		rows := map[string]bool{}
		for _, l := range strings.Split(md, "\n") {
			rows[count.ReplaceAllString(l, "| N |")] = true
		}
		excerpt := string(doc[m[2]:m[3]])
		n := 0
		for _, l := range strings.Split(excerpt, "\n") {
			if !strings.HasPrefix(l, "| refused") && !strings.HasPrefix(l, "| differs") {
				continue
			}
			n++
			assert.True(t, rows[count.ReplaceAllString(l, "| N |")], "%s: the report row is not what the binary prints (VASTFAKE_UPDATE_README=1 rewrites it):\n%s", path, l)
		}
		assert.Positive(t, n, "%s: the excerpt has no finding rows", path)
	}
	assert.Positive(t, found, "no <!-- audit-report begin --> block in README.md or docs/")
}

// TestRuleModes: -rule Name=audit audits one rule of any profile,
// =enforce enforces it, =off lifts it; a plain value keeps the mode.
func TestRuleModes(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{"-profile", "kafka", "-rule", "NoCompression=audit", "-rule", "MaxGroups=audit"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, rules.Audit, cfg.Rules.Mode(rules.NoCompression))
	assert.Equal(t, rules.Audit, cfg.Rules.Mode(rules.MaxGroups))
	assert.Equal(t, 256, cfg.Rules.MaxGroups, "audited at VAST's value")
	assert.Equal(t, rules.Off, cfg.Rules.Mode(rules.NoIdempotence))

	cfg, err = parseConfig([]string{"-profile", "audit", "-rule", "noidempotence=enforce", "-rule", "MaxGroups=10", "-rule", "NoCompression=off"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, rules.Enforce, cfg.Rules.Mode(rules.NoIdempotence))
	assert.Equal(t, rules.Audit, cfg.Rules.Mode(rules.MaxGroups))
	assert.Equal(t, 10, cfg.Rules.MaxGroups)
	assert.Equal(t, rules.Off, cfg.Rules.Mode(rules.NoCompression))
	assert.Equal(t, rules.Audit, cfg.Rules.Mode(rules.StaleEndOffset))

	cfg, err = parseConfig([]string{"-rule", "NoCompression=false"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, rules.Off, cfg.Rules.Mode(rules.NoCompression), "the old syntax still works")
	assert.Equal(t, rules.Enforce, cfg.Rules.Mode(rules.NoIdempotence))
}

// TestAuditReportFileNames: a name ending in .md or .json writes that one
// file only.
func TestAuditReportFileNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"audit.md", "audit.json"} {
		dir := t.TempDir()
		stop := make(chan struct{})
		close(stop)
		require.NoError(t, run([]string{"-listen", "127.0.0.1:0", "-profile", "audit", "-audit-report", filepath.Join(dir, name), "-log-level", "warn"}, io.Discard, io.Discard, stop))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		assert.Equal(t, name, entries[0].Name())
	}
}

// TestAuditReportIsNoFalseAllClear: -audit-report with the VAST profile,
// where rules refuse rather than audit, writes a report that says no rule
// was audited and lists what the enforced rules refused, in Markdown and
// JSON, never "No findings".
func TestAuditReportIsNoFalseAllClear(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-topic", "orders:1",
			"-audit-report", filepath.Join(dir, "report"), "-log-level", "error"}, w, io.Discard, stop)
		w.Close()
	}()
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	// A gzip batch: the VAST profile refuses compression.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.GzipCompression()))
	require.NoError(t, err)
	require.Error(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(strings.Repeat("order,", 200))}).FirstErr())
	cl.Close()

	close(stop)
	_, err = io.ReadAll(rd)
	require.NoError(t, err)
	require.NoError(t, <-done)

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "No findings")
	assert.Contains(t, string(md), "No rule was audited")
	assert.Contains(t, string(md), "| NoCompression | ")
	var report broker.AuditReport
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &report))
	assert.Empty(t, report.Audited)
	assert.Contains(t, report.Enforced, "NoCompression")
	require.NotEmpty(t, report.Refusals)
	assert.Equal(t, "NoCompression", report.Refusals[0].Rule)
	assert.Positive(t, report.Refusals[0].Count)
}

// TestAuditReportDirectoryCheckedAtStart: a report path in a directory
// that does not exist stops the binary at start, before it serves.
func TestAuditReportDirectoryCheckedAtStart(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-dir", "report")
	stop := make(chan struct{})
	var stdout strings.Builder
	err := run([]string{"-listen", "127.0.0.1:0", "-profile", "audit", "-audit-report", missing}, &stdout, io.Discard, stop)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist")
	assert.NotContains(t, stdout.String(), "listening on", "the broker never served")
}
