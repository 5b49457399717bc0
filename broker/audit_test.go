package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// TestAuditedAPIs: for every API a rule hides, the audit profile
// advertises and serves it when vastfake has a handler (and leaves it out
// when it has none), and names the rule so that each request for it is a
// finding; the VAST profile hides it. Capped APIs are advertised at the
// cap in both, and served above it only when audited.
func TestAuditedAPIs(t *testing.T) {
	t.Parallel()
	audit, err := New(WithProfile("audit"))
	require.NoError(t, err)
	defer audit.Close()
	vast, err := New(WithProfile("vast"))
	require.NoError(t, err)
	defer vast.Close()
	for _, a := range apiTable {
		if a.hiddenBy == "" && a.capBy == "" {
			assert.Zero(t, audit.auditedBy[a.key], "key %d", a.key)
			continue
		}
		id := tableRule(cmpOr(a.hiddenBy, a.capBy))
		assert.Equal(t, id, audit.auditedBy[a.key], "key %d", a.key)
		if a.hiddenBy != "" {
			assert.Equal(t, a.handle != nil, audit.apiByKey[a.key] != nil, "key %d is served in audit mode iff vastfake serves it", a.key)
			assert.Nil(t, vast.apiByKey[a.key], "key %d is hidden in the VAST profile", a.key)
			assert.Equal(t, a.hiddenBy, vast.hiddenBy[a.key])
			continue
		}
		assert.Equal(t, a.capTo, audit.apiByKey[a.key].advertised, "key %d", a.key)
		assert.Equal(t, a.max, audit.apiByKey[a.key].max, "key %d is served above the cap in audit mode", a.key)
		assert.Equal(t, a.capTo, vast.apiByKey[a.key].max, "key %d", a.key)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestFindingsBounded: distinct findings stop at maxFindings and are then
// only counted; a repeated finding counts up without growing; client input
// is clipped.
func TestFindingsBounded(t *testing.T) {
	t.Parallel()
	var a auditLog
	now := time.Unix(1_700_000_000, 0)
	for i := range maxFindings + 5 {
		a.record(findingKey{rule: rules.NoCompression, kind: rules.Refused, topic: "t-" + strconv.Itoa(i)}, func() string { return "compressed batch" }, now)
	}
	later := now.Add(time.Minute)
	a.record(findingKey{rule: rules.NoCompression, kind: rules.Refused, topic: "t-0"}, func() string { panic("described twice") }, later)
	assert.Len(t, a.order, maxFindings)
	assert.Equal(t, int64(5), a.dropped)
	assert.Equal(t, int64(2), a.order[0].Count)
	assert.Equal(t, now, a.order[0].First)
	assert.Equal(t, later, a.order[0].Last)

	b, err := New(WithProfile("audit"))
	require.NoError(t, err)
	defer b.Close()
	long := strings.Repeat("x", 10_000)
	b.recordFinding(&request{clientID: long}, rules.NoCompression, rules.Refused, long, "", func() string { return strings.Repeat("d", 10_000) })
	f := b.Findings()[0]
	assert.Less(t, len(f.ClientID), 300)
	assert.Less(t, len(f.Topic), 300)
	assert.LessOrEqual(t, len(f.Detail), maxLoggedMessage+len("…"))
	b.ResetFindings()
	assert.Empty(t, b.Findings())
}

// TestAdviceForEveryRule: every rule has general advice, and the client
// families are recognised from what clients send.
func TestAdviceForEveryRule(t *testing.T) {
	t.Parallel()
	for _, id := range rules.IDs() {
		assert.NotEmpty(t, advice(id, rules.Refused, ""), "rule %s", id)
		assert.NotEmpty(t, advice(id, rules.Refused, familyJava), "rule %s", id)
	}
	for software, family := range map[string]string{
		"librdkafka": familyLibrdkafka, "confluent-kafka-python": familyLibrdkafka, "confluent-kafka-go": familyLibrdkafka,
		"kgo": familyFranz, "sarama": familySarama, "apache-kafka-java": familyJava, "": "",
	} {
		assert.Equal(t, family, clientFamily(software, ""), software)
	}
	assert.Equal(t, familyKafkaJS, clientFamily("", "kafkajs"))
	assert.Equal(t, familyJava, clientFamily("", "consumer-billing-1"))
}

// TestTopicConfigTextsNameEveryVASTConfig: the VASTTopicConfigsOnly advice
// and refusal message name every topic config the VAST profile accepts,
// since both are built from the one list that decides it.
func TestTopicConfigTextsNameEveryVASTConfig(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("vast"))
	require.NoError(t, err)
	defer b.Close()
	_, code, msg := b.parseTopicConfigs(nil, "t", map[string]string{"segment.bytes": "1048576"})
	require.NotZero(t, code)
	keys := VASTTopicConfigs()
	require.Contains(t, keys, "cleanup.policy")
	for _, k := range keys {
		assert.Contains(t, advice(rules.VASTTopicConfigsOnly, rules.Refused, ""), k)
		assert.Contains(t, msg, k)
	}
}

// TestFingerprint: connections whose ApiVersions does not name the client
// are recognised by the versions they ask for, as measured with kafkajs
// 2.2.4, kafka-python 2.0.2 and kafka-go 0.4.51, and the advice then names
// that client's own setting whatever its client id.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	type step struct{ key, version int16 }
	for _, tc := range []struct {
		name  string
		steps []step
		want  string
	}{
		{"kafkajs", []step{{18, 2}, {3, 6}, {0, 7}}, "kafkajs"},
		{"kafka-python", []step{{18, 0}, {3, 0}, {3, 1}, {0, 7}}, "kafka-python"},
		{"kafka-go metadata", []step{{18, 0}, {3, 8}}, "kafka-go"},
		{"kafka-go produce connection", []step{{18, 0}, {18, 0}, {0, 8}}, "kafka-go"},
		{"kafka-python, a later connection", []step{{3, 1}, {0, 7}}, "kafka-python"},
		{"sarama before its Version 2.4", []step{{3, 7}, {0, 7}}, "sarama"},
		{"named in ApiVersions v3", []step{{18, 3}, {3, 12}}, ""},
		{"opens with Produce", []step{{0, 7}, {0, 7}}, ""},
		{"opens with Produce, then Metadata v1", []step{{0, 7}, {3, 1}}, "kafka-python"},
	} {
		c := &clientConn{}
		for _, s := range tc.steps {
			if c.software == "" && c.inferred == "" {
				c.fingerprint(s.key, s.version)
			}
		}
		assert.Equal(t, tc.want, c.inferred, tc.name)
		if tc.want != "" {
			sw, _ := c.softwareLabel()
			assert.Equal(t, tc.want, clientFamily(sw, "my-app"), tc.name)
		}
	}
	// The Java client names itself in ApiVersions v3+.
	assert.Equal(t, familyJava, clientFamily("apache-kafka-java", "my-app"))
	assert.Equal(t, "set compression.type=none", advice(rules.NoCompression, rules.Refused, familyJava))
	assert.Contains(t, advice(rules.NoCompression, rules.Refused, familyKafkaJS), "CompressionTypes.None")
	assert.Contains(t, advice(rules.NoCompression, rules.Refused, familyKafkaPy), "compression_type")
	assert.Contains(t, advice(rules.NoCompression, rules.Refused, familyKafkaGo), "Writer.Compression")
	assert.Contains(t, advice(rules.NoCompression, rules.Refused, familySarama), "sarama.CompressionNone")
}

// TestClientSoftwareMemory: a connection that shows nothing of itself is
// named from its client id's other connections, and the memory is bounded.
func TestClientSoftwareMemory(t *testing.T) {
	t.Parallel()
	var m clientSoftwareMemory
	m.remember("orders-app", "kafka-python (recognised by its requests)", "")
	sw, _ := m.lookup("orders-app")
	assert.Equal(t, "kafka-python (recognised by its requests)", sw)
	sw, _ = m.lookup("other")
	assert.Empty(t, sw)
	for i := range 3 * maxClientSoftware {
		m.remember(strconv.Itoa(i), "kgo", "1")
	}
	assert.LessOrEqual(t, len(m.m), maxClientSoftware)
	sw, _ = m.lookup(strconv.Itoa(3*maxClientSoftware - 1))
	assert.Equal(t, "kgo", sw, "the newest is kept")
}

// TestRefusalMessagesNameRuleAndAction: the request log's message of a
// request any rule refused names the rule and its action, whether the
// answer carried a message of its own (kept when it already does) or not.
func TestRefusalMessagesNameRuleAndAction(t *testing.T) {
	t.Parallel()
	for _, id := range rules.IDs() {
		for _, msg := range []string{"", "the view already has 256 consumer groups", id.Refusal("VAST refuses it", "")} {
			got := refusalMessage(id.String(), int16(kmsg.Metadata), msg)
			assert.Contains(t, got, "(rule "+id.String()+"): "+id.Action(), "%s %q", id, msg)
			assert.Equal(t, 1, strings.Count(got, "(rule "), got)
		}
	}
	assert.Equal(t, "not refused", refusalMessage("", 0, "not refused"))
}

// TestAppAdvice: advice for apps known by client id or software name
// speaks their configuration, and librdkafka's advice names the alias an
// app may use for the canonical key.
func TestAppAdvice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		software, clientID string
		rule               rules.ID
		want               string
	}{
		{"librdkafka", "rsyslog-omkafka", rules.NoCompression, `confParam=["compression.type=none"]`},
		{"librdkafka", "rdkafka", rules.NoCompression, "compression.codec is its alias"},
		{"librdkafka", "syslog-ng", rules.NoCompression, `config("compression.type" => "none")`},
		{"kcat", "rdkafka", rules.EagerAssignorsOnly, "-X partition.assignment.strategy=range"},
		{"kgo", "otel-collector", rules.NoCompression, "producer: {compression: none}"},
		{"kgo", "otel-collector", rules.NoIdempotence, "producer: {required_acks: 1} (YAML), its default"},
		{"kgo", "otel-collector", rules.NoIdempotence, "only with required_acks: all (-1)"},
		{"librdkafka", "syslog-ng", rules.NoCompression, "in the kafka-c() destination"},   // Debian 12's syslog-ng 3.38 has no kafka()
		{"kgo", "otel-collector", rules.NoFetchSessions, "VAST has no fetch sessions"},     // no app form: the general advice, not kgo code
		{"librdkafka", "otel-collector", rules.NoCompression, "set compression.type=none"}, // kcat named otel-collector: librdkafka's, no YAML
		{"librdkafka", "rdkafka", rules.NoCompression, `rsyslog: in omkafka, set confParam=["compression.type=none"]`},
		{"librdkafka", "rdkafka", rules.NoCompression, `syslog-ng: in the kafka-c() destination, set config("compression.type" => "none")`},
		{"librdkafka", "rdkafka", rules.NoCompression, "kcat: run kcat with -X compression.type=none"},
		{"librdkafka", "rdkafka", rules.NoCompression, "set the app's client.id to its name"},
		{"", "rsyslog", rules.MaxKeyBytes, "keep record keys at most 126 KB"},
	} {
		k := findingKey{rule: c.rule, kind: rules.Refused, software: c.software, clientID: c.clientID}
		assert.Contains(t, findingAdvice(k, "compressed batch (snappy)"), c.want, "%+v", c)
	}
	// Never one app's form to another library's client, nor app forms to
	// an app of the user's own.
	for _, c := range []struct{ software, clientID string }{{"librdkafka", "otel-collector"}, {"kgo", "rsyslog"}, {"kgo", "billing"}, {"librdkafka", "billing"}, {"kgo", "kgo"}, {"sarama", "sarama"}} {
		got := findingAdvice(findingKey{rule: rules.NoCompression, kind: rules.Refused, software: c.software, clientID: c.clientID}, "compressed batch (gzip)")
		for _, form := range []string{"YAML", "confParam", "config(", "run kcat"} {
			assert.NotContains(t, got, form, "%+v", c)
		}
	}
}

// TestAuditSideTablesAreBounded: the errors answered without a rule, the
// group forecast and the refusal-line limiter keep at most their bounds,
// however many distinct clients a test brings.
func TestAuditSideTablesAreBounded(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("audit"))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	for i := range maxErrorCounts + 10 {
		b.recordError(&request{clientID: "c" + strconv.Itoa(i)}, answerError{api: int16(kmsg.Metadata), code: 3}, func() string { return "x" }, nil)
	}
	rep := b.AuditReport()
	assert.Len(t, rep.Errors, maxErrorCounts)
	assert.Equal(t, int64(10), rep.ErrorsDropped)
	assert.Contains(t, rep.Markdown(), "10 more distinct errors not kept (the broker keeps 1000)")

	for i := range maxForecastClients + 10 {
		r := &request{b: b, clientID: "c" + strconv.Itoa(i)}
		for j := range keptGroupNames + 5 {
			r.GroupCreated("g" + strconv.Itoa(j))
		}
	}
	assert.Len(t, b.forecast.clients, maxForecastClients)
	for _, c := range b.forecast.clients {
		assert.Len(t, c.names, keptGroupNames)
		assert.Equal(t, keptGroupNames+5, c.created)
	}

	var l refusalLimiter
	now := time.Now()
	for i := range maxRefusalLines + 10 {
		_, ok := l.allow(refusalLineKey{rule: "NoCompression", clientID: strconv.Itoa(i)}, now)
		assert.True(t, ok, "a new key is logged")
	}
	assert.Len(t, l.lines, maxRefusalLines)
	_, ok := l.allow(refusalLineKey{rule: "NoCompression", clientID: "new"}, now.Add(refusalLineEvery))
	assert.True(t, ok)
	assert.Len(t, l.lines, 1, "keys quiet for a minute make room")
}
