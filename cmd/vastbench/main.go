// Command vastbench measures vastfake against kfake (franz-go's fake
// cluster) and against a do-nothing floor broker of its own, and prints
// every figure with its ratio to each. The workload is kgo with 100-byte
// records, three partitions, no compression and no idempotence.
//
//	go run ./cmd/vastbench                     # everything, five rounds, a few minutes
//	go run ./cmd/vastbench -rounds 9 -only session,idle
//
// The first table is what a user of the broker feels: every broker runs in
// a process of its own (the vastfake binary, built from ./cmd/vastfake;
// kfake and the floor in a `vastbench -serve` child), the client in a
// fresh vastbench child, and beside each rate stand the broker process's
// own CPU time (user and system, from /proc) and resident-set growth.
// The floor acknowledges produce without storing and answers fetches with
// pre-encoded batches shaped as the produced ones, speaking the protocol as
// Kafka does (internal/bench/floor.go): what no broker can beat with this
// client. The second table runs the broker inside the
// client's process, as a Go test embeds vastfake.
//
// Every workload runs for several rounds, each running every broker once,
// in alternating order so that drift in the machine's speed favours none;
// each figure is the median over rounds with the lowest and highest round,
// and each ratio the median of the rounds' ratios with its range: on a
// small shared machine one run can be off by a third.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vastfake/vastfake/cmd/vastbench/internal/bench"
)

func main() {
	n := flag.Int("n", 100_000, "records per throughput run")
	memN := flag.Int("mem", -1, "records produced after the first n, for the memory figure; default 5×n")
	only := flag.String("only", "", "comma-separated workloads: session,idle,scale (process table), kip848 (a KIP-848 group on the binary in the kafka profile), share (10 share consumers on 12 partitions, n records, on the binary in the kafka profile) and produce,consume,first,startclose,rebalance,partitions,connections (in-process table)")
	rounds := flag.Int("rounds", 5, "rounds per workload; each round runs every broker once, in alternating order")
	window := flag.Duration("idle-window", 0, "how long idle consumers are measured; default n/50,000 seconds, within 0.5s–2s")
	bin := flag.String("vastfake-bin", "", "the vastfake binary; default: built from ./cmd/vastfake into a temporary directory")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of each in-process child run to `prefix`-workload-broker.pprof")
	childWorkload := flag.String("child", "", "internal: run one workload for -broker in this process and print its figures")
	childBroker := flag.String("broker", "", "internal: the broker for -child")
	serveBroker := flag.String("serve", "", "internal: run kfake or floor in this process, print its address, serve until SIGTERM")
	brokers := flag.Int("brokers", 1, "broker ids vastfake runs (-brokers of the binary, broker.WithBrokers in process), to measure what several cost")
	quick := flag.Bool("quick", false, "run the scale workloads at 1/16 of VAST's limits (16 groups, 1,250 partitions, 100 connections) and the KIP-848 group at 1/16 (62 members, 1,250 partitions): a check that every workload works, not a measure")
	flag.Parse()
	if *quick {
		vastGroups, vastPartitions, connCount = vastGroups/16, vastPartitions/16, connCount/10
		cgMembers, cgPartitions = cgMembers/16, cgPartitions/16
	}
	if *memN < 0 {
		*memN = 5 * *n
	}
	if *window == 0 {
		*window = min(max(time.Duration(float64(*n)/50_000*float64(time.Second)), 500*time.Millisecond), 2*time.Second)
	}
	if *serveBroker != "" {
		exitOn(serve(*serveBroker))
		return
	}
	bench.VastfakeBrokers = *brokers
	if *childWorkload != "" {
		res, err := runChild(*childWorkload, *childBroker, *bin, *n, *memN, *window, *cpuProfile)
		exitOn(err)
		// A figure divided by a zero (nothing sent, no time measured: a tiny
		// -n on a do-nothing broker) is not a measure: leave it out, as a
		// figure the run did not take, rather than fail to encode it.
		maps.DeleteFunc(res, func(_ string, v float64) bool { return math.IsInf(v, 0) || math.IsNaN(v) })
		exitOn(json.NewEncoder(os.Stdout).Encode(res))
		return
	}
	want := func(name string) bool { return *only == "" || strings.Contains(","+*only+",", ","+name+",") }
	if *bin == "" && (want("session") || want("idle") || want("scale") || want("kip848") || want("share")) {
		dir, err := os.MkdirTemp("", "vastbench")
		exitOn(err)
		defer os.RemoveAll(dir)
		*bin = filepath.Join(dir, "vastfake")
		build := exec.Command("go", "build", "-o", *bin, "github.com/vastfake/vastfake/cmd/vastfake")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		exitOn(build.Run())
	}
	r := runner{rounds: *rounds, args: []string{"-n", strconv.Itoa(*n), "-mem", strconv.Itoa(*memN),
		"-idle-window", window.String(), "-vastfake-bin", *bin, "-quick=" + strconv.FormatBool(*quick), "-brokers", strconv.Itoa(*brokers)}, cpuProfile: *cpuProfile}
	fmt.Printf("%d rounds, n=%d records, %d more for memory; each figure: median over rounds [lowest–highest round]; "+
		"a ratio is vastfake's figure divided by the other broker's, the median of the rounds' ratios\n\n", *rounds, *n, *memN)

	procs := []string{"vastfake", "kfake", floorName}
	if want("session") {
		r.run("session", procs...)
	}
	if want("idle") {
		r.run("idle", "vastfake", vastfakeNoDelay, "kfake", floorName)
	}
	if want("scale") {
		r.run("p-rebalance", "vastfake", "kfake") // the floor's groups have one member
		r.run("p-partitions", procs...)
		r.run("p-connections", procs...)
	}
	if want("session") || want("idle") || want("scale") {
		fmt.Println("Brokers in processes of their own (the vastfake binary; kfake; a do-nothing floor broker); the client in another process")
		fmt.Println()
		r.table(procs, processRows(*n, *memN))
	}
	if want("kip848") {
		r.run("kip848", vastfakeKafka, "kfake")
		fmt.Println("A KIP-848 consumer group on the vastfake binary in the kafka profile and on kfake; its members are raw ConsumerGroupHeartbeat requests from one client")
		fmt.Println()
		r.table([]string{vastfakeKafka, "kfake"}, kip848Rows())
	}
	if want("share") {
		r.run("share", vastfakeKafka, "kfake")
		fmt.Println("A share group (KIP-932) on the vastfake binary in the kafka profile and on kfake: kgo share consumers drain a queue")
		fmt.Println()
		r.table([]string{vastfakeKafka, "kfake"}, shareRows(*n))
	}
	var inproc []row
	for _, w := range inProcessWorkloads() {
		if want(w.name) {
			r.run(w.name, "in-vastfake", "in-kfake")
			inproc = append(inproc, row{label: w.label, key: w.name, higher: w.higher})
		}
	}
	if len(inproc) > 0 {
		fmt.Println("Brokers inside the client's process (as a Go test embeds vastfake), a fresh process per run")
		fmt.Println()
		r.table([]string{"in-vastfake", "in-kfake"}, inproc)
	}
	if r.failed {
		os.Exit(1)
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// inProcessWorkloads run with the broker in the child's own process.
func inProcessWorkloads() []struct {
	name, label string
	higher      bool
} {
	return []struct {
		name, label string
		higher      bool
	}{
		{"produce", "produce, records/s", true},
		{"consume", "group consume, records/s (steady state, median of 5 groups)", true},
		{"first", "new group → first record, ms (median of 20)", false},
		{"startclose", "start+close in-process, µs (median of 200)", false},
		{"rebalance", fmt.Sprintf("%d groups × 4 members assigned, ms", vastGroups), false},
		{"partitions", fmt.Sprintf("%d-partition topic created+described+fetched, ms", vastPartitions), false},
		{"connections", fmt.Sprintf("%d connections opened and answered, ms", connCount), false},
	}
}

// runChild runs one workload in this (child) process and returns its
// figures by name.
func runChild(workload, broker, bin string, n, memN int, window time.Duration, cpuProfile string) (map[string]float64, error) {
	switch workload {
	case "session":
		return session(broker, bin, n, memN)
	case "idle":
		return idle(broker, bin, window)
	case "kip848":
		return kip848(broker, bin)
	case "share":
		return shareGroup(broker, bin, n)
	case "p-rebalance", "p-partitions", "p-connections":
		fn := map[string]func(bench.Broker) (float64, error){
			"p-rebalance": rebalance, "p-partitions": partitions, "p-connections": connections,
		}[workload]
		v, err := fn(processBroker(broker, bin))
		return map[string]float64{workload: v}, err
	}
	name, ok := strings.CutPrefix(broker, "in-")
	if !ok {
		return nil, fmt.Errorf("unknown broker %q", broker)
	}
	for _, b := range bench.Brokers {
		if b.Name != name {
			continue
		}
		if cpuProfile != "" {
			stop, err := startCPUProfile(fmt.Sprintf("%s-%s-%s.pprof", cpuProfile, workload, name))
			if err != nil {
				return nil, err
			}
			defer stop()
		}
		var v float64
		var err error
		switch workload {
		case "produce":
			v, err = produceRate(b, n)
		case "consume":
			v, err = consumeRate(b, n)
		case "first":
			v, err = firstRecord(b)
		case "startclose":
			v, err = startClose(b)
		case "rebalance":
			v, err = rebalance(b)
		case "partitions":
			v, err = partitions(b)
		case "connections":
			v, err = connections(b)
		default:
			return nil, fmt.Errorf("unknown workload %q", workload)
		}
		return map[string]float64{workload: v}, err
	}
	return nil, fmt.Errorf("unknown broker %q", broker)
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

// runner runs workloads in child processes and keeps their figures:
// vals[broker][figure] holds one value per round, NaN-free; a failed run
// leaves its round's figures out and marks the run failed.
type runner struct {
	rounds     int
	args       []string
	cpuProfile string
	vals       map[string]map[string][]float64
	// byRound[broker][figure][round] for the ratios of one round.
	byRound map[string]map[string]map[int]float64
	failed  bool
}

func (r *runner) run(workload string, brokers ...string) {
	if r.vals == nil {
		r.vals = map[string]map[string][]float64{}
		r.byRound = map[string]map[string]map[int]float64{}
	}
	for round := 0; round < r.rounds; round++ {
		order := slices.Clone(brokers)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, b := range order {
			args := append([]string{"-child", workload, "-broker", b}, r.args...)
			if r.cpuProfile != "" {
				args = append(args, "-cpuprofile", r.cpuProfile)
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			var res map[string]float64
			if err == nil {
				err = json.Unmarshal(out, &res)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s on %s: %v\n", workload, b, err)
				r.failed = true
				continue
			}
			if r.vals[b] == nil {
				r.vals[b] = map[string][]float64{}
				r.byRound[b] = map[string]map[int]float64{}
			}
			for k, v := range res {
				r.vals[b][k] = append(r.vals[b][k], v)
				if r.byRound[b][k] == nil {
					r.byRound[b][k] = map[int]float64{}
				}
				r.byRound[b][k][round] = v
			}
		}
	}
}

// row is one figure of a table. from names the broker whose figure fills
// the first column, when not the table's first broker.
type row struct {
	label, key, from string
	higher           bool
}

func processRows(n, memN int) []row {
	per := "ms per 100k records"
	return []row{
		{label: "produce, records/s", key: "produce_rate", higher: true},
		{label: "broker CPU producing, " + per, key: "produce_broker_cpu"},
		{label: "client CPU producing, " + per, key: "produce_client_cpu"},
		{label: "group consume (new group, from the start), records/s", key: "consume_rate", higher: true},
		{label: "broker CPU consuming, " + per, key: "consume_broker_cpu"},
		{label: "client CPU consuming, " + per, key: "consume_client_cpu"},
		{label: "new group → first record, ms (median of 5)", key: "first_ms"},
		{label: "one-record produce round trip, µs (median of 100)", key: "rtt_us"},
		{label: fmt.Sprintf("broker RSS growth ÷ value bytes stored (%d records)", n+memN), key: "rss_per_byte"},
		{label: "broker RSS growth ÷ record batch bytes sent (the payload as stored)", key: "rss_per_batch_byte"},
		{label: fmt.Sprintf("… over the last %d records alone (what a stored byte costs once buffers exist)", memN), key: "rss_marginal_per_batch_byte"},
		{label: "broker RSS at start, MiB", key: "rss_start_mib"},
		{label: "process start → accepting, ms", key: "ready_ms"},
		{label: "SIGTERM → exit, ms", key: "close_ms"},
		{label: "4 idle group consumers: broker CPU, % of a core", key: "idle_broker_pct"},
		{label: "… with -empty-fetch-delay 0 (vastfake answers at once)", key: "idle_broker_pct", from: vastfakeNoDelay},
		{label: "4 idle group consumers: client CPU, % of a core", key: "idle_client_pct"},
		{label: "… with -empty-fetch-delay 0", key: "idle_client_pct", from: vastfakeNoDelay},
		{label: "empty partition, Fetch with max wait 4000 ms answered in, ms", key: "empty_fetch_ms"},
		{label: fmt.Sprintf("%d groups × 4 members assigned, ms", vastGroups), key: "p-rebalance"},
		{label: fmt.Sprintf("%d-partition topic created+described+fetched, ms", vastPartitions), key: "p-partitions"},
		{label: fmt.Sprintf("%d connections opened and answered, ms", connCount), key: "p-connections"},
	}
}

// table prints rows as a Markdown table: a column per broker, then
// the first broker's ratio to each other one.
func (r *runner) table(brokers []string, rows []row) {
	head := "| figure |"
	sep := "| --- |"
	for _, b := range brokers {
		head += " " + b + " |"
		sep += " --- |"
	}
	for _, b := range brokers[1:] {
		head += " ÷ " + b + " |"
		sep += " --- |"
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, rw := range rows {
		first := brokers[0]
		if rw.from != "" {
			first = rw.from
		}
		if len(r.vals[first][rw.key]) == 0 {
			continue // not run
		}
		better := " (lower is better)"
		if rw.higher {
			better = " (higher is better)"
		}
		line := "| " + rw.label + better + " |"
		for i, b := range brokers {
			if i == 0 {
				b = first
			}
			line += " " + spread(r.vals[b][rw.key]) + " |"
		}
		for _, b := range brokers[1:] {
			var ratios []float64
			for round, v := range r.byRound[first][rw.key] {
				if o, ok := r.byRound[b][rw.key][round]; ok && o > 0 {
					ratios = append(ratios, v/o)
				}
			}
			line += " " + spreadRatio(ratios) + " |"
		}
		fmt.Println(line)
	}
	fmt.Println()
}

func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	if len(xs) == 1 {
		return num(xs[0])
	}
	return fmt.Sprintf("%s [%s–%s]", num(median(xs)), num(slices.Min(xs)), num(slices.Max(xs)))
}

func spreadRatio(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f×", xs[0])
	}
	return fmt.Sprintf("%.2f× [%.2f–%.2f]", median(xs), slices.Min(xs), slices.Max(xs))
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
