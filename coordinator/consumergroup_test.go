package coordinator

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// topicTable is a settable Config.Topics for tests.
type topicTable struct {
	mu sync.Mutex
	ts []TopicMeta
}

func (tt *topicTable) get() []TopicMeta {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]TopicMeta(nil), tt.ts...)
}

// lookup is a settable Config.Topic: the topic named, as get lists it.
func (tt *topicTable) lookup(name string) (TopicMeta, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, t := range tt.ts {
		if t.Name == name {
			return t, true
		}
	}
	return TopicMeta{}, false
}

// remove deletes a topic from the table.
func (tt *topicTable) remove(name string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for i, t := range tt.ts {
		if t.Name == name {
			tt.ts = append(tt.ts[:i:i], tt.ts[i+1:]...)
			return
		}
	}
}

func (tt *topicTable) add(name string, partitions int32) TopicMeta {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t := TopicMeta{Name: name, Partitions: partitions}
	copy(t.ID[:], fmt.Sprintf("%-16s", name))
	tt.ts = append(tt.ts, t)
	return t
}

// cgHarness is a coordinator with topics, and helpers to drive KIP-848
// members by hand as a client would. Its regex worker runs by hand, after
// every heartbeat and topic change the helpers make (a worker that is
// never late), unless a test calls the coordinator itself.
type cgHarness struct {
	*harness
	topics *topicTable
	caller Caller // the heartbeats' caller
}

func newCGHarness(t testing.TB, opts ...func(*Config)) *cgHarness {
	tt := &topicTable{}
	h := newHarness(t, rules.Kafka(), append([]func(*Config){func(c *Config) {
		c.Topics, c.Topic = tt.get, tt.lookup
		c.regexesByHand = true
	}}, opts...)...)
	return &cgHarness{harness: h, topics: tt, caller: NoCaller}
}

// cmem is the client side of one member: its id, epoch and what it owns.
type cmem struct {
	h        *cgHarness
	group    string
	id       string
	instance *string
	epoch    int32
	owned    []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
	changed  bool // owned changed since last reported
}

// addTopic creates a topic, as the broker does: then TopicsChanged with
// its name.
func (h *cgHarness) addTopic(name string, partitions int32) {
	h.topics.add(name, partitions)
	h.c.TopicsChanged(name)
	h.c.resolveRegexes()
}

// TestTopicChangesReadOnlyTheTopicsNamed: with Config.Topic, creating and
// deleting topics reads only the topics named, never the whole list again
// (a broker's Reset of T topics cost T² before), and a regex member still
// sees exactly the topics that exist; without it, or with no names, the
// list is read whole.
func TestTopicChangesReadOnlyTheTopicsNamed(t *testing.T) {
	t.Parallel()
	tt := &topicTable{}
	var whole, one int
	h := newCGHarness(t, func(c *Config) {
		c.Topics = func() []TopicMeta { whole++; return tt.get() }
		c.Topic = func(name string) (TopicMeta, bool) { one++; return tt.lookup(name) }
	})
	h.topics = tt
	m := h.member("g", "m")
	require.Equal(t, int16(0), m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.RebalanceTimeoutMillis, r.Topics, r.SubscribedTopicRegex = 30_000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, kmsg.StringPtr("t-.*")
	}).ErrorCode)
	for i := range 100 {
		h.addTopic(fmt.Sprintf("t-%02d", i), 1)
	}
	for i := range 100 {
		if i%2 == 1 {
			name := fmt.Sprintf("t-%02d", i)
			tt.remove(name)
			h.c.TopicDeleted(name)
		}
	}
	assert.Equal(t, 1, whole, "the list is read once, when the coordinator starts")
	assert.Equal(t, 150, one)
	g := h.settle("g", m)
	want := map[string][]int32{}
	for i := 0; i < 100; i += 2 {
		want[fmt.Sprintf("t-%02d", i)] = []int32{0}
	}
	assert.Equal(t, want, g.Members[0].Current)
	h.c.TopicsChanged()
	assert.Equal(t, 2, whole, "no names: the list is read whole")
}

func (h *cgHarness) member(group, id string) *cmem {
	return &cmem{h: h, group: group, id: id}
}

// beat sends a heartbeat: a join at epoch 0 with topics (or regex), else the
// member's epoch, reporting what it owns when that changed.
func (m *cmem) beat(edit func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = m.group, m.id, m.epoch, m.instance
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30_000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if m.changed {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range m.owned {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
		m.changed = false
	}
	if edit != nil {
		edit(req)
	}
	resp := m.h.c.ConsumerGroupHeartbeat(m.h.caller, req)
	m.h.c.resolveRegexes()
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = resp.Assignment.Topics
			m.changed = true
		}
	}
	return resp
}

func (m *cmem) join(topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	m.epoch = 0
	return m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = topics })
}

func (h *cgHarness) group(name string) GroupInfo {
	g, ok := h.c.Group(name)
	require.True(h.t, ok)
	return g
}

// settle heartbeats every member until the group is Stable.
func (h *cgHarness) settle(group string, ms ...*cmem) GroupInfo {
	for range 20 {
		for _, m := range ms {
			require.Equal(h.t, int16(0), m.beat(nil).ErrorCode)
		}
		if g := h.group(group); g.State == "Stable" {
			return g
		}
	}
	h.t.Fatalf("group %s did not settle: %+v", group, h.group(group))
	return GroupInfo{}
}

func owned(m MemberInfo) int {
	n := 0
	for _, ps := range m.Current {
		n += len(ps)
	}
	return n
}

// TestConsumerGroupRevokeBeforeGrant: a partition moves to a new member only
// once its owner reported it revoked; until then the new member waits
// (UNRELEASED_PARTITIONS) and the owner is UNREVOKED_PARTITIONS at its old
// epoch.
func TestConsumerGroupRevokeBeforeGrant(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 4)
	a, b := h.member("g", "a"), h.member("g", "b")
	require.Equal(t, int16(0), a.join("t").ErrorCode)
	assert.Equal(t, int32(1), a.epoch)
	require.Equal(t, int16(0), b.join("t").ErrorCode)
	assert.Equal(t, int32(2), b.epoch)
	g := h.group("g")
	assert.Equal(t, "Reconciling", g.State)
	assert.Equal(t, int32(2), g.GroupEpoch)
	var mb MemberInfo
	for _, m := range g.Members {
		if m.MemberID == "b" {
			mb = m
		}
	}
	assert.Equal(t, "UNRELEASED_PARTITIONS", mb.MemberState, "b waits for a's partitions")
	assert.Zero(t, owned(mb))

	// a learns it must revoke two partitions; it stays at epoch 1.
	resp := a.beat(nil)
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int32(1), resp.MemberEpoch)
	g = h.group("g")
	for _, m := range g.Members {
		if m.MemberID == "a" {
			assert.Equal(t, "UNREVOKED_PARTITIONS", m.MemberState)
			assert.Equal(t, 2, owned(m))
			assert.Len(t, m.Revoking["t"], 2)
		}
	}
	// b still gets nothing: a has not revoked.
	require.Equal(t, int16(0), b.beat(nil).ErrorCode)
	for _, m := range h.group("g").Members {
		if m.MemberID == "b" {
			assert.Zero(t, owned(m))
		}
	}
	// a reports what it kept; then b gets the rest.
	g = h.settle("g", a, b)
	for _, m := range g.Members {
		assert.Equal(t, 2, owned(m), m.MemberID)
		assert.Equal(t, m.Target, m.Current)
		assert.Equal(t, int32(2), m.MemberEpoch)
	}
}

// TestConsumerGroupRebalanceTimeout: a member that does not revoke within
// its rebalance timeout is fenced; its partitions go to the others.
func TestConsumerGroupRebalanceTimeout(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 2)
	a, b := h.member("g", "a"), h.member("g", "b")
	a.join("t")
	b.join("t")
	a.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }) // learns, never revokes
	h.clk.Advance(29 * time.Second)
	b.beat(nil)
	assert.Len(t, h.group("g").Members, 2, "within its rebalance timeout")
	h.clk.Advance(2 * time.Second)
	g := h.group("g")
	require.Len(t, g.Members, 1, "fenced after its rebalance timeout")
	g = h.settle("g", b)
	assert.Equal(t, map[string][]int32{"t": {0, 1}}, g.Members[0].Current)
	assert.Equal(t, kerr.UnknownMemberID.Code, a.beat(nil).ErrorCode)
}

// TestConsumerGroupStaticMember: a static member leaving with epoch -2 keeps
// its partitions; a new instance with the same instance id takes them over
// without a new group epoch; an instance id held by an active member gets
// UNRELEASED_INSTANCE_ID, and a heartbeat naming another member's instance
// FENCED_INSTANCE_ID.
func TestConsumerGroupStaticMember(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 2)
	inst := "i1"
	a := h.member("g", "a1")
	a.instance = &inst
	b := h.member("g", "b")
	a.join("t")
	b.join("t")
	g := h.settle("g", a, b)
	epoch := g.GroupEpoch
	var aParts map[string][]int32
	for _, m := range g.Members {
		if m.MemberID == "a1" {
			aParts = m.Current
		}
	}

	other := h.member("g", "a2")
	other.instance = &inst
	assert.Equal(t, kerr.UnreleasedInstanceID.Code, other.join("t").ErrorCode, "a1 still holds the instance id")
	assert.Equal(t, kerr.FencedInstanceID.Code, h.member("g", "a2").beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.MemberEpoch, r.InstanceID = epoch, &inst
	}).ErrorCode)

	resp := a.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 })
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, int32(-2), resp.MemberEpoch)
	for _, m := range h.group("g").Members {
		if m.MemberID == "a1" {
			assert.Equal(t, int32(-2), m.MemberEpoch)
			assert.Equal(t, aParts, m.Current, "its partitions wait for it")
		}
	}
	other.epoch = 0
	resp = other.join("t")
	require.Equal(t, int16(0), resp.ErrorCode)
	g = h.group("g")
	assert.Equal(t, epoch, g.GroupEpoch, "replacing a static member starts no new epoch")
	for _, m := range g.Members {
		assert.NotEqual(t, "a1", m.MemberID)
		if m.MemberID == "a2" {
			assert.Equal(t, aParts, m.Current, "the new instance has its predecessor's partitions")
			assert.Equal(t, epoch, m.MemberEpoch)
		}
	}
}

// TestConsumerGroupRegexFollowsTopics: a regex subscription is evaluated
// again when topics are created or deleted: a new matching topic starts a
// new group epoch and is assigned; a deleted one leaves the assignment.
func TestConsumerGroupRegexFollowsTopics(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("orders-eu", 1)
	h.addTopic("billing", 1)
	m := h.member("g", "m")
	resp := m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.RebalanceTimeoutMillis, r.Topics, r.SubscribedTopicRegex = 30_000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, kmsg.StringPtr("orders-.*")
	})
	require.Equal(t, int16(0), resp.ErrorCode)
	require.NotNil(t, resp.Assignment)
	assert.Empty(t, resp.Assignment.Topics, "a new regex is resolved after the heartbeat that brought it, as in Kafka")
	assert.Equal(t, int32(2), h.group("g").GroupEpoch, "its topics come in the next epoch")
	g := h.settle("g", m)
	assert.Equal(t, map[string][]int32{"orders-eu": {0}}, g.Members[0].Current)

	h.addTopic("orders-us", 2)
	g = h.settle("g", m)
	assert.Equal(t, int32(3), g.GroupEpoch)
	assert.Equal(t, map[string][]int32{"orders-eu": {0}, "orders-us": {0, 1}}, g.Members[0].Current)

	h.topics.remove("orders-us")
	h.c.TopicDeleted("orders-us")
	g = h.settle("g", m)
	assert.Equal(t, map[string][]int32{"orders-eu": {0}}, g.Members[0].Current)

	h.addTopic("billing-2", 1)
	assert.Equal(t, int32(4), h.group("g").GroupEpoch, "a topic the regex does not match changes nothing")
}

// TestConsumerGroupRegexForgottenOnLeave: a member that leaves takes the
// resolution of a regex only it used with it, as Kafka's
// maybeDeleteResolvedRegularExpression does; when it comes back (same member
// id, as librdkafka rejoins after unsubscribe) with that regex and a topic
// name, the join is answered with the named topic only, and the regex's
// topics follow in the next epoch (librdkafka's 0045_resubscribe_with_regex
// expects exactly this from Kafka 4.x). A member changing from the regex to
// names loses the regex's topics in that heartbeat's answer.
func TestConsumerGroupRegexForgottenOnLeave(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("topic_regex1", 2)
	h.addTopic("topic_regex2", 2)
	h.addTopic("topic_a", 1)
	m := h.member("g", "m")
	withRegex := func(names ...string) func(*kmsg.ConsumerGroupHeartbeatRequest) {
		return func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicRegex = kmsg.StringPtr("^.*topic_regex.*")
			r.SubscribedTopicNames = names
		}
	}
	require.Equal(t, int16(0), m.beat(withRegex()).ErrorCode)
	g := h.settle("g", m)
	require.Equal(t, map[string][]int32{"topic_regex1": {0, 1}, "topic_regex2": {0, 1}}, g.Members[0].Current)

	leave := m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = epochLeave })
	require.Equal(t, int16(0), leave.ErrorCode)
	assert.Equal(t, int32(epochLeave), leave.MemberEpoch)

	m.epoch, m.owned, m.changed = 0, nil, false
	resp := m.beat(withRegex("topic_a"))
	require.Equal(t, int16(0), resp.ErrorCode)
	require.NotNil(t, resp.Assignment)
	got := map[string]int{}
	for _, tp := range resp.Assignment.Topics {
		h.c.mu.Lock()
		got[h.c.topicIDs[tp.TopicID]] = len(tp.Partitions)
		h.c.mu.Unlock()
	}
	assert.Equal(t, map[string]int{"topic_a": 1}, got, "the rejoin gets the named topic only: the regex is resolved again")
	g = h.settle("g", m)
	assert.Equal(t, map[string][]int32{"topic_a": {0}, "topic_regex1": {0, 1}, "topic_regex2": {0, 1}}, g.Members[0].Current)

	// Changing from the regex to names (the regex set to "") drops the
	// regex's topics in the heartbeat that brings the change, as Kafka
	// computes the new target with the new subscription at once: the
	// answer keeps topic_a only, at the member's epoch until it has
	// revoked the rest (UNREVOKED_PARTITIONS).
	epoch := h.group("g").GroupEpoch
	resp = m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.RebalanceTimeoutMillis, r.SubscribedTopicRegex, r.SubscribedTopicNames = 30_000, kmsg.StringPtr(""), []string{"topic_a"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range m.owned {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	})
	require.Equal(t, int16(0), resp.ErrorCode)
	assert.Equal(t, epoch, resp.MemberEpoch, "the member stays at its epoch until it revokes")
	assert.Equal(t, epoch+1, h.group("g").GroupEpoch, "the change is one new group epoch")
	require.NotNil(t, resp.Assignment)
	got = map[string]int{}
	for _, tp := range resp.Assignment.Topics {
		h.c.mu.Lock()
		got[h.c.topicIDs[tp.TopicID]] = len(tp.Partitions)
		h.c.mu.Unlock()
	}
	assert.Equal(t, map[string]int{"topic_a": 1}, got, "the regex's topics are dropped in the same heartbeat")
	g = h.settle("g", m)
	assert.Equal(t, map[string][]int32{"topic_a": {0}}, g.Members[0].Current)

	// A regex another member still uses stays resolved.
	require.Equal(t, int16(0), m.beat(withRegex("topic_a")).ErrorCode)
	h.settle("g", m)
	o := h.member("g", "o")
	require.Equal(t, int16(0), o.beat(withRegex()).ErrorCode)
	h.settle("g", m, o)
	require.Equal(t, int16(0), m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = epochLeave }).ErrorCode)
	h.c.mu.Lock()
	resolved := h.c.groups["g"].cg.resolved["^.*topic_regex.*"]
	h.c.mu.Unlock()
	assert.True(t, resolved, "o still uses the regex")
}

// TestConsumerGroupRangeAssignor: range splits each topic's partitions into
// contiguous ranges in member id order.
func TestConsumerGroupRangeAssignor(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 5)
	a, b := h.member("g", "a"), h.member("g", "b")
	for _, m := range []*cmem{a, b} {
		require.Equal(t, int16(0), m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.RebalanceTimeoutMillis, r.Topics, r.SubscribedTopicNames, r.ServerAssignor = 30_000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, []string{"t"}, kmsg.StringPtr("range")
		}).ErrorCode)
	}
	g := h.settle("g", a, b)
	assert.Equal(t, "range", g.Protocol)
	assert.Equal(t, map[string][]int32{"t": {0, 1, 2}}, g.Members[0].Current)
	assert.Equal(t, map[string][]int32{"t": {3, 4}}, g.Members[1].Current)
}

// TestConsumerGroupOffsets: OffsetCommit and OffsetFetch check member
// epochs as Kafka does.
func TestConsumerGroupOffsets(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 1)
	m := h.member("g", "m")
	m.join("t")
	commit := func(member string, epoch int32, version int16) int16 {
		req := commitReq("g", member, epoch, "t", map[int32]int64{0: 5})
		req.Version = version
		return h.c.OffsetCommit(NoCaller, req).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit("m", 0, 9))
	assert.Equal(t, kerr.UnsupportedVersion.Code, commit("m", 1, 8), "a KIP-848 member commits with v9+")
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("x", 1, 9))
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("", -1, 9), "an admin commit needs an empty group")
	assert.Equal(t, errNone, commit("m", 1, 9))

	fetch := func(member *string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", member, epoch
		req.Groups = append(req.Groups, rg)
		return h.c.OffsetFetch(req).Groups[0].ErrorCode
	}
	assert.Equal(t, errNone, fetch(nil, -1), "an admin's fetch")
	assert.Equal(t, errNone, fetch(kmsg.StringPtr("m"), 1))
	assert.Equal(t, kerr.StaleMemberEpoch.Code, fetch(kmsg.StringPtr("m"), 7))
	assert.Equal(t, kerr.UnknownMemberID.Code, fetch(kmsg.StringPtr("x"), 1))
}

// TestConsumerGroupAndClassic: ListGroups filters by type and state;
// DescribeGroups describes a consumer group as a classic consumer would
// read it; a classic JoinGroup to a consumer group with members is refused
// and converts an Empty one, and the reverse; the VAST group cap counts
// classic groups only.
func TestConsumerGroupAndClassic(t *testing.T) {
	t.Parallel()
	r := rules.Kafka()
	r.MaxGroups = 1
	tt := &topicTable{}
	tt.add("t", 2)
	h := &cgHarness{harness: newHarness(t, r, func(c *Config) { c.Topics = tt.get }), topics: tt, caller: NoCaller}
	m := h.member("cg", "m")
	require.Equal(t, int16(0), m.join("t").ErrorCode)
	h.settle("cg", m)
	require.Equal(t, kerr.MemberIDRequired.Code, h.join(joinReq("classic", "")).ErrorCode, "the cap counts classic groups only")

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.TypesFilter = []string{"consumer"}
	resp := h.c.ListGroups(lg)
	require.Len(t, resp.Groups, 1)
	assert.Equal(t, "cg", resp.Groups[0].Group)
	assert.Equal(t, "consumer", resp.Groups[0].GroupType)
	assert.Equal(t, "Stable", resp.Groups[0].GroupState)
	lg.TypesFilter, lg.StatesFilter = nil, []string{"reconciling"}
	assert.Empty(t, h.c.ListGroups(lg).Groups)

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 5
	dg.Groups = []string{"cg"}
	d := h.c.DescribeGroups(dg).Groups[0]
	assert.Equal(t, "consumer", d.ProtocolType)
	assert.Equal(t, "uniform", d.Protocol)
	require.Len(t, d.Members, 1)
	var a kmsg.ConsumerMemberAssignment
	require.NoError(t, a.ReadFrom(d.Members[0].MemberAssignment))
	require.Len(t, a.Topics, 1)
	assert.Equal(t, []int32{0, 1}, a.Topics[0].Partitions)

	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join(joinReq("cg", "")).ErrorCode)
	require.Equal(t, errNone, m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }).ErrorCode)
	assert.Equal(t, kerr.MemberIDRequired.Code, h.join(joinReq("cg", "")).ErrorCode, "an Empty consumer group becomes classic")
	assert.Equal(t, "classic", h.group("cg").Type)
}

// TestConsumerGroupHeartbeatValidation: ids made of spaces count as empty
// (Kafka trims them), and a member that left and rejoins at epoch 0
// without a rebalance timeout, or without names or a regex, gets
// INVALID_REQUEST with Kafka 4.x's message, as librdkafka does when its
// leave races a new subscription; the group is not disturbed.
func TestConsumerGroupHeartbeatValidation(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 2)
	m := h.member("g", "m")
	require.Equal(t, errNone, m.join("t").ErrorCode)
	before := h.settle("g", m)
	require.Equal(t, errNone, m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = epochLeave }).ErrorCode)
	cases := []struct {
		name string
		edit func(*kmsg.ConsumerGroupHeartbeatRequest)
		msg  string
	}{
		{"group id of spaces", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = " \t " }, "GroupId can't be empty."},
		{"member id of spaces", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "  " }, "MemberId can't be empty."},
		{"instance id of spaces", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr(" ") }, "InstanceId can't be empty."},
		{"rack id of spaces", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("\n") }, "RackId can't be empty."},
		{"rejoin without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, "RebalanceTimeoutMs must be provided in first request."},
		{"rejoin without names or regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil },
			"Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
	}
	for _, c := range cases {
		m.epoch = 0
		resp := m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = []string{"t"}
			c.edit(r)
		})
		assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, c.name)
		if assert.NotNil(t, resp.ErrorMessage, c.name) {
			assert.Equal(t, c.msg, *resp.ErrorMessage, c.name)
		}
	}
	_, ok := h.c.Group(" \t ")
	assert.False(t, ok, "no group of spaces was made")
	after := h.group("g")
	assert.Equal(t, "Empty", after.State, "the member that left did not come back")
	assert.Equal(t, before.GroupEpoch+1, after.GroupEpoch, "only the leave made an epoch")
	m.epoch = 0
	require.Equal(t, errNone, m.join("t").ErrorCode, "a valid rejoin works")
}

// TestConsumerGroupBounds: group.consumer.max.size refuses one member too
// many with GROUP_MAX_SIZE_REACHED (a member already in the group still
// rejoins); a subscription naming more than MaxSubscribedTopicNames topics
// and a regex longer than MaxSubscribedTopicRegexBytes are refused and
// create nothing.
func TestConsumerGroupBounds(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t, func(c *Config) { c.ConsumerGroupMaxSize = 2 })
	h.addTopic("t", 1)
	a, b, c := h.member("g", "a"), h.member("g", "b"), h.member("g", "c")
	require.Equal(t, errNone, a.join("t").ErrorCode)
	require.Equal(t, errNone, b.join("t").ErrorCode)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, c.join("t").ErrorCode)
	assert.Equal(t, errNone, a.join("t").ErrorCode, "a member of the group rejoins")
	assert.Len(t, h.group("g").Members, 2)

	many := make([]string, MaxSubscribedTopicNames+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	assert.Equal(t, kerr.InvalidRequest.Code, h.member("g2", "m").join(many...).ErrorCode)
	long := h.member("g3", "m").beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.RebalanceTimeoutMillis, r.Topics = 30_000, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r.SubscribedTopicRegex = kmsg.StringPtr(fmt.Sprintf("%0*d", MaxSubscribedTopicRegexBytes+1, 0))
	})
	assert.Equal(t, kerr.InvalidRegularExpression.Code, long.ErrorCode)
	_, ok2 := h.c.Group("g2")
	_, ok3 := h.c.Group("g3")
	assert.False(t, ok2 || ok3, "a refused join creates no group")
}

// TestConsumerGroupStaticMemberAway: a static member that left with -2 and
// does not come back within the session timeout is removed and its
// partitions move, in a new group epoch.
func TestConsumerGroupStaticMemberAway(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t, func(c *Config) { c.ConsumerSessionTimeout = 10 * time.Second })
	h.addTopic("t", 2)
	inst := "i1"
	a, b := h.member("g", "a"), h.member("g", "b")
	a.instance = &inst
	a.join("t")
	b.join("t")
	g := h.settle("g", a, b)
	require.Equal(t, errNone, a.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }).ErrorCode)
	h.clk.Advance(9 * time.Second)
	b.beat(nil)
	assert.Len(t, h.group("g").Members, 2, "its partitions wait for it")
	assert.Equal(t, g.GroupEpoch, h.group("g").GroupEpoch)
	h.clk.Advance(2 * time.Second)
	g2 := h.settle("g", b)
	require.Len(t, g2.Members, 1)
	assert.Equal(t, g.GroupEpoch+1, g2.GroupEpoch)
	assert.Equal(t, map[string][]int32{"t": {0, 1}}, g2.Members[0].Current)
}

// TestConsumerGroupRebalanceHistory: each assignment epoch a consumer
// group settles at is one finished rebalance in the history, with every
// member's partitions.
func TestConsumerGroupRebalanceHistory(t *testing.T) {
	t.Parallel()
	h := newCGHarness(t)
	h.addTopic("t", 2)
	a, b := h.member("g", "a"), h.member("g", "b")
	a.join("t")
	h.settle("g", a)
	b.join("t")
	h.settle("g", a, b)
	h.settle("g", a, b) // a Stable group's heartbeats record nothing more
	rs := h.c.Rebalances()
	require.Len(t, rs, 2)
	assert.Equal(t, []int32{1, 2}, []int32{rs[0].Generation, rs[1].Generation})
	require.Len(t, rs[1].Members, 2)
	for _, m := range rs[1].Members {
		var as kmsg.ConsumerMemberAssignment
		require.NoError(t, as.ReadFrom(m.Assignment))
		require.Len(t, as.Topics, 1)
		assert.Len(t, as.Topics[0].Partitions, 1, m.MemberID)
	}
}

// TestConsumerGroupKeepsWhatItStoresBounded: what a KIP-848 group keeps of
// its members' strings has bounds, as classic groups' do: an id or a
// subscribed name past its bound gets INVALID_REQUEST, a group whose
// members would keep more than MaxConsumerGroupBytes gets
// GROUP_MAX_SIZE_REACHED and keeps what it had, a member rejoining under a
// new instance id leaves no entry for the old one, and a consumer group is
// told to its caller as created, as a classic one is.
func TestConsumerGroupKeepsWhatItStoresBounded(t *testing.T) {
	t.Parallel()
	caller := &testCaller{id: "app"}
	h := newCGHarness(t)
	h.caller = caller
	h.addTopic("orders", 2)

	long := string(make([]byte, MaxGroupIDBytes+1))
	for name, edit := range map[string]func(*kmsg.ConsumerGroupHeartbeatRequest){
		"member id":   func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = long },
		"instance id": func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = &long },
		"rack id":     func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = &long },
		"topic name": func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = []string{string(make([]byte, 250))}
		},
	} {
		resp := h.member("g", "m-long").beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames = []string{"orders"}
			edit(r)
		})
		assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode, name)
	}
	_, ok := h.c.Group("g")
	assert.False(t, ok, "refused joins create no group")

	// Names of 249 bytes: the group fills up to its byte bound, and the
	// member that would pass it is refused without disturbing the others.
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("%0249d", i)
	}
	perMember := 249 * len(names)
	fit := MaxConsumerGroupBytes / (perMember + 16)
	for i := range fit {
		resp := h.member("g", fmt.Sprintf("member-%06d", i)).join(names...)
		require.Equal(t, int16(0), resp.ErrorCode, "member %d of %d", i, fit)
	}
	resp := h.member("g", "one-too-many").join(names...)
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode)
	assert.Len(t, h.group("g").Members, fit)

	// A static member rejoining under new instance ids keeps one entry.
	m := h.member("s", "static-member")
	for i := range 100 {
		inst := fmt.Sprint("instance-", i)
		m.instance = &inst
		require.Equal(t, int16(0), m.join("orders").ErrorCode)
	}
	h.c.mu.Lock()
	static := len(h.c.groups["s"].cg.static)
	h.c.mu.Unlock()
	assert.Equal(t, 1, static)
	_, _, created := caller.told()
	assert.Equal(t, []string{"g", "s"}, created)
}

// TestAssignmentEpochCommits: a member one epoch behind commits a
// partition it held at that epoch. Before Kafka 4.3 every commit must carry
// the member's epoch; with KIP-1251's assignment epochs
// (Config.AssignmentEpochs) a partition is refused only when the member
// was given it at a later epoch or does not hold it, and a newer epoch than
// the member's is refused whole. TxnOffsetCommit checks the same way.
func TestAssignmentEpochCommits(t *testing.T) {
	for _, relaxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("AssignmentEpochs=%v", relaxed), func(t *testing.T) {
			h := newCGHarness(t, func(c *Config) { c.AssignmentEpochs = relaxed })
			h.addTopic("t", 1)
			m := h.member("g", "m")
			require.Equal(t, int16(0), m.join("t", "u").ErrorCode)
			h.settle("g", m)
			old := m.epoch
			h.addTopic("u", 1) // a new group epoch gives m u-0
			g := h.settle("g", m)
			require.Equal(t, map[string][]int32{"t": {0}, "u": {0}}, g.Members[0].Current)
			require.Greater(t, m.epoch, old)

			commit := func(epoch int32) map[string]int16 {
				req := commitReq("g", "m", epoch, "t", map[int32]int64{0: 5})
				req.Version = 9
				for _, topic := range []string{"u", "v"} {
					rt := kmsg.NewOffsetCommitRequestTopic()
					rt.Topic = topic
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Offset = 5
					rt.Partitions = append(rt.Partitions, rp)
					req.Topics = append(req.Topics, rt)
				}
				out := map[string]int16{}
				for _, rt := range h.c.OffsetCommit(NoCaller, req).Topics {
					out[rt.Topic] = rt.Partitions[0].ErrorCode
				}
				return out
			}
			stale := kerr.StaleMemberEpoch.Code
			assert.Equal(t, map[string]int16{"t": 0, "u": 0, "v": 0}, commit(m.epoch), "the member's epoch")
			assert.Equal(t, map[string]int16{"t": stale, "u": stale, "v": stale}, commit(m.epoch+1), "a newer epoch")
			want := map[string]int16{"t": stale, "u": stale, "v": stale}
			if relaxed {
				want["t"] = 0 // held since the older epoch; u-0 came later, v-0 is not its own
			}
			assert.Equal(t, want, commit(old), "an older epoch")

			th := &txnHarness{harness: h.harness}
			pid, epoch := th.init("etl")
			require.Zero(t, h.c.AddOffsetsToTxn("etl", pid, epoch, "g"))
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version = 3
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "etl", pid, epoch
			req.Group, req.MemberID, req.Generation = "g", "m", old
			for _, topic := range []string{"t", "u"} {
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = topic
				rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
				req.Topics = append(req.Topics, rt)
			}
			resp := h.c.TxnOffsetCommit(req)
			wantT := stale
			if relaxed {
				wantT = 0
			}
			assert.Equal(t, wantT, resp.Topics[0].Partitions[0].ErrorCode, "TxnOffsetCommit of t-0 at the older epoch")
			assert.Equal(t, stale, resp.Topics[1].Partitions[0].ErrorCode, "TxnOffsetCommit of u-0 at the older epoch")
		})
	}
}
