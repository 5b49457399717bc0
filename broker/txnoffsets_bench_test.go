package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/clock"
)

// BenchmarkEndTxnMillionOffsets ends a transaction that committed 1,000,000
// offsets for one group (100 TxnOffsetCommit requests of 10,000
// partitions) in the kafka profile, where the offsets go to
// __consumer_offsets, and reports how long EndTxn took and the longest the
// coordinator kept another client waiting meanwhile (an OffsetFetch of one
// partition of another group, asked in a loop: hold-ms), beside the longest
// such wait in the second before EndTxn (idle-ms), which is the machine's
// scheduling noise. Run it with
//
//	go test -run '^$' -bench EndTxnMillionOffsets -benchtime 1x ./broker
func BenchmarkEndTxnMillionOffsets(b *testing.B) {
	const requests, perRequest = 100, 10_000
	for b.Loop() {
		b.StopTimer()
		br, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))))
		if err != nil {
			b.Fatal(err)
		}
		pid, epoch, code := br.coord.InitProducerID("big", time.Minute, -1, -1, func() int64 { return br.nextProducerID.Add(1) })
		if code != 0 {
			b.Fatal(code)
		}
		if code := br.coord.AddOffsetsToTxn("big", pid, epoch, "g"); code != 0 {
			b.Fatal(code)
		}
		for i := range requests {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version = 3
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "big", pid, epoch, "g"
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t" + strconv.Itoa(i)
			for p := range perRequest {
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = int32(p), int64(p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			if resp := br.coord.TxnOffsetCommit(req); resp.Topics[0].Partitions[0].ErrorCode != 0 {
				b.Fatal(resp.Topics[0].Partitions[0].ErrorCode)
			}
		}
		var stop atomic.Bool
		var worst atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			fetch := kmsg.NewPtrOffsetFetchRequest()
			fetch.Version = 7
			fetch.Group = "other"
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic, ft.Partitions = "t0", []int32{0}
			fetch.Topics = append(fetch.Topics, ft)
			for !stop.Load() {
				start := time.Now()
				br.coord.OffsetFetch(fetch)
				if d := int64(time.Since(start)); d > worst.Load() {
					worst.Store(d)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		time.Sleep(time.Second)
		idle := time.Duration(worst.Swap(0))
		b.StartTimer()
		start := time.Now()
		if code := br.coord.EndTxn("big", pid, epoch, true); code != 0 {
			b.Fatal(code)
		}
		took := time.Since(start)
		b.StopTimer()
		stop.Store(true)
		wg.Wait()
		if o, ok := br.coord.CommittedOffset("g", "t99", perRequest-1); !ok || o != perRequest-1 {
			b.Fatalf("committed offset of t99[%d]: %d, %v", perRequest-1, o, ok)
		}
		b.ReportMetric(float64(took.Milliseconds()), "endtxn-ms")
		b.ReportMetric(float64(time.Duration(worst.Load()).Milliseconds()), "hold-ms")
		b.ReportMetric(float64(idle.Milliseconds()), "idle-ms")
		br.Close()
		b.StartTimer()
	}
}
