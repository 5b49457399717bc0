package broker

// Configs: topic configs and DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs.

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topic configs VAST supports [API], with Kafka's defaults (VAST's
// retention default is 7 days, the same as Kafka's).
const (
	cfgRetentionMs     = "retention.ms"
	cfgTimestampType   = "message.timestamp.type"
	cfgBeforeMaxMs     = "message.timestamp.before.max.ms"
	cfgAfterMaxMs      = "message.timestamp.after.max.ms"
	cfgMaxMessageBytes = "max.message.bytes"
	timestampCreate    = "CreateTime"
	timestampAppend    = "LogAppendTime"
	defaultRetention   = 7 * 24 * time.Hour
	unlimitedMillisSt  = "9223372036854775807"
)

// kafkaTopicConfigDefaults are the other topic configs Apache Kafka knows,
// accepted and stored (but not acted on) in the kafka profile.
var kafkaTopicConfigDefaults = map[string]string{
	"cleanup.policy":                          "delete",
	"compression.type":                        "producer",
	"delete.retention.ms":                     "86400000",
	"file.delete.delay.ms":                    "60000",
	"flush.messages":                          "9223372036854775807",
	"flush.ms":                                "9223372036854775807",
	"follower.replication.throttled.replicas": "",
	"index.interval.bytes":                    "4096",
	"leader.replication.throttled.replicas":   "",
	"local.retention.bytes":                   "-2",
	"local.retention.ms":                      "-2",
	"max.compaction.lag.ms":                   "9223372036854775807",
	cfgMaxMessageBytes:                        "", // defaultFor answers the limit the rules enforce
	"min.cleanable.dirty.ratio":               "0.5",
	"min.compaction.lag.ms":                   "0",
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

var vastTopicConfigDefaults = map[string]string{
	cfgRetentionMs:   strconv.FormatInt(defaultRetention.Milliseconds(), 10),
	cfgTimestampType: timestampCreate,
	cfgBeforeMaxMs:   unlimitedMillisSt,
	cfgAfterMaxMs:    unlimitedMillisSt,
}

// topicConfig is a topic's configs: the keys set explicitly, and the parsed
// values the broker acts on.
type topicConfig struct {
	set           map[string]string
	retention     time.Duration // <= 0 keeps records forever
	logAppendTime bool
	beforeMaxMs   int64
	afterMaxMs    int64
	// maxMessageBytes is the topic's max.message.bytes, or -1 when it is
	// not set and the broker's message.max.bytes applies.
	maxMessageBytes int
}

// defaultFor returns the default value of a topic config key, and whether
// the key is allowed under the broker's rules.
func (b *Broker) defaultFor(key string) (string, bool) {
	if v, ok := vastTopicConfigDefaults[key]; ok {
		return v, true
	}
	if b.rules.VASTTopicConfigsOnly {
		return "", false
	}
	if key == cfgMaxMessageBytes {
		return strconv.Itoa(b.rules.MessageMaxBytes()), true // the limit the broker enforces
	}
	v, ok := kafkaTopicConfigDefaults[key]
	return v, ok
}

// parseTopicConfigs validates explicitly set configs and returns them parsed,
// or INVALID_CONFIG with a message.
func (b *Broker) parseTopicConfigs(set map[string]string) (topicConfig, int16, string) {
	c := topicConfig{
		set:             make(map[string]string, len(set)),
		retention:       defaultRetention,
		beforeMaxMs:     math.MaxInt64,
		afterMaxMs:      math.MaxInt64,
		maxMessageBytes: -1,
	}
	for k, v := range set {
		if _, ok := b.defaultFor(k); !ok {
			msg := "unknown topic config " + strconv.Quote(k)
			if b.rules.VASTTopicConfigsOnly {
				msg = "VAST supports only retention.ms, message.timestamp.type, message.timestamp.before.max.ms and message.timestamp.after.max.ms; " + strconv.Quote(k) + " is not one (rule VASTTopicConfigsOnly)"
			}
			return c, kerr.InvalidConfig.Code, msg
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
		}
		c.set[k] = v
	}
	return c, 0, ""
}

// describeTopicConfigs lists a topic's configs, every key the rules allow or
// only those named, sorted by name.
func describeTopicConfigs(b *Broker, c topicConfig, names []string, synonyms bool) []kmsg.DescribeConfigsResponseResourceConfig {
	keys := names
	if keys == nil {
		for k := range vastTopicConfigDefaults {
			keys = append(keys, k)
		}
		if !b.rules.VASTTopicConfigsOnly {
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
		switch k {
		case cfgTimestampType, "cleanup.policy", "compression.type":
			e.ConfigType = kmsg.ConfigTypeString
		default:
			e.ConfigType = kmsg.ConfigTypeLong
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigs are the read-only broker configs DescribeConfigs reports;
// they reflect the rules in force.
func (b *Broker) brokerConfigs() map[string]string {
	autoCreate := "true"
	if b.rules.NoAutoCreateTopics {
		autoCreate = "false"
	}
	offsetsRetention := "10080"
	if b.rules.OffsetsNeverExpire {
		offsetsRetention = "-1"
	} else if b.rules.OffsetsRetention > 0 {
		offsetsRetention = strconv.FormatInt(int64(b.rules.OffsetsRetention/time.Minute), 10)
	}
	return map[string]string{
		"message.max.bytes":                strconv.Itoa(b.rules.MessageMaxBytes()),
		"auto.create.topics.enable":        autoCreate,
		"num.partitions":                   strconv.Itoa(defaultPartitions),
		"offsets.retention.minutes":        offsetsRetention,
		"group.initial.rebalance.delay.ms": strconv.FormatInt(b.cfg.rebalDelay.Milliseconds(), 10),
		"log.retention.ms":                 strconv.FormatInt(defaultRetention.Milliseconds(), 10),
	}
}

// handleDescribeConfigs answers DescribeConfigs v1-v4 for topics and the
// broker.
//
// v1 adds synonyms and sources, v3 config types and documentation.
// VAST: a topic reports only its four VAST configs (VASTTopicConfigsOnly).
// Authorizes: KafkaDescribeConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleDescribeConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !b.allowTopic(r, KafkaDescribeConfigs, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				break
			}
			t := b.data.get(rr.ResourceName)
			if t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			sr.Configs = describeTopicConfigs(b, t.config(), rr.ConfigNames, req.IncludeSynonyms)
		case kmsg.ConfigResourceTypeBroker:
			if !b.allowView(r, KafkaDescribeConfigs) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				break
			}
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(b.cfg.nodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = kmsg.StringPtr("unknown broker " + rr.ResourceName)
				break
			}
			cfgs := b.brokerConfigs()
			keys := rr.ConfigNames
			if keys == nil {
				for k := range cfgs {
					keys = append(keys, k)
				}
				sort.Strings(keys)
			}
			for _, k := range keys {
				v, ok := cfgs[k]
				if !ok {
					continue
				}
				e := kmsg.NewDescribeConfigsResponseResourceConfig()
				e.Name, e.Value, e.ReadOnly = k, kmsg.StringPtr(v), true
				e.Source = kmsg.ConfigSourceStaticBrokerConfig
				sr.Configs = append(sr.Configs, e)
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = kmsg.StringPtr("vastfake describes topic and broker configs only")
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// handleAlterConfigs answers AlterConfigs v0-v2: it replaces a topic's whole
// set of configs, as the legacy API does.
//
// VAST: only the four VAST topic configs (VASTTopicConfigsOnly).
// Authorizes: KafkaAlterConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleAlterConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		set := make(map[string]string)
		for _, c := range rr.Configs {
			if c.Value != nil {
				set[c.Name] = *c.Value
			}
		}
		if code := b.allowAlterConfigs(r, rr.ResourceType, rr.ResourceName); code != 0 {
			sr.ErrorCode = code
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		sr.ErrorCode, sr.ErrorMessage = b.alterTopicConfigs(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(map[string]string) map[string]string { return set })
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// handleIncrementalAlterConfigs answers IncrementalAlterConfigs v0-v1: set
// and delete per key (append and subtract apply to list configs, which VAST
// topics have none of; they get INVALID_CONFIG).
//
// VAST: only the four VAST topic configs (VASTTopicConfigsOnly).
// Authorizes: KafkaAlterConfigs on each topic (TOPIC_AUTHORIZATION_FAILED)
// and, for the broker, on the view (CLUSTER_AUTHORIZATION_FAILED).
func handleIncrementalAlterConfigs(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code := b.allowAlterConfigs(r, rr.ResourceType, rr.ResourceName); code != 0 {
			sr.ErrorCode = code
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		var badOp bool
		for _, c := range rr.Configs {
			if c.Op != kmsg.IncrementalAlterConfigOpSet && c.Op != kmsg.IncrementalAlterConfigOpDelete {
				badOp = true
			}
		}
		if badOp {
			sr.ErrorCode = kerr.InvalidConfig.Code
			sr.ErrorMessage = kmsg.StringPtr("append and subtract apply only to list configs")
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		sr.ErrorCode, sr.ErrorMessage = b.alterTopicConfigs(rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(old map[string]string) map[string]string {
			next := make(map[string]string, len(old))
			for k, v := range old {
				next[k] = v
			}
			for _, c := range rr.Configs {
				if c.Op == kmsg.IncrementalAlterConfigOpDelete {
					delete(next, c.Name)
				} else if c.Value != nil {
					next[c.Name] = *c.Value
				}
			}
			return next
		})
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
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
func (b *Broker) alterTopicConfigs(typ kmsg.ConfigResourceType, name string, validateOnly bool, edit func(map[string]string) map[string]string) (int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("vastfake alters topic configs only; broker configs are fixed at start")
	}
	t := b.data.get(name)
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	t.cfgMu.Lock()
	defer t.cfgMu.Unlock()
	next, code, msg := b.parseTopicConfigs(edit(t.cfg.set))
	if code != 0 {
		return code, kmsg.StringPtr(msg)
	}
	if !validateOnly {
		t.cfg = next
	}
	return 0, nil
}
