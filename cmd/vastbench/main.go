// Command vastbench runs the same workloads against vastfake and kfake
// (franz-go's fake cluster) in one run and prints the results side by side
// with their ratios. The workload is kgo with 100-byte records, three
// partitions, no compression and no idempotence.
//
//	go run ./cmd/vastbench                 # everything, five rounds, about a minute and a half
//	go run ./cmd/vastbench -rounds 9 -only produce,consume
//
// Every workload runs in a fresh child process per broker, so neither broker
// starts on a heap the other grew. A workload runs for several rounds, each
// running both brokers in alternating order, and the result is the median
// over rounds: on a small shared machine one run of either broker can be
// off by a third. Memory is the broker process's own
// resident-set growth per byte of record value stored, with the producing
// client in another process.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/internal/bench"
	"github.com/vastfake/vastfake/rules"
)

func main() {
	n := flag.Int("n", 500_000, "records per throughput run")
	only := flag.String("only", "", "comma-separated workloads to run: produce,consume,first,startclose,memory,rebalance,partitions,connections")
	childWorkload := flag.String("child", "", "internal: run one workload for -broker in this process and print its value")
	childBroker := flag.String("broker", "", "internal: the broker for -child")
	serveBroker := flag.String("serve", "", "internal: run this broker for the memory workload")
	rounds := flag.Int("rounds", 5, "rounds per workload; each round runs every broker once, in alternating order")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of each child run to `prefix`-workload-broker.pprof")
	flag.Parse()
	if *serveBroker != "" {
		if err := serve(*serveBroker); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	type workload struct {
		name, unit   string
		higherBetter bool
		run          func(b bench.Broker) (float64, error)
	}
	workloads := []workload{
		{"produce", "records/s", true, func(b bench.Broker) (float64, error) { return produceRate(b, *n) }},
		{"consume", "records/s (group, median of 5 groups)", true, func(b bench.Broker) (float64, error) { return consumeRate(b, *n) }},
		{"first", "ms new group → first record (median of 20)", false, firstRecord},
		{"startclose", "µs in-process start+close (median of 200)", false, startClose},
		{"memory", "resident bytes per stored value byte", false, func(b bench.Broker) (float64, error) { return memory(b, *n) }},
		{"rebalance", fmt.Sprintf("ms %d groups × 4 members to assigned", vastGroups), false, rebalance},
		{"partitions", fmt.Sprintf("ms %d-partition topic create+describe+fetch", vastPartitions), false, partitions},
		{"connections", "ms 1,000 connections opened and answered", false, connections},
	}
	if *childWorkload != "" {
		for _, w := range workloads {
			for _, b := range bench.Brokers {
				if w.name == *childWorkload && b.Name == *childBroker {
					if *cpuProfile != "" {
						stop, err := startCPUProfile(*cpuProfile)
						if err != nil {
							fmt.Fprintln(os.Stderr, err)
							os.Exit(1)
						}
						defer stop()
					}
					v, err := w.run(b)
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					fmt.Println(v)
					return
				}
			}
		}
		fmt.Fprintf(os.Stderr, "unknown workload %q or broker %q\n", *childWorkload, *childBroker)
		os.Exit(2)
	}
	want := func(name string) bool { return *only == "" || strings.Contains(","+*only+",", ","+name+",") }
	failed := false // any run of any workload; the exit status says so
	fmt.Printf("%d rounds; each value is the median over rounds, ratio is the median of the rounds' ratios [lowest–highest]\n", *rounds)
	fmt.Printf("%-58s %12s %12s %8s %s\n", "workload", "vastfake", "kfake", "ratio", "[range]")
	for _, w := range workloads {
		if !want(w.name) {
			continue
		}
		vals := make([][]float64, len(bench.Brokers))
		var ratios []float64
		for round := 0; round < *rounds; round++ {
			got := make([]float64, len(bench.Brokers))
			for i := range bench.Brokers {
				// Alternate which broker goes first, so that drift in the
				// machine's speed over a run does not favour either.
				if round%2 == 1 {
					i = len(bench.Brokers) - 1 - i
				}
				b := bench.Brokers[i]
				// Each run gets a fresh process: a broker measured second
				// in one process would start on a heap the first one grew.
				var v float64
				var err error
				if w.name == "memory" {
					v, err = memory(b, *n) // the broker runs in a child of its own
				} else {
					v, err = inChild(w.name, b.Name, *n, *cpuProfile)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s on %s: %v\n", w.name, b.Name, err)
					v = -1
					failed = true
				}
				got[i] = v
				vals[i] = append(vals[i], v)
			}
			if got[0] > 0 && got[1] > 0 {
				r := got[0] / got[1]
				if !w.higherBetter {
					r = got[1] / got[0]
				}
				ratios = append(ratios, r)
			}
		}
		ratio := "-"
		if len(ratios) == *rounds {
			ratio = fmt.Sprintf("%.2f×", median(ratios))
			ratio += fmt.Sprintf(" [%.2f–%.2f]", slices.Min(ratios), slices.Max(ratios))
		}
		fmt.Printf("%-58s %12s %12s %s\n", w.name+": "+w.unit, num(medianOrError(vals[0])), num(medianOrError(vals[1])), ratio)
	}
	fmt.Println("ratio: how many times better vastfake is (higher is better for vastfake)")
	if failed {
		os.Exit(1)
	}
}

// medianOrError is the median of a broker's values over rounds, or -1 if
// any round failed.
func medianOrError(xs []float64) float64 {
	if slices.Min(xs) < 0 {
		return -1
	}
	return median(slices.Clone(xs))
}

func num(v float64) string {
	switch {
	case v < 0:
		return "error"
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func withBroker(b bench.Broker, fn func(ctx context.Context, addr string) (float64, error)) (float64, error) {
	addr, stop, err := b.Start()
	if err != nil {
		return 0, err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return fn(ctx, addr)
}

// withTopic runs fn against a fresh broker of kind b holding a topic with
// that many partitions, with a client for it.
func withTopic(b bench.Broker, topic string, partitions int32, fn func(ctx context.Context, addr string, cl *kgo.Client) (float64, error)) (float64, error) {
	return withBroker(b, func(ctx context.Context, addr string) (float64, error) {
		cl, err := bench.Client(addr)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		if err := bench.CreateTopic(ctx, cl, topic, partitions); err != nil {
			return 0, err
		}
		return fn(ctx, addr, cl)
	})
}

func produceRate(b bench.Broker, n int) (float64, error) {
	return withTopic(b, "bench", 3, func(ctx context.Context, addr string, cl *kgo.Client) (float64, error) {
		start := time.Now()
		if err := bench.Produce(ctx, cl, "bench", n); err != nil {
			return 0, err
		}
		return float64(n) / time.Since(start).Seconds(), nil
	})
}

func consumeRate(b bench.Broker, n int) (float64, error) {
	return withTopic(b, "bench", 3, func(ctx context.Context, addr string, cl *kgo.Client) (float64, error) {
		if err := bench.Produce(ctx, cl, "bench", n); err != nil {
			return 0, err
		}
		// A first group reads everything untimed: the process's heap then
		// holds room for the consumer's garbage, as in a test suite that
		// consumes more than once. Timing the first read instead measures
		// how much heap the produce phase happened to leave mapped, since
		// fresh pages are costly here.
		if err := bench.ConsumeGroup(ctx, addr, "warm-up", "bench", n); err != nil {
			return 0, err
		}
		var rates []float64
		for i := 0; i < 5; i++ {
			start := time.Now()
			if err := bench.ConsumeGroup(ctx, addr, fmt.Sprintf("consume-%d", i), "bench", n); err != nil {
				return 0, err
			}
			rates = append(rates, float64(n)/time.Since(start).Seconds())
		}
		return median(rates), nil
	})
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func firstRecord(b bench.Broker) (float64, error) {
	return withTopic(b, "bench", 3, func(ctx context.Context, addr string, cl *kgo.Client) (float64, error) {
		if err := bench.Produce(ctx, cl, "bench", 30); err != nil {
			return 0, err
		}
		var ms []float64
		for i := 0; i < 20; i++ {
			d, err := bench.FirstRecord(ctx, addr, fmt.Sprintf("first-%d", i), "bench")
			if err != nil {
				return 0, err
			}
			ms = append(ms, float64(d.Microseconds())/1000)
		}
		return median(ms), nil
	})
}

func startClose(b bench.Broker) (float64, error) {
	var us []float64
	for i := 0; i < 200; i++ {
		start := time.Now()
		_, stop, err := b.Start()
		if err != nil {
			return 0, err
		}
		stop()
		us = append(us, float64(time.Since(start).Nanoseconds())/1000)
	}
	return median(us), nil
}

// inChild runs one workload for one broker in a new process of this
// program and reads the value it prints.
func inChild(workload, broker string, n int, cpuProfile string) (float64, error) {
	args := []string{"-child", workload, "-broker", broker, "-n", strconv.Itoa(n)}
	if cpuProfile != "" {
		args = append(args, "-cpuprofile", fmt.Sprintf("%s-%s-%s.pprof", cpuProfile, workload, broker))
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// memory measures the broker alone: it runs in a child process (-serve)
// while this process produces n 100-byte records to it over TCP, and the
// child reports its resident-set growth per value byte stored.
func memory(b bench.Broker, n int) (float64, error) {
	cmd := exec.Command(os.Args[0], "-serve", b.Name)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	ask := func(q string) (string, error) {
		if q != "" {
			if _, err := fmt.Fprintln(stdin, q); err != nil {
				return "", err
			}
		}
		if !lines.Scan() {
			return "", fmt.Errorf("broker process ended: %v", lines.Err())
		}
		return lines.Text(), nil
	}
	addr, err := ask("")
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	cl, err := bench.Client(addr, kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := bench.CreateTopic(ctx, cl, "mem", 3); err != nil {
		return 0, err
	}
	if err := bench.Produce(ctx, cl, "mem", 1000); err != nil { // warm up connections and buffers
		return 0, err
	}
	before, err := ask("rss")
	if err != nil {
		return 0, err
	}
	if err := bench.Produce(ctx, cl, "mem", n); err != nil {
		return 0, err
	}
	after, err := ask("rss")
	if err != nil {
		return 0, err
	}
	b0, _ := strconv.ParseInt(before, 10, 64)
	b1, _ := strconv.ParseInt(after, 10, 64)
	return float64(b1-b0) / float64(n*bench.ValueSize), nil
}

// serve runs a broker for memory: it prints the address, then answers each
// "rss" line on stdin with its resident set size after a full GC, until
// stdin closes.
func serve(name string) error {
	for _, b := range bench.Brokers {
		if b.Name != name {
			continue
		}
		addr, stop, err := b.Start()
		if err != nil {
			return err
		}
		defer stop()
		fmt.Println(addr)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			debug.FreeOSMemory()
			fmt.Println(rss())
		}
		return nil
	}
	return fmt.Errorf("unknown broker %q", name)
}

// rss reads this process's resident set size from /proc.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// The scale workloads run at VAST's limits: groups per view and partitions
// per topic.
var (
	vastGroups     = rules.VAST().MaxGroups
	vastPartitions = rules.VAST().MaxPartitionsPerTopic
)

func rebalance(b bench.Broker) (float64, error) {
	return withTopic(b, "rebalance", 4, func(ctx context.Context, addr string, cl *kgo.Client) (float64, error) {
		start := time.Now()
		if err := bench.Rebalance(ctx, addr, "rebalance", vastGroups, 4); err != nil {
			return 0, err
		}
		return float64(time.Since(start).Microseconds()) / 1000, nil
	})
}

func partitions(b bench.Broker) (float64, error) {
	return withBroker(b, func(ctx context.Context, addr string) (float64, error) {
		cl, err := bench.Client(addr)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		start := time.Now()
		if err := bench.CreateTopic(ctx, cl, "wide", int32(vastPartitions)); err != nil {
			return 0, err
		}
		td, err := kadm.NewClient(cl).ListTopics(ctx, "wide")
		if err != nil {
			return 0, err
		}
		if got := len(td["wide"].Partitions); got != vastPartitions {
			return 0, fmt.Errorf("described %d partitions", got)
		}
		// One fetch of every partition.
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes = 50 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "wide", td["wide"].ID
		for p := int32(0); p < int32(vastPartitions); p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		if got := len(resp.Topics[0].Partitions); got != vastPartitions {
			return 0, fmt.Errorf("fetched %d partitions", got)
		}
		return float64(time.Since(start).Microseconds()) / 1000, nil
	})
}

// connections opens 1,000 connections at once, each asking for ApiVersions
// and holding the connection until all have answered.
func connections(b bench.Broker) (float64, error) {
	return withBroker(b, func(ctx context.Context, addr string) (float64, error) {
		const n = 1000
		start := time.Now()
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
				c.SetDeadline(time.Now().Add(time.Minute))
				req := kmsg.NewPtrApiVersionsRequest()
				req.SetVersion(3)
				req.ClientSoftwareName, req.ClientSoftwareVersion = "vastbench", "1"
				if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, int32(i))); err != nil {
					errs <- err
					return
				}
				var size [4]byte
				if _, err := io.ReadFull(c, size[:]); err != nil {
					errs <- err
					return
				}
				body := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, body); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		close(errs)
		if err := <-errs; err != nil {
			return 0, err
		}
		return float64(elapsed.Microseconds()) / 1000, nil
	})
}
