package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/internal/testutil"
	"github.com/vastfake/vastfake/rules"
)

func TestParseTopicSpecs(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{
		"-topic", "orders:3:retention.ms=60000,message.timestamp.type=LogAppendTime,audit",
		"-topic", "events:6",
	}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []broker.TopicSpec{
		{Name: "orders", Partitions: 3, Configs: map[string]string{"retention.ms": "60000", "message.timestamp.type": "LogAppendTime"}},
		{Name: "audit", Partitions: 1},
		{Name: "events", Partitions: 6},
	}, cfg.Topics)

	for _, bad := range []string{"x:zero", ":3", "x:1:novalue"} {
		_, err := parseConfig([]string{"-topic", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}
}

func TestParseRuleSwitches(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{
		"-profile", "vast",
		"-rule", "NoCompression=false,MaxGroups=10",
		"-rule", "cooperativeassignors=cooperative-sticky,stream",
		"-rule", "OffsetsRetention=1h",
		"-stale-end-offset", "30s",
	}, io.Discard, io.Discard)
	require.NoError(t, err)
	want := rules.VAST()
	want.NoCompression = false
	want.MaxGroups = 10
	want.CooperativeAssignors = []string{"cooperative-sticky", "stream"}
	want.OffsetsRetention = time.Hour
	want.StaleEndOffset = 30 * time.Second
	assert.Equal(t, want, cfg.Rules)

	for _, bad := range []string{"NoSuchRule=true", "MaxGroups=many", "NoCompression", "OffsetsRetention=7",
		"MaxGroups=-5", "MaxValueBytes=-1", "OffsetsRetention=-1h"} {
		_, err := parseConfig([]string{"-rule", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}
}

// TestConfigPrecedence checks flag > file > environment > default for
// single values, and environment, file, flags in that order for lists.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vastfake.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"profile": "kafka",
		"log-level": "debug",
		"initial-rebalance-delay": "3s",
		"min-session-timeout": "1s",
		"manual-clock": true,
		"topic": ["from-file:2:retention.ms=1000"],
		"rule": {"MaxGroups": 5, "NoCompression": true}
	}`), 0o644))
	t.Setenv("VASTFAKE_LOG_LEVEL", "warn")
	t.Setenv("VASTFAKE_LISTEN", "127.0.0.1:0")
	t.Setenv("VASTFAKE_TOPICS", "from-env:1")
	t.Setenv("VASTFAKE_RULES", "MaxGroups=1")
	t.Setenv("VASTFAKE_CONFIG", file)

	cfg, err := parseConfig([]string{"-log-level", "error", "-rule", "MaxGroups=7"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "error", cfg.LogLevel, "flag beats file and env")
	assert.Equal(t, "kafka", cfg.Profile, "file beats default")
	assert.Equal(t, "127.0.0.1:0", cfg.Listen, "env beats default")
	assert.Equal(t, 3*time.Second, cfg.InitialRebalanceDelay)
	assert.Equal(t, time.Second, cfg.MinSessionTimeout, "file beats default")
	assert.Equal(t, 30*time.Minute, cfg.MaxSessionTimeout, "Kafka's group.max.session.timeout.ms by default")
	assert.True(t, cfg.ManualClock)
	assert.Equal(t, 7, cfg.Rules.MaxGroups, "the flag's rule applies last")
	assert.True(t, cfg.Rules.NoCompression, "the file's rule applies on the kafka profile")
	require.Len(t, cfg.Topics, 2)
	assert.Equal(t, "from-env", cfg.Topics[0].Name)
	assert.Equal(t, "from-file", cfg.Topics[1].Name)

	require.NoError(t, os.WriteFile(file, []byte(`{"no-such-flag": 1}`), 0o644))
	_, err = parseConfig(nil, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "no-such-flag")
}

// TestConfigFileTypes checks that a config file value of the wrong JSON
// type is refused with the key in the message, not turned into a string.
func TestConfigFileTypes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "vastfake.json")
	parse := func(content string) (*config, error) {
		require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
		return parseConfig([]string{"-config", file}, io.Discard, io.Discard)
	}
	for content, key := range map[string]string{
		`{"topic": 5}`:                            "topic",
		`{"topic": [5]}`:                          "topic",
		`{"topic": {"orders": 3}}`:                "topic",
		`{"listen": 9092}`:                        "listen",
		`{"profile": null}`:                       "profile",
		`{"manual-clock": "yes"}`:                 "manual-clock",
		`{"manual-clock": 1}`:                     "manual-clock",
		`{"initial-rebalance-delay": 3}`:          "initial-rebalance-delay",
		`{"rule": 5}`:                             "rule",
		`{"rule": {"MaxGroups": {"n": 1}}}`:       "rule",
		`{"rule": {"CooperativeAssignors": [1]}}`: "rule",
		`{"rule": {"MaxGroups": -5}}`:             "MaxGroups",
		`{"profile": "kafka", "profile": "vast"}`: "profile",
		`{"version": true}`:                       "version",
		`["profile"]`:                             "JSON object",
		`{"profile": "kafka"} {}`:                 "after",
	} {
		_, err := parse(content)
		if assert.Error(t, err, content) {
			assert.Contains(t, err.Error(), key, content)
		}
	}

	cfg, err := parse(`{"topic": "a:1,b:2", "rule": {"CooperativeAssignors": ["cooperative-sticky", "mine"], "MaxGroups": 3, "NoCompression": false},
		"manual-clock": false, "initial-rebalance-delay": "2s"}`)
	require.NoError(t, err)
	assert.Len(t, cfg.Topics, 2)
	assert.Equal(t, []string{"cooperative-sticky", "mine"}, cfg.Rules.CooperativeAssignors)
	assert.Equal(t, 3, cfg.Rules.MaxGroups)
	assert.False(t, cfg.Rules.NoCompression)
	assert.Equal(t, 2*time.Second, cfg.InitialRebalanceDelay)
}

// TestHelpVersionAndErrors checks the binary's answers to -h and -version
// (stdout, no error, so main exits 0) and to mistakes: a flag error is
// printed once by the flag package, and an error that already says
// "vastfake:" gets no second prefix.
func TestHelpVersionAndErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-h"}, &out, &errOut, nil))
	assert.Contains(t, out.String(), "Usage: vastfake")
	assert.Contains(t, out.String(), "-listen")
	assert.Empty(t, errOut.String())

	t.Setenv("VASTFAKE_VERSION", "true") // not a setting: ignored
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.NotNil(t, cfg)

	out.Reset()
	require.NoError(t, run([]string{"-version"}, &out, &errOut, nil))
	assert.Regexp(t, `^vastfake \S+( revision \S+)? go\S+\n$`, out.String())
	assert.Contains(t, out.String(), runtime.Version())

	out.Reset()
	err = run([]string{"-no-such-flag"}, &out, &errOut, nil)
	var fe *flagError
	require.ErrorAs(t, err, &fe, "main prints nothing more")
	assert.Equal(t, 1, strings.Count(errOut.String(), "flag provided but not defined: -no-such-flag"))
	assert.Contains(t, errOut.String(), "Usage: vastfake")
	assert.Empty(t, out.String())

	err = run([]string{"-listen", "127.0.0.1:0", "-log-level", "error", "-topic", "a:1:retention.ms=soon"}, io.Discard, io.Discard, nil)
	require.Error(t, err)
	line := errorLine(err)
	assert.True(t, strings.HasPrefix(line, "vastfake: "), line)
	assert.Equal(t, 1, strings.Count(line, "vastfake:"), line)
	assert.Equal(t, "vastfake: -http: oops", errorLine(errors.New("-http: oops")))
}

// startRun runs the binary's run with args and returns its first n stdout
// lines, the first being the bootstrap address without "listening on "; the
// test's cleanup stops it and checks it exited cleanly.
func startRun(t *testing.T, stderr io.Writer, n int, args ...string) []string {
	t.Helper()
	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run(args, w, stderr, stop)
		w.Close()
	}()
	t.Cleanup(func() {
		close(stop)
		assert.NoError(t, <-done)
	})
	br := bufio.NewReader(out)
	var lines []string
	for range n {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		lines = append(lines, strings.TrimSpace(line))
	}
	go io.Copy(io.Discard, br) // ends when run returns and closes w
	addr, ok := strings.CutPrefix(lines[0], "listening on ")
	require.True(t, ok, "first line: %q", lines[0])
	lines[0] = addr
	return lines
}

// TestBinaryConfigReachesBroker starts the binary with a topic config, a
// rule switch, JSON logs and a ready file, and checks each through a real
// client: the topic's configs, the group limit refusing a second group, and
// the JSON log line naming the rule.
func TestBinaryConfigReachesBroker(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	logs := &testutil.LockedBuffer{}
	addr := startRun(t, logs, 1, "-listen", "127.0.0.1:0", "-ready-file", ready, "-log-format", "json",
		"-topic", "orders:3:retention.ms=60000,message.timestamp.type=LogAppendTime", "-rule", "MaxGroups=1")[0]

	got, err := os.ReadFile(ready)
	require.NoError(t, err, "the ready file exists once the address is printed")
	assert.Equal(t, addr+"\n", string(got))

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	cfgs, err := adm.DescribeTopicConfigs(ctx, "orders")
	require.NoError(t, err)
	rc, err := cfgs.On("orders", nil)
	require.NoError(t, err)
	values := map[string]string{}
	for _, c := range rc.Configs {
		values[c.Key] = c.MaybeValue()
	}
	assert.Equal(t, "60000", values["retention.ms"])
	assert.Equal(t, "LogAppendTime", values["message.timestamp.type"])

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "first", offsets)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	resp, err = adm.CommitOffsets(ctx, "second", offsets)
	if err == nil {
		err = resp.Error()
	}
	require.ErrorIs(t, err, kerr.GroupMaxSizeReached, "MaxGroups=1 refuses a second group")

	// The refusal is logged as JSON with the rule that made it.
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["rule"] == "MaxGroups" {
			found = true
		}
	}
	assert.True(t, found, "no JSON log line with rule=MaxGroups in:\n%s", logs.String())
}

// TestBinaryServesControlPlane starts the binary with -http and a manual
// clock, moves the clock over HTTP, and relies on TestMain's leak check to
// show that the HTTP server stops with the binary.
func TestBinaryServesControlPlane(t *testing.T) {
	t.Parallel()
	lines := startRun(t, io.Discard, 2, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-manual-clock", "-topic", "orders:2")
	base, ok := strings.CutPrefix(lines[1], "control plane on ")
	require.True(t, ok, "second line: %q", lines[1])

	get := func(method, path string, out any) int {
		req, err := http.NewRequest(method, base+strings.TrimPrefix(path, "/"), nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		return resp.StatusCode
	}
	var health map[string]string
	require.Equal(t, http.StatusOK, get("GET", "/healthz", &health))
	assert.Equal(t, lines[0], health["bootstrap"])

	var before, after struct {
		Now    time.Time `json:"now"`
		Manual bool      `json:"manual"`
	}
	require.Equal(t, http.StatusOK, get("GET", "/clock", &before))
	assert.True(t, before.Manual)
	require.Equal(t, http.StatusOK, get("POST", "/clock/advance?d=1h", &after))
	assert.Equal(t, time.Hour, after.Now.Sub(before.Now))

	var topics []map[string]any
	require.Equal(t, http.StatusOK, get("GET", "/topics", &topics))
	require.Len(t, topics, 1)
	assert.Equal(t, "orders", topics[0]["name"])
	http.DefaultClient.CloseIdleConnections()
}

// TestNumPartitions: -num-partitions (or VASTFAKE_NUM_PARTITIONS, or the
// config file's "num-partitions") reaches the broker, whose auto-created
// topics get that many partitions in the kafka profile.
func TestNumPartitions(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int32(1), cfg.NumPartitions, "Kafka's default")
	t.Setenv("VASTFAKE_NUM_PARTITIONS", "4")
	cfg, err = parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int32(4), cfg.NumPartitions)
	file := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"num-partitions": 5}`), 0o600))
	cfg, err = parseConfig([]string{"-config", file}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int32(5), cfg.NumPartitions)
	for _, bad := range []string{"0", "-1", "x", "4294967296"} {
		_, err := parseConfig([]string{"-num-partitions", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}

	addr := startRun(t, io.Discard, 1, "-listen", "127.0.0.1:0", "-profile", "kafka", "-num-partitions", "3")[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr())
	td, err := kadm.NewClient(cl).ListTopics(ctx, "auto")
	require.NoError(t, err)
	assert.Len(t, td["auto"].Partitions, 3)
}

// TestConsumerGroupTimeoutFlags: the KIP-848 session timeout and heartbeat
// interval default to Kafka's 45s and 5s and reach the broker: a heartbeat
// interval not shorter than the session timeout stops the binary at start.
func TestConsumerGroupTimeoutFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, coordinator.DefaultConsumerSessionTimeout, cfg.ConsumerSessionTimeout)
	assert.Equal(t, coordinator.DefaultConsumerHeartbeatInterval, cfg.ConsumerHeartbeatInterval)
	cfg, err = parseConfig([]string{"-consumer-session-timeout", "2s", "-consumer-heartbeat-interval", "100ms"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.ConsumerSessionTimeout)
	assert.Equal(t, 100*time.Millisecond, cfg.ConsumerHeartbeatInterval)
	_, err = parseConfig([]string{"-consumer-session-timeout", "-1s"}, io.Discard, io.Discard)
	assert.Error(t, err)
	var stderr strings.Builder
	err = run([]string{"-listen", "127.0.0.1:0", "-consumer-session-timeout", "1s", "-consumer-heartbeat-interval", "1s"}, io.Discard, &stderr, make(chan struct{}))
	assert.Error(t, err, "an interval as long as the session timeout is refused")
}

// TestProducerIDExpirationFlag: -producer-id-expiration defaults to
// Kafka's producer.id.expiration.ms of a day, and 0 never expires.
func TestProducerIDExpirationFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.DefaultProducerIDExpiration, cfg.ProducerIDExpiration)
	cfg, err = parseConfig([]string{"-producer-id-expiration", "1h"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, cfg.ProducerIDExpiration)
	cfg, err = parseConfig([]string{"-producer-id-expiration", "0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.ProducerIDExpiration)
	_, err = parseConfig([]string{"-producer-id-expiration", "-1s"}, io.Discard, io.Discard)
	assert.Error(t, err)
}

// TestIdleTimeoutFlag: -idle-timeout defaults to Kafka's 10 minutes, 0
// turns it off, and the binary's broker closes a connection idle that long.
func TestIdleTimeoutFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.DefaultIdleTimeout, cfg.IdleTimeout)
	cfg, err = parseConfig([]string{"-idle-timeout", "0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.IdleTimeout)
	_, err = parseConfig([]string{"-idle-timeout", "-1s"}, io.Discard, io.Discard)
	assert.Error(t, err)

	addr := startRun(t, io.Discard, 1, "-listen", "127.0.0.1:0", "-idle-timeout", "100ms")[0]
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the broker closes the idle connection")
}

// TestEmptyFetchDelayFlag: -empty-fetch-delay defaults to the broker's
// DefaultEmptyFetchDelay and comes from the environment, the config file
// and the command line, the command line winning.
func TestEmptyFetchDelayFlag(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.DefaultEmptyFetchDelay, cfg.EmptyFetchDelay)
	t.Setenv("VASTFAKE_EMPTY_FETCH_DELAY", "25ms")
	cfg, err = parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 25*time.Millisecond, cfg.EmptyFetchDelay)
	file := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"empty-fetch-delay": "40ms"}`), 0o600))
	cfg, err = parseConfig([]string{"-config", file}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 40*time.Millisecond, cfg.EmptyFetchDelay)
	cfg, err = parseConfig([]string{"-config", file, "-empty-fetch-delay", "0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.EmptyFetchDelay)
	_, err = parseConfig([]string{"-empty-fetch-delay", "-1s"}, io.Discard, io.Discard)
	assert.Error(t, err)
}

// TestOffsetGapAndCompactionFlags: -offset-gap and -compaction-interval
// parse from the command line, the environment and the config file, and
// reach the broker: records produced to the binary land with gaps.
func TestOffsetGapAndCompactionFlags(t *testing.T) {
	cfg, err := parseConfig([]string{"-offset-gap", "orders:5", "-offset-gap", "prices:2:100", "-compaction-interval", "30s"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []broker.OffsetGap{{Topic: "orders", Skip: 5, Every: 1}, {Topic: "prices", Skip: 2, Every: 100}}, cfg.OffsetGaps)
	assert.Equal(t, 30*time.Second, cfg.CompactionInterval)
	cfg, err = parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.CompactionInterval, "off by default, so that tests stay deterministic")
	assert.Empty(t, cfg.OffsetGaps)
	for _, bad := range []string{"orders", "orders:0", "orders:x", "orders:1:0", ":1", "orders:1:2:3"} {
		_, err := parseConfig([]string{"-offset-gap", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}
	t.Setenv("VASTFAKE_OFFSET_GAPS", "a:1,b:2")
	t.Setenv("VASTFAKE_COMPACTION_INTERVAL", "1m")
	file := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"offset-gap": ["c:3"]}`), 0o600))
	cfg, err = parseConfig([]string{"-config", file}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []broker.OffsetGap{{Topic: "a", Skip: 1, Every: 1}, {Topic: "b", Skip: 2, Every: 1}, {Topic: "c", Skip: 3, Every: 1}}, cfg.OffsetGaps)
	assert.Equal(t, time.Minute, cfg.CompactionInterval)

	addr := startRun(t, io.Discard, 1, "-listen", "127.0.0.1:0", "-topic", "orders:1", "-offset-gap", "orders:5")[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var offsets []int64
	for range 2 {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).First()
		require.NoError(t, err)
		offsets = append(offsets, r.Offset)
	}
	assert.Equal(t, []int64{0, 6}, offsets)
}

// TestOffsetMetadataMaxBytesFlag: -offset-metadata-max-bytes (or its
// environment variable, or the config file key) defaults to Kafka's 4096
// and reaches the broker: a commit with longer metadata gets
// OFFSET_METADATA_TOO_LARGE.
func TestOffsetMetadataMaxBytesFlag(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 4096, cfg.OffsetMetadataMaxBytes, "Kafka's offset.metadata.max.bytes")
	t.Setenv("VASTFAKE_OFFSET_METADATA_MAX_BYTES", "100")
	cfg, err = parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 100, cfg.OffsetMetadataMaxBytes)
	file := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"offset-metadata-max-bytes": 8}`), 0o600))
	cfg, err = parseConfig([]string{"-config", file}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 8, cfg.OffsetMetadataMaxBytes)
	for _, bad := range []string{"-1", "x", "4294967296"} {
		_, err := parseConfig([]string{"-offset-metadata-max-bytes", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}

	addr := startRun(t, io.Discard, 1, "-listen", "127.0.0.1:0", "-topic", "t", "-offset-metadata-max-bytes", "8")[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	for _, md := range []string{"12345678", "123456789"} {
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1, Metadata: md})
		resp, err := adm.CommitOffsets(ctx, "g", offsets)
		require.NoError(t, err)
		if len(md) <= 8 {
			assert.NoError(t, resp.Error(), md)
		} else {
			assert.ErrorIs(t, resp.Error(), kerr.OffsetMetadataTooLarge, md)
		}
	}
}

// TestRetentionCheckIntervalFlag: -retention-check-interval defaults to the
// broker's 1s, and 0 reaches the broker as "never", as
// -compaction-interval 0 does, instead of falling back to the default.
func TestRetentionCheckIntervalFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, broker.DefaultRetentionCheckInterval, cfg.RetentionCheckInterval)
	cfg, err = parseConfig([]string{"-retention-check-interval", "0"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.RetentionCheckInterval)
}

// TestKafkaProfileWaitsForMembersAsKafkaDoes: the binary's kafka profile is
// a broker with Kafka's group.initial.rebalance.delay.ms (3s), which other
// clients' test suites count on (librdkafka's static-membership test joins
// two consumers in one generation); the other profiles, and the kafka
// profile on a manual clock, form a group at once, and the flag sets it in
// any profile.
func TestKafkaProfileWaitsForMembersAsKafkaDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-profile", "kafka"}, 3 * time.Second},
		{[]string{"-profile", "kafka", "-initial-rebalance-delay", "0s"}, 0},
		{[]string{"-profile", "kafka", "-manual-clock"}, 0}, // the delay would wait for the test to advance the clock
		{[]string{"-profile", "kafka", "-manual-clock", "-initial-rebalance-delay", "3s"}, 3 * time.Second},
		{[]string{"-profile", "vast"}, 0},
		{[]string{"-profile", "audit"}, 0},
		{[]string{"-initial-rebalance-delay", "1s"}, time.Second},
	} {
		cfg, err := parseConfig(c.args, io.Discard, io.Discard)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.want, cfg.InitialRebalanceDelay, "%v", c.args)
	}
}

// TestSeveralBrokersFromTheBinary: -brokers 3 serves three broker ids, all
// in Metadata, the first on the address the binary prints; a count out of
// range stops it at start.
func TestSeveralBrokersFromTheBinary(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "17", "x"} {
		_, err := parseConfig([]string{"-brokers", bad}, io.Discard, io.Discard)
		assert.Error(t, err, bad)
	}
	addr := startRun(t, io.Discard, 1, "-listen", "127.0.0.1:0", "-brokers", "3", "-topic", "orders:3")[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, "orders")
	require.NoError(t, err)
	require.Len(t, md.Brokers, 3)
	assert.Equal(t, addr, net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))), "broker 0 is the printed address")
	for p, pd := range md.Topics["orders"].Partitions {
		assert.Equal(t, p, pd.Leader, "partition %d led by broker %d mod 3", p, p)
	}
	for i := range 3 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: int32(i), Value: []byte("x")}).FirstErr())
	}
}
