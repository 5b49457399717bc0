package broker

// Groups: FindCoordinator and the classic consumer-group APIs. The state
// machine lives in package coordinator; these handlers pass requests to it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
)

// Coordinator types in FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// handleFindCoordinator answers FindCoordinator v0-v6: this broker
// coordinates every group. v4+ look up several keys at once.
// VAST: there are no transactions, so a transaction coordinator lookup gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (NoIdempotence); vastfake serves no
// transaction coordinator in the kafka profile either.
func handleFindCoordinator(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if r.version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port = key, b.cfg.nodeID, b.host, b.port
		switch req.CoordinatorType {
		case coordinatorGroup:
			if key == "" {
				c.ErrorCode = kerr.InvalidGroupID.Code
			}
		case coordinatorTransaction:
			if b.rules.NoIdempotence {
				r.refuse("NoIdempotence")
			}
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			c.ErrorMessage = kmsg.StringPtr("vastfake has no transaction coordinator (VAST does not support transactions)")
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
// phase completes, the connection closes or the broker closes.
// VAST: eager assignors only (EagerAssignorsOnly), group.instance.id
// ignored (IgnoreGroupInstanceID), at most 256 groups (MaxGroups).
func handleJoinGroup(b *Broker, r *request) kmsg.Response {
	ctx := coordinator.WithClient(r.ctx, r.clientID, r.conn.remoteHost())
	return b.coord.JoinGroup(ctx, r.kreq.(*kmsg.JoinGroupRequest))
}

// handleSyncGroup answers SyncGroup v0-v5. A follower's call blocks until
// the leader has sent the assignment.
func handleSyncGroup(b *Broker, r *request) kmsg.Response {
	return b.coord.SyncGroup(r.ctx, r.kreq.(*kmsg.SyncGroupRequest))
}

// handleHeartbeat answers Heartbeat v0-v4.
func handleHeartbeat(b *Broker, r *request) kmsg.Response {
	return b.coord.Heartbeat(r.kreq.(*kmsg.HeartbeatRequest))
}

// handleLeaveGroup answers LeaveGroup v0-v5 (v3+ leave several members).
func handleLeaveGroup(b *Broker, r *request) kmsg.Response {
	return b.coord.LeaveGroup(r.kreq.(*kmsg.LeaveGroupRequest))
}

// handleDescribeGroups answers DescribeGroups v0-v5.
func handleDescribeGroups(b *Broker, r *request) kmsg.Response {
	return b.coord.DescribeGroups(r.kreq.(*kmsg.DescribeGroupsRequest))
}

// handleListGroups answers ListGroups v0-v5 (v4 filters by state, v5 by
// type).
// VAST: at most 256 groups are listed (MaxGroups).
func handleListGroups(b *Broker, r *request) kmsg.Response {
	return b.coord.ListGroups(r.kreq.(*kmsg.ListGroupsRequest))
}

// handleDeleteGroups answers DeleteGroups v0-v2: a group with members gets
// NON_EMPTY_GROUP; deleting a group removes its committed offsets [000].
func handleDeleteGroups(b *Broker, r *request) kmsg.Response {
	return b.coord.DeleteGroups(r.kreq.(*kmsg.DeleteGroupsRequest))
}

// handleOffsetDelete answers OffsetDelete v0, served only in the kafka
// profile.
// VAST: unsupported; delete the group instead (NoOffsetDelete hides it).
func handleOffsetDelete(b *Broker, r *request) kmsg.Response {
	return b.coord.OffsetDelete(r.kreq.(*kmsg.OffsetDeleteRequest))
}
