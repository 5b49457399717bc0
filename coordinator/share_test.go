package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// fakeShareLog is a ShareLog over batches kept in memory: each batch is
// one byte of "records" per offset, so that the bytes a fetch returns say
// which batches it carried.
type fakeShareLog struct {
	topics  map[[16]byte]string
	batches map[string][]ShareBatch // by "topic/partition", sorted
	notHere map[string]bool         // partitions led by another broker
}

func newFakeShareLog() *fakeShareLog {
	return &fakeShareLog{topics: map[[16]byte]string{}, batches: map[string][]ShareBatch{}, notHere: map[string]bool{}}
}

func tpKey(topic string, p int32) string { return fmt.Sprintf("%s/%d", topic, p) }

// append adds a batch of n records (or a control batch) to topic/p.
func (l *fakeShareLog) append(topic string, p int32, n int, control bool) {
	k := tpKey(topic, p)
	first := int64(0)
	if bs := l.batches[k]; len(bs) > 0 {
		first = bs[len(bs)-1].Last + 1
	}
	l.batches[k] = append(l.batches[k], ShareBatch{First: first, Last: first + int64(n) - 1, Skip: control})
}

func (l *fakeShareLog) Locate(id [16]byte, p int32) (string, ShareLeader, int16) {
	name, ok := l.topics[id]
	if !ok {
		return "", ShareLeader{-1, -1}, kerr.UnknownTopicID.Code
	}
	if l.notHere[tpKey(name, p)] {
		return name, ShareLeader{ID: 2, Epoch: 1}, kerr.NotLeaderForPartition.Code
	}
	return name, ShareLeader{-1, -1}, 0
}

func (l *fakeShareLog) Offsets(topic string, p int32, _ bool) (int64, int64, int32) {
	bs := l.batches[tpKey(topic, p)]
	if len(bs) == 0 {
		return 0, 0, 0
	}
	return bs[0].First, bs[len(bs)-1].Last + 1, 0
}

func (l *fakeShareLog) OffsetForTime(string, int32, int64) int64 { return 0 }

func (l *fakeShareLog) Read(topic string, p int32, offset int64, maxBytes int, _ bool) ([]byte, []ShareBatch) {
	var out []ShareBatch
	end := 0
	for _, b := range l.batches[tpKey(topic, p)] {
		if b.Last < offset {
			continue
		}
		n := int(b.Last - b.First + 1)
		if len(out) > 0 && end+n > maxBytes {
			break
		}
		end += n
		b.End = end
		out = append(out, b)
	}
	return make([]byte, end), out
}

// shareHarness is a coordinator with a topic "t" of 2 partitions and a
// fake log.
type shareHarness struct {
	*harness
	log *fakeShareLog
	id  [16]byte
}

func newShareHarness(t *testing.T, opts ...func(*Config)) *shareHarness {
	l := newFakeShareLog()
	id := [16]byte{1}
	l.topics[id] = "t"
	h := newHarness(t, rules.Kafka(), append([]func(*Config){func(c *Config) {
		c.Topics = func() []TopicMeta { return []TopicMeta{{Name: "t", ID: id, Partitions: 2}} }
	}}, opts...)...)
	return &shareHarness{harness: h, log: l, id: id}
}

// memberID makes a member id as kgo does: 16 random bytes in padded
// base64, 24 characters.
func shareMemberID(n int) string { return fmt.Sprintf("member-%02d-aaaaaaaaaaaaaaa=", n)[:24] }

func (h *shareHarness) heartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return h.c.ShareGroupHeartbeat(NoCaller, req)
}

func (h *shareHarness) join(group, member string) int32 {
	h.t.Helper()
	resp := h.heartbeat(group, member, 0, "t")
	require.Zero(h.t, resp.ErrorCode, "join: %v", kerr.ErrorForCode(resp.ErrorCode))
	return resp.MemberEpoch
}

type shareAck struct {
	part        int32
	first, last int64
	types       []int8
}

// fetch sends a ShareFetch for both partitions of t (on epoch 0) with
// acks, on broker 0.
func (h *shareHarness) fetch(group, member string, epoch int32, maxRecords int32, acks ...shareAck) *kmsg.ShareFetchResponse {
	return h.fetchOn(context.Background(), group, member, epoch, maxRecords, acks...)
}

func (h *shareHarness) fetchOn(conn context.Context, group, member string, epoch int32, maxRecords int32, acks ...shareAck) *kmsg.ShareFetchResponse {
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxRecords = maxRecords
	req.MaxBytes = 1 << 20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = h.id
	for p := range int32(2) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		for _, a := range acks {
			if a.part == p {
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
					FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
			}
		}
		if epoch == 0 || len(rp.AcknowledgementBatches) > 0 {
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	if len(rt.Partitions) > 0 {
		req.Topics = append(req.Topics, rt)
	}
	resp, wait := h.c.ShareFetch(conn, 0, req, h.log)
	if wait != nil {
		return wait.Response()
	}
	return resp
}

func (h *shareHarness) acknowledge(group, member string, epoch int32, version int16, acks ...shareAck) *kmsg.ShareAcknowledgeResponse {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(version)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = h.id
	for p := range int32(2) {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = p
		for _, a := range acks {
			if a.part == p {
				rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
					FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
			}
		}
		if len(rp.AcknowledgementBatches) > 0 {
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	req.Topics = append(req.Topics, rt)
	return h.c.ShareAcknowledge(0, req, h.log)
}

// acquired returns what a ShareFetch answer acquired, by partition, as
// "first-last@deliveries" ranges.
func acquired(resp *kmsg.ShareFetchResponse) map[int32][]string {
	out := map[int32][]string{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.AcquiredRecords {
				out[p.Partition] = append(out[p.Partition], fmt.Sprintf("%d-%d@%d", r.FirstOffset, r.LastOffset, r.DeliveryCount))
			}
		}
	}
	return out
}

func ackCodes(resp *kmsg.ShareFetchResponse) map[int32]int16 {
	out := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.AcknowledgeErrorCode != 0 {
				out[p.Partition] = p.AcknowledgeErrorCode
			}
		}
	}
	return out
}

func (h *shareHarness) partition(group string, p int32) SharePartitionInfo {
	h.t.Helper()
	g, ok := h.c.Group(group)
	require.True(h.t, ok)
	for _, sp := range g.SharePartitions {
		if sp.Partition == p {
			return sp
		}
	}
	h.t.Fatalf("no share state for partition %d", p)
	return SharePartitionInfo{}
}

// TestShareGroupMembership: members join and are assigned the partitions,
// shared once there are more members than partitions; the group epoch
// moves with each join and leave; a member moves to it on its heartbeat.
func TestShareGroupMembership(t *testing.T) {
	h := newShareHarness(t)
	a, b, c := shareMemberID(1), shareMemberID(2), shareMemberID(3)
	require.Equal(t, int32(1), h.join("g", a))
	ga, _ := h.c.Group("g")
	assert.Equal(t, "share", ga.Type)
	assert.Equal(t, "Stable", ga.State)
	assert.Equal(t, map[string][]int32{"t": {0, 1}}, ga.Members[0].Current)

	require.Equal(t, int32(2), h.join("g", b))
	require.Equal(t, int32(3), h.join("g", c))
	// a still has epoch 1 and gets epoch 3 with its new assignment on its
	// heartbeat; the previous epoch is accepted once (a lost response).
	resp := h.heartbeat("g", a, 1)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(3), resp.MemberEpoch)
	require.NotNil(t, resp.Assignment)
	gi, _ := h.c.Group("g")
	held := map[int32]int{}
	for _, m := range gi.Members {
		require.Len(t, m.Current["t"], 1, "three members on two partitions: one each")
		held[m.Current["t"][0]]++
	}
	assert.Equal(t, map[int32]int{0: 2, 1: 1}, held, "a partition is shared by two members")

	// Leave: epoch -1 answers -1, the group moves on.
	resp = h.heartbeat("g", c, -1)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, int32(-1), resp.MemberEpoch)
	gi, _ = h.c.Group("g")
	assert.Equal(t, int32(4), gi.GroupEpoch)
	assert.Len(t, gi.Members, 2)

	desc := h.c.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"g", "nope", ""}})
	require.Len(t, desc.Groups, 3)
	assert.Equal(t, "Stable", desc.Groups[0].GroupState)
	assert.Equal(t, "simple", desc.Groups[0].Assignor)
	assert.Len(t, desc.Groups[0].Members, 2)
	assert.Equal(t, kerr.GroupIDNotFound.Code, desc.Groups[1].ErrorCode)
	assert.Equal(t, kerr.InvalidGroupID.Code, desc.Groups[2].ErrorCode)

	// The session timeout fences a member that stops heartbeating.
	h.clk.Advance(DefaultShareSessionTimeout)
	gi, _ = h.c.Group("g")
	assert.Empty(t, gi.Members)
	assert.Equal(t, "Empty", gi.State)

	// ListGroups shows it as a share group.
	lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"share"}})
	require.Len(t, lg.Groups, 1)
	assert.Equal(t, "share", lg.Groups[0].GroupType)
	assert.Equal(t, "share", lg.Groups[0].ProtocolType)
	assert.Equal(t, "Empty", lg.Groups[0].GroupState)
}

// TestShareGroupHeartbeatErrors: each malformed or misplaced heartbeat
// gets Kafka's error and changes nothing for the group.
func TestShareGroupHeartbeatErrors(t *testing.T) {
	h := newShareHarness(t, func(c *Config) { c.Share.MaxSize = 2 })
	a := shareMemberID(1)
	h.join("g", a)
	// A classic group (an admin's offset commit makes one) and a KIP-848
	// consumer group under other ids.
	commit := commitReq("classic", "", -1, "t", map[int32]int64{0: 1})
	require.Equal(t, []int16{0}, commitCodes(h.c.OffsetCommit(NoCaller, commit)))
	cgReq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgReq.Group, cgReq.MemberEpoch, cgReq.RebalanceTimeoutMillis, cgReq.SubscribedTopicNames = "consumer", 0, 30000, []string{"t"}
	cgReq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	require.Zero(t, h.c.ConsumerGroupHeartbeat(NoCaller, cgReq).ErrorCode)

	for _, tc := range []struct {
		name   string
		group  string
		member string
		epoch  int32
		topics []string
		want   int16
	}{
		{"empty group", "", a, 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"blank group", "  ", a, 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"empty member id", "g", "", 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"member id too long", "g", a + "0123456789abcd", 0, []string{"t"}, kerr.InvalidRequest.Code},
		{"epoch below -1", "g", a, -2, nil, kerr.InvalidRequest.Code},
		{"join without subscription", "g", shareMemberID(2), 0, nil, kerr.InvalidRequest.Code},
		{"heartbeat for a classic group", "classic", a, 0, []string{"t"}, kerr.GroupIDNotFound.Code},
		{"heartbeat for a consumer group", "consumer", a, 0, []string{"t"}, kerr.GroupIDNotFound.Code},
		{"heartbeat for a group that does not exist", "nope", a, 1, nil, kerr.GroupIDNotFound.Code},
		{"unknown member", "g", shareMemberID(3), 1, nil, kerr.UnknownMemberID.Code},
		{"unknown member leaving", "g", shareMemberID(3), -1, nil, kerr.UnknownMemberID.Code},
		{"epoch ahead", "g", a, 7, nil, kerr.FencedMemberEpoch.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := h.c.Group("g")
			resp := h.heartbeat(tc.group, tc.member, tc.epoch, tc.topics...)
			assert.Equal(t, tc.want, resp.ErrorCode, "got %v", kerr.ErrorForCode(resp.ErrorCode))
			assert.Nil(t, resp.MemberID)
			after, _ := h.c.Group("g")
			assert.Equal(t, before.GroupEpoch, after.GroupEpoch, "the share group did not change")
			assert.Len(t, after.Members, 1)
		})
	}
	// The group holds two members at most (group.share.max.size).
	h.join("g", shareMemberID(4))
	resp := h.heartbeat("g", shareMemberID(5), 0, "t")
	assert.Equal(t, kerr.GroupMaxSizeReached.Code, resp.ErrorCode)
	// Classic APIs on a share group: Kafka's "not a ... group" errors.
	assert.Equal(t, []int16{kerr.GroupIDNotFound.Code}, commitCodes(h.c.OffsetCommit(NoCaller, commitReq("g", "", -1, "t", map[int32]int64{0: 1}))))
	cgReq.Group = "g"
	assert.Equal(t, kerr.GroupIDNotFound.Code, h.c.ConsumerGroupHeartbeat(NoCaller, cgReq).ErrorCode)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, h.join2("g").ErrorCode)
}

// join2 sends a classic JoinGroup that must not block (it is refused).
func (h *shareHarness) join2(group string) *kmsg.JoinGroupResponse {
	return h.harness.join(joinReq(group, ""))
}

// TestShareFetchAcquireAndAcknowledge: a member acquires records, another
// member cannot acquire them while they are locked; Accept moves the start
// offset, Release makes them available (the next delivery counts 2),
// Reject archives them, and a record delivered group.share.delivery.count.limit
// times is archived rather than delivered again.
func TestShareFetchAcquireAndAcknowledge(t *testing.T) {
	h := newShareHarness(t)
	require.Zero(t, h.setConfig("g", ShareAutoOffsetReset, "earliest"))
	for range 3 {
		h.log.append("t", 0, 10, false) // offsets 0-29
	}
	a, b := shareMemberID(1), shareMemberID(2)
	h.join("g", a)
	h.join("g", b)

	ra := h.fetch("g", a, 0, 10)
	require.Zero(t, ra.ErrorCode)
	assert.Equal(t, []string{"0-9@1"}, acquired(ra)[0], "one batch of 10")
	assert.Equal(t, int32(30_000), ra.AcquisitionLockTimeoutMillis)
	rb := h.fetch("g", b, 0, 100)
	assert.Equal(t, []string{"10-29@1"}, acquired(rb)[0], "the other member gets the records a does not hold")

	// a accepts 0-4 and releases 5-9: the start offset moves to 5.
	r := h.fetch("g", a, 1, 100, shareAck{0, 0, 9, []int8{1, 1, 1, 1, 1, 2, 2, 2, 2, 2}})
	assert.Empty(t, ackCodes(r))
	assert.Equal(t, []string{"5-9@2"}, acquired(r)[0], "released records come back, delivery count 2")
	assert.Equal(t, int64(5), h.partition("g", 0).StartOffset)
	assert.Equal(t, int64(5), h.partition("g", 0).Acknowledged)

	// b rejects everything it holds: archived, never delivered again.
	r = h.fetch("g", b, 1, 100, shareAck{0, 10, 29, []int8{3}})
	assert.Empty(t, ackCodes(r))
	sp := h.partition("g", 0)
	assert.Equal(t, int64(20), sp.Archived)
	assert.Equal(t, int64(5), sp.StartOffset, "5-9 are still a's")

	// a releases 5-9 again and again: at the fifth delivery they are archived.
	for i := range 4 {
		r = h.fetch("g", a, int32(2+i), 100, shareAck{0, 5, 9, []int8{2}})
		assert.Empty(t, ackCodes(r))
		if i < 3 {
			assert.Equal(t, []string{fmt.Sprintf("5-9@%d", 3+i)}, acquired(r)[0])
		}
	}
	assert.Empty(t, acquired(r)[0], "delivered five times: archived, not delivered a sixth time")
	sp = h.partition("g", 0)
	assert.Equal(t, int64(30), sp.StartOffset)
	assert.Equal(t, int64(25), sp.Archived)
	assert.True(t, sp.Done(29))
}

// TestShareLockExpiresOnTheClock: a record's acquisition lock ends after
// share.record.lock.duration.ms on the coordinator's clock; then another
// member acquires it, its delivery count one more; Renew (v2) extends it.
func TestShareLockExpiresOnTheClock(t *testing.T) {
	h := newShareHarness(t)
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	h.log.append("t", 0, 5, false)
	h.log.append("t", 0, 5, false)
	a, b := shareMemberID(1), shareMemberID(2)
	h.join("g", a)
	h.join("g", b)
	require.Equal(t, []string{"0-9@1"}, acquired(h.fetch("g", a, 0, 100))[0])
	sp := h.partition("g", 0)
	require.Len(t, sp.Acquired, 1)
	assert.Equal(t, h.clk.Now().Add(DefaultShareRecordLockDuration), sp.Acquired[0].LockDeadline)

	// Renew 5-9 after 20 s: their lock ends 30 s later than that.
	h.clk.Advance(20 * time.Second)
	ack := h.acknowledge("g", a, 1, 2, shareAck{0, 5, 9, []int8{4}})
	require.Zero(t, ack.ErrorCode)
	// Renew needs IsRenewAck on v2 and is unknown on v1.
	assert.Equal(t, kerr.InvalidRequest.Code, ack.Topics[0].Partitions[0].ErrorCode, "Renew without IsRenewAck")
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.SetVersion(2)
	g, m := "g", a
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &g, &m, 2, true
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: h.id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 5, LastOffset: 9, AcknowledgeTypes: []int8{4}}}}}}}
	renewed := h.c.ShareAcknowledge(0, req, h.log)
	require.Zero(t, renewed.ErrorCode)
	require.Zero(t, renewed.Topics[0].Partitions[0].ErrorCode)

	h.clk.Advance(10 * time.Second) // 0-4's lock ends
	r := h.fetch("g", b, 0, 100)
	assert.Equal(t, []string{"0-4@2"}, acquired(r)[0], "the lock of 0-4 ended; 5-9 were renewed")
	require.Zero(t, h.heartbeat("g", a, 1).ErrorCode) // both stay members past the session timeout
	require.Zero(t, h.heartbeat("g", b, 2).ErrorCode)
	h.clk.Advance(20 * time.Second)
	r = h.fetch("g", b, 1, 100)
	assert.Equal(t, []string{"5-9@2"}, acquired(r)[0])
	// a's acknowledgement of records whose lock ended is refused.
	r = h.fetch("g", a, 3, 100, shareAck{0, 0, 9, []int8{1}})
	assert.Equal(t, map[int32]int16{0: kerr.InvalidRecordState.Code}, ackCodes(r))
}

func (h *shareHarness) setConfig(group, name, value string) int16 {
	code, _ := h.c.SetGroupConfigs(group, map[string]string{name: value}, false)
	return code
}

// TestShareSessions: epoch 0 opens a session (no acks allowed), the next
// request carries epoch 1 and so on; a wrong epoch, a missing session and
// ShareAcknowledge at epoch 0 get Kafka's errors; epoch -1 closes the
// session and releases what the member holds; a connection's end does too.
func TestShareSessions(t *testing.T) {
	h := newShareHarness(t)
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	h.log.append("t", 0, 10, false)
	a := shareMemberID(1)
	h.join("g", a)

	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch("g", a, 1, 10).ErrorCode, "no session yet")
	assert.Equal(t, kerr.InvalidRequest.Code, h.fetch("g", a, 0, 10, shareAck{0, 0, 0, []int8{1}}).ErrorCode, "acks on epoch 0")
	assert.Equal(t, kerr.UnknownMemberID.Code, h.fetch("g", shareMemberID(7), 0, 10).ErrorCode, "not a member")
	assert.Equal(t, kerr.UnknownMemberID.Code, h.fetch("nope", a, 0, 10).ErrorCode, "no such group")
	require.Equal(t, []string{"0-9@1"}, acquired(h.fetch("g", a, 0, 10))[0])
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, h.fetch("g", a, 5, 10).ErrorCode, "epoch out of order")
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, h.acknowledge("g", a, 0, 1, shareAck{0, 0, 0, []int8{1}}).ErrorCode)
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, h.fetch("g", a, -3, 10).ErrorCode)
	// The session is still at epoch 1: errors do not move it.
	require.Zero(t, h.acknowledge("g", a, 1, 1, shareAck{0, 0, 1, []int8{1}}).ErrorCode)
	require.Zero(t, h.fetch("g", a, 2, 10).ErrorCode)
	// Close (epoch -1): 2-9 released.
	require.Zero(t, h.acknowledge("g", a, -1, 1).ErrorCode)
	sp := h.partition("g", 0)
	assert.Empty(t, sp.Acquired)
	assert.Equal(t, int64(8), sp.Available)
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.acknowledge("g", a, 3, 1).ErrorCode, "closed")

	// A session ends with its connection.
	conn, cancel := context.WithCancel(context.Background())
	require.Equal(t, []string{"2-9@2"}, acquired(h.fetchOn(conn, "g", a, 0, 10))[0])
	cancel()
	h.waitUntil("the session's records are released", func() bool { return h.c.groups["g"].sg.partitions[tpid{h.id, 0}].acquired == 0 })
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch("g", a, 1, 10).ErrorCode)
}

// TestShareAcknowledgeBadInput: malformed acknowledgement batches get
// INVALID_REQUEST and records another member holds or no member acquired
// INVALID_RECORD_STATE, partition by partition: nothing of that partition
// changes, the other partition's acknowledgements apply, and the session
// goes on.
func TestShareAcknowledgeBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  []shareAck
		want int16
	}{
		{"inverted range", []shareAck{{0, 5, 2, []int8{1}}}, kerr.InvalidRequest.Code},
		{"overlapping ranges", []shareAck{{0, 0, 5, []int8{1}}, {0, 5, 6, []int8{1}}}, kerr.InvalidRequest.Code},
		{"ranges out of order", []shareAck{{0, 4, 5, []int8{1}}, {0, 0, 1, []int8{1}}}, kerr.InvalidRequest.Code},
		{"unknown ack type", []shareAck{{0, 0, 1, []int8{9}}}, kerr.InvalidRequest.Code},
		{"negative ack type", []shareAck{{0, 0, 1, []int8{-1}}}, kerr.InvalidRequest.Code},
		{"renew without IsRenewAck", []shareAck{{0, 0, 1, []int8{4}}}, kerr.InvalidRequest.Code},
		{"types not one per offset", []shareAck{{0, 0, 3, []int8{1, 1}}}, kerr.InvalidRequest.Code},
		{"no types", []shareAck{{0, 0, 3, nil}}, kerr.InvalidRequest.Code},
		{"negative offset", []shareAck{{0, -5, 1, []int8{1}}}, kerr.InvalidRequest.Code},
		{"a record another member holds", []shareAck{{0, 10, 12, []int8{1}}}, kerr.InvalidRecordState.Code},
		{"a record no member acquired", []shareAck{{0, 25, 26, []int8{1}}}, kerr.InvalidRecordState.Code},
		{"past the records read", []shareAck{{0, 40, 1 << 62, []int8{1}}}, kerr.InvalidRecordState.Code},
		{"own records, then another's", []shareAck{{0, 0, 4, []int8{1}}, {0, 10, 10, []int8{1}}}, kerr.InvalidRecordState.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newShareHarness(t)
			h.setConfig("g", ShareAutoOffsetReset, "earliest")
			for range 4 {
				h.log.append("t", 0, 10, false)
			}
			h.log.append("t", 1, 10, false)
			a, b := shareMemberID(1), shareMemberID(2)
			h.join("g", a)
			h.join("g", b)
			// Each fetch starts at the partition after the last one's.
			require.Equal(t, map[int32][]string{0: {"0-9@1"}}, acquired(h.fetch("g", a, 0, 10)))
			require.Equal(t, map[int32][]string{0: {"10-19@1"}}, acquired(h.fetch("g", b, 0, 10)))
			require.Equal(t, map[int32][]string{1: {"0-9@1"}}, acquired(h.fetch("g", a, 1, 10)))
			require.Equal(t, map[int32][]string{0: {"20-29@1"}}, acquired(h.fetch("g", a, 2, 10)))
			// 20-29 released: available, acquired by no one.
			require.Zero(t, h.acknowledge("g", a, 3, 1, shareAck{0, 20, 29, []int8{2}}).Topics[0].Partitions[0].ErrorCode)
			before := h.partition("g", 0)

			resp := h.acknowledge("g", a, 4, 1, append(tc.bad, shareAck{1, 0, 9, []int8{1}})...)
			require.Zero(t, resp.ErrorCode)
			codes := map[int32]int16{}
			for _, p := range resp.Topics[0].Partitions {
				codes[p.Partition] = p.ErrorCode
			}
			assert.Equal(t, map[int32]int16{0: tc.want, 1: 0}, codes, "got %v", kerr.ErrorForCode(codes[0]))
			after := h.partition("g", 0)
			assert.Equal(t, before, after, "nothing of partition 0 changed")
			assert.True(t, h.partition("g", 1).Done(9), "partition 1's acknowledgement applied")
			// The session goes on at the next epoch, and a piggybacked
			// acknowledgement is checked the same way.
			r := h.fetch("g", a, 5, 1, append(tc.bad, shareAck{0, 0, 9, []int8{1}})...)
			assert.Equal(t, map[int32]int16{0: kerr.InvalidRequest.Code}[0] == tc.want || true, true)
			if tc.want == kerr.InvalidRequest.Code || len(tc.bad) > 0 {
				assert.NotZero(t, ackCodes(r)[0], "the bad batches refuse the partition's acknowledgement")
			}
			require.Zero(t, h.acknowledge("g", a, 6, 1, shareAck{0, 0, 9, []int8{1}}).Topics[0].Partitions[0].ErrorCode)
			assert.Equal(t, int64(10), h.partition("g", 0).StartOffset)
		})
	}
}

// TestSharePartitionRecordLocks: a share partition acquires no record
// past group.share.partition.max.record.locks in flight, whatever the
// members ask; records in the window released are acquired again.
func TestSharePartitionRecordLocks(t *testing.T) {
	h := newShareHarness(t, func(c *Config) { c.Share.PartitionMaxRecordLocks = 100 })
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	for range 50 {
		h.log.append("t", 0, 10, false)
	}
	a, b := shareMemberID(1), shareMemberID(2)
	h.join("g", a)
	h.join("g", b)
	total := 0
	for _, r := range acquired(h.fetch("g", a, 0, 1000))[0] {
		var f, l, d int
		fmt.Sscanf(r, "%d-%d@%d", &f, &l, &d)
		total += l - f + 1
	}
	assert.Equal(t, 100, total)
	assert.Empty(t, acquired(h.fetch("g", b, 0, 1000))[0], "the window is full")
	r := h.fetch("g", a, 1, 1000, shareAck{0, 0, 49, []int8{1}})
	assert.Equal(t, []string{"100-149@1"}, acquired(r)[0], "accepting 50 makes room for 50")
}

// TestShareFenceReleases: a member fenced by its session timeout loses its
// share sessions (its fetch gets SHARE_SESSION_NOT_FOUND, and a new
// session UNKNOWN_MEMBER_ID until it joins again) and its records.
func TestShareFenceReleases(t *testing.T) {
	h := newShareHarness(t)
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	h.log.append("t", 0, 10, false)
	a, b := shareMemberID(1), shareMemberID(2)
	h.join("g", a)
	h.join("g", b)
	require.Equal(t, []string{"0-9@1"}, acquired(h.fetch("g", a, 0, 10))[0])
	h.clk.Advance(DefaultShareSessionTimeout - time.Second)
	h.heartbeat("g", b, 2)
	h.clk.Advance(time.Second) // a is fenced
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch("g", a, 1, 10).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.fetch("g", a, 0, 10).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, h.heartbeat("g", a, 2).ErrorCode)
	assert.Equal(t, []string{"0-9@2"}, acquired(h.fetch("g", b, 0, 10))[0], "a's records were released to b")
}

// TestShareGroupOffsetsAdmin: AlterShareGroupOffsets sets the start offset
// of an empty group's partitions (creating the group) and refuses a group
// with members; DescribeShareGroupOffsets reads it back with the lag;
// DeleteShareGroupOffsets forgets it.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	h := newShareHarness(t)
	for range 2 {
		h.log.append("t", 0, 10, false)
	}
	alter := &kmsg.AlterShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.AlterShareGroupOffsetsRequestTopic{
		{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 8}, {Partition: 7, StartOffset: 1}}},
		{Topic: "missing", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}},
	}}
	resp := h.c.AlterShareGroupOffsets(NoCaller, alter)
	require.Zero(t, resp.ErrorCode)
	assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[1].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[1].Partitions[0].ErrorCode)

	desc := h.c.DescribeShareGroupOffsets(&kmsg.DescribeShareGroupOffsetsRequest{Version: 1,
		Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}, {GroupID: "nope"}}}, h.log)
	require.Zero(t, desc.Groups[0].ErrorCode)
	require.Len(t, desc.Groups[0].Topics, 1)
	p := desc.Groups[0].Topics[0].Partitions[0]
	assert.Equal(t, int64(8), p.StartOffset)
	assert.Equal(t, int64(12), p.Lag)
	assert.Equal(t, kerr.GroupIDNotFound.Code, desc.Groups[1].ErrorCode)

	a := shareMemberID(1)
	h.join("g", a)
	assert.Equal(t, []string{"8-19@1"}, acquired(h.fetch("g", a, 0, 100))[0], "the fetch starts at the altered offset")
	assert.Equal(t, kerr.NonEmptyGroup.Code, h.c.AlterShareGroupOffsets(NoCaller, alter).ErrorCode)
	del := &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}}
	assert.Equal(t, kerr.NonEmptyGroup.Code, h.c.DeleteShareGroupOffsets(del).ErrorCode)
	h.heartbeat("g", a, -1)
	dr := h.c.DeleteShareGroupOffsets(del)
	require.Zero(t, dr.ErrorCode)
	assert.Zero(t, dr.Topics[0].ErrorCode)
	gi, _ := h.c.Group("g")
	assert.Empty(t, gi.SharePartitions)

	// DeleteGroups deletes an empty share group.
	dg := h.c.DeleteGroups(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}})
	assert.Zero(t, dg.Groups[0].ErrorCode)
	_, ok := h.c.Group("g")
	assert.False(t, ok)
}

// TestShareFetchNotLeader: a session partition led by another broker is
// answered NOT_LEADER_OR_FOLLOWER with its leader, the others served.
func TestShareFetchNotLeader(t *testing.T) {
	h := newShareHarness(t)
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	h.log.append("t", 0, 3, false)
	h.log.append("t", 1, 3, false)
	h.log.notHere[tpKey("t", 1)] = true
	a := shareMemberID(1)
	h.join("g", a)
	r := h.fetch("g", a, 0, 100)
	assert.Equal(t, map[int32][]string{0: {"0-2@1"}}, acquired(r))
	for _, p := range r.Topics[0].Partitions {
		if p.Partition == 1 {
			assert.Equal(t, kerr.NotLeaderForPartition.Code, p.ErrorCode)
			assert.Equal(t, int32(2), p.CurrentLeader.LeaderID)
		}
	}
}

// TestShareControlBatchesAreNoRecords: control batches and gaps are not
// acquired and do not count against the record locks.
func TestShareControlBatchesAreNoRecords(t *testing.T) {
	h := newShareHarness(t)
	h.setConfig("g", ShareAutoOffsetReset, "earliest")
	h.log.append("t", 0, 3, false)
	h.log.append("t", 0, 1, true)
	h.log.append("t", 0, 3, false)
	a := shareMemberID(1)
	h.join("g", a)
	assert.Equal(t, []string{"0-2@1", "4-6@1"}, acquired(h.fetch("g", a, 0, 100))[0])
	assert.Equal(t, int64(6), h.partition("g", 0).InFlight)
	r := h.fetch("g", a, 1, 100, shareAck{0, 0, 6, []int8{1, 1, 1, 0, 1, 1, 1}})
	assert.Empty(t, ackCodes(r))
	assert.Equal(t, int64(7), h.partition("g", 0).StartOffset)
}

// TestGroupConfigs: share group configs are validated as Kafka 4.2 does.
func TestGroupConfigs(t *testing.T) {
	h := newShareHarness(t)
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{ShareAutoOffsetReset, "earliest", true},
		{ShareAutoOffsetReset, "by_duration:PT1H30M", true},
		{ShareAutoOffsetReset, "by_duration:P1DT2.5S", true},
		{ShareAutoOffsetReset, "by_duration:P", false},
		{ShareAutoOffsetReset, "none", false},
		{ShareIsolationLevel, "read_committed", true},
		{ShareIsolationLevel, "serializable", false},
		{ShareRecordLockDuration, "15000", true},
		{ShareRecordLockDuration, "14999", false},
		{ShareRecordLockDuration, "abc", false},
		{ShareDeliveryCountLimit, "10", true},
		{ShareDeliveryCountLimit, "11", false},
		{SharePartitionMaxLocks, "99", false},
		{ShareSessionTimeoutMs, "45000", true},
		{"consumer.session.timeout.ms", "45000", false},
		{"no.such.config", "1", false},
	} {
		code, msg := h.c.SetGroupConfigs("g", map[string]string{tc.name: tc.value}, true)
		if tc.ok {
			assert.Zero(t, code, "%s=%s: %s", tc.name, tc.value, msg)
		} else {
			assert.Equal(t, kerr.InvalidConfig.Code, code, "%s=%s", tc.name, tc.value)
		}
	}
	code, _ := h.c.SetGroupConfigs("g", map[string]string{ShareHeartbeatIntervalMs: "15000", ShareSessionTimeoutMs: "15000"}, false)
	assert.Equal(t, kerr.InvalidConfig.Code, code, "heartbeat interval below session timeout")
	require.Zero(t, h.setConfig("g", ShareRecordLockDuration, "20000"))
	entries := h.c.DescribeGroupConfigs("g", nil)
	require.Len(t, entries, len(GroupConfigNames()))
	for _, e := range entries {
		switch e.Name {
		case ShareRecordLockDuration:
			assert.Equal(t, GroupConfigEntry{ShareRecordLockDuration, "20000", true}, e)
		case ShareAutoOffsetReset:
			assert.Equal(t, GroupConfigEntry{ShareAutoOffsetReset, "latest", false}, e)
		}
	}
}

// TestShareBounds: what a client can make the share coordinator hold is
// bounded: share sessions per broker (group.share.max.share.sessions), the
// partitions of one session and of all together, the groups with configs.
func TestShareBounds(t *testing.T) {
	h := newShareHarness(t, func(c *Config) { c.Share.MaxSessions = 2 })
	for i := range 3 {
		h.join("g", shareMemberID(i))
	}
	require.Zero(t, h.fetch("g", shareMemberID(0), 0, 1).ErrorCode)
	require.Zero(t, h.fetch("g", shareMemberID(1), 0, 1).ErrorCode)
	assert.Equal(t, kerr.ShareSessionLimitReached.Code, h.fetch("g", shareMemberID(2), 0, 1).ErrorCode)
	// A member's new session on the same broker replaces its old one.
	require.Zero(t, h.fetch("g", shareMemberID(1), 0, 1).ErrorCode)
	// Closing one makes room.
	require.Zero(t, h.acknowledge("g", shareMemberID(0), -1, 1).ErrorCode)
	require.Zero(t, h.fetch("g", shareMemberID(2), 0, 1).ErrorCode)

	// One session names at most MaxShareSessionPartitions partitions.
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(1)
	g, m := "g", shareMemberID(2)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, 1
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = [16]byte{9}
	for p := range int32(MaxShareSessionPartitions + 1) {
		rt.Partitions = append(rt.Partitions, kmsg.ShareFetchRequestTopicPartition{Partition: p})
	}
	req.Topics = append(req.Topics, rt)
	resp, _ := h.c.ShareFetch(context.Background(), 0, req, h.log)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.ErrorCode)
	assert.Equal(t, 4, h.c.shareSessionParts, "two sessions of two partitions: the refused request added none")

	// Groups with configs of their own: at most MaxGroupConfigs.
	for i := range MaxGroupConfigs - 1 {
		require.Zero(t, h.setConfig(fmt.Sprintf("cfg-%d", i), ShareAutoOffsetReset, "earliest"))
	}
	assert.Zero(t, h.setConfig("g", ShareAutoOffsetReset, "earliest"), "the last room")
	assert.Equal(t, kerr.InvalidConfig.Code, h.setConfig("one-more", ShareAutoOffsetReset, "earliest"))
	code, _ := h.c.SetGroupConfigs("cfg-0", nil, false) // deleting its last config forgets the group's
	require.Zero(t, code)
	assert.Zero(t, h.setConfig("one-more", ShareAutoOffsetReset, "earliest"))
}

// TestShareStateFollowsRecordsInFlight: a share partition's memory is in
// proportion to the records in flight, not to their offsets or to the
// members: records a billion offsets apart cost one run each, and a run
// of accepted records at the start costs nothing once the start offset
// passes it.
func TestShareStateFollowsRecordsInFlight(t *testing.T) {
	sp := &sharePartition{}
	lim := shareLimits{lock: time.Minute, delivery: 5, locks: 2000}
	now := time.Unix(1_700_000_000, 0)
	var batches []ShareBatch
	for i := range int64(100) {
		batches = append(batches, ShareBatch{First: i << 30, Last: i<<30 + 9})
	}
	members := []string{"a", "b", "c", "d"}
	for i, m := range members {
		_, n, _, _ := sp.acquire(m, batches[i*25:(i+1)*25], 1000, now, lim)
		require.Equal(t, 250, n)
	}
	assert.Len(t, sp.runs, 100, "one run per batch, whatever the offsets between them")
	assert.Equal(t, int64(1000), sp.records)
	// Every member accepts every other record: runs of one record.
	for i, m := range members {
		var acks []ackBatch
		for _, b := range batches[i*25 : (i+1)*25] {
			types := make([]int8, 10)
			for j := range types {
				types[j] = int8(1 + j%2) // accept, release
			}
			acks = append(acks, ackBatch{b.First, b.Last, types})
		}
		code, _, _ := sp.acknowledge(m, acks, now, lim)
		require.Zero(t, code)
	}
	assert.LessOrEqual(t, len(sp.runs), 1000)
	// Releases made them available: the members accept them in turn.
	for _, b := range batches {
		got, n, _, _ := sp.acquire("a", []ShareBatch{b}, 1000, now, lim)
		require.Equal(t, 5, n)
		var acks []ackBatch
		for _, r := range got {
			acks = append(acks, ackBatch{r.FirstOffset, r.LastOffset, []int8{1}})
		}
		code, _, _ := sp.acknowledge("a", acks, now, lim)
		require.Zero(t, code)
	}
	assert.Empty(t, sp.runs, "every record done: nothing in flight is kept")
	assert.Equal(t, batches[len(batches)-1].Last+1, sp.start)
}
