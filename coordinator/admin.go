package coordinator

import (
	"bytes"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups lists groups sorted by name, filtered by state (v4+, any case,
// Kafka's state names, a consumer group's among them) and by type (v5+,
// "classic" or "consumer").
// Under Rules.MaxGroups there are never more groups than that to list:
// JoinGroup and OffsetCommit refuse to create one more.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	if c.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	var states, types []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	if req.Version >= 5 {
		types = req.TypesFilter
	}
	for _, name := range c.sortedGroupNames() {
		g := c.groups[name]
		if !match(states, groupStateName(g)) || !match(types, groupType(g)) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = name
		lg.ProtocolType = g.protocolType
		lg.GroupState = groupStateName(g)
		lg.GroupType = groupType(g)
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// DescribeGroups describes groups as Kafka does: state, protocol type, and
// the members with client id and host; the protocol, member metadata and
// assignments are shown only when the group is Stable. An unknown group is
// reported with state "Dead", and from v6 on also with GROUP_ID_NOT_FOUND
// (KIP-1043). A KIP-848 consumer group is described as Kafka's
// ConsumerGroup.asDescribedGroup does (see describeClassic).
// AuthorizedOperations is left for the broker to fill.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, name := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = name
		if c.closed {
			dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		g := c.lookup(name)
		if g == nil {
			dg.State = stateDead.String()
			if req.Version >= 6 {
				dg.ErrorCode = kerr.GroupIDNotFound.Code
				dg.ErrorMessage = kmsg.StringPtr("group " + name + " not found")
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if g.sg != nil {
			// Kafka describes only classic and consumer groups here: a
			// share group reads as one that does not exist
			// (ShareGroupDescribe describes it).
			dg.State = stateDead.String()
			if req.Version >= 6 {
				dg.ErrorCode = kerr.GroupIDNotFound.Code
				dg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic or consumer group.")
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if g.cg != nil {
			c.describeClassic(g, &dg)
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.State = g.state.String()
		dg.ProtocolType = g.protocolType
		stable := g.state == stateStable
		if stable {
			dg.Protocol = g.protocol
		}
		for _, m := range g.ordered() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID = m.id
			dm.InstanceID = m.instanceID
			dm.ClientID = m.clientID
			dm.ClientHost = m.clientHost
			dm.ProtocolMetadata = []byte{}
			dm.MemberAssignment = []byte{}
			if stable {
				if md := m.metadataFor(g.protocol); md != nil {
					dm.ProtocolMetadata = bytes.Clone(md)
				}
				if m.assignment != nil {
					dm.MemberAssignment = bytes.Clone(m.assignment)
				}
			}
			dg.Members = append(dg.Members, dm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// DeleteGroups deletes groups with their committed offsets: GROUP_ID_NOT_FOUND
// for an unknown group and NON_EMPTY_GROUP while a group has members, as in
// Kafka and VAST.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, name := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = name
		g := c.lookup(name)
		switch {
		case c.closed:
			dg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
		case g.state != stateEmpty:
			dg.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			c.removeGroup(g)
			delete(c.groupConfigs, name)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// Reset deletes every group, with its committed offsets, the rebalance
// history and every transactional id (open transactions are dropped, not
// ended: their topics are deleted with them), as if the coordinator were new. Members blocked in JoinGroup or
// SyncGroup get COORDINATOR_NOT_AVAILABLE; every other member learns on its
// next request that its group is gone (UNKNOWN_MEMBER_ID) and joins again.
func (c *Coordinator) Reset() {
	c.mu.Lock()
	defer c.unlock()
	for _, g := range c.groups {
		c.removeGroup(g)
	}
	c.rebalances = nil
	c.groupConfigs = nil
	for _, t := range c.txns.byID {
		t.timer.cancel()
	}
	for _, ps := range c.txns.pending {
		for po := range ps {
			c.metaBytes -= po.meta
		}
	}
	clear(c.txns.byID)
	clear(c.txns.pending)
	c.txns.idle.Init()
	c.txns.idBytes, c.txns.idleBytes = 0, 0
}
