package e2e_test

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
