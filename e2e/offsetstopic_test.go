package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// offsetsTopicEntry is one record of __consumer_offsets, decoded as a lag
// monitor decodes it.
type offsetsTopicEntry struct {
	partition int32
	commit    *kmsg.OffsetCommitKey
	offset    *kmsg.OffsetCommitValue // nil: tombstone
	group     *kmsg.GroupMetadataKey
	metadata  *kmsg.GroupMetadataValue // nil: tombstone
}

// readOffsetsTopic reads __consumer_offsets from the start with a kgo
// consumer until it holds want records, and decodes each with kmsg.
func readOffsetsTopic(t *testing.T, k *fixtures.Kafka, want int) []offsetsTopicEntry {
	t.Helper()
	cl := k.Client(kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	var out []offsetsTopicEntry
	ctx := ctxT(t)
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(out), want)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			e := offsetsTopicEntry{partition: r.Partition}
			require.GreaterOrEqual(t, len(r.Key), 2)
			switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
			case 0, 1:
				e.commit = new(kmsg.OffsetCommitKey)
				require.NoError(t, e.commit.ReadFrom(r.Key))
				if r.Value != nil {
					e.offset = new(kmsg.OffsetCommitValue)
					require.NoError(t, e.offset.ReadFrom(r.Value))
				}
			case 2:
				e.group = new(kmsg.GroupMetadataKey)
				require.NoError(t, e.group.ReadFrom(r.Key))
				if r.Value != nil {
					e.metadata = new(kmsg.GroupMetadataValue)
					require.NoError(t, e.metadata.ReadFrom(r.Value))
				}
			default:
				t.Fatalf("key version %d", version)
			}
			out = append(out, e)
		})
	}
	return out
}

// TestOffsetsTopicRecords: in the kafka profile every offset commit and
// group change is also written to __consumer_offsets, in Kafka's formats
// and in the group's partition, so that a lag monitor reading the topic
// sees the group, its members and its commits.
func TestOffsetsTopicRecords(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
	k.Produce("orders", 0, "a", "b", "c")
	cons := k.Client(kgo.ClientID("lag-app"), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx := ctxT(t)
	for n := 0; n < 3; {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		n += fs.NumRecords()
	}
	require.NoError(t, cons.CommitUncommittedOffsets(ctx))
	k.WaitCommitted("billing", "orders", 0, 3)

	entries := readOffsetsTopic(t, k, 2)
	part := broker.OffsetsTopicPartition("billing")
	var sawGroup, sawCommit bool
	for _, e := range entries {
		assert.Equal(t, part, e.partition, "every record of a group is in its partition")
		switch {
		case e.group != nil && e.metadata != nil && e.group.Group == "billing":
			sawGroup = true
			assert.Equal(t, "consumer", e.metadata.ProtocolType)
			require.Len(t, e.metadata.Members, 1)
			assert.Equal(t, "lag-app", e.metadata.Members[0].ClientID)
			assert.NotEmpty(t, e.metadata.Members[0].Assignment)
		case e.commit != nil && e.offset != nil:
			sawCommit = true
			assert.Equal(t, "billing", e.commit.Group)
			assert.Equal(t, "orders", e.commit.Topic)
			assert.Equal(t, int32(0), e.commit.Partition)
			assert.Equal(t, int64(3), e.offset.Offset)
			assert.Equal(t, int16(3), e.offset.Version, "Kafka 4's value version")
		}
	}
	assert.True(t, sawGroup, "group metadata record: %+v", entries)
	assert.True(t, sawCommit, "offset commit record: %+v", entries)

	// Leaving writes the Empty group; deleting it tombstones its offsets
	// and the group, as Kafka's coordinator does.
	cons.Close()
	k.WaitGroup("billing", "Empty", 0)
	_, err := k.Admin().DeleteGroup(ctxT(t), "billing")
	require.NoError(t, err)
	entries = readOffsetsTopic(t, k, len(entries)+3)
	last := entries[len(entries)-3:]
	assert.Empty(t, last[0].metadata.Members, "the Empty group")
	assert.Equal(t, "billing", last[1].commit.Group)
	assert.Nil(t, last[1].offset, "offset tombstone")
	assert.Equal(t, "billing", last[2].group.Group)
	assert.Nil(t, last[2].metadata, "group tombstone")

	// Committed offsets are still served from the coordinator.
	_, err = k.Admin().CommitOffsets(ctxT(t), "audit-tool", offsetsFor("orders", 0, 2))
	require.NoError(t, err)
	assert.Equal(t, int64(2), k.Committed("audit-tool", "orders", 0))
}

// TestOffsetsTopicBadInput: __consumer_offsets is read-only to clients as
// on Kafka, and nothing a group committed is lost by trying; the VAST
// profile files every request naming it under NoOffsetsTopic.
func TestOffsetsTopicBadInput(t *testing.T) {
	t.Parallel()
	t.Run("kafka", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
		_, err := k.Admin().CommitOffsets(ctxT(t), "g", offsetsFor("orders", 0, 1))
		require.NoError(t, err)
		before := readOffsetsTopic(t, k, 1)
		cl := k.Client(kgo.RecordRetries(0), kgo.DefaultProduceTopic("__consumer_offsets"))
		err = cl.ProduceSync(ctxT(t), &kgo.Record{Key: before[0].commit.AppendTo(nil), Value: []byte("x"),
			Partition: broker.OffsetsTopicPartition("g")}).FirstErr()
		assert.ErrorIs(t, err, kerr.InvalidTopicException)
		dr, err := k.Admin().DeleteRecords(ctxT(t), offsetsFor("__consumer_offsets", broker.OffsetsTopicPartition("g"), 1))
		require.NoError(t, err)
		assert.ErrorIs(t, dr.Error(), kerr.InvalidTopicException)
		created, err := k.Admin().CreateTopic(ctxT(t), 1, 1, nil, "__consumer_offsets")
		assert.ErrorIs(t, err, kerr.TopicAlreadyExists, "%v", created)
		assert.Equal(t, int64(1), k.Committed("g", "orders", 0))
		assert.Len(t, readOffsetsTopic(t, k, 1), 1, "nothing written by the client")
	})

	t.Run("vast", func(t *testing.T) {
		k := fixtures.Start(t, fixtures.Topic("orders", 1))
		md, err := k.Admin().Metadata(ctxT(t), "__consumer_offsets")
		require.NoError(t, err)
		assert.ErrorIs(t, md.Topics["__consumer_offsets"].Err, kerr.UnknownTopicOrPartition)
		created, err := k.Admin().CreateTopic(ctxT(t), 1, 1, nil, "__consumer_offsets")
		assert.ErrorIs(t, err, kerr.InvalidRequest, "%v", created)
		assert.Contains(t, created.ErrMessage, "NoOffsetsTopic")
		ends, err := k.Admin().ListEndOffsets(ctxT(t), "__consumer_offsets")
		require.NoError(t, err)
		assert.Error(t, ends.Error())
		refused := map[kmsg.Key]string{}
		for _, r := range k.Broker().Refusals() {
			refused[r.API] = r.Rule
		}
		assert.Equal(t, "NoOffsetsTopic", refused[kmsg.Metadata], "not NoAutoCreateTopics")
		assert.Equal(t, "NoOffsetsTopic", refused[kmsg.CreateTopics])
		assert.Equal(t, 0, len(k.Topics())-1, "only orders")
	})
}
