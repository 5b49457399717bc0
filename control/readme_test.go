package control_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/control"
)

// TestReadmeEndpointTable keeps the endpoint table of docs/control-plane.md
// and the route table the mux is built from one set: every endpoint the table names is served, and every route is in
// the table but the live page itself ("GET /"), which the prose describes.
// A cell lists "METHOD /path" and may continue with "/path" for the same
// method; a query ("?d=") is not part of the route.
func TestReadmeEndpointTable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/control-plane.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "| endpoint | answer |\n| --- | --- |\n")
	require.True(t, ok, "docs/control-plane.md has the endpoint table")
	table, _, _ = strings.Cut(table, "\n\n")

	routes := map[string]bool{}
	for _, p := range control.Routes() {
		routes[strings.TrimSuffix(p, "{$}")] = true
	}
	tick := regexp.MustCompile("`([^`]+)`")
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		method := ""
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			ep, _, _ := strings.Cut(m[1], "?")
			if mth, path, ok := strings.Cut(ep, " "); ok {
				method, ep = mth, path
			}
			require.NotEmpty(t, method, "the endpoint row %q names a method first", line)
			documented[method+" "+ep] = true
			assert.True(t, routes[method+" "+ep], "docs/control-plane.md's endpoint table has %s %s, which the route table does not serve", method, ep)
		}
	}
	assert.Contains(t, string(data), "a live page at\n`/`", "docs/control-plane.md describes GET /, the live page")
	for r := range routes {
		if r != "GET /" {
			assert.True(t, documented[r], "%s is missing from docs/control-plane.md's endpoint table", r)
		}
	}
}
