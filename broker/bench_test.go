package broker

// Benchmarks of the broker alone: requests encoded once with kmsg, sent over
// one TCP connection, answers read into a reused buffer, so that no client
// library's cost is in the numbers.
//
//	go test -run '^$' -bench Request -benchmem -count 10 ./broker/ | tee new.txt
//	benchstat old.txt new.txt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/testutil"
	"github.com/vastfake/vastfake/log"
)

// benchBatch encodes a v2 batch of n records with 100-byte values, as a
// producer without compression or idempotence sends it.
func benchBatch(n int) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = 1_700_000_000_000, 1_700_000_000_000
	rb.LastOffsetDelta, rb.NumRecords = int32(n-1), int32(n)
	value := make([]byte, 100)
	for i := 0; i < n; i++ {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = value
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero Length encodes as one byte
		rb.Records = r.AppendTo(rb.Records)
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// benchBroker starts a broker holding three-partition topics of the given
// names.
func benchBroker(b *testing.B, topics ...string) *Broker {
	return benchBrokerWith(b, nil, topics...)
}

// benchBrokerWith is benchBroker with more options.
func benchBrokerWith(b *testing.B, opts []Option, topics ...string) *Broker {
	var specs []TopicSpec
	for _, name := range topics {
		specs = append(specs, TopicSpec{Name: name, Partitions: 3})
	}
	// Empty fetches are answered at once: the benchmarks measure the
	// broker's work per request, not the pacing of an idle consumer.
	br, err := New(append([]Option{WithTopics(specs...), WithEmptyFetchDelay(0)}, opts...)...)
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	return br
}

// dialBench opens a raw connection to br and returns a function that sends
// one encoded request and reads its answer, returning the answer's size.
func dialBench(b *testing.B, br *Broker) func(frame []byte) int {
	nc, err := net.Dial("tcp", br.Addr())
	require.NoError(b, err)
	b.Cleanup(func() { nc.Close() })
	return benchRoundTrip(b, nc)
}

// benchRoundTrip returns a function that sends one encoded request on nc
// and reads its answer, returning the answer's size.
func benchRoundTrip(b *testing.B, nc net.Conn) func(frame []byte) int {
	var answer []byte
	return func(frame []byte) int {
		if _, err := nc.Write(frame); err != nil {
			b.Error(err)
			return 0
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Error(err)
			return 0
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(answer) < n {
			answer = make([]byte, n)
		}
		if _, err := io.ReadFull(nc, answer[:n]); err != nil {
			b.Error(err)
			return 0
		}
		return n
	}
}

// cpuMeter adds up the process's CPU time over a benchmark's round trips
// and reports it per op as cpu-ns/op: the client's and the broker's work,
// without the time spent waiting for a core, so that before/after
// comparisons hold on a machine shared with other work, where ns/op swings
// with the load.
type cpuMeter struct {
	total, start time.Duration
	ok           bool
}

func (m *cpuMeter) begin() { m.start, m.ok = testutil.ProcessCPU() }

func (m *cpuMeter) end() {
	if now, ok := testutil.ProcessCPU(); ok && m.ok {
		m.total += now - m.start
	}
}

func (m *cpuMeter) report(b *testing.B) {
	if m.ok && b.N > 0 {
		b.ReportMetric(float64(m.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// produceFrame encodes a Produce request, acks=all, of one batch of that
// many records to each of topic's three partitions.
func produceFrame(topic string, records int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, benchBatch(records)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
}

// BenchmarkProduceRequest answers a Produce of three partitions, each one
// batch of 1,000 100-byte records (about 112 KB per batch), with acks=all.
func BenchmarkProduceRequest(b *testing.B) {
	roundTrip := dialBench(b, benchBroker(b, "bench"))
	frame := produceFrame("bench", 1000)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	var cpu cpuMeter
	for b.Loop() {
		cpu.begin()
		roundTrip(frame)
		cpu.end()
	}
	cpu.report(b)
}

// BenchmarkProduceRequestIdempotent is BenchmarkProduceRequest from an
// idempotent producer (kafka profile): every batch carries producer id 1,
// epoch 0 and the next sequence of its partition, so the broker checks and
// records sequence numbers on every append. Writing the sequences into the
// frame (a CRC over each batch) is part of every op, before and after.
func BenchmarkProduceRequestIdempotent(b *testing.B) { benchProduceIdempotent(b, 1000) }

// BenchmarkProduceRequestIdempotentSmall is BenchmarkProduceRequestIdempotent
// with batches of 10 records, where the fixed cost per batch, sequence
// checks included, weighs most.
func BenchmarkProduceRequestIdempotentSmall(b *testing.B) { benchProduceIdempotent(b, 10) }

func benchProduceIdempotent(b *testing.B, records int) {
	br := idempotentBroker(b)
	roundTrip := dialBench(b, br)
	frame, setSequence := idempotentFrame(b, records)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	seq := int32(0)
	var cpu cpuMeter
	for b.Loop() {
		cpu.begin()
		setSequence(seq)
		seq += int32(records)
		roundTrip(frame)
		cpu.end()
	}
	cpu.report(b)
	requireStoredOnce(b, br, seq)
}

// BenchmarkProduceHandlerIdempotentSmall is
// BenchmarkProduceRequestIdempotentSmall without the socket: one
// connection's handleOne reads the frame from memory and writes its answer
// nowhere, so the numbers are the broker's own cost of the request, with
// less of the noise a loaded machine adds to socket round trips.
func BenchmarkProduceHandlerIdempotentSmall(b *testing.B) {
	const records = 10
	br := idempotentBroker(b)
	frame, setSequence := idempotentFrame(b, records)
	c := newClientConn(br, br.nodes[0], &loopConn{frame: frame}) // reads frame as setSequence rewrites it
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	seq := int32(0)
	var cpu cpuMeter
	cpu.begin()
	for b.Loop() {
		setSequence(seq)
		seq += records
		if err := handleNext(c); err != nil {
			b.Fatal(err)
		}
	}
	cpu.end()
	cpu.report(b)
	requireStoredOnce(b, br, seq)
}

// idempotentBroker starts a kafka-profile broker with the three-partition
// topic "bench".
func idempotentBroker(b *testing.B) *Broker {
	br, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "bench", Partitions: 3}))
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	return br
}

// idempotentFrame returns produceFrame's request with every batch from
// producer id 1, epoch 0, and a function that rewrites the three batches'
// base sequence (and CRC) in place.
func idempotentFrame(b *testing.B, records int) ([]byte, func(seq int32)) {
	batch := benchBatch(records)
	binary.BigEndian.PutUint64(batch[43:], 1) // producer id
	binary.BigEndian.PutUint16(batch[51:], 0) // epoch
	frame := produceFrame("bench", records)
	// Each partition's batch sits in the frame as encoded; find all three.
	plain := benchBatch(records)
	var at []int
	for from := 0; len(at) < 3; {
		i := bytes.Index(frame[from:], plain)
		require.GreaterOrEqual(b, i, 0)
		at = append(at, from+i)
		from += i + len(plain)
	}
	crcTable := crc32.MakeTable(crc32.Castagnoli)
	return frame, func(seq int32) {
		binary.BigEndian.PutUint32(batch[53:], uint32(seq))
		binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crcTable))
		for _, i := range at {
			copy(frame[i:], batch)
		}
	}
}

// requireStoredOnce checks that every batch was stored once, so that the
// benchmark measured appends, not refusals.
func requireStoredOnce(b *testing.B, br *Broker, records int32) {
	for _, p := range br.data.get("bench").partitions {
		require.Equal(b, int64(records), p.HighWatermark())
	}
}

// BenchmarkProduceNewConnection is BenchmarkProduceRequest from a new
// connection every ten requests, as a test suite's producers connect, so
// that what a new connection costs (its frame buffer) is in the numbers.
// Every batch is stored, so run it a fixed number of times:
//
//	go test -run '^$' -bench ProduceNewConnection -benchtime 1000x -count 6 ./broker/
func BenchmarkProduceNewConnection(b *testing.B) {
	br := benchBroker(b, "bench")
	frame := produceFrame("bench", 1000)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	var cpu cpuMeter
	cpu.begin()
	var nc net.Conn
	var roundTrip func([]byte) int
	i := 0
	for b.Loop() {
		if i%10 == 0 {
			if nc != nil {
				nc.Close()
			}
			var err error
			nc, err = net.Dial("tcp", br.Addr())
			require.NoError(b, err)
			roundTrip = benchRoundTrip(b, nc)
		}
		i++
		roundTrip(frame)
	}
	cpu.end()
	cpu.report(b)
	nc.Close()
}

// BenchmarkFetchRequest answers a Fetch of 1 MiB from each of three
// partitions holding 10 MB each, from the middle, where the log is in
// full-size chunks as in a long-running test, so every answer carries
// about 3 MiB of stored batches. The batches are under 64 KiB, so the log
// copies them into its chunks rather than keeping them in their requests'
// frames, whose reads return a batch at a time.
func BenchmarkFetchRequest(b *testing.B) {
	roundTrip := dialBench(b, benchBroker(b, "bench"))
	produce := produceFrame("bench", 500)
	for range 180 {
		roundTrip(produce)
	}
	req := fetchRequest("bench", 3, 40_000, 1<<20)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	n := roundTrip(frame)
	require.Greater(b, n, 3<<20-3*120_000, "each partition answers close to its 1 MiB")
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(frame)
	}
}

// BenchmarkProduceRequestParallel is BenchmarkProduceRequest from several
// connections at once, each producing to its own topic, as parallel tests
// sharing one broker do.
func BenchmarkProduceRequestParallel(b *testing.B) {
	const conns = 8
	topics := make([]string, conns)
	for i := range topics {
		topics[i] = fmt.Sprintf("bench-%d", i)
	}
	br := benchBroker(b, topics...)
	var next atomic.Int32
	b.SetParallelism(conns / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)-1) % conns
		roundTrip := dialBench(b, br)
		frame := produceFrame(topics[i], 1000)
		for pb.Next() {
			roundTrip(frame)
		}
	})
}

// emptyFetchFrame encodes emptyFetchRequest.
func emptyFetchFrame(topic string, partitions int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, emptyFetchRequest(topic, partitions), 1)
}

// fetchRequest is a v12 Fetch of partitions 0 to partitions-1 of topic from
// offset, at most partitionMax bytes each and 50 MiB in all, answered at
// once; callers change what their workload needs.
func fetchRequest(topic string, partitions int32, offset int64, partitionMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 0, 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < partitions; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, partitionMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// emptyFetchRequest is the Fetch an idle consumer sends in the VAST
// profile: every partition of an empty topic from offset 0, so the answer
// carries no records.
func emptyFetchRequest(topic string, partitions int32) *kmsg.FetchRequest {
	req := fetchRequest(topic, partitions, 0, 1<<20)
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	return req
}

// BenchmarkEmptyFetchRequest answers the empty Fetch an idle VAST-profile
// consumer sends in a loop (NoDelayedFetch, with the empty fetch delay
// off): three empty partitions, nothing to return. It measures the broker's
// cost per answer, request log included.
func BenchmarkEmptyFetchRequest(b *testing.B) {
	roundTrip := dialBench(b, benchBroker(b, "bench"))
	frame := emptyFetchFrame("bench", 3)
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(frame)
	}
}

// BenchmarkEmptyFetchHandler is BenchmarkEmptyFetchRequest without the
// socket: one connection's handleOne reads the frame from memory and
// writes its answer nowhere, so the numbers are the broker's own cost of
// an idle consumer's spin (decode, handler, request log, encode).
func BenchmarkEmptyFetchHandler(b *testing.B) {
	br := benchBroker(b, "bench")
	c := newClientConn(br, br.nodes[0], &loopConn{frame: emptyFetchFrame("bench", 3)})
	b.ReportAllocs()
	for b.Loop() {
		if err := handleNext(c); err != nil {
			b.Fatal(err)
		}
	}
}

// loopConn is a net.Conn that reads the same frame over and over and
// discards what is written to it.
type loopConn struct {
	net.Conn
	frame []byte
	off   int
}

func (l *loopConn) Read(p []byte) (int, error) {
	n := copy(p, l.frame[l.off:])
	l.off = (l.off + n) % len(l.frame)
	return n, nil
}

func (l *loopConn) Write(p []byte) (int, error) { return len(p), nil }

// Deadlines never expire: the frame is always there to read.
func (l *loopConn) SetDeadline(time.Time) error      { return nil }
func (l *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (l *loopConn) SetWriteDeadline(time.Time) error { return nil }
func (l *loopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// BenchmarkAuditCost compares the produce and fetch paths in the kafka
// profile and the audit profile on the same requests, without the socket
// (handleOne on a loopConn: decode, handler, request log, encode): small and
// large produces, produces whose batches carry a producer id (a
// NoIdempotence finding per partition in audit mode, accepted by both), and
// the 3 MiB fetch of BenchmarkFetchRequest.
//
//	go test -run '^$' -bench AuditCost -benchmem -count 10 ./broker/ | tee audit.txt
//	benchstat -col /profile audit.txt
func BenchmarkAuditCost(b *testing.B) {
	idempotent := func(records int) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bench"
		for p := int32(0); p < 3; p++ {
			batch := benchBatch(records)
			binary.BigEndian.PutUint64(batch[43:], 7) // producer id
			binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	}
	fetch := fetchRequest("bench", 3, 40_000, 1<<20)
	for _, w := range []struct {
		name    string
		frame   []byte
		prefill bool
	}{
		{"produce=10", produceFrame("bench", 10), false},
		{"produce=1000", produceFrame("bench", 1000), false},
		{"produce-idempotent=10", idempotent(10), false},
		{"fetch", kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, fetch, 1), true},
	} {
		for _, profile := range []string{"kafka", "audit"} {
			b.Run(w.name+"/profile="+profile, func(b *testing.B) {
				br, err := New(WithProfile(profile), WithTopics(TopicSpec{Name: "bench", Partitions: 3}))
				require.NoError(b, err)
				b.Cleanup(func() { br.Close() })
				if w.prefill {
					fill := newClientConn(br, br.nodes[0], &loopConn{frame: produceFrame("bench", 1000)})
					for range 90 {
						require.NoError(b, handleNext(fill))
					}
				}
				c := newClientConn(br, br.nodes[0], &loopConn{frame: w.frame})
				b.SetBytes(int64(len(w.frame)))
				b.ReportAllocs()
				start, cpuOK := testutil.ProcessCPU()
				for b.Loop() {
					if err := handleNext(c); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time, unlike sec/op, does not count the time other
				// processes of a busy machine held the core.
				if end, ok := testutil.ProcessCPU(); cpuOK && ok {
					b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// benchKeyedBatch encodes a v2 batch of n records keyed key-00000 to
// key-09999 in turn from record first on, with 40-byte values.
func benchKeyedBatch(first, n int) []byte {
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = 1_700_000_000_000, 1_700_000_000_000
	rb.LastOffsetDelta, rb.NumRecords = int32(n-1), int32(n)
	for i := 0; i < n; i++ {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key = fmt.Appendf(nil, "key-%05d", (first+i)%10_000)
		r.Value = fmt.Appendf(nil, "value-%09d-0123456789abcdef0123456789", first+i)
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		rb.Records = r.AppendTo(rb.Records)
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// BenchmarkRoundTripsDuringCompaction answers a Produce (one batch of 10
// records to each of three partitions) and a Fetch (64 KiB from each) on
// one topic, and reports the 99th percentile and the worst of those round
// trips; in the compacting case another goroutine meanwhile keeps filling
// a partition of a compacted topic with 1M records over 10k keys (10,000
// batches of 100) and compacting it, and the count of compactions is
// reported. The control case, busy, runs the same loop on a log outside
// the broker: the same CPU and memory traffic, no lock the broker shares.
// Compaction takes no broker-wide lock, so compacting should cost the
// round trips what busy does, and no more.
func BenchmarkRoundTripsDuringCompaction(b *testing.B) {
	batches := make([]log.Batch, 10_000)
	for i := range batches {
		var err error
		batches[i], err = log.ParseBatch(benchKeyedBatch(i*100, 100))
		require.NoError(b, err)
	}
	for _, name := range []string{"idle", "busy", "compacting"} {
		b.Run(name, func(b *testing.B) {
			br, err := New(WithTopics(TopicSpec{Name: "bench", Partitions: 3},
				TopicSpec{Name: "state", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}))
			require.NoError(b, err)
			b.Cleanup(func() { br.Close() })
			roundTrip := dialBench(b, br)
			produce := produceFrame("bench", 10)
			fetch := fetchRequest("bench", 3, 0, 64<<10)
			fetchFrame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, fetch, 2)

			stop, done := make(chan struct{}), make(chan struct{})
			var compactions atomic.Int64
			if name != "idle" {
				part := br.data.get("state").partitions[0]
				if name == "busy" {
					part = log.NewPartition()
				}
				go func() {
					defer close(done)
					for {
						for _, batch := range batches {
							part.Append(batch, log.AppendOptions{Now: time.Now()})
						}
						if _, err := part.Compact(log.CompactOptions{Now: time.Now()}); err != nil {
							b.Error(err)
							return
						}
						compactions.Add(1)
						select {
						case <-stop:
							return
						default:
						}
					}
				}()
			} else {
				close(done)
			}
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				roundTrip(produce)
				roundTrip(fetchFrame)
				took = append(took, time.Since(start))
			}
			close(stop)
			<-done
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(took[len(took)-1].Nanoseconds()), "max-ns")
			if name != "idle" {
				b.ReportMetric(float64(compactions.Load()), "compactions")
			}
		})
	}
}

// gzipBombFrame encodes a Produce of one gzip batch holding one record
// whose value is size zero bytes: 120 MiB fits in about 122 KB.
func gzipBombFrame(topic string, size int) []byte {
	rec := kmsg.NewRecord()
	rec.Value = make([]byte, size)
	raw := rec.AppendTo(nil)
	raw = append(binary.AppendVarint(nil, int64(len(raw)-1)), raw[1:]...) // a zero Length encodes as one byte
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(raw)
	_ = zw.Close()

	rb := kmsg.NewRecordBatch()
	rb.Magic, rb.Attributes = 2, 1 // gzip
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, rb.PartitionLeaderEpoch = -1, -1, -1, -1
	rb.FirstTimestamp, rb.MaxTimestamp = 1_700_000_000_000, 1_700_000_000_000
	rb.NumRecords, rb.Records = 1, zipped.Bytes()
	batch := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))

	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("bomb")).AppendRequest(nil, req, 1)
}

// BenchmarkRoundTripDuringBombs measures one client's round trip, an
// uncompressed Produce of one record per partition and a Fetch of the
// first batches (kafka profile), while other connections send, over and
// over, gzip batches each holding one 120 MiB record (122 KB on the
// wire): alone, with four such connections under the default
// decompression budget, and with four turns so that all four are
// validated at once.
//
//	go test -run '^$' -bench RoundTripDuringBombs -benchtime 100x -count 6 ./broker/
func BenchmarkRoundTripDuringBombs(b *testing.B) {
	bomb := gzipBombFrame("bombs", 120<<20)
	cases := []struct {
		name         string
		bombs, turns int
	}{
		{"idle", 0, DefaultDecompressions()},
		{"4 bombs", 4, DefaultDecompressions()},
		{"4 bombs, 4 turns", 4, 4},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			br, err := New(WithProfile("kafka"), WithDecompressions(c.turns),
				WithTopics(TopicSpec{Name: "bench", Partitions: 3}, TopicSpec{Name: "bombs", Partitions: 1}))
			require.NoError(b, err)
			b.Cleanup(func() { br.Close() })
			stop := make(chan struct{})
			var bombing sync.WaitGroup
			for range c.bombs {
				send := dialBench(b, br)
				bombing.Add(1)
				go func() {
					defer bombing.Done()
					for {
						select {
						case <-stop:
							return
						default:
							send(bomb)
						}
					}
				}()
			}
			roundTrip := dialBench(b, br)
			produce := produceFrame("bench", 1)
			fetch := fetchRequest("bench", 3, 0, 1<<10)
			fetch.MaxBytes = 1 << 20
			fetchFrame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, fetch, 2)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				roundTrip(produce)
				roundTrip(fetchFrame)
			}
			b.StopTimer()
			close(stop)
			bombing.Wait()
			runtime.ReadMemStats(&after)
			// The heap's address space only grows: its growth is the
			// most the heap held while the bombs were validated.
			b.ReportMetric(max(float64(after.HeapSys)-float64(before.HeapSys), 0)/(1<<20), "heap-growth-MiB")
		})
	}
}

// BenchmarkFetchDetail measures what WithFetchDetail costs: the same empty
// fetch handler and 3 MiB fetch round trip as BenchmarkEmptyFetchHandler
// and BenchmarkFetchRequest, with the request log keeping every
// partition's detail and without.
func BenchmarkFetchDetail(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("empty-handler/detail=%v", on), func(b *testing.B) {
			br := benchBrokerWith(b, []Option{WithFetchDetail(on)}, "bench")
			c := newClientConn(br, br.nodes[0], &loopConn{frame: emptyFetchFrame("bench", 3)})
			b.ReportAllocs()
			for b.Loop() {
				if err := handleNext(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("3MiB-fetch/detail=%v", on), func(b *testing.B) {
			roundTrip := dialBench(b, benchBrokerWith(b, []Option{WithFetchDetail(on)}, "bench"))
			produce := produceFrame("bench", 500)
			for range 180 {
				roundTrip(produce)
			}
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, fetchRequest("bench", 3, 40_000, 1<<20), 1)
			b.SetBytes(int64(roundTrip(frame)))
			b.ReportAllocs()
			for b.Loop() {
				roundTrip(frame)
			}
		})
	}
}

// BenchmarkResetManyTopics is Reset of a broker holding 10,000 topics of
// one partition each (the topics are created outside the timer): each
// deleted topic is read again by the coordinator alone, not with every
// topic left, so it costs the topics, not their square (41 s before).
func BenchmarkResetManyTopics(b *testing.B) {
	specs := make([]TopicSpec, 10_000)
	for i := range specs {
		specs[i] = TopicSpec{Name: fmt.Sprintf("t%05d", i), Partitions: 1}
	}
	for range b.N {
		b.StopTimer()
		br, err := New(WithProfile("kafka"), WithTopics(specs...))
		require.NoError(b, err)
		b.StartTimer()
		br.Reset()
		b.StopTimer()
		require.NoError(b, br.Close())
		b.StartTimer()
	}
}

// handleNext serves a connection's next request as serve does: it waits
// for the request's first bytes (taking a read buffer), then handles it.
func handleNext(c *clientConn) error {
	if err := c.awaitRequest(); err != nil {
		return err
	}
	return c.handleOne()
}

// BenchmarkOffsetCommitOnePartition answers an OffsetCommit of one
// partition (kafka profile), cycling over the 400 partitions of a topic for
// one group, as a consumer committing after each partition's records does:
// each commit is a batch of its own in __consumer_offsets, whose
// compaction (and merging of those batches) is part of the cost.
func BenchmarkOffsetCommitOnePartition(b *testing.B) {
	br, err := New(WithProfile("kafka"), WithTopics(TopicSpec{Name: "orders", Partitions: 400}))
	require.NoError(b, err)
	b.Cleanup(func() { br.Close() })
	roundTrip := dialBench(b, br)
	frames := make([][]byte, 400)
	for p := range frames {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8)
		req.Group, req.Generation = "billing", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), int64(1000+p), 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		frames[p] = kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	}
	b.ReportAllocs()
	var cpu cpuMeter
	i := 0
	for b.Loop() {
		cpu.begin()
		roundTrip(frames[i%len(frames)])
		cpu.end()
		i++
	}
	cpu.report(b)
}
