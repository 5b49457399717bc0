package e2e_test

// Throughput benchmarks through kgo, run side by side against vastfake and
// kfake so one run shows both:
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./e2e/ | tee new.txt
//	benchstat new.txt

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/internal/testutil"
)

const benchValueSize = 100

// benchBrokers starts each broker under test and returns its address.
var benchBrokers = []struct {
	name  string
	start func(b *testing.B) string
}{
	{"vastfake", func(b *testing.B) string {
		br, err := broker.New()
		require.NoError(b, err)
		b.Cleanup(func() { br.Close() })
		return br.Addr()
	}},
	{"kfake", func(b *testing.B) string {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		require.NoError(b, err)
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}},
}

func benchClient(b *testing.B, addr string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
	}, opts...)...)
	require.NoError(b, err)
	b.Cleanup(cl.Close)
	return cl
}

func benchTopic(b *testing.B, cl *kgo.Client, name string) {
	_, err := kadm.NewClient(cl).CreateTopic(context.Background(), 3, 1, nil, name)
	require.NoError(b, err)
}

// produceN produces n 100-byte records asynchronously and waits for every ack.
func produceN(b *testing.B, cl *kgo.Client, topic string, n int) {
	value := make([]byte, benchValueSize)
	errs := make(chan error, 1)
	for i := 0; i < n; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	require.NoError(b, cl.Flush(context.Background()))
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// BenchmarkProduce measures acknowledged 100-byte records per second from one
// kgo producer into a 3-partition topic.
func BenchmarkProduce(b *testing.B) {
	for _, bb := range benchBrokers {
		b.Run(bb.name, func(b *testing.B) {
			cl := benchClient(b, bb.start(b))
			benchTopic(b, cl, "bench")
			b.SetBytes(benchValueSize)
			b.ResetTimer()
			produceN(b, cl, "bench", b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkFetch measures 100-byte records per second consumed by one kgo
// consumer reading a 3-partition topic from the start.
func BenchmarkFetch(b *testing.B) {
	for _, bb := range benchBrokers {
		b.Run(bb.name, func(b *testing.B) {
			addr := bb.start(b)
			cl := benchClient(b, addr)
			benchTopic(b, cl, "bench")
			produceN(b, cl, "bench", b.N)
			consumer := benchClient(b, addr, kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			b.SetBytes(benchValueSize)
			b.ResetTimer()
			for got := 0; got < b.N; {
				fs := consumer.PollFetches(context.Background())
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkMemoryPerStoredByte measures heap growth per byte of record value
// stored through the wire: b.N MiB of 100-byte values produced by kgo.
//
//	go test -run '^$' -bench MemoryPerStoredByte -benchtime 64x ./e2e/
func BenchmarkMemoryPerStoredByte(b *testing.B) {
	for _, bb := range benchBrokers {
		b.Run(bb.name, func(b *testing.B) {
			addr := bb.start(b)
			cl := benchClient(b, addr, kgo.ProducerLinger(5_000_000))
			benchTopic(b, cl, "mem")
			n := b.N * (1 << 20) / benchValueSize
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			produceN(b, cl, "mem", n)
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			ratio := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n*benchValueSize)
			b.ReportMetric(ratio, "heap-bytes/value-byte")
		})
	}
}

// BenchmarkGroupFirstRecord measures the time from a new group's subscribe
// to its first record: join, sync, offset fetch and the first fetch, with
// one kgo consumer on a 3-partition topic that already holds records.
func BenchmarkGroupFirstRecord(b *testing.B) {
	for _, bb := range benchBrokers {
		b.Run(bb.name, func(b *testing.B) {
			addr := bb.start(b)
			cl := benchClient(b, addr)
			benchTopic(b, cl, "bench")
			produceN(b, cl, "bench", 30)
			i := 0
			for b.Loop() {
				i++
				c, err := kgo.NewClient(
					kgo.SeedBrokers(addr),
					kgo.ConsumerGroup(fmt.Sprintf("g%d", i)),
					kgo.ConsumeTopics("bench"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.Balancers(kgo.RangeBalancer()),
				)
				require.NoError(b, err)
				for {
					fs := c.PollFetches(context.Background())
					if err := fs.Err0(); err != nil {
						b.Fatal(err)
					}
					if fs.NumRecords() > 0 {
						break
					}
				}
				c.Close()
			}
		})
	}
}

// BenchmarkSuiteResetVsFresh runs a test suite's cases one after another,
// each producing 10,000 100-byte records into a new 3-partition topic with
// a new client: on a fresh broker per case (closed after it), or on one
// broker reset between cases, whose log memory the next case reuses. One
// op is one case; a suite of 100:
//
//	go test -run '^$' -bench SuiteResetVsFresh -benchtime 100x -count 6 ./e2e/
func BenchmarkSuiteResetVsFresh(b *testing.B) {
	const records = 10_000
	runCase := func(b *testing.B, addr string) {
		cl := benchClient(b, addr)
		benchTopic(b, cl, "case")
		produceN(b, cl, "case", records)
		cl.Close()
	}
	b.Run("fresh broker per case", func(b *testing.B) {
		b.SetBytes(records * benchValueSize)
		reportCPU(b)
		for b.Loop() {
			br, err := broker.New()
			require.NoError(b, err)
			runCase(b, br.Addr())
			br.Close()
		}
	})
	b.Run("one broker, reset between cases", func(b *testing.B) {
		br, err := broker.New()
		require.NoError(b, err)
		b.Cleanup(func() { br.Close() })
		b.SetBytes(records * benchValueSize)
		reportCPU(b)
		for b.Loop() {
			runCase(b, br.Addr())
			br.Reset()
		}
	})
}

// reportCPU reports, when the benchmark ends, the CPU time (user and
// system) the process spent per op since it was called, client included:
// unlike ns/op it does not count waiting for a busy machine's cores.
func reportCPU(b *testing.B) {
	start, ok := testutil.ProcessCPU()
	if !ok {
		return // not measurable on this platform
	}
	b.Cleanup(func() {
		if end, _ := testutil.ProcessCPU(); b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

// BenchmarkTransaction is one transaction per iteration: 100 records to a
// three-partition topic (kgo's default partitioner), then a commit, which
// writes a marker in each partition written, against vastfake's kafka
// profile and kfake. The client keeps kgo's default linger: with linger 0,
// franz-go may skip a commit's EndTxn (see fixtures.TransactionalClient).
func BenchmarkTransaction(b *testing.B) {
	starts := map[string]func(b *testing.B) string{
		"vastfake": func(b *testing.B) string {
			br, err := broker.New(broker.WithProfile("kafka"))
			require.NoError(b, err)
			b.Cleanup(func() { br.Close() })
			return br.Addr()
		},
		"kfake": benchBrokers[1].start,
	}
	for _, name := range []string{"vastfake", "kfake"} {
		b.Run(name, func(b *testing.B) {
			addr := starts[name](b)
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("bench"),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			require.NoError(b, err)
			b.Cleanup(cl.Close)
			benchTopic(b, cl, "bench")
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				require.NoError(b, cl.BeginTransaction())
				produceN(b, cl, "bench", 100)
				require.NoError(b, cl.EndTransaction(ctx, kgo.TryCommit))
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txns/s")
		})
	}
}
