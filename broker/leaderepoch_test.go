package broker

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// electedHistory is a broker of 3 in the kafka profile whose partition
// orders-0 went through elections: 3 records under epoch 0 (broker 1
// leading), 2 under epoch 1 (broker 2, after 1 was fenced), 1 under
// epoch 2 (broker 1 again, by a preferred election).
func electedHistory(t *testing.T) (*Broker, *kgo.Client, context.Context) {
	t.Helper()
	b, err := New(WithBrokers(3), WithNodeID(1), WithProfile("kafka"), WithElectionDelay(0),
		WithTopics(TopicSpec{Name: "orders", Partitions: 3}))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.BrokerAddr(3)), kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(10*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	produce := func(n int) {
		for range n {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
		}
	}
	produce(3)
	require.NoError(t, b.BrokerDown(1))
	require.Equal(t, int32(2), b.LeaderOf("orders", 0))
	produce(2)
	require.NoError(t, b.BrokerUp(1))
	require.NoError(t, b.ElectPreferredLeader("orders", 0))
	require.Equal(t, state{1, 2, []int32{1, 2, 3}, []int32{1, 2, 3}}, stateOf(b, "orders", 0))
	produce(1)
	return b, cl, ctx
}

// TestStoredBatchesCarryTheirLeaderEpoch: a fetch returns each batch with
// the epoch of the leader that appended it, and the log keeps the history
// of epochs.
func TestStoredBatchesCarryTheirLeaderEpoch(t *testing.T) {
	t.Parallel()
	b, cl, ctx := electedHistory(t)
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "orders", b.topicID(b.data.get("orders"))
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, 2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	require.NoError(t, err)
	sp := resp.Topics[0].Partitions[0]
	require.Zero(t, sp.ErrorCode)
	var epochs []int32
	log.EachBatch(sp.RecordBatches, func(batch log.Batch) bool {
		epochs = append(epochs, batch.LeaderEpoch())
		return true
	})
	assert.Equal(t, []int32{0, 0, 0, 1, 1, 2}, epochs)
	part := b.data.get("orders").partition(0)
	assert.Equal(t, []log.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 3}, {Epoch: 2, StartOffset: 5}}, part.LeaderEpochs())
}

// offsetForLeaderEpoch asks broker at for the end offset of epoch in
// orders-0, knowing current as the leader epoch.
func offsetForLeaderEpoch(t *testing.T, ctx context.Context, cl *kgo.Client, at, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(at)))
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestOffsetForLeaderEpoch: the leader answers each epoch's end offset as
// Kafka does after elections; a future epoch gets -1 and -1 without an
// error; a stale or future CurrentLeaderEpoch gets FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH, at a follower too (the epoch is checked before the
// leadership); a follower asked with the current epoch answers
// NOT_LEADER_OR_FOLLOWER.
func TestOffsetForLeaderEpoch(t *testing.T) {
	t.Parallel()
	_, cl, ctx := electedHistory(t)
	type answer struct {
		code  int16
		epoch int32
		end   int64
	}
	for name, tc := range map[string]struct {
		at, current, epoch int32
		want               answer
	}{
		"epoch 0 ended where 1 began": {1, 2, 0, answer{0, 0, 3}},
		"epoch 1 ended where 2 began": {1, 2, 1, answer{0, 1, 5}},
		"the current epoch":           {1, 2, 2, answer{0, 2, 6}},
		"without a current epoch":     {1, -1, 1, answer{0, 1, 5}},
		"a future epoch":              {1, 2, 3, answer{0, -1, -1}},
		"no epoch":                    {1, 2, -1, answer{0, -1, -1}},
		"a stale current epoch":       {1, 1, 1, answer{kerr.FencedLeaderEpoch.Code, -1, -1}},
		"a future current epoch":      {1, 3, 1, answer{kerr.UnknownLeaderEpoch.Code, -1, -1}},
		"another negative":            {1, -2, 1, answer{kerr.FencedLeaderEpoch.Code, -1, -1}},
		"a follower, stale":           {2, 1, 1, answer{kerr.FencedLeaderEpoch.Code, -1, -1}},
		"a follower, future":          {3, 5, 1, answer{kerr.UnknownLeaderEpoch.Code, -1, -1}},
		"a follower, current":         {2, 2, 1, answer{kerr.NotLeaderForPartition.Code, -1, -1}},
	} {
		got := offsetForLeaderEpoch(t, ctx, cl, tc.at, tc.current, tc.epoch)
		assert.Equal(t, tc.want, answer{got.ErrorCode, got.LeaderEpoch, got.EndOffset}, name)
	}
}

// TestListOffsetsLeaderEpochs: ListOffsets answers the current leader
// epoch for the latest offset and, for any other, the epoch that wrote it,
// as Kafka does.
func TestListOffsetsLeaderEpochs(t *testing.T) {
	t.Parallel()
	_, cl, ctx := electedHistory(t)
	list := func(ts int64) (int64, int32) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, 2
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		require.NoError(t, err)
		sp := resp.Topics[0].Partitions[0]
		require.Zero(t, sp.ErrorCode)
		return sp.Offset, sp.LeaderEpoch
	}
	off, epoch := list(-1)
	assert.Equal(t, [2]int64{6, 2}, [2]int64{off, int64(epoch)}, "latest")
	off, epoch = list(-2)
	assert.Equal(t, [2]int64{0, 0}, [2]int64{off, int64(epoch)}, "earliest")
	off, epoch = list(-3)
	wrote := map[int64]int32{0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2}
	assert.Equal(t, wrote[off], epoch, "the newest record's (offset %d), the epoch that wrote it", off)
	off, epoch = list(time.Now().Add(time.Hour).UnixMilli())
	assert.Equal(t, [2]int64{-1, -1}, [2]int64{off, int64(epoch)}, "a timestamp after every record")
}

// TestFollowersCheckLeaderEpochsFirst: every API whose request carries a
// CurrentLeaderEpoch, found by reflection over kmsg's requests, is served
// with the epoch checked before anything about the partition's leader:
// a stale epoch gets FENCED_LEADER_EPOCH and a future one
// UNKNOWN_LEADER_EPOCH at the leader and at a follower alike, -1 skips the
// check, and the current one at a follower gets NOT_LEADER_OR_FOLLOWER. An
// API vastfake does not serve (the KRaft-internal ones) must stay out of
// the API table until it is covered here.
func TestFollowersCheckLeaderEpochsFirst(t *testing.T) {
	t.Parallel()
	b, cl, ctx := electedHistory(t)
	notServed := map[int16]bool{int16(kmsg.FetchSnapshot): true, int16(kmsg.UpdateRaftVoter): true}
	covered := 0
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		kreq := kmsg.RequestForKey(key)
		if kreq == nil || !carriesCurrentLeaderEpoch(reflect.TypeOf(kreq).Elem()) {
			continue
		}
		a := b.apiByKey[key]
		if notServed[key] {
			assert.Nil(t, a, "%s carries CurrentLeaderEpoch: cover it here before serving it", kmsg.NameForKey(key))
			continue
		}
		require.NotNil(t, a, "%s carries CurrentLeaderEpoch and is not served", kmsg.NameForKey(key))
		covered++
		for _, tc := range []struct {
			at, current int32
			want        int16
		}{
			{1, 1, kerr.FencedLeaderEpoch.Code},
			{1, 3, kerr.UnknownLeaderEpoch.Code},
			{2, 0, kerr.FencedLeaderEpoch.Code},
			{3, 7, kerr.UnknownLeaderEpoch.Code},
			{2, 2, kerr.NotLeaderForPartition.Code},
			{2, -1, kerr.NotLeaderForPartition.Code},
			{1, -1, 0},
			{1, 2, 0},
		} {
			req := epochRequest(t, b, key, a.max, tc.current)
			resp, err := cl.Broker(int(tc.at)).RetriableRequest(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, tc.want, partitionErrorCode(t, resp), "%s v%d at broker %d with current epoch %d",
				kmsg.NameForKey(key), a.max, tc.at, tc.current)
		}
	}
	assert.Equal(t, 3, covered, "Fetch, ListOffsets and OffsetForLeaderEpoch")
}

// carriesCurrentLeaderEpoch reports whether a kmsg request type has a
// CurrentLeaderEpoch field, at any depth.
func carriesCurrentLeaderEpoch(t reflect.Type) bool {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "CurrentLeaderEpoch" || carriesCurrentLeaderEpoch(f.Type) {
			return true
		}
	}
	return false
}

// epochRequest builds a request of API key at version naming partition 0
// of orders, by name and by ID, with current as its CurrentLeaderEpoch,
// and every other field at kmsg's default.
func epochRequest(t *testing.T, b *Broker, key, version int16, current int32) kmsg.Request {
	t.Helper()
	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	v := reflect.ValueOf(kreq).Elem()
	if d := reflect.ValueOf(kreq).MethodByName("Default"); d.IsValid() {
		d.Call(nil)
	}
	if f := v.FieldByName("ReplicaID"); f.IsValid() {
		f.SetInt(-1)
	}
	if f := v.FieldByName("MaxBytes"); f.IsValid() {
		f.SetInt(1 << 20)
	}
	topics := v.FieldByName("Topics")
	require.True(t, topics.IsValid(), "%s has no Topics", kmsg.NameForKey(key))
	topic := newElem(topics.Type().Elem())
	topic.FieldByName("Topic").SetString("orders")
	if f := topic.FieldByName("TopicID"); f.IsValid() {
		f.Set(reflect.ValueOf(b.topicID(b.data.get("orders"))))
	}
	parts := topic.FieldByName("Partitions")
	part := newElem(parts.Type().Elem())
	part.FieldByName("Partition").SetInt(0)
	part.FieldByName("CurrentLeaderEpoch").SetInt(int64(current))
	if f := part.FieldByName("PartitionMaxBytes"); f.IsValid() {
		f.SetInt(1 << 20)
	}
	if f := part.FieldByName("Timestamp"); f.IsValid() {
		f.SetInt(-1)
	}
	parts.Set(reflect.Append(parts, part))
	topics.Set(reflect.Append(topics, topic))
	return kreq
}

// partitionErrorCode returns the ErrorCode of the one partition a
// response answers.
func partitionErrorCode(t *testing.T, resp kmsg.Response) int16 {
	t.Helper()
	topics := reflect.ValueOf(resp).Elem().FieldByName("Topics")
	require.Equal(t, 1, topics.Len())
	parts := topics.Index(0).FieldByName("Partitions")
	require.Equal(t, 1, parts.Len())
	return int16(parts.Index(0).FieldByName("ErrorCode").Int())
}

// TestOffsetForLeaderEpochByProfile: VAST hides OffsetForLeaderEpoch
// (NoOffsetForLeaderEpoch); the audit profile serves it and records each
// request as a finding; the kafka profile serves it.
func TestOffsetForLeaderEpochByProfile(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"vast", "audit", "kafka"} {
		b, err := New(WithProfile(profile), WithTopics(TopicSpec{Name: "orders", Partitions: 1}))
		require.NoError(t, err)
		defer b.Close()
		advertised := false
		for _, k := range b.apiVersionsResponse(4).ApiKeys {
			if k.ApiKey == int16(kmsg.OffsetForLeaderEpoch) {
				advertised = true
				assert.Equal(t, [2]int16{2, 4}, [2]int16{k.MinVersion, k.MaxVersion}, profile)
			}
		}
		assert.Equal(t, profile != "vast", advertised, profile)
		if profile != "audit" {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		require.NoError(t, err)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got := offsetForLeaderEpoch(t, ctx, cl, b.BrokerIDs()[0], 0, 0)
		assert.Zero(t, got.ErrorCode)
		found := false
		for _, f := range b.Findings() {
			found = found || f.Rule == rules.NoOffsetForLeaderEpoch.String()
		}
		assert.True(t, found, "a finding of NoOffsetForLeaderEpoch")
	}
}
