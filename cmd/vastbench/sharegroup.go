package main

// The share group workload (KIP-932): shareConsumers kgo share consumers
// (kgo.ShareGroup, each a client of its own) in one share group over a
// topic of sharePartitions partitions, on the vastfake binary in the kafka
// profile and on kfake. n records are produced first; the consumers then
// acquire them, release one in ten on its first delivery (so that the
// broker redelivers it) and accept the rest, until every record is
// accepted. What is measured: the wall time to drain the queue, the
// broker process's CPU time and its resident-set growth.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/cmd/vastbench/internal/bench"
)

// The workload's shape.
const (
	shareConsumers  = 10
	sharePartitions = 12
	shareReleaseOne = 10 // one record in this many is released once
)

// shareGroup runs the workload on a fresh process of the named broker:
// vastfakeKafka (the binary in the kafka profile) or kfake.
func shareGroup(broker, bin string, n int) (map[string]float64, error) {
	var p *bench.Process
	var err error
	if broker == vastfakeKafka {
		p, err = startProcess("vastfake", bin, "-profile", "kafka")
	} else {
		p, err = startProcess(broker, bin)
	}
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := bench.Client(p.Addr, kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := bench.CreateTopic(ctx, cl, "queue", sharePartitions); err != nil {
		return nil, err
	}
	if err := setShareEarliest(ctx, cl, "workers"); err != nil {
		return nil, err
	}
	if err := bench.Produce(ctx, cl, "queue", n); err != nil {
		return nil, err
	}

	// Every record is accepted once; one in ten is released on its first
	// delivery and accepted on its second.
	// Indexed by partition, then offset: the producer's partitioner may
	// put any number of the n records on one partition.
	accepted := make([][]atomic.Bool, sharePartitions)
	for p := range accepted {
		accepted[p] = make([]atomic.Bool, n)
	}
	var acceptedN, released, deliveries, duplicates atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	u0, t0 := usage(p), time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, shareConsumers)
	for range shareConsumers {
		c, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ShareGroup("workers"), kgo.ConsumeTopics("queue"))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fs := c.PollFetches(pctx)
				pcancel()
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				for _, r := range fs.Records() {
					deliveries.Add(1)
					if r.Offset%shareReleaseOne == 0 && r.DeliveryCount() == 1 {
						released.Add(1)
						r.Ack(kgo.AckRelease)
						continue
					}
					r.Ack(kgo.AckAccept)
					if int(r.Partition) >= len(accepted) || r.Offset >= int64(n) || accepted[r.Partition][r.Offset].Swap(true) {
						duplicates.Add(1)
						continue
					}
					if acceptedN.Add(1) == int64(n) {
						once.Do(func() { close(done) })
					}
				}
			}
		})
	}
	select {
	case <-done:
	case err := <-errs:
		return nil, fmt.Errorf("share consumers: %w after %d of %d records", err, acceptedN.Load(), n)
	}
	el := time.Since(t0)
	u1 := usage(p)
	wg.Wait()
	return map[string]float64{
		"share_ms":             ms(el),
		"share_broker_cpu_ms":  ms(u1.CPU - u0.CPU),
		"share_rss_mib":        float64(u1.RSS-u0.RSS) / (1 << 20),
		"share_records_per_s":  float64(n) / el.Seconds(),
		"share_released":       float64(released.Load()),
		"share_deliveries":     float64(deliveries.Load()),
		"share_redeliveries":   float64(deliveries.Load() - int64(n)),
		"share_duplicates":     float64(duplicates.Load()),
		"share_broker_cpu_per": ms(u1.CPU-u0.CPU) * 1000 / float64(n),
	}, nil
}

// setShareEarliest sets share.auto.offset.reset=earliest on group, so that
// it reads the records produced before its members join.
func setShareEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// shareRows are the workload's figures.
func shareRows(n int) []row {
	g := fmt.Sprintf("%d share consumers × %d partitions, %d records (1 in %d released once)", shareConsumers, sharePartitions, n, shareReleaseOne)
	return []row{
		{label: g + ": every record accepted, ms", key: "share_ms"},
		{label: "… records accepted per s", key: "share_records_per_s", higher: true},
		{label: "… deliveries beyond the first (releases redelivered, duplicates)", key: "share_redeliveries"},
		{label: "… records accepted twice", key: "share_duplicates"},
		{label: "… broker CPU, ms", key: "share_broker_cpu_ms"},
		{label: "… broker CPU per record, µs", key: "share_broker_cpu_per"},
		{label: "… broker RSS growth, MiB", key: "share_rss_mib"},
	}
}
