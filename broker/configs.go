package broker

// Configs: topic configs and DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs.

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// The topic configs VAST supports (its management API's four, and
// cleanup.policy, which VAST's Kafka Protocol Support page lists as
// supported through topic compaction), with Kafka's defaults (VAST's
// retention default is 7 days, the same as Kafka's).
const (
	cfgRetentionMs     = "retention.ms"
	cfgRetentionBytes  = "retention.bytes"
	cfgCleanupPolicy   = "cleanup.policy"
	cfgTimestampType   = "message.timestamp.type"
	cfgBeforeMaxMs     = "message.timestamp.before.max.ms"
	cfgAfterMaxMs      = "message.timestamp.after.max.ms"
	cfgMaxMessageBytes = "max.message.bytes"
	cfgDeleteRetention = "delete.retention.ms"
	cfgMinLag          = "min.compaction.lag.ms"
	cfgDirtyRatio      = "min.cleanable.dirty.ratio"
	timestampCreate    = "CreateTime"
	timestampAppend    = "LogAppendTime"
	defaultRetention   = 7 * 24 * time.Hour
	unlimitedMillisSt  = "9223372036854775807"
)

// kafkaTopicConfigDefaults are the other topic configs Apache Kafka knows,
// accepted and stored in the kafka profile; the broker acts on
// max.message.bytes, retention.bytes and the compaction configs
// (delete.retention.ms, min.compaction.lag.ms, min.cleanable.dirty.ratio).
var kafkaTopicConfigDefaults = map[string]string{
	"compression.type":     "producer",
	cfgDeleteRetention:     "86400000",
	"file.delete.delay.ms": "60000",
	"flush.messages":       "9223372036854775807",
	"flush.ms":             "9223372036854775807",
	"follower.replication.throttled.replicas": "",
	"index.interval.bytes":                    "4096",
	"leader.replication.throttled.replicas":   "",
	"local.retention.bytes":                   "-2",
	"local.retention.ms":                      "-2",
	"max.compaction.lag.ms":                   "9223372036854775807",
	cfgMaxMessageBytes:                        "", // defaultFor answers the limit the rules enforce
	cfgDirtyRatio:                             "0.5",
	cfgMinLag:                                 "0",
	"min.insync.replicas":                     "1",
	"preallocate":                             "false",
	"remote.storage.enable":                   "false",
	"retention.bytes":                         "-1",
	"segment.bytes":                           "1073741824",
	"segment.index.bytes":                     "10485760",
	"segment.jitter.ms":                       "0",
	"segment.ms":                              "604800000",
	"unclean.leader.election.enable":          "false",
}

// vastTopicConfigDefaults are the topic configs VAST accepts, with their
// defaults: the one list that VASTTopicConfigsOnly, its refusal message, its
// audit advice and VASTTopicConfigs read.
var vastTopicConfigDefaults = map[string]string{
	cfgRetentionMs:   strconv.FormatInt(defaultRetention.Milliseconds(), 10),
	cfgCleanupPolicy: "delete",
	cfgTimestampType: timestampCreate,
	cfgBeforeMaxMs:   unlimitedMillisSt,
	cfgAfterMaxMs:    unlimitedMillisSt,
}

// VASTTopicConfigs returns, sorted, the topic configs the VAST profile
// accepts (rule VASTTopicConfigsOnly): CreateTopics, AlterConfigs and
// IncrementalAlterConfigs refuse any other key with INVALID_CONFIG.
func VASTTopicConfigs() []string {
	return slices.Sorted(maps.Keys(vastTopicConfigDefaults))
}

// vastTopicConfigList is VASTTopicConfigs as prose: "a, b and c".
func vastTopicConfigList() string {
	keys := VASTTopicConfigs()
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1]
}

// topicConfigTypes are the Kafka types of the topic configs that are not
// LONG, as DescribeConfigs v3+ reports them.
var topicConfigTypes = map[string]kmsg.ConfigType{
	"cleanup.policy": kmsg.ConfigTypeList,
	"follower.replication.throttled.replicas": kmsg.ConfigTypeList,
	"leader.replication.throttled.replicas":   kmsg.ConfigTypeList,
	"compression.type":                        kmsg.ConfigTypeString,
	cfgTimestampType:                          kmsg.ConfigTypeString,
	"min.cleanable.dirty.ratio":               kmsg.ConfigTypeDouble,
	"preallocate":                             kmsg.ConfigTypeBoolean,
	"remote.storage.enable":                   kmsg.ConfigTypeBoolean,
	"unclean.leader.election.enable":          kmsg.ConfigTypeBoolean,
	"index.interval.bytes":                    kmsg.ConfigTypeInt,
	cfgMaxMessageBytes:                        kmsg.ConfigTypeInt,
	"min.insync.replicas":                     kmsg.ConfigTypeInt,
	"segment.bytes":                           kmsg.ConfigTypeInt,
	"segment.index.bytes":                     kmsg.ConfigTypeInt,
}

// topicConfig is a topic's configs: the keys set explicitly, and the parsed
// values the broker acts on.
type topicConfig struct {
	set       map[string]string
	retention time.Duration // <= 0 keeps records forever
	// retentionBytes is retention.bytes: < 0 keeps records whatever
	// the partition's size.
	retentionBytes int64
	logAppendTime  bool
	beforeMaxMs    int64
	afterMaxMs     int64
	// maxMessageBytes is the topic's max.message.bytes, or -1 when it is
	// not set and the broker's message.max.bytes applies.
	maxMessageBytes int

	// cleanup.policy: compact compacts the topic (and refuses keyless
	// records); delete applies retention.ms.
	compact, delete bool
	// The compaction configs (see log.CompactOptions).
	deleteRetention  time.Duration
	minCompactionLag time.Duration
	minDirtyRatio    float64
}

// compactOptions are the topic's compaction configs at now.
func (c *topicConfig) compactOptions(now time.Time) log.CompactOptions {
	return log.CompactOptions{Now: now, DeleteRetention: c.deleteRetention,
		MinCompactionLag: c.minCompactionLag, MinDirtyRatio: c.minDirtyRatio}
}

// defaultFor returns the default value of a topic config key, and whether
// the key is allowed under the broker's rules.
func (b *Broker) defaultFor(key string) (string, bool) {
	if v, ok := vastTopicConfigDefaults[key]; ok {
		return v, true
	}
	if b.enforced(rules.VASTTopicConfigsOnly) {
		return "", false
	}
	if key == cfgMaxMessageBytes {
		return strconv.Itoa(b.messageMaxBytes()), true // the limit the broker enforces
	}
	v, ok := kafkaTopicConfigDefaults[key]
	return v, ok
}

// configResource names a resource of the config APIs: a topic or a broker.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// defaultTopicConfig is the config of a topic with no config set: Kafka's
// defaults, room for n explicit keys.
func defaultTopicConfig(n int) topicConfig {
	return topicConfig{
		set:             make(map[string]string, n),
		retention:       defaultRetention,
		retentionBytes:  -1,
		beforeMaxMs:     math.MaxInt64,
		afterMaxMs:      math.MaxInt64,
		maxMessageBytes: -1,
		delete:          true,
		deleteRetention: 24 * time.Hour,
		minDirtyRatio:   0.5,
	}
}

// parseTopicConfigs validates explicitly set configs and returns them parsed,
// or INVALID_CONFIG with a message. A key VASTTopicConfigsOnly forbids is
// recorded on r (nil for a seed topic) as refused by that rule; a value not
// of its key's Kafka type is refused (checkConfigValue).
func (b *Broker) parseTopicConfigs(r *request, topic string, set map[string]string) (topicConfig, int16, string) {
	c := defaultTopicConfig(len(set))
	for k, v := range set {
		_, vastKey := vastTopicConfigDefaults[k]
		if !vastKey && b.rules.VASTTopicConfigsOnly && b.vast(r, rules.VASTTopicConfigsOnly, rules.Refused, topic, "", func() string { return "topic config " + strconv.Quote(k) }) {
			return c, kerr.InvalidConfig.Code, rules.VASTTopicConfigsOnly.Refusal("VAST supports only "+vastTopicConfigList()+"; "+strconv.Quote(k)+" is not one", "")
		}
		if _, ok := b.defaultFor(k); !ok {
			return c, kerr.InvalidConfig.Code, "unknown topic config " + strconv.Quote(k)
		}
		switch k {
		case cfgRetentionMs:
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < -1 {
				return c, kerr.InvalidConfig.Code, "retention.ms must be an integer >= -1"
			}
			c.retention = time.Duration(ms) * time.Millisecond
			if ms == -1 || ms > int64(math.MaxInt64/time.Millisecond) {
				c.retention = 0
			}
		case cfgRetentionBytes:
			if msg := checkConfigValue(k, v); msg != "" {
				return c, kerr.InvalidConfig.Code, msg
			}
			c.retentionBytes, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		case cfgTimestampType:
			if v != timestampCreate && v != timestampAppend {
				return c, kerr.InvalidConfig.Code, "message.timestamp.type must be CreateTime or LogAppendTime"
			}
			c.logAppendTime = v == timestampAppend
		case cfgBeforeMaxMs, cfgAfterMaxMs:
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 {
				return c, kerr.InvalidConfig.Code, k + " must be an integer >= 0"
			}
			if k == cfgBeforeMaxMs {
				c.beforeMaxMs = ms
			} else {
				c.afterMaxMs = ms
			}
		case cfgMaxMessageBytes:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return c, kerr.InvalidConfig.Code, k + " must be an integer >= 0"
			}
			c.maxMessageBytes = int(n)
		case cfgCleanupPolicy:
			c.compact, c.delete = false, false
			for _, p := range listParts(v) {
				if p != "compact" && p != "delete" {
					return c, kerr.InvalidConfig.Code, "Invalid value " + p + " for configuration cleanup.policy: String must be one of: compact, delete"
				}
				c.compact = c.compact || p == "compact"
				c.delete = c.delete || p == "delete"
			}
		case cfgDeleteRetention, cfgMinLag:
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 {
				return c, kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + k + ": Value must be at least 0"
			}
			d := time.Duration(min(ms, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
			if k == cfgDeleteRetention {
				c.deleteRetention = d
			} else {
				c.minCompactionLag = d
			}
		case cfgDirtyRatio:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0 && f <= 1) {
				return c, kerr.InvalidConfig.Code, "Invalid value " + v + " for configuration " + k + ": Value must be no more than 1 and at least 0"
			}
			c.minDirtyRatio = f
		default:
			if msg := checkConfigValue(k, v); msg != "" {
				return c, kerr.InvalidConfig.Code, msg
			}
		}
		c.set[k] = v
	}
	return c, 0, ""
}

// compressionTypes are the values Kafka's compression.type takes.
var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// checkConfigValue checks a topic config's value against its Kafka type,
// as Kafka's ConfigDef does, and returns the message refusing it, or "".
// Every value a topic keeps is then a number, a boolean, a name from a
// fixed set or, for the replication throttle lists, "*" or
// partition:broker pairs: a client cannot make a topic keep free text.
func checkConfigValue(key, v string) string {
	invalid := func(why string) string {
		return "Invalid value " + v + " for configuration " + key + ": " + why
	}
	switch typ, ok := topicConfigTypes[key]; {
	case key == "compression.type":
		if !slices.Contains(compressionTypes, v) {
			return invalid("String must be one of: " + strings.Join(compressionTypes, ", "))
		}
	case !ok: // LONG
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return invalid("Not a number of type LONG")
		}
	case typ == kmsg.ConfigTypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
			return invalid("Not a number of type INT")
		}
	case typ == kmsg.ConfigTypeDouble:
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return invalid("Not a number of type DOUBLE")
		}
	case typ == kmsg.ConfigTypeBoolean:
		if t := strings.ToLower(strings.TrimSpace(v)); t != "true" && t != "false" {
			return invalid("Expected value to be either true or false")
		}
	case typ == kmsg.ConfigTypeList: // the replication throttle lists
		parts := listParts(v)
		if len(parts) == 1 && parts[0] == "*" {
			return ""
		}
		for _, p := range parts {
			part, broker, ok := strings.Cut(p, ":")
			if _, err := strconv.ParseUint(part, 10, 31); err != nil || !ok {
				return invalid("must be the literal '*' or a list of replicas in the format [PartitionId]:[BrokerId],[PartitionId]:[BrokerId],...")
			}
			if _, err := strconv.ParseUint(broker, 10, 31); err != nil {
				return invalid("must be the literal '*' or a list of replicas in the format [PartitionId]:[BrokerId],[PartitionId]:[BrokerId],...")
			}
		}
	}
	return ""
}

// listParts splits a LIST config's value at commas, trimming spaces and
// leaving out empty parts, as Kafka does.
func listParts(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// describeTopicConfigs lists a topic's configs, every key the rules allow
// when names is empty or only those named, sorted by name and each once, as
// Kafka filters its configs by the names asked.
func describeTopicConfigs(b *Broker, c topicConfig, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	keys := slices.Clone(names)
	sort.Strings(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		for k := range vastTopicConfigDefaults {
			keys = append(keys, k)
		}
		if !b.enforced(rules.VASTTopicConfigsOnly) {
			for k := range kafkaTopicConfigDefaults {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range keys {
		def, ok := b.defaultFor(k)
		if !ok {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = k
		if v, set := c.set[k]; set {
			e.Value = kmsg.StringPtr(v)
			e.Source = kmsg.ConfigSourceDynamicTopicConfig
		} else {
			e.Value = kmsg.StringPtr(def)
			e.Source = kmsg.ConfigSourceDefaultConfig
			e.IsDefault = true
		}
		if synonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = e.Name, e.Value, e.Source
			e.ConfigSynonyms = append(e.ConfigSynonyms, s)
		}
		e.ConfigType = kmsg.ConfigTypeLong
		if t, ok := topicConfigTypes[k]; ok {
			e.ConfigType = t
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigs are the read-only broker configs DescribeConfigs reports;
// they reflect the rules in force.
func (b *Broker) brokerConfigs() map[string]string {
	autoCreate := "true"
	if b.enforced(rules.NoAutoCreateTopics) {
		autoCreate = "false"
	}
	offsetsRetention := "10080"
	if b.enforced(rules.OffsetsNeverExpire) {
		offsetsRetention = "-1"
	} else if b.rules.OffsetsRetention > 0 {
		offsetsRetention = strconv.FormatInt(int64(b.rules.OffsetsRetention/time.Minute), 10)
	}
	return map[string]string{
		"message.max.bytes":                strconv.Itoa(b.messageMaxBytes()),
		"auto.create.topics.enable":        autoCreate,
		"num.partitions":                   strconv.Itoa(int(b.cfg.partitions)),
		"offsets.retention.minutes":        offsetsRetention,
		"group.initial.rebalance.delay.ms": strconv.FormatInt(b.cfg.rebalDelay.Milliseconds(), 10),
		"group.min.session.timeout.ms":     strconv.FormatInt(b.cfg.minSession.Milliseconds(), 10),
		"group.max.session.timeout.ms":     strconv.FormatInt(cmp.Or(b.cfg.maxSession.Milliseconds(), math.MaxInt32), 10), // 0: no bound, Kafka's largest
		"connections.max.idle.ms":          strconv.FormatInt(b.cfg.idleTimeout.Milliseconds(), 10),
		"log.retention.ms":                 strconv.FormatInt(defaultRetention.Milliseconds(), 10),
		"producer.id.expiration.ms":        strconv.FormatInt(cmp.Or(b.cfg.producerExp.Milliseconds(), math.MaxInt32), 10), // 0: never, Kafka's largest
		"default.replication.factor":       strconv.Itoa(int(b.replicationFactorConfig())),
		"broker.session.timeout.ms":        strconv.FormatInt(b.electionDelay().Milliseconds(), 10),
	}
}

// handleDescribeConfigs answers DescribeConfigs v1-v4 for topics and the
// broker.
//
// v1 adds synonyms and sources, v3 config types and documentation. No
// config names (null or empty) means every config; a name asked twice is
// answered once. A resource listed more than once is answered once, with
// the configs any of its copies asked for: Kafka answers each copy, but
// clients key the answers by resource, and one answer per copy would let a
// small request ask for a huge response.
// VAST: a topic reports only its five VAST configs (VASTTopicConfigsOnly).
// Authorizes: KafkaDescribeConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleDescribeConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	var order []configResource
	names := make(map[configResource][]string) // nil: every config
	for _, rr := range req.Resources {
		res := configResource{rr.ResourceType, rr.ResourceName}
		prev, seen := names[res]
		switch {
		case !seen:
			order = append(order, res)
			names[res] = nil
			if len(rr.ConfigNames) > 0 {
				names[res] = slices.Clone(rr.ConfigNames)
			}
		case len(prev) == 0 || len(rr.ConfigNames) == 0:
			names[res] = nil
		default:
			names[res] = append(prev, rr.ConfigNames...)
		}
	}
	for _, res := range order {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = res.typ, res.name
		switch res.typ {
		case kmsg.ConfigResourceTypeTopic:
			if !b.allowTopic(r, KafkaDescribeConfigs, res.name) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			t := b.topicNamed(r, res.name)
			if t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			sr.Configs = describeTopicConfigs(b, t.config(), names[res], req.IncludeSynonyms)
		case kmsg.ConfigResourceTypeBroker:
			if !b.allowView(r, KafkaDescribeConfigs) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			if res.name != "" && !b.isBrokerName(res.name) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = kmsg.StringPtr("unknown broker " + res.name)
				break
			}
			cfgs := b.brokerConfigs()
			keys := names[res]
			if len(keys) == 0 {
				for k := range cfgs {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range slices.Compact(keys) {
				v, ok := cfgs[k]
				if !ok {
					continue
				}
				e := kmsg.NewDescribeConfigsResponseResourceConfig()
				e.Name, e.Value, e.ReadOnly = k, kmsg.StringPtr(v), true
				e.Source = kmsg.ConfigSourceStaticBrokerConfig
				sr.Configs = append(sr.Configs, e)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			b.describeGroupConfigs(r, &sr, res.name, names[res])
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = kmsg.StringPtr("vastfake describes topic, broker and group configs only")
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// alterChecks applies the checks Kafka makes on an AlterConfigs or
// IncrementalAlterConfigs request before looking at any config
// (ConfigAdminManager.preprocess): a resource listed twice gets
// INVALID_REQUEST, and so does a resource naming a key twice or giving no
// value for a key it does not delete. It returns, per resource, 0 or the
// code, with the message; the copies after the first of a resource listed
// twice get repeatCopy, which means "answered at its first copy": Kafka
// answers every copy, vastfake once.
const repeatCopy = -1

func alterChecks(n int, resource func(int) (kmsg.ConfigResourceType, string), keys func(int) (names, nullValues []string)) ([]int16, []string) {
	codes, msgs := make([]int16, n), make([]string, n)
	first := make(map[configResource]int, n)
	for i := 0; i < n; i++ {
		typ, name := resource(i)
		if j, dup := first[configResource{typ, name}]; dup {
			codes[j], msgs[j] = kerr.InvalidRequest.Code, "Each resource must appear at most once."
			codes[i] = repeatCopy
			continue
		}
		first[configResource{typ, name}] = i
	}
	for i := 0; i < n; i++ {
		if codes[i] != 0 {
			continue
		}
		names, nulls := keys(i)
		if len(duplicates(names, func(s string) string { return s })) > 0 {
			codes[i], msgs[i] = kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		} else if len(nulls) > 0 {
			codes[i], msgs[i] = kerr.InvalidRequest.Code, "Null value not supported for : "+strings.Join(nulls, ", ")
		}
	}
	return codes, msgs
}

// handleAlterConfigs answers AlterConfigs v0-v2: it replaces a topic's whole
// set of configs, as the legacy API does.
//
// A resource listed twice, a key named twice or a null value gets
// INVALID_REQUEST, as in Kafka; a resource listed twice is answered once.
// A value not of its key's Kafka type gets INVALID_CONFIG.
// VAST: only the five VAST topic configs (VASTTopicConfigsOnly).
// Authorizes: KafkaAlterConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleAlterConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	codes, msgs := alterChecks(len(req.Resources),
		func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		},
		func(i int) (names, nulls []string) {
			for _, c := range req.Resources[i].Configs {
				names = append(names, c.Name)
				if c.Value == nil {
					nulls = append(nulls, c.Name)
				}
			}
			return names, nulls
		})
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if codes[i] == repeatCopy {
			continue
		}
		if codes[i] != 0 {
			sr.ErrorCode, sr.ErrorMessage = codes[i], kmsg.StringPtr(msgs[i])
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		set := make(map[string]string)
		for _, c := range rr.Configs {
			set[c.Name] = *c.Value
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			sr.ErrorCode, sr.ErrorMessage = b.alterGroupConfigs(r, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, int16, string) { return set, 0, "" })
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if code := b.allowAlterConfigs(r, rr.ResourceType, rr.ResourceName); code != 0 {
			sr.ErrorCode = code
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		sr.ErrorCode, sr.ErrorMessage = b.alterTopicConfigs(r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, int16, string) { return set, 0, "" })
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// handleIncrementalAlterConfigs answers IncrementalAlterConfigs v0-v1: set,
// delete, append to and subtract from configs per key.
//
// APPEND and SUBTRACT apply to LIST configs (cleanup.policy and the
// replication-throttle lists) as in Kafka: the value is a comma-separated
// list, applied to the current value or the default; APPEND adds the
// elements not there yet, SUBTRACT removes them. On any other key they get
// INVALID_CONFIG. A resource listed twice, a key named twice or a null value
// to set gets INVALID_REQUEST, as in Kafka; a resource listed twice is
// answered once. A resulting value not of its key's Kafka type gets
// INVALID_CONFIG.
// VAST: only the five VAST topic configs (VASTTopicConfigsOnly), of which
// cleanup.policy is the one list.
// Authorizes: KafkaAlterConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleIncrementalAlterConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	codes, msgs := alterChecks(len(req.Resources),
		func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		},
		func(i int) (names, nulls []string) {
			for _, c := range req.Resources[i].Configs {
				names = append(names, c.Name)
				if c.Value == nil && c.Op != kmsg.IncrementalAlterConfigOpDelete {
					nulls = append(nulls, c.Name)
				}
			}
			return names, nulls
		})
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if codes[i] == repeatCopy {
			continue
		}
		if codes[i] != 0 {
			sr.ErrorCode, sr.ErrorMessage = codes[i], kmsg.StringPtr(msgs[i])
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			sr.ErrorCode, sr.ErrorMessage = b.alterGroupConfigs(r, rr.ResourceName, req.ValidateOnly, func(old map[string]string) (map[string]string, int16, string) {
				return editGroupConfigs(old, rr.Configs)
			})
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if code := b.allowAlterConfigs(r, rr.ResourceType, rr.ResourceName); code != 0 {
			sr.ErrorCode = code
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		sr.ErrorCode, sr.ErrorMessage = b.alterTopicConfigs(r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(old map[string]string) (map[string]string, int16, string) {
			return b.applyIncremental(r, old, rr.Configs)
		})
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// applyIncremental applies IncrementalAlterConfigs operations to a topic's
// explicit configs and returns the new set, or the code and message that
// refuse it, as Kafka's controller does (ConfigurationControlManager).
func (b *Broker) applyIncremental(r *request, old map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, int16, string) {
	next := maps.Clone(old)
	if next == nil {
		next = make(map[string]string)
	}
	for _, c := range ops {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			def, known := b.defaultFor(c.Name)
			if !known && b.enforced(rules.VASTTopicConfigsOnly) {
				// Let validation name the rule that forbids the key.
				next[c.Name] = *c.Value
				continue
			}
			if topicConfigTypes[c.Name] != kmsg.ConfigTypeList { // only LIST configs take APPEND and SUBTRACT
				return nil, kerr.InvalidConfig.Code, "Can't " + opName(c.Op) + " to key " + c.Name + " because its type is not LIST."
			}
			cur, set := next[c.Name]
			if !set {
				cur = def
			}
			// Both lists are parsed alike; SUBTRACT removes every
			// occurrence, as Kafka's removeAll does.
			parts := listParts(cur)
			for _, v := range listParts(*c.Value) {
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					parts = slices.DeleteFunc(parts, func(p string) bool { return p == v })
				} else if !slices.Contains(parts, v) {
					parts = append(parts, v)
				}
			}
			next[c.Name] = strings.Join(parts, ",")
		default:
			return nil, kerr.InvalidRequest.Code, "unknown config operation " + strconv.Itoa(int(c.Op))
		}
	}
	return next, 0, ""
}

// opName names an incremental config operation as Kafka's OpType does.
func opName(op kmsg.IncrementalAlterConfigOp) string {
	if op == kmsg.IncrementalAlterConfigOpSubtract {
		return "SUBTRACT"
	}
	return "APPEND"
}

// allowAlterConfigs checks KafkaAlterConfigs on a config resource: a topic,
// or the view for the broker. It returns 0 or the authorization error.
func (b *Broker) allowAlterConfigs(r *request, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.allowTopic(r, KafkaAlterConfigs, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker:
		if !b.allowView(r, KafkaAlterConfigs) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// alterTopicConfigs computes a topic's new explicit configs with edit,
// validates them and, unless validateOnly, applies them.
func (b *Broker) alterTopicConfigs(r *request, typ kmsg.ConfigResourceType, name string, validateOnly bool, edit func(map[string]string) (map[string]string, int16, string)) (int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("vastfake alters topic configs only; broker configs are fixed at start")
	}
	t := b.topicNamed(r, name)
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	t.cfgMu.Lock()
	defer t.cfgMu.Unlock()
	set, code, msg := edit(t.cfg.set)
	if code != 0 {
		return code, kmsg.StringPtr(msg)
	}
	next, code, msg := b.parseTopicConfigs(r, t.name, set)
	if code != 0 {
		return code, kmsg.StringPtr(msg)
	}
	if t.internal {
		pinOffsetsCompaction(&next) // accepted as Kafka does, bounded as memory needs (offsetsbound.go)
	}
	if !validateOnly {
		t.cfg = next
	}
	return 0, nil
}

// messageMaxBytes is the broker's message.max.bytes: VAST's cap while
// MaxMessageBytes is enforced, else Kafka's default.
func (b *Broker) messageMaxBytes() int {
	if b.enforced(rules.MaxMessageBytes) {
		return b.rules.MessageMaxBytes()
	}
	return rules.KafkaMessageMaxBytes
}
