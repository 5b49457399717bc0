package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageFlags returns every flag the binary defines, from its -h usage, with
// the environment variable its help names ("" when it names none).
func usageFlags(t *testing.T) map[string]string {
	t.Helper()
	var out bytes.Buffer
	_, err := parseConfig([]string{"-h"}, &out, io.Discard)
	require.ErrorIs(t, err, errDone)
	flags := map[string]string{}
	name := ""
	envRe := regexp.MustCompile(`\(env (VASTFAKE_[A-Z_]+)`)
	for _, line := range strings.Split(out.String(), "\n") {
		if m := regexp.MustCompile(`^  -([a-z-]+)`).FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = ""
		}
		if m := envRe.FindStringSubmatch(line); m != nil && name != "" {
			flags[name] = m[1]
		}
	}
	require.Contains(t, flags, "listen", "the usage lists the flags:\n%s", out.String())
	return flags
}

// readmeFlagTable returns the rows of README's flag table: each row's flags
// and the environment variables it names.
func readmeFlagTable(t *testing.T) (rows []struct{ flags, envs []string }) {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "| flag | env | default | meaning |\n| --- | --- | --- | --- |\n")
	require.True(t, ok, "README.md has the flag table")
	table, _, _ = strings.Cut(table, "\n\n")
	tick := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		require.GreaterOrEqual(t, len(cells), 3, "flag table row %q", line)
		var row struct{ flags, envs []string }
		for _, m := range tick.FindAllStringSubmatch(cells[0], -1) {
			row.flags = append(row.flags, strings.TrimPrefix(m[1], "-"))
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			row.envs = append(row.envs, m[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// TestReadmeFlagTable keeps README's flag table and the binary's flags one
// set: every flag is a row naming the environment variable the binary reads
// for it, and every row's flag exists. -version is a command, not a
// setting, and is described in the prose under the table.
func TestReadmeFlagTable(t *testing.T) {
	flags := usageFlags(t)
	documented := map[string]bool{}
	for _, row := range readmeFlagTable(t) {
		for _, f := range row.flags {
			documented[f] = true
			env, ok := flags[f]
			if !assert.True(t, ok, "README's flag table has -%s, which the binary does not define", f) {
				continue
			}
			assert.Contains(t, row.envs, env, "README's row for -%s names its environment variable %s", f, env)
		}
	}
	for f := range flags {
		if f != "version" {
			assert.True(t, documented[f], "-%s is missing from README's flag table", f)
		}
	}
}

// TestEveryFlagNamesTheEnvironmentVariableItReads checks the "(env ...)"
// each flag's help gives, some written by hand, against the name
// parseConfig reads: VASTFAKE_ and the flag name, plural for a repeatable
// flag.
func TestEveryFlagNamesTheEnvironmentVariableItReads(t *testing.T) {
	repeatable := []string{"topic", "rule", "user", "policy", "offset-gap"}
	for f, env := range usageFlags(t) {
		if f == "version" {
			assert.Empty(t, env, "-version is not a setting")
			continue
		}
		want := envName(f)
		if slices.Contains(repeatable, f) {
			want += "S"
			if base, ok := strings.CutSuffix(want, "YS"); ok {
				want = base + "IES"
			}
		}
		assert.Equal(t, want, env, "-%s's help names the environment variable parseConfig reads", f)
	}
}
