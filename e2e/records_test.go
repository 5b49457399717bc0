package e2e_test

// Record validation, record size limits and fetch response limits: what a
// producer's batch must be to be stored, and what a Fetch gets back.

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/rules"
)

// ruleRefusals returns the rules the request log recorded refusals for.
func ruleRefusals(b *broker.Broker) []string {
	var out []string
	for _, r := range b.Requests() {
		if r.Rule != "" {
			out = append(out, r.Rule)
		}
	}
	return out
}

// TestTopicMaxMessageBytes: a topic's max.message.bytes is the batch size
// limit, above or below the broker's message.max.bytes, as in Kafka; a
// refusal by a topic's own config is not a VAST rule's.
func TestTopicMaxMessageBytes(t *testing.T) {
	t.Parallel()
	t.Run("kafka", func(t *testing.T) {
		b := fixtures.StartBroker(t, broker.WithProfile("kafka"))
		cl := newClient(t, b.Addr(), kgo.ProducerBatchMaxBytes(16<<20), kgo.RecordRetries(0))
		createTopic(t, cl, "small", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("51200")})
		createTopic(t, cl, "large", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("10485760")})
		createTopic(t, cl, "default", 1, nil)

		err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "small", Value: make([]byte, 100<<10)}).FirstErr()
		assert.ErrorIs(t, err, kerr.MessageTooLarge, "100 KiB into a 51200-byte topic")
		require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "small", Value: make([]byte, 40<<10)}).FirstErr())

		require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "large", Value: make([]byte, 5<<20)}).FirstErr(), "5 MiB into a 10 MiB topic")

		err = cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "default", Value: make([]byte, 2<<20)}).FirstErr()
		assert.ErrorIs(t, err, kerr.MessageTooLarge, "without the config, the broker's message.max.bytes (1048588) applies")

		assert.Empty(t, ruleRefusals(b), "no VAST rule refuses anything in the kafka profile")
	})

	t.Run("vast-cap", func(t *testing.T) {
		// VAST itself refuses max.message.bytes (VASTTopicConfigsOnly);
		// with that rule off, the VAST cap still bounds the topic's value.
		r := rules.VAST()
		r.VASTTopicConfigsOnly = false
		b := fixtures.StartBroker(t, broker.WithRules(r))
		cl := newClient(t, b.Addr(), kgo.ProducerBatchMaxBytes(16<<20), kgo.RecordRetries(0))
		createTopic(t, cl, "small", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("51200")})
		createTopic(t, cl, "large", 1, map[string]*string{"max.message.bytes": kadm.StringPtr("10485760")})

		err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "small", Value: make([]byte, 100<<10)}).FirstErr()
		assert.ErrorIs(t, err, kerr.MessageTooLarge)
		assert.Empty(t, ruleRefusals(b), "the topic's own config refused it, not a VAST rule")

		resp := rawProduce(t, cl, "large", 0, func(*kmsg.RecordBatch) {}, repeatRecords(20, 100<<10)...)
		assert.Equal(t, kerr.MessageTooLarge.Code, resp.ErrorCode, "a 2 MB batch is over VAST's 1 MiB cap")
		assert.Equal(t, []string{"MaxMessageBytes"}, ruleRefusals(b))
	})
}

// rawRecord encodes one record with kmsg: offset delta i, key "k", value
// v, no headers; edit, when set, rewrites the record's body (everything
// after the length varint) before its length is prefixed. With small
// deltas the body is: attributes, timestamp delta, offset delta, key
// length (index 3), key, value length (index 5), value, header count
// (index 7).
func rawRecord(i int32, v string, edit func([]byte) []byte) []byte {
	r := kmsg.NewRecord()
	r.OffsetDelta = i
	r.Key, r.Value = []byte("k"), []byte(v)
	body := r.AppendTo(nil)[1:] // a zero Length encodes as one byte
	if edit != nil {
		body = edit(append([]byte(nil), body...))
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// rawBatch wraps a record section in a v2 batch header, encoded with kmsg,
// that claims count records, with the given attributes and a right length
// and CRC.
func rawBatch(attrs int16, count int32, records []byte) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.Attributes = attrs
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = 1_700_000_000_000, 1_700_000_000_000
	rb.LastOffsetDelta, rb.NumRecords = count-1, count
	rb.Records = records
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceRaw sends one encoded batch to partition 0 of topic through cl
// and returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	md, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	require.NoError(t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, md[topic].ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

// TestBrokenRecordsAreRefused sends batches whose header and CRC are right
// but whose records are broken inside; each gets Kafka's INVALID_RECORD
// and nothing is stored. A valid batch is stored byte for byte.
func TestBrokenRecordsAreRefused(t *testing.T) {
	t.Parallel()
	varint := func(v int64) []byte { return binary.AppendVarint(nil, v) }
	splice := func(at, n int, repl []byte) func([]byte) []byte {
		return func(body []byte) []byte {
			return append(append(append([]byte(nil), body[:at]...), repl...), body[at+n:]...)
		}
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := map[string][]byte{
		"negative key length":          rawBatch(0, 1, rawRecord(0, "v", splice(3, 1, varint(-7)))),
		"key length past the record":   rawBatch(0, 1, rawRecord(0, "v", splice(3, 1, varint(1<<20)))),
		"key length overflowing int32": rawBatch(0, 1, rawRecord(0, "v", splice(3, 1, varint(1<<32+1)))),
		"negative value length":        rawBatch(0, 1, rawRecord(0, "v", splice(5, 1, varint(-1<<31)))),
		"value length past the record": rawBatch(0, 1, rawRecord(0, "v", splice(5, 1, varint(1<<31-1)))),
		"header count 2^31-1":          rawBatch(0, 1, rawRecord(0, "v", splice(7, 1, varint(1<<31-1)))),
		"header count -2^31":           rawBatch(0, 1, rawRecord(0, "v", splice(7, 1, varint(-1<<31)))),
		"negative header key length":   rawBatch(0, 1, rawRecord(0, "v", splice(7, 1, cat(varint(1), varint(-2), varint(-1))))),
		"offset deltas out of order":   rawBatch(0, 2, cat(rawRecord(1, "a", nil), rawRecord(0, "b", nil))),
		"fewer records than the count": rawBatch(0, 3, cat(rawRecord(0, "a", nil), rawRecord(1, "b", nil))),
		"more records than the count":  rawBatch(0, 1, cat(rawRecord(0, "a", nil), rawRecord(1, "b", nil))),
		"record length too long":       rawBatch(0, 1, rawRecord(0, "v", func(b []byte) []byte { return append(b, 0, 0) })),
		"offset delta varint too long": rawBatch(0, 1, rawRecord(0, "v", splice(2, 1, bytes.Repeat([]byte{0x80}, 9)))),
		"timestamp varint overflowing": rawBatch(0, 1, rawRecord(0, "v", splice(1, 1, bytes.Repeat([]byte{0xff}, 11)))),
	}
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "r", Partitions: 1}))
	cl := newClient(t, b.Addr())
	for name, batch := range cases {
		t.Run(name, func(t *testing.T) {
			resp := produceRaw(t, cl, "r", batch)
			assert.Equal(t, kerr.InvalidRecord.Code, resp.ErrorCode)
		})
	}
	stored, hwm := fetchRaw(t, cl, "r")
	assert.Empty(t, stored, "no broken batch was stored")
	assert.Zero(t, hwm)

	valid := rawBatch(0, 2, cat(rawRecord(0, "a", nil), rawRecord(1, strings.Repeat("b", 300), nil)))
	resp := produceRaw(t, cl, "r", valid)
	require.Equal(t, int16(0), resp.ErrorCode)
	stored, hwm = fetchRaw(t, cl, "r")
	assert.Equal(t, int64(2), hwm)
	want := append([]byte(nil), valid...)
	binary.BigEndian.PutUint32(want[12:], 0) // the broker's partition leader epoch, outside the CRC
	assert.Equal(t, want, stored, "a valid batch is stored byte for byte")
	assert.Empty(t, ruleRefusals(b), "broken records are Kafka's refusals, not a VAST rule's")
}

// TestCompressedBatchesAreDecompressedToValidate (kafka profile): a batch
// whose attributes name a codec its bytes are not valid in gets
// UNKNOWN_SERVER_ERROR, as Kafka answers when it cannot decompress; valid
// compressed bytes with broken records inside get INVALID_RECORD; a valid
// compressed batch is stored as received.
func TestCompressedBatchesAreDecompressedToValidate(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithTopics(broker.TopicSpec{Name: "z", Partitions: 1}))
	cl := newClient(t, b.Addr())
	gz := func(src []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, err := w.Write(src)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	records := append(rawRecord(0, "a", nil), rawRecord(1, "b", nil)...)
	for codec := int16(1); codec <= 4; codec++ {
		resp := produceRaw(t, cl, "z", rawBatch(codec, 2, records))
		assert.Equal(t, kerr.UnknownServerError.Code, resp.ErrorCode, "codec %d claimed, bytes uncompressed", codec)
	}
	broken := append(rawRecord(0, "a", nil), rawRecord(5, "b", nil)...)
	resp := produceRaw(t, cl, "z", rawBatch(1, 2, gz(broken)))
	assert.Equal(t, kerr.InvalidRecord.Code, resp.ErrorCode, "gzip that decompresses to broken records")
	stored, _ := fetchRaw(t, cl, "z")
	assert.Empty(t, stored)

	valid := rawBatch(1, 2, gz(records))
	resp = produceRaw(t, cl, "z", valid)
	require.Equal(t, int16(0), resp.ErrorCode)
	stored, _ = fetchRaw(t, cl, "z")
	want := append([]byte(nil), valid...)
	binary.BigEndian.PutUint32(want[12:], 0)
	assert.Equal(t, want, stored, "a compressed batch is stored as received")
}

// TestFetchMergesDuplicatePartitions: a Fetch naming one partition a
// thousand times is answered once, within MaxBytes, as Kafka does.
func TestFetchMergesDuplicatePartitions(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "d", Partitions: 2}))
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for range 20 {
		produceSync(t, cl, &kgo.Record{Topic: "d", Partition: 0, Value: make([]byte, 10<<10)})
	}
	produceSync(t, cl, &kgo.Record{Topic: "d", Partition: 1, Value: []byte("one")})
	md, err := kadm.NewClient(cl).ListTopics(ctxT(t), "d")
	require.NoError(t, err)

	req := kmsg.NewPtrFetchRequest()
	req.SessionEpoch = -1
	for range 2 { // the topic twice, each naming partition 0 500 times
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "d", md["d"].ID
		for range 500 {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	last := kmsg.NewFetchRequestTopicPartition()
	last.Partition, last.PartitionMaxBytes = 1, 1<<20
	req.Topics[1].Partitions = append(req.Topics[1].Partitions, last)
	fetch := func(maxBytes int32) []kmsg.FetchResponseTopicPartition {
		req.MaxBytes = maxBytes
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1, "the topic is answered once")
		parts := resp.Topics[0].Partitions
		require.Len(t, parts, 2, "each partition is answered once")
		assert.Equal(t, int32(0), parts[0].Partition)
		assert.Equal(t, int32(1), parts[1].Partition)
		return parts
	}
	parts := fetch(64 << 10)
	assert.NotEmpty(t, parts[0].RecordBatches)
	assert.NotEmpty(t, parts[1].RecordBatches)
	assert.LessOrEqual(t, len(parts[0].RecordBatches)+len(parts[1].RecordBatches), 64<<10, "the response stays within MaxBytes")

	parts = fetch(1)
	var rb kmsg.RecordBatch
	require.NoError(t, rb.ReadFrom(parts[0].RecordBatches))
	assert.Len(t, parts[0].RecordBatches, 12+int(rb.Length), "one batch, over MaxBytes, for progress (KIP-74)")
	assert.Empty(t, parts[1].RecordBatches, "and nothing more")
}

// TestIncrementalFetchRefusalIsLogged: VAST's refusal of an incremental
// fetch is recorded with its rule; Kafka's (vastfake keeps no sessions in
// either profile) is not a rule's.
func TestIncrementalFetchRefusalIsLogged(t *testing.T) {
	t.Parallel()
	profiles(t, func(t *testing.T, profile string) {
		b := fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "f", Partitions: 1}))
		cl := newClient(t, b.Addr())
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.SessionID, req.SessionEpoch = 1<<20, 7, 1
		resp, err := req.RequestWith(ctxT(t), cl)
		require.NoError(t, err)
		assert.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.ErrorCode)
		var fetches []broker.RequestRecord
		for _, r := range b.Requests() {
			if r.API == kmsg.Fetch {
				fetches = append(fetches, r)
			}
		}
		require.Len(t, fetches, 1)
		assert.Equal(t, kerr.FetchSessionIDNotFound.Code, fetches[0].ErrorCode)
		if profile == "vast" {
			assert.Equal(t, "NoFetchSessions", fetches[0].Rule)
		} else {
			assert.Empty(t, fetches[0].Rule)
		}
	})
}
