package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// rsyslogLines is how many lines the rsyslog and syslog-ng tests log.
const rsyslogLines = 200

// TestAuditRsyslog runs Debian's rsyslog unchanged against the audit
// profile at three brokers, as a user shipping logs through VAST would:
// imfile reads a log file into omkafka, and imkafka reads the topic back
// in a consumer group into omfile. Both send librdkafka's default client
// id "rdkafka". At rsyslog's defaults omkafka produces uncompressed, so
// the user's omkafka sets compression.codec=gzip, as many do: the report
// finds NoCompression and says how in rsyslog's own confParam form. Rerun
// with that advice applied word for word, the report has no findings. The
// imkafka group's errors are routine steps of a healthy group.
func TestAuditRsyslog(t *testing.T) {
	t.Parallel()
	rsyslogd := needApp(t, "apt-get install rsyslog rsyslog-kafka", "rsyslogd", "/usr/sbin/rsyslogd")
	if m, _ := filepath.Glob("/usr/lib/*/rsyslog/omkafka.so"); len(m) == 0 {
		missingApp(t, "rsyslog's omkafka and imkafka (apt-get install rsyslog-kafka)")
	}

	rep := runRsyslog(t, rsyslogd, `confParam=["compression.codec=gzip"]`)
	f := librdkafkaCompression(t, rep)
	const advice = `in omkafka, set confParam=["compression.type=none"]`
	assert.Contains(t, f.Advice, "rsyslog: "+advice)
	assertRoutineGroup(t, rep, "rsyslog")

	rep = runRsyslog(t, rsyslogd, `confParam=["compression.type=none"]`)
	assert.Empty(t, rep.Findings, "the advice applied clears the finding")
	assertRoutineGroup(t, rep, "rsyslog")
}

// runRsyslog runs rsyslogd with omkafkaParams on its omkafka action
// against a new audited broker until imkafka has written every line
// omkafka sent, stops it as a user does (SIGTERM) and returns the report.
func runRsyslog(t *testing.T, rsyslogd, omkafkaParams string) broker.AuditReport {
	t.Helper()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Brokers(3), fixtures.Topic("logs", 2))
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.log"), filepath.Join(dir, "out.log")
	require.NoError(t, os.WriteFile(in, nil, 0o644))
	// imkafka starts at the beginning (librdkafka's default is the end), so
	// that no line is lost to the time the group takes to form.
	conf := fmt.Sprintf(`global(workDirectory=%[1]q)
module(load="imfile")
module(load="omkafka")
module(load="imkafka")
input(type="imfile" file=%[2]q tag="app" ruleset="tokafka")
ruleset(name="tokafka") { action(type="omkafka" broker=[%[4]q] topic="logs" %[5]s) }
input(type="imkafka" broker=[%[4]q] topic="logs" consumergroup="rsyslog" confParam=["auto.offset.reset=smallest"] ruleset="fromkafka")
ruleset(name="fromkafka") { action(type="omfile" file=%[3]q) }
`, dir, in, out, k.Addr(), omkafkaParams)
	confPath := filepath.Join(dir, "rsyslog.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))

	d := startDaemon(t, nil, rsyslogd,
		"-n", "-f", confPath, "-i", filepath.Join(dir, "rsyslogd.pid"))
	d.waitFor(t, "imkafka's member in a stable group", func() bool {
		g := k.Group("rsyslog")
		return g.State == "Stable" && len(g.Members) == 1
	})
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(logLines(rsyslogLines))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	d.waitFor(t, fmt.Sprintf("%d lines through Kafka into omfile", rsyslogLines), func() bool {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), " shipped\n") == rsyslogLines
	})
	assert.Equal(t, rsyslogLines, topicRecords(k, "logs", 2))
	d.stop()
	rep := k.Broker().AuditReport()
	logFindings(t, "rsyslog with "+omkafkaParams, rep)
	return rep
}

// logFindings logs the report's findings and errors, for -v.
func logFindings(t *testing.T, run string, rep broker.AuditReport) {
	t.Helper()
	t.Logf("%s: %d findings, %d distinct errors", run, len(rep.Findings), len(rep.Errors))
	for _, f := range rep.Findings {
		t.Logf("  %s %s (%s, client id %q, %s %s): %s", f.Kind, f.Rule, f.ClientSoftware, f.ClientID, f.API, f.Topic+f.Group, f.Advice)
	}
	for _, e := range rep.Errors {
		t.Logf("  error %s %s x%d (routine %v, group %q)", e.API, e.Error, e.Count, e.Routine, e.Group)
	}
}

// assertRoutineGroup asserts that the report's errors are all routine
// steps of group's protocol and that its Markdown finds no failure.
func assertRoutineGroup(t *testing.T, rep broker.AuditReport, group string) {
	t.Helper()
	for _, e := range rep.Errors {
		assert.True(t, e.Routine, "a healthy group's errors are routine: %+v", e)
		assert.Equal(t, group, e.Group)
	}
	assert.NotContains(t, rep.Markdown(), "likely why an app fails")
}
