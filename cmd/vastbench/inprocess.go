package main

// The in-process workloads: each runs in a fresh child process of vastbench
// with the broker inside it (bench.Brokers), as a Go test runs vastfake,
// and the scale workloads, which also run against brokers in processes of
// their own.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/cmd/vastbench/internal/bench"
	"github.com/vastfake/vastfake/rules"
)

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

// The scale workloads run at VAST's limits: groups per view and partitions
// per topic.
var (
	vastGroups     = rules.VAST().MaxGroups
	vastPartitions = rules.VAST().MaxPartitionsPerTopic
	connCount      = 1000
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

// connections opens connCount connections at once, each asking for ApiVersions
// and holding the connection until all have answered.
func connections(b bench.Broker) (float64, error) {
	return withBroker(b, func(ctx context.Context, addr string) (float64, error) {
		n := connCount
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
