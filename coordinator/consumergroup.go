package coordinator

// KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe,
// the broker-side assignment, the reconciliation of each member towards its
// target, and the member-epoch checks of OffsetCommit and OffsetFetch.
//
// The model is Kafka 4.x's (GroupMetadataManager, ConsumerGroup,
// CurrentAssignmentBuilder). A group has a group epoch, bumped whenever
// what the assignment depends on changes (a member joins or leaves, a
// subscription or the assignor changes, a subscribed topic is created,
// deleted or grows), and a target assignment computed at once for that
// epoch (the assignment epoch). Each member has its own epoch and moves
// towards its target on its heartbeats: it first gives up the partitions
// its target no longer holds (it stays at its epoch, in UNREVOKED_PARTITIONS,
// until a heartbeat reports them gone), then takes the target epoch and the
// target's partitions that no other member still holds; those it has to
// wait for (UNRELEASED_PARTITIONS) it gets on a later heartbeat once their
// owner has revoked them, left or been fenced. So a partition is never held
// by two members at once.
//
// Everything runs on the coordinator's clock: the session timeout (a member
// that does not heartbeat within it is fenced and its partitions move) and
// each member's rebalance timeout (a member that keeps partitions it must
// revoke for longer is fenced).
//
// A heartbeat costs what changed for the member: a steady heartbeat of a
// member at its target touches nothing else, and reconciling one member
// costs its own partitions. Only a new group epoch recomputes the target
// of every member, once per change, in O(members + partitions).

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for the consumer-group settings of KIP-848.
const (
	// DefaultConsumerSessionTimeout is group.consumer.session.timeout.ms.
	DefaultConsumerSessionTimeout = 45 * time.Second
	// DefaultConsumerHeartbeatInterval is
	// group.consumer.heartbeat.interval.ms.
	DefaultConsumerHeartbeatInterval = 5 * time.Second
	// DefaultConsumerGroupMaxSize bounds the members of one consumer group
	// (group.consumer.max.size). Kafka's default is unbounded
	// (Integer.MAX_VALUE); vastfake keeps every member in memory, so its
	// default is this guard of its own.
	DefaultConsumerGroupMaxSize = 10_000
)

// MaxSubscribedTopicRegexBytes bounds a member's SubscribedTopicRegex.
// Kafka has no such bound; vastfake keeps each regex in memory and matches
// it against every topic, so a longer one gets INVALID_REGULAR_EXPRESSION,
// as does one whose program passes MaxSubscribedTopicRegexInstructions
// (regex.go).
const MaxSubscribedTopicRegexBytes = 4096

// MaxSubscribedTopicNames bounds how many topic names one member may
// subscribe to (a guard of vastfake's; Kafka has none). A heartbeat
// naming more gets INVALID_REQUEST.
const MaxSubscribedTopicNames = 100_000

// MaxConsumerGroupBytes bounds what the coordinator keeps for one KIP-848
// group's members: their ids, instance and rack ids, client ids and hosts,
// subscribed topic names and regexes. A join or a subscription change that
// would pass it gets GROUP_MAX_SIZE_REACHED. A guard of vastfake's: Kafka
// writes each member to __consumer_offsets in a record of its own.
const MaxConsumerGroupBytes = 16 << 20

// maxTopicNameBytes is Kafka's bound on a topic name: a subscribed name
// longer than it can never match a topic, and a heartbeat naming one gets
// INVALID_REQUEST.
const maxTopicNameBytes = 249

// Server-side assignors (group.consumer.assignors): uniform is Kafka's
// default.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	epochJoin        = 0
	epochLeave       = -1
	epochStaticLeave = -2
)

// TopicMeta is a topic as consumer groups see it: its name, id and
// partition count.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// tp is one partition of a topic, by name.
type tp struct {
	topic string
	part  int32
}

type tpSet map[tp]struct{}

// memberState is a member's place in its reconciliation, named as Kafka's
// MemberState.
type memberState int8

const (
	memberStable     memberState = iota // at its target epoch with every partition it may have
	memberUnrevoked                     // must revoke partitions before moving on
	memberUnreleased                    // at the target epoch, waiting for partitions others hold
)

func (s memberState) String() string {
	switch s {
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

// consumerGroup is the KIP-848 state of a group (group.cg). Every field is
// guarded by Coordinator.mu.
type consumerGroup struct {
	epoch       int32 // the group epoch
	targetEpoch int32 // the epoch of the target assignment
	assignor    string
	members     map[string]*cmember
	static      map[string]string // group.instance.id → member id
	owner       map[tp]string     // partition → the member holding it (assigned or revoking)
	// unsettled are the members not yet Stable at the target epoch: the
	// group is Reconciling while there is one.
	unsettled map[string]struct{}
	// recorded is the last assignment epoch noteStable put in the
	// rebalance history.
	recorded int32
	// bytes is the sum of its members' stored bytes (MaxConsumerGroupBytes).
	bytes int
	// resolved are the regular expressions the group has resolved: a
	// member's new one counts from the epoch after the heartbeat that
	// brought it, as Kafka resolves new regexes asynchronously (see
	// resolveRegex).
	resolved map[string]bool
	// regexRefs counts the members using each regex (regex.go): a regex
	// counts once in bytes however many members share it.
	regexRefs map[*topicRegex]int
}

// cmember is one member of a consumer group.
type cmember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	state     memberState
	rebalance time.Duration

	names    []string // subscribed topic names, sorted
	regex    string
	rx       *topicRegex // the compiled regex, shared (regex.go); nil without one
	assignor string      // the server assignor it asked for, or ""

	assigned tpSet // partitions it may consume
	// assignedAt is the member epoch at which it was given each partition
	// of assigned and revoking (KIP-1251's assignment epochs), which
	// commits at an older epoch are checked against
	// (Config.AssignmentEpochs).
	assignedAt map[tp]int32
	revoking   tpSet // partitions it must revoke
	target     tpSet // its part of the target assignment
	// sent is false when assigned changed since the last heartbeat
	// response carried it.
	sent bool

	// bytes is what it counted for in the group's bytes when last accounted.
	bytes int

	lastBeat       time.Time // on the coordinator's clock
	sessionTimer   *timer
	rebalanceTimer *timer
}

// storedBytes is what the coordinator keeps of m's own strings: with
// names and regex given, as they would be after a subscription change.
func (m *cmember) storedBytes(instanceID, rackID *string, clientID, clientHost string, names []string, regex string) int {
	n := len(m.id) + len(clientID) + len(clientHost) + len(regex)
	if instanceID != nil {
		n += len(*instanceID)
	}
	if rackID != nil {
		n += len(*rackID)
	}
	for _, name := range names {
		n += len(name)
	}
	return n
}

// fits reports whether m, with the strings a heartbeat brings (req's
// where it carries them, else m's own) and its compiled regex rx, keeps
// the group within MaxConsumerGroupBytes.
func (cg *consumerGroup) fits(m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, rx *topicRegex) bool {
	instanceID, rackID, names, regex := m.instanceID, m.rackID, m.names, m.regex
	if req.InstanceID != nil {
		instanceID = req.InstanceID
	}
	if req.RackID != nil {
		rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		names = req.SubscribedTopicNames
	}
	delta := 0
	if req.SubscribedTopicRegex != nil {
		regex = *req.SubscribedTopicRegex
		delta = cg.regexBytesDelta(m, rx)
	}
	return cg.bytes-m.bytes+m.storedBytes(instanceID, rackID, clientID, clientHost, names, regex)+delta <= MaxConsumerGroupBytes
}

// account brings the group's byte count up to date with m's strings.
func (cg *consumerGroup) account(m *cmember) {
	b := m.storedBytes(m.instanceID, m.rackID, m.clientID, m.clientHost, m.names, m.regex)
	cg.bytes += b - m.bytes
	m.bytes = b
}

// subscribes reports whether m subscribes to topic.
func (m *cmember) subscribes(topic string) bool {
	if _, ok := slices.BinarySearch(m.names, topic); ok {
		return true
	}
	return m.rx != nil && m.rx.matches(topic)
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		assignor:  AssignorUniform,
		members:   make(map[string]*cmember),
		static:    make(map[string]string),
		owner:     make(map[tp]string),
		unsettled: make(map[string]struct{}),
		resolved:  make(map[string]bool),
		regexRefs: make(map[*topicRegex]int),
	}
}

// stateName is the group's state as Kafka names it: Empty, Assigning (never
// seen here: the target is computed at once), Reconciling or Stable.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.targetEpoch < cg.epoch:
		return "Assigning"
	case len(cg.unsettled) > 0:
		return "Reconciling"
	}
	return "Stable"
}

// settle records whether m is Stable at the target epoch.
func (cg *consumerGroup) settle(m *cmember) {
	if m.state == memberStable && m.epoch == cg.targetEpoch {
		delete(cg.unsettled, m.id)
	} else {
		cg.unsettled[m.id] = struct{}{}
	}
}

// newConsumerMemberID makes a member id as Kafka 4.x's v0 heartbeat does: a
// random UUID in URL-safe base64.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ---- topics ----

// TopicsChanged tells the coordinator that topics were created, deleted or
// grew: it reads them again through Config.Topics (or only the names given,
// through Config.Topic) and bumps the epoch of every consumer group one of
// whose subscriptions (by name, or by a regular expression that matched
// the topic) sees a change, recomputing its target assignment. Partitions
// of a deleted topic leave every member at once, as a client cannot report
// them by id any more. A new topic is matched against regular expressions
// afterwards, off the lock (regex.go): it never waits for matching. It
// costs the topics that changed times the groups, plus every topic when no
// names are given.
func (c *Coordinator) TopicsChanged(names ...string) {
	c.mu.Lock()
	defer c.unlock()
	c.refreshTopics(names...)
}

// refreshTopics reads the topics named, or all of them when none is named
// or Config.Topic is nil, and reacts to what changed. Call it with c.mu
// held.
func (c *Coordinator) refreshTopics(names ...string) {
	if c.topicsFn == nil || c.closed {
		return
	}
	var changed []string
	if len(names) > 0 && c.topicFn != nil && c.topics != nil {
		for _, name := range names {
			t, ok := c.topicFn(name)
			old, had := c.topics[name]
			if had && (!ok || old != t) && c.topicIDs[old.ID] == name {
				delete(c.topicIDs, old.ID)
			}
			switch {
			case ok && (!had || old != t):
				c.topics[name] = t
				c.topicIDs[t.ID] = name
				changed = append(changed, name)
			case !ok && had:
				delete(c.topics, name)
				changed = append(changed, name)
			}
		}
	} else {
		changed = c.readAllTopics()
	}
	if len(changed) == 0 {
		return
	}
	c.shareTopicsChanged(changed)
	var hits []*group
	for _, g := range c.groups {
		cg := g.cg
		if cg == nil || len(cg.members) == 0 {
			continue
		}
		hit := false
		for _, m := range cg.members {
			for _, name := range changed {
				if m.subscribes(name) {
					hit = true
					break
				}
			}
			if hit {
				break
			}
		}
		if hit {
			hits = append(hits, g)
		}
	}
	var gone, present []string
	for _, name := range changed {
		if _, ok := c.topics[name]; ok {
			present = append(present, name)
		} else {
			gone = append(gone, name)
		}
	}
	c.topicsGone(gone)
	c.topicsCreated(present)
	for _, g := range hits {
		c.dropGoneTopics(g.cg)
		for _, m := range g.cg.members {
			m.sent = false // a topic recreated under its name has a new id: send it again
		}
		c.bumpGroupEpoch(g)
	}
}

// readAllTopics reads every topic through Config.Topics, replaces the
// coordinator's view with them and returns the names that changed.
func (c *Coordinator) readAllTopics() []string {
	fresh := c.topicsFn()
	now := make(map[string]TopicMeta, len(fresh))
	for _, t := range fresh {
		now[t.Name] = t
	}
	var changed []string
	for name, t := range now {
		if old, ok := c.topics[name]; !ok || old != t {
			changed = append(changed, name)
		}
	}
	for name := range c.topics {
		if _, ok := now[name]; !ok {
			changed = append(changed, name)
		}
	}
	c.topics = now
	c.topicIDs = make(map[[16]byte]string, len(now))
	for name, t := range now {
		c.topicIDs[t.ID] = name
	}
	return changed
}

// dropGoneTopics removes from every member the partitions whose topic no
// longer exists or shrank away.
func (c *Coordinator) dropGoneTopics(cg *consumerGroup) {
	for p, id := range cg.owner {
		if t, ok := c.topics[p.topic]; ok && p.part < t.Partitions {
			continue
		}
		delete(cg.owner, p)
		if m := cg.members[id]; m != nil {
			if _, ok := m.assigned[p]; ok {
				delete(m.assigned, p)
				m.sent = false
			}
			delete(m.revoking, p)
			delete(m.assignedAt, p)
		}
	}
}

// ---- heartbeat ----

// ConsumerGroupHeartbeat answers ConsumerGroupHeartbeat v0-v1 (KIP-848) as
// Kafka 4.x does, creating the group on a member's first heartbeat (epoch
// 0). Epoch -1 leaves; -2 leaves as a static member that will come back
// (its partitions wait for it until its session timeout); any other
// positive epoch is a heartbeat that reports the partitions the member
// still owns (or nil when unchanged) and gets its epoch and, when it
// changed, its assignment. Errors are Kafka's: INVALID_REQUEST for a
// malformed request (empty group id, a v1 request without member id, a
// join without rebalance timeout or subscription or with owned
// partitions, a bad epoch, -2 without instance id, a negative rebalance
// timeout other than -1), INVALID_REGULAR_EXPRESSION, UNSUPPORTED_ASSIGNOR
// (assignors other than uniform and range), UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH (an epoch the member does not have),
// FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, and
// GROUP_ID_NOT_FOUND for a classic group with members; an Empty classic
// group becomes a consumer group, keeping its offsets. It never blocks.
//
// The regex a heartbeat carries is compiled before the coordinator's lock
// is taken, or found compiled (regex.go).
func (c *Coordinator) ConsumerGroupHeartbeat(caller Caller, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.HeartbeatIntervalMillis = int32(c.cgInterval / time.Millisecond)
	code, msg := checkHeartbeat(req)
	var hold regexHold
	if code == errNone && req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		r, err := c.regexes.acquire(*req.SubscribedTopicRegex)
		if err != nil {
			code, msg = kerr.InvalidRegularExpression.Code, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", clipQuoted(*req.SubscribedTopicRegex), err)
		}
		hold.r = r
	}
	c.mu.Lock()
	defer c.unlock()
	defer hold.release(c)
	if code == errNone {
		code, msg = c.consumerHeartbeat(caller, req, resp, &hold)
	}
	if g := c.groups[req.Group]; g != nil {
		c.noteStable(g)
	}
	if code != errNone {
		resp.ErrorCode = code
		resp.MemberEpoch = 0
		resp.MemberID = nil
		resp.Assignment = nil
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
	}
	return resp
}

// checkHeartbeat validates a heartbeat before it reaches a group, as
// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func checkHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case len(req.Group) > MaxGroupIDBytes:
		return kerr.InvalidGroupID.Code, "GroupId is longer than 32767 bytes."
	case blank(req.Group):
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && blank(*req.InstanceID):
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	case req.Version >= 1 && blank(req.MemberID):
		return invalid("MemberId can't be empty.")
	case req.RebalanceTimeoutMillis < -1:
		return invalid("RebalanceTimeoutMs can't be negative.")
	case len(req.MemberID) > MaxGroupIDBytes || req.InstanceID != nil && len(*req.InstanceID) > MaxGroupIDBytes ||
		req.RackID != nil && len(*req.RackID) > MaxGroupIDBytes:
		return invalid(fmt.Sprintf("MemberId, InstanceId and RackId are at most %d bytes.", MaxGroupIDBytes))
	case slices.ContainsFunc(req.SubscribedTopicNames, func(n string) bool { return len(n) > maxTopicNameBytes }):
		return invalid(fmt.Sprintf("SubscribedTopicNames holds a name longer than %d bytes, which no topic can have.", maxTopicNameBytes))
	case len(req.SubscribedTopicNames) > MaxSubscribedTopicNames:
		return invalid(fmt.Sprintf("SubscribedTopicNames names more than %d topics.", MaxSubscribedTopicNames))
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == epochLeave:
		if blank(req.MemberID) {
			return invalid("MemberId can't be empty.")
		}
	case e == epochJoin:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case e == epochStaticLeave:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if a := req.ServerAssignor; a != nil && *a != AssignorUniform && *a != AssignorRange {
		return kerr.UnsupportedAssignor.Code, "ServerAssignor " + *a + " is not supported. Supported assignors: " + AssignorUniform + ", " + AssignorRange + "."
	}
	return errNone, ""
}

// blank reports whether s is empty once trimmed as Java's String.trim
// trims (every character up to the space), as Kafka's throwIfEmptyString
// checks ids: a group id of spaces is refused as an empty one.
func blank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) == ""
}

// clipQuoted clips a client's string quoted in an error message to 100
// bytes, so that an answer is never much larger than its request.
func clipQuoted(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

func (c *Coordinator) consumerHeartbeat(caller Caller, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, hold *regexHold) (int16, string) {
	if c.closed {
		return kerr.CoordinatorNotAvailable.Code, ""
	}
	g := c.groups[req.Group]
	switch {
	case g == nil && req.MemberEpoch != epochJoin:
		return kerr.UnknownMemberID.Code, "Consumer group " + req.Group + " not found."
	case g == nil:
		g = c.newGroup(req.Group)
		c.toConsumerGroup(g)
		caller.GroupCreated(req.Group)
	case g.sg != nil:
		return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a consumer group."
	case g.cg == nil:
		if g.state != stateEmpty || len(g.members) > 0 || len(g.pending) > 0 {
			return kerr.GroupIDNotFound.Code, "Group " + req.Group + " is not a consumer group."
		}
		if req.MemberEpoch != epochJoin {
			return kerr.UnknownMemberID.Code, ""
		}
		c.toConsumerGroup(g)
	}
	switch req.MemberEpoch {
	case epochJoin:
		return c.consumerJoin(caller, g, req, resp, hold)
	case epochLeave, epochStaticLeave:
		return c.consumerLeave(g, req, resp)
	}
	return c.consumerBeat(g, req, resp, hold)
}

// toConsumerGroup makes g, new or Empty and classic, a consumer group,
// keeping its committed offsets.
func (c *Coordinator) toConsumerGroup(g *group) {
	g.cg = newConsumerGroup()
	g.protocolType = "consumer"
	g.protocol = ""
	g.leader = ""
	c.consumerGroups++
}

// toClassicGroup makes an Empty consumer group classic, keeping its
// committed offsets, as Kafka does when a classic member joins it.
func (c *Coordinator) toClassicGroup(g *group) {
	g.stopConsumerTimers()
	g.cg = nil
	g.state = stateEmpty
	c.consumerGroups--
}

// staticHolder checks a static member's instance id as Kafka's
// throwIfStaticMemberIsUnknown and throwIfInstanceIdIsFenced do.
func (cg *consumerGroup) staticHolder(instanceID, memberID string) (*cmember, int16) {
	id, ok := cg.static[instanceID]
	if !ok || cg.members[id] == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if id != memberID {
		return nil, kerr.FencedInstanceID.Code
	}
	return cg.members[id], errNone
}

// consumerJoin handles epoch 0: a new member, a member coming back after it
// was fenced or lost its state (its partitions stay its own unless the
// target moved them), or a static member taking over from its previous
// instance that left with epoch -2.
func (c *Coordinator) consumerJoin(caller Caller, g *group, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, hold *regexHold) (int16, string) {
	cg := g.cg
	id := req.MemberID
	if id == "" {
		id = newConsumerMemberID()
	}
	var inherit *cmember
	if req.InstanceID != nil {
		if holder, ok := cg.static[*req.InstanceID]; ok && holder != id {
			old := cg.members[holder]
			if old != nil && old.epoch != epochStaticLeave {
				return kerr.UnreleasedInstanceID.Code, "Static member with instance id " + *req.InstanceID +
					" re-joins the consumer group " + g.name + " while its previous member " + holder + " has not left it."
			}
			inherit = old
		}
	}
	m := cg.members[id]
	if m == nil && inherit == nil && len(cg.members) >= c.cgMaxSize {
		return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", c.cgMaxSize)
	}
	clientID, clientHost := caller.Client()
	probe := m
	if probe == nil {
		probe = &cmember{id: id}
	}
	if !cg.fits(probe, req, clientID, clientHost, hold.r) {
		return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The consumer group's members would keep more than %d bytes of ids and subscriptions.", MaxConsumerGroupBytes)
	}
	changed := false
	if m == nil {
		m = &cmember{id: id, assigned: tpSet{}, revoking: tpSet{}, target: tpSet{}}
		cg.members[id] = m
		changed = true
		if inherit != nil {
			// The new instance takes its predecessor's place: its
			// partitions and target, its subscription; no new epoch
			// unless the subscription differs (Kafka's static member
			// replacement).
			m.epoch, m.prevEpoch = 0, 0
			m.names, m.regex, m.assignor = inherit.names, inherit.regex, inherit.assignor
			if inherit.rx != nil {
				c.regexes.retain(inherit.rx)
				c.setMemberRegex(cg, m, inherit.rx)
			}
			m.target = inherit.target
			for p := range inherit.assigned {
				m.assigned[p] = struct{}{}
				cg.owner[p] = id
			}
			c.removeConsumerMember(g, inherit, false)
			changed = false
		}
	} else if m.epoch == epochStaticLeave {
		m.epoch = 0
	}
	if req.InstanceID != nil {
		s := *req.InstanceID
		if m.instanceID != nil && *m.instanceID != s && cg.static[*m.instanceID] == id {
			delete(cg.static, *m.instanceID) // a member rejoining under another instance id
		}
		m.instanceID = &s
		cg.static[s] = id
	}
	m.clientID, m.clientHost = clientID, clientHost
	if req.RackID != nil {
		s := *req.RackID
		m.rackID = &s
	}
	if c.updateSubscription(g, m, req, hold) {
		changed = true
	}
	cg.account(m)
	if changed {
		c.bumpGroupEpoch(g)
	}
	c.reconcile(g, m, tpSet{})
	c.resetConsumerSession(g, m)
	c.answer(resp, m, true)
	c.resolveRegex(g, m)
	return errNone, ""
}

// resolveRegex resolves m's regular expression for its group once the
// heartbeat that brought it has been answered: Kafka resolves a regex the
// group does not know yet asynchronously, so that heartbeat's assignment
// holds only the topics named and the regexes already resolved, and the
// regex's topics come in a new group epoch, seen on the member's next
// heartbeat. A regex the worker has already matched against the topics
// (another member's, in any group) is resolved at once; any other is left
// to the worker (regex.go), which starts the new epoch when it is done.
// Regexes no member uses any more are forgotten.
func (c *Coordinator) resolveRegex(g *group, m *cmember) {
	cg := g.cg
	if m.rx == nil || cg.resolved[m.regex] {
		return
	}
	if !m.rx.resolved {
		c.kickRegexes()
		return
	}
	used := make(map[string]bool, len(cg.resolved)+1)
	for _, o := range cg.members {
		if o.rx != nil && cg.resolved[o.regex] {
			used[o.regex] = true
		}
	}
	used[m.regex] = true
	cg.resolved = used
	c.bumpGroupEpoch(g)
}

// forgetUnusedRegexes drops the resolutions of the regular expressions no
// member subscribes to any more, as Kafka's
// maybeDeleteResolvedRegularExpression does when a member changes its
// regex, leaves or is fenced: a member subscribing to one of them again,
// even the member that left, waits for a new resolution, so the heartbeat
// that brings the regex back is answered with the named topics only.
func (cg *consumerGroup) forgetUnusedRegexes() {
	if len(cg.resolved) == 0 {
		return
	}
	used := make(map[string]bool, len(cg.resolved))
	for _, o := range cg.members {
		if o.rx != nil {
			used[o.regex] = true
		}
	}
	for r := range cg.resolved {
		if !used[r] {
			delete(cg.resolved, r)
		}
	}
}

// updateSubscription applies the rebalance timeout, subscription and
// assignor a heartbeat carries (nil: unchanged) and reports whether what
// the assignment depends on changed. A new regex is the one compiled in
// hold, which m then holds.
func (c *Coordinator) updateSubscription(g *group, m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest, hold *regexHold) bool {
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalance = millis(req.RebalanceTimeoutMillis)
	}
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.names) {
			m.names = names
			changed = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex = *req.SubscribedTopicRegex
		c.setMemberRegex(g.cg, m, hold.r)
		hold.r = nil
		changed = true
		g.cg.forgetUnusedRegexes()
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor = *req.ServerAssignor
		changed = true
	}
	return changed
}

// memberOf returns the member a heartbeat with a non-zero epoch names: by
// its instance id for a static member (staticHolder's errors), else by its
// member id (UNKNOWN_MEMBER_ID).
func (cg *consumerGroup) memberOf(req *kmsg.ConsumerGroupHeartbeatRequest) (*cmember, int16) {
	if req.InstanceID != nil {
		return cg.staticHolder(*req.InstanceID, req.MemberID)
	}
	if m := cg.members[req.MemberID]; m != nil {
		return m, errNone
	}
	return nil, kerr.UnknownMemberID.Code
}

// consumerLeave handles epochs -1 (leave) and -2 (a static member leaving
// for a while: it keeps its partitions, which move only if it does not
// come back within its session timeout).
func (c *Coordinator) consumerLeave(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) (int16, string) {
	cg := g.cg
	m, code := cg.memberOf(req)
	if m == nil {
		return code, ""
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = req.MemberEpoch
	resp.HeartbeatIntervalMillis = 0
	if req.MemberEpoch == epochStaticLeave {
		for p := range m.revoking {
			delete(cg.owner, p)
		}
		m.revoking = tpSet{}
		m.assignedAt = nil // its partitions count from the epoch it comes back at (KIP-1251)
		m.rebalanceTimer.cancel()
		m.rebalanceTimer = nil
		m.prevEpoch, m.epoch = m.epoch, epochStaticLeave
		m.state = memberStable
		cg.settle(m)
		return errNone, ""
	}
	c.removeConsumerMember(g, m, true)
	return errNone, ""
}

// removeConsumerMember drops m, frees its partitions and, with bump,
// starts a new group epoch.
func (c *Coordinator) removeConsumerMember(g *group, m *cmember, bump bool) {
	cg := g.cg
	m.sessionTimer.cancel()
	m.rebalanceTimer.cancel()
	m.sessionTimer, m.rebalanceTimer = nil, nil
	for p := range m.assigned {
		if cg.owner[p] == m.id {
			delete(cg.owner, p)
		}
	}
	for p := range m.revoking {
		if cg.owner[p] == m.id {
			delete(cg.owner, p)
		}
	}
	delete(cg.members, m.id)
	delete(cg.unsettled, m.id)
	cg.bytes -= m.bytes
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	c.setMemberRegex(cg, m, nil)
	cg.forgetUnusedRegexes()
	if bump {
		c.bumpGroupEpoch(g)
	}
	c.consumerMembersChanged(g)
}

// consumerMembersChanged keeps the classic state of a consumer group in
// step with its members, which the group cleanup and DeleteGroups read.
func (c *Coordinator) consumerMembersChanged(g *group) { c.membersChanged(g, len(g.cg.members)) }

// membersChanged keeps the classic state of a KIP-848 or share group in
// step with its count of members: Empty without members, Stable with some.
func (c *Coordinator) membersChanged(g *group, members int) {
	if members == 0 {
		if g.state != stateEmpty {
			g.state = stateEmpty
			g.emptySince = c.clock.Now()
			c.expiryChanged(g)
		}
		return
	}
	g.state = stateStable
}

// consumerBeat handles a heartbeat with a positive epoch.
func (c *Coordinator) consumerBeat(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, hold *regexHold) (int16, string) {
	cg := g.cg
	m, code := cg.memberOf(req)
	if m == nil {
		return code, ""
	}
	owned := c.ownedFrom(req.Topics)
	if req.MemberEpoch != m.epoch {
		// A member one epoch behind whose owned partitions are all its
		// own lost the response that moved it on: Kafka accepts it.
		if req.MemberEpoch > m.epoch || req.MemberEpoch != m.prevEpoch || owned == nil || !subset(owned, m.assigned) {
			than := "smaller"
			if req.MemberEpoch > m.epoch {
				than = "greater"
			}
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a %s member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.",
				than, req.MemberEpoch, m.epoch)
		}
	}
	if !cg.fits(m, req, m.clientID, m.clientHost, hold.r) {
		return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The consumer group's members would keep more than %d bytes of ids and subscriptions.", MaxConsumerGroupBytes)
	}
	c.resetConsumerSession(g, m)
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.RackID != nil {
		s := *req.RackID
		m.rackID = &s
	}
	if c.updateSubscription(g, m, req, hold) {
		c.bumpGroupEpoch(g)
	}
	cg.account(m)
	c.reconcile(g, m, owned)
	c.answer(resp, m, full)
	c.resolveRegex(g, m)
	return errNone, ""
}

// ownedFrom reads the partitions a heartbeat says its member owns; nil
// when the request leaves them unchanged. Topic ids the coordinator does
// not know (a deleted topic) are skipped.
func (c *Coordinator) ownedFrom(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) tpSet {
	if topics == nil {
		return nil
	}
	out := tpSet{}
	for _, t := range topics {
		name, ok := c.topicIDs[t.TopicID]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out[tp{name, p}] = struct{}{}
		}
	}
	return out
}

func subset(a, b tpSet) bool {
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

// answer fills a successful heartbeat response: the member's id and epoch
// and, when full or when it changed since last sent, its assignment.
func (c *Coordinator) answer(resp *kmsg.ConsumerGroupHeartbeatResponse, m *cmember, full bool) {
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	if !full && m.sent {
		return
	}
	m.sent = true
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range c.byTopic(m.assigned) {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = c.topics[t.topic].ID
		at.Partitions = t.parts
		a.Topics = append(a.Topics, at)
	}
	resp.Assignment = &a
}

// topicParts is a set of partitions grouped by topic.
type topicParts struct {
	topic string
	parts []int32
}

// byTopic groups s by topic, topics and partitions sorted.
func (c *Coordinator) byTopic(s tpSet) []topicParts {
	m := make(map[string][]int32)
	for p := range s {
		m[p.topic] = append(m[p.topic], p.part)
	}
	out := make([]topicParts, 0, len(m))
	for t, ps := range m {
		slices.Sort(ps)
		out = append(out, topicParts{t, ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].topic < out[j].topic })
	return out
}

// noteStable adds the group's assignment epoch to the rebalance history the
// first time every member has its target at that epoch: the KIP-848 end
// of a rebalance, which the live page's timeline and GET /rebalances show
// beside classic generations.
func (c *Coordinator) noteStable(g *group) {
	cg := g.cg
	if cg == nil || len(cg.members) == 0 || cg.recorded == cg.targetEpoch || cg.stateName() != "Stable" {
		return
	}
	cg.recorded = cg.targetEpoch
	r := Rebalance{Time: c.clock.Now(), Group: g.name, Generation: cg.targetEpoch, State: "Stable", Protocol: cg.assignor}
	for _, m := range cg.ordered() {
		as := kmsg.NewConsumerMemberAssignment()
		for _, t := range c.byTopic(m.assigned) {
			as.Topics = append(as.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t.topic, Partitions: t.parts})
		}
		mi := MemberInfo{MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, Assignment: as.AppendTo(nil),
			MemberEpoch: m.epoch}
		if m.instanceID != nil {
			mi.InstanceID = *m.instanceID
		}
		r.Members = append(r.Members, mi)
	}
	c.appendRebalance(r)
}

// ---- timers ----

// resetConsumerSession restarts m's session timeout: when it passes without
// a heartbeat, m is fenced, its partitions are freed and the group moves
// to a new epoch.
func (c *Coordinator) resetConsumerSession(g *group, m *cmember) {
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	m.lastBeat = c.clock.Now()
	if c.closed || g.paused {
		return
	}
	m.sessionTimer = c.after(c.cgSession, func() {
		if c.groups[g.name] != g || g.cg == nil || g.cg.members[m.id] != m {
			return
		}
		c.log.Debug("coordinator: consumer group member session timeout", "group", g.name, "member", m.id)
		m.sessionTimer = nil
		c.removeConsumerMember(g, m, true)
		c.noteStable(g)
	})
}

// startRevocationTimer gives m, which owes a revocation, its rebalance
// timeout: when it passes before m revokes, m is fenced. Not while the
// group's coordinator is away (see pauseGroup). Call it with c.mu held.
func (c *Coordinator) startRevocationTimer(g *group, m *cmember) {
	if g.paused || c.closed {
		return
	}
	epoch := m.epoch
	m.rebalanceTimer = c.after(max(m.rebalance, 0), func() {
		m.rebalanceTimer = nil
		if c.groups[g.name] != g || g.cg == nil || g.cg.members[m.id] != m || m.state != memberUnrevoked || m.epoch != epoch {
			return
		}
		c.log.Debug("coordinator: consumer group member did not revoke within its rebalance timeout", "group", g.name, "member", m.id)
		c.removeConsumerMember(g, m, true)
		c.noteStable(g)
	})
}

// ---- assignment ----

// bumpGroupEpoch starts a new group epoch and computes its target assignment at
// once (so the group is never seen Assigning).
func (c *Coordinator) bumpGroupEpoch(g *group) {
	cg := g.cg
	cg.epoch++
	c.computeTarget(g)
	c.consumerMembersChanged(g)
}

// computeTarget computes the target assignment of the group epoch with the
// assignor most members asked for (uniform unless one asked otherwise;
// ties go to uniform, then range), as Kafka's preferred server assignor.
func (c *Coordinator) computeTarget(g *group) {
	cg := g.cg
	cg.targetEpoch = cg.epoch
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	cg.assignor = AssignorUniform
	if votes[AssignorRange] > votes[AssignorUniform] {
		cg.assignor = AssignorRange
	}
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	members := make([]*cmember, len(ids))
	for i, id := range ids {
		members[i] = cg.members[id]
	}
	// Each member's subscribed topics that exist, sorted, and its part of
	// the last target. A regex counts with the topics it matched when last
	// resolved (regex.go), once its group resolved it.
	in := make([]assignee, len(members))
	for i, m := range members {
		in[i].current = m.target
		for _, n := range m.names {
			if _, ok := c.topics[n]; ok {
				in[i].topics = append(in[i].topics, n)
			}
		}
		if m.rx != nil && cg.resolved[m.regex] {
			in[i].topics = append(in[i].topics, c.regexTopics(m.rx)...)
			sort.Strings(in[i].topics)
			in[i].topics = slices.Compact(in[i].topics)
		}
	}
	var targets []tpSet
	if cg.assignor == AssignorRange {
		targets = assignRange(in, c.topics)
	} else {
		targets = assignUniform(in, c.topics)
	}
	for i, m := range members {
		m.target = targets[i]
		cg.settle(m)
	}
}

// ---- reconciliation ----

// reconcile moves m towards its target as Kafka's CurrentAssignmentBuilder
// does; owned is what the member reported it owns (nil: not reported).
// Partitions it must give up stay its own, in revoking, until a heartbeat
// reports them gone; partitions another member still holds are granted
// once released.
func (c *Coordinator) reconcile(g *group, m *cmember, owned tpSet) {
	cg := g.cg
	if m.epoch == epochStaticLeave {
		return
	}
	switch m.state {
	case memberStable:
		if m.epoch != cg.targetEpoch {
			c.nextAssignment(g, m, m.epoch)
		}
	case memberUnrevoked:
		if owned == nil {
			break
		}
		for p := range m.revoking {
			if _, still := owned[p]; still {
				return
			}
		}
		for p := range m.revoking {
			if cg.owner[p] == m.id {
				delete(cg.owner, p)
			}
			delete(m.assignedAt, p)
		}
		m.revoking = tpSet{}
		c.nextAssignment(g, m, min(m.epoch+1, cg.targetEpoch))
	case memberUnreleased:
		c.nextAssignment(g, m, m.epoch)
	}
	if m.state == memberUnrevoked {
		if m.rebalanceTimer == nil {
			c.startRevocationTimer(g, m)
		}
	} else {
		m.rebalanceTimer.cancel()
		m.rebalanceTimer = nil
	}
	cg.settle(m)
}

// nextAssignment is Kafka's computeNextAssignment: with partitions to
// revoke, m keeps epoch and the partitions both it and its target hold and
// must revoke the others; otherwise it takes the target epoch and every
// target partition no other member holds.
func (c *Coordinator) nextAssignment(g *group, m *cmember, epoch int32) {
	cg := g.cg
	revoke := tpSet{}
	for p := range m.assigned {
		if _, keep := m.target[p]; !keep {
			revoke[p] = struct{}{}
		}
	}
	if len(revoke) > 0 {
		for p := range revoke {
			delete(m.assigned, p)
			m.revoking[p] = struct{}{}
		}
		m.sent = false
		if m.epoch != epoch {
			m.prevEpoch, m.epoch = m.epoch, epoch
		}
		m.state = memberUnrevoked
		return
	}
	waiting := false
	for p := range m.target {
		if _, have := m.assigned[p]; have {
			continue
		}
		if owner, held := cg.owner[p]; held && owner != m.id {
			waiting = true
			continue
		}
		m.assigned[p] = struct{}{}
		cg.owner[p] = m.id
		m.sent = false
	}
	if m.epoch != cg.targetEpoch {
		m.prevEpoch, m.epoch = m.epoch, cg.targetEpoch
		m.sent = false
	}
	if len(m.assignedAt) != len(m.assigned)+len(m.revoking) {
		if m.assignedAt == nil {
			m.assignedAt = make(map[tp]int32, len(m.assigned))
		}
		for p := range m.assigned {
			if _, ok := m.assignedAt[p]; !ok {
				m.assignedAt[p] = m.epoch
			}
		}
	}
	m.state = memberStable
	if waiting {
		m.state = memberUnreleased
	}
}

// stopConsumerTimers stops every timer of g's consumer-group members.
func (g *group) stopConsumerTimers() {
	if g.cg == nil {
		return
	}
	for _, m := range g.cg.members {
		m.sessionTimer.cancel()
		m.rebalanceTimer.cancel()
		m.sessionTimer, m.rebalanceTimer = nil, nil
	}
}

// ---- describe ----

// ConsumerGroupDescribe answers ConsumerGroupDescribe v0-v1 as Kafka does:
// each group's state, epochs, assignor and members with their epochs,
// subscriptions and current and target assignments (by topic id); an
// empty group id gets INVALID_GROUP_ID, a group that does not exist
// GROUP_ID_NOT_FOUND, and a classic group GROUP_ID_NOT_FOUND with "is not
// a consumer group". AuthorizedOperations is left for the broker to fill.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	for _, name := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = name
		g := c.lookup(name)
		switch {
		case c.closed:
			dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case name == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + clipQuoted(name) + " not found.") // the name is in the answer already
		case g.cg == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + clipQuoted(name) + " is not a consumer group.")
		default:
			cg := g.cg
			dg.State = cg.stateName()
			dg.Epoch = cg.epoch
			dg.AssignmentEpoch = cg.targetEpoch
			dg.AssignorName = cg.assignor
			for _, m := range cg.ordered() {
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID = m.instanceID
				dm.RackID = m.rackID
				dm.MemberEpoch = m.epoch
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				dm.SubscribedTopics = slices.Clone(m.names)
				if dm.SubscribedTopics == nil {
					dm.SubscribedTopics = []string{}
				}
				if m.regex != "" {
					dm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
				}
				dm.Assignment = c.describeAssignment(m.assigned)
				dm.TargetAssignment = c.describeAssignment(m.target)
				dm.MemberType = 1 // a consumer-protocol member
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) describeAssignment(s tpSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range c.byTopic(s) {
		at := kmsg.NewAssignmentTopicPartition()
		at.TopicID = c.topics[t.topic].ID
		at.Topic = t.topic
		at.Partitions = t.parts
		a.TopicPartitions = append(a.TopicPartitions, at)
	}
	return a
}

// ordered returns the members sorted by member id.
func (cg *consumerGroup) ordered() []*cmember {
	out := make([]*cmember, 0, len(cg.members))
	for _, m := range cg.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// describeClassic describes a consumer group in a DescribeGroups answer as
// Kafka's ConsumerGroup.asDescribedGroup does, for tools that only speak
// the classic protocol: protocol type "consumer", the assignor as the
// protocol, and each member's subscription and assignment encoded as a
// classic consumer's metadata and assignment.
func (c *Coordinator) describeClassic(g *group, dg *kmsg.DescribeGroupsResponseGroup) {
	cg := g.cg
	dg.State = cg.stateName()
	dg.ProtocolType = "consumer"
	dg.Protocol = cg.assignor
	for _, m := range cg.ordered() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		md := kmsg.NewConsumerMemberMetadata()
		md.Version = 3
		md.Generation = m.epoch
		md.Topics = slices.Clone(m.names)
		if m.rx != nil {
			md.Topics = append(md.Topics, c.regexTopics(m.rx)...)
			sort.Strings(md.Topics)
			md.Topics = slices.Compact(md.Topics)
		}
		if m.rackID != nil {
			md.Rack = m.rackID
		}
		as := kmsg.NewConsumerMemberAssignment()
		as.Version = 3
		for _, t := range c.byTopic(m.assigned) {
			md.OwnedPartitions = append(md.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t.topic, Partitions: t.parts})
			as.Topics = append(as.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t.topic, Partitions: t.parts})
		}
		dm.ProtocolMetadata = md.AppendTo(nil)
		dm.MemberAssignment = as.AppendTo(nil)
		dg.Members = append(dg.Members, dm)
	}
}

// ---- offsets ----

// consumerCommitCheck validates an OffsetCommit to a consumer group as
// Kafka's ConsumerGroup.validateOffsetCommit does: a commit with a
// negative epoch to a group without members is an admin's; otherwise the
// member must exist (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9+
// (UNSUPPORTED_VERSION) and carry its current epoch (STALE_MEMBER_EPOCH).
// With assignmentEpochs (KIP-1251, Kafka 4.3) an older epoch passes too,
// and the check it returns then decides each partition: accepted when the
// member holds it since that epoch or an earlier one, else
// STALE_MEMBER_EPOCH; a newer epoch than the member's is refused whole.
// The check is nil when every partition passes.
func (cg *consumerGroup) commitCheck(memberID string, epoch int32, version int16, assignmentEpochs bool) (int16, func(topic string, partition int32) int16) {
	if epoch < 0 && len(cg.members) == 0 {
		return errNone, nil
	}
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code, nil
	}
	if version < 9 {
		return kerr.UnsupportedVersion.Code, nil
	}
	switch {
	case epoch == m.epoch:
		return errNone, nil
	case epoch > m.epoch || !assignmentEpochs:
		return kerr.StaleMemberEpoch.Code, nil
	}
	return errNone, func(topic string, partition int32) int16 {
		if at, ok := m.assignedAt[tp{topic, partition}]; ok && at <= epoch {
			return errNone
		}
		return kerr.StaleMemberEpoch.Code
	}
}

// fetchCheck validates an OffsetFetch v9+ for a consumer group as Kafka's
// validateOffsetFetch does: without a member id and with a negative epoch
// it is an admin's; otherwise the member must exist and carry its current
// epoch.
func (cg *consumerGroup) fetchCheck(memberID *string, epoch int32) int16 {
	if (memberID == nil || *memberID == "") && epoch < 0 {
		return errNone
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := cg.members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return errNone
}

// ---- inspection ----

// consumerInfo fills the KIP-848 parts of a GroupInfo.
func (c *Coordinator) consumerInfo(g *group, gi *GroupInfo) {
	cg := g.cg
	gi.Type = "consumer"
	gi.State = cg.stateName()
	gi.Protocol = cg.assignor
	gi.GroupEpoch = cg.epoch
	gi.AssignmentEpoch = cg.targetEpoch
	gi.Generation = cg.epoch
	for _, m := range cg.ordered() {
		mi := MemberInfo{
			MemberID:    m.id,
			ClientID:    m.clientID,
			ClientHost:  m.clientHost,
			MemberEpoch: m.epoch,
			MemberState: m.state.String(),
			Subscribed:  slices.Clone(m.names),
			Regex:       m.regex,
			Current:     c.partitionsOf(m.assigned),
			Target:      c.partitionsOf(m.target),
			Revoking:    c.partitionsOf(m.revoking),
			Heartbeat:   m.lastBeat,
		}
		if m.instanceID != nil {
			mi.InstanceID = *m.instanceID
		}
		gi.Members = append(gi.Members, mi)
	}
}

func (c *Coordinator) partitionsOf(s tpSet) map[string][]int32 {
	out := make(map[string][]int32)
	for _, t := range c.byTopic(s) {
		out[t.topic] = t.parts
	}
	return out
}

// ConsumerGroupStable reports whether group is a consumer group whose every
// member has its target assignment: Stable, with no partition waiting to be
// revoked or released.
func (c *Coordinator) ConsumerGroupStable(group string) bool {
	c.mu.Lock()
	defer c.unlock()
	g := c.lookup(group)
	return g != nil && g.cg != nil && len(g.cg.members) > 0 && g.cg.stateName() == "Stable"
}

// groupType is a group's type as ListGroups names it.
func groupType(g *group) string {
	if g.cg != nil {
		return "consumer"
	}
	if g.sg != nil {
		return "share"
	}
	return "classic"
}

func groupStateName(g *group) string {
	if g.cg != nil {
		return g.cg.stateName()
	}
	if g.sg != nil {
		return g.sg.stateName()
	}
	return g.state.String()
}
