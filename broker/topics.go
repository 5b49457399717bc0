package broker

// Topics: Metadata, CreateTopics, DeleteTopics, CreatePartitions, and the
// store of topics they act on.

import (
	"crypto/rand"
	"sort"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
)

// topic is one topic: its partitions' logs and its configs.
type topic struct {
	name       string
	id         [16]byte
	partitions []*log.Partition

	cfgMu sync.RWMutex
	cfg   topicConfig
}

func (t *topic) config() topicConfig {
	t.cfgMu.RLock()
	defer t.cfgMu.RUnlock()
	return t.cfg
}

// partition returns the log of partition p, or nil if there is none.
func (t *topic) partition(p int32) *log.Partition {
	if p < 0 || int(p) >= len(t.partitions) {
		return nil
	}
	return t.partitions[p]
}

// lookupPartition returns t's partition p, or the code Kafka answers when
// the topic (t is nil) or the partition is unknown: UNKNOWN_TOPIC_ID rather
// than UNKNOWN_TOPIC_OR_PARTITION for a topic the request named by id
// (Produce and Fetch v13+).
func lookupPartition(t *topic, p int32, byID bool) (*log.Partition, int16) {
	switch {
	case t == nil && byID:
		return nil, kerr.UnknownTopicID.Code
	case t == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	if part := t.partition(p); part != nil {
		return part, 0
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// store holds the topics. Lookups take a read lock; create and delete a
// write lock. A topic's partition slice is replaced, never mutated, when
// partitions are added, so a reader may keep a *topic without the lock.
type store struct {
	mu         sync.RWMutex
	byName     map[string]*topic
	byID       map[[16]byte]*topic
	partitions int // across all topics, for the per-view limit
}

func newStore() *store {
	return &store{byName: make(map[string]*topic), byID: make(map[[16]byte]*topic)}
}

func (s *store) get(name string) *topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byName[name]
}

func (s *store) getID(id [16]byte) *topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// all returns every topic sorted by name.
func (s *store) all() []*topic {
	s.mu.RLock()
	out := make([]*topic, 0, len(s.byName))
	for _, t := range s.byName {
		out = append(out, t)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// defaultPartitions is Kafka's num.partitions, used for -1 and auto-create.
const defaultPartitions = 1

// maxPartitionsPerRequest is Kafka's controller limit on the partitions one
// CreateTopics or CreatePartitions request may create
// (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH): over it the whole
// request gets POLICY_VIOLATION. CreateTopics applies it when no VAST view
// limit (MaxPartitionsPerView) bounds creation instead; without either, one
// request could ask for two billion partitions.
const maxPartitionsPerRequest = 10_000

// checkCreate validates a topic creation and returns its parsed configs,
// or the Kafka error code and message that refuse it.
func (b *Broker) checkCreate(name string, partitions int32, configs map[string]string) (int32, topicConfig, int16, string) {
	if !validTopicName(name) {
		return 0, topicConfig{}, kerr.InvalidTopicException.Code, "topic name is not legal"
	}
	if partitions == -1 {
		partitions = defaultPartitions
	}
	if partitions <= 0 {
		return 0, topicConfig{}, kerr.InvalidPartitions.Code, "partitions must be positive"
	}
	if code, msg := b.partitionLimits(int(partitions), 0); code != 0 {
		return 0, topicConfig{}, code, msg
	}
	cfg, code, msg := b.parseTopicConfigs(configs)
	if code != 0 {
		return 0, topicConfig{}, code, msg
	}
	return partitions, cfg, 0, ""
}

// partitionLimits checks a topic that would have topicTotal partitions, in
// a view that would then hold viewTotal, against VAST's limits
// (MaxPartitionsPerTopic, MaxPartitionsPerView); it returns 0 or
// INVALID_PARTITIONS with a message naming the rule.
func (b *Broker) partitionLimits(topicTotal, viewTotal int) (int16, string) {
	if max := b.rules.MaxPartitionsPerTopic; max > 0 && topicTotal > max {
		return kerr.InvalidPartitions.Code, "VAST allows at most " + itoa(max) + " partitions per topic (rule MaxPartitionsPerTopic)"
	}
	if max := b.rules.MaxPartitionsPerView; max > 0 && viewTotal > max {
		return kerr.InvalidPartitions.Code, "VAST allows at most " + itoa(max) + " partitions per view (rule MaxPartitionsPerView)"
	}
	return 0, ""
}

// createTopic creates a topic, or only validates it, and returns 0 or the
// Kafka error code that refused it, with a message saying why when there
// is more to say than the code.
func (b *Broker) createTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (int16, string) {
	n, cfg, code, msg := b.checkCreate(name, partitions, configs)
	if code != 0 {
		return code, msg
	}
	s := b.data
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return kerr.TopicAlreadyExists.Code, "topic " + name + " already exists"
	}
	if code, msg := b.partitionLimits(int(n), s.partitions+int(n)); code != 0 {
		return code, msg
	}
	if validateOnly {
		return 0, ""
	}
	t := &topic{name: name, cfg: cfg, partitions: make([]*log.Partition, n)}
	for i := range t.partitions {
		t.partitions[i] = log.NewPartition()
	}
	for {
		_, _ = rand.Read(t.id[:])
		if _, dup := s.byID[t.id]; !dup && t.id != [16]byte{} {
			break
		}
	}
	s.byName[name] = t
	s.byID[t.id] = t
	s.partitions += int(n)
	return 0, ""
}

// deleteTopic removes a topic and every group's committed offsets for it.
func (b *Broker) deleteTopic(t *topic) {
	s := b.data
	s.mu.Lock()
	if s.byName[t.name] == t {
		delete(s.byName, t.name)
		delete(s.byID, t.id)
		s.partitions -= len(t.partitions)
	}
	s.mu.Unlock()
	b.coord.TopicDeleted(t.name)
}

// topicID returns the id Metadata and CreateTopics report: zero when VAST's
// rule says topic IDs are unsupported.
func (b *Broker) topicID(t *topic) [16]byte {
	if b.rules.NoTopicIDs {
		return [16]byte{}
	}
	return t.id
}

// handleMetadata answers Metadata v0-v12.
//
// v1 adds controller id and null-for-all-topics, v2 the cluster id, v4
// AllowAutoTopicCreation, v7 leader epochs, v10 topic ids. One broker leads
// every partition with epoch 0.
// VAST: topics are never auto-created (NoAutoCreateTopics) and topic IDs are
// zero (NoTopicIDs).
// Authorizes: KafkaDescribe on each topic: a listing of all topics leaves
// out the ones the user may not describe, a named one gets
// TOPIC_AUTHORIZATION_FAILED; auto-creation (kafka profile) needs
// KafkaCreate on the topic or the view.
func handleMetadata(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = b.cfg.nodeID, b.host, b.port
	resp.Brokers = append(resp.Brokers, br)
	resp.ClusterID = &b.clusterID
	resp.ControllerID = b.cfg.nodeID

	var topics []*topic
	var missing []string
	all := req.Topics == nil || (r.version == 0 && len(req.Topics) == 0)
	var denied []string
	if all {
		for _, t := range b.data.all() {
			if b.allowTopic(r, KafkaDescribe, t.name) {
				topics = append(topics, t)
			}
		}
	} else {
		autoCreate := !b.rules.NoAutoCreateTopics && (r.version < 4 || req.AllowAutoTopicCreation)
		for _, rt := range req.Topics {
			var t *topic
			if rt.Topic != nil {
				if !b.allowTopic(r, KafkaDescribe, *rt.Topic) {
					denied = append(denied, *rt.Topic)
					continue
				}
				t = b.data.get(*rt.Topic)
				if t == nil && autoCreate && b.allowCreate(r, *rt.Topic) {
					if code, _ := b.createTopic(*rt.Topic, defaultPartitions, nil, false); code == 0 {
						t = b.data.get(*rt.Topic)
					}
				}
			} else {
				t = b.data.getID(rt.TopicID)
				if t != nil && !b.allowTopic(r, KafkaDescribe, t.name) {
					denied = append(denied, t.name)
					continue
				}
			}
			if t == nil {
				name := ""
				if rt.Topic != nil {
					name = *rt.Topic
				}
				missing = append(missing, name)
				continue
			}
			topics = append(topics, t)
		}
	}
	for _, t := range topics {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(t.name)
		mt.TopicID = b.topicID(t)
		mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.partitions))
		for i := range t.partitions {
			p := &mt.Partitions[i]
			*p = kmsg.NewMetadataResponseTopicPartition()
			p.Partition = int32(i)
			p.Leader = b.cfg.nodeID
			p.LeaderEpoch = 0
			p.Replicas = []int32{b.cfg.nodeID}
			p.ISR = []int32{b.cfg.nodeID}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	for _, name := range missing {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if name == "" {
			mt.Topic = nil
			mt.ErrorCode = kerr.UnknownTopicID.Code
		} else if !validTopicName(name) {
			mt.ErrorCode = kerr.InvalidTopicException.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	for _, name := range denied {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// allowCreate reports whether r's user may create topic: KafkaCreate on
// the topic or on the view.
func (b *Broker) allowCreate(r *request, topic string) bool {
	if !b.authz.active() {
		return true
	}
	return b.allow(r, KafkaCreate, TopicResource(b.cfg.view, topic), ViewResource(b.cfg.view))
}

// handleCreateTopics answers CreateTopics v2-v7.
//
// v1 adds ValidateOnly and error messages, v5 returns the topic's partitions,
// replication factor and configs, v7 its id. The replication factor is
// accepted and ignored (it is not a VAST concept; one broker holds every
// partition), as are replica assignments beyond their partition count.
// VAST: only the four VAST topic configs (VASTTopicConfigsOnly); partition
// limits per topic and per view (MaxPartitionsPerTopic/PerView).
// Authorizes: KafkaCreate on the topic or on the view
// (TOPIC_AUTHORIZATION_FAILED); a deny on either denies.
func handleCreateTopics(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	tooMany := false
	if b.rules.MaxPartitionsPerView == 0 {
		total := 0
		for _, rt := range req.Topics {
			switch {
			case len(rt.ReplicaAssignment) > 0:
				total += len(rt.ReplicaAssignment)
			case rt.NumPartitions == -1:
				total += defaultPartitions
			case rt.NumPartitions > 0:
				total += int(rt.NumPartitions)
			}
		}
		tooMany = total > maxPartitionsPerRequest
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		partitions := rt.NumPartitions
		if len(rt.ReplicaAssignment) > 0 {
			partitions = int32(len(rt.ReplicaAssignment))
		}
		configs := make(map[string]string, len(rt.Configs))
		for _, c := range rt.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		var code int16
		var msg string
		if seen[rt.Topic] > 1 {
			code, msg = kerr.InvalidRequest.Code, "topic listed more than once"
		} else if tooMany {
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		} else if !b.allowCreate(r, rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "denied by the identity policies: KafkaCreate on "+TopicResource(b.cfg.view, rt.Topic)
		} else {
			code, msg = b.createTopic(rt.Topic, partitions, configs, req.ValidateOnly)
		}
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		if code == 0 {
			if partitions == -1 {
				partitions = defaultPartitions
			}
			st.NumPartitions = partitions
			st.ReplicationFactor = rt.ReplicationFactor
			if st.ReplicationFactor == -1 {
				st.ReplicationFactor = 1
			}
			if t := b.data.get(rt.Topic); t != nil && !req.ValidateOnly {
				st.TopicID = b.topicID(t)
				for _, e := range describeTopicConfigs(b, t.config(), nil, false) {
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name, c.Value, c.Source = e.Name, e.Value, int8(e.Source)
					st.Configs = append(st.Configs, c)
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleDeleteTopics answers DeleteTopics v1-v6.
//
// v6 names topics by name or id. Deleting a topic deletes every group's
// committed offsets for it, as VAST documents [000] (and Kafka does).
// Authorizes: KafkaDelete on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleDeleteTopics(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	for _, n := range req.TopicNames {
		targets = append(targets, target{name: kmsg.StringPtr(n)})
	}
	for _, t := range req.Topics {
		targets = append(targets, target{name: t.Topic, id: t.TopicID})
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var t *topic
		if tg.name != nil {
			t = b.data.get(*tg.name)
		} else {
			t = b.data.getID(tg.id)
		}
		name := ""
		if tg.name != nil {
			name = *tg.name
		} else if t != nil {
			name = t.name
		}
		switch {
		case name != "" && !b.allowTopic(r, KafkaDelete, name):
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case t == nil && tg.name == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			b.deleteTopic(t)
			st.Topic = kmsg.StringPtr(t.name)
			st.TopicID = b.topicID(t)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleCreatePartitions answers CreatePartitions v0-v3, served only in the
// kafka profile.
//
// VAST: partitions are fixed at creation (FixedPartitions hides this API).
func handleCreatePartitions(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	grow := 0
	for _, rt := range req.Topics {
		if t := b.data.get(rt.Topic); t != nil && int(rt.Count) > len(t.partitions) {
			grow += int(rt.Count) - len(t.partitions)
		}
	}
	if grow > maxPartitionsPerRequest {
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.PolicyViolation.Code
			st.ErrorMessage = kmsg.StringPtr("Unable to perform excessively large batch operation.")
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		s := b.data
		s.mu.Lock()
		t := s.byName[rt.Topic]
		var limitCode int16
		var limitMsg string
		if t != nil {
			limitCode, limitMsg = b.partitionLimits(int(rt.Count), s.partitions+int(rt.Count)-len(t.partitions))
		}
		switch {
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case int(rt.Count) <= len(t.partitions):
			st.ErrorCode = kerr.InvalidPartitions.Code
			st.ErrorMessage = kmsg.StringPtr("the partition count can only grow")
		case limitCode != 0:
			st.ErrorCode, st.ErrorMessage = limitCode, kmsg.StringPtr(limitMsg)
		case req.ValidateOnly:
		default:
			grown := make([]*log.Partition, rt.Count)
			copy(grown, t.partitions)
			for i := len(t.partitions); i < len(grown); i++ {
				grown[i] = log.NewPartition()
			}
			s.partitions += len(grown) - len(t.partitions)
			// Replace the topic so readers holding the old one keep a
			// consistent partition slice.
			nt := &topic{name: t.name, id: t.id, partitions: grown, cfg: t.config()}
			s.byName[t.name] = nt
			s.byID[t.id] = nt
		}
		s.mu.Unlock()
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func itoa(n int) string { return strconv.Itoa(n) }
