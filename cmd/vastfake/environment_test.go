package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/internal/testutil"
)

// TestSingularVariablesOfRepeatableFlags: VASTFAKE_TOPIC is read as
// VASTFAKE_TOPICS is (docker run -e VASTFAKE_TOPIC=orders:3), for every
// repeatable flag, and both add up when both are set.
func TestSingularVariablesOfRepeatableFlags(t *testing.T) {
	t.Setenv("VASTFAKE_TOPIC", "orders:3")
	t.Setenv("VASTFAKE_TOPICS", "payments:1")
	t.Setenv("VASTFAKE_RULE", "MaxGroups=7")
	t.Setenv("VASTFAKE_USER", "app:secret")
	t.Setenv("VASTFAKE_POLICY", "deny app KafkaWrite vast:kafka:topic:vastfake:audit")
	t.Setenv("VASTFAKE_OFFSET_GAP", "orders:2")
	cfg, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []broker.TopicSpec{{Name: "payments", Partitions: 1}, {Name: "orders", Partitions: 3}}, cfg.Topics)
	assert.Equal(t, 7, cfg.Rules.MaxGroups)
	assert.Equal(t, map[string]string{"app": "secret"}, cfg.Users)
	assert.Len(t, cfg.Policies, 1)
	assert.Equal(t, []broker.OffsetGap{{Topic: "orders", Skip: 2, Every: 1}}, cfg.OffsetGaps)
	assert.Empty(t, cfg.Unknown, "every one of them is known")
}

// TestUnknownVariablesAreWarnedAbout: a VASTFAKE_ variable that sets
// nothing is warned about at start, once, with the nearest known name when
// it is near enough to be what was meant; the variables the launchers read
// are not.
func TestUnknownVariablesAreWarnedAbout(t *testing.T) {
	t.Setenv("VASTFAKE_TOPICZ", "orders:3")
	t.Setenv("VASTFAKE_BOGUS", "1")
	t.Setenv("VASTFAKE_BIN", "/usr/local/bin/vastfake")
	t.Setenv("VASTFAKE_NUMPARTITIONS", "3")
	logs := &testutil.LockedBuffer{}
	startRun(t, logs, 1, "-listen", "127.0.0.1:0", "-log-level", "warn")
	out := logs.String()
	assert.Contains(t, out, "variable=VASTFAKE_TOPICZ did_you_mean=VASTFAKE_TOPIC\n")
	assert.Contains(t, out, "variable=VASTFAKE_NUMPARTITIONS did_you_mean=VASTFAKE_NUM_PARTITIONS\n")
	assert.Contains(t, out, "variable=VASTFAKE_BOGUS\n", "no known name is near VASTFAKE_BOGUS")
	assert.NotContains(t, out, "VASTFAKE_BIN")
	assert.Equal(t, 3, strings.Count(out, "sets nothing"), out)
}

// TestHealthcheckSaysWhy: a control plane that refuses the health check
// (a 403 for a Host it does not allow) has its own error in -healthcheck's
// message, not only the status.
func TestHealthcheckSaysWhy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error": "host \"broker:8080\" is not allowed (DNS rebinding protection); allow the host with -http-allow-hosts"}`)
	}))
	defer srv.Close()
	err := run([]string{"-healthcheck", "-http", strings.TrimPrefix(srv.URL, "http://")}, io.Discard, io.Discard, nil)
	var ue *unhealthyError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "403 Forbidden")
	assert.Contains(t, err.Error(), "allow the host with -http-allow-hosts")
}

// TestOneNameForEachListener: with the listeners on every interface, the
// log names each one by the address it was asked for and the port it got,
// beside the advertised one, and GET /brokers names them alike; the
// control plane's line on stdout is a URL a browser opens.
func TestOneNameForEachListener(t *testing.T) {
	t.Parallel()
	logs := &testutil.LockedBuffer{}
	lines := startRun(t, logs, 2, "-listen", "0.0.0.0:0", "-http", "0.0.0.0:0", "-brokers", "2", "-log-level", "info")
	_, port, _ := strings.Cut(lines[0], ":")
	assert.Equal(t, "localhost:"+port, lines[0], "clients are told localhost")
	url, ok := strings.CutPrefix(lines[1], "control plane on ")
	require.True(t, ok, lines[1])
	assert.True(t, strings.HasPrefix(url, "http://localhost:"), url)
	// Logged once stdout is written.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "control plane listener") },
		10*time.Second, 10*time.Millisecond, logs.String())
	out := logs.String()
	assert.Contains(t, out, "bound=0.0.0.0:"+port+" advertised=localhost:"+port)
	assert.NotContains(t, out, "[::]")

	resp, err := http.Get(url + "brokers")
	require.NoError(t, err)
	defer resp.Body.Close()
	var view struct {
		Brokers []struct{ Addr, Advertised string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&view))
	require.Len(t, view.Brokers, 2)
	assert.Equal(t, "0.0.0.0:"+port, view.Brokers[0].Addr)
	assert.Equal(t, "localhost:"+port, view.Brokers[0].Advertised)
}
