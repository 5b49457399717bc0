package e2e_test

// Offset gaps and compaction, through franz-go: consumers, groups, lag and
// ListOffsets across gaps, compaction as Kafka's cleaner does it, and the
// keyless records a compacted topic refuses.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/log"
)

// consumeAll reads a partition from its start until it has read up to the
// end offset, and returns offset -> value ("<nil>" for a tombstone).
func readPartition(t *testing.T, k *fixtures.Kafka, topic string, opts ...kgo.Opt) map[int64]string {
	t.Helper()
	end := k.EndOffset(topic, 0)
	cl := k.Client(append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}, opts...)...)
	got := map[int64]string{}
	last := int64(-1)
	for last < end-1 {
		fs := cl.PollFetches(ctxT(t))
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if r.Value == nil {
				v = "<nil>"
			}
			got[r.Offset] = v
			last = r.Offset
		})
	}
	return got
}

func keyed(topic, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}
	if value == "<nil>" {
		r.Value = nil
	}
	return r
}

// produceEach produces each record in a batch of its own.
func produceEach(t *testing.T, k *fixtures.Kafka, recs ...*kgo.Record) {
	t.Helper()
	for _, r := range recs {
		k.ProduceRecords(r)
	}
}

func TestConsumersReadAcrossGaps(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("events", 1))
		k.Produce("events", 0, "e-0", "e-1")
		k.SkipOffsets("events", 0, 5)
		assert.Equal(t, int64(2), k.EndOffset("events", 0), "a gap shows once the next batch is in, as after compaction")

		group := k.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		var offsets []int64
		for len(offsets) < 2 {
			fs := group.PollFetches(ctxT(t))
			require.NoError(t, fs.Err0())
			fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
		}
		require.NoError(t, group.CommitUncommittedOffsets(ctxT(t)))
		k.WaitCommitted("g", "events", 0, 2)

		k.Produce("events", 0, "e-2", "e-3")
		assert.Equal(t, int64(9), k.EndOffset("events", 0))
		assert.Equal(t, int64(7), k.Lag("g", "events", 0), "lag is end minus committed, gap included, as Kafka reports it")
		ends, err := k.Admin().ListEndOffsets(ctxT(t), "events")
		require.NoError(t, err)
		end, _ := ends.Lookup("events", 0)
		assert.Equal(t, int64(9), end.Offset)

		for len(offsets) < 4 {
			fs := group.PollFetches(ctxT(t))
			require.NoError(t, fs.Err0())
			fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
		}
		assert.Equal(t, []int64{0, 1, 7, 8}, offsets)
		require.NoError(t, group.CommitUncommittedOffsets(ctxT(t)))
		k.WaitCommitted("g", "events", 0, 9)
		assert.Equal(t, int64(0), k.Lag("g", "events", 0))

		var recorded []int64
		for _, r := range k.Records("events", 0) {
			recorded = append(recorded, r.Offset)
		}
		assert.Equal(t, []int64{0, 1, 7, 8}, recorded)

		// A consumer positioned inside the gap reads on from the next record.
		inside := k.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"events": {0: kgo.NewOffset().At(4)}}))
		fs := inside.PollFetches(ctxT(t))
		require.NoError(t, fs.Err0())
		assert.Equal(t, int64(7), fs.Records()[0].Offset)
	})
}

func TestOffsetGapsConfiguredPerTopic(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1), fixtures.BrokerOptions(broker.WithOffsetGaps(broker.OffsetGap{Topic: "orders", Skip: 3})))
	for i := range 3 {
		k.Produce("orders", 0, fmt.Sprint("o-", i))
	}
	assert.Equal(t, map[int64]string{0: "o-0", 4: "o-1", 8: "o-2"}, readPartition(t, k, "orders"))

	_, err := broker.New(broker.WithOffsetGaps(broker.OffsetGap{Topic: "orders", Skip: 0}))
	assert.Error(t, err)
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("prices", 1, "cleanup.policy", "compact"))
		produceEach(t, k,
			keyed("prices", "apple", "1.00"), // 0
			keyed("prices", "pear", "2.00"),  // 1
			keyed("prices", "apple", "1.10"), // 2
			keyed("prices", "plum", "3.00"),  // 3
			keyed("prices", "pear", "<nil>"), // 4: a tombstone
			keyed("prices", "apple", "1.20"), // 5: the active tail
		)
		group := k.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("prices"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		fs := group.PollFetches(ctxT(t))
		require.NoError(t, fs.Err0())
		committed := make(chan error, 1)
		group.CommitOffsetsSync(ctxT(t), map[string]map[int32]kgo.EpochOffset{"prices": {0: {Epoch: -1, Offset: 1}}},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
				committed <- err
			})
		require.NoError(t, <-committed)
		k.WaitCommitted("g", "prices", 0, 1)
		group.Close()

		k.Compact("prices")
		assert.Equal(t, map[int64]string{2: "1.10", 3: "3.00", 4: "<nil>", 5: "1.20"}, readPartition(t, k, "prices"),
			"the newest record of each key stays, the tombstone for delete.retention.ms, the tail as it is")
		assert.Equal(t, int64(6), k.EndOffset("prices", 0))
		assert.Equal(t, int64(5), k.Lag("g", "prices", 0), "lag counts offsets, removed ones included, as on Kafka")

		again := k.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("prices"), kgo.DisableAutoCommit())
		var got []int64
		for len(got) < 4 {
			fs := again.PollFetches(ctxT(t))
			require.NoError(t, fs.Err0())
			fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
		}
		assert.Equal(t, []int64{2, 3, 4, 5}, got, "a group committed at a removed offset reads on from the next record")
		require.NoError(t, again.CommitUncommittedOffsets(ctxT(t)))
		k.WaitCommitted("g", "prices", 0, 6)
		assert.Equal(t, int64(0), k.Lag("g", "prices", 0))
	})
}

func TestCompactionOfCompressedBatches(t *testing.T) {
	t.Parallel()
	for id, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		want := int16(id + 1) // the attributes' codec id
		k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("c", 1, "cleanup.policy", "compact"))
		// Manual flushing makes each group of records one batch: ProduceSync
		// may send the first record of a group on its own.
		p := k.Client(kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("c"), kgo.ManualFlushing())
		for _, batch := range [][]string{{"a=1", "b=1", "a=2"}, {"b=2", "c=1"}, {"a=3"}} {
			var mu sync.Mutex
			var errs []error
			for _, kv := range batch {
				key, v, _ := strings.Cut(kv, "=")
				rec := &kgo.Record{Key: []byte(key), Value: []byte(strings.Repeat(v, 500))} // compressible: kgo compresses only what shrinks
				p.Produce(ctxT(t), rec, func(_ *kgo.Record, err error) {
					mu.Lock()
					defer mu.Unlock()
					errs = append(errs, err)
				})
			}
			require.NoError(t, p.Flush(ctxT(t)))
			mu.Lock()
			require.NoError(t, errors.Join(errs...))
			require.Len(t, errs, len(batch))
			mu.Unlock()
		}
		// kgo may still split a group into two batches; what matters is
		// that each is compressed.
		before := storedCodecs(t, k)
		require.GreaterOrEqual(t, len(before), 3)
		for _, c := range before {
			require.Equal(t, want, c, "kgo compressed every batch: %v", before)
		}
		k.Compact("c")
		got := readPartition(t, k, "c")
		for o, v := range got {
			got[o] = strings.TrimRight(v, v[:1]) + v[:1]
		}
		assert.Equal(t, map[int64]string{2: "2", 3: "2", 4: "1", 5: "3"}, got)
		// One fetch answers from the compacted batches' new buffer, the
		// rebuilt batch (a=2 alone) first.
		after := storedCodecs(t, k)
		assert.NotEmpty(t, after)
		for _, c := range after {
			assert.Equal(t, want, c, "the rebuilt batches keep codec %d, as Kafka's cleaner does: %v", want, after)
		}
	}
}

// storedCodecs returns the compression codec of each batch that one
// fetch from offset 0 of partition 0 of topic c returns.
func storedCodecs(t *testing.T, k *fixtures.Kafka) []int16 {
	raw, _ := fetchRaw(t, k.Client(), "c")
	var stored []int16
	for len(raw) >= 61 {
		n := 12 + int(binary.BigEndian.Uint32(raw[8:]))
		require.LessOrEqual(t, n, len(raw))
		stored = append(stored, int16(binary.BigEndian.Uint16(raw[21:]))&0x07)
		raw = raw[n:]
	}
	return stored
}

func TestTombstonesGoAfterDeleteRetention(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.ManualClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)),
		fixtures.Topic("users", 1, "cleanup.policy", "compact"))
	produceEach(t, k, keyed("users", "ann", "x"), keyed("users", "ann", "<nil>"), keyed("users", "bob", "y"))
	k.Compact("users")
	assert.Equal(t, map[int64]string{1: "<nil>", 2: "y"}, readPartition(t, k, "users"))
	k.Advance(24 * time.Hour) // delete.retention.ms's default, counted from the compaction that kept it
	k.Compact("users")
	assert.Equal(t, map[int64]string{2: "y"}, readPartition(t, k, "users"))
}

func TestCompactionRunsOnTheBrokersClock(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.ManualClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)),
		fixtures.Topic("state", 1, "cleanup.policy", "compact"),
		fixtures.Topic("log", 1, "cleanup.policy", "compact,delete", "retention.ms", "60000"),
		fixtures.Topic("kept", 1, "cleanup.policy", "compact", "retention.ms", "60000"),
		fixtures.BrokerOptions(broker.WithCompactionInterval(time.Minute)))
	for _, topic := range []string{"state", "log", "kept"} {
		produceEach(t, k, keyed(topic, "k", "1"), keyed(topic, "k", "2"), keyed(topic, "k", "3"))
	}
	k.Advance(59 * time.Second)
	assert.Len(t, k.Records("state", 0), 3, "nothing compacts before the interval")
	k.Advance(time.Second)
	assert.Equal(t, []string{"2", "3"}, k.Values("state", 0))
	k.Advance(time.Minute)
	assert.Empty(t, k.Values("log", 0), "compact,delete also applies retention.ms")
	assert.Equal(t, []string{"2", "3"}, k.Values("kept", 0), "compact alone keeps records past retention.ms")

	_, err := k.Broker().Compact("nope")
	assert.ErrorIs(t, err, broker.ErrUnknownPartition)
	plain := fixtures.Start(t, fixtures.Topic("plain", 1))
	_, err = plain.Broker().Compact("plain")
	assert.ErrorIs(t, err, broker.ErrNotCompacted)
}

func TestKeylessRecordToCompactedTopicIsRefused(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		k := fixtures.Start(t, fixtures.Profile(profile), fixtures.Topic("c", 1, "cleanup.policy", "compact,delete"))
		err := k.Client().ProduceSync(ctxT(t), &kgo.Record{Topic: "c", Value: []byte("no key")}).FirstErr()
		assert.ErrorIs(t, err, kerr.InvalidRecord)

		keyedRec := kmsg.NewRecord()
		keyedRec.Key, keyedRec.Value = []byte("k"), []byte("v")
		keyless := kmsg.NewRecord()
		keyless.Value = []byte("v")
		recs := []kmsg.Record{keyedRec, keyless, keyedRec, keyless}
		for i := range recs {
			recs[i].OffsetDelta = int32(i)
		}
		resp := rawProduce(t, k.Client(), "c", 0, func(*kmsg.RecordBatch) {}, recs...)
		assert.Equal(t, kerr.InvalidRecord.Code, resp.ErrorCode)
		require.Len(t, resp.ErrorRecords, 2)
		assert.Equal(t, []int32{1, 3}, []int32{resp.ErrorRecords[0].RelativeOffset, resp.ErrorRecords[1].RelativeOffset})
		assert.Equal(t, "Compacted topic cannot accept message without key in topic partition c-0.", *resp.ErrorRecords[0].ErrorMessage)
		require.NotNil(t, resp.ErrorMessage)
		assert.Contains(t, *resp.ErrorMessage, "One or more records have been rejected due to 2 record errors")
		assert.Equal(t, int64(0), k.EndOffset("c", 0), "nothing of the batch is stored")

		require.NoError(t, k.Client().ProduceSync(ctxT(t), &kgo.Record{Topic: "c", Key: []byte{}, Value: []byte("empty key")}).FirstErr(),
			"an empty key is a key")
	})
}

func TestSkipOffsetsRefusals(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("t", 1))
	assert.ErrorIs(t, k.Broker().SkipOffsets("t", 1, 1), broker.ErrUnknownPartition)
	assert.ErrorIs(t, k.Broker().SkipOffsets("t", 0, 0), log.ErrSkip)
	assert.ErrorIs(t, k.Broker().SkipOffsets("t", 0, log.MaxOffset+1), log.ErrSkip)
}

// TestDeleteRecordsOfACompactedTopicIsRefused: Kafka refuses DeleteRecords
// on a topic whose cleanup.policy is compact alone (POLICY_VIOLATION) and
// allows it with compact,delete.
func TestDeleteRecordsOfACompactedTopicIsRefused(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("state", 1, "cleanup.policy", "compact"),
		fixtures.Topic("both", 1, "cleanup.policy", "compact,delete"))
	for _, topic := range []string{"state", "both"} {
		produceEach(t, k, keyed(topic, "a", "1"), keyed(topic, "b", "2"))
	}
	adm := k.Admin()
	res, err := adm.DeleteRecords(ctxT(t), kadm.Offsets{"state": {0: {Topic: "state", At: 1}}, "both": {0: {Topic: "both", At: 1}}})
	require.NoError(t, err)
	state, _ := res.Lookup("state", 0)
	assert.ErrorIs(t, state.Err, kerr.PolicyViolation)
	both, _ := res.Lookup("both", 0)
	assert.NoError(t, both.Err)
	assert.Equal(t, map[int64]string{0: "1", 1: "2"}, readPartition(t, k, "state"), "nothing deleted")
	assert.Equal(t, map[int64]string{1: "2"}, readPartition(t, k, "both"))
}
