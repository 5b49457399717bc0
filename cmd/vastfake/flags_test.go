package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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

// readmeFlagTable returns the rows of the docs' flag tables (README.md's
// and any docs/ page's): each row's flags and the environment variables it
// names.
func readmeFlagTable(t *testing.T) (rows []struct{ flags, envs []string }) {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	const header = "| flag | env | default | meaning |\n| --- | --- | --- | --- |\n"
	found := false
	for _, path := range append([]string{"../../README.md"}, pages...) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		rest := string(data)
		for {
			var table string
			var ok bool
			_, table, ok = strings.Cut(rest, header)
			if !ok {
				break
			}
			found = true
			table, rest, _ = strings.Cut(table, "\n\n")
			rows = append(rows, flagRows(t, table)...)
		}
	}
	require.True(t, found, "README.md or a docs/ page has the flag table")
	return rows
}

// flagRows parses the rows of one flag table.
func flagRows(t *testing.T, table string) (rows []struct{ flags, envs []string }) {
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

// TestReadmeFlagTable keeps the flag table of docs/binary.md and the binary's flags one
// set: every flag is a row naming the environment variable the binary reads
// for it, and every row's flag exists. The commands (-version,
// -healthcheck) are no settings: each has its own paragraph.
func TestReadmeFlagTable(t *testing.T) {
	t.Parallel()
	flags := usageFlags(t)
	documented := map[string]bool{}
	for _, row := range readmeFlagTable(t) {
		for _, f := range row.flags {
			documented[f] = true
			env, ok := flags[f]
			if !assert.True(t, ok, "docs/binary.md's flag table has -%s, which the binary does not define", f) {
				continue
			}
			assert.Contains(t, row.envs, env, "docs/binary.md's row for -%s names its environment variable %s", f, env)
		}
	}
	for f := range flags {
		if !commands[f] {
			assert.True(t, documented[f], "-%s is missing from docs/binary.md's flag table", f)
		}
	}
	data, err := os.ReadFile("../../docs/binary.md")
	require.NoError(t, err)
	for name := range commands {
		assert.Contains(t, string(data), "- `-"+name+"` ", "docs/binary.md says what the command -%s does", name)
	}
}

// TestEveryFlagNamesTheEnvironmentVariableItReads checks the "(env ...)"
// each flag's help gives, some written by hand, against the name
// parseConfig reads: VASTFAKE_ and the flag name, plural for a repeatable
// flag.
func TestEveryFlagNamesTheEnvironmentVariableItReads(t *testing.T) {
	t.Parallel()
	repeatable := []string{"topic", "rule", "user", "policy", "offset-gap"}
	for f, env := range usageFlags(t) {
		if commands[f] {
			assert.Empty(t, env, "-%s is not a setting", f)
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

// flagSamples gives every setting a value other than its default, with any
// flag it needs beside it (-tls-key goes with -tls-cert).
var flagSamples = map[string][][2]string{
	"listen":                    {{"listen", "127.0.0.1:1234"}},
	"advertise":                 {{"advertise", "kafka.example:9092"}},
	"profile":                   {{"profile", "kafka"}},
	"kafka-version":             {{"kafka-version", "4.0"}},
	"audit-report":              {{"audit-report", "vast-audit"}},
	"topic":                     {{"topic", "orders:3"}},
	"rule":                      {{"rule", "MaxGroups=7"}},
	"initial-rebalance-delay":   {{"initial-rebalance-delay", "2s"}},
	"min-session-timeout":       {{"min-session-timeout", "1s"}},
	"max-session-timeout":       {{"max-session-timeout", "1m"}},
	"stale-end-offset":          {{"stale-end-offset", "3s"}},
	"num-partitions":            {{"num-partitions", "3"}},
	"brokers":                   {{"brokers", "3"}},
	"offset-metadata-max-bytes": {{"offset-metadata-max-bytes", "10"}},
	"retention-check-interval":  {{"retention-check-interval", "2s"}},
	"compaction-interval":       {{"compaction-interval", "2s"}},
	"idle-timeout":              {{"idle-timeout", "1m"}},
	"producer-id-expiration":    {{"producer-id-expiration", "1h"}},
	"empty-fetch-delay":         {{"empty-fetch-delay", "5ms"}},
	"offset-gap":                {{"offset-gap", "orders:2"}},
	"manual-clock":              {{"manual-clock", "true"}},
	"fetch-detail":              {{"fetch-detail", "true"}},
	"exit-on-stdin-close":       {{"exit-on-stdin-close", "true"}},
	"http":                      {{"http", "127.0.0.1:0"}},
	"http-token":                {{"http-token", "secret"}},
	"http-allow-hosts":          {{"http-allow-hosts", "vastfake,broker"}},
	"ready-file":                {{"ready-file", "/tmp/ready"}},
	"log-level":                 {{"log-level", "debug"}},
	"log-format":                {{"log-format", "json"}},
	"user":                      {{"user", "app:pw"}},
	"policy":                    {{"policy", "deny app KafkaWrite vast:kafka:topic:vastfake:audit"}},
	"default-deny":              {{"default-deny", "true"}},
	"view":                      {{"view", "prod"}},
	"tls-cert":                  {{"tls-cert", "cert.pem"}, {"tls-key", "key.pem"}},
	"tls-key":                   {{"tls-cert", "cert.pem"}, {"tls-key", "key.pem"}},

	// Several brokers, kafka profile.
	"election-delay":              {{"election-delay", "0s"}},
	"consumer-session-timeout":    {{"consumer-session-timeout", "10s"}},
	"consumer-heartbeat-interval": {{"consumer-heartbeat-interval", "1s"}},
	"default-replication-factor":  {{"default-replication-factor", "2"}},
}

// TestEverySettingFromEverySource sets each flag once from the command
// line, once from its environment variable and once from the config file,
// and checks that the three give the same configuration, and not the
// default one: a flag whose environment variable or config key is read
// differently, or not at all, fails here.
func TestEverySettingFromEverySource(t *testing.T) {
	flags := usageFlags(t)
	def, err := parseConfig(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	withoutSources(def)
	for name := range flags {
		if commands[name] || name == "config" { // a command; the config file itself
			continue
		}
		sample, ok := flagSamples[name]
		if !assert.True(t, ok, "add a sample value for -%s to flagSamples", name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var args []string
			file := map[string]any{}
			for _, kv := range sample {
				args = append(args, "-"+kv[0]+"="+kv[1])
				if kv[1] == "true" {
					file[kv[0]] = true
				} else {
					file[kv[0]] = kv[1]
				}
			}
			fromFlags, err := parseConfig(args, io.Discard, io.Discard)
			require.NoError(t, err)
			withoutSources(fromFlags)
			assert.NotEqual(t, def, fromFlags, "-%s %s changes the configuration", name, sample[0][1])

			path := filepath.Join(t.TempDir(), "vastfake.json")
			data, err := json.Marshal(file)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data, 0o644))
			fromFile, err := parseConfig([]string{"-config", path}, io.Discard, io.Discard)
			require.NoError(t, err)
			withoutSources(fromFile)
			assert.Equal(t, fromFlags, fromFile, "the config file key %q reads as the flag does", name)

			for _, kv := range sample {
				t.Setenv(flags[kv[0]], kv[1])
			}
			fromEnv, err := parseConfig(nil, io.Discard, io.Discard)
			require.NoError(t, err)
			withoutSources(fromEnv)
			assert.Equal(t, fromFlags, fromEnv, "%s reads as the flag does", flags[name])
		})
	}
}

// withoutSources forgets where cfg's settings came from, which differs
// between sources giving the same configuration.
func withoutSources(cfg *config) {
	cfg.sources, cfg.topicItems = nil, nil
}
