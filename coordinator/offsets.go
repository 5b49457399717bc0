package coordinator

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/rules"
)

// offset is one committed offset.
type offset struct {
	off   int64
	epoch int32
	meta  string
	at    time.Time // commit time on the coordinator's clock
	// seq orders the offset's record among every offset record the
	// coordinator wrote (nextOffsetSeq): of a pending transactional offset
	// and a committed one, the later record wins.
	seq uint64
}

// OffsetCommit stores committed offsets, validated as Kafka 4.x validates a
// classic group's commit: a commit with generation -1 is accepted when the
// group has no members (it is Empty, or does not exist and is then created
// Empty: that is how admin tools reset offsets and how an assign()ed
// consumer's commit creates a group); otherwise the member must be known
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and of the current generation
// (ILLEGAL_GENERATION), and a group in CompletingRebalance answers
// REBALANCE_IN_PROGRESS. Commits during PreparingRebalance are accepted, as
// in Kafka, so eager consumers can commit while their partitions are
// revoked. Creating one group too many under Rules.MaxGroups gets
// GROUP_MAX_SIZE_REACHED, reported to caller, which also hears of a group
// created and names the client that committed.
// A partition whose metadata is longer than Config.OffsetMetadataMaxBytes,
// or does not fit in OffsetMetadataTotalMaxBytes with every other committed
// offset's, gets OFFSET_METADATA_TOO_LARGE and the others are stored. A
// commit that would create a group named longer than MaxGroupIDBytes gets
// INVALID_GROUP_ID.
// Topics are taken by name; the broker filters topics that do not exist and
// caps the version below v10 (topic ids). It never blocks.
func (c *Coordinator) OffsetCommit(caller Caller, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	caller, flush := deferRefusals(caller)
	defer flush() // after the unlock below: defers run last in, first out
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	g, code, partCheck := c.commitGroup(caller, req)
	now := c.clock.Now()
	for _, t := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = t.Topic
		st.TopicID = t.TopicID
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = code
			var old offset
			if g != nil {
				old = g.offsets[t.Topic][p.Partition]
			}
			if code == errNone && partCheck != nil {
				sp.ErrorCode = partCheck(t.Topic, p.Partition)
			}
			if sp.ErrorCode == errNone && p.Metadata != nil && (len(*p.Metadata) > c.maxMetadata ||
				len(*p.Metadata) > len(old.meta) && c.metaBytes-len(old.meta)+len(*p.Metadata) > c.metaBudget) {
				sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			}
			st.Partitions = append(st.Partitions, sp)
			if sp.ErrorCode != errNone {
				continue
			}
			o := offset{off: p.Offset, epoch: -1, at: now, seq: c.nextOffsetSeq()}
			if req.Version >= 6 {
				o.epoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				o.meta = *p.Metadata
			}
			c.metaBytes += len(o.meta) - len(old.meta)
			ps := g.offsets[t.Topic]
			if ps == nil {
				ps = make(map[int32]offset)
				g.offsets[t.Topic] = ps
			}
			ps[p.Partition] = o
			c.logOffset(g.name, t.Topic, p.Partition, o)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if g != nil {
		if id, _ := caller.Client(); id != "" {
			g.committedBy = id
		}
		c.expiryChanged(g)
	}
	return resp
}

// commitGroup validates a commit and returns the group it goes to, creating
// it for a generation -1 commit, and for a consumer group's member
// committing at an older epoch the check of each partition (see
// consumerGroup.commitCheck).
func (c *Coordinator) commitGroup(caller Caller, req *kmsg.OffsetCommitRequest) (*group, int16, func(string, int32) int16) {
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable.Code, nil
	}
	generation, memberID := req.Generation, req.MemberID
	if req.Version == 0 {
		generation, memberID = -1, ""
	}
	instanceID := c.instanceID(req.InstanceID, req.Version >= 7)
	g := c.lookup(req.Group)
	if g == nil {
		if generation >= 0 {
			if req.Version >= 9 {
				return nil, kerr.GroupIDNotFound.Code, nil
			}
			return nil, kerr.IllegalGeneration.Code, nil
		}
		if len(req.Group) > MaxGroupIDBytes {
			return nil, kerr.InvalidGroupID.Code, nil
		}
		if !c.canCreateGroup(caller, "OffsetCommit", req.Group) {
			return nil, kerr.GroupMaxSizeReached.Code, nil
		}
		g = c.newGroup(req.Group)
		caller.GroupCreated(req.Group)
		return g, errNone, nil
	}
	if g.sg != nil {
		return nil, kerr.GroupIDNotFound.Code, nil // a share group commits no offsets
	}
	if g.cg != nil {
		code, check := g.cg.commitCheck(memberID, generation, req.Version, c.assignmentEpochs)
		if code != errNone {
			return nil, code, nil
		}
		return g, errNone, check
	}
	if generation < 0 && g.state == stateEmpty {
		return g, errNone, nil
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		m, code := g.validate(instanceID, memberID, generation)
		if m == nil {
			return nil, code, nil
		}
		if g.state == stateCompletingRebalance {
			return nil, kerr.RebalanceInProgress.Code, nil
		}
		c.resetSession(g, m)
		return g, errNone, nil
	}
	// Generation -1 and no member id on a group with members.
	return nil, kerr.UnknownMemberID.Code, nil
}

// OffsetFetch returns committed offsets: v0-v7 for one group, v8+ for a
// batch of groups. Topics nil returns every topic the group committed; a
// requested partition with no commit gets offset -1; an unknown group is not
// an error (every requested partition gets -1), as in Kafka.
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			if c.closed {
				sg.ErrorCode = kerr.CoordinatorNotAvailable.Code
				resp.Groups = append(resp.Groups, sg)
				continue
			}
			if g := c.lookup(rg.Group); g != nil && g.sg != nil {
				sg.ErrorCode = kerr.GroupIDNotFound.Code // a share group has no committed offsets
				resp.Groups = append(resp.Groups, sg)
				continue
			}
			if g := c.lookup(rg.Group); g != nil && g.cg != nil && req.Version >= 9 {
				if code := g.cg.fetchCheck(rg.MemberID, rg.MemberEpoch); code != errNone {
					sg.ErrorCode = code
					resp.Groups = append(resp.Groups, sg)
					continue
				}
			}
			var want []fetchTopic
			if rg.Topics != nil {
				want = make([]fetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					want = append(want, fetchTopic{t.Topic, t.Partitions})
				}
			}
			for _, t := range c.fetch(rg.Group, want, rg.Topics == nil) {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = t.topic
				for _, p := range t.parts {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition = p.part
					sp.Offset = p.off
					sp.LeaderEpoch = p.epoch
					sp.Metadata = kmsg.StringPtr(p.meta)
					if req.RequireStable && c.unstableOffset(rg.Group, t.topic, p.part) {
						sp.Offset, sp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
					}
					st.Partitions = append(st.Partitions, sp)
				}
				sg.Topics = append(sg.Topics, st)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}
	if c.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	var want []fetchTopic
	if req.Topics != nil {
		want = make([]fetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			want = append(want, fetchTopic{t.Topic, t.Partitions})
		}
	}
	for _, t := range c.fetch(req.Group, want, req.Topics == nil) {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.topic
		for _, p := range t.parts {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition = p.part
			sp.Offset = p.off
			sp.LeaderEpoch = p.epoch
			sp.Metadata = kmsg.StringPtr(p.meta)
			if req.Version >= 7 && req.RequireStable && c.unstableOffset(req.Group, t.topic, p.part) {
				sp.Offset, sp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

type fetchTopic struct {
	topic string
	parts []int32
}

type fetchedTopic struct {
	topic string
	parts []fetchedPartition
}

type fetchedPartition struct {
	part  int32
	off   int64
	epoch int32
	meta  string
}

// fetch reads a group's offsets for the wanted topics, or for all its topics
// (sorted) when all is set.
func (c *Coordinator) fetch(name string, want []fetchTopic, all bool) []fetchedTopic {
	var committed map[string]map[int32]offset
	if g := c.lookup(name); g != nil {
		committed = g.offsets
	}
	if all {
		topics := make([]string, 0, len(committed))
		for t := range committed {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			parts := make([]int32, 0, len(committed[t]))
			for p := range committed[t] {
				parts = append(parts, p)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			want = append(want, fetchTopic{t, parts})
		}
	}
	out := make([]fetchedTopic, 0, len(want))
	for _, t := range want {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.parts {
			fp := fetchedPartition{part: p, off: -1, epoch: -1}
			if o, ok := committed[t.topic][p]; ok {
				fp.off, fp.epoch, fp.meta = o.off, o.epoch, o.meta
			}
			ft.parts = append(ft.parts, fp)
		}
		out = append(out, ft)
	}
	return out
}

// OffsetDelete deletes a group's committed offsets for some partitions, as
// Kafka does: GROUP_ID_NOT_FOUND for an unknown group; for a "consumer"
// group with members, GROUP_SUBSCRIBED_TO_TOPIC for a topic a member
// subscribes to; NON_EMPTY_GROUP for any other group with members. The
// broker only routes it here in the kafka profile (Rules.NoOffsetDelete
// hides it from ApiVersions).
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	c.mu.Lock()
	defer c.unlock()
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	if c.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	g := c.lookup(req.Group)
	if g == nil || g.sg != nil { // a share group has no committed offsets
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	var subscribed map[string]bool
	if g.state != stateEmpty {
		if g.protocolType != "consumer" {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp
		}
		subscribed = g.subscribedTopics()
	}
	for _, t := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = p.Partition
			if subscribed != nil && (subscribed[t.Topic] || subscribed[""]) {
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if ps := g.offsets[t.Topic]; ps != nil {
				if _, ok := ps[p.Partition]; ok {
					c.logOffsetGone(g.name, t.Topic, p.Partition)
				}
				c.metaBytes -= len(ps[p.Partition].meta)
				delete(ps, p.Partition)
				if len(ps) == 0 {
					delete(g.offsets, t.Topic)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.expiryChanged(g)
	return resp
}

// metadataBytes is the metadata of a topic's committed offsets, in bytes.
func metadataBytes(ps map[int32]offset) int {
	n := 0
	for _, o := range ps {
		n += len(o.meta)
	}
	return n
}

// subscribedTopics reads the topics the members of a "consumer" group
// subscribe to from their ConsumerMemberMetadata; a member whose metadata
// cannot be read subscribes to everything (key "").
func (g *group) subscribedTopics() map[string]bool {
	out := make(map[string]bool)
	if g.cg != nil {
		for _, m := range g.cg.members {
			for _, t := range m.names {
				out[t] = true
			}
			if m.rx != nil {
				out[""] = true // a regex may match any topic
			}
		}
		return out
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			out[""] = true
			continue
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out
}

// TopicDeleted removes every group's committed offsets for topic, as VAST and
// Kafka do when a topic is deleted.
func (c *Coordinator) TopicDeleted(topic string) {
	c.mu.Lock()
	defer c.unlock()
	for _, g := range c.groups {
		c.metaBytes -= metadataBytes(g.offsets[topic])
		for p := range g.offsets[topic] {
			c.logOffsetGone(g.name, topic, p)
		}
		delete(g.offsets, topic)
		c.expiryChanged(g)
	}
	c.txnTopicDeleted(topic)
	c.refreshTopics(topic)
}

// Failover drops every committed offset, as a VAST failover does (committed
// offsets are not replicated); groups and their members stay, so consumers
// restart from auto.offset.reset.
func (c *Coordinator) Failover() {
	c.mu.Lock()
	defer c.unlock()
	for _, g := range c.groups {
		for t, ps := range g.offsets {
			c.metaBytes -= metadataBytes(ps)
			for p := range ps {
				c.logOffsetGone(g.name, t, p)
			}
		}
		g.offsets = make(map[string]map[int32]offset)
		c.expiryChanged(g)
	}
}

// expireAll applies offset retention and the group cleanup to every group.
func (c *Coordinator) expireAll() {
	for _, g := range c.groups {
		c.expire(g)
	}
}

// nextExpiry returns when expire would next change g: the earliest moment
// one of its offsets expires, or, for an abandoned group, when it has been
// Empty for emptyGroupCleanup. It returns false when nothing of g expires
// while it stays as it is (it has members, or a pending member id, or its
// offsets never expire).
func (c *Coordinator) nextExpiry(g *group) (time.Time, bool) {
	if g.state != stateEmpty || c.closed {
		return time.Time{}, false
	}
	var at time.Time
	found := false
	earliest := func(t time.Time) {
		if !found || t.Before(at) {
			at, found = t, true
		}
	}
	if !c.enforced(rules.OffsetsNeverExpire) && c.rules.OffsetsRetention > 0 {
		for _, ps := range g.offsets {
			for _, o := range ps {
				base := o.at
				if g.emptySince.After(base) {
					base = g.emptySince
				}
				earliest(base.Add(c.rules.OffsetsRetention))
			}
		}
	}
	if g.abandoned() {
		earliest(g.emptySince.Add(emptyGroupCleanup))
	}
	return at, found
}

// expiryChanged notes that what expires in g, or when, may have changed
// (g was created or emptied, committed to, lost offsets or a pending member
// id), and makes sure the expiry timer runs by then. Call it with c.mu held.
func (c *Coordinator) expiryChanged(g *group) {
	if at, ok := c.nextExpiry(g); ok {
		c.scheduleExpiry(at)
	}
}

// offsetsCommitted is expiryChanged for offsets just committed to g, the
// earliest of them at at: it makes sure the expiry timer runs by the time
// they expire, without reading g's other offsets, so that committing a
// chunk of a large transaction costs the chunk. Call it with c.mu held.
func (c *Coordinator) offsetsCommitted(g *group, at time.Time) {
	if g.state != stateEmpty || c.closed || c.enforced(rules.OffsetsNeverExpire) || c.rules.OffsetsRetention <= 0 {
		return
	}
	if g.emptySince.After(at) {
		at = g.emptySince
	}
	c.scheduleExpiry(at.Add(c.rules.OffsetsRetention))
}

// scheduleExpiry makes the expiry timer due at at, unless it is due
// earlier already. When it fires it expires every group (expire) and
// schedules itself for the next moment anything expires, so offsets
// retention and the group cleanup run on the coordinator's clock, as
// Kafka's periodic cleanup does, and never as a side effect of a read.
// Call it with c.mu held.
func (c *Coordinator) scheduleExpiry(at time.Time) {
	if c.closed || c.expiry != nil && !c.expiryAt.After(at) {
		return
	}
	c.expiry.cancel()
	c.expiryAt = at
	c.expiry = c.after(max(at.Sub(c.clock.Now()), 0), func() {
		c.expiry = nil
		c.expireAll()
		var next time.Time
		for _, g := range c.groups {
			if at, ok := c.nextExpiry(g); ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		if !next.IsZero() {
			c.scheduleExpiry(next)
		}
	})
}

// expire applies Kafka's group cleanup to g (GroupCoordinatorShard's
// cleanupGroupMetadata). When Rules.OffsetsNeverExpire is off, the offsets
// of a group without members expire OffsetsRetention after the later of the
// commit and the moment the group became Empty (offsets.retention.minutes).
// A group left Empty with no committed offsets (abandoned) is deleted when
// its last offsets expire here, or once it has been Empty for
// emptyGroupCleanup; a group that holds offsets is never deleted here. It
// runs on the expiry timer (scheduleExpiry), never when a group is looked
// at. Once the coordinator is closed it does nothing, so groups and offsets
// read after Close stay as they were (Close drops the pending member ids,
// which could otherwise make a group abandoned).
func (c *Coordinator) expire(g *group) {
	if g.state != stateEmpty || c.closed {
		return
	}
	now := c.clock.Now()
	expired := false
	if !c.enforced(rules.OffsetsNeverExpire) && c.rules.OffsetsRetention > 0 && len(g.offsets) > 0 {
		for t, ps := range g.offsets {
			for p, o := range ps {
				base := o.at
				if g.emptySince.After(base) {
					base = g.emptySince
				}
				if !now.Before(base.Add(c.rules.OffsetsRetention)) {
					c.vast(c.clientsOf(g), rules.OffsetsNeverExpire, rules.Differs, "", g.name,
						fmt.Sprintf("the committed offset of %s[%d] expired after offsets.retention.minutes; VAST keeps it forever", t, p))
					c.metaBytes -= len(o.meta)
					delete(ps, p)
					c.logOffsetGone(g.name, t, p)
				}
			}
			if len(ps) == 0 {
				delete(g.offsets, t)
			}
		}
		expired = len(g.offsets) == 0
	}
	if g.abandoned() && (expired || !now.Before(g.emptySince.Add(emptyGroupCleanup))) {
		c.removeGroup(g)
	}
}

// abandoned reports whether Kafka's cleanup would delete g: it is Empty,
// has no committed offsets, and no member id it handed out with
// MEMBER_ID_REQUIRED still waits on an open connection.
func (g *group) abandoned() bool {
	if g.state != stateEmpty || len(g.members) > 0 || len(g.offsets) > 0 || g.sg != nil && len(g.sg.partitions) > 0 {
		return false
	}
	for _, p := range g.pending {
		if !p.disconnected() {
			return false
		}
	}
	return true
}
