package control_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
)

type errorBody struct {
	Error string `json:"error"`
}

func TestHealthzAndErrors(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t)
	url := serve(t, k)

	var health map[string]string
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/healthz", nil, &health))
	assert.Equal(t, map[string]string{"status": "ok", "bootstrap": k.Addr(), "kafkaVersion": "4.3"}, health)

	var e errorBody
	assert.Equal(t, http.StatusNotFound, call(t, "GET", url+"/topics/nope", nil, &e))
	assert.Equal(t, "no topic nope", e.Error)
	assert.Equal(t, http.StatusNotFound, call(t, "GET", url+"/nothing/here", nil, &e))
	assert.Equal(t, "Not Found", e.Error)
	assert.Equal(t, http.StatusMethodNotAllowed, call(t, "PUT", url+"/topics", nil, &e), "the mux's 405 is JSON too")
	assert.Equal(t, "Method Not Allowed", e.Error)
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults", map[string]any{"api": "NoSuchAPI", "err": 6}, &e))
	assert.Contains(t, e.Error, "NoSuchAPI")
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/latency?api=Fetch&d=soon", nil, &e))
}

func TestTopicsAndRecords(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 3, "retention.ms", "60000"))
	url := serve(t, k)
	k.Produce("orders", 1, "a", "b", "c")
	k.ProduceRecords(&kgo.Record{Topic: "orders", Partition: 2, Key: []byte("k"), Value: []byte{0xff, 0x00},
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})

	var topics []struct {
		Name       string            `json:"name"`
		Configs    map[string]string `json:"configs"`
		Partitions []struct {
			Partition      int32 `json:"partition"`
			LogStartOffset int64 `json:"logStartOffset"`
			HighWatermark  int64 `json:"highWatermark"`
		} `json:"partitions"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics", nil, &topics))
	require.Len(t, topics, 1)
	assert.Equal(t, "orders", topics[0].Name)
	assert.Equal(t, "60000", topics[0].Configs["retention.ms"])
	require.Len(t, topics[0].Partitions, 3)
	assert.Equal(t, int64(3), topics[0].Partitions[1].HighWatermark)
	assert.Equal(t, int64(1), topics[0].Partitions[2].HighWatermark)

	var records []struct {
		Offset      int64   `json:"offset"`
		Key         *string `json:"key"`
		Value       *string `json:"value"`
		ValueBase64 string  `json:"valueBase64"`
		Headers     []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"headers"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/orders/partitions/1/records?offset=1&limit=1", nil, &records))
	require.Len(t, records, 1)
	assert.Equal(t, int64(1), records[0].Offset)
	assert.Equal(t, "b", *records[0].Value)

	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/orders/partitions/2/records", nil, &records))
	require.Len(t, records, 1)
	assert.Equal(t, "k", *records[0].Key)
	assert.Nil(t, records[0].Value, "a value that is not UTF-8 comes as base64")
	assert.Equal(t, "/wA=", records[0].ValueBase64)
	assert.Equal(t, "v", records[0].Headers[0].Value)

	var e errorBody
	assert.Equal(t, http.StatusNotFound, call(t, "GET", url+"/topics/orders/partitions/3/records", nil, &e))
	assert.Equal(t, http.StatusBadRequest, call(t, "GET", url+"/topics/orders/partitions/0/records?limit=-1", nil, &e))
}

type groupBody struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Protocol   string `json:"protocol"`
	Generation int32  `json:"generation"`
	Members    []struct {
		ClientID   string             `json:"clientId"`
		Assignment map[string][]int32 `json:"assignment"`
	} `json:"members"`
	Partitions []struct {
		Topic         string `json:"topic"`
		Partition     int32  `json:"partition"`
		Committed     *int64 `json:"committed"`
		HighWatermark int64  `json:"highWatermark"`
		Lag           *int64 `json:"lag"`
		OwnerClientID string `json:"ownerClientId"`
	} `json:"partitions"`
}

// TestGroupsWithLag reads a two-member group: decoded assignments,
// committed offsets and lag per partition, and the rebalances that formed
// it.
func TestGroupsWithLag(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 4))
	url := serve(t, k)
	for p := int32(0); p < 4; p++ {
		k.Produce("orders", p, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	}
	owners := groupOfTwo(t, k, "billing", "orders", 4)

	var g groupBody
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups/billing", nil, &g))
	assert.Equal(t, "Stable", g.State)
	assert.Equal(t, "range", g.Protocol)
	require.Len(t, g.Members, 2)
	assigned := map[int32]string{}
	for _, m := range g.Members {
		for _, p := range m.Assignment["orders"] {
			assigned[p] = m.ClientID
		}
	}
	assert.Equal(t, owners, assigned)
	require.Len(t, g.Partitions, 4)
	for i, gp := range g.Partitions {
		p := int32(i)
		assert.Equal(t, p, gp.Partition)
		require.NotNil(t, gp.Committed)
		assert.Equal(t, 4+int64(p), *gp.Committed)
		assert.Equal(t, int64(10), gp.HighWatermark)
		require.NotNil(t, gp.Lag)
		assert.Equal(t, 6-int64(p), *gp.Lag)
		assert.Equal(t, owners[p], gp.OwnerClientID)
	}

	var all []groupBody
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups", nil, &all))
	require.Len(t, all, 1)

	var rebalances []struct {
		Group      string `json:"group"`
		Generation int32  `json:"generation"`
		State      string `json:"state"`
		Members    []struct {
			ClientID string `json:"clientId"`
		} `json:"members"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/rebalances?group=billing", nil, &rebalances))
	require.NotEmpty(t, rebalances)
	last := rebalances[len(rebalances)-1]
	assert.Equal(t, g.Generation, last.Generation)
	assert.Equal(t, "Stable", last.State)
	assert.Len(t, last.Members, 2)

	// Failover drops the committed offsets; lag becomes unknown.
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/failover", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups/billing", nil, &g))
	for _, gp := range g.Partitions {
		assert.Nil(t, gp.Committed)
		assert.Nil(t, gp.Lag)
	}
}

// TestRequestLogNamesTheRule refuses a compressed batch and finds the
// refusal in the request log by its rule.
func TestRequestLogNamesTheRule(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	cl := k.Client(kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.RecordRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// franz-go sends a batch uncompressed unless compression makes it smaller.
	value := bytes.Repeat([]byte("compressible "), 100)
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: value}).FirstErr()
	require.ErrorIs(t, err, kerr.UnsupportedCompressionType)

	var reqs []struct {
		API     string `json:"api"`
		Error   string `json:"error"`
		Rule    string `json:"rule"`
		Message string `json:"message"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?rule=NoCompression", nil, &reqs))
	require.NotEmpty(t, reqs)
	assert.Equal(t, "Produce", reqs[0].API)
	assert.Equal(t, "UNSUPPORTED_COMPRESSION_TYPE", reqs[0].Error)
	assert.Equal(t, "NoCompression", reqs[0].Rule)
	assert.Contains(t, reqs[0].Message, "compression.type=none", "what the client was told")

	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?api=Metadata&limit=1", nil, &reqs))
	require.Len(t, reqs, 1)
	assert.Equal(t, "Metadata", reqs[0].API)

	require.Equal(t, http.StatusOK, call(t, "DELETE", url+"/requests", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?rule=NoCompression", nil, &reqs))
	assert.Empty(t, reqs)
}

// TestFaults injects a fault by name over HTTP, sees a client get it once,
// and clears faults.
func TestFaults(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t)
	url := serve(t, k)
	adm := k.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	var f map[string]any
	require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
		map[string]any{"api": "CreateTopics", "err": "POLICY_VIOLATION", "count": 1}, &f))
	assert.Equal(t, "CreateTopics", f["api"])
	assert.Nil(t, f["partitions"], "no partition means every partition")
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	if err == nil {
		err = resp.Err
	}
	require.ErrorIs(t, err, kerr.PolicyViolation)
	resp, err = adm.CreateTopic(ctx, 1, 1, nil, "orders")
	require.NoError(t, err)
	require.NoError(t, resp.Err, "a fault with count 1 fails one request")

	require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults", map[string]any{"api": 19, "err": 44}, nil))
	require.Equal(t, http.StatusOK, call(t, "DELETE", url+"/faults", nil, nil))
	resp, err = adm.CreateTopic(ctx, 1, 1, nil, "audit")
	require.NoError(t, err)
	require.NoError(t, resp.Err, "DELETE /faults clears every fault")

	require.Equal(t, http.StatusOK, call(t, "POST", url+"/latency?api=Fetch&d=1ms", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/stale-end-offset?d=30s", nil, nil))
	assert.Equal(t, 30*time.Second, k.Broker().StaleEndOffset())
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/drop-connections", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/restart", nil, nil))
	k.Produce("audit", 0, "after restart") // clients reconnect

	// A fault that drops the answer after the request is handled: the
	// producer (no idempotence under VAST) sends the record again.
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults", map[string]any{"api": "Produce"}, nil), "no err and no dropAnswer")
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": "NOT_LEADER_FOR_PARTITION", "dropAnswer": true}, nil),
		"a dropped answer carries no error: the broker would not send the one the answer echoes")
	for _, zero := range []any{0, "0"} {
		assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults", map[string]any{"api": "Produce", "err": zero}, nil),
			"err %v is success: the producer would be told its records were stored when they were not", zero)
	}
	require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "dropAnswer": true, "count": 1, "topic": "audit"}, &f))
	assert.Equal(t, true, f["dropAnswer"])
	k.Produce("audit", 0, "answer lost")
	assert.Equal(t, []string{"after restart", "answer lost", "answer lost"}, k.Values("audit", 0))
}

// TestFaultPartitionsGoAndJSON checks that a fault naming a topic and no
// partition fails every partition of it, whether it is given as a Go
// broker.Fault zero value or as JSON, and that partition 0 is only chosen
// when it is named.
func TestFaultPartitionsGoAndJSON(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 3))
	url := serve(t, k)
	cl := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0))
	failed := func() []int32 {
		t.Helper()
		var out []int32
		for p := int32(0); p < 3; p++ {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte("x")}).FirstErr()
			cancel()
			if err != nil {
				require.ErrorIs(t, err, kerr.PolicyViolation)
				out = append(out, p)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		inject func()
		want   []int32
	}{
		{"Go zero value", func() {
			k.Broker().InjectFault(broker.Fault{API: kmsg.Produce, Err: kerr.PolicyViolation.Code, Topic: "orders"})
		}, []int32{0, 1, 2}},
		{"JSON without partition", func() {
			require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
				map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "topic": "orders"}, nil))
		}, []int32{0, 1, 2}},
		{"Go partition 0", func() {
			k.Broker().InjectFault(broker.Fault{API: kmsg.Produce, Err: kerr.PolicyViolation.Code, Topic: "orders", Partitions: []int32{0}})
		}, []int32{0}},
		{"JSON partition 0", func() {
			require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
				map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "topic": "orders", "partition": 0}, nil))
		}, []int32{0}},
		{"JSON partitions 0 and 2", func() {
			require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
				map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "topic": "orders", "partitions": []int{0, 2}}, nil))
		}, []int32{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.inject()
			defer k.ClearFaults()
			assert.Equal(t, tc.want, failed())
		})
	}
	var e errorBody
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "topic": "orders", "partition": 0, "partitions": []int{1}}, &e))
}

func TestClockAdvance(t *testing.T) {
	t.Parallel()
	t.Run("wall clock", func(t *testing.T) {
		url := serve(t, fixtures.Start(t))
		var e errorBody
		assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/clock/advance?d=30s", nil, &e))
		assert.Contains(t, e.Error, "-manual-clock")
	})
	t.Run("manual clock", func(t *testing.T) {
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		k := fixtures.Start(t, fixtures.ManualClock(start))
		url := serve(t, k)
		var now struct {
			Now    time.Time `json:"now"`
			Manual bool      `json:"manual"`
		}
		require.Equal(t, http.StatusOK, call(t, "POST", url+"/clock/advance?d=30s", nil, &now))
		assert.True(t, now.Now.Equal(start.Add(30*time.Second)))
		assert.True(t, k.Broker().Clock().Now().Equal(start.Add(30*time.Second)))
		var e errorBody
		assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/clock/advance", nil, &e))
	})
}

// TestClockAdvanceOfAnyLength: POST /clock/advance answers for any d up to
// the largest duration, since periodic work (retention, producer expiry)
// runs once for the intervals that pass rather than once per interval; its
// effects are there (retention dropped the records) and the broker serves
// on.
func TestClockAdvanceOfAnyLength(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := fixtures.Start(t, fixtures.ManualClock(start), fixtures.Topic("ret", 1, "retention.ms", "60000"))
	url := serve(t, k)
	k.Produce("ret", 0, "a", "b")
	largest := time.Duration(math.MaxInt64)
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/clock/advance?d="+largest.String(), nil, nil))
	assert.True(t, k.Broker().Clock().Now().Equal(start.Add(largest)))
	ti, ok := k.Broker().Topic("ret")
	require.True(t, ok)
	assert.Equal(t, int64(2), ti.Partitions[0].LogStartOffset, "retention ran in the advance")
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/clock/advance?d=2400h", nil, nil))
	k.Produce("ret", 0, "c")
	ti, _ = k.Broker().Topic("ret")
	assert.Equal(t, int64(3), ti.Partitions[0].HighWatermark)
}

// TestReset empties a broker with topics, records, a group and offsets;
// the same names work again afterwards.
func TestReset(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 2))
	url := serve(t, k)
	k.Produce("orders", 0, "a")
	adm := k.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, "billing", offsets)
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	require.NotEmpty(t, k.Broker().Groups())

	require.Equal(t, http.StatusOK, call(t, "POST", url+"/reset", nil, nil))
	var topics, groups []any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics", nil, &topics))
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups", nil, &groups))
	assert.Empty(t, topics)
	assert.Empty(t, groups)

	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	k.Produce("orders", 0, "fresh")
	k.WaitRecords("orders", 0, "fresh")
}

// TestRecordsOutsideRFC3339Years produces a record stamped in the year
// 10000 between two ordinary ones: the records endpoint still answers all
// three, the odd one with a null timestamp and its milliseconds. (kgo
// cannot stamp it: time.UnixNano overflows after 2262, so the batch is
// built with kmsg.)
func TestRecordsOutsideRFC3339Years(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	now := time.Now().Truncate(time.Millisecond)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	k.ProduceRecords(&kgo.Record{Topic: "orders", Value: []byte("before"), Timestamp: now})
	produceStampedAt(t, k, "orders", far, "far")
	k.ProduceRecords(&kgo.Record{Topic: "orders", Value: []byte("after"), Timestamp: now})

	var records []struct {
		Value       string     `json:"value"`
		Timestamp   *time.Time `json:"timestamp"`
		TimestampMs int64      `json:"timestampMs"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/orders/partitions/0/records", nil, &records))
	require.Len(t, records, 3)
	assert.Equal(t, "far", records[1].Value)
	assert.Nil(t, records[1].Timestamp)
	assert.Equal(t, far, records[1].TimestampMs)
	require.NotNil(t, records[0].Timestamp)
	assert.True(t, now.Equal(*records[0].Timestamp))
	assert.Equal(t, now.UnixMilli(), records[2].TimestampMs)
}

// produceStampedAt produces one record with value to partition 0 of topic
// in a batch whose timestamp is ms, encoded with kmsg.
func produceStampedAt(t *testing.T, k *fixtures.Kafka, topic string, ms int64, value string) {
	t.Helper()
	rec := kmsg.NewRecord()
	rec.Value = []byte(value)
	body := rec.AppendTo(nil) // Length 0 takes one varint byte
	rec.Length = int32(len(body) - 1)
	rb := kmsg.NewRecordBatch()
	rb.Magic, rb.PartitionLeaderEpoch = 2, -1
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp, rb.NumRecords = ms, ms, 1
	rb.Records = rec.AppendTo(nil)
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))                                          // batch length
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))) // CRC-32C

	cl := k.Client()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9 // names the topic; v13+ would want its id
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
}

// TestSkipAndCompact drives a gap and a compaction through the control
// plane and reads them back in the records endpoint, the topic and the
// live view.
func TestSkipAndCompact(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("prices", 1, "cleanup.policy", "compact"), fixtures.Topic("plain", 1))
	url := serve(t, k)
	rec := func(key, value string) *kgo.Record {
		return &kgo.Record{Topic: "prices", Key: []byte(key), Value: []byte(value)}
	}
	k.ProduceRecords(rec("apple", "1"))
	k.ProduceRecords(rec("apple", "2"))
	var skipped map[string]any
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/prices/partitions/0/skip?n=5", nil, &skipped))
	k.ProduceRecords(rec("pear", "3"))

	var compacted []struct {
		Partition      int32 `json:"partition"`
		Compacted      bool  `json:"compacted"`
		CleanedTo      int64 `json:"cleanedTo"`
		RecordsRemoved int64 `json:"recordsRemoved"`
	}
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/prices/compact", nil, &compacted))
	require.Len(t, compacted, 1)
	assert.True(t, compacted[0].Compacted)
	assert.Equal(t, int64(2), compacted[0].CleanedTo)
	assert.Equal(t, int64(1), compacted[0].RecordsRemoved)

	var records []struct {
		Offset int64   `json:"offset"`
		Value  *string `json:"value"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/prices/partitions/0/records", nil, &records))
	require.Len(t, records, 2)
	assert.Equal(t, []int64{1, 7}, []int64{records[0].Offset, records[1].Offset})
	var live struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions []struct {
				HighWatermark int64 `json:"highWatermark"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/live.json", nil, &live))
	assert.Equal(t, int64(8), live.Topics[1].Partitions[0].HighWatermark)

	var e errorBody
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/topics/plain/compact", nil, &e))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/topics/nope/compact", nil, &e))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/topics/prices/partitions/1/skip?n=1", nil, &e))
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/topics/prices/partitions/0/skip?n=0", nil, &e))
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/topics/prices/partitions/0/skip", nil, &e))
}

// TestFaultsAreBounded: the broker holds at most broker.MaxFaults faults,
// each naming at most broker.MaxFaultPartitions partitions; past either the
// control plane answers 409 and the broker keeps nothing more.
func TestFaultsAreBounded(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	url := serve(t, k)
	many := make([]int32, broker.MaxFaultPartitions+1)
	var e errorBody
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "topic": "orders", "partitions": many}, &e))
	assert.Contains(t, e.Error, "too many faults")
	for range broker.MaxFaults {
		require.NoError(t, k.Broker().InjectFault(broker.Fault{API: kmsg.Metadata, Err: kerr.PolicyViolation.Code, Topic: "none"}))
	}
	assert.ErrorIs(t, k.Broker().InjectFault(broker.Fault{API: kmsg.Metadata, Err: kerr.PolicyViolation.Code}), broker.ErrTooManyFaults)
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": "POLICY_VIOLATION"}, &e))
	k.ClearFaults()
	require.Equal(t, http.StatusCreated, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": "POLICY_VIOLATION", "count": 1}, nil), "clearing makes room")
}

// TestRequestsListEveryRule: a request that two VAST rules refuse in part
// (one CreateTopics with a topic over the partition limit and one with a
// config VAST does not take) lists both rules in GET /requests, and the
// rule filter finds it by either.
func TestRequestsListEveryRule(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t)
	url := serve(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	many := kmsg.NewCreateTopicsRequestTopic()
	many.Topic, many.NumPartitions, many.ReplicationFactor = "many", 20_001, 1
	configured := kmsg.NewCreateTopicsRequestTopic()
	configured.Topic, configured.NumPartitions, configured.ReplicationFactor = "configured", 1, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "segment.bytes", kmsg.StringPtr("1048576")
	configured.Configs = append(configured.Configs, cfg)
	req.Topics = append(req.Topics, many, configured)
	_, err := req.RequestWith(ctx, k.Client())
	require.NoError(t, err)

	var reqs []struct {
		Rule  string   `json:"rule"`
		Rules []string `json:"rules"`
	}
	for _, rule := range []string{"MaxPartitionsPerTopic", "VASTTopicConfigsOnly"} {
		require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?api=CreateTopics&rule="+rule, nil, &reqs))
		require.Len(t, reqs, 1, rule)
		assert.ElementsMatch(t, []string{"MaxPartitionsPerTopic", "VASTTopicConfigsOnly"}, reqs[0].Rules)
		assert.Contains(t, reqs[0].Rules, reqs[0].Rule, "rule is the first of rules")
	}
}

// TestBrokersDownAndUp: GET /brokers lists the broker ids, and a broker is
// taken down and brought back by id; a bad id is 400, an unknown one 404,
// a broker already down (or up) 409, each with a JSON error.
func TestBrokersDownAndUp(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Brokers(3), fixtures.Profile("kafka"), fixtures.Topic("orders", 3))
	url := serve(t, k)
	type brokers struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Addr string `json:"addr"`
			Down bool   `json:"down"`
		} `json:"brokers"`
	}
	var got brokers
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/brokers", nil, &got))
	require.Len(t, got.Brokers, 3)
	assert.Equal(t, k.Addr(), got.Brokers[0].Addr)
	for i, br := range got.Brokers {
		assert.Equal(t, int32(i), br.ID)
		assert.False(t, br.Down)
	}

	require.Equal(t, http.StatusOK, call(t, "POST", url+"/brokers/2/down", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/brokers", nil, &got))
	assert.True(t, got.Brokers[2].Down)
	assert.True(t, k.Broker().BrokerIsDown(2))
	var e errorBody
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/brokers/2/down", nil, &e))
	assert.Contains(t, e.Error, "already down")
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/brokers/9/down", nil, &e))
	assert.Contains(t, e.Error, "no broker with that id")
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/brokers/two/up", nil, &e))
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/brokers/2/up", nil, nil))
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/brokers/2/up", nil, &e))
	assert.Contains(t, e.Error, "is up")
	k.Produce("orders", 2, "after up") // partition 2's leader, broker 2, serves again

	// A virtual-IP failover without a blackout: the address is back at once.
	var fo map[string]any
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/brokers/1/failover", nil, &fo))
	assert.Equal(t, false, fo["down"])
	assert.Equal(t, "0s", fo["blackout"])
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/brokers/1/failover?blackout=soon", nil, &e))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/brokers/9/failover", nil, &e))
	k.Produce("orders", 1, "after the failover")

	// Leader and coordinator moves.
	var moved map[string]any
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/orders/partitions/0/leader?broker=2", nil, &moved))
	assert.Equal(t, float64(2), moved["leader"])
	assert.Equal(t, float64(1), moved["leaderEpoch"])
	assert.Equal(t, int32(2), k.Broker().LeaderOf("orders", 0))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/topics/orders/partitions/9/leader?broker=2", nil, &e))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/topics/orders/partitions/0/leader?broker=9", nil, &e))
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/topics/orders/partitions/0/leader", nil, &e))
	// A preferred election moves it back, once.
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/orders/partitions/0/leader?broker=preferred", nil, &moved))
	assert.Equal(t, map[string]any{"topic": "orders", "partition": float64(0), "leader": float64(0), "leaderEpoch": float64(2), "elected": true}, moved)
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/orders/partitions/0/leader?broker=preferred", nil, &moved))
	assert.Equal(t, false, moved["elected"], "the preferred replica leads already")
	var topic struct {
		Partitions []struct {
			Replicas []int32 `json:"replicas"`
			ISR      []int32 `json:"isr"`
		} `json:"partitions"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/topics/orders", nil, &topic))
	assert.Equal(t, []int32{0, 1, 2}, topic.Partitions[0].Replicas, "three replicas, the preferred leader first")
	assert.Equal(t, []int32{0, 1, 2}, topic.Partitions[0].ISR)
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/topics/orders/partitions/9/leader?broker=preferred", nil, &e))
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/orders/partitions/0/leader?broker=2", nil, &moved))
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/groups/billing/coordinator?broker=1", nil, nil))
	assert.Equal(t, int32(1), k.Broker().CoordinatorOf("billing"))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", url+"/groups/billing/coordinator?broker=9", nil, &e))
	k.Produce("orders", 0, "after the move") // the fixture's client follows the new leader

	// The request log says which broker served each request.
	var reqs []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?api=Produce&broker=2", nil, &reqs))
	require.NotEmpty(t, reqs, "the produce to partition 2 went to its leader, broker 2")
	for _, r := range reqs {
		assert.Equal(t, float64(2), r["broker"])
	}
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?api=Produce&broker=0", nil, &reqs))
	for _, r := range reqs {
		// The client's metadata was stale after the move: the old leader
		// refused, and the client went on to broker 2.
		assert.Equal(t, "NOT_LEADER_FOR_PARTITION", r["error"], "broker 0 stored nothing after partition 0 moved away")
	}
	assert.Equal(t, http.StatusBadRequest, call(t, "GET", url+"/requests?broker=x", nil, &e))
}

// TestCompactKeepsCommittedTransactions is the way users found compaction
// losing committed data, through the control plane: a kgo transactional
// producer commits a key's value, then writes the key in a transaction
// that is still open at a POST /topics/{name}/compact and aborts after it,
// and in one that aborts at once; a read_committed consumer still reads
// the committed value, and the compaction reports the aborted records it
// removed and, with delete.retention.ms=0, the markers.
func TestCompactKeepsCommittedTransactions(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("accounts", 1, "cleanup.policy", "compact", "delete.retention.ms", "0"))
	url := serve(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := k.TransactionalClient("writer", kgo.DefaultProduceTopic("accounts"))
	txn := func(value string, end *kgo.TransactionEndTry) {
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Key: []byte("alice"), Value: []byte(value)}).FirstErr())
		if end != nil {
			require.NoError(t, p.EndTransaction(ctx, *end))
		}
	}
	commit, abort := kgo.TryCommit, kgo.TryAbort
	txn("committed", &commit)
	txn("aborted", &abort)
	txn("open", nil)
	var compacted []struct {
		CleanedTo      int64 `json:"cleanedTo"`
		AbortedRemoved int64 `json:"abortedRemoved"`
		MarkersRemoved int64 `json:"markersRemoved"`
	}
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/accounts/compact", nil, &compacted))
	require.Len(t, compacted, 1)
	assert.Equal(t, int64(4), compacted[0].CleanedTo, "up to the open transaction")
	assert.Equal(t, int64(1), compacted[0].AbortedRemoved)
	require.NoError(t, p.EndTransaction(ctx, kgo.TryAbort))
	var aborted, markers int64
	for range 3 { // the second aborted record, then the first abort marker's horizon, then that marker
		require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/accounts/compact", nil, &compacted))
		aborted += compacted[0].AbortedRemoved
		markers += compacted[0].MarkersRemoved
	}
	assert.Equal(t, int64(1), aborted)
	assert.Equal(t, int64(1), markers, "the commit marker stays with its record, the last abort marker is the active tail")
	k.ProduceRecords(&kgo.Record{Topic: "accounts", Key: []byte("bob"), Value: []byte("b")})
	assert.Equal(t, []string{"committed", "b"}, k.CommittedValues("accounts", 0))

	reader := k.Client(kgo.ConsumeTopics("accounts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for len(got) < 2 {
		fs := reader.PollFetches(ctx)
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	assert.Equal(t, []string{"alice=committed", "bob=b"}, got)
}

// TestAdvertise: PUT /advertise changes what Metadata tells clients, one
// address per broker id, and GET /advertise reads it back; a list of the
// wrong length, an address without a port, or a body that is not
// {"addresses": [...]} is a 400 with a JSON error and changes nothing;
// with a token, a PUT without it is a 401.
func TestAdvertise(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Brokers(2), fixtures.Profile("kafka"), fixtures.Topic("orders", 2))
	url := serve(t, k)
	type addresses struct {
		Addresses []string `json:"addresses"`
	}
	var got addresses
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/advertise", nil, &got))
	before := []string{k.Broker().BrokerAddr(0), k.Broker().BrokerAddr(1)}
	assert.Equal(t, before, got.Addresses)

	var e errorBody
	for _, bad := range []any{
		map[string]any{"addresses": []string{"localhost:1"}},
		map[string]any{"addresses": []string{"localhost:1", "localhost:2", "localhost:3"}},
		map[string]any{"addresses": []string{"localhost:1", "localhost"}},
		map[string]any{"addresses": []string{"localhost:1", "localhost:http"}},
		map[string]any{"addresses": []string{"localhost:1", "local\nhost:2"}},
		map[string]any{"addresses": "localhost:1,localhost:2"},
		map[string]any{"addrs": []string{"localhost:1", "localhost:2"}},
		map[string]any{},
	} {
		e = errorBody{}
		assert.Equal(t, http.StatusBadRequest, call(t, "PUT", url+"/advertise", bad, &e), "%v", bad)
		assert.NotEmpty(t, e.Error, "%v", bad)
		require.Equal(t, http.StatusOK, call(t, "GET", url+"/advertise", nil, &got))
		assert.Equal(t, before, got.Addresses, "a refused %v changes nothing", bad)
	}
	assert.Equal(t, http.StatusBadRequest, call(t, "PUT", url+"/advertise", "[", &e))

	// The same ports under another name: a new client is sent there by
	// Metadata, and produces.
	_, p0, _ := net.SplitHostPort(before[0])
	_, p1, _ := net.SplitHostPort(before[1])
	after := []string{"localhost:" + p0, "localhost:" + p1}
	require.Equal(t, http.StatusOK, call(t, "PUT", url+"/advertise", addresses{after}, &got))
	assert.Equal(t, after, got.Addresses)
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/advertise", nil, &got))
	assert.Equal(t, after, got.Addresses)
	md, err := k.Admin().BrokerMetadata(context.Background())
	require.NoError(t, err)
	for i, br := range md.Brokers {
		assert.Equal(t, after[i], net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))))
	}
	k.Produce("orders", 1, "through the advertised name")
	var health map[string]string
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/healthz", nil, &health))
	assert.Equal(t, after[0], health["bootstrap"])

	guarded := httptest.NewServer(control.New(k.Broker(), control.WithToken("s3cret")))
	t.Cleanup(guarded.Close)
	status, body, _ := send(t, "PUT", guarded.URL+"/advertise", `{"addresses": ["a:1", "b:2"]}`)
	assert.Equal(t, http.StatusUnauthorized, status, body)
	assert.Equal(t, after, k.Broker().Advertised(), "a PUT without the token changes nothing")
	status, body, _ = send(t, "PUT", guarded.URL+"/advertise", `{"addresses": ["a:1", "b:2"]}`, "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, []string{"a:1", "b:2"}, k.Broker().Advertised())
	require.NoError(t, k.Broker().SetAdvertised(before...))
}

// TestConsumerProtocolGroupView: a KIP-848 group (kgo with
// ServerSideBalancer, kafka profile) shows its protocol, epochs, and each
// member's epoch, current and target assignment, and is reconciled once
// every member has its target.
func TestConsumerProtocolGroupView(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 3),
		fixtures.BrokerOptions(broker.WithConsumerGroupTimeouts(coordinator.DefaultConsumerSessionTimeout, 50*time.Millisecond)))
	url := serve(t, k)
	k.Client(kgo.ClientID("next-gen"), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer())
	k.WaitGroupReconciled("g848", 1)

	var g map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups/g848", nil, &g))
	assert.Equal(t, "consumer", g["groupProtocol"])
	assert.Equal(t, "Stable", g["state"])
	assert.Equal(t, true, g["reconciled"])
	assert.Equal(t, "range", g["protocol"], "the fixture client offers the range balancer first")
	assert.Equal(t, float64(1), g["groupEpoch"])
	assert.Equal(t, float64(1), g["assignmentEpoch"])
	members := g["members"].([]any)
	require.Len(t, members, 1)
	m := members[0].(map[string]any)
	assert.Equal(t, "next-gen", m["clientId"])
	assert.Equal(t, float64(1), m["memberEpoch"])
	assert.Equal(t, "STABLE", m["memberState"])
	want := map[string]any{"orders": []any{float64(0), float64(1), float64(2)}}
	assert.Equal(t, want, m["assignment"])
	assert.Equal(t, want, m["targetAssignment"])
	assert.Nil(t, m["revoking"])

	var all []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups", nil, &all))
	require.Len(t, all, 1)
	assert.Equal(t, "consumer", all[0]["groupProtocol"])
}

// TestCompactConsumerOffsets: __consumer_offsets has cleanup.policy=compact,
// as DescribeConfigs says, so its compact route compacts it: three commits
// of one group's offset leave one record, and the group reads its offset
// back.
func TestCompactConsumerOffsets(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("orders", 1))
	url := serve(t, k)
	adm := k.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for at := int64(1); at <= 3; at++ {
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: at, LeaderEpoch: -1})
		committed, err := adm.CommitOffsets(ctx, "billing", offsets)
		require.NoError(t, err)
		require.NoError(t, committed.Error())
	}
	var compacted []struct {
		Partition      int32 `json:"partition"`
		RecordsRemoved int64 `json:"recordsRemoved"`
	}
	var e errorBody
	require.Equal(t, http.StatusOK, call(t, "POST", url+"/topics/__consumer_offsets/compact", nil, &compacted), e.Error)
	require.Len(t, compacted, 50)
	p := broker.OffsetsTopicPartition("billing")
	assert.Positive(t, compacted[p].RecordsRemoved, "a commit superseded by a later one of the same key is removed")
	assert.Equal(t, int64(3), k.Committed("billing", "orders", 0))

	vast := fixtures.Start(t)
	assert.Equal(t, http.StatusNotFound, call(t, "POST", serve(t, vast)+"/topics/__consumer_offsets/compact", nil, &e),
		"the VAST profile has no __consumer_offsets")
}
