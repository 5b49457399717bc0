package broker

import (
	"crypto/tls"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vastfake/vastfake/rules"
)

// Start-up values, as a class: every field of the configuration New
// builds from its options is either bounded (hostileStart gives values New
// must refuse, each with a short error, having allocated little) or says
// why it needs no bound (unboundedStart). A field added without either
// fails here, as a route does in the control plane's
// TestEveryRouteBoundsTheNamesItStores. The binary checks its flags the
// same way (cmd/vastfake's TestEveryStartValueIsBounded), naming the flag.

const hostileStartBytes = 120 << 10

var hostileStart = map[string][]Option{
	"listen":       {WithListen(strings.Repeat("h", hostileStartBytes) + ":0"), WithListen("127.0.0.1:99999"), WithListen("127.0.0.1:-1")},
	"advertise":    {WithAdvertise("localhost:0"), WithAdvertise(":9092"), WithAdvertise(strings.Repeat("h", hostileStartBytes) + ":1")},
	"advertiseAll": {both(WithBrokers(2), WithAdvertiseBrokers("a:1", "b:0")), both(WithBrokers(2), WithAdvertiseBrokers("a:1"))},
	"brokers":      {WithBrokers(0), WithBrokers(MaxBrokers + 1), WithBrokers(math.MaxInt)},
	"nodeID":       {WithNodeID(-1), both(WithNodeID(math.MaxInt32), WithBrokers(2))},
	"clusterID":    {WithClusterID(strings.Repeat("c", hostileStartBytes))},
	"topics": {
		WithTopics(TopicSpec{Name: "t", Partitions: math.MaxInt32}),
		WithTopics(TopicSpec{Name: "a", Partitions: 6000}, TopicSpec{Name: "b", Partitions: 6000}),
		WithTopics(TopicSpec{Name: strings.Repeat("t", hostileStartBytes), Partitions: 1}),
		WithTopics(TopicSpec{Name: "t", Partitions: -5}),
	},
	"rebalDelay":          {WithInitialRebalanceDelay(-time.Second)},
	"cgSession":           {WithConsumerGroupTimeouts(time.Nanosecond, time.Nanosecond)},
	"cgInterval":          {WithConsumerGroupTimeouts(time.Second, time.Hour)},
	"cgMaxSize":           {WithConsumerGroupMaxSize(-1)},
	"partitions":          {WithDefaultPartitions(math.MaxInt32), WithDefaultPartitions(MaxPartitionsPerRequest + 1), WithDefaultPartitions(-1)},
	"minSession":          {WithMinSessionTimeout(-time.Second), WithMinSessionTimeout(time.Hour)},
	"maxSession":          {WithMaxSessionTimeout(-time.Second)},
	"maxOffsetMD":         {WithOffsetMetadataMaxBytes(-1)},
	"retentionEv":         {WithRetentionCheckInterval(time.Nanosecond), WithRetentionCheckInterval(-time.Second)},
	"compactionEv":        {WithCompactionInterval(time.Nanosecond), WithCompactionInterval(-time.Second)},
	"producerExp":         {WithProducerIDExpiration(-time.Second)},
	"gaps":                {WithOffsetGaps(OffsetGap{Topic: "t", Skip: math.MaxInt64})},
	"users":               {WithUsers(map[string]string{"": "pw"})},
	"policies":            {WithPolicies(Policy{Effect: "permit", User: "u", Action: KafkaRead, Resource: "vast:kafka:topic:v:t"})},
	"view":                {WithView(strings.Repeat("v", hostileStartBytes))},
	"tls":                 {WithTLS(&tls.Config{})},
	"idleTimeout":         {WithIdleTimeout(-time.Second)},
	"readTimeout":         {WithReadTimeout(-time.Second)},
	"emptyFetchDelay":     {WithEmptyFetchDelay(-time.Second)},
	"tlsHandshakeTimeout": {WithTLSHandshakeTimeout(-time.Second)},
	"electionDelay":       {WithElectionDelay(-time.Second)},
	"replicationFactor":   {WithDefaultReplicationFactor(-1), WithDefaultReplicationFactor(math.MaxInt16)},
	"rules":               {WithProfile("zookeeper")},
	"kafka":               {WithKafkaVersion(KafkaVersion{3, 9}), WithKafkaVersion(KafkaVersion{255, 255})},
}

var unboundedStart = map[string]string{
	"rulesSet":         "a flag beside rules",
	"clock":            "the caller's own clock",
	"logger":           "the caller's own logger; what it logs is clipped (clipHandler)",
	"defaultDeny":      "a boolean",
	"err":              "an option's own error, returned by New",
	"fetchDetail":      "a boolean",
	"decompressions":   "the capacity of a channel of empty structs, which costs nothing a slot; at least 1",
	"electionDelaySet": "a flag beside electionDelay",
	"wrapListener":     "tests only",
}

func TestEveryStartValueIsBounded(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(config{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		_, bounded := hostileStart[name]
		_, why := unboundedStart[name]
		assert.True(t, bounded || why, "config.%s: give hostileStart values New must refuse, or say in unboundedStart why it needs no bound", name)
	}
	for name, opts := range hostileStart {
		_, ok := typ.FieldByName(name)
		require.True(t, ok, "hostileStart names config.%s, which is gone", name)
		for i, o := range opts {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := New(WithProfile("kafka"), o)
			runtime.ReadMemStats(&after)
			if err == nil {
				b.Close()
			}
			if !assert.Error(t, err, "config.%s, hostile value %d: New refuses it", name, i) {
				continue
			}
			assert.LessOrEqual(t, len(err.Error()), 600, "config.%s: a short error: %.300s", name, err)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(24<<20), "config.%s, hostile value %d: allocated before refusing it", name, i)
		}
	}
}

// The view's and the cluster id's bound admits what it names.
func TestStartNamesAtTheirBound(t *testing.T) {
	t.Parallel()
	b, err := New(WithView(strings.Repeat("v", MaxStartName)), WithClusterID(strings.Repeat("c", MaxStartName)),
		WithRules(rules.Kafka()), WithTopics(TopicSpec{Name: "a", Partitions: MaxPartitionsPerRequest / 2}, TopicSpec{Name: "b", Partitions: MaxPartitionsPerRequest / 2}))
	require.NoError(t, err)
	b.Close()
}

// both is an option made of two.
func both(a, b Option) Option { return func(c *config) { a(c); b(c) } }
