package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

func TestParseSecurityFlags(t *testing.T) {
	t.Setenv("VASTFAKE_USERS", "env-user:env-pass,other:o:with:colons")
	t.Setenv("VASTFAKE_POLICIES", "deny * KafkaDelete vast:kafka:topic:shop:*")
	cfg, err := parseConfig([]string{
		"-user", "app:app-secret",
		"-policy", "allow app KafkaRead vast:kafka:group:shop:billing",
		"-default-deny", "-view", "shop",
	}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"env-user": "env-pass", "other": "o:with:colons", "app": "app-secret"}, cfg.Users)
	assert.Equal(t, []broker.Policy{
		broker.Deny("*", broker.KafkaDelete, "vast:kafka:topic:shop:*"),
		broker.Allow("app", broker.KafkaRead, "vast:kafka:group:shop:billing"),
	}, cfg.Policies)
	assert.True(t, cfg.DefaultDeny)
	assert.Equal(t, "shop", cfg.View)

	for _, bad := range [][]string{
		{"-user", "nopassword"},
		{"-user", ":pw"},
		{"-policy", "permit app KafkaRead vast:kafka:topic:v:t"},
		{"-policy", "allow app KafkaRead"},
		{"-tls-cert", "cert.pem"},
	} {
		_, err := parseConfig(bad, io.Discard, io.Discard)
		assert.Error(t, err, "%q", bad)
	}

	// More users than the broker derives credentials for at start.
	var many []string
	for i := range broker.MaxUsers + 1 {
		many = append(many, "-user", fmt.Sprintf("u%d:pw", i))
	}
	_, err = parseConfig(many, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("at most %d users", broker.MaxUsers))
}

// TestRunWithSecurity starts the binary's run with a user, a policy and a
// TLS certificate from files, and talks SASL_SSL to it.
func TestRunWithSecurity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certPEM, keyPEM, err := fixtures.SelfSignedCert()
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))

	out, w := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-listen", "127.0.0.1:0", "-topic", "orders:1", "-topic", "audit:1", "-log-level", "warn",
			"-user", "app:app-secret", "-policy", "deny app KafkaWrite vast:kafka:topic:vastfake:audit",
			"-tls-cert", certFile, "-tls-key", keyFile}, w, io.Discard, stop)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	defer func() {
		close(stop)
		require.NoError(t, <-done)
	}()

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	cl, err := kgo.NewClient(append(fixtures.ClientOpts(addr),
		kgo.DialTLSConfig(clientTLS), kgo.SASL(plain.Auth{User: "app", Pass: "app-secret"}.AsMechanism()))...)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("ok")}).FirstErr())
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "audit", Value: []byte("no")}).FirstErr()
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)

	bad, err := kgo.NewClient(append(fixtures.ClientOpts(addr), kgo.RequestRetries(0),
		kgo.DialTLSConfig(clientTLS), kgo.SASL(plain.Auth{User: "app", Pass: "wrong"}.AsMechanism()))...)
	require.NoError(t, err)
	defer bad.Close()
	_, err = kadm.NewClient(bad).ListTopics(ctx)
	assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
}

// TestControlPlaneTokenWithUsers starts the binary with a SASL user and
// -http: the control plane then requires a token, generated and printed on
// the third stdout line when -http-token is not given. Without it a
// request gets 401, with it 200.
func TestControlPlaneTokenWithUsers(t *testing.T) {
	t.Parallel()
	lines := startRun(t, io.Discard, 3, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-log-level", "warn",
		"-user", "app:app-secret", "-topic", "orders:1")
	base, ok := strings.CutPrefix(lines[1], "control plane on ")
	require.True(t, ok, "second line: %q", lines[1])
	token, ok := strings.CutPrefix(lines[2], "control plane token ")
	require.True(t, ok, "third line: %q", lines[2])
	require.GreaterOrEqual(t, len(token), 26, "at least 128 random bits")

	get := func(path, token string) int {
		req, err := http.NewRequest("GET", base+strings.TrimPrefix(path, "/"), nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get("/topics", ""))
	assert.Equal(t, http.StatusUnauthorized, get("/topics/orders/partitions/0/records", "guess"))
	assert.Equal(t, http.StatusOK, get("/topics", token))
	assert.Equal(t, http.StatusOK, get("/healthz", ""), "health checks need no token")

	// A token given by flag is used and not printed.
	lines = startRun(t, io.Discard, 2, "-listen", "127.0.0.1:0", "-http", "127.0.0.1:0", "-log-level", "warn",
		"-user", "app:app-secret", "-http-token", "chosen")
	base = strings.TrimPrefix(lines[1], "control plane on ")
	assert.Equal(t, http.StatusUnauthorized, get("/topics", token))
	assert.Equal(t, http.StatusOK, get("/topics", "chosen"))
	http.DefaultClient.CloseIdleConnections()
}
