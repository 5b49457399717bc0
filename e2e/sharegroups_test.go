package e2e_test

// Share groups (KIP-932, "queues for Kafka") end to end through kgo's share
// consumer (kgo.ShareGroup) in the kafka profile: every record delivered
// at least once among members sharing partitions, released records
// redelivered with their delivery count, rejected ones never again,
// acquisition locks that end on the broker's clock, and bad input on one
// connection answered with Kafka's errors while other groups go on.

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
)

// shareConsumer returns a kgo share consumer of topics in group.
func shareConsumer(t *testing.T, addr, group string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// setGroupConfig sets a group config (share.auto.offset.reset, ...) with
// IncrementalAlterConfigs on the GROUP resource, as kafka-configs.sh
// --entity-type groups does.
func setGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode))
}

// shareGroupOf returns group, failing unless it is a share group.
func shareGroupOf(t *testing.T, b *broker.Broker, group string) coordinator.GroupInfo {
	t.Helper()
	g, ok := b.Group(group)
	require.True(t, ok, "group %s exists", group)
	require.Equal(t, "share", g.Type)
	return g
}

// allDone reports whether every partition of topic with share state in
// group has delivered every record below end.
func allDone(b *broker.Broker, group, topic string, partitions int32, end int64) bool {
	g, ok := b.Group(group)
	if !ok {
		return false
	}
	done := int32(0)
	for _, sp := range g.SharePartitions {
		if sp.Topic == topic && sp.Done(end-1) {
			done++
		}
	}
	return done == partitions
}

// TestShareGroupDeliversEveryRecord: three kgo share consumers on four
// partitions (so members share partitions) read 400 records while they
// arrive; every record is delivered, and acknowledged, the share start
// offsets reaching the end; the group is a share group of three members.
func TestShareGroupDeliversEveryRecord(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("jobs", 4))
	b := k.Broker()
	admin := k.Client()
	setGroupConfig(t, admin, "workers", coordinator.ShareAutoOffsetReset, "earliest")

	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		cl := shareConsumer(t, k.Addr(), "workers", kgo.ConsumeTopics("jobs"))
		wg.Go(func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				for _, r := range fs.Records() {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				}
			}
		})
	}
	for i := range 400 {
		k.Produce("jobs", int32(i%4), strconv.Itoa(i))
	}
	fixtures.WaitFor(t, "every record acknowledged", func() bool { return allDone(b, "workers", "jobs", 4, 100) })
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range 400 {
		assert.GreaterOrEqual(t, seen[strconv.Itoa(i)], 1, "record %d delivered", i)
	}
	g := shareGroupOf(t, b, "workers")
	assert.Equal(t, "Stable", g.State)
	assert.Len(t, g.Members, 3)
	for _, sp := range g.SharePartitions {
		assert.Equal(t, int64(100), sp.StartOffset)
		assert.Empty(t, sp.Acquired)
	}
}

// TestShareGroupReleaseAndReject: a record released (AckRelease) comes back,
// to any member, with delivery count 2; a rejected one (AckReject) is
// archived and never delivered again.
func TestShareGroupReleaseAndReject(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("tasks", 1))
	b := k.Broker()
	setGroupConfig(t, k.Client(), "g", coordinator.ShareAutoOffsetReset, "earliest")
	k.Produce("tasks", 0, "release-me", "reject-me", "accept-me")

	cl := shareConsumer(t, k.Addr(), "g", kgo.ConsumeTopics("tasks"))
	got := pollN(t, cl, 3)
	for _, r := range got {
		switch string(r.Value) {
		case "release-me":
			r.Ack(kgo.AckRelease)
		case "reject-me":
			r.Ack(kgo.AckReject)
		default:
			r.Ack(kgo.AckAccept)
		}
	}
	again := pollN(t, cl, 1)
	require.Len(t, again, 1)
	assert.Equal(t, "release-me", string(again[0].Value))
	assert.Equal(t, int32(2), again[0].DeliveryCount())
	again[0].Ack(kgo.AckAccept)
	require.NoError(t, cl.FlushAcks(ctxT(t)))
	fixtures.WaitFor(t, "every record done", func() bool { return allDone(b, "g", "tasks", 1, 3) })
	sp := shareGroupOf(t, b, "g").SharePartitions[0]
	assert.Equal(t, int64(1), sp.Archived, "the rejected record")
	assert.Equal(t, int64(2), sp.Acknowledged)
}

// TestShareGroupLockEndsOnTheClock: a member that stops polling holds its
// records until share.record.lock.duration.ms (30 s) passes on the
// broker's clock; advancing the manual clock past it hands them to another
// member, delivery count 2. The at-least-once queue test a test author
// writes: no sleep, the clock decides.
func TestShareGroupLockEndsOnTheClock(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("q", 1), fixtures.ManualClock(time.Unix(1_750_000_000, 0)))
	b := k.Broker()
	setGroupConfig(t, k.Client(), "g", coordinator.ShareAutoOffsetReset, "earliest")
	k.Produce("q", 0, "a", "b", "c")

	// One fetch per poll (no prefetch), so that a member that stops
	// polling stops fetching: it hangs holding what it has.
	stuck := shareConsumer(t, k.Addr(), "g", kgo.ConsumeTopics("q"), kgo.ShareMaxRecordsStrict())
	held := pollN(t, stuck, 3) // and never acknowledged
	require.Len(t, held, 3)
	sp := shareGroupOf(t, b, "g").SharePartitions[0]
	require.Len(t, sp.Acquired, 1)
	assert.Equal(t, k.Clock().Now().Add(coordinator.DefaultShareRecordLockDuration), sp.Acquired[0].LockDeadline)

	other := shareConsumer(t, k.Addr(), "g", kgo.ConsumeTopics("q"), kgo.FetchMaxWait(100*time.Millisecond))
	fixtures.WaitFor(t, "the second member joined", func() bool { return len(shareGroupOf(t, b, "g").Members) == 2 })
	k.Advance(coordinator.DefaultShareRecordLockDuration)
	redelivered := pollN(t, other, 3)
	for _, r := range redelivered {
		assert.Equal(t, int32(2), r.DeliveryCount(), "record %s", r.Value)
		r.Ack(kgo.AckAccept)
	}
	require.NoError(t, other.FlushAcks(ctxT(t)))
	fixtures.WaitFor(t, "the queue drained", func() bool { return allDone(b, "g", "q", 1, 3) })
}

// memberUUID makes a member id as Kafka's clients do: a random UUID in
// base64, 22 characters.
func memberUUID(n byte) string {
	var b [16]byte
	b[0] = n
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TestShareGroupBadInput: every malformed or misplaced share group request
// on one connection gets Kafka's error, the connection stays usable, and a
// share group of kgo consumers on another topic delivers all its records
// meanwhile.
func TestShareGroupBadInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("bad", 1), fixtures.Topic("good", 1))
	b := k.Broker()
	admin := k.Client()
	setGroupConfig(t, admin, "raw", coordinator.ShareAutoOffsetReset, "earliest")
	setGroupConfig(t, admin, "others", coordinator.ShareAutoOffsetReset, "earliest")
	k.Produce("bad", 0, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	for i := range 50 {
		k.Produce("good", 0, strconv.Itoa(i))
	}
	// Other groups: a classic one and a kgo share group, reading meanwhile.
	classic := groupConsumer(t, k.Addr(), "classic-g", "bad")
	pollN(t, classic, 10)
	require.NoError(t, classic.CommitUncommittedOffsets(ctxT(t)))
	others := shareConsumer(t, k.Addr(), "others", kgo.ConsumeTopics("good"))
	othersDone := make(chan int)
	go func() {
		n := 0
		ctx := ctxT(t)
		for !allDone(b, "others", "good", 1, 50) && ctx.Err() == nil {
			// A poll returns once records come; the last one's acks go
			// out with the next poll, which then has none to wait for.
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := others.PollFetches(pctx)
			cancel()
			n += len(fs.Records())
		}
		othersDone <- n
	}()

	conn := dialRaw(t, k.Addr())
	corr := int32(0)
	send := func(version int16, req kmsg.Request, resp kmsg.Response) {
		t.Helper()
		corr++
		roundTrip(t, conn, version, req, resp, corr)
	}
	info, ok := b.Topic("bad")
	require.True(t, ok)
	topicID := info.ID
	heartbeat := func(group, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"bad"}
		}
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		send(1, req, resp)
		return resp
	}
	type ack struct {
		first, last int64
		types       []int8
	}
	fetch := func(member string, epoch int32, acks ...ack) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		g := "raw"
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &member, epoch
		req.MaxRecords, req.MaxBytes, req.BatchSize = 5, 1<<20, 5
		req.ShareAcquireMode = 1 // record limit: exactly 5
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		for _, a := range acks {
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrShareFetchResponse()
		send(2, req, resp)
		return resp
	}
	acknowledge := func(member string, epoch int32, acks ...ack) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		g := "raw"
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &member, epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		for _, a := range acks {
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		send(2, req, resp)
		return resp
	}
	acquiredOf := func(resp *kmsg.ShareFetchResponse) []string {
		var out []string
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				for _, r := range p.AcquiredRecords {
					out = append(out, fmt.Sprintf("%d-%d", r.FirstOffset, r.LastOffset))
				}
			}
		}
		return out
	}
	ackCode := func(resp *kmsg.ShareFetchResponse) int16 {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.AcknowledgeErrorCode != 0 {
					return p.AcknowledgeErrorCode
				}
			}
		}
		return 0
	}

	m1, m2 := memberUUID(1), memberUUID(2)
	require.Zero(t, heartbeat("raw", m1, 0).ErrorCode)
	require.Zero(t, heartbeat("raw", m2, 0).ErrorCode)
	require.Equal(t, []string{"0-4"}, acquiredOf(fetch(m1, 0)))
	require.Equal(t, []string{"5-9"}, acquiredOf(fetch(m2, 0)))
	epoch1, epoch2 := int32(1), int32(1)

	// Acknowledgements: each refused for the partition, the session moves on.
	for _, c := range []struct {
		name string
		acks []ack
		want *kerr.Error
	}{
		{"a record another member holds", []ack{{5, 6, []int8{1}}}, kerr.InvalidRecordState},
		{"a record it never acquired", []ack{{12, 12, []int8{1}}}, kerr.InvalidRecordState},
		{"overlapping ranges", []ack{{0, 2, []int8{1}}, {2, 3, []int8{1}}}, kerr.InvalidRequest},
		{"inverted range", []ack{{3, 1, []int8{1}}}, kerr.InvalidRequest},
		{"unknown ack type", []ack{{0, 1, []int8{7}}}, kerr.InvalidRequest},
	} {
		assert.Equal(t, c.want.Code, ackCode(fetch(m1, epoch1, c.acks...)), "ShareFetch, %s", c.name)
		epoch1++
		resp := acknowledge(m1, epoch1, c.acks...)
		require.Zero(t, resp.ErrorCode)
		assert.Equal(t, c.want.Code, resp.Topics[0].Partitions[0].ErrorCode, "ShareAcknowledge, %s", c.name)
		epoch1++
	}
	// A share session epoch out of order.
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, fetch(m1, epoch1+3).ErrorCode)
	assert.Equal(t, kerr.InvalidShareSessionEpoch.Code, acknowledge(m1, epoch1-1).ErrorCode)
	// Member ids of the wrong shape, in every share API.
	for _, bad := range []string{"", string(make([]byte, 37))} {
		assert.Equal(t, kerr.InvalidRequest.Code, heartbeat("raw", bad, 0).ErrorCode)
		assert.Equal(t, kerr.InvalidRequest.Code, fetch(bad, 0).ErrorCode)
		assert.Equal(t, kerr.InvalidRequest.Code, acknowledge(bad, 1).ErrorCode)
	}
	// Heartbeats for a classic group's id.
	assert.Equal(t, kerr.GroupIDNotFound.Code, heartbeat("classic-g", memberUUID(3), 0).ErrorCode)
	// AlterShareGroupOffsets on a group with members.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "raw"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "bad", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
	alterResp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	send(0, alter, alterResp)
	assert.Equal(t, kerr.NonEmptyGroup.Code, alterResp.ErrorCode)

	// The connection still serves: m1 acknowledges its records.
	resp := acknowledge(m1, epoch1, ack{0, 4, []int8{1}})
	require.Zero(t, resp.ErrorCode)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	// A member that left (as a fenced one) fetches no more: its session
	// ended with its membership, and a new session needs a member.
	require.Zero(t, heartbeat("raw", m2, -1).ErrorCode)
	assert.Equal(t, kerr.ShareSessionNotFound.Code, fetch(m2, epoch2).ErrorCode)
	assert.Equal(t, kerr.UnknownMemberID.Code, fetch(m2, 0).ErrorCode)
	// m2's records were released to m1.
	epoch1++
	r := fetch(m1, epoch1)
	require.Zero(t, r.ErrorCode)
	assert.Equal(t, []string{"5-9"}, acquiredOf(r))

	// Nothing was lost for the other groups.
	assert.GreaterOrEqual(t, <-othersDone, 50)

	off, ok := b.CommittedOffset("classic-g", "bad", 0)
	assert.True(t, ok)
	assert.Equal(t, int64(10), off)
}

// TestShareGroupProfiles: the VAST profile does not advertise share groups
// (rule NoShareGroups): kgo's share consumer gets "broker is too old" from
// every poll, and a group config request is refused with the rule; the
// audit profile runs the same consumer unchanged, as Kafka 4.2 would, and
// reports every share group request as a finding of NoShareGroups with
// advice in kgo's terms.
func TestShareGroupProfiles(t *testing.T) {
	t.Parallel()
	t.Run("vast", func(t *testing.T) {
		t.Parallel()
		k := fixtures.Start(t, fixtures.Topic("orders", 1))
		k.Produce("orders", 0, "a")
		versions := apiVersions(t, k.Client())
		for _, key := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge,
			kmsg.DescribeShareGroupOffsets, kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets} {
			_, advertised := versions[int16(key)]
			assert.False(t, advertised, "%s is not advertised", key)
		}
		cl := shareConsumer(t, k.Addr(), "billing", kgo.ConsumeTopics("orders"))
		err := cl.PollFetches(ctxT(t)).Err0()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "broker is too old")

		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "billing"
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: coordinator.ShareAutoOffsetReset, Value: kmsg.StringPtr("earliest")}}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxT(t), k.Client())
		require.NoError(t, err)
		assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
		require.NotNil(t, resp.Resources[0].ErrorMessage)
		assert.Contains(t, *resp.Resources[0].ErrorMessage, "rule NoShareGroups")
		assert.True(t, k.AssertRefused("NoShareGroups"))

		// A raw ShareFetch, which no client sends to a broker that does
		// not advertise it, closes the connection with the rule logged.
		conn := dialRaw(t, k.Addr())
		_, err = conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, &kmsg.ShareFetchRequest{Version: 1}, 1))
		require.NoError(t, err)
		assertClosed(t, conn)
	})
	t.Run("audit", func(t *testing.T) {
		t.Parallel()
		k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("orders", 1))
		b := k.Broker()
		setGroupConfig(t, k.Client(), "billing", coordinator.ShareAutoOffsetReset, "earliest")
		k.Produce("orders", 0, "a", "b")
		cl := shareConsumer(t, k.Addr(), "billing", kgo.ConsumeTopics("orders"))
		for _, r := range pollN(t, cl, 2) {
			r.Ack(kgo.AckAccept)
		}
		require.NoError(t, cl.FlushAcks(ctxT(t)))
		fixtures.WaitFor(t, "both records acknowledged", func() bool { return allDone(b, "billing", "orders", 1, 2) })
		apis := map[string]bool{}
		for _, f := range k.Findings() {
			if f.Rule != "NoShareGroups" {
				continue
			}
			apis[f.API] = true
			assert.Equal(t, "billing", f.Group)
			assert.Equal(t, "refused", f.Kind)
			if f.ClientSoftware == "kgo" {
				assert.Contains(t, f.Advice, "kgo.ConsumerGroup")
			}
		}
		for _, api := range []string{"ShareGroupHeartbeat", "ShareFetch", "IncrementalAlterConfigs"} {
			assert.True(t, apis[api], "a finding for %s: %v", api, apis)
		}
	})
}

// TestShareGroupSeveralBrokers: with three brokers each share partition is
// served by its leader (the others answer NOT_LEADER_OR_FOLLOWER and kgo
// moves), a ShareFetch fault (POST /faults) is retried, and a broker taken
// down moves its partitions' leaders: every record is still delivered and
// acknowledged.
func TestShareGroupSeveralBrokers(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Brokers(3), fixtures.Topic("jobs", 6),
		fixtures.BrokerOptions(broker.WithElectionDelay(0)))
	b := k.Broker()
	setGroupConfig(t, k.Client(), "workers", coordinator.ShareAutoOffsetReset, "earliest")
	var mu sync.Mutex
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		cl := shareConsumer(t, k.Addr(), "workers", kgo.ConsumeTopics("jobs"))
		wg.Go(func() {
			for ctx.Err() == nil {
				for _, r := range cl.PollFetches(ctx).Records() {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
				}
			}
		})
	}
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			k.Produce("jobs", int32(i%6), strconv.Itoa(i))
		}
	}
	produce(0, 60)
	fixtures.WaitFor(t, "the first records delivered", func() bool { return allDone(b, "workers", "jobs", 6, 10) })
	for id := range int32(3) {
		served := false
		for _, r := range b.Requests() {
			served = served || r.API == kmsg.ShareFetch && r.Broker == id
		}
		assert.True(t, served, "broker %d served ShareFetch for the partitions it leads", id)
	}

	// Faults on ShareFetch, as on any API.
	k.FailNext(kmsg.ShareFetch, 3, kerr.NotLeaderForPartition)
	produce(60, 120)
	fixtures.WaitFor(t, "records delivered through the faults", func() bool { return allDone(b, "workers", "jobs", 6, 20) })

	// A broker down: its partitions move; their share state with them.
	require.NoError(t, b.BrokerDown(2))
	fixtures.WaitFor(t, "broker 2's partitions have another leader", func() bool {
		for p := range int32(6) {
			if b.LeaderOf("jobs", p) == 2 {
				return false
			}
		}
		return true
	})
	produce(120, 180)
	fixtures.WaitFor(t, "every record acknowledged", func() bool { return allDone(b, "workers", "jobs", 6, 30) })
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range 180 {
		assert.True(t, seen[strconv.Itoa(i)], "record %d delivered", i)
	}
}
