package control_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

// send sends method url with an optional body and the headers given as
// name, value pairs ("Host" sets the request's Host), and returns the
// status, the body and the response.
func send(t *testing.T, method, url, body string, headers ...string) (int, string, *http.Response) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data), resp
}

// TestCrossSitePostsRefused forges what a web page on another site can
// make a browser send to a control plane on localhost: a cross-site fetch
// or HTML form post, which carry the page's Origin or Sec-Fetch-Site. Each
// is refused and the topic survives; the control plane's own page and
// clients without a browser's headers (curl -d sends a form type) still
// reset.
func TestCrossSitePostsRefused(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)

	for _, forged := range [][]string{
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"},
		{"Origin", "http://evil.example"},
		{"Sec-Fetch-Site", "same-site"},
		{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"},
		{"Content-Type", "multipart/form-data; boundary=x", "Sec-Fetch-Site", "cross-site"},
		{"Content-Type", "text/plain", "Origin", "null"},
	} {
		status, body, _ := send(t, "POST", url+"/reset", "a=b", forged...)
		assert.Equal(t, http.StatusForbidden, status, "%q: %s", forged, body)
		assert.Contains(t, body, `"error"`)
	}
	status, _, _ := send(t, "DELETE", url+"/faults", "", "Origin", "http://evil.example")
	assert.Equal(t, http.StatusForbidden, status)
	_, ok := k.Broker().Topic("orders")
	require.True(t, ok, "the topic survives every forged reset")

	status, _, _ = send(t, "GET", url+"/topics", "", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	assert.Equal(t, http.StatusOK, status, "a GET changes nothing; the browser keeps its answer from the other site")
	status, body, _ := send(t, "POST", url+"/reset", "a=b", "Content-Type", "application/x-www-form-urlencoded",
		"Origin", url, "Sec-Fetch-Site", "same-origin")
	assert.Equal(t, http.StatusOK, status, "the control plane's own origin: %s", body)
	_, ok = k.Broker().Topic("orders")
	assert.False(t, ok)
	status, body, _ = send(t, "POST", url+"/reset", "")
	assert.Equal(t, http.StatusOK, status, "curl and test code send no Origin: %s", body)
	status, body, _ = send(t, "POST", url+"/reset", "{}", "Content-Type", "application/x-www-form-urlencoded")
	assert.Equal(t, http.StatusOK, status, "curl -d sends a form type and no Origin: %s", body)
}

// TestForeignHostRefused plays DNS rebinding: a request that reaches the
// control plane under a DNS name it does not know is refused, whatever the
// method; localhost, IP addresses and allowed names pass.
func TestForeignHostRefused(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	srv := httptest.NewServer(control.New(k.Broker(), control.WithAllowedHosts("vastfake", "CI-Runner.")))
	t.Cleanup(srv.Close)

	for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.nip.io", "localhost.evil.example"} {
		status, body, _ := send(t, "GET", srv.URL+"/topics", "", "Host", host)
		assert.Equal(t, http.StatusForbidden, status, "%s: %s", host, body)
		assert.Contains(t, body, "-http-allow-hosts")
		status, _, _ = send(t, "POST", srv.URL+"/reset", "", "Host", host, "Origin", "http://"+host)
		assert.Equal(t, http.StatusForbidden, status, host)
	}
	_, ok := k.Broker().Topic("orders")
	require.True(t, ok)
	for _, host := range []string{"localhost:8080", "LOCALHOST", "app.localhost:1", "127.0.0.1:9", "[::1]:8080",
		"10.1.2.3", "vastfake:8080", "ci-runner"} {
		status, body, _ := send(t, "GET", srv.URL+"/topics", "", "Host", host)
		assert.Equal(t, http.StatusOK, status, "%s: %s", host, body)
	}

	any := httptest.NewServer(control.New(k.Broker(), control.WithAllowedHosts("*")))
	t.Cleanup(any.Close)
	status, _, _ := send(t, "GET", any.URL+"/topics", "", "Host", "evil.example")
	assert.Equal(t, http.StatusOK, status, `"*" turns the check off`)
}

// TestTokenRequired checks WithToken: 401 without the token or with a
// wrong one, 200 with it as a bearer token, a query parameter, or the
// cookie the live page gets; /healthz stays open for health checks.
func TestTokenRequired(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	srv := httptest.NewServer(control.New(k.Broker(), control.WithToken("s3cret")))
	t.Cleanup(srv.Close)

	status, body, resp := send(t, "GET", srv.URL+"/topics", "")
	assert.Equal(t, http.StatusUnauthorized, status, body)
	assert.Equal(t, `Bearer realm="vastfake"`, resp.Header.Get("WWW-Authenticate"))
	status, _, _ = send(t, "POST", srv.URL+"/reset", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = send(t, "GET", srv.URL+"/topics", "", "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = send(t, "GET", srv.URL+"/", "")
	assert.Equal(t, http.StatusUnauthorized, status, "the live page too")
	_, ok := k.Broker().Topic("orders")
	require.True(t, ok)

	status, _, _ = send(t, "GET", srv.URL+"/healthz", "")
	assert.Equal(t, http.StatusOK, status)
	status, _, _ = send(t, "HEAD", srv.URL+"/healthz", "")
	assert.Equal(t, http.StatusOK, status)
	status, body, _ = send(t, "GET", srv.URL+"/topics", "", "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "orders")
	status, _, _ = send(t, "GET", srv.URL+"/topics?token=s3cret", "")
	assert.Equal(t, http.StatusOK, status)

	status, _, resp = send(t, "GET", srv.URL+"/?token=s3cret", "")
	require.Equal(t, http.StatusOK, status)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "vastfake_token_"+srv.URL[strings.LastIndex(srv.URL, ":")+1:] { // one cookie per port
			cookie = c
		}
	}
	require.NotNil(t, cookie, "the page gets the token as a cookie for live.json")
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	status, body, _ = send(t, "GET", srv.URL+"/live.json", "", "Cookie", cookie.Name+"="+cookie.Value)
	assert.Equal(t, http.StatusOK, status, body)
	status, _, _ = send(t, "GET", srv.URL+"/live.json", "", "Cookie", "vastfake_token_1="+cookie.Value)
	assert.Equal(t, http.StatusUnauthorized, status, "another port's cookie is not this control plane's")

	status, _, _ = send(t, "POST", srv.URL+"/reset", "", "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, status)
	_, ok = k.Broker().Topic("orders")
	assert.False(t, ok)
}
