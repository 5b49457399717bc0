package control_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// shareGroupJSON is GET /groups/{name} of a share group, the fields a test
// reads.
type shareGroupJSON struct {
	Name          string `json:"name"`
	State         string `json:"state"`
	GroupProtocol string `json:"groupProtocol"`
	GroupEpoch    int32  `json:"groupEpoch"`
	Members       []struct {
		MemberID   string             `json:"memberId"`
		ClientID   string             `json:"clientId"`
		Assignment map[string][]int32 `json:"assignment"`
	} `json:"members"`
	SharePartitions []struct {
		Topic       string `json:"topic"`
		Partition   int32  `json:"partition"`
		StartOffset int64  `json:"startOffset"`
		Acquired    []struct {
			FirstOffset   int64     `json:"firstOffset"`
			LastOffset    int64     `json:"lastOffset"`
			MemberID      string    `json:"memberId"`
			ClientID      string    `json:"clientId"`
			DeliveryCount int16     `json:"deliveryCount"`
			LockDeadline  time.Time `json:"lockDeadline"`
		} `json:"acquired"`
		Archived int64 `json:"archived"`
		Lag      int64 `json:"lag"`
	} `json:"sharePartitions"`
}

// TestShareGroupInControlPlane: GET /groups/{name} shows a share group's
// members and assignments and, per partition, the start offset, the
// records held with their delivery counts and lock deadlines, and the
// archived count; the live page draws each partition's start offset and
// held records.
func TestShareGroupInControlPlane(t *testing.T) {
	url, start := shareGroupScene(t)
	var g shareGroupJSON
	require.Equal(t, 200, call(t, "GET", url+"/groups/workers", nil, &g))
	assert.Equal(t, "share", g.GroupProtocol)
	assert.Equal(t, "Stable", g.State)
	require.Len(t, g.Members, 1)
	assert.Equal(t, "worker-1", g.Members[0].ClientID)
	assert.Equal(t, map[string][]int32{"jobs": {0, 1}}, g.Members[0].Assignment)
	require.Len(t, g.SharePartitions, 2)
	p0, p1 := g.SharePartitions[0], g.SharePartitions[1]
	assert.Equal(t, int64(0), p0.StartOffset)
	require.Len(t, p0.Acquired, 1)
	assert.Equal(t, int64(0), p0.Acquired[0].FirstOffset)
	assert.Equal(t, int64(2), p0.Acquired[0].LastOffset)
	assert.Equal(t, "worker-1", p0.Acquired[0].ClientID)
	assert.Equal(t, g.Members[0].MemberID, p0.Acquired[0].MemberID)
	assert.Equal(t, int16(1), p0.Acquired[0].DeliveryCount)
	assert.True(t, start.Add(30*time.Second).Equal(p0.Acquired[0].LockDeadline), "lock deadline %s", p0.Acquired[0].LockDeadline)
	assert.Equal(t, int64(3), p0.Lag)
	assert.Equal(t, int64(1), p1.StartOffset, "the rejected record is done")
	assert.Equal(t, int64(1), p1.Archived)
	assert.Empty(t, p1.Acquired)
}

// TestLivePageShareGroup: the live page draws a share group's partitions
// with their start offset, held and archived records.
func TestLivePageShareGroup(t *testing.T) {
	needChromium(t)
	url, _ := shareGroupScene(t)
	dom := chromium(t, "--virtual-time-budget=3000", "--dump-dom", url+"/")
	boxes := map[string]map[string]string{}
	for _, tag := range partitionBox.FindAll(dom, -1) {
		attrs := map[string]string{}
		for _, m := range dataAttr.FindAllSubmatch(tag, -1) {
			attrs[string(m[1])] = string(m[2])
		}
		boxes[attrs["group"]+"/"+attrs["partition"]] = attrs
	}
	for p, want := range map[int32][3]string{0: {"0", "3", "0"}, 1: {"1", "0", "1"}} {
		box := boxes["workers/"+strconv.Itoa(int(p))]
		require.NotNil(t, box, "partition %d:\n%s", p, dom)
		assert.Equal(t, want, [3]string{box["start"], box["held"], box["archived"]}, "partition %d", p)
		assert.Equal(t, "worker-1", box["owner"])
	}
	assert.Contains(t, string(dom), "share group · group epoch")
}

// shareGroupScene serves a kafka-profile broker on a manual clock whose
// share group "workers" has one member, worker-1, holding a, b and c of
// jobs/0 and having rejected d of jobs/1. It returns the control plane's
// URL and the clock's start.
func shareGroupScene(t *testing.T) (string, time.Time) {
	start := time.Unix(1_750_000_000, 0)
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("jobs", 2), fixtures.ManualClock(start))
	url := serve(t, k)
	k.SetGroupConfig("workers", "share.auto.offset.reset", "earliest")
	k.Produce("jobs", 0, "a", "b", "c")
	k.Produce("jobs", 1, "d")
	cl := k.Client(kgo.ClientID("worker-1"), kgo.ShareGroup("workers"), kgo.ConsumeTopics("jobs"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < 4 && ctx.Err() == nil {
		recs = append(recs, cl.PollFetches(ctx).Records()...)
	}
	require.Len(t, recs, 4)
	for _, r := range recs {
		if string(r.Value) == "d" {
			r.Ack(kgo.AckReject)
		}
	}
	// "d"'s rejection goes out with the next fetch; a, b and c stay held.
	require.NoError(t, cl.FlushAcks(ctx))

	return url, start
}
