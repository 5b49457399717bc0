package bench

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFloorServesProducerAndGroup runs the benchmark's own workloads
// against the floor: a producer is acknowledged, a group consumer reads as
// many records back, and a new group gets its first record.
func TestFloorServesProducerAndGroup(t *testing.T) {
	t.Parallel()
	f, cl, ctx := startFloor(t)
	require.NoError(t, CreateTopic(ctx, cl, "t", 3))
	require.NoError(t, Produce(ctx, cl, "t", 20_000))
	require.NoError(t, ConsumeGroup(ctx, f.Addr(), "g", "t", 20_000))
	_, err := FirstRecord(ctx, f.Addr(), "first", "t")
	require.NoError(t, err)
}

// TestFloorAnswersWholeProducedBatches: a fetch gets the records of the
// produced batch holding its offset, to that batch's end, even past the
// partition's byte limit, as any Kafka broker must answer (it cannot split
// a batch); more whole batches follow while they fit the limit.
func TestFloorAnswersWholeProducedBatches(t *testing.T) {
	t.Parallel()
	_, cl, ctx := startFloor(t)
	require.NoError(t, CreateTopic(ctx, cl, "t", 1))

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = append(encodeBatch(2500), encodeBatch(10)...) // two batches: 2,500 and 10 records
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	_, err := produce.RequestWith(ctx, cl)
	require.NoError(t, err)

	fetched := func(offset int64, maxBytes int32) (first int64, records int, code int16) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes, req.MinBytes = 50<<20, 1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes = offset, maxBytes
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		first, code = -1, resp.Topics[0].Partitions[0].ErrorCode
		for b := resp.Topics[0].Partitions[0].RecordBatches; len(b) > 0; {
			var rb kmsg.RecordBatch
			require.NoError(t, rb.ReadFrom(b))
			require.Equal(t, rb.CRC, int32(crc32.Checksum(b[21:12+rb.Length], crc32.MakeTable(crc32.Castagnoli))), "batch at %d: CRC", rb.FirstOffset)
			if first < 0 {
				first = rb.FirstOffset
			}
			records += int(rb.NumRecords)
			b = b[12+int(rb.Length):]
		}
		return first, records, code
	}
	first, n, _ := fetched(0, 1)
	assert.Equal(t, int64(0), first)
	assert.Equal(t, 2500, n, "the whole first batch, past a 1-byte limit")
	first, n, _ = fetched(1200, 1)
	assert.Equal(t, int64(1200), first)
	assert.Equal(t, 1300, n, "the rest of the batch holding the offset")
	first, n, _ = fetched(2500, 1)
	assert.Equal(t, int64(2500), first)
	assert.Equal(t, 10, n, "the next batch")
	_, n, _ = fetched(0, 1<<20)
	assert.Equal(t, 2510, n, "both batches within 1 MiB")
	_, n, _ = fetched(2510, 1<<20)
	assert.Zero(t, n, "nothing at the high watermark")
	for _, offset := range []int64{-1, -2, 2511} {
		_, _, code := fetched(offset, 1<<20)
		assert.Equal(t, kerr.OffsetOutOfRange.Code, code, "offset %d", offset)
	}
}

// TestFloorAsksForAMemberID: a JoinGroup without a member id gets
// MEMBER_ID_REQUIRED and one to join with, as from Kafka (KIP-394), unless
// it is a static member's.
func TestFloorAsksForAMemberID(t *testing.T) {
	t.Parallel()
	_, cl, _ := startFloor(t)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 30000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	join.Protocols = append(join.Protocols, p)
	resp, err := join.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	require.NotEmpty(t, resp.MemberID)
	join.MemberID = resp.MemberID
	resp, err = join.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	assert.Zero(t, resp.ErrorCode)
	assert.Equal(t, join.MemberID, resp.LeaderID)

	join.MemberID, join.InstanceID = "", kmsg.StringPtr("static-1")
	resp, err = join.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	assert.Zero(t, resp.ErrorCode, "a static member joins at once, as in Kafka")
	assert.NotEmpty(t, resp.MemberID)
}

// startFloor starts a floor and a client of it for the test, closed when
// it ends, with a context that ends within a minute.
func startFloor(t *testing.T) (*Floor, *kgo.Client, context.Context) {
	f, err := StartFloor()
	require.NoError(t, err)
	t.Cleanup(f.Close)
	cl, err := Client(f.Addr())
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return f, cl, ctx
}
