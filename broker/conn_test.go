package broker

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAcksZeroProduceGetsNoAnswerEvenWhenFaulted(t *testing.T) {
	b, err := New(WithTopics(TopicSpec{Name: "t", Partitions: 1}))
	require.NoError(t, err)
	defer b.Close()
	b.InjectFault(Fault{API: kmsg.Produce, Err: kerr.NotLeaderForPartition.Code})
	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = 0, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = benchBatch(1)
	rt.Partitions = append(rt.Partitions, rp)
	produce.Topics = append(produce.Topics, rt)
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	_, err = nc.Write(append(f.AppendRequest(nil, produce, 1), f.AppendRequest(nil, versions, 2)...))
	require.NoError(t, err)

	// The first answer on the wire is the ApiVersions one.
	var head [8]byte
	_, err = io.ReadFull(nc, head[:])
	require.NoError(t, err)
	assert.Equal(t, int32(2), int32(binary.BigEndian.Uint32(head[4:])), "correlation id of the first answer")
	assert.Equal(t, kerr.NotLeaderForPartition.Code, b.Requests()[0].ErrorCode, "the request log still shows the fault")
}
