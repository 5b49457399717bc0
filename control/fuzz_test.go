package control_test

// FuzzControlPlane serves arbitrary requests (method, path, query, body)
// to the control plane of one broker with a topic, records, a group's
// offsets and a request log. Whatever the input, no handler panics (a
// panic fails the target), every answer has a valid status, a body over
// MaxBodyBytes gets 413, and every JSON answer parses.
//
//	go test -run '^$' -fuzz FuzzControlPlane -fuzztime 60s ./control/

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/fixtures"
)

func FuzzControlPlane(f *testing.F) {
	for _, pattern := range control.Routes() {
		method, path := concrete(pattern)
		f.Add(method, path, "", []byte(nil))
	}
	for _, seed := range []struct{ method, path, query, body string }{
		{"GET", "/topics/orders/partitions/0/records", "offset=1&limit=2", ""},
		{"GET", "/topics/orders/partitions/0/records", "limit=10001", ""},
		{"GET", "/topics/orders/partitions/9/records", "offset=-1", ""},
		{"GET", "/requests", "api=Produce&rule=MaxGroups&limit=3", ""},
		{"GET", "/rebalances", "group=billing", ""},
		{"POST", "/faults", "", `{"api": "Produce", "err": "NOT_LEADER_FOR_PARTITION", "count": 1, "partition": 0}`},
		{"POST", "/latency", "api=Fetch&d=1ms", ""},
		{"POST", "/clock/advance", "d=1s", ""},
		{"PUT", "/topics", "", "{}"},
	} {
		f.Add(seed.method, seed.path, seed.query, []byte(seed.body))
	}

	k := fixtures.Start(f, fixtures.Topic("orders", 2))
	k.Produce("orders", 0, "a", "b", "c")
	cl := k.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	_ = cl // a group member
	h := control.New(k.Broker())

	f.Fuzz(func(t *testing.T, method, path, query string, body []byte) {
		if method == "" || strings.ContainsAny(method, " \t\r\n") {
			method = "GET"
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u := &url.URL{Path: path, RawQuery: query}
		req := httptest.NewRequest("GET", "/", nil)
		req.Method, req.URL, req.RequestURI, req.Host = method, u, u.RequestURI(), "localhost"
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if len(body)%2 == 1 {
			req.ContentLength = -1 // chunked: the length is found reading
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)

		if w.Code < 100 || w.Code > 599 {
			t.Fatalf("%s %s?%s: status %d", method, path, query, w.Code)
		}
		if len(body) > control.MaxBodyBytes && w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s %s with a %d-byte body: status %d, want 413", method, path, len(body), w.Code)
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s?%s: invalid JSON answer %q", method, path, query, w.Body.String())
		}
	})
}
