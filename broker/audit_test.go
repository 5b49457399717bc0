package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/rules"
)

// TestAuditedAPIs: for every API a rule hides, the audit profile
// advertises and serves it when vastfake has a handler (and leaves it out
// when it has none), and names the rule so that each request for it is a
// finding; the VAST profile hides it. Capped APIs are advertised at the
// cap in both, and served above it only when audited.
func TestAuditedAPIs(t *testing.T) {
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
