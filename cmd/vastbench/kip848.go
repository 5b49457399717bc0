package main

// The KIP-848 workload: one consumer protocol group of cgMembers members
// over a topic of cgPartitions partitions on the vastfake binary in the
// kafka profile. The members are not clients but raw ConsumerGroupHeartbeat
// requests (kmsg, over one kgo client's connection, a few in flight), each
// member acting as a client does: it takes the assignment a response
// carries at once (revoking what left it, owning what came) and reports
// what it owns in its next heartbeat. What is measured is the broker's
// coordinator: forming the group, one member leaving, and steady
// heartbeats, with the broker process's CPU time and resident-set growth.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/cmd/vastbench/internal/bench"
)

// The group's size: a large group, a thousand consumers over twenty
// thousand partitions; -quick shrinks it to 1/16.
var (
	cgMembers    = 1000
	cgPartitions = 20_000
)

// vastfakeKafka names the vastfake binary in the kafka profile in the
// workload's table.
const vastfakeKafka = "vastfake-kafka"

// cgWorkers is how many heartbeats are in flight at once.
const cgWorkers = 8

// cgSteadyRounds is how many heartbeats each member sends in the steady
// phase.
const cgSteadyRounds = 5

// cgMember is the client side of one member.
type cgMember struct {
	id      string
	epoch   int32
	owned   []kmsg.ConsumerGroupHeartbeatRequestTopic
	changed bool // owned changed since last reported
	n       int  // partitions owned
}

// beat sends one heartbeat for m (a join at epoch 0, a leave with leave)
// and applies its answer. It reports whether the response carried an
// assignment.
func (m *cgMember) beat(ctx context.Context, cl *kgo.Client, leave bool) (bool, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "kip848", m.id, m.epoch
	req.RebalanceTimeoutMillis = -1
	switch {
	case leave:
		req.MemberEpoch = -1
	case m.epoch == 0:
		req.RebalanceTimeoutMillis = 300_000
		req.SubscribedTopicNames = []string{"kip848"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	case m.changed:
		req.Topics = m.owned
		m.changed = false
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return false, fmt.Errorf("member %s at epoch %d: %w", m.id, req.MemberEpoch, err)
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment == nil {
		return false, nil
	}
	m.owned, m.n, m.changed = m.owned[:0], 0, true
	for _, t := range resp.Assignment.Topics {
		m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		m.n += len(t.Partitions)
	}
	return true, nil
}

// round sends one heartbeat for every member, cgWorkers at a time, and
// reports whether any response carried an assignment.
func cgRound(ctx context.Context, cl *kgo.Client, ms []*cgMember) (bool, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		changed bool
		first   error
	)
	for w := range cgWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ms); i += cgWorkers {
				got, err := ms[i].beat(ctx, cl, false)
				mu.Lock()
				changed = changed || got
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return changed, first
}

// cgSettle heartbeats every member round after round until the group is
// Stable as its members see it: a round carried no new assignment, every
// member is at the same epoch and together they own every partition. It
// returns how many heartbeats that took.
func cgSettle(ctx context.Context, cl *kgo.Client, ms []*cgMember) (int, error) {
	beats := 0
	for range 50 {
		changed, err := cgRound(ctx, cl, ms)
		beats += len(ms)
		if err != nil {
			return beats, err
		}
		if changed {
			continue
		}
		owned, same := 0, true
		for _, m := range ms {
			owned += m.n
			same = same && m.epoch == ms[0].epoch
		}
		if same && owned == cgPartitions {
			return beats, nil
		}
	}
	return beats, fmt.Errorf("the group did not settle in 50 rounds of heartbeats")
}

func newCGMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// kip848 runs the workload on a fresh process of the named broker:
// vastfakeKafka (the binary in the kafka profile) or kfake.
func kip848(broker, bin string) (map[string]float64, error) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := bench.Client(p.Addr)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Kafka's controller creates at most 10,000 partitions per request,
	// and so does vastfake: the rest come with CreatePartitions.
	const perRequest = 10_000
	if err := bench.CreateTopic(ctx, cl, "kip848", int32(min(cgPartitions, perRequest))); err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	for have := perRequest; have < cgPartitions; have += perRequest {
		rs, err := adm.CreatePartitions(ctx, min(perRequest, cgPartitions-have), "kip848")
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("adding partitions: %w", err)
		}
	}
	members := make([]*cgMember, cgMembers)
	for i := range members {
		members[i] = &cgMember{id: newCGMemberID()}
	}
	res := map[string]float64{}
	// phase runs fn and records its wall time and the broker's CPU time,
	// both in ms, and its RSS growth in MiB.
	phase := func(name string, fn func() (int, error)) error {
		u0, t0 := usage(p), time.Now()
		beats, err := fn()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		el := time.Since(t0)
		u1 := usage(p)
		res["cg_"+name+"_ms"] = ms(el)
		res["cg_"+name+"_broker_cpu_ms"] = ms(u1.CPU - u0.CPU)
		res["cg_"+name+"_heartbeats"] = float64(beats)
		res["cg_"+name+"_rss_mib"] = float64(u1.RSS-u0.RSS) / (1 << 20)
		return nil
	}
	// Forming: every member joins (cgWorkers at a time, so joins and
	// heartbeats interleave as they do when consumers start together),
	// then heartbeats until the group is Stable.
	if err := phase("form", func() (int, error) {
		if _, err := cgRound(ctx, cl, members); err != nil {
			return len(members), err
		}
		beats, err := cgSettle(ctx, cl, members)
		return len(members) + beats, err
	}); err != nil {
		return nil, err
	}
	// Steady: cgSteadyRounds heartbeats of every member, each at its
	// epoch with nothing to report.
	if err := phase("steady", func() (int, error) {
		for range cgSteadyRounds {
			changed, err := cgRound(ctx, cl, members)
			if err != nil {
				return 0, err
			}
			if changed {
				return 0, fmt.Errorf("a steady heartbeat carried an assignment")
			}
		}
		return cgSteadyRounds * len(members), nil
	}); err != nil {
		return nil, err
	}
	beats := res["cg_steady_heartbeats"]
	res["cg_steady_us"] = res["cg_steady_ms"] * 1000 / beats
	res["cg_steady_broker_cpu_us"] = res["cg_steady_broker_cpu_ms"] * 1000 / beats
	// One leave: the first member leaves, the others heartbeat until the
	// group is Stable again with its partitions moved to them.
	if err := phase("leave", func() (int, error) {
		if _, err := members[0].beat(ctx, cl, true); err != nil {
			return 1, err
		}
		beats, err := cgSettle(ctx, cl, members[1:])
		return 1 + beats, err
	}); err != nil {
		return nil, err
	}
	return res, nil
}

// kip848Rows are the workload's figures.
func kip848Rows() []row {
	g := fmt.Sprintf("%d members × %d partitions", cgMembers, cgPartitions)
	return []row{
		{label: g + ": formed (every member joins, heartbeats until Stable), ms", key: "cg_form_ms"},
		{label: "… heartbeats it took", key: "cg_form_heartbeats"},
		{label: "… broker CPU, ms", key: "cg_form_broker_cpu_ms"},
		{label: "… broker RSS growth, MiB", key: "cg_form_rss_mib"},
		{label: "steady heartbeat (at its epoch, nothing to report), µs wall, " + fmt.Sprint(cgWorkers) + " in flight", key: "cg_steady_us"},
		{label: "… broker CPU per heartbeat, µs", key: "cg_steady_broker_cpu_us"},
		{label: "one member leaves, the others heartbeat until Stable, ms", key: "cg_leave_ms"},
		{label: "… heartbeats it took", key: "cg_leave_heartbeats"},
		{label: "… broker CPU, ms", key: "cg_leave_broker_cpu_ms"},
	}
}
