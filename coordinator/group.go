package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// state is a classic group's state, named as Kafka names it.
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

// group is one classic group. Every field is guarded by Coordinator.mu.
type group struct {
	name         string
	state        state
	protocolType string
	protocol     string
	generation   int32
	leader       string

	members map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED that have
	// not joined with them yet (KIP-394).
	pending map[string]*pendingMember
	// static maps group.instance.id to the member id that holds it
	// (KIP-345); always empty with Rules.IgnoreGroupInstanceID.
	static map[string]string
	// pendingSync are the members of this generation that have not sent
	// SyncGroup yet; they are removed when the sync timer fires.
	pendingSync map[string]struct{}

	joinTimer *timer // rebalance timeout or initial delay, while PreparingRebalance
	syncTimer *timer // rebalance timeout for pendingSync

	// initial rebalance delay (Kafka's InitialDelayedJoin)
	inInitialDelay bool
	newMemberAdded bool

	offsets    map[string]map[int32]offset
	emptySince time.Time
	// committedBy is the client id of the last OffsetCommit, when its
	// Caller named one, so that findings about the offsets of an empty
	// group name a client.
	committedBy string

	// cg is set while the group is a KIP-848 consumer group
	// (consumergroup.go). Its members are there, not in members; state is
	// then Empty without members and Stable with some, for the group
	// cleanup and DeleteGroups.
	cg *consumerGroup

	// coordinator is the broker that coordinates the group, as
	// Config.Locate last said (located: once it has), and paused is set
	// while that broker does not serve: the group's timers wait for the
	// broker that takes it over (failover.go).
	coordinator int32
	located     bool
	paused      bool
	// sg is set for a KIP-932 share group (sharegroup.go): its members
	// are there, and its state is Empty or Stable as for cg. A share
	// group stays one until it is deleted.
	sg *shareGroup
}

// member is one joined member.
type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	seq        uint64

	protocolType string
	protocols    []kmsg.JoinGroupRequestProtocol
	session      time.Duration
	rebalance    time.Duration
	assignment   []byte

	// joinWait is set while the member is blocked in JoinGroup; syncWait
	// while it is blocked in SyncGroup. The session timer is paused while
	// either is set, as Kafka keeps members awaiting a response alive.
	joinWait    chan *kmsg.JoinGroupResponse
	joinVersion int16
	syncWait    chan *kmsg.SyncGroupResponse
	syncVersion int16

	sessionTimer *timer
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED.
type pendingMember struct {
	id    string
	timer *timer // the session timeout
	// conn is done once the connection that asked for the id has closed
	// (the ctx of its JoinGroup); nil when that is unknown.
	conn    <-chan struct{}
	unwatch func() bool // stops watching conn; nil when not watching
}

// disconnected reports whether the connection that asked for p's id has
// closed.
func (p *pendingMember) disconnected() bool {
	select {
	case <-p.conn:
		return true
	default:
		return false
	}
}

// storedBytes is what the coordinator keeps for m: the bytes of its ids,
// client id and host, protocol type, protocols and assignment.
func (m *member) storedBytes() int {
	n := len(m.id) + len(m.clientID) + len(m.clientHost) + len(m.protocolType) + len(m.assignment)
	if m.instanceID != nil {
		n += len(*m.instanceID)
	}
	for _, p := range m.protocols {
		n += len(p.Name) + len(p.Metadata)
	}
	return n
}

// storedBytes is what the coordinator keeps for g's members and the member
// ids it handed out with MEMBER_ID_REQUIRED, leaving out the member except
// (a member joining, counted anew).
func (g *group) storedBytes(except string) int {
	n := 0
	for id, m := range g.members {
		if id != except {
			n += m.storedBytes()
		}
	}
	for id := range g.pending {
		if id != except {
			n += len(id)
		}
	}
	return n
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	if len(m.protocols) > 0 && protocol == "" {
		return m.protocols[0].Metadata
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return true
		}
	}
	return false
}

// sameProtocols reports whether a rejoin carries exactly the protocols (names,
// order and metadata) the member joined with last time.
func (m *member) sameProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if m.protocolType != protocolType || len(m.protocols) != len(ps) {
		return false
	}
	for i := range ps {
		if m.protocols[i].Name != ps[i].Name || !bytes.Equal(m.protocols[i].Metadata, ps[i].Metadata) {
			return false
		}
	}
	return true
}

// ordered returns the members in join order.
func (g *group) ordered() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// rebalanceTimeout is the longest rebalance timeout of the members, as Kafka
// waits for the slowest.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// supports reports whether a member joining with protocolType and protocols
// may join: an empty group takes anything non-empty, otherwise the type must
// match and one protocol must be supported by every other member (Kafka's
// supportsProtocols).
func (g *group) supports(protocolType string, ps []kmsg.JoinGroupRequestProtocol, self string) bool {
	others := 0
	for id := range g.members {
		if id != self {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.allSupport(p.Name, self) {
			return true
		}
	}
	return false
}

// allSupport reports whether every member but except supports protocol name.
func (g *group) allSupport(name, except string) bool {
	for id, m := range g.members {
		if id != except && !m.supports(name) {
			return false
		}
	}
	return true
}

// vote picks the group's protocol as Kafka does: among the protocols every
// member supports, each member votes for its first preference, and the most
// votes win. Ties go to the earlier protocol in the leader's list.
func (g *group) vote() string {
	leader := g.members[g.leader]
	var candidates []string
	for _, p := range leader.protocols {
		if g.allSupport(p.Name, "") { // member ids are never empty
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 {
		return leader.protocols[0].Name
	}
	votes := make(map[string]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, name := range candidates[1:] {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// checkInstance validates a static member's (instance id, member id) pair as
// Kafka's validateMember does.
func (g *group) checkInstance(instanceID, memberID string) int16 {
	id, ok := g.static[instanceID]
	if !ok {
		return kerr.UnknownMemberID.Code
	}
	if id != memberID {
		return kerr.FencedInstanceID.Code
	}
	return errNone
}

// validate checks a request from a member of the current generation, as
// Kafka's validateMember does for SyncGroup, Heartbeat and OffsetCommit:
// the static instance id if any (checkInstance), then UNKNOWN_MEMBER_ID,
// then ILLEGAL_GENERATION. It returns the member, or nil and the code.
func (g *group) validate(instanceID *string, memberID string, generation int32) (*member, int16) {
	if instanceID != nil {
		if code := g.checkInstance(*instanceID, memberID); code != errNone {
			return nil, code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return nil, kerr.IllegalGeneration.Code
	}
	return m, errNone
}

func (g *group) stopTimers(c *Coordinator) {
	g.stopConsumerTimers()
	g.stopShareTimers()
	g.joinTimer.cancel()
	g.syncTimer.cancel()
	g.joinTimer, g.syncTimer = nil, nil
	for _, m := range g.members {
		m.sessionTimer.cancel()
		m.sessionTimer = nil
		if m.joinWait != nil {
			c.deliverJoin(g, m, joinError(m.joinVersion, m.id, kerr.CoordinatorNotAvailable.Code))
		}
		if m.syncWait != nil {
			c.deliverSync(g, m, syncError(m.syncVersion, kerr.CoordinatorNotAvailable.Code))
		}
	}
	for _, p := range g.pending {
		c.dropPending(g, p)
	}
}

// ---- JoinGroup ----

// JoinGroup joins a member to a group, creating the group if need be, and
// BLOCKS until the join phase of the rebalance completes (every known member
// has rejoined, the rebalance timeout or the initial rebalance delay has
// passed), ctx is done, or the coordinator closes. It follows Kafka 4.x's
// classic protocol: a session timeout outside Config.MinSessionTimeout and
// MaxSessionTimeout, or negative, gets INVALID_SESSION_TIMEOUT; any rebalance timeout is
// accepted, as Kafka accepts Kafka Streams' Integer.MAX_VALUE (one of 0 or
// less, and v0's missing one, is taken as the session timeout); a v4+ join
// without a member id gets MEMBER_ID_REQUIRED and a new member id at once
// (KIP-394); a v5+ join with group.instance.id is a static member (KIP-345)
// unless Rules.IgnoreGroupInstanceID, which treats it as dynamic as VAST
// does. Under Rules.EagerAssignorsOnly the cooperative protocols
// (Rules.CooperativeAssignors) of a "consumer" group are left out of the
// vote and a member offering nothing else gets INCONSISTENT_GROUP_PROTOCOL;
// Rules.MaxGroups refuses creating one group too many with
// GROUP_MAX_SIZE_REACHED, after deleting the groups Kafka's cleanup would
// delete. Both refusals go to caller, which also names the client (its id
// and host go to the member) and hears of a group created. A join
// that would make what the group keeps for its members exceed
// GroupMetadataMaxBytes gets GROUP_MAX_SIZE_REACHED too, in both profiles,
// and a group name longer than MaxGroupIDBytes INVALID_GROUP_ID.
//
// ctx is the client connection's: when it is done, a blocked JoinGroup
// answers COORDINATOR_NOT_AVAILABLE and the member stays until its session
// timeout unless it rejoins, and a member id handed out with
// MEMBER_ID_REQUIRED that was not used yet is forgotten. So a member that
// went away holds a join phase up for at most its session timeout (30 min
// by default), however long its rebalance timeout.
func (c *Coordinator) JoinGroup(ctx context.Context, caller Caller, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	caller, flush := deferRefusals(caller)
	c.mu.Lock()
	resp, wait, m := c.join(ctx, caller, req)
	c.unlock()
	flush()
	if wait == nil {
		return resp
	}
	if r, ok := await(c, ctx, wait, &m.joinWait, req.Group, m); ok {
		return r
	}
	return joinError(req.Version, m.id, kerr.CoordinatorNotAvailable.Code)
}

// await blocks until wait delivers m's answer, ctx ends or the coordinator
// closes. When it gives up it takes c.mu and still returns an answer that
// arrived meanwhile; otherwise it clears *slot (if it still holds wait),
// restarts the member's session timer, and returns false.
func await[R any](c *Coordinator, ctx context.Context, wait chan R, slot *chan R, group string, m *member) (R, bool) {
	select {
	case r := <-wait:
		return r, true
	case <-ctx.Done():
	case <-c.done:
	}
	c.mu.Lock()
	defer c.unlock()
	select {
	case r := <-wait:
		return r, true
	default:
	}
	if *slot == wait {
		*slot = nil
		if g := c.groups[group]; g != nil && g.members[m.id] == m {
			c.resetSession(g, m)
		}
	}
	var none R
	return none, false
}

func joinError(version int16, memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = version
	r.MemberID = memberID
	r.ErrorCode = code
	return r
}

// usableProtocols copies the request's protocols, leaving out the
// cooperative ones (Rules.CooperativeAssignors) of a "consumer" group
// under an enforced Rules.EagerAssignorsOnly. It returns none when every
// protocol offered is cooperative and the rule refuses that (enforced), or
// all of them when the rule is audited, with a finding.
func (c *Coordinator) usableProtocols(caller Caller, req *kmsg.JoinGroupRequest) []kmsg.JoinGroupRequestProtocol {
	cooperative := func(p kmsg.JoinGroupRequestProtocol) bool {
		return c.rules.EagerAssignorsOnly && req.ProtocolType == "consumer" && c.rules.CooperativeAssignor(p.Name)
	}
	eager := 0
	for _, p := range req.Protocols {
		if !cooperative(p) {
			eager++
		}
	}
	if eager == 0 {
		names := make([]string, len(req.Protocols))
		for i, p := range req.Protocols {
			names[i] = p.Name
		}
		if c.vast(caller, rules.EagerAssignorsOnly, rules.Refused, "JoinGroup", req.Group,
			fmt.Sprintf("every protocol offered, %q, is cooperative; VAST rebalances eagerly only", names)) {
			return nil
		}
	}
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		if eager > 0 && cooperative(p) && c.enforced(rules.EagerAssignorsOnly) {
			continue
		}
		out = append(out, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	return out
}

// join runs a JoinGroup under c.mu. It returns either a response, or a
// channel the response will arrive on and the member waiting on it. ctx
// is the connection's (see addPending).
func (c *Coordinator) join(ctx context.Context, caller Caller, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, *member) {
	fail := func(code int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, *member) {
		return joinError(req.Version, req.MemberID, code), nil, nil
	}
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if req.Group == "" || len(req.Group) > MaxGroupIDBytes {
		return fail(kerr.InvalidGroupID.Code)
	}
	session := millis(req.SessionTimeoutMillis)
	// Kafka refuses sessionTimeoutMs < group.min.session.timeout.ms, which
	// is never negative: a negative session timeout is refused even with
	// the minimum removed. Zero passes, as in Kafka with a minimum of 0.
	if session < 0 || session < c.minSession || (c.maxSession > 0 && session > c.maxSession) {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	rebalance := millis(req.RebalanceTimeoutMillis)
	if req.Version == 0 || rebalance <= 0 {
		rebalance = session // v0 has no rebalance timeout: Kafka uses the session timeout
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	protocols := c.usableProtocols(caller, req)
	if len(protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if req.Version >= 5 && req.InstanceID != nil {
		c.vast(caller, rules.IgnoreGroupInstanceID, rules.Differs, "JoinGroup", req.Group,
			"group.instance.id "+strconv.Quote(*req.InstanceID)+": VAST makes the member dynamic, so a restart rebalances the group")
	}
	instanceID := c.instanceID(req.InstanceID, req.Version >= 5)
	clientID, clientHost := caller.Client()
	newMember := func(id string) *member {
		c.seq++
		return &member{
			id:           id,
			instanceID:   instanceID,
			clientID:     clientID,
			clientHost:   clientHost,
			seq:          c.seq,
			protocolType: req.ProtocolType,
			protocols:    protocols,
			session:      session,
			rebalance:    rebalance,
		}
	}

	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return fail(kerr.UnknownMemberID.Code)
		}
		if !c.canCreateGroup(caller, "JoinGroup", req.Group) {
			return fail(kerr.GroupMaxSizeReached.Code)
		}
		g = c.newGroup(req.Group)
		caller.GroupCreated(req.Group)
	}
	if g.sg != nil {
		// A classic member and a share group: Kafka refuses it ("not a
		// classic group"); vastfake answers as for a consumer group
		// with members, which clients report as such.
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if g.cg != nil {
		// A classic member and a KIP-848 consumer group: an Empty one
		// becomes classic, keeping its offsets, as in Kafka; one with
		// members is refused, as Kafka refuses a member whose protocols
		// the group does not support (vastfake does not mix classic
		// members into a consumer group, Kafka's online migration).
		if len(g.cg.members) > 0 {
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		c.toClassicGroup(g)
	}
	if !g.supports(req.ProtocolType, protocols, req.MemberID) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	joining := member{id: req.MemberID, instanceID: instanceID, clientID: clientID, clientHost: clientHost,
		protocolType: req.ProtocolType, protocols: protocols}
	if req.MemberID == "" {
		joining.id = newMemberID(clientID) // the length of the id it would get
	}
	if g.storedBytes(req.MemberID)+joining.storedBytes() > GroupMetadataMaxBytes {
		c.log.InfoContext(ctx, "coordinator: group metadata would exceed its bound", "group", req.Group,
			"bound", GroupMetadataMaxBytes)
		return fail(kerr.GroupMaxSizeReached.Code)
	}

	if req.MemberID == "" {
		if instanceID != nil {
			if old, ok := g.static[*instanceID]; ok {
				return c.replaceStatic(g, g.members[old], newMember(newMemberID(clientID)), req)
			}
			m := newMember(newMemberID(clientID))
			g.static[*instanceID] = m.id
			return c.addAndRebalance(g, m, req)
		}
		id := newMemberID(clientID)
		if req.Version >= 4 {
			c.addPending(ctx, g, id, session)
			r := joinError(req.Version, id, kerr.MemberIDRequired.Code)
			return r, nil, nil
		}
		return c.addAndRebalance(g, newMember(id), req)
	}

	if instanceID != nil {
		if code := g.checkInstance(*instanceID, req.MemberID); code != errNone {
			return fail(code)
		}
	}
	if p := g.pending[req.MemberID]; p != nil {
		c.dropPending(g, p)
		return c.addAndRebalance(g, newMember(p.id), req)
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	switch g.state {
	case statePreparingRebalance:
		c.updateMember(m, req, protocols, session, rebalance)
		return c.awaitJoin(g, m, req)
	case stateCompletingRebalance:
		if m.sameProtocols(req.ProtocolType, protocols) {
			// The member missed its join response: answer it again.
			c.resetSession(g, m)
			return c.joinResult(g, m, req.Version), nil, nil
		}
		c.updateMember(m, req, protocols, session, rebalance)
		return c.awaitJoin(g, m, req)
	case stateStable:
		if m.id != g.leader && m.sameProtocols(req.ProtocolType, protocols) {
			// Kafka: a follower rejoining with unchanged protocols
			// gets the current generation without a rebalance.
			c.resetSession(g, m)
			return c.joinResult(g, m, req.Version), nil, nil
		}
		c.updateMember(m, req, protocols, session, rebalance)
		return c.awaitJoin(g, m, req)
	}
	return fail(kerr.UnknownMemberID.Code)
}

func (c *Coordinator) updateMember(m *member, req *kmsg.JoinGroupRequest, ps []kmsg.JoinGroupRequestProtocol, session, rebalance time.Duration) {
	m.protocolType = req.ProtocolType
	m.protocols = ps
	m.session = session
	m.rebalance = rebalance
}

// addPending records a member id handed out with MEMBER_ID_REQUIRED. As in
// Kafka it is forgotten after the session timeout if the member never joins
// with it; vastfake also forgets it as soon as ctx, the connection that
// asked for it, is done, so that a client that went away does not hold up
// the group's join phase or keep an abandoned group alive. A client that
// reconnects and joins with the forgotten id gets UNKNOWN_MEMBER_ID and
// joins again without one. A connection holds at most one pending id per
// group: asking for a new one forgets the one it holds, since a client joins
// with the id it was given on the same connection; without that, ids piling
// up on an open connection would hold the join phase for a session timeout
// each on a manual clock.
func (c *Coordinator) addPending(ctx context.Context, g *group, id string, session time.Duration) {
	if ctx != nil && ctx.Done() != nil {
		for _, old := range g.pending {
			if old.conn == ctx.Done() {
				c.dropPending(g, old)
			}
		}
	}
	p := &pendingMember{id: id}
	forget := func() {
		if c.groups[g.name] != g || g.pending[id] != p {
			return
		}
		c.dropPending(g, p)
		c.tryCompleteJoin(g)
	}
	p.timer = c.after(session, forget)
	if ctx != nil && ctx.Done() != nil {
		p.conn = ctx.Done()
		c.watchers.Add(1)
		p.unwatch = context.AfterFunc(ctx, func() {
			defer c.watchers.Done()
			c.mu.Lock()
			defer c.unlock()
			if !c.closed {
				forget()
			}
		})
	}
	g.pending[id] = p
}

// dropPending forgets a pending member id and stops its timer and watch.
// Call it with c.mu held.
func (c *Coordinator) dropPending(g *group, p *pendingMember) {
	p.timer.cancel()
	if p.unwatch != nil && p.unwatch() {
		c.watchers.Done() // the watch will never run
	}
	p.unwatch = nil
	delete(g.pending, p.id)
	c.expiryChanged(g) // the last pending id may have kept g from the cleanup
}

// addAndRebalance adds a new member and makes it wait for the join phase.
func (c *Coordinator) addAndRebalance(g *group, m *member, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if g.inInitialDelay {
		g.newMemberAdded = true
	}
	return c.awaitJoin(g, m, req)
}

// awaitJoin parks m in the join phase, starting a rebalance unless one is in
// progress.
func (c *Coordinator) awaitJoin(g *group, m *member, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, *member) {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	if m.joinWait != nil {
		// A second JoinGroup from the same member replaces the first.
		c.deliverJoin(g, m, joinError(m.joinVersion, m.id, kerr.RebalanceInProgress.Code))
	}
	m.joinWait = ch
	m.joinVersion = req.Version
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	if g.state == statePreparingRebalance {
		c.tryCompleteJoin(g)
	} else {
		c.prepareRebalance(g)
	}
	return nil, ch, m
}

// replaceStatic handles a static member rejoining with a known instance id
// and no member id (KIP-345): the new member id takes over, the old one is
// fenced, and a Stable group with unchanged protocols does not rebalance.
func (c *Coordinator) replaceStatic(g *group, old, m *member, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, *member) {
	if old == nil {
		g.static[*m.instanceID] = m.id
		return c.addAndRebalance(g, m, req)
	}
	if old.joinWait != nil {
		c.deliverJoin(g, old, joinError(old.joinVersion, old.id, kerr.FencedInstanceID.Code))
	}
	if old.syncWait != nil {
		c.deliverSync(g, old, syncError(old.syncVersion, kerr.FencedInstanceID.Code))
	}
	old.sessionTimer.cancel()
	old.sessionTimer = nil
	m.seq = old.seq
	m.assignment = old.assignment
	delete(g.members, old.id)
	g.members[m.id] = m
	g.static[*m.instanceID] = m.id
	if g.leader == old.id {
		g.leader = m.id
	}
	if _, ok := g.pendingSync[old.id]; ok {
		delete(g.pendingSync, old.id)
		g.pendingSync[m.id] = struct{}{}
	}
	if g.state == stateStable && old.sameProtocols(m.protocolType, m.protocols) {
		c.resetSession(g, m)
		r := c.joinResult(g, m, req.Version)
		r.SkipAssignment = m.id == g.leader // KIP-814: the leader keeps the assignment
		return r, nil, nil
	}
	return c.awaitJoin(g, m, req)
}

// joinResult is the current generation's JoinGroup answer for m; only the
// leader gets the member list.
func (c *Coordinator) joinResult(g *group, m *member, version int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = version
	r.Generation = g.generation
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
	r.LeaderID = g.leader
	r.MemberID = m.id
	if m.id == g.leader {
		for _, o := range g.ordered() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = o.id
			rm.InstanceID = o.instanceID
			rm.ProtocolMetadata = bytes.Clone(o.metadataFor(g.protocol))
			r.Members = append(r.Members, rm)
		}
	}
	return r
}

// prepareRebalance moves g to PreparingRebalance (Kafka's
// prepareRebalance): a group completing a rebalance fails its waiting
// SyncGroups with REBALANCE_IN_PROGRESS, and the join phase is bounded by the
// rebalance timeout, or by the initial rebalance delay when g was Empty.
func (c *Coordinator) prepareRebalance(g *group) {
	g.syncTimer.cancel()
	g.syncTimer = nil
	g.pendingSync = nil
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncWait != nil {
				c.deliverSync(g, m, syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
			}
		}
	}
	wasEmpty := g.state == stateEmpty
	g.state = statePreparingRebalance
	g.joinTimer.cancel()
	g.joinTimer = nil
	if wasEmpty && c.initialDelay > 0 {
		g.inInitialDelay = true
		g.newMemberAdded = false
		remaining := g.rebalanceTimeout()
		d := min(c.initialDelay, remaining)
		c.scheduleInitialDelay(g, d, remaining-d)
		return
	}
	g.joinTimer = c.after(g.rebalanceTimeout(), func() { c.completeJoin(g) })
	c.tryCompleteJoin(g)
}

// scheduleInitialDelay runs Kafka's InitialDelayedJoin: after each delay, if
// members arrived during it and rebalance time remains, wait another delay;
// otherwise complete the join.
func (c *Coordinator) scheduleInitialDelay(g *group, d, remaining time.Duration) {
	g.joinTimer = c.after(d, func() {
		if c.groups[g.name] != g || g.state != statePreparingRebalance {
			return
		}
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			next := min(c.initialDelay, remaining)
			c.scheduleInitialDelay(g, next, remaining-next)
			return
		}
		g.inInitialDelay = false
		c.completeJoin(g)
	})
}

// tryCompleteJoin completes the join phase once every member and every
// pending member id has joined.
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state != statePreparingRebalance || g.inInitialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinWait == nil {
			return
		}
	}
	c.completeJoin(g)
}

// completeJoin ends the join phase: members that did not rejoin are removed,
// the generation increments, a protocol is voted, and every waiting
// JoinGroup is answered. With no member left the group becomes Empty.
func (c *Coordinator) completeJoin(g *group) {
	if c.groups[g.name] != g || g.state != statePreparingRebalance {
		return
	}
	g.joinTimer.cancel()
	g.joinTimer = nil
	g.inInitialDelay = false
	for _, m := range g.members {
		if m.joinWait == nil {
			c.log.Debug("coordinator: member did not rejoin in time", "group", g.name, "member", m.id)
			c.removeMember(g, m, kerr.UnknownMemberID.Code)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		c.toEmpty(g)
		c.recordRebalance(g)
		return
	}
	if g.members[g.leader] == nil {
		g.leader = g.ordered()[0].id
	}
	g.protocol = g.vote()
	c.auditCooperativeChoice(g)
	g.state = stateCompletingRebalance
	g.pendingSync = make(map[string]struct{}, len(g.members))
	for id := range g.members {
		g.pendingSync[id] = struct{}{}
	}
	gen := g.generation
	g.syncTimer = c.after(g.rebalanceTimeout(), func() { c.syncExpired(g, gen) })
	for _, m := range g.ordered() {
		c.deliverJoin(g, m, c.joinResult(g, m, m.joinVersion))
	}
}

// auditCooperativeChoice records a finding when the group voted for a
// cooperative protocol although every member also offers an eager one:
// VAST, which leaves cooperative protocols out of the vote, would have
// chosen an eager one, so the members would rebalance eagerly (revoking
// every partition) rather than incrementally. A member offering only
// cooperative protocols is the refusal usableProtocols records instead.
func (c *Coordinator) auditCooperativeChoice(g *group) {
	if g.protocolType != "consumer" || !c.rules.EagerAssignorsOnly || !c.rules.CooperativeAssignor(g.protocol) {
		return
	}
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return !c.rules.CooperativeAssignor(p.Name) }) {
			return
		}
	}
	c.vast(c.clientsOf(g), rules.EagerAssignorsOnly, rules.Differs, "JoinGroup", g.name,
		"the group chose "+g.protocol+"; VAST leaves it out of the vote, so the group would rebalance eagerly with another protocol its members offer")
}

func (c *Coordinator) toEmpty(g *group) {
	g.state = stateEmpty
	g.protocol = ""
	g.leader = ""
	g.pendingSync = nil
	g.syncTimer.cancel()
	g.syncTimer = nil
	g.emptySince = c.clock.Now()
	c.expiryChanged(g)
}

// syncExpired removes the members of generation gen that never sent
// SyncGroup within the rebalance timeout, and rebalances.
func (c *Coordinator) syncExpired(g *group, gen int32) {
	if c.groups[g.name] != g || g.generation != gen || len(g.pendingSync) == 0 {
		return
	}
	if g.state != stateCompletingRebalance && g.state != stateStable {
		return
	}
	for id := range g.pendingSync {
		if m := g.members[id]; m != nil {
			c.removeMember(g, m, kerr.UnknownMemberID.Code)
		}
	}
	c.membersLeft(g)
}

// deliverJoin answers m's blocked JoinGroup and restarts its session timer.
func (c *Coordinator) deliverJoin(g *group, m *member, r *kmsg.JoinGroupResponse) {
	m.joinWait <- r
	m.joinWait = nil
	if r.ErrorCode == errNone {
		c.resetSession(g, m)
	}
}

// deliverSync answers m's blocked SyncGroup and restarts its session timer.
func (c *Coordinator) deliverSync(g *group, m *member, r *kmsg.SyncGroupResponse) {
	m.syncWait <- r
	m.syncWait = nil
	if r.ErrorCode == errNone || r.ErrorCode == kerr.RebalanceInProgress.Code {
		c.resetSession(g, m)
	}
}

// resetSession restarts m's session timer, unless m is blocked waiting for a
// JoinGroup or SyncGroup answer, the group's coordinator is away (see
// pauseGroup) or the coordinator is closed.
func (c *Coordinator) resetSession(g *group, m *member) {
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	if m.joinWait != nil || m.syncWait != nil || c.closed || g.paused || g.members[m.id] != m {
		return
	}
	m.sessionTimer = c.after(m.session, func() {
		if c.groups[g.name] != g || g.members[m.id] != m {
			return
		}
		c.log.Debug("coordinator: session timeout", "group", g.name, "member", m.id)
		c.removeMember(g, m, kerr.UnknownMemberID.Code)
		c.membersLeft(g)
	})
}

// removeMember drops m from g without rebalancing; a blocked JoinGroup or
// SyncGroup of m is answered with code.
func (c *Coordinator) removeMember(g *group, m *member, code int16) {
	m.sessionTimer.cancel()
	m.sessionTimer = nil
	if m.joinWait != nil {
		c.deliverJoin(g, m, joinError(m.joinVersion, m.id, code))
	}
	if m.syncWait != nil {
		c.deliverSync(g, m, syncError(m.syncVersion, code))
	}
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// membersLeft reacts to members leaving: a settled group rebalances, a group
// in its join phase may now be complete.
func (c *Coordinator) membersLeft(g *group) {
	switch g.state {
	case stateCompletingRebalance, stateStable:
		c.prepareRebalance(g)
	case statePreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

// ---- SyncGroup ----

// SyncGroup delivers the leader's assignment. A follower's SyncGroup BLOCKS
// until the leader's SyncGroup arrives, the group starts another rebalance
// (REBALANCE_IN_PROGRESS), ctx is done or the coordinator closes
// (COORDINATOR_NOT_AVAILABLE). Errors follow Kafka's classic group:
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID for a replaced static member,
// ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (v5 protocol type or name
// mismatch) and REBALANCE_IN_PROGRESS while PreparingRebalance. In a Stable
// group it returns the member's current assignment at once. A leader's
// assignment that would make the group's members exceed
// GroupMetadataMaxBytes is not stored: every waiting SyncGroup gets
// UNKNOWN_SERVER_ERROR and the group rebalances, as Kafka does when it
// cannot write the group's record.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	c.mu.Lock()
	resp, wait, m := c.sync(req)
	c.unlock()
	if wait == nil {
		return resp
	}
	if r, ok := await(c, ctx, wait, &m.syncWait, req.Group, m); ok {
		return r
	}
	return syncError(req.Version, kerr.CoordinatorNotAvailable.Code)
}

func syncError(version int16, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ErrorCode = code
	return r
}

func (c *Coordinator) syncResult(g *group, m *member, version int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
	r.MemberAssignment = bytes.Clone(m.assignment)
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

func (c *Coordinator) sync(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse, *member) {
	fail := func(code int16) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse, *member) {
		return syncError(req.Version, code), nil, nil
	}
	if c.closed {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	g := c.groups[req.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	m, code := g.validate(c.instanceID(req.InstanceID, req.Version >= 3), req.MemberID, req.Generation)
	if m == nil {
		return fail(code)
	}
	if req.Version >= 5 {
		if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
			(req.Protocol != nil && *req.Protocol != g.protocol) {
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
	}
	switch g.state {
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		c.synced(g, m.id)
		ch := make(chan *kmsg.SyncGroupResponse, 1)
		if m.syncWait != nil {
			c.deliverSync(g, m, syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
		}
		m.syncWait = ch
		m.syncVersion = req.Version
		m.sessionTimer.cancel()
		m.sessionTimer = nil
		if m.id == g.leader {
			// The last assignment given to a member wins, as in Kafka;
			// assignments to members the group does not have are dropped.
			assigned := make(map[string][]byte, len(g.members))
			size := 0
			for _, a := range req.GroupAssignment {
				if g.members[a.MemberID] != nil {
					assigned[a.MemberID] = a.MemberAssignment
				}
			}
			for id, mm := range g.members {
				size += mm.storedBytes() - len(mm.assignment) + len(assigned[id])
			}
			if size > GroupMetadataMaxBytes {
				// Kafka cannot write a group record this large: every
				// waiting SyncGroup gets UNKNOWN_SERVER_ERROR and the group
				// rebalances (GroupMetadataManager.storeGroup).
				c.log.Info("coordinator: assignment would exceed the group metadata bound", "group", g.name,
					"bytes", size, "bound", GroupMetadataMaxBytes)
				for _, mm := range g.ordered() {
					if mm.syncWait != nil {
						c.deliverSync(g, mm, syncError(mm.syncVersion, kerr.UnknownServerError.Code))
						c.resetSession(g, mm)
					}
				}
				c.prepareRebalance(g)
				return nil, ch, m
			}
			for id, mm := range g.members {
				mm.assignment = bytes.Clone(assigned[id])
			}
			g.state = stateStable
			c.recordRebalance(g)
			for _, mm := range g.ordered() {
				if mm.syncWait != nil {
					c.deliverSync(g, mm, c.syncResult(g, mm, mm.syncVersion))
				}
			}
		}
		return nil, ch, m
	case stateStable:
		c.synced(g, m.id)
		c.resetSession(g, m)
		return c.syncResult(g, m, req.Version), nil, nil
	}
	return fail(kerr.UnknownMemberID.Code)
}

// synced notes that a member of the current generation sent SyncGroup.
func (c *Coordinator) synced(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncTimer.cancel()
		g.syncTimer = nil
	}
}

// ---- Heartbeat ----

// Heartbeat keeps a member's session alive, as Kafka's classic group does:
// UNKNOWN_MEMBER_ID for a member the group does not know (or an Empty
// group), FENCED_INSTANCE_ID for a replaced static member,
// ILLEGAL_GENERATION for another generation, and REBALANCE_IN_PROGRESS while
// the group prepares a rebalance, which tells the member to rejoin. It never
// blocks.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = c.heartbeat(req)
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if c.closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	m, code := g.validate(c.instanceID(req.InstanceID, req.Version >= 3), req.MemberID, req.Generation)
	if m == nil {
		return code
	}
	switch g.state {
	case statePreparingRebalance:
		c.resetSession(g, m)
		return kerr.RebalanceInProgress.Code
	case stateCompletingRebalance, stateStable:
		c.resetSession(g, m)
		return errNone
	}
	return kerr.UnknownMemberID.Code
}

// ---- LeaveGroup ----

// LeaveGroup removes members: v0-v2 one member by id with the error at the
// top level, v3+ a batch by member id or group.instance.id with an error per
// member (KIP-345). Leaving rebalances the group, once per request; the last
// member leaving makes it Empty. Under Rules.IgnoreGroupInstanceID instance
// ids are ignored and members are matched by member id only. It never
// blocks.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	topCode := errNone
	switch {
	case c.closed:
		topCode = kerr.CoordinatorNotAvailable.Code
	case req.Group == "":
		topCode = kerr.InvalidGroupID.Code
	case c.groups[req.Group] == nil:
		topCode = kerr.UnknownMemberID.Code
	}
	if topCode != errNone {
		resp.ErrorCode = topCode
		for _, rm := range req.Members {
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{
				MemberID: rm.MemberID, InstanceID: rm.InstanceID, ErrorCode: topCode,
			})
		}
		return resp
	}
	g := c.groups[req.Group]
	left := false
	if req.Version < 3 {
		resp.ErrorCode = c.leaveOne(g, req.MemberID, nil, &left)
	} else {
		for _, rm := range req.Members {
			code := c.leaveOne(g, rm.MemberID, c.instanceID(rm.InstanceID, true), &left)
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{
				MemberID: rm.MemberID, InstanceID: rm.InstanceID, ErrorCode: code,
			})
		}
	}
	if left {
		c.membersLeft(g)
	} else {
		// Only pending member ids left: that matters only to a join
		// phase waiting for them, as in Kafka.
		c.tryCompleteJoin(g)
	}
	return resp
}

func (c *Coordinator) leaveOne(g *group, memberID string, instanceID *string, left *bool) int16 {
	if instanceID != nil {
		id, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if memberID != "" && memberID != id {
			return kerr.FencedInstanceID.Code
		}
		memberID = id
	}
	if p := g.pending[memberID]; p != nil {
		c.dropPending(g, p)
		return errNone
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	c.removeMember(g, m, kerr.UnknownMemberID.Code)
	*left = true
	return errNone
}
