//go:build heavy

package broker

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
)

// TestMemoryOfCommittedOffsets: what the broker keeps per committed offset
// in the kafka profile (the coordinator's entry and the offset's record in
// __consumer_offsets) is at most twice what the VAST profile keeps (the
// coordinator's entry alone) when a consumer commits many partitions in
// one OffsetCommit, as clients do: the commit's records are one batch in
// __consumer_offsets, as in Kafka (one batch per record kept 2.8 times as
// much). A consumer committing one partition per request makes one batch
// per commit, in Kafka too; compaction merges those batches, so that an
// offset costs its record rather than a batch header and an index entry,
// and stays within twice too. The request log, which
// keeps requests rather than offsets and has a bound of its own, is
// emptied before measuring.
func TestMemoryOfCommittedOffsets(t *testing.T) {
	if raceDetector {
		t.Skip("memory is measured without the race detector (test.sh runs TestMemory tests again without it)")
	}
	shapes := []struct {
		name          string
		groups, parts int
		perRequest    int
		factor        float64
	}{
		{"500 partitions a commit", 200, 500, 500, 2},
		{"one partition a commit", 50, 400, 1, 2},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			perOffset := map[string]float64{}
			for _, profile := range []string{"vast", "kafka"} {
				b, err := New(WithProfile(profile), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
					WithTopics(TopicSpec{Name: "orders", Partitions: int32(shape.parts)}))
				require.NoError(t, err)
				nc, err := net.Dial("tcp", b.Addr())
				require.NoError(t, err)
				require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Minute)))
				before := liveHeap()
				for g := range shape.groups {
					for first := 0; first < shape.parts; first += shape.perRequest {
						req := kmsg.NewPtrOffsetCommitRequest()
						req.SetVersion(8)
						req.Group, req.Generation = fmt.Sprintf("group-%04d", g), -1
						rt := kmsg.NewOffsetCommitRequestTopic()
						rt.Topic = "orders"
						for p := first; p < first+shape.perRequest; p++ {
							rp := kmsg.NewOffsetCommitRequestTopicPartition()
							rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), int64(1000+p), 0
							rt.Partitions = append(rt.Partitions, rp)
						}
						req.Topics = append(req.Topics, rt)
						resp := roundTrip(t, nc, req).(*kmsg.OffsetCommitResponse)
						require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
					}
				}
				b.ResetRequests() // the request log keeps requests, not offsets (bounded on its own)
				kept := int64(liveHeap()) - int64(before) - int64(b.buffers.freeBytes())
				offsets := shape.groups * shape.parts
				perOffset[profile] = float64(kept) / float64(offsets)
				t.Logf("%s profile: %d committed offsets keep %d KiB, %.0f B an offset", profile, offsets, kept>>10, perOffset[profile])
				nc.Close()
				b.Close()
			}
			assert.Less(t, perOffset["kafka"], shape.factor*perOffset["vast"], "the kafka profile keeps at most %.0f times the VAST profile's", shape.factor)
		})
	}
}
