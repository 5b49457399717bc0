package main

// The process workloads: every broker runs in a process of its own (the
// vastfake binary; kfake and the floor in `vastbench -serve`), the client in
// a fresh vastbench child, and the broker process's own CPU time and
// resident memory are read from /proc around each phase.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/cmd/vastbench/internal/bench"
)

// Process brokers: vastfakeNoDelay is the binary with -empty-fetch-delay 0,
// answering empty fetches at once as VAST does, measured for idle cost.
const (
	vastfakeNoDelay = "vastfake-nodelay"
	floorName       = "floor"
)

// startProcess starts the named broker in a process of its own. bin is the
// vastfake binary; extra are more of its flags.
func startProcess(name, bin string, extra ...string) (*bench.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	switch name {
	case "vastfake":
		cmd = exec.Command(bin, "-listen", "127.0.0.1:0", "-log-level", "error", "-brokers", strconv.Itoa(bench.VastfakeBrokers))
	case vastfakeNoDelay:
		cmd = exec.Command(bin, "-listen", "127.0.0.1:0", "-log-level", "error", "-empty-fetch-delay", "0", "-brokers", strconv.Itoa(bench.VastfakeBrokers))
	case "kfake", floorName:
		cmd = exec.Command(self, "-serve", name)
	default:
		return nil, fmt.Errorf("unknown broker %q", name)
	}
	cmd.Args = append(cmd.Args, extra...)
	return bench.StartProcess(cmd)
}

// processBroker is the named process broker as a bench.Broker, for the
// workloads written against one.
func processBroker(name, bin string) bench.Broker {
	return bench.Broker{Name: name, Start: func() (string, func(), error) {
		p, err := startProcess(name, bin)
		if err != nil {
			return "", nil, err
		}
		return p.Addr, func() { p.Stop() }, nil
	}}
}

// serve runs kfake or the floor in this process for the process
// workloads: it prints the address and serves until SIGTERM or SIGINT.
func serve(name string) error {
	var stop func()
	switch name {
	case "kfake":
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return err
		}
		fmt.Println(c.ListenAddrs()[0])
		stop = c.Close
	case floorName:
		f, err := bench.StartFloor()
		if err != nil {
			return err
		}
		fmt.Println(f.Addr())
		stop = f.Close
	default:
		return fmt.Errorf("unknown broker %q", name)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	stop()
	return nil
}

// session is the main process workload on a fresh broker process: create a
// 3-partition topic, produce n records with a new producer client, read
// them with a new group consumer, time a new group's first record and a
// one-record produce's round trip, then produce memN more records with a
// new producer and take the broker's resident-set growth since the topic
// was created, per value byte and per record batch byte sent, and over the
// memN records alone. Broker CPU is per 100,000 records.
func session(name, bin string, n, memN int) (map[string]float64, error) {
	p, err := startProcess(name, bin)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Stop()
		}
	}()
	res := map[string]float64{"ready_ms": ms(p.Ready)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := bench.Client(p.Addr)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := bench.CreateTopic(ctx, admin, "bench", 3); err != nil {
		return nil, err
	}
	base, err := p.Usage()
	if err != nil {
		return nil, err
	}
	stored := 0
	var sent bench.BatchBytes
	per100k := func(d time.Duration, records int) float64 { return ms(d) * 100_000 / float64(records) }
	// phase runs fn and records its rate and the broker's and this
	// process's CPU time under prefix.
	phase := func(prefix string, records int, fn func() error) error {
		u0, c0, t0 := usage(p), bench.SelfCPU(), time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		el := time.Since(t0)
		u1, c1 := usage(p), bench.SelfCPU()
		res[prefix+"_rate"] = float64(records) / el.Seconds()
		res[prefix+"_broker_cpu"] = per100k(u1.CPU-u0.CPU, records)
		res[prefix+"_client_cpu"] = per100k(c1-c0, records)
		return nil
	}
	produce := func(records int) func() error {
		return func() error {
			cl, err := bench.Client(p.Addr, kgo.WithHooks(&sent))
			if err != nil {
				return err
			}
			defer cl.Close()
			stored += records
			return bench.Produce(ctx, cl, "bench", records)
		}
	}
	if err := phase("produce", n, produce(n)); err != nil {
		return nil, err
	}
	if err := phase("consume", n, func() error { return bench.ConsumeGroup(ctx, p.Addr, "consume", "bench", n) }); err != nil {
		return nil, err
	}
	var firsts []float64
	for i := 0; i < 5; i++ {
		d, err := bench.FirstRecord(ctx, p.Addr, fmt.Sprintf("first-%d", i), "bench")
		if err != nil {
			return nil, fmt.Errorf("first record: %w", err)
		}
		firsts = append(firsts, ms(d))
	}
	res["first_ms"] = median(firsts)
	rtt, err := produceRoundTrip(ctx, p.Addr, &sent)
	if err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	res["rtt_us"] = rtt
	stored += roundTrips + 5
	before, sentBefore := usage(p), sent.Load()
	if memN > 0 {
		if err := produce(memN)(); err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
	}
	end := usage(p)
	res["rss_per_byte"] = float64(end.RSS-base.RSS) / float64(stored*bench.ValueSize)
	res["rss_per_batch_byte"] = float64(end.RSS-base.RSS) / float64(sent.Load())
	if memN > 0 {
		// What each stored byte costs once the broker's buffers exist: the
		// growth over the last memN records alone.
		res["rss_marginal_per_batch_byte"] = float64(end.RSS-before.RSS) / float64(sent.Load()-sentBefore)
	}
	res["rss_start_mib"] = float64(base.RSS) / (1 << 20)
	stopped = true
	res["close_ms"] = ms(p.Stop())
	return res, nil
}

// roundTrips is how many one-record produces produceRoundTrip times.
const roundTrips = 100

// produceRoundTrip returns the median round trip of a one-record
// synchronous produce, in microseconds, on a new client after five
// untimed ones. sent counts the batches.
func produceRoundTrip(ctx context.Context, addr string, sent *bench.BatchBytes) (float64, error) {
	cl, err := bench.Client(addr, kgo.WithHooks(sent))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	value := make([]byte, bench.ValueSize)
	var us []float64
	for i := 0; i < roundTrips+5; i++ {
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bench", Value: value}).FirstErr(); err != nil {
			return 0, err
		}
		if i >= 5 {
			us = append(us, float64(time.Since(start).Nanoseconds())/1000)
		}
	}
	return median(us), nil
}

// idle starts four group consumers, each in its own group, on an empty
// 3-partition topic, and once all four are assigned measures for window
// how much of a core the broker process and this (client) process use.
// Then it times one Fetch with fetch.wait.max.ms 4000 on the empty topic.
func idle(name, bin string, window time.Duration) (map[string]float64, error) {
	p, err := startProcess(name, bin)
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := bench.Client(p.Addr)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := bench.CreateTopic(ctx, admin, "idle", 3); err != nil {
		return nil, err
	}
	const consumers = 4
	assigned := make(chan struct{}, consumers)
	pollCtx, stopPolling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopPolling(); wg.Wait() }()
	for i := 0; i < consumers; i++ {
		once := sync.Once{}
		c, err := bench.Client(p.Addr, kgo.ConsumerGroup(fmt.Sprintf("idle-%d", i)), kgo.ConsumeTopics("idle"),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				once.Do(func() { assigned <- struct{}{} })
			}))
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for pollCtx.Err() == nil {
				c.PollFetches(pollCtx)
			}
		}()
	}
	for i := 0; i < consumers; i++ {
		select {
		case <-assigned:
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d idle consumers assigned", i, consumers)
		}
	}
	time.Sleep(window / 4) // let the consumers settle into fetching
	u0, c0, t0 := usage(p), bench.SelfCPU(), time.Now()
	time.Sleep(window)
	el := time.Since(t0)
	u1, c1 := usage(p), bench.SelfCPU()
	res := map[string]float64{
		"idle_broker_pct": 100 * (u1.CPU - u0.CPU).Seconds() / el.Seconds(),
		"idle_client_pct": 100 * (c1 - c0).Seconds() / el.Seconds(),
	}
	stopPolling()
	wg.Wait()
	d, err := emptyFetch(ctx, admin, "idle", 4000)
	if err != nil {
		return nil, fmt.Errorf("empty fetch: %w", err)
	}
	res["empty_fetch_ms"] = ms(d)
	return res, nil
}

// emptyFetch times one Fetch of partition 0 of an empty topic with
// fetch.wait.max.ms maxWait.
func emptyFetch(ctx context.Context, cl *kgo.Client, topic string, maxWait int32) (time.Duration, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = maxWait, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	el := time.Since(start)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		return 0, fmt.Errorf("want one empty partition, got %+v", resp.Topics)
	}
	return el, nil
}

func usage(p *bench.Process) bench.Usage {
	u, err := p.Usage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the broker's usage:", err)
	}
	return u
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	xs = append([]float64(nil), xs...)
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
