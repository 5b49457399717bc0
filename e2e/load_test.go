//go:build heavy

package e2e_test

// A bounded load test: producers with acks=all (no idempotence, as on VAST)
// and 16 consumer groups whose members join and leave for a fixed time,
// then the same under faults (dropped connections, members killed in the
// middle of a rebalance). Every acknowledged record must reach every group,
// the first deliveries of each partition must come in offset order, and no
// committed offset may ever move backwards. Consumption is at least once,
// so duplicates are allowed.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

const (
	loadTopic      = "load"
	loadPartitions = 3
	loadGroups     = 16
	loadProducers  = 3
	loadMaxMembers = 3
	// loadPerProducer caps each producer, so that consumers catch up in
	// bounded time on a slow machine.
	loadPerProducer = 2000
	// loadConsumeWait bounds the wait for every group to have read every
	// acknowledged record once producing ends.
	loadConsumeWait = 2 * time.Minute
)

func TestLoadGroupsJoinAndLeave(t *testing.T) {
	t.Parallel()
	runLoad(t, loadConfig{duration: 2 * time.Second})
}

func TestLoadGroupsUnderFaults(t *testing.T) {
	t.Parallel()
	runLoad(t, loadConfig{duration: 3 * time.Second, faults: true})
}

type loadConfig struct {
	duration time.Duration
	faults   bool // drop connections, kill members abruptly mid-rebalance
}

// loadGroup is what one group's members delivered.
type loadGroup struct {
	name string

	mu      sync.Mutex
	first   [loadPartitions]map[int64]string // offset -> value, first delivery
	order   [loadPartitions][]int64          // offsets in first-delivery order
	maxSeen [loadPartitions]int64
	members []*loadMember
	joined  int
	left    int
	killed  int
}

type loadMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func newLoadGroup(name string) *loadGroup {
	g := &loadGroup{name: name}
	for p := range g.first {
		g.first[p] = make(map[int64]string)
		g.maxSeen[p] = -1
	}
	return g
}

func (g *loadGroup) deliver(recs []*kgo.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range recs {
		p := r.Partition
		if _, dup := g.first[p][r.Offset]; dup {
			continue
		}
		g.first[p][r.Offset] = string(r.Value)
		g.order[p] = append(g.order[p], r.Offset)
		g.maxSeen[p] = max(g.maxSeen[p], r.Offset)
	}
}

// acked is every acknowledged record: partition -> offset -> value.
type acked struct {
	mu   sync.Mutex
	recs [loadPartitions]map[int64]string
	max  [loadPartitions]int64
	n    int
}

func runLoad(t *testing.T, cfg loadConfig) {
	// Members use a 1.5 s session timeout so that killed ones leave
	// quickly; like a Kafka test cluster, the broker lowers
	// group.min.session.timeout.ms (6 s by default) to allow it.
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: loadTopic, Partitions: loadPartitions}),
		broker.WithMinSessionTimeout(time.Second))
	start := time.Now()

	// Committed offsets never move backwards: sample them throughout.
	stopSampling := make(chan struct{})
	samplerDone := make(chan struct{})
	var samples atomic.Int64
	var backwards []string
	go func() {
		defer close(samplerDone)
		last := map[string]int64{}
		for {
			for g := 0; g < loadGroups; g++ {
				for p := int32(0); p < loadPartitions; p++ {
					off, ok := b.CommittedOffset(groupName(g), loadTopic, p)
					if !ok {
						continue
					}
					key := fmt.Sprintf("%s/%d", groupName(g), p)
					if prev, seen := last[key]; seen && off < prev {
						backwards = append(backwards, fmt.Sprintf("%s: %d after %d", key, off, prev))
					}
					last[key] = off
					samples.Add(1)
				}
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(time.Millisecond): // sampling pace
			}
		}
	}()

	// Groups, each starting with one member.
	groups := make([]*loadGroup, loadGroups)
	for i := range groups {
		groups[i] = newLoadGroup(groupName(i))
		groups[i].add(t, b.Addr())
	}

	// Producers, each until the duration ends or it has sent its share (at
	// least one record). The duration stops the sending only: a record
	// already handed to the client is not failed when it ends, so that a
	// slow machine, on which the faults can hold the first acks back past
	// the duration, still acknowledges what was sent; Flush waits for it.
	var ack acked
	for p := range ack.recs {
		ack.recs[p] = make(map[int64]string)
		ack.max[p] = -1
	}
	var produceErrs atomic.Int64
	prodCtx, stopProducing := context.WithTimeout(context.Background(), cfg.duration)
	defer stopProducing()
	var producers sync.WaitGroup
	for i := 0; i < loadProducers; i++ {
		cl := newClient(t, b.Addr(), kgo.MaxBufferedRecords(200), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		producers.Add(1)
		go func() {
			defer producers.Done()
			for seq := 0; seq < loadPerProducer && (seq == 0 || prodCtx.Err() == nil); seq++ {
				value := fmt.Sprintf("p%d-%d", i, seq)
				cl.Produce(context.Background(), &kgo.Record{Topic: loadTopic, Value: []byte(value)}, func(r *kgo.Record, err error) {
					if err != nil {
						produceErrs.Add(1)
						return
					}
					ack.mu.Lock()
					ack.recs[r.Partition][r.Offset] = value
					ack.max[r.Partition] = max(ack.max[r.Partition], r.Offset)
					ack.n++
					ack.mu.Unlock()
				})
			}
			flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = cl.Flush(flushCtx)
		}()
	}

	// Membership churn, and faults, for the duration. The ticks pace the
	// workload; nothing waits on them for state.
	churnCtx, stopChurn := context.WithTimeout(context.Background(), cfg.duration)
	defer stopChurn()
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-churnCtx.Done():
				return
			case <-tick.C:
			}
			g := groups[rng.IntN(len(groups))]
			switch n := g.size(); {
			case cfg.faults && rng.IntN(3) == 0 && n > 0:
				// A new member starts a rebalance, and an old one dies
				// in the middle of it without leaving.
				g.add(t, b.Addr())
				g.kill(rng.IntN(n))
			case n < loadMaxMembers && (n == 1 || rng.IntN(2) == 0):
				g.add(t, b.Addr())
			case n > 1:
				g.leave(rng.IntN(n))
			}
		}
	}()
	var drops int
	if cfg.faults {
		churn.Add(1)
		go func() {
			defer churn.Done()
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-churnCtx.Done():
					return
				case <-tick.C:
					b.DropConnections()
					drops++
				}
			}
		}()
	}
	producers.Wait()
	churn.Wait()
	produced := time.Since(start)

	// Every acknowledged record reaches every group.
	ack.mu.Lock()
	maxAcked := ack.max
	ack.mu.Unlock()
	// Sixteen groups read everything again, with members rejoining: under
	// the race detector on a busy 2-core machine that takes longer than
	// fixtures.WaitFor's 15 s, so the wait has a deadline of its own.
	require.Eventually(t, func() bool {
		for _, g := range groups {
			g.mu.Lock()
			behind := false
			for p := range maxAcked {
				behind = behind || g.maxSeen[p] < maxAcked[p]
			}
			g.mu.Unlock()
			if behind {
				return false
			}
		}
		return true
	}, loadConsumeWait, 10*time.Millisecond, "every group consumes every acknowledged record")
	close(stopSampling)
	<-samplerDone
	for _, g := range groups {
		g.closeAll()
	}

	require.NotZero(t, ack.n, "no record was acknowledged")
	var joined, left, killed, deliveries int
	for _, g := range groups {
		g.mu.Lock()
		joined, left, killed = joined+g.joined, left+g.left, killed+g.killed
		for p := range ack.recs {
			for off, want := range ack.recs[p] {
				got, ok := g.first[p][off]
				if !ok {
					t.Errorf("%s never got acknowledged record %d/%d (%s)", g.name, p, off, want)
				} else if got != want {
					t.Errorf("%s got %q at %d/%d, acknowledged %q", g.name, got, p, off, want)
				}
			}
			for i := 1; i < len(g.order[p]); i++ {
				if g.order[p][i] <= g.order[p][i-1] {
					t.Errorf("%s partition %d: first delivery of offset %d after %d", g.name, p, g.order[p][i], g.order[p][i-1])
					break
				}
			}
			deliveries += len(g.order[p])
		}
		g.mu.Unlock()
	}
	for _, s := range backwards {
		t.Errorf("committed offset moved backwards: %s", s)
	}
	t.Logf("%d records acknowledged (%d produce errors) by %d producers in %v; %d groups consumed all %d distinct records each (%d first deliveries), %d joins, %d leaves, %d kills, %d connection drops, %d committed-offset samples; %v in all",
		ack.n, produceErrs.Load(), loadProducers, produced.Round(time.Millisecond), loadGroups, ack.n, deliveries,
		joined, left, killed, drops, samples.Load(), time.Since(start).Round(time.Millisecond))
}

func groupName(i int) string { return fmt.Sprintf("load-%02d", i) }

func (g *loadGroup) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members)
}

// add starts a member that records what it polls and commits it.
func (g *loadGroup) add(t *testing.T, addr string) {
	ctx, cancel := context.WithCancel(context.Background())
	cl := newClient(t, addr,
		kgo.WithContext(ctx),
		kgo.ConsumerGroup(g.name),
		kgo.ConsumeTopics(loadTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(1500*time.Millisecond),
		kgo.RebalanceTimeout(3*time.Second),
	)
	m := &loadMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			g.deliver(recs)
			// A commit fails when a rebalance took the partitions away;
			// the next owner reads them again (at least once).
			_ = cl.CommitRecords(ctx, recs...)
		}
	}()
	g.mu.Lock()
	g.members = append(g.members, m)
	g.joined++
	g.mu.Unlock()
}

// leave closes member i gracefully: it sends LeaveGroup.
func (g *loadGroup) leave(i int) {
	g.mu.Lock()
	m := g.members[i]
	g.members = append(g.members[:i], g.members[i+1:]...)
	g.left++
	g.mu.Unlock()
	m.cl.Close()
	m.cancel()
	<-m.done
}

// kill stops member i abruptly, as a crashed process would: its context
// is canceled first, so it sends no LeaveGroup and the group learns of its
// end only from the rebalance and session timeouts.
func (g *loadGroup) kill(i int) {
	g.mu.Lock()
	m := g.members[i]
	g.members = append(g.members[:i], g.members[i+1:]...)
	g.killed++
	g.mu.Unlock()
	m.cancel()
	m.cl.Close()
	<-m.done
}

func (g *loadGroup) closeAll() {
	g.mu.Lock()
	members := g.members
	g.members = nil
	g.mu.Unlock()
	for _, m := range members {
		m.cl.Close()
		m.cancel()
		<-m.done
	}
}
