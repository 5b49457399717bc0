package interop

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// TestAuditCollector runs the OpenTelemetry Collector (contrib's kafka
// exporter and receiver, built from otelcol/) unchanged against the audit
// profile at three brokers: OTLP/HTTP logs into the kafka exporter, and
// the kafka receiver in a consumer group into the debug exporter. The
// user's exporter asks for required_acks: all and gzip, as a user wanting
// durable, small writes does; the receiver keeps its default balancer,
// franz-go's cooperative-sticky. The report finds all three, each with
// advice in the Collector's YAML. Rerun with the advice applied word for
// word, the report has no findings, and the group's errors are routine.
func TestAuditCollector(t *testing.T) {
	t.Parallel()
	otelcol := buildCollector(t)

	rep := runCollector(t, otelcol, `
    producer: {required_acks: all, compression: gzip}`, "")
	rules := map[string]broker.Finding{}
	for _, f := range rep.Findings {
		assert.Equal(t, "otel-collector", f.ClientID)
		assert.Contains(t, f.Advice, "(YAML)")
		rules[f.Rule] = f
	}
	require.Len(t, rules, 3, "%+v", rep.Findings)
	assert.Contains(t, rules["EagerAssignorsOnly"].Advice, "in the Collector's kafka receiver, set group_rebalance_strategies: [range]")
	assert.Contains(t, rules["NoIdempotence"].Advice, "in the Collector's kafka exporter, set producer: {required_acks: 1}")
	assert.Contains(t, rules["NoCompression"].Advice, "in the Collector's kafka exporter, set producer: {compression: none}")
	assertRoutineGroup(t, rep, "otel-collector")

	rep = runCollector(t, otelcol, `
    producer: {required_acks: 1, compression: none}`, `
    group_rebalance_strategies: [range]`)
	assert.Empty(t, rep.Findings, "the advice applied clears the findings")
	assertRoutineGroup(t, rep, "otel-collector")
}

// buildCollector builds otelcol/ (its own module, so that neither
// vastfake nor interop inherits the Collector's dependencies) into the
// test's temporary directory and returns the binary. Go's build cache
// makes a rebuild a link. It skips the test (fails it under CI) when go
// is missing or the build fails, as when the module proxy is out of reach.
func buildCollector(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		missingApp(t, "go on PATH to build the Collector (otelcol/)")
	}
	bin := filepath.Join(t.TempDir(), "otelcol")
	cmd := exec.Command(gobin, "build", "-buildvcs=false", "-o", bin, ".")
	cmd.Dir = "otelcol"
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		missingApp(t, fmt.Sprintf("the Collector built from otelcol/ (go build: %v)\n%s", err, out))
	}
	return bin
}

// runCollector runs the Collector with exporterYAML and receiverYAML added
// to its kafka exporter and receiver against a new audited broker, sends
// it OTLP logs until its kafka receiver has committed all of them, stops
// it as a user does (SIGTERM) and returns the report.
func runCollector(t *testing.T, otelcol, exporterYAML, receiverYAML string) broker.AuditReport {
	t.Helper()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Brokers(3), fixtures.Topic("logs", 2))
	otlp := freeAddr(t)
	// The receiver reads from the start (its default is the end), so that
	// no log is lost to the time the group takes to form; the Collector's
	// own metrics are off, so that it binds no fixed port.
	conf := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %[1]s
  kafka:
    brokers: [%[2]q]
    logs:
      topics: [logs]
    initial_offset: earliest%[4]s
exporters:
  kafka:
    brokers: [%[2]q]
    logs:
      topic: logs%[3]s
  debug: {}
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs/in:
      receivers: [otlp]
      exporters: [kafka]
    logs/out:
      receivers: [kafka]
      exporters: [debug]
`, otlp, k.Addr(), exporterYAML, receiverYAML)
	confPath := filepath.Join(t.TempDir(), "otelcol.yaml")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))

	d := startDaemon(t, nil, otelcol, "--config", "file:"+confPath)
	d.waitFor(t, "the kafka receiver in a stable group", func() bool {
		g := k.Group("otel-collector")
		return g.State == "Stable" && len(g.Members) == 1
	})
	d.waitFor(t, "the OTLP receiver listening", func() bool {
		c, err := net.Dial("tcp", otlp)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	for i := range 20 {
		body := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"orders"}}]},`+
			`"scopeLogs":[{"logRecords":[{"severityText":"INFO","body":{"stringValue":"order %d shipped"}}]}]}]}`, i)
		resp, err := http.Post("http://"+otlp+"/v1/logs", "application/json", bytes.NewBufferString(body))
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	d.waitFor(t, "20 logs in the topic, all committed by the kafka receiver", func() bool {
		if topicRecords(k, "logs", 2) < 20 {
			return false
		}
		for p := range int32(2) {
			if k.Committed("otel-collector", "logs", p) != k.EndOffset("logs", p) {
				return false
			}
		}
		return true
	})
	d.stop()
	rep := k.Broker().AuditReport()
	logFindings(t, "the Collector", rep)
	return rep
}

// freeAddr returns a loopback address with a port free a moment ago, for
// an app that wants its listening address in its configuration.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
