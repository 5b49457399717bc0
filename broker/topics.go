package broker

// Topics: Metadata, CreateTopics, DeleteTopics, CreatePartitions, and the
// store of topics they act on.

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// topic is one topic: its partitions' logs and its configs.
type topic struct {
	name       string
	id         [16]byte
	partitions []*log.Partition
	// internal marks __consumer_offsets (kafka profile): Metadata lists it
	// with IsInternal, clients cannot write to it, and it counts towards
	// no partition limit.
	internal bool

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

// lookupWritable is lookupPartition for Produce and DeleteRecords: a
// partition of an internal topic gets INVALID_TOPIC_EXCEPTION, as Kafka's
// ReplicaManager answers a client writing to __consumer_offsets or deleting
// its records.
func lookupWritable(t *topic, p int32, byID bool) (*log.Partition, int16) {
	part, code := lookupPartition(t, p, byID)
	if part != nil && t.internal {
		return nil, kerr.InvalidTopicException.Code
	}
	return part, code
}

// store holds the topics. Lookups take a read lock; create and delete a
// write lock. A topic's partition slice is replaced, never mutated, when
// partitions are added, so a reader may keep a *topic without the lock.
type store struct {
	mem        *log.Memory // where every partition's chunks come from and go back to
	mu         sync.RWMutex
	byName     map[string]*topic
	byID       map[[16]byte]*topic
	partitions int // across all topics but internal ones, for the per-view limit
}

func newStore() *store {
	return &store{mem: new(log.Memory), byName: make(map[string]*topic), byID: make(map[[16]byte]*topic)}
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

// all returns every topic clients created or the broker was seeded with,
// sorted by name: not the internal __consumer_offsets, which inspection,
// retention and Reset leave alone.
func (s *store) all() []*topic { return s.sorted(false) }

// listed returns every topic Metadata lists, internal ones included, sorted
// by name.
func (s *store) listed() []*topic { return s.sorted(true) }

func (s *store) sorted(internal bool) []*topic {
	s.mu.RLock()
	out := make([]*topic, 0, len(s.byName))
	for _, t := range s.byName {
		if internal || !t.internal {
			out = append(out, t)
		}
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

// DefaultPartitions is Kafka's default num.partitions, the partition count
// of an auto-created topic and of CreateTopics asking for -1, unless
// WithDefaultPartitions sets another.
const DefaultPartitions = 1

// MaxPartitionsPerRequest is Kafka's controller limit on the partitions one
// CreateTopics or CreatePartitions request may create, and New's on the
// topics it creates (WithTopics) and on WithDefaultPartitions
// (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH): over it the whole
// request gets POLICY_VIOLATION. CreateTopics applies it when no VAST view
// limit (MaxPartitionsPerView) bounds creation instead; without either, one
// request could ask for two billion partitions.
const MaxPartitionsPerRequest = 10_000

// A TopicError is New's error for a topic of WithTopics it could not
// create: the Kafka error a CreateTopics asking for it would get.
type TopicError struct {
	Topic   string
	Code    string // the Kafka error's name, such as INVALID_CONFIG
	Message string // why, when there is more to say than the code
}

func (e *TopicError) Error() string {
	s := fmt.Sprintf("vastfake: topic %q: %s", clip(e.Topic), e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// checkSeedTotal checks the topics of WithTopics as a whole, as one
// CreateTopics request is checked: where no VAST view limit bounds
// creation (MaxPartitionsPerView), at most MaxPartitionsPerRequest
// partitions in all (the limits per topic and view are checkCreate's).
func (b *Broker) checkSeedTotal() error {
	if b.enforced(rules.MaxPartitionsPerView) {
		return nil
	}
	total := 0
	for _, t := range b.cfg.topics {
		n := int(t.Partitions)
		if n == -1 {
			n = int(b.cfg.partitions)
		}
		if total += max(n, 0); total > MaxPartitionsPerRequest {
			return &TopicError{Topic: t.Name, Code: errName(kerr.PolicyViolation.Code),
				Message: fmt.Sprintf("the topics to create at start have more than %d partitions in all, what one CreateTopics may create", MaxPartitionsPerRequest)}
		}
	}
	return nil
}

// The internal topic Kafka keeps committed offsets in, with its default
// partition count (offsets.topic.num.partitions) and the configs Kafka
// creates it with. vastfake lists it (unless the NoOffsetsTopic rule hides
// it) so that clients find what they find on Kafka, and writes every offset
// commit and group change to it (offsetstopic.go); the coordinator keeps
// the offsets it serves.
const (
	offsetsTopic           = "__consumer_offsets"
	offsetsTopicPartitions = 50
)

var offsetsTopicConfigs = map[string]string{
	"cleanup.policy":   "compact",
	"compression.type": "producer",
	"segment.bytes":    "104857600",
}

// topicNamed returns the topic a request names, or nil. Where the
// NoOffsetsTopic rule hides __consumer_offsets (VAST), a request naming it
// is recorded as refused by that rule, not as one naming a topic that
// happens not to exist. (Audited, the rule records its findings where the
// topic is read: Metadata and Fetch.)
func (b *Broker) topicNamed(r *request, name string) *topic {
	if name == offsetsTopic && b.enforced(rules.NoOffsetsTopic) {
		refuseFor(r, rules.NoOffsetsTopic.String(), offsetsTopic)
		return nil
	}
	return b.data.get(name)
}

// noOffsetsTopicMessage is the error message of a request refused because
// it names __consumer_offsets, where error messages are carried.
var noOffsetsTopicMessage = rules.NoOffsetsTopic.Refusal("VAST has no __consumer_offsets topic", "")

// refuseFor records on r that a VAST rule refused it, about topic; r is
// nil when the broker creates its seed topics, which no request asked for.
func refuseFor(r *request, rule, topic string) {
	if r != nil {
		r.refuse(rule)
		if r.refusedAbout == "" {
			r.refusedAbout = topic
		}
	}
}

// checkCreate validates a topic creation and returns its parsed configs,
// or the Kafka error code and message that refuse it. r is the request
// asking, or nil for a seed topic.
func (b *Broker) checkCreate(r *request, name string, partitions int32, configs map[string]string) (int32, topicConfig, int16, string) {
	if !validTopicName(name) {
		return 0, topicConfig{}, kerr.InvalidTopicException.Code, "topic name is not legal"
	}
	if name == offsetsTopic && b.enforced(rules.NoOffsetsTopic) {
		refuseFor(r, rules.NoOffsetsTopic.String(), offsetsTopic)
		return 0, topicConfig{}, kerr.InvalidRequest.Code, noOffsetsTopicMessage
	}
	if partitions == -1 {
		partitions = b.cfg.partitions
	}
	if partitions <= 0 {
		return 0, topicConfig{}, kerr.InvalidPartitions.Code, "partitions must be positive"
	}
	if code, msg := b.partitionLimits(r, name, int(partitions), 0); code != 0 {
		return 0, topicConfig{}, code, msg
	}
	cfg, code, msg := b.parseTopicConfigs(r, name, configs)
	if code != 0 {
		return 0, topicConfig{}, code, msg
	}
	return partitions, cfg, 0, ""
}

// partitionLimits checks a topic that would have topicTotal partitions, in
// a view that would then hold viewTotal, against VAST's limits
// (MaxPartitionsPerTopic, MaxPartitionsPerView); it returns 0 or
// INVALID_PARTITIONS with a message naming the rule, which it records on r
// (nil for a seed topic).
func (b *Broker) partitionLimits(r *request, topic string, topicTotal, viewTotal int) (int16, string) {
	if max := b.rules.MaxPartitionsPerTopic; max > 0 && topicTotal > max &&
		b.vast(r, rules.MaxPartitionsPerTopic, rules.Refused, topic, "", func() string { return itoa(topicTotal) + " partitions in one topic" }) {
		return kerr.InvalidPartitions.Code, rules.MaxPartitionsPerTopic.Refusal("VAST allows at most "+itoa(max)+" partitions per topic", "")
	}
	if max := b.rules.MaxPartitionsPerView; max > 0 && viewTotal > max &&
		b.vast(r, rules.MaxPartitionsPerView, rules.Refused, topic, "", func() string { return itoa(viewTotal) + " partitions in the view" }) {
		return kerr.InvalidPartitions.Code, rules.MaxPartitionsPerView.Refusal("VAST allows at most "+itoa(max)+" partitions per view", "")
	}
	return 0, ""
}

// createTopic creates a topic, or only validates it, and returns 0 or the
// Kafka error code that refused it, with a message saying why when there
// is more to say than the code. r is the request asking, or nil for a seed
// topic.
func (b *Broker) createTopic(r *request, name string, partitions int32, configs map[string]string, validateOnly bool) (int16, string) {
	n, cfg, code, msg := b.checkCreate(r, name, partitions, configs)
	if code != 0 {
		return code, msg
	}
	code, msg, created := b.addTopic(r, name, n, cfg, validateOnly)
	if created && b.coord != nil { // nil while New creates the seed topics
		// After s.mu is released: the coordinator reads the topics under
		// its own lock, which is taken before s.mu.
		b.coord.TopicsChanged(name)
	}
	return code, msg
}

// addTopic is createTopic's part under s.mu; created reports whether it
// stored a topic.
func (b *Broker) addTopic(r *request, name string, n int32, cfg topicConfig, validateOnly bool) (code int16, msg string, created bool) {
	s := b.data
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return kerr.TopicAlreadyExists.Code, "topic " + name + " already exists", false
	}
	if code, msg := b.partitionLimits(r, name, 0, s.partitions+int(n)); code != 0 { // checkCreate checked the topic's count
		return code, msg, false
	}
	if validateOnly {
		return 0, "", false
	}
	s.add(&topic{name: name, cfg: cfg, partitions: s.newPartitions(int(n))})
	return 0, "", true
}

func (s *store) newPartitions(n int) []*log.Partition {
	ps := make([]*log.Partition, n)
	for i := range ps {
		ps[i] = s.mem.NewPartition()
	}
	return ps
}

// add stores a new topic under a fresh random id. Call with s.mu held.
func (s *store) add(t *topic) {
	for {
		_, _ = rand.Read(t.id[:])
		if _, dup := s.byID[t.id]; !dup && t.id != [16]byte{} {
			break
		}
	}
	s.byName[t.name] = t
	s.byID[t.id] = t
	if !t.internal {
		s.partitions += len(t.partitions)
	}
}

// createOffsetsTopic creates the internal __consumer_offsets, empty, unless
// the NoOffsetsTopic rule hides it (VAST) or it exists.
func (b *Broker) createOffsetsTopic() {
	if b.enforced(rules.NoOffsetsTopic) {
		return
	}
	cfg := defaultTopicConfig(0)
	cfg.set = maps.Clone(offsetsTopicConfigs)
	// cleanup.policy=compact, as the configs above say: the log cleaner
	// and Compact treat it as the compacted topic it is.
	cfg.compact, cfg.delete = true, false
	s := b.data
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[offsetsTopic]; !ok {
		s.add(&topic{name: offsetsTopic, cfg: cfg, partitions: s.newPartitions(offsetsTopicPartitions), internal: true})
		for i := range b.offsetsState.compacted {
			b.offsetsState.compacted[i].Store(0) // the compaction threshold starts again from empty
		}
	}
}

// deleteTopic removes a topic and every group's committed offsets for it,
// and releases its partitions' memory for reuse by later topics (once
// fetch answers being written from it are done; see log.Partition.Release).
// Deleting the internal __consumer_offsets, which Kafka allows, loses every
// group's committed offsets, as on Kafka, and the broker creates it again
// at once, empty, as Kafka's coordinator does on the next FindCoordinator.
func (b *Broker) deleteTopic(t *topic) {
	s := b.data
	s.mu.Lock()
	removed := s.byName[t.name] == t
	if removed {
		delete(s.byName, t.name)
		delete(s.byID, t.id)
		if !t.internal {
			s.partitions -= len(t.partitions)
		}
	}
	s.mu.Unlock()
	if removed {
		b.forgetMoves(t.name)
	}
	// Released under appendMu, so that a produce that found a partition
	// before and appends after records no producer state for it.
	b.appendMu.Lock()
	for _, p := range t.partitions {
		if removed {
			p.Release()
		}
		b.producers.DropPartition(p)
	}
	b.appendMu.Unlock()
	b.notifyData()       // fetches waiting on the topic answer UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by ID)
	b.wakeHeldProduces() // and produces held for its in-sync replicas are answered
	b.coord.TopicDeleted(t.name)
	if t.internal {
		b.coord.Failover()
		b.createOffsetsTopic()
		b.coord.TopicsChanged(offsetsTopic) // it is there again, under a new id
		b.coordinatorsMoved()               // its partitions' leaders are the preferred ones again
	}
}

// topicByID returns the topic a request names by id, or nil. Under
// NoTopicIDs clients never learn an id (every id reported is zero), so a
// request naming one finds nothing and is recorded as refused by the rule.
func (b *Broker) topicByID(r *request, id [16]byte) *topic {
	if id != [16]byte{} && b.rules.NoTopicIDs && b.vast(r, rules.NoTopicIDs, rules.Refused, "", "", func() string { return "a topic named by its ID" }) {
		return nil
	}
	return b.data.getID(id)
}

// topicID returns the id Metadata and CreateTopics report: zero when VAST's
// rule says topic IDs are unsupported.
func (b *Broker) topicID(t *topic) [16]byte {
	if b.enforced(rules.NoTopicIDs) {
		return [16]byte{}
	}
	return t.id
}

// handleMetadata answers Metadata v0-v12.
//
// v1 adds controller id and null-for-all-topics, v2 the cluster id, v4
// AllowAutoTopicCreation, v7 leader epochs, v8 authorized operations
// (KIP-430: the topic's with IncludeTopicAuthorizedOperations; the
// cluster's, v8-v10 only, with IncludeClusterAuthorizedOperations), v10
// topic ids. One broker leads every partition with epoch 0. A topic named
// twice (by name, or by id) is answered once, as Kafka does. The kafka
// profile lists __consumer_offsets as internal, with 50 empty partitions.
// VAST: topics are never auto-created (NoAutoCreateTopics: a request
// asking to is recorded as refused), topic IDs are zero and a topic named
// by id is unknown (NoTopicIDs), and there is no __consumer_offsets
// (NoOffsetsTopic).
// Authorizes: KafkaDescribe on each topic: a listing of all topics leaves
// out the ones the user may not describe, a named one gets
// TOPIC_AUTHORIZATION_FAILED; auto-creation (kafka profile) needs
// KafkaCreate on the topic or the view. Authorized operations are the
// operations the policies allow (all of them without policies).
func handleMetadata(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, n := range b.nodes {
		if b.isFenced(n.id) {
			continue // as Kafka lists only the brokers registered and unfenced
		}
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID = n.id
		br.Host, br.Port = n.advertisedHostPort()
		resp.Brokers = append(resp.Brokers, br)
	}
	resp.ClusterID = &b.clusterID
	resp.ControllerID = b.cfg.nodeID
	if b.isFenced(resp.ControllerID) && len(resp.Brokers) > 0 {
		// Admin clients send CreateTopics and the like to the
		// controller: name one that is up, as Kafka names a live broker.
		resp.ControllerID = resp.Brokers[0].NodeID
	}

	var topics []*topic
	var missing []string
	all := req.Topics == nil || (r.version == 0 && len(req.Topics) == 0)
	var denied []string
	if all {
		for _, t := range b.data.listed() {
			if b.allowTopic(r, KafkaDescribe, t.name) {
				topics = append(topics, t)
			}
		}
	} else {
		askedCreate := r.version < 4 || req.AllowAutoTopicCreation
		names := make(map[string]bool, len(req.Topics))
		ids := make(map[[16]byte]bool)
		for _, rt := range req.Topics {
			var t *topic
			if rt.Topic != nil {
				if names[*rt.Topic] {
					continue
				}
				names[*rt.Topic] = true
				if !b.allowTopic(r, KafkaDescribe, *rt.Topic) {
					denied = append(denied, *rt.Topic)
					continue
				}
				t = b.topicNamed(r, *rt.Topic)
				autoCreate := t == nil && askedCreate && validTopicName(*rt.Topic) && *rt.Topic != offsetsTopic &&
					!b.vast(r, rules.NoAutoCreateTopics, rules.Refused, *rt.Topic, "", func() string { return "Metadata asked to auto-create topic " + strconv.Quote(*rt.Topic) })
				if *rt.Topic == offsetsTopic && t != nil {
					b.vast(r, rules.NoOffsetsTopic, rules.Differs, offsetsTopic, "", func() string { return "Metadata for __consumer_offsets, which VAST does not have" })
				}
				if autoCreate && b.allowCreate(r, *rt.Topic) {
					if code, _ := b.createTopic(r, *rt.Topic, -1, nil, false); code == 0 {
						t = b.data.get(*rt.Topic)
					}
				}
			} else {
				if ids[rt.TopicID] {
					continue
				}
				ids[rt.TopicID] = true
				t = b.topicByID(r, rt.TopicID)
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
	topicOps := r.version >= 8 && req.IncludeTopicAuthorizedOperations
	if r.version >= 8 && r.version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterAuthorizedOperations(r)
	}
	for _, t := range topics {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(t.name)
		mt.TopicID = b.topicID(t)
		mt.IsInternal = t.internal
		if topicOps {
			mt.AuthorizedOperations = b.topicAuthorizedOperations(r, t.name)
		}
		mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.partitions))
		for i := range t.partitions {
			p := &mt.Partitions[i]
			*p = kmsg.NewMetadataResponseTopicPartition()
			p.Partition = int32(i)
			p.Leader, p.LeaderEpoch, p.Replicas, p.ISR = b.PartitionState(t.name, int32(i))
			p.OfflineReplicas = b.offlineReplicas(p.Replicas)
			if p.Leader == -1 {
				p.ErrorCode = kerr.LeaderNotAvailable.Code
			}
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
		} else {
			if !validTopicName(name) {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			if topicOps {
				mt.AuthorizedOperations = b.topicAuthorizedOperations(r, name)
			}
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

// duplicates returns the names that appear more than once in a request.
func duplicates[T any](items []T, name func(T) string) map[string]bool {
	seen := make(map[string]bool, len(items))
	dups := make(map[string]bool)
	for _, it := range items {
		n := name(it)
		if seen[n] {
			dups[n] = true
		}
		seen[n] = true
	}
	return dups
}

// handleCreateTopics answers CreateTopics v2-v7.
//
// v1 adds ValidateOnly and error messages, v5 returns the topic's partitions,
// replication factor and configs, v7 its id. In the kafka profile the
// replication factor and explicit replica assignments are checked as
// Kafka's controller checks them (INVALID_REPLICATION_FACTOR,
// INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST: see checkReplicationFactor
// and checkTopicAssignment) and kept (replicas.go). A
// name listed more than once gets one INVALID_REQUEST answer and is not
// created, as in Kafka. NumPartitions -1 means the broker's num.partitions.
// Config values must be of their Kafka type (INVALID_CONFIG otherwise).
// VAST: only the five VAST topic configs (VASTTopicConfigsOnly); partition
// limits per topic and per view (MaxPartitionsPerTopic/PerView); the
// replication factor and replica assignments are accepted and ignored
// (AnyAddressServes: not a VAST concept).
// Authorizes: KafkaCreate on the topic or on the view
// (TOPIC_AUTHORIZATION_FAILED); a deny on either denies.
func handleCreateTopics(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	dups := duplicates(req.Topics, func(rt kmsg.CreateTopicsRequestTopic) string { return rt.Topic })
	tooMany := false
	if !b.enforced(rules.MaxPartitionsPerView) {
		total := 0
		for _, rt := range req.Topics {
			switch {
			case dups[rt.Topic]:
			case len(rt.ReplicaAssignment) > 0:
				total += len(rt.ReplicaAssignment)
			case rt.NumPartitions == -1:
				total += int(b.cfg.partitions)
			case rt.NumPartitions > 0:
				total += int(rt.NumPartitions)
			}
		}
		tooMany = total > MaxPartitionsPerRequest
	}
	for _, rt := range req.Topics {
		if dups[rt.Topic] {
			continue
		}
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
		factor := rt.ReplicationFactor
		// Placement: explicit replica assignments, checked as Kafka's
		// controller checks them, or else the replication factor.
		var assign [][]int32
		var placeCode int16
		var placeMsg string
		if len(rt.ReplicaAssignment) > 0 {
			factor = int16(len(rt.ReplicaAssignment[0].Replicas))
			assign, placeCode, placeMsg = b.checkTopicAssignment(&rt)
		} else {
			placeCode, placeMsg = b.checkReplicationFactor(factor)
		}
		if tooMany {
			code, msg = kerr.PolicyViolation.Code, "Excessively large number of partitions per request."
		} else if !b.allowCreate(r, rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "denied by the identity policies: KafkaCreate on "+TopicResource(b.cfg.view, rt.Topic)
		} else if code, msg = placeCode, placeMsg; code != 0 {
		} else {
			code, msg = b.createTopic(r, rt.Topic, partitions, configs, req.ValidateOnly)
		}
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		if code == 0 {
			if partitions == -1 {
				partitions = b.cfg.partitions
			}
			st.NumPartitions = partitions
			st.ReplicationFactor = factor
			if b.elects() {
				if factor == -1 {
					st.ReplicationFactor = b.defaultReplicationFactor()
				} else if !req.ValidateOnly {
					b.setReplicationFactor(rt.Topic, factor)
					b.setAssignment(rt.Topic, 0, assign)
				}
			} else if factor == -1 {
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
	for _, name := range slices.Sorted(maps.Keys(dups)) {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = name
		st.NumPartitions, st.ReplicationFactor = -1, -1
		st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name.")
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleDeleteTopics answers DeleteTopics v1-v6.
//
// v6 names topics by name or id. Deleting a topic deletes every group's
// committed offsets for it, as VAST's Consume events page documents (and Kafka does). As
// in Kafka, a topic named (or id given) more than once gets one
// INVALID_REQUEST answer and is not deleted, and so does an entry with
// both a name and an id, or neither (each such entry answered once). Deleting __consumer_offsets (kafka
// profile) succeeds as on Kafka and loses every committed offset; the
// topic is back at once, empty.
// VAST: a topic named by id is unknown (NoTopicIDs).
// Authorizes: KafkaDelete on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleDeleteTopics(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	invalid := func(name *string, id [16]byte, msg string) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = name, id
		st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
		resp.Topics = append(resp.Topics, st)
	}
	for _, n := range req.TopicNames {
		targets = append(targets, target{name: kmsg.StringPtr(n)})
	}
	refused := make(map[string]bool) // entries with both or neither, answered once
	for _, t := range req.Topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			if !refused[""] {
				refused[""] = true
				invalid(nil, t.TopicID, "Neither topic name nor id were specified.")
			}
		case t.Topic != nil && t.TopicID != [16]byte{}:
			if k := *t.Topic + "\x00" + string(t.TopicID[:]); !refused[k] {
				refused[k] = true
				invalid(t.Topic, t.TopicID, "You may not specify both topic name and topic id.")
			}
		default:
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	}
	key := func(tg target) string {
		if tg.name != nil {
			return "n" + *tg.name
		}
		return "i" + string(tg.id[:])
	}
	dups := duplicates(targets, key)
	for _, tg := range targets {
		if dups[key(tg)] {
			continue
		}
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var t *topic
		if tg.name != nil {
			t = b.topicNamed(r, *tg.name)
		} else {
			t = b.topicByID(r, tg.id)
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
	reported := make(map[string]bool, len(dups))
	for _, tg := range targets {
		if k := key(tg); dups[k] && !reported[k] {
			reported[k] = true
			if tg.name != nil {
				invalid(tg.name, tg.id, "Duplicate topic name.")
			} else {
				invalid(nil, tg.id, "Duplicate topic id.")
			}
		}
	}
	return resp
}

// handleCreatePartitions answers CreatePartitions v0-v3, served only in the
// kafka profile.
//
// A topic listed more than once gets one INVALID_REQUEST answer and does
// not grow, as in Kafka.
// VAST: partitions are fixed at creation (FixedPartitions hides this API).
// Authorizes: KafkaCreate on the topic or on the view (Kafka's ALTER on the
// topic; TOPIC_AUTHORIZATION_FAILED).
func handleCreatePartitions(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	dups := duplicates(req.Topics, func(rt kmsg.CreatePartitionsRequestTopic) string { return rt.Topic })
	for _, name := range slices.Sorted(maps.Keys(dups)) {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = name
		st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name.")
		resp.Topics = append(resp.Topics, st)
	}
	grow := 0
	for _, rt := range req.Topics {
		if t := b.topicNamed(r, rt.Topic); t != nil && !dups[rt.Topic] && int(rt.Count) > len(t.partitions) {
			grow += int(rt.Count) - len(t.partitions)
		}
	}
	var grew []string // names of the topics that grew, for the coordinator
	for _, rt := range req.Topics {
		if dups[rt.Topic] {
			continue
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if grow > MaxPartitionsPerRequest {
			st.ErrorCode = kerr.PolicyViolation.Code
			st.ErrorMessage = kmsg.StringPtr("Unable to perform excessively large batch operation.")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !b.allowCreate(r, rt.Topic) {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var assign [][]int32
		for _, a := range rt.Assignment {
			assign = append(assign, a.Replicas)
		}
		assignCode, assignMsg := int16(0), ""
		if t := b.data.get(rt.Topic); t != nil && rt.Assignment != nil && !b.enforced(rules.AnyAddressServes) {
			if grow := int(rt.Count) - len(t.partitions); grow > 0 && grow != len(assign) {
				assignCode, assignMsg = kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", grow, len(assign))
			} else {
				factor := b.replicationFactorOf(rt.Topic)
				for i, reps := range assign {
					if assignCode, assignMsg = b.checkReplicaList(reps, factor, int32(len(t.partitions)+i)); assignCode != 0 {
						break
					}
				}
			}
		}
		assignFrom := int32(-1) // where the new partitions start, once grown
		s := b.data
		s.mu.Lock()
		t := s.byName[rt.Topic]
		var limitCode int16
		var limitMsg string
		if t != nil && int(rt.Count) > len(t.partitions) {
			viewTotal := s.partitions
			if !t.internal {
				viewTotal += int(rt.Count) - len(t.partitions)
			}
			limitCode, limitMsg = b.partitionLimits(r, rt.Topic, int(rt.Count), viewTotal)
		}
		switch {
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case int(rt.Count) == len(t.partitions):
			st.ErrorCode = kerr.InvalidPartitions.Code
			st.ErrorMessage = kmsg.StringPtr("Topic already has " + itoa(len(t.partitions)) + " partition(s).")
		case int(rt.Count) < len(t.partitions):
			st.ErrorCode = kerr.InvalidPartitions.Code
			st.ErrorMessage = kmsg.StringPtr("The topic " + t.name + " currently has " + itoa(len(t.partitions)) + " partition(s); " + itoa(int(rt.Count)) + " would not be an increase.")
		case limitCode != 0:
			st.ErrorCode, st.ErrorMessage = limitCode, kmsg.StringPtr(limitMsg)
		case assignCode != 0:
			st.ErrorCode, st.ErrorMessage = assignCode, kmsg.StringPtr(assignMsg)
		case req.ValidateOnly:
		default:
			assignFrom = int32(len(t.partitions))
			grown := make([]*log.Partition, rt.Count)
			copy(grown, t.partitions)
			for i := len(t.partitions); i < len(grown); i++ {
				grown[i] = s.mem.NewPartition()
			}
			if !t.internal {
				s.partitions += len(grown) - len(t.partitions)
			}
			// Replace the topic so readers holding the old one keep a
			// consistent partition slice.
			nt := &topic{name: t.name, id: t.id, partitions: grown, cfg: t.config(), internal: t.internal}
			s.byName[t.name] = nt
			s.byID[t.id] = nt
		}
		s.mu.Unlock()
		if assignFrom >= 0 {
			b.setAssignment(rt.Topic, assignFrom, assign) // not under s.mu: elections take it after b.moves.mu
			grew = append(grew, rt.Topic)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(grew) > 0 {
		b.coord.TopicsChanged(grew...) // consumer groups subscribed to a grown topic rebalance
	}
	return resp
}

func itoa(n int) string { return strconv.Itoa(n) }
