package control_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/control"
)

// TestReadmeEndpointTable keeps README's endpoint table (with the rows of
// the docs/ pages' tables) and the route table one set: every endpoint the table names is served, and every route is in
// the table but the live page itself ("GET /"), which the prose describes.
// A cell lists "METHOD /path" and may continue with "/path" for the same
// method; a query ("?d=") is not part of the route.
func TestReadmeEndpointTable(t *testing.T) {
	// README's table, and the rows a page under docs/ adds for the
	// endpoints it is about (the same header).
	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	var table string
	for i, page := range append([]string{"../README.md"}, pages...) {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		_, rows, ok := strings.Cut(string(data), "| endpoint | answer |\n| --- | --- |\n")
		require.True(t, ok || i > 0, "README.md has the endpoint table")
		rows, _, _ = strings.Cut(rows, "\n\n")
		if ok {
			table += strings.TrimSuffix(rows, "\n") + "\n"
		}
	}
	table = strings.TrimSuffix(table, "\n")

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
			require.NotEmpty(t, method, "README's endpoint row %q names a method first", line)
			documented[method+" "+ep] = true
			assert.True(t, routes[method+" "+ep], "README's endpoint table has %s %s, which the route table does not serve", method, ep)
		}
	}
	for r := range routes {
		if r != "GET /" {
			assert.True(t, documented[r], "%s is missing from README's endpoint table", r)
		}
	}
}
