// Package bench holds the workloads that compare vastfake with kfake,
// franz-go's fake cluster, side by side: the same kgo client settings (no
// compression, no idempotence, 100-byte records, three partitions) against
// each broker. cmd/vastbench, its one user, runs them.
// floor.go is a do-nothing broker that bounds what any broker can do with
// this client, and process.go runs brokers in processes of their own and
// reads their CPU time and memory.
package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/broker"
)

// ValueSize is the size of every record value.
const ValueSize = 100

// Broker is a broker under test.
type Broker struct {
	Name  string
	Start func() (addr string, stop func(), err error)
}

// VastfakeBrokers is how many broker ids vastfake runs in the workloads
// (broker.WithBrokers), 1 unless vastbench's -brokers says otherwise.
var VastfakeBrokers = 1

// Brokers are the brokers every workload runs against, vastfake first.
var Brokers = []Broker{
	{"vastfake", func() (string, func(), error) {
		b, err := broker.New(broker.WithBrokers(VastfakeBrokers))
		if err != nil {
			return "", nil, err
		}
		return b.Addr(), func() { b.Close() }, nil
	}},
	{"kfake", func() (string, func(), error) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return "", nil, err
		}
		return c.ListenAddrs()[0], c.Close, nil
	}},
}

// Client returns a kgo client with the workload's settings.
func Client(addr string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.Balancers(kgo.RangeBalancer()),
	}, opts...)...)
}

// BatchBytes counts the bytes of the record batches acknowledged to the
// producers of the clients it is hooked into (kgo.WithHooks): what the
// client sent to be stored, batch headers included.
type BatchBytes struct{ n atomic.Int64 }

// recordBatchHeader is the size of a v2 record batch's header, which
// kgo's batch metrics leave out.
const recordBatchHeader = 61

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten.
func (b *BatchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.n.Add(int64(m.CompressedBytes + recordBatchHeader))
}

// Load returns the bytes counted so far.
func (b *BatchBytes) Load() int64 { return b.n.Load() }

// CreateTopic creates a topic through kadm.
func CreateTopic(ctx context.Context, cl *kgo.Client, name string, partitions int32) error {
	_, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, name)
	return err
}

// Produce produces n records to topic asynchronously and returns once all
// are acknowledged, with the first error.
func Produce(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	value := make([]byte, ValueSize)
	var firstErr atomic.Pointer[error]
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ConsumeGroup reads n records with one group consumer from the start and
// returns once it has them all.
func ConsumeGroup(ctx context.Context, addr, group, topic string, n int) error {
	c, err := Client(addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer c.Close()
	for got := 0; got < n; {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d: %w", got, n, err)
		}
		if err := fs.Err0(); err != nil {
			return err
		}
		got += fs.NumRecords()
	}
	return nil
}

// FirstRecord measures a new group's subscribe to its first record on a
// topic that already holds records.
func FirstRecord(ctx context.Context, addr, group, topic string) (time.Duration, error) {
	start := time.Now()
	err := ConsumeGroup(ctx, addr, group, topic, 1)
	return time.Since(start), err
}

// Rebalance starts groups groups of members members each, all at once, on
// a topic with at least members partitions, and returns when every member
// has been assigned partitions.
func Rebalance(ctx context.Context, addr, topic string, groups, members int) error {
	var wg sync.WaitGroup
	errs := make(chan error, groups*members)
	var clients []*kgo.Client
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		var cw sync.WaitGroup
		for _, c := range clients {
			cw.Add(1)
			go func() { defer cw.Done(); c.Close() }()
		}
		cw.Wait()
	}()
	for g := 0; g < groups; g++ {
		for m := 0; m < members; m++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assigned := make(chan struct{}, 1)
				c, err := Client(addr, kgo.ConsumerGroup(fmt.Sprintf("rebalance-%d", g)), kgo.ConsumeTopics(topic),
					kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
						select {
						case assigned <- struct{}{}:
						default:
						}
					}))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				clients = append(clients, c)
				mu.Unlock()
				select {
				case <-assigned:
				case <-ctx.Done():
					errs <- errors.New("a member was never assigned partitions")
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}
