package broker

// Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe,
// ShareFetch, ShareAcknowledge, DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets, and the share configs of
// GROUP config resources. The share coordinator and the share partitions'
// record states live in package coordinator (sharegroup.go,
// sharepartition.go, sharefetch.go, shareadmin.go); these handlers pass
// requests to it, and shareLog gives it the partitions this broker leads.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// handleShareGroupHeartbeat answers ShareGroupHeartbeat v1 (KIP-932),
// served where NoShareGroups is not enforced: the kafka profile, and
// the audit profile, which records each request as a finding. The
// coordinator shares partitions among the members (its simple assignor);
// see coordinator.ShareGroupHeartbeat for the errors.
// VAST: not advertised, and a client that sends it anyway has its
// connection closed (NoShareGroups).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleShareGroupHeartbeat(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ShareGroupHeartbeatRequest)
	if !b.allowGroup(r, KafkaRead, req.GroupID) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	return b.coord.ShareGroupHeartbeat(r, req)
}

// handleShareGroupDescribe answers ShareGroupDescribe v1: each share
// group's state, epochs, assignor ("simple") and members with their
// subscriptions and assignments. A group named twice is described once.
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaDescribe on each group (GROUP_AUTHORIZATION_FAILED).
func handleShareGroupDescribe(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ShareGroupDescribeRequest)
	if gs := firstOfEach(req.GroupIDs, self); !sameSlice(gs, req.GroupIDs) {
		merged := *req
		merged.GroupIDs = gs
		req = &merged
	}
	resp := b.coord.ShareGroupDescribe(req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.GroupID; !b.allowGroup(r, KafkaDescribe, name) {
			*g = kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		}
	}
	return resp
}

// handleShareFetch answers ShareFetch v1-v2 (KIP-932; v2 adds
// ShareAcquireMode and the Renew acknowledgement, KIP-1206 and KIP-1222):
// it opens, moves on or closes the member's share session on this broker,
// applies the acknowledgements it carries, and acquires records of the
// session's partitions for the member, each locked for
// share.record.lock.duration.ms (30 s) on the broker's clock. When it
// acquires nothing it waits up to MaxWaitMillis for records appended or
// released, as Kafka's share fetch purgatory does. Each partition is
// answered by its leader: with several brokers a partition led elsewhere
// gets NOT_LEADER_OR_FOLLOWER with its leader and that broker's address.
// See coordinator.ShareFetch for the errors.
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED) and on
// each topic (TOPIC_AUTHORIZATION_FAILED).
func handleShareFetch(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ShareFetchRequest)
	if req.GroupID != nil && !b.allowGroup(r, KafkaRead, *req.GroupID) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	sl := &shareLog{b: b, r: r}
	sl.here, sl.own = b.servesOnlyOwn(r)
	resp, wait := b.coord.ShareFetch(r.ctx, b.nodeOfRequest(r), req, sl)
	if wait != nil {
		resp = b.waitShareFetch(r, wait, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	}
	b.shareNodeEndpoints(resp)
	return resp
}

// waitShareFetch waits for records for a ShareFetch that acquired none:
// records appended, released or whose lock ended wake it, and it tries
// again; it answers once it acquired some, once maxWait passed, or when
// the connection or the broker closes.
func (b *Broker) waitShareFetch(r *request, wait *coordinator.ShareFetchWait, maxWait time.Duration) *kmsg.ShareFetchResponse {
	b.fetchWaiters.Add(1)
	defer b.fetchWaiters.Add(-1)
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		appended := b.dataWaiter()
		released := wait.Released()
		select {
		case <-appended:
		case <-released:
		case <-timer.C:
			return wait.Response()
		case <-r.ctx.Done():
			return wait.Response()
		}
		if wait.Retry() {
			return wait.Response()
		}
	}
}

// handleShareAcknowledge answers ShareAcknowledge v1-v2 (KIP-932; v2 the
// Renew acknowledgement, KIP-1222): it applies the acknowledgements,
// partition by partition, within the member's share session on this
// broker; epoch -1 also closes the session, releasing what the member
// still holds. A partition led elsewhere gets NOT_LEADER_OR_FOLLOWER with
// its leader and that broker's address. See coordinator.ShareAcknowledge
// for the errors.
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED) and on
// each topic (TOPIC_AUTHORIZATION_FAILED).
func handleShareAcknowledge(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ShareAcknowledgeRequest)
	if req.GroupID != nil && !b.allowGroup(r, KafkaRead, *req.GroupID) {
		return errorAnswer(r, kerr.GroupAuthorizationFailed.Code)
	}
	sl := &shareLog{b: b, r: r}
	sl.here, sl.own = b.servesOnlyOwn(r)
	resp := b.coord.ShareAcknowledge(b.nodeOfRequest(r), req, sl)
	b.shareNodeEndpoints(resp)
	return resp
}

// handleDescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-v1
// (v1 adds the lag, KIP-1226): each share partition's start offset. A group
// named twice is described once.
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaDescribe on each group (GROUP_AUTHORIZATION_FAILED).
func handleDescribeShareGroupOffsets(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	if gs := firstOfEach(req.Groups, func(g *kmsg.DescribeShareGroupOffsetsRequestGroup) string { return g.GroupID }); !sameSlice(gs, req.Groups) {
		merged := *req
		merged.Groups = gs
		req = &merged
	}
	resp := b.coord.DescribeShareGroupOffsets(req, &shareLog{b: b, r: r})
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if name := g.GroupID; !b.allowGroup(r, KafkaDescribe, name) {
			*g = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
		}
	}
	return resp
}

// handleAlterShareGroupOffsets answers AlterShareGroupOffsets v0: it sets
// the start offsets of an empty share group's partitions, creating the
// group if need be (NON_EMPTY_GROUP while it has members).
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED), as
// Kafka checks READ.
func handleAlterShareGroupOffsets(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	if !b.allowGroup(r, KafkaRead, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return b.coord.AlterShareGroupOffsets(r, req)
}

// handleDeleteShareGroupOffsets answers DeleteShareGroupOffsets v0: it
// forgets an empty share group's state of the topics named
// (NON_EMPTY_GROUP while it has members).
// VAST: not advertised (NoShareGroups).
// Authorizes: KafkaDelete on the group (GROUP_AUTHORIZATION_FAILED).
func handleDeleteShareGroupOffsets(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	if !b.allowGroup(r, KafkaDelete, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	return b.coord.DeleteShareGroupOffsets(req)
}

// nodeOfRequest returns the broker id the request reached.
func (b *Broker) nodeOfRequest(r *request) int32 {
	if r.conn != nil && r.conn.node != nil {
		return r.conn.node.id
	}
	return b.nodes[0].id
}

// shareNodeEndpoints adds the address of each leader a ShareFetch or
// ShareAcknowledge answer names in a NOT_LEADER_OR_FOLLOWER hint, as Kafka
// does, so that the client moves there without a Metadata request.
func (b *Broker) shareNodeEndpoints(resp kmsg.Response) {
	seen := map[int32]bool{}
	add := func(id int32) (host string, port int32, ok bool) {
		n := b.nodeByID(id)
		if n == nil || seen[id] {
			return "", 0, false
		}
		seen[id] = true
		host, port = n.advertisedHostPort()
		return host, port, true
	}
	switch resp := resp.(type) {
	case *kmsg.ShareFetchResponse:
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.CurrentLeader.LeaderID < 0 {
					continue
				}
				if host, port, ok := add(p.CurrentLeader.LeaderID); ok {
					e := kmsg.NewShareFetchResponseNodeEndpoint()
					e.NodeID, e.Host, e.Port = p.CurrentLeader.LeaderID, host, port
					resp.NodeEndpoints = append(resp.NodeEndpoints, e)
				}
			}
		}
	case *kmsg.ShareAcknowledgeResponse:
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.CurrentLeader.LeaderID < 0 {
					continue
				}
				if host, port, ok := add(p.CurrentLeader.LeaderID); ok {
					e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
					e.NodeID, e.Host, e.Port = p.CurrentLeader.LeaderID, host, port
					resp.NodeEndpoints = append(resp.NodeEndpoints, e)
				}
			}
		}
	}
}

// shareLog is coordinator.ShareLog for one request: the partitions of
// this broker's share (every partition when it serves everything) and
// their logs. Reads are kept on the request and released once its answer
// is written.
type shareLog struct {
	b    *Broker
	r    *request
	here int32
	own  bool // this broker serves only the partitions it leads
}

func (s *shareLog) Locate(id [16]byte, p int32) (string, coordinator.ShareLeader, int16) {
	b := s.b
	none := coordinator.ShareLeader{ID: -1, Epoch: -1}
	t := b.data.getID(id)
	if t == nil {
		return "", none, kerr.UnknownTopicID.Code
	}
	if t.partition(p) == nil {
		return t.name, none, kerr.UnknownTopicOrPartition.Code
	}
	if !b.allowTopic(s.r, KafkaRead, t.name) {
		return t.name, none, kerr.TopicAuthorizationFailed.Code
	}
	if s.own {
		if leader := b.LeaderOf(t.name, p); leader != s.here && !b.vast(s.r, rules.AnyAddressServes, rules.Differs, t.name, "", func() string {
			return kmsg.NameForKey(s.r.kreq.Key()) + " for partition " + strconv.Itoa(int(p)) + " reached broker " + strconv.Itoa(int(s.here)) +
				", not its leader " + strconv.Itoa(int(leader)) + "; Kafka answers NOT_LEADER_OR_FOLLOWER, VAST serves it (assumed)"
		}) {
			return t.name, coordinator.ShareLeader{ID: leader, Epoch: b.LeaderEpochOf(t.name, p)}, kerr.NotLeaderForPartition.Code
		}
	}
	return t.name, none, 0
}

func (s *shareLog) Offsets(topic string, p int32, committed bool) (int64, int64, int32) {
	t := s.b.data.get(topic)
	part := t.partition(p)
	if part == nil {
		return 0, 0, -1
	}
	logStart, end := part.Watermarks()
	if committed {
		end = part.LastStableOffset()
	}
	return logStart, end, s.b.LeaderEpochOf(topic, p)
}

func (s *shareLog) OffsetForTime(topic string, p int32, ts int64) int64 {
	part := s.b.data.get(topic).partition(p)
	if part == nil {
		return 0
	}
	off, _ := part.OffsetForTime(ts)
	if off < 0 {
		off = part.HighWatermark()
	}
	return off
}

func (s *shareLog) Read(topic string, p int32, offset int64, maxBytes int, committed bool) ([]byte, []coordinator.ShareBatch) {
	t := s.b.data.get(topic)
	if t == nil {
		return nil, nil
	}
	part := t.partition(p)
	if part == nil {
		return nil, nil
	}
	s.b.appendMu.RLock()
	var res log.ReadResult
	var err error
	if committed {
		res, err = part.ReadCommitted(offset, maxBytes)
	} else {
		res, err = part.Read(offset, maxBytes)
	}
	s.b.appendMu.RUnlock()
	if err != nil || len(res.Records) == 0 {
		res.Release()
		return nil, nil
	}
	s.r.reads = append(s.r.reads, res)
	var batches []coordinator.ShareBatch
	end := 0
	log.EachBatch(res.Records, func(lb log.Batch) bool {
		end += len(lb)
		sb := coordinator.ShareBatch{First: lb.BaseOffset(), Last: lb.LastOffset(), End: end, Skip: lb.Control()}
		if committed && lb.Transactional() && !sb.Skip {
			for _, a := range res.Aborted {
				if a.ProducerID == lb.ProducerID() && sb.First >= a.FirstOffset && sb.First <= a.LastOffset {
					sb.Skip = true // aborted: no record to deliver under read_committed
					break
				}
			}
		}
		batches = append(batches, sb)
		return true
	})
	return res.Records, batches
}

// ---- group configs ----

// describeGroupConfigs answers DescribeConfigs for a GROUP resource (Kafka
// 4.x): the share group configs, each set one with source GROUP_CONFIG and
// the broker's value of the others with DEFAULT_CONFIG.
// Authorizes: KafkaDescribeConfigs on the group (GROUP_AUTHORIZATION_FAILED).
func (b *Broker) describeGroupConfigs(r *request, sr *kmsg.DescribeConfigsResponseResource, group string, names []string) {
	if !b.allowGroup(r, KafkaDescribeConfigs, group) {
		sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return
	}
	if code, msg := b.refuseGroupConfigs(r, group, "DescribeConfigs"); code != 0 {
		sr.ErrorCode, sr.ErrorMessage = code, msg
		return
	}
	if group == "" {
		sr.ErrorCode = kerr.InvalidRequest.Code
		sr.ErrorMessage = kmsg.StringPtr("Group name can't be empty.")
		return
	}
	for _, c := range b.coord.DescribeGroupConfigs(group, names) {
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value = c.Name, kmsg.StringPtr(c.Value)
		e.Source = kmsg.ConfigSourceDefaultConfig
		if c.Set {
			e.Source = kmsg.ConfigSourceGroupConfig
		}
		sr.Configs = append(sr.Configs, e)
	}
}

// alterGroupConfigs applies an AlterConfigs or IncrementalAlterConfigs
// resource of type GROUP: edit computes the group's new configs from its
// current ones, and the coordinator validates and keeps them (see
// coordinator.SetGroupConfigs).
// Authorizes: KafkaAlterConfigs on the group (GROUP_AUTHORIZATION_FAILED).
func (b *Broker) alterGroupConfigs(r *request, group string, validateOnly bool, edit func(map[string]string) (map[string]string, int16, string)) (int16, *string) {
	if !b.allowGroup(r, KafkaAlterConfigs, group) {
		return kerr.GroupAuthorizationFailed.Code, nil
	}
	if code, msg := b.refuseGroupConfigs(r, group, kmsg.NameForKey(r.kreq.Key())); code != 0 {
		return code, msg
	}
	next, code, msg := edit(b.coord.GroupConfigs(group))
	if code == 0 {
		code, msg = b.coord.SetGroupConfigs(group, next, validateOnly)
	}
	if code != 0 {
		return code, kmsg.StringPtr(msg)
	}
	return 0, nil
}

// refuseGroupConfigs applies NoShareGroups to a request for a GROUP config
// resource: the group configs vastfake takes are share groups' (Kafka
// 4.x), and VAST has neither. Enforced, it returns INVALID_REQUEST with
// the refusal; audited, it records a finding and returns 0.
func (b *Broker) refuseGroupConfigs(r *request, group, api string) (int16, *string) {
	if !b.vast(r, rules.NoShareGroups, rules.Refused, "", group, func() string {
		return api + " for the configs of group " + strconv.Quote(group) + ": VAST has no group configs (share.auto.offset.reset and the others are share groups')"
	}) {
		return 0, nil
	}
	return kerr.InvalidRequest.Code, kmsg.StringPtr(rules.NoShareGroups.Refusal("VAST has no share groups and no group configs", ""))
}

// editGroupConfigs applies IncrementalAlterConfigs operations to a group's
// configs: SET and DELETE; APPEND and SUBTRACT take LIST configs, which
// groups have none of (INVALID_CONFIG).
func editGroupConfigs(old map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, int16, string) {
	next := make(map[string]string, len(old)+len(ops))
	for k, v := range old {
		next[k] = v
	}
	for _, c := range ops {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return nil, kerr.InvalidConfig.Code, "Can't " + opName(c.Op) + " to key " + c.Name + " because its type is not LIST."
		default:
			return nil, kerr.InvalidRequest.Code, "unknown config operation " + strconv.Itoa(int(c.Op))
		}
	}
	return next, 0, ""
}
