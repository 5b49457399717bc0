package e2e_test

// The helpers the end-to-end tests share: clients and waits first, then raw
// protocol frames for the tests that drive the wire by hand, then what the
// request log, the audit and transactions tests read back.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// profiles runs fn once per rules profile.
func profiles(t *testing.T, fn func(t *testing.T, profile string)) {
	for _, p := range []string{"vast", "kafka"} {
		t.Run(p, func(t *testing.T) { fn(t, p) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a kgo client for addr with VAST-compatible settings.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(fixtures.ClientOpts(addr), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), partitions, 1, configs, name)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
}

// produceSync produces records and fails the test on any error.
func produceSync(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	require.NoError(t, cl.ProduceSync(ctxT(t), recs...).FirstErr())
}

// consumeAll reads every partition of topic from the start until it has n
// records, with a fresh direct (group-less) consumer.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// groupConsumer returns a kgo group consumer reading topic from the start.
func groupConsumer(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6 * time.Second),
		kgo.RebalanceTimeout(6 * time.Second),
	}, opts...)...)
}

// pollN polls cl until it has n records, failing on any fetch error.
func pollN(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "polled %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// dialRaw opens a plain TCP connection for hand-driven protocol tests.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	return c
}

// roundTrip sends req at version with kmsg's request formatter and reads the
// answer into resp.
func roundTrip(t *testing.T, c net.Conn, version int16, req kmsg.Request, resp kmsg.Response, corr int32) {
	t.Helper()
	req.SetVersion(version)
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test")).AppendRequest(nil, req, corr)
	_, err := c.Write(buf)
	require.NoError(t, err)
	body := readFrame(t, c)
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(body)))
	body = body[4:]
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		body = body[1:] // empty response header tags
	}
	if version > resp.MaxVersion() {
		version = 0 // ApiVersions answers an unknown version with v0
	}
	resp.SetVersion(version)
	require.NoError(t, resp.ReadFrom(body))
}

func readFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var size [4]byte
	_, err := io.ReadFull(c, size[:])
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c, body)
	require.NoError(t, err)
	return body
}

// repeatRecords returns n records of valueSize bytes each.
func repeatRecords(n, valueSize int) []kmsg.Record {
	out := make([]kmsg.Record, n)
	for i := range out {
		out[i] = kmsg.NewRecord()
		out[i].OffsetDelta = int32(i)
		out[i].Value = make([]byte, valueSize)
	}
	return out
}

// encodeBatch encodes records into a v2 batch with kmsg, after edit has set
// header fields, and fills in length and CRC.
func encodeBatch(edit func(*kmsg.RecordBatch), recs ...kmsg.Record) []byte {
	if len(recs) == 0 {
		r := kmsg.NewRecord()
		r.Value = []byte("v")
		recs = []kmsg.Record{r}
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.PartitionLeaderEpoch = -1
	now := time.Now().UnixMilli()
	rb.FirstTimestamp, rb.MaxTimestamp = now, now
	rb.LastOffsetDelta = int32(len(recs) - 1)
	rb.NumRecords = int32(len(recs))
	var raw []byte
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
		recs[i].Length = int32(len(recs[i].AppendTo(nil)) - 1) // placeholder, fixed below
		// Length is the size of everything after the length varint.
		body := recs[i].AppendTo(nil)
		n := len(body) - varintLen(int64(recs[i].Length))
		recs[i].Length = int32(n)
		raw = recs[i].AppendTo(raw)
	}
	rb.Records = raw
	edit(&rb)
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// rawProduce sends one batch to topic/partition through cl and returns the
// partition's answer.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, edit func(*kmsg.RecordBatch), recs ...kmsg.Record) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	md, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	require.NoError(t, err)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, md[topic].ID // v13+ name topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = encodeBatch(edit, recs...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

// frame prefixes body with its int32 size.
func frame(size int32, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(out, body...)
}

// assertClosed reads until the broker closes the connection.
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the broker kept the connection open")
	}
}

// apiVersions returns the broker's advertised max version per key.
func apiVersions(t *testing.T, cl *kgo.Client) map[int16]int16 {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.ErrorCode))
	out := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = k.MaxVersion
	}
	return out
}

// findingKeys lists findings as "Rule kind topic group", sorted, for
// asserting the exact set a scenario causes.
func findingKeys(fs []broker.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", f.Rule, f.Kind, f.Topic, f.Group)))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// fetchRaw fetches partition 0 of topic from offset 0 and returns the
// stored bytes and the high watermark.
func fetchRaw(t *testing.T, cl *kgo.Client, topic string) ([]byte, int64) {
	t.Helper()
	md, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	require.NoError(t, err)
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.SessionEpoch = 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 10 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	return p.RecordBatches, p.HighWatermark
}

// findRequest returns the last logged request of api that matches, or
// false.
func findRequest(b *broker.Broker, api kmsg.Key, match func(broker.RequestRecord) bool) (broker.RequestRecord, bool) {
	reqs := b.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].API == api && match(reqs[i]) {
			return reqs[i], true
		}
	}
	return broker.RequestRecord{}, false
}

// offsetsFor is one committed offset for kadm.
func offsetsFor(topic string, partition int32, at int64) kadm.Offsets {
	os := make(kadm.Offsets)
	os.AddOffset(topic, partition, at, -1)
	return os
}

// txnClient returns a kgo client for addr with opts, closed with the test.
func txnClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// listEnd returns partition 0's latest offset at an isolation level.
func listEnd(t *testing.T, addr, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), txnClient(t, addr))
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	return p.Offset
}

const (
	adminUser, adminPass = "admin", "admin-secret"
	appUser, appPass     = "app", "app-secret"
)
