package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// syslogNGRoot is where .ci/run unpacks Debian's syslog-ng-core and
// syslog-ng-mod-rdkafka (dpkg -x) when rsyslog is the installed one: the
// two packages conflict, as each is a system log daemon.
const syslogNGRoot = "/opt/syslog-ng"

// TestAuditSyslogNG runs Debian's syslog-ng unchanged against the audit
// profile at three brokers, as a user shipping a log file to VAST would:
// a file() source into its kafka-c() destination (Debian 12's syslog-ng
// 3.38 has no Kafka source). It sends librdkafka's default client id
// "rdkafka". At syslog-ng's defaults it produces uncompressed, so the
// user's destination sets compression.codec=gzip, as many do: the report
// finds NoCompression and says how in syslog-ng's own config() form.
// Rerun with that advice applied word for word, the report is clean.
func TestAuditSyslogNG(t *testing.T) {
	t.Parallel()
	syslogNG, env, args := needSyslogNG(t)

	rep := runSyslogNG(t, syslogNG, env, args, `config("compression.codec" => "gzip")`)
	f := librdkafkaCompression(t, rep)
	const advice = `in the kafka-c() destination, set config("compression.type" => "none")`
	assert.Contains(t, f.Advice, "syslog-ng: "+advice)
	assert.Empty(t, rep.Errors)
	assert.NotContains(t, rep.Markdown(), "likely why an app fails")

	rep = runSyslogNG(t, syslogNG, env, args, `config("compression.type" => "none")`)
	assert.Empty(t, rep.Findings, "the advice applied clears the finding")
	assert.Empty(t, rep.Errors)
}

// needSyslogNG returns syslog-ng with the environment and arguments it
// needs to run: installed, none; unpacked in syslogNGRoot, where its
// library and modules are. It skips the test (fails it under CI) when
// there is neither.
func needSyslogNG(t *testing.T) (path string, env, args []string) {
	t.Helper()
	unpacked := filepath.Join(syslogNGRoot, "usr", "sbin", "syslog-ng")
	path = needApp(t, "apt-get install syslog-ng-core syslog-ng-mod-rdkafka, or unpack both in "+syslogNGRoot+" as .ci/run does",
		"syslog-ng", "/usr/sbin/syslog-ng", unpacked)
	lib := filepath.Join(filepath.Dir(filepath.Dir(path)), "lib", "syslog-ng")
	if path == unpacked {
		env = []string{"LD_LIBRARY_PATH=" + lib}
	}
	modules, _ := filepath.Glob(filepath.Join(lib, "*", "libkafka.so"))
	if len(modules) == 0 {
		missingApp(t, "syslog-ng's kafka-c() destination (apt-get install syslog-ng-mod-rdkafka)")
	}
	if path == unpacked {
		args = []string{"--module-path=" + filepath.Dir(modules[0])}
	}
	return path, env, args
}

// runSyslogNG runs syslog-ng in the foreground with destParams in its
// kafka-c() destination against a new audited broker until every line of
// its source file is in the topic, stops it as a user does (SIGTERM) and
// returns the report.
func runSyslogNG(t *testing.T, syslogNG string, env, args []string, destParams string) broker.AuditReport {
	t.Helper()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Brokers(3), fixtures.Topic("logs", 2))
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	require.NoError(t, os.WriteFile(in, []byte(logLines(rsyslogLines)), 0o644))
	conf := fmt.Sprintf(`@version: 3.38
options { stats-freq(0); };
source s_file { file(%q follow-freq(0.1)); };
destination d_kafka { kafka-c(bootstrap-servers(%q) topic("logs") %s); };
log { source(s_file); destination(d_kafka); };
`, in, k.Addr(), destParams)
	confPath := filepath.Join(dir, "syslog-ng.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))

	d := startDaemon(t, env, syslogNG, append(args, "-F", "-f", confPath,
		"--persist-file", filepath.Join(dir, "syslog-ng.persist"),
		"--pidfile", filepath.Join(dir, "syslog-ng.pid"),
		"--control", filepath.Join(dir, "syslog-ng.ctl"))...)
	d.waitFor(t, fmt.Sprintf("%d lines in the topic", rsyslogLines), func() bool {
		return topicRecords(k, "logs", 2) >= rsyslogLines
	})
	d.stop()
	assert.Equal(t, rsyslogLines, topicRecords(k, "logs", 2))
	rep := k.Broker().AuditReport()
	logFindings(t, "syslog-ng with "+destParams, rep)
	return rep
}
