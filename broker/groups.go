package broker

// Groups: FindCoordinator, the classic consumer-group APIs and KIP-848's
// ConsumerGroupHeartbeat and ConsumerGroupDescribe. The state machines
// live in package coordinator; these handlers pass requests to it.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/rules"
)

// Coordinator types in FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// noTransactionsAction is what a refusal of a transaction (rule
// NoIdempotence) asks the app to do.
const noTransactionsAction = "remove transactional.id, or run -profile audit to find every place the app relies on it"

// handleFindCoordinator answers FindCoordinator v0-v6 for groups and
// transactional ids: the coordinator of a key is the broker CoordinatorOf
// names (with one broker, always this one). v4+ look up several keys at
// once; a key named twice is answered once (Kafka answers each copy).
// VAST: there are no transactions, so a transaction coordinator lookup gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (NoIdempotence); audited, it is
// answered and recorded.
func handleFindCoordinator(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := firstOfEach(req.CoordinatorKeys, self)
	if r.version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		coordinatorOf := b.CoordinatorOf
		if req.CoordinatorType == coordinatorTransaction {
			coordinatorOf = b.TxnCoordinatorOf
		}
		c.Key = key
		if n := b.nodeByID(coordinatorOf(key)); n != nil {
			c.NodeID = n.id
			c.Host, c.Port = n.advertisedHostPort()
		} else { // its partition is offline: every replica is down
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		switch req.CoordinatorType {
		case coordinatorGroup:
			if key == "" {
				c.ErrorCode = kerr.InvalidGroupID.Code
			}
		case coordinatorTransaction:
			switch {
			case b.vast(r, rules.NoIdempotence, rules.Refused, "", "", func() string { return "FindCoordinator for the transaction coordinator of " + strconv.Quote(key) }):
				c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				c.ErrorMessage = kmsg.StringPtr(rules.NoIdempotence.Refusal("VAST does not support transactions", noTransactionsAction))
			case key == "":
				c.ErrorCode = kerr.InvalidRequest.Code
			}
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
		}
		if c.ErrorCode != 0 {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if r.version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return resp
}

// handleJoinGroup answers JoinGroup v0-v9. It blocks until the group's join
// phase completes, the connection closes or the broker closes. A session
// timeout outside group.min/max.session.timeout.ms (WithMinSessionTimeout,
// WithMaxSessionTimeout; 6 s and 30 min by default) gets
// INVALID_SESSION_TIMEOUT; a member id handed out with MEMBER_ID_REQUIRED is
// forgotten when its connection closes before joining with it. A protocol
// named twice counts once, with its first copy's metadata, which is the copy
// Kafka's group reads. A join that would make what the group keeps for its
// members (ids, protocols, metadata, assignments) exceed 1 MiB
// (coordinator.GroupMetadataMaxBytes, the record Kafka writes for a group)
// gets GROUP_MAX_SIZE_REACHED, and a group name over 32767 bytes
// (coordinator.MaxGroupIDBytes) INVALID_GROUP_ID.
// VAST: cooperative protocols are refused, others voted on
// (EagerAssignorsOnly), group.instance.id ignored (IgnoreGroupInstanceID),
// at most 256 groups (MaxGroups); a refusal is recorded with its rule.
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleJoinGroup(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	if !b.allowGroup(r, KafkaRead, req.Group) {
		resp := errorAnswer(r, kerr.GroupAuthorizationFailed.Code).(*kmsg.JoinGroupResponse)
		resp.Generation = -1
		return resp
	}
	if ps := firstOfEach(req.Protocols, func(p *kmsg.JoinGroupRequestProtocol) string { return p.Name }); !sameSlice(ps, req.Protocols) {
		merged := *req
		merged.Protocols = ps
		req = &merged
	}
	resp := b.coord.JoinGroup(r.ctx, r, req)
	b.checkOneRunGroups(r)
	return resp
}

// handleSyncGroup answers SyncGroup v0-v5. A follower's call blocks until
// the leader has sent the assignment. An assignment to a member named twice
// keeps the last copy, and one to a member the group does not have is
// dropped, as in Kafka; assignments that would make the group's members
// exceed 1 MiB (coordinator.GroupMetadataMaxBytes) get UNKNOWN_SERVER_ERROR,
// as Kafka answers a group record too large to write, and the group
// rebalances.
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleSyncGroup(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	if !b.allowGroup(r, KafkaRead, req.Group) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	return b.coord.SyncGroup(r.ctx, req)
}

// handleHeartbeat answers Heartbeat v0-v4.
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleHeartbeat(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	if !b.allowGroup(r, KafkaRead, req.Group) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	return b.coord.Heartbeat(req)
}

// handleLeaveGroup answers LeaveGroup v0-v5 (v3+ leave several members; a
// member named twice, by the same member and instance ids, is answered
// once).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleLeaveGroup(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	type who struct {
		member, instance string
		static           bool
	}
	if ms := firstOfEach(req.Members, func(m *kmsg.LeaveGroupRequestMember) who {
		return who{m.MemberID, derefString(m.InstanceID), m.InstanceID != nil}
	}); !sameSlice(ms, req.Members) {
		merged := *req
		merged.Members = ms
		req = &merged
	}
	if !b.allowGroup(r, KafkaRead, req.Group) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	return b.coord.LeaveGroup(req)
}

// consumerTopics lists the topics KIP-848 consumer groups may be assigned:
// every topic Metadata lists, with the id it reports. As in Kafka, a
// regular expression is matched against internal topics too
// (__consumer_offsets in the kafka profile).
func (b *Broker) consumerTopics() []coordinator.TopicMeta {
	all := b.data.listed()
	out := make([]coordinator.TopicMeta, len(all))
	for i, t := range all {
		out[i] = coordinator.TopicMeta{Name: t.name, ID: b.topicID(t), Partitions: int32(len(t.partitions))}
	}
	return out
}

// consumerTopic is consumerTopics' entry for one topic, and whether it
// exists (coordinator.Config.Topic).
func (b *Broker) consumerTopic(name string) (coordinator.TopicMeta, bool) {
	t := b.data.get(name)
	if t == nil {
		return coordinator.TopicMeta{}, false
	}
	return coordinator.TopicMeta{Name: t.name, ID: b.topicID(t), Partitions: int32(len(t.partitions))}, true
}

// handleConsumerGroupHeartbeat answers ConsumerGroupHeartbeat v0-v1
// (KIP-848), served where ClassicGroupsOnly is not enforced: the kafka
// profile, and the audit profile, which records each request as a finding
// of the rule. The coordinator computes the assignment (uniform or range)
// and reconciles each member on its heartbeats; see
// coordinator.ConsumerGroupHeartbeat for the errors.
// VAST: not advertised, and a client that sends it anyway has its
// connection closed (ClassicGroupsOnly).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleConsumerGroupHeartbeat(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !b.allowGroup(r, KafkaRead, req.Group) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	return b.coord.ConsumerGroupHeartbeat(r, req)
}

// handleConsumerGroupDescribe answers ConsumerGroupDescribe v0-v1: each
// consumer group's epochs, assignor and members with their current and
// target assignments. A group named twice is described once.
// VAST: not advertised (ClassicGroupsOnly).
// Authorizes: KafkaDescribe on each group (GROUP_AUTHORIZATION_FAILED).
func handleConsumerGroupDescribe(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ConsumerGroupDescribeRequest)
	if gs := firstOfEach(req.Groups, self); !sameSlice(gs, req.Groups) {
		merged := *req
		merged.Groups = gs
		req = &merged
	}
	resp := b.coord.ConsumerGroupDescribe(req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.Group; !b.allowGroup(r, KafkaDescribe, name) {
			*g = kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		}
	}
	return resp
}

// handleDescribeGroups answers DescribeGroups v0-v5. A group named twice is
// described once (Kafka describes each copy).
// Authorizes: KafkaDescribe on each group (GROUP_AUTHORIZATION_FAILED).
func handleDescribeGroups(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	if gs := firstOfEach(req.Groups, self); !sameSlice(gs, req.Groups) {
		merged := *req
		merged.Groups = gs
		req = &merged
	}
	resp := b.coord.DescribeGroups(req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.Group; !b.allowGroup(r, KafkaDescribe, name) {
			*g = kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		}
	}
	return resp
}

// handleListGroups answers ListGroups v0-v5 (v4 filters by state, v5 by
// type).
// VAST: there are never more than 256 groups to list (MaxGroups caps their
// creation).
// Authorizes: KafkaDescribe on each group; the ones the user may not
// describe are left out, as Kafka does.
func handleListGroups(b *Broker, r *request) kmsg.Response {
	resp := b.coord.ListGroups(r.kreq.(*kmsg.ListGroupsRequest))
	if b.authz.active() {
		visible := resp.Groups[:0]
		for _, g := range resp.Groups {
			if b.allowGroup(r, KafkaDescribe, g.Group) {
				visible = append(visible, g)
			}
		}
		resp.Groups = visible
	}
	if max := b.rules.MaxGroups; max > 0 && len(resp.Groups) > max {
		b.vast(r, rules.MaxGroups, rules.Differs, "", "", func() string {
			return "ListGroups answered " + strconv.Itoa(len(resp.Groups)) + " groups; VAST lists at most " + strconv.Itoa(max)
		})
	}
	return resp
}

// handleDeleteGroups answers DeleteGroups v0-v2: a group with members gets
// NON_EMPTY_GROUP; deleting a group removes its committed offsets (VAST's Consume events page). A
// group named twice is answered once.
// Authorizes: KafkaDelete on each group (GROUP_AUTHORIZATION_FAILED) (VAST's Consume events page).
func handleDeleteGroups(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	allowed := *req
	allowed.Groups = nil
	var denied []kmsg.DeleteGroupsResponseGroup
	for _, g := range firstOfEach(req.Groups, self) {
		if b.allowGroup(r, KafkaDelete, g) {
			allowed.Groups = append(allowed.Groups, g)
			continue
		}
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		denied = append(denied, d)
	}
	resp := b.coord.DeleteGroups(&allowed)
	resp.Groups = append(resp.Groups, denied...)
	return resp
}

// handleOffsetDelete answers OffsetDelete v0, served only in the kafka
// profile.
// A partition named twice is answered once.
// VAST: unsupported; delete the group instead (NoOffsetDelete hides it).
// Authorizes: KafkaDelete on the group (GROUP_AUTHORIZATION_FAILED).
func handleOffsetDelete(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	if ts := mergeTopics(req.Topics,
		func(t *kmsg.OffsetDeleteRequestTopic) string { return t.Topic },
		func(t *kmsg.OffsetDeleteRequestTopic) *[]kmsg.OffsetDeleteRequestTopicPartition { return &t.Partitions },
		func(p *kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition },
		firstOfEach); !sameSlice(ts, req.Topics) {
		merged := *req
		merged.Topics = ts
		req = &merged
	}
	if !b.allowGroup(r, KafkaDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return b.coord.OffsetDelete(req)
}
