//go:build heavy

package broker

// The memory bounds of docs/limits.md measured on the heap, what a request
// repeating its arrays costs in allocations, the bound on a refused batch's
// record errors, and large batches kept in their frames through tens of
// megabytes of reuse: heavy, so test.sh runs them apart (go test -tags
// heavy), with the race detector and the TestMemory ones again without it.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// TestMemoryOfTransactionPartitions: what open transactions keep for their
// partitions follows the bytes their AddPartitionsToTxn requests sent: about
// as much with many partitions per topic (100 transactions × 10,000
// partitions of one topic), and at most 3 times as much with one partition
// per topic (100 transactions × 2,000 topics); a set of partitions per
// transaction kept 28 times the bytes sent.
func TestMemoryOfTransactionPartitions(t *testing.T) {
	for _, shape := range []struct {
		name   string
		topics int
		parts  int32
		txns   int
		factor float64
	}{
		{"many partitions per topic", 1, 10_000, 100, 1.5},
		{"one partition per topic", 2000, 1, 100, 3},
	} {
		t.Run(shape.name, func(t *testing.T) {
			var specs []TopicSpec
			for i := range shape.topics {
				specs = append(specs, TopicSpec{Name: fmt.Sprintf("t%04d", i), Partitions: shape.parts})
			}
			b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))), WithTopics(specs...))
			require.NoError(t, err)
			defer b.Close()
			nc, err := net.Dial("tcp", b.Addr())
			require.NoError(t, err)
			defer nc.Close()
			require.NoError(t, nc.SetDeadline(time.Now().Add(2*time.Minute)))
			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.SetVersion(3)
			for _, spec := range specs {
				at := kmsg.NewAddPartitionsToTxnRequestTopic()
				at.Topic = spec.Name
				for p := range spec.Partitions {
					at.Partitions = append(at.Partitions, p)
				}
				add.Topics = append(add.Topics, at)
			}
			sent := 0
			before := liveHeap()
			for i := range shape.txns {
				init := kmsg.NewPtrInitProducerIDRequest()
				init.SetVersion(4)
				init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(fmt.Sprintf("tx-%05d", i)), 60_000
				ir := roundTrip(t, nc, init).(*kmsg.InitProducerIDResponse)
				require.Zero(t, ir.ErrorCode)
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = *init.TransactionalID, ir.ProducerID, ir.ProducerEpoch
				sent += len(kmsg.NewRequestFormatter(kmsg.FormatterClientID("repeat")).AppendRequest(nil, add, 1))
				ar := roundTrip(t, nc, add).(*kmsg.AddPartitionsToTxnResponse)
				require.Zero(t, ar.Topics[0].Partitions[0].ErrorCode)
			}
			kept := int64(liveHeap()) - int64(before) - int64(b.buffers.freeBytes())
			t.Logf("%d transactions: AddPartitionsToTxn sent %d KiB, the broker keeps %d KiB (%.2f×)",
				shape.txns, sent>>10, kept>>10, float64(kept)/float64(sent))
			assert.Less(t, float64(kept), shape.factor*float64(sent))
		})
	}
}

// TestMemoryOfCommitMarkers: each commit marker a transaction's end writes
// in one of its partitions costs at most twice its 78 encoded bytes
// (markerCostBound): a marker that follows no data in its chunk is kept
// unencoded, 16 bytes and its index entry (log/markers.go). The
// producer-state table, which a marker adds its producer to where it has no
// state yet (as Kafka's does), is measured apart: it is the producer's, and
// bounded by MaxProducerStates whatever the markers. Retention bounds
// markers as it bounds the records they end. The transactions wrote
// nothing in these partitions, the usual case for most partitions of a
// wide transaction and the dearest: a marker has nothing to share its
// partition's memory with.
func TestMemoryOfCommitMarkers(t *testing.T) {
	shapes := []struct{ txns, parts int }{{1, 10_000}, {20, 10_000}, {200, 1_000}}
	if !raceDetector {
		// The shape of docs/limits.md's figure: 2,000,000 markers, some
		// 400 MB, too many for the race detector's shadow memory.
		shapes = append(shapes, struct{ txns, parts int }{200, 10_000})
	}
	for _, shape := range shapes {
		t.Run(fmt.Sprintf("%d×%d", shape.txns, shape.parts), func(t *testing.T) {
			b, err := New(WithProfile("kafka"), WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))),
				WithTopics(TopicSpec{Name: "t", Partitions: int32(shape.parts)}))
			require.NoError(t, err)
			defer b.Close()
			var all []coordinator.TopicPartition
			for p := range int32(shape.parts) {
				all = append(all, coordinator.TopicPartition{Topic: "t", Partition: p})
			}
			before := liveHeap()
			for i := range shape.txns {
				id := fmt.Sprintf("tx-%d", i)
				pid, epoch, code := b.coord.InitProducerID(id, time.Minute, -1, -1, func() int64 { return b.nextProducerID.Add(1) })
				require.Zero(t, code)
				require.Zero(t, b.coord.AddPartitionsToTxn(id, pid, epoch, all))
				require.Zero(t, b.coord.EndTxn(id, pid, epoch, true))
			}
			markers := int64(shape.txns * shape.parts)
			kept := int64(liveHeap()) - int64(before)
			b.appendMu.Lock()
			states := b.producers.Len()
			b.producers = log.NewProducers(MaxProducerStates)
			b.appendMu.Unlock()
			withoutStates := int64(liveHeap()) - int64(before)
			t.Logf("%d markers: %d KiB kept, %d B a marker, %d B without the %d producer states (%d B each)",
				markers, kept>>10, kept/markers, withoutStates/markers, states, (kept-withoutStates)/int64(max(states, 1)))
			assert.LessOrEqual(t, withoutStates/markers, int64(markerCostBound), "a marker costs at most twice its encoded size")
			assert.Less(t, kept/markers, int64(markerCostBound+128), "with its producer's state")
		})
	}
}

// markerCostBound is the most memory one commit or abort marker may cost,
// twice its encoded size (measured: 85-118 bytes a marker, 125-223 with
// the producer states; 251-335 with them when every marker was stored
// encoded, 4,431 when every partition's first chunk was 4 KiB).
const markerCostBound = 2 * 78

func TestRepeatedNamesAreAnsweredOnce(t *testing.T) {
	for _, profile := range []string{"kafka", "vast"} {
		r := rules.VAST()
		if profile == "kafka" {
			r = rules.Kafka()
		}
		apis, _, _ := buildAPIs(&r, DefaultKafkaVersion)
		for _, a := range apis {
			versions := []int16{a.min}
			if a.max != a.min {
				versions = append(versions, a.max)
			}
			for _, v := range versions {
				name := fmt.Sprintf("%s/%s/v%d", profile, kmsg.NameForKey(a.key), v)
				probe := buildRepeatRequest(a.key, v, &repeatWorld{memberID: "m", generation: 1})
				paths := slicePaths(reflect.ValueOf(probe).Elem(), "")
				if len(paths) == 0 {
					t.Logf("%s: no arrays in the request", name)
					continue
				}
				for _, p := range paths {
					if why, ok := repeatExempt[kmsg.NameForKey(a.key)+"."+p]; ok {
						t.Logf("%s %s: exempt: %s", name, p, why)
						continue
					}
					t.Run(name+"/"+p, func(t *testing.T) {
						require.NotZero(t, sliceAt(reflect.ValueOf(probe).Elem(), p).Len(),
							"the test does not know how to fill %s: teach fillRepeat its elements, or exempt it with a reason", p)
						one := sendRepeated(t, profile, a.key, v, p, 1)
						many := sendRepeated(t, profile, a.key, v, p, repeatN)
						t.Logf("answer %d B (one copy) / %d B (%d copies, request %d B); allocated %d B / %d B",
							one.answer, many.answer, repeatN, many.request, one.alloc, many.alloc)
						require.LessOrEqual(t, many.answer, 3*one.answer+256,
							"the answer to %d copies of %s is %d bytes; to one copy %d", repeatN, p, many.answer, one.answer)
						require.LessOrEqual(t, many.alloc, 8*(one.alloc+uint64(many.request))+4<<20,
							"answering %d copies of %s allocated %d bytes; one copy %d", repeatN, p, many.alloc, one.alloc)
					})
				}
			}
		}
	}
}

type repeatResult struct {
	request, answer int
	alloc           uint64
}

// sendRepeated starts a fresh world, sends the request for key and version
// with the array at path repeated n times, and measures the answer and the
// bytes the process allocated between sending and reading it.
func sendRepeated(t *testing.T, profile string, key, version int16, path string, n int) repeatResult {
	t.Helper()
	w := newRepeatWorld(t, profile)
	req := buildRepeatRequest(key, version, w)
	repeatAt(reflect.ValueOf(req).Elem(), path, n)
	nc, err := net.Dial("tcp", w.b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("repeat")).AppendRequest(nil, req, 7)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = nc.Write(frame)
	require.NoError(t, err)
	body := readFrame(t, nc)
	runtime.ReadMemStats(&after)
	return repeatResult{request: len(frame), answer: len(body), alloc: after.TotalAlloc - before.TotalAlloc}
}

// TestKeylessRecordErrorsAreBounded: a compressed batch of more keyless
// records than maxRecordErrors, to a compacted topic, is refused with
// INVALID_RECORD listing the first maxRecordErrors of them, so that a small
// compressed batch cannot make the broker build an answer of gigabytes.
func TestKeylessRecordErrorsAreBounded(t *testing.T) {
	t.Parallel()
	b, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "c", Partitions: 1,
		Configs: map[string]string{"cleanup.policy": "compact"}}))
	require.NoError(t, err)
	defer b.Close()
	// kgo waits for an answer up to the request's timeout and a minute
	// more: the race detector on a loaded machine takes a minute or more
	// over the larger batch.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestTimeoutOverhead(time.Minute))
	require.NoError(t, err)
	defer cl.Close()
	// A deadline against a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	for _, n := range []int{3, maxRecordErrors + 1000} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "c", b.data.get("c").id // v13 names topics by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = gzipKeylessBatch(n)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		sp := resp.Topics[0].Partitions[0]
		require.Equal(t, kerr.InvalidRecord.Code, sp.ErrorCode, "%d keyless records", n)
		want := min(n, maxRecordErrors)
		require.Equal(t, want, len(sp.ErrorRecords), "record errors for %d keyless records", n)
		for i, e := range sp.ErrorRecords {
			if e.RelativeOffset != int32(i) {
				t.Fatalf("record error %d names record %d", i, e.RelativeOffset)
			}
		}
		require.NotNil(t, sp.ErrorMessage)
		assert.Contains(t, *sp.ErrorMessage, strconv.Itoa(n)+" record errors in total")
	}
}

// TestLargeBatchesStoredInTheirFrames: a producer's large batches are stored
// in the memory their request was read into, without a copy, and read back
// whole however the broker's other memory is reused afterwards: frames of
// small batches, which are copied, a deleted topic whose batches shared the
// kept frames, a new topic taking the deleted one's memory, and, after a
// Reset gives the frames back, new frames read into the same memory.
func TestLargeBatchesStoredInTheirFrames(t *testing.T) {
	t.Parallel()
	b, err := New(WithTopics(TopicSpec{Name: "kept", Partitions: 3}, TopicSpec{Name: "gone", Partitions: 3}))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DisableIdempotentWrite(), kgo.ManualFlushing(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	value := func(topic string, p int32, i int) []byte {
		v := fmt.Appendf(nil, "%s/%d/%d/", topic, p, i)
		return append(v, bytes.Repeat([]byte{byte('a' + i%26)}, 1000)...)
	}
	var produceErr error
	var errMu sync.Mutex
	failed := func(_ *kgo.Record, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if err != nil && produceErr == nil {
			produceErr = err
		}
	}
	// produce sends records from..from+n-1 to each partition of the topics
	// and waits for them all.
	produce := func(from, n int, topics ...string) {
		for i := from; i < from+n; i++ {
			for p := range int32(3) {
				for _, topic := range topics {
					cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: value(topic, p, i)}, failed)
				}
			}
		}
		require.NoError(t, cl.Flush(ctx))
		errMu.Lock()
		defer errMu.Unlock()
		require.NoError(t, produceErr)
	}
	// check consumes each of topic's partitions from the start and
	// compares its records with what produce sent.
	check := func(topic string, each int) {
		cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, err)
		defer cons.Close()
		got := map[int32][][]byte{}
		wait, cancel := context.WithTimeout(ctx, 5*time.Minute) // tens of megabytes under the race detector
		defer cancel()
		for total := 0; total < 3*each; {
			fs := cons.PollFetches(wait)
			require.NoError(t, wait.Err(), "%s: records read: %d of %d", topic, total, 3*each)
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition] = append(got[r.Partition], r.Value)
				total++
			})
		}
		for p := range int32(3) {
			require.Len(t, got[p], each, "%s partition %d", topic, p)
			for i, v := range got[p] {
				if want := value(topic, p, i); !bytes.Equal(v, want) {
					t.Fatalf("%s partition %d record %d: got %.20q…, want %.20q…", topic, p, i, v, want)
				}
			}
		}
	}
	const rounds, small, large = 4, 20, 2500 // large: 2.5 MB a partition, in batches of up to 1 MB
	for r := range rounds {
		at := r * (small + large)
		produce(at, small, "kept", "gone")
		produce(at+small, large, "kept", "gone")
	}
	assert.Positive(t, b.buffers.ownedFrames(), "produce frames read into memory of their own")

	_, err = adm.DeleteTopic(ctx, "gone")
	require.NoError(t, err)
	_, err = adm.CreateTopic(ctx, 3, 1, nil, "new")
	require.NoError(t, err)
	produce(0, small, "new")
	produce(small, 2*large, "new")
	check("kept", rounds*(small+large))

	b.Reset()
	given := b.buffers.keptFreeBytes()
	assert.Positive(t, given, "the reset gave the frames back")
	owned := b.buffers.ownedFrames()
	_, err = adm.CreateTopic(ctx, 3, 1, nil, "again")
	require.NoError(t, err)
	produce(0, 2*large, "again")
	assert.Greater(t, b.buffers.ownedFrames(), owned)
	assert.Less(t, b.buffers.keptFreeBytes(), given, "new frames reuse them")
	check("again", 2*large)
}
