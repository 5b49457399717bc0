//go:build heavy

package e2e_test

// A slow reader of a large answer, for a fixed time (heavy: over 2.5 s by
// design, and 32 MiB through the race detector).

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// TestSlowReaderKeepsItsConnection: the idle timeout closes a connection
// whose client reads nothing of an answer, not one that reads a large
// answer slowly but steadily. The client here reads 256 KiB every 20 ms of
// a fetch answer of over 16 MiB, more than 2.5 s in all, with a 1 s idle
// timeout: it models a slow consumer, it does not wait for the broker's
// state. (The timeout leaves room for a loaded machine to stall the reader
// for a while between reads.)
// (The kernel wakes a blocked writer only once a good part of its send
// buffer has drained, megabytes on loopback, so progress shows in steps.)
//
// It runs alone, not in parallel: under the race detector its 32 MiB setup
// shared the CPU with the load tests and once ran past three minutes.
func TestSlowReaderKeepsItsConnection(t *testing.T) {
	b := fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithIdleTimeout(time.Second),
		broker.WithTopics(broker.TopicSpec{Name: "big", Partitions: 32}))
	var recs []*kgo.Record
	for p := range int32(32) {
		for range 4 {
			recs = append(recs, &kgo.Record{Topic: "big", Partition: p, Value: make([]byte, 256<<10)})
		}
	}
	// 32 MiB cost the race detector 15-60 s of copying, and far more on a
	// busy machine, so the setup gets a deadline of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cl := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())

	c := dialRaw(t, b.Addr())
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes, fetch.ReplicaID = 100, 64<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "big"
	for p := range int32(32) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = p, 2<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fetch.SetVersion(11)
	_, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, fetch, 1))
	require.NoError(t, err)

	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	require.NoError(t, err)
	want := int(binary.BigEndian.Uint32(size[:]))
	require.Greater(t, want, 16<<20)
	buf := make([]byte, 256<<10)
	got := 0
	for got < want {
		time.Sleep(20 * time.Millisecond) // a slow reader
		n, err := io.ReadFull(c, buf[:min(len(buf), want-got)])
		got += n
		require.NoError(t, err, "read %d of %d bytes", got, want)
	}
}
