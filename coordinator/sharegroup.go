package coordinator

// Share groups (KIP-932), the share coordinator's half: membership,
// ShareGroupHeartbeat and ShareGroupDescribe, the group epoch, the simple
// assignor that shares a partition among several members, the session
// timeout and leaving. The records each member acquires live in
// sharepartition.go; share sessions, ShareFetch and ShareAcknowledge in
// sharefetch.go; the share group offsets admin APIs and group configs in
// shareadmin.go.
//
// The model is Kafka 4.2's (GroupMetadataManager's share group paths,
// ShareGroup, SimpleAssignor). A share group has a group epoch, bumped when
// a member joins, leaves or changes its subscription and when a subscribed
// topic is created, deleted or grows; its target assignment is computed at
// once. Unlike a consumer group nothing is revoked: several members may
// consume one partition, so each member takes its new assignment, and the
// group epoch as its member epoch, on its next heartbeat.

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's defaults for share groups (group.share.*).
const (
	// DefaultShareSessionTimeout is group.share.session.timeout.ms.
	DefaultShareSessionTimeout = 45 * time.Second
	// DefaultShareHeartbeatInterval is group.share.heartbeat.interval.ms.
	DefaultShareHeartbeatInterval = 5 * time.Second
	// DefaultShareGroupMaxSize is group.share.max.size.
	DefaultShareGroupMaxSize = 200
	// DefaultShareRecordLockDuration is group.share.record.lock.duration.ms:
	// how long a member holds the records it acquired before they become
	// available again.
	DefaultShareRecordLockDuration = 30 * time.Second
	// DefaultShareDeliveryCountLimit is group.share.delivery.count.limit: a
	// record delivered this many times is archived instead of being made
	// available again.
	DefaultShareDeliveryCountLimit = 5
	// DefaultSharePartitionMaxRecordLocks is
	// group.share.partition.max.record.locks: the in-flight records of a
	// share partition, past which no record beyond them is acquired.
	DefaultSharePartitionMaxRecordLocks = 2000
	// DefaultShareMaxSessions is group.share.max.share.sessions: the share
	// sessions one broker holds.
	DefaultShareMaxSessions = 2000
)

// ShareAssignor is the name of the share groups' server-side assignor, as
// ShareGroupDescribe reports it.
const ShareAssignor = "simple"

// MaxShareMemberIDBytes bounds a share member's id: the client makes it,
// Kafka's clients as a UUID (22 characters in base64, 24 padded; 36 as
// text), and a longer or empty one gets INVALID_REQUEST.
const MaxShareMemberIDBytes = 36

// ShareConfig holds Kafka's share group settings (group.share.*). A zero
// field means Kafka's default.
type ShareConfig struct {
	// SessionTimeout is group.share.session.timeout.ms: a member that
	// sends no heartbeat for this long is fenced, its records released.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size: a member joining a share group
	// that has this many gets GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// RecordLockDuration is group.share.record.lock.duration.ms.
	RecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit.
	DeliveryCountLimit int
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks.
	PartitionMaxRecordLocks int
	// MaxSessions is group.share.max.share.sessions, per broker id.
	MaxSessions int
}

func (s ShareConfig) withDefaults() ShareConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&s.SessionTimeout, DefaultShareSessionTimeout)
	def(&s.HeartbeatInterval, DefaultShareHeartbeatInterval)
	def(&s.RecordLockDuration, DefaultShareRecordLockDuration)
	defInt(&s.MaxSize, DefaultShareGroupMaxSize)
	defInt(&s.DeliveryCountLimit, DefaultShareDeliveryCountLimit)
	defInt(&s.PartitionMaxRecordLocks, DefaultSharePartitionMaxRecordLocks)
	defInt(&s.MaxSessions, DefaultShareMaxSessions)
	return s
}

// shareGroup is the KIP-932 state of a group (group.sg). Every field is
// guarded by Coordinator.mu.
type shareGroup struct {
	epoch   int32
	members map[string]*shareMember
	// partitions are the share partitions the group has state for, by
	// topic ID and partition: created by the first fetch or an
	// AlterShareGroupOffsets, dropped with their topic or by
	// DeleteShareGroupOffsets.
	partitions map[tpid]*sharePartition
	// bytes is what the members keep of their ids, client ids, hosts,
	// racks and subscriptions (MaxConsumerGroupBytes bounds it, as for
	// consumer groups).
	bytes int
}

// tpid is one partition of a topic, by topic ID.
type tpid struct {
	id   [16]byte
	part int32
}

// shareMember is one member of a share group.
type shareMember struct {
	id         string
	clientID   string
	clientHost string
	rackID     *string

	epoch     int32
	prevEpoch int32
	names     []string // subscribed topic names, sorted
	assigned  tpSet    // its part of the target assignment
	// sent is false when assigned changed since a heartbeat response
	// last carried it.
	sent bool

	bytes        int
	lastBeat     time.Time
	sessionTimer *timer
}

func (m *shareMember) storedBytes() int {
	n := len(m.id) + len(m.clientID) + len(m.clientHost)
	if m.rackID != nil {
		n += len(*m.rackID)
	}
	for _, s := range m.names {
		n += len(s)
	}
	return n
}

func (sg *shareGroup) account(m *shareMember) {
	b := m.storedBytes()
	sg.bytes += b - m.bytes
	m.bytes = b
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: make(map[string]*shareMember), partitions: make(map[tpid]*sharePartition)}
}

// stateName is the group's state as Kafka names a share group's: Empty or
// Stable.
func (sg *shareGroup) stateName() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// ordered returns the members sorted by member id.
func (sg *shareGroup) ordered() []*shareMember {
	out := make([]*shareMember, 0, len(sg.members))
	for _, m := range sg.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// checkShareMemberID validates a member id as the share APIs take it: the
// UUID the client made (see MaxShareMemberIDBytes).
func checkShareMemberID(id string) (int16, string) {
	switch {
	case blank(id):
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case len(id) > MaxShareMemberIDBytes:
		return kerr.InvalidRequest.Code, fmt.Sprintf("MemberId can't be longer than %d characters: it is the UUID the client generates.", MaxShareMemberIDBytes)
	}
	return errNone, ""
}

// checkShareHeartbeat validates a heartbeat before it reaches a group, as
// Kafka's throwIfShareGroupHeartbeatRequestIsInvalid does.
func checkShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	switch {
	case len(req.GroupID) > MaxGroupIDBytes:
		return kerr.InvalidGroupID.Code, "GroupId is longer than 32767 bytes."
	case blank(req.GroupID):
		return invalid("GroupId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	case req.RackID != nil && len(*req.RackID) > MaxGroupIDBytes:
		return invalid(fmt.Sprintf("RackId is at most %d bytes.", MaxGroupIDBytes))
	case req.MemberEpoch < epochLeave:
		return invalid("MemberEpoch is invalid.")
	case req.MemberEpoch == epochJoin && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	case slices.ContainsFunc(req.SubscribedTopicNames, func(n string) bool { return len(n) > maxTopicNameBytes }):
		return invalid(fmt.Sprintf("SubscribedTopicNames holds a name longer than %d bytes, which no topic can have.", maxTopicNameBytes))
	case len(req.SubscribedTopicNames) > MaxSubscribedTopicNames:
		return invalid(fmt.Sprintf("SubscribedTopicNames names more than %d topics.", MaxSubscribedTopicNames))
	}
	return checkShareMemberID(req.MemberID)
}

// shareGroupOf returns the share group named name, creating it when
// create is set and no group has the name: GROUP_ID_NOT_FOUND when it does
// not exist (and is not created) or is a classic or consumer group, as
// Kafka's getOrMaybeCreateShareGroup answers. Call it with c.mu held.
func (c *Coordinator) shareGroupOf(caller Caller, name string, create bool) (*group, int16, string) {
	g := c.groups[name]
	switch {
	case g == nil && !create:
		return nil, kerr.GroupIDNotFound.Code, "Share group " + name + " not found."
	case g == nil:
		g = c.newGroup(name)
		g.sg = newShareGroup()
		g.protocolType = "share"
		c.shareGroups++
		caller.GroupCreated(name)
	case g.sg == nil:
		return nil, kerr.GroupIDNotFound.Code, "Group " + name + " is not a share group."
	}
	return g, errNone, ""
}

// ShareGroupHeartbeat answers ShareGroupHeartbeat v1 (KIP-932) as Kafka 4.2
// does, creating the group on a member's first heartbeat (epoch 0). Epoch
// -1 leaves, releasing the records the member holds; a positive epoch is a
// heartbeat, which moves the member to the group epoch and, when it
// changed or the request carries the subscription, sends its assignment.
// Errors are Kafka's: INVALID_REQUEST for a malformed request (empty group
// or member id, a member id longer than 36 characters, a join without
// subscription, an epoch below -1, an empty rack), INVALID_GROUP_ID,
// GROUP_ID_NOT_FOUND for a group that does not exist (epoch other than 0)
// or is a classic or consumer group, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH (an epoch the member does not have) and
// GROUP_MAX_SIZE_REACHED. caller names the client of a new member. It never
// blocks.
func (c *Coordinator) ShareGroupHeartbeat(caller Caller, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	code, msg := c.shareHeartbeat(caller, req, resp)
	if code != errNone {
		resp.ErrorCode = code
		resp.MemberID = nil
		resp.MemberEpoch = 0
		resp.Assignment = nil
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
	}
	return resp
}

func (c *Coordinator) shareHeartbeat(caller Caller, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) (int16, string) {
	if c.closed {
		return kerr.CoordinatorNotAvailable.Code, ""
	}
	if code, msg := checkShareHeartbeat(req); code != errNone {
		return code, msg
	}
	g, code, msg := c.shareGroupOf(caller, req.GroupID, req.MemberEpoch == epochJoin)
	if g == nil {
		return code, msg
	}
	resp.HeartbeatIntervalMillis = int32(c.shareSetting(g.name).heartbeat / time.Millisecond)
	sg := g.sg
	m := sg.members[req.MemberID]
	switch {
	case req.MemberEpoch == epochLeave:
		if m == nil {
			return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of share group " + g.name + "."
		}
		c.removeShareMember(g, m)
		resp.MemberID = kmsg.StringPtr(m.id)
		resp.MemberEpoch = epochLeave
		resp.HeartbeatIntervalMillis = 0
		return errNone, ""
	case req.MemberEpoch == epochJoin:
		if m == nil {
			if len(sg.members) >= c.share.MaxSize {
				return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", c.share.MaxSize)
			}
			m = &shareMember{id: req.MemberID}
		}
	default:
		if m == nil {
			return kerr.UnknownMemberID.Code, "Member " + req.MemberID + " is not a member of share group " + g.name + "."
		}
		if req.MemberEpoch != m.epoch && req.MemberEpoch != m.prevEpoch {
			than := "smaller"
			if req.MemberEpoch > m.epoch {
				than = "greater"
			}
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a %s member epoch (%d) than the one known by the group coordinator (%d). The member must rejoin.",
				than, req.MemberEpoch, m.epoch)
		}
	}
	// What the member keeps after this heartbeat, checked before any
	// change so that a refused heartbeat changes nothing.
	next := *m
	if req.MemberEpoch == epochJoin {
		next.clientID, next.clientHost = caller.Client()
	}
	if req.RackID != nil {
		s := *req.RackID
		next.rackID = &s
	}
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		names = slices.Compact(names)
		changed = !slices.Equal(names, m.names)
		next.names = names
	}
	if sg.bytes-m.bytes+next.storedBytes() > MaxConsumerGroupBytes {
		return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group's members would keep more than %d bytes of ids and subscriptions.", MaxConsumerGroupBytes)
	}
	m.clientID, m.clientHost, m.rackID, m.names = next.clientID, next.clientHost, next.rackID, next.names
	if sg.members[m.id] == nil {
		sg.members[m.id] = m
		changed = true
		c.shareMembersChanged(g)
	}
	sg.account(m)
	if changed {
		c.bumpShareEpoch(g)
	}
	c.resetShareSession(g, m)
	full := req.MemberEpoch == epochJoin || req.SubscribedTopicNames != nil
	if m.epoch != sg.epoch {
		m.prevEpoch, m.epoch = m.epoch, sg.epoch
	}
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	if full || !m.sent {
		m.sent = true
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, t := range c.byTopic(m.assigned) {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID = c.topics[t.topic].ID
			at.Partitions = t.parts
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		resp.Assignment = &a
	}
	return errNone, ""
}

// removeShareMember drops m from its group, as a leave or a session
// timeout does: its share sessions end, the records it holds are released
// (or archived at the delivery count limit) and the group moves to a new
// epoch.
func (c *Coordinator) removeShareMember(g *group, m *shareMember) {
	sg := g.sg
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	delete(sg.members, m.id)
	sg.bytes -= m.bytes
	c.dropShareSessionsOf(g.name, m.id)
	c.releaseMember(g, m.id)
	c.bumpShareEpoch(g)
	c.shareMembersChanged(g)
}

// shareMembersChanged keeps the classic state of a share group in step
// with its members, as for consumer groups, for the group cleanup and
// DeleteGroups.
func (c *Coordinator) shareMembersChanged(g *group) { c.membersChanged(g, len(g.sg.members)) }

// resetShareSession restarts m's session timeout (share.session.timeout.ms
// for the group): when it passes without a heartbeat, m is fenced.
func (c *Coordinator) resetShareSession(g *group, m *shareMember) {
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	m.lastBeat = c.clock.Now()
	if c.closed {
		return
	}
	m.sessionTimer = c.after(c.shareSetting(g.name).session, func() {
		m.sessionTimer = nil
		if c.groups[g.name] != g || g.sg == nil || g.sg.members[m.id] != m {
			return
		}
		c.log.Debug("coordinator: share group member session timeout", "group", g.name, "member", m.id)
		c.removeShareMember(g, m)
	})
}

// stopShareTimers stops every timer of g's share state: its members'
// sessions and its partitions' acquisition locks.
func (g *group) stopShareTimers() {
	if g.sg == nil {
		return
	}
	for _, m := range g.sg.members {
		m.sessionTimer.cancel()
		m.sessionTimer = nil
	}
	for _, sp := range g.sg.partitions {
		sp.stopTimer()
	}
}

// ---- assignment ----

// bumpShareEpoch starts a new group epoch and computes its target
// assignment at once.
func (c *Coordinator) bumpShareEpoch(g *group) {
	sg := g.sg
	sg.epoch++
	if len(sg.members) == 0 {
		return
	}
	members := sg.ordered()
	targets := c.assignShare(members)
	for i, m := range members {
		if !tpSetEqual(m.assigned, targets[i]) {
			m.assigned = targets[i]
			m.sent = false
		}
	}
}

func tpSetEqual(a, b tpSet) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			return false
		}
	}
	return true
}

// assignShare is the simple assignor of share groups: per subscribed topic,
// with fewer members than partitions each member takes a contiguous range
// of partitions (the first ranges one longer when they do not divide
// evenly); with more, each partition is shared by members in turn, so that
// every member consumes one partition and every partition has
// members/partitions of them, give or take one. Each topic starts where
// the last one left off, so that the extras spread over the members.
// members are sorted by id.
func (c *Coordinator) assignShare(members []*shareMember) []tpSet {
	out := make([]tpSet, len(members))
	subs := map[string][]int{}
	for i, m := range members {
		out[i] = tpSet{}
		for _, name := range m.names {
			if _, ok := c.topics[name]; ok {
				subs[name] = append(subs[name], i)
			}
		}
	}
	topics := make([]string, 0, len(subs))
	for t := range subs {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	rot := 0
	for _, t := range topics {
		idx := subs[t]
		n, k := int(c.topics[t].Partitions), len(idx)
		if n == 0 {
			continue
		}
		if k <= n {
			per, extra := n/k, n%k
			next := 0
			for j := range k {
				who := idx[(j+rot)%k]
				cnt := per
				if j < extra {
					cnt++
				}
				for p := next; p < next+cnt; p++ {
					out[who][tp{t, int32(p)}] = struct{}{}
				}
				next += cnt
			}
		} else {
			for j, who := range idx {
				out[who][tp{t, int32((j + rot) % n)}] = struct{}{}
			}
		}
		rot += n
	}
	return out
}

// shareTopicsChanged reacts to topics created, deleted or grown: share
// groups subscribed to one move to a new epoch, and the share partitions
// of a topic that no longer exists (or no longer has the partition) are
// dropped with their records' states. Call it with c.mu held.
func (c *Coordinator) shareTopicsChanged(changed []string) {
	if c.shareGroups == 0 {
		return
	}
	for _, g := range c.groups {
		sg := g.sg
		if sg == nil {
			continue
		}
		for k, sp := range sg.partitions {
			name, ok := c.topicIDs[k.id]
			if ok && k.part < c.topics[name].Partitions {
				continue
			}
			sp.stopTimer()
			delete(sg.partitions, k)
		}
		hit := false
		for _, m := range sg.members {
			for _, name := range changed {
				if _, ok := slices.BinarySearch(m.names, name); ok {
					hit = true
				}
			}
		}
		if hit {
			for _, m := range sg.members {
				m.sent = false // a topic recreated under its name has a new id
			}
			c.bumpShareEpoch(g)
		}
	}
}

// ---- describe ----

// ShareGroupDescribe answers ShareGroupDescribe v1 as Kafka does: each
// share group's state, epochs, assignor and members with their
// subscriptions and assignments (by topic id and name). An empty group id
// gets INVALID_GROUP_ID, a group that does not exist GROUP_ID_NOT_FOUND,
// and a classic or consumer group GROUP_ID_NOT_FOUND with "is not a share
// group". AuthorizedOperations is left for the broker to fill.
func (c *Coordinator) ShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.Version = req.Version
	for _, name := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = name
		g := c.lookup(name)
		switch {
		case c.closed:
			dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case name == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + clipQuoted(name) + " not found.")
		case g.sg == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + clipQuoted(name) + " is not a share group.")
		default:
			sg := g.sg
			dg.GroupState = sg.stateName()
			dg.GroupEpoch = sg.epoch
			dg.AssignmentEpoch = sg.epoch
			dg.Assignor = ShareAssignor
			for _, m := range sg.ordered() {
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID = m.id
				dm.RackID = m.rackID
				dm.MemberEpoch = m.epoch
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				dm.SubscribedTopicNames = slices.Clone(m.names)
				if dm.SubscribedTopicNames == nil {
					dm.SubscribedTopicNames = []string{}
				}
				dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
				for _, t := range c.byTopic(m.assigned) {
					at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					at.TopicID = c.topics[t.topic].ID
					at.Topic = t.topic
					at.Partitions = t.parts
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}
