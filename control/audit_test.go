package control_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// auditFinding is one finding as GET /audit answers it: the JSON contract
// other languages' clients read.
type auditFinding struct {
	Rule           string    `json:"rule"`
	Kind           string    `json:"kind"`
	Source         string    `json:"source"`
	ClientID       string    `json:"clientId"`
	ClientSoftware string    `json:"clientSoftware"`
	ClientVersion  string    `json:"clientVersion"`
	Topic          string    `json:"topic"`
	Group          string    `json:"group"`
	Count          int64     `json:"count"`
	First          time.Time `json:"first"`
	Last           time.Time `json:"last"`
	Advice         string    `json:"advice"`
	Detail         string    `json:"detail"`
}

// gzipProduce produces one compressible record with gzip: a NoCompression
// finding in audit mode.
func gzipProduce(t *testing.T, k *fixtures.Kafka, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := k.Client(kgo.ProducerBatchCompression(kgo.GzipCompression()))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strings.Repeat("zip ", 300))}).FirstErr())
}

// TestAuditEndpoint: GET /audit lists the findings with the documented
// field names, the request log names the finding, DELETE /audit forgets
// them.
func TestAuditEndpoint(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1))
	base := serve(t, k)
	gzipProduce(t, k, "orders")

	var raw struct {
		Audited, Enforced []string
		Findings          []map[string]any
		Refusals          []map[string]any
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/audit", nil, &raw))
	require.Len(t, raw.Findings, 1)
	for _, field := range []string{"rule", "kind", "source", "clientId", "clientSoftware", "clientVersion", "topic", "group", "count", "first", "last", "advice", "detail"} {
		assert.Contains(t, raw.Findings[0], field)
	}
	assert.Contains(t, raw.Audited, "NoCompression", "the report names the rules it audited")
	assert.NotNil(t, raw.Refusals, "refusals by enforced rules are listed, here none")
	var report struct{ Findings []auditFinding }
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/audit", nil, &report))
	f := report.Findings[0]
	assert.Equal(t, "NoCompression", f.Rule)
	assert.Equal(t, "refused", f.Kind)
	assert.Equal(t, "orders", f.Topic)
	assert.Equal(t, "kgo", f.ClientSoftware)
	assert.Equal(t, int64(1), f.Count)
	assert.Contains(t, f.Advice, "kgo.NoCompression()")

	// The answer is streamed, byte for byte what encoding the whole
	// report writes.
	resp, err := http.Get(base + "/audit")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	whole, err := json.MarshalIndent(k.Broker().AuditReport(), "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(whole)+"\n", string(body))

	var reqs []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/requests?api=Produce", nil, &reqs))
	require.NotEmpty(t, reqs)
	assert.Equal(t, "NoCompression", reqs[len(reqs)-1]["finding"])

	require.Equal(t, http.StatusOK, call(t, "DELETE", base+"/audit", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/audit", nil, &report))
	assert.Empty(t, report.Findings)
}

// TestLivePageAudit: in audit mode the live page shows the VAST
// compatibility panel with each finding; outside it the panel is hidden.
func TestLivePageAudit(t *testing.T) {
	t.Parallel()
	needChromium(t)
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1))
	gzipProduce(t, k, "orders")
	dom := string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", serve(t, k)+"/"))
	assert.Contains(t, dom, "VAST compatibility")
	assert.Contains(t, dom, `data-rule="NoCompression"`)
	assert.Contains(t, dom, `<span id="findings-count">1 finding</span>`, "the panel counts its findings")
	assert.Contains(t, dom, "kgo.ProducerBatchCompression(kgo.NoCompression())")
	assert.NotContains(t, dom, `id="audit" hidden`)

	plain := fixtures.Start(t, fixtures.Topic("orders", 1))
	dom = string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", serve(t, plain)+"/"))
	assert.Contains(t, dom, `id="audit" hidden`)
}
