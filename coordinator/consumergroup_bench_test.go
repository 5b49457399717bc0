package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cost of a KIP-848 group of 1,000 members over one topic of 20,000
// partitions: forming it, a member leaving, and the steady heartbeats in
// between. A heartbeat of a member at its target touches nothing else
// (O(1)); a new group epoch computes every member's target once
// (O(members + partitions)); each member then reconciles its own
// partitions only.
const (
	benchMembers    = 1000
	benchPartitions = 20_000
)

// benchGroup forms the group: every member joins, then heartbeats (reporting
// what it owns when that changed, as clients do) until the group is Stable.
// It returns the members and how many heartbeats the forming took.
func benchGroup(tb testing.TB, h *cgHarness) ([]*cmem, int) {
	ms := make([]*cmem, benchMembers)
	beats := 0
	for i := range ms {
		ms[i] = h.member("g", fmt.Sprintf("member-%04d", i))
		if code := ms[i].join("t").ErrorCode; code != 0 {
			tb.Fatalf("join: %d", code)
		}
		beats++
	}
	return ms, beats + settleAll(tb, h, ms)
}

// settleAll heartbeats every member in turn until the group is Stable and
// returns how many heartbeats that took.
func settleAll(tb testing.TB, h *cgHarness, ms []*cmem) int {
	beats := 0
	for round := 0; ; round++ {
		if round == 10 {
			tb.Fatalf("not Stable after 10 rounds of heartbeats")
		}
		for _, m := range ms {
			if code := m.beat(nil).ErrorCode; code != 0 {
				tb.Fatalf("heartbeat: %d", code)
			}
			beats++
		}
		if h.c.ConsumerGroupStable("g") {
			return beats
		}
	}
}

func benchHarness(b *testing.B) *cgHarness {
	h := newCGHarness(b, func(c *Config) { c.ConsumerSessionTimeout = time.Hour })
	h.addTopic("t", benchPartitions)
	return h
}

// BenchmarkConsumerGroupForm: 1,000 members join one after another (each
// join a new group epoch) and heartbeat until every one has its target.
func BenchmarkConsumerGroupForm(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		h := benchHarness(b)
		b.StartTimer()
		_, beats := benchGroup(b, h)
		b.ReportMetric(float64(beats), "heartbeats/op")
	}
}

// BenchmarkConsumerGroupLeave: one member of the formed group leaves, and
// the others heartbeat until the group is Stable again (its 20 partitions
// move to 20 others); the member joins again untimed.
func BenchmarkConsumerGroupLeave(b *testing.B) {
	h := benchHarness(b)
	ms, _ := benchGroup(b, h)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := ms[i%len(ms)]
		i++
		if code := m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }).ErrorCode; code != 0 {
			b.Fatalf("leave: %d", code)
		}
		rest := make([]*cmem, 0, len(ms)-1)
		for _, o := range ms {
			if o != m {
				rest = append(rest, o)
			}
		}
		beats := settleAll(b, h, rest)
		b.ReportMetric(float64(beats), "heartbeats/op")
		b.StopTimer()
		m.join("t")
		settleAll(b, h, ms)
		b.StartTimer()
	}
}

// BenchmarkConsumerGroupSteadyHeartbeat: one heartbeat of a member of the
// Stable group, at its epoch, owning what it was given.
func BenchmarkConsumerGroupSteadyHeartbeat(b *testing.B) {
	h := benchHarness(b)
	ms, _ := benchGroup(b, h)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if code := ms[i%len(ms)].beat(nil).ErrorCode; code != 0 {
			b.Fatalf("heartbeat: %d", code)
		}
		i++
	}
	if !h.c.ConsumerGroupStable("g") {
		b.Fatal("the group left Stable")
	}
}
