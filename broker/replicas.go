package broker

// Replicas and leader election, for the kafka profile with several
// brokers. Every broker id shares one log, so a replica is never behind:
// what the leader acknowledged every replica has, and an election loses
// nothing, with acks=all or acks=1. What is modelled is what clients see
// of Kafka's replication: each partition's replicas (the preferred leader
// first) and in-sync set in Metadata, and a broker that goes down being
// fenced after the election delay, as Kafka's controller fences a broker
// whose heartbeats stop: it leaves every in-sync set and each partition it
// led gets the next in-sync replica as leader, with the leader epoch one
// higher, or none (offline) when no in-sync replica is left. Group and
// transaction coordinators follow the leaders of the __consumer_offsets and
// __transaction_state partitions they live on. With AnyAddressServes
// enforced (VAST) leadership stays where it is: a VAST node's virtual IPs
// move instead (FailOverAddress).

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// DefaultElectionDelay is how long a broker that went down (BrokerDown)
// keeps its leadership before it is fenced and its partitions get new
// leaders: Kafka's broker.session.timeout.ms, after which the controller
// fences a broker that stopped heartbeating.
const DefaultElectionDelay = 9 * time.Second

// transactionStateTopic is where Kafka keeps transactional ids, as groups
// in __consumer_offsets; both have 50 partitions by default
// (offsets.topic.num.partitions, transaction.state.log.num.partitions).
const (
	transactionStateTopic      = "__transaction_state"
	transactionStatePartitions = 50
)

// defaultInternalReplicas is offsets.topic.replication.factor and
// transaction.state.log.replication.factor, capped at the broker count.
const defaultInternalReplicas = 3

// WithElectionDelay sets how long a broker taken down keeps its partitions
// before it is fenced and new leaders are elected (kafka profile, several
// brokers), on the broker's clock; DefaultElectionDelay by default, 0
// elects at once. A broker brought back up within the delay was never
// fenced: it keeps its leadership and no epoch moves.
func WithElectionDelay(d time.Duration) Option {
	return func(c *config) { c.electionDelay, c.electionDelaySet = d, true }
}

// WithDefaultReplicationFactor sets default.replication.factor, the
// replication factor of a topic created without one (auto-created, seeded,
// or with -1 in CreateTopics), capped at the broker count. By default it is
// 3, capped at the broker count, as a test cluster is set up; Kafka's own
// default is 1.
func WithDefaultReplicationFactor(n int16) Option {
	return func(c *config) { c.replicationFactor = n }
}

// replication is the state of replicas and elections; b.moves.mu guards
// it, as it guards the leaders.
type replication struct {
	// fenced are the brokers that went down and were fenced: in no
	// in-sync set, leading nothing.
	fenced map[int32]bool
	// factors are the replication factors CreateTopics asked for, by
	// topic; the others have the default.
	factors map[string]int16
	// assigned are the replicas CreateTopics or CreatePartitions assigned
	// explicitly, by partition.
	assigned map[topicPartition][]int32
	// stopFence cancels the fence timer of a broker that is down and not
	// fenced yet, by broker id.
	stopFence map[int32]func() bool
	// down are the brokers taken down (BrokerDown) and not back up,
	// fenced or not; lagging counts those not fenced yet, still in
	// in-sync sets without fetching (insync.go), and isrChanged, when
	// set, is closed at the next change of either.
	down       map[int32]bool
	lagging    atomic.Int32
	isrChanged chan struct{}
	// holding is set while a partition's high watermark is held for a
	// lagging broker (holdHighWatermarksLocked).
	holding bool
}

// elects reports whether leaders move when a broker goes down: several
// brokers, and AnyAddressServes not enforced.
func (b *Broker) elects() bool { return len(b.nodes) > 1 && !b.enforced(rules.AnyAddressServes) }

// defaultReplicationFactor is default.replication.factor capped at the
// broker count.
func (b *Broker) defaultReplicationFactor() int16 {
	n := b.cfg.replicationFactor
	if n <= 0 {
		n = defaultInternalReplicas
	}
	return min(n, int16(len(b.nodes)))
}

// electionDelay is WithElectionDelay's, or DefaultElectionDelay.
func (b *Broker) electionDelay() time.Duration {
	if b.cfg.electionDelaySet {
		return b.cfg.electionDelay
	}
	return DefaultElectionDelay
}

// replicationFactorConfig is default.replication.factor as DescribeConfigs
// reports it: 1 without elections (VAST, or one broker).
func (b *Broker) replicationFactorConfig() int16 {
	if !b.elects() {
		return 1
	}
	return b.defaultReplicationFactor()
}

// replicasLocked returns partition p's replicas, the preferred leader
// first: with replication factor f, the f brokers from p mod N on, in
// BrokerIDs order (wrapping). Without elections it is the leader alone.
// Call with b.moves.mu held.
func (b *Broker) replicasLocked(topic string, p int32) []int32 {
	if !b.elects() {
		return nil
	}
	if a, ok := b.repl.assigned[topicPartition{topic, p}]; ok {
		return a
	}
	f := b.defaultReplicationFactor()
	switch {
	case topic == offsetsTopic || topic == transactionStateTopic:
		f = min(defaultInternalReplicas, int16(len(b.nodes)))
	case b.repl.factors[topic] > 0:
		f = b.repl.factors[topic]
	}
	out := make([]int32, f)
	for i := range out {
		out[i] = b.nodes[(int(max(p, 0))+i)%len(b.nodes)].id
	}
	return out
}

// stateLocked returns partition p's leader (-1: offline), leader epoch
// and in-sync replicas. A partition no election or move has touched has
// its preferred leader at epoch 0 and every replica not fenced in sync.
// Call with b.moves.mu held.
func (b *Broker) stateLocked(topic string, p int32) movedLeader {
	if l, ok := b.moves.leaders[topicPartition{topic, p}]; ok {
		return l
	}
	reps := b.replicasLocked(topic, p)
	if reps == nil {
		return movedLeader{id: b.nodes[int(max(p, 0))%len(b.nodes)].id}
	}
	var isr []int32
	for _, r := range reps {
		if !b.repl.fenced[r] {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 { // created while every replica was down
		return movedLeader{id: -1, isr: reps[:1]}
	}
	return movedLeader{id: isr[0], isr: isr}
}

// PartitionState returns partition p's leader (-1 when offline), leader
// epoch, replicas (preferred leader first) and in-sync replicas, as
// Metadata lists them.
func (b *Broker) PartitionState(topic string, p int32) (leader, epoch int32, replicas, isr []int32) {
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	st := b.stateLocked(topic, p)
	replicas = b.replicasLocked(topic, p)
	if replicas == nil { // no elections: the leader is the one replica
		return st.id, st.epoch, []int32{st.id}, []int32{st.id}
	}
	return st.id, st.epoch, replicas, slices.Clone(st.isr)
}

// isFenced reports whether broker id went down and was fenced (and has
// not come back): Metadata leaves it out of its brokers, as Kafka does.
func (b *Broker) isFenced(id int32) bool {
	if !b.moves.any.Load() {
		return false
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	return b.repl.fenced[id]
}

// offlineReplicas returns the replicas of a partition on fenced brokers.
func (b *Broker) offlineReplicas(replicas []int32) []int32 {
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	var out []int32
	for _, r := range replicas {
		if b.repl.fenced[r] {
			out = append(out, r)
		}
	}
	return out
}

// eachPartition calls fn for every partition of every topic, the
// internal ones included, and of __transaction_state, which has no topic
// here but places transaction coordinators.
func (b *Broker) eachPartition(fn func(topic string, p int32)) {
	seen := false
	for _, t := range b.data.all() {
		seen = seen || t.name == offsetsTopic
		for p := range t.partitions {
			fn(t.name, int32(p))
		}
	}
	if !seen {
		for p := range int32(offsetsTopicPartitions) {
			fn(offsetsTopic, p)
		}
	}
	for p := range int32(transactionStatePartitions) {
		fn(transactionStateTopic, p)
	}
}

// scheduleFence fences broker n after the election delay, unless it comes
// back (or goes down again) first: gen is n.gen when it went down. Call
// with n.mu held.
func (b *Broker) scheduleFence(n *node, gen int) {
	if !b.elects() {
		return
	}
	delay := b.electionDelay()
	if delay <= 0 {
		b.fence(n.id)
		return
	}
	stop := b.clock.AfterFunc(delay, func() {
		b.background(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.gen != gen || !n.down || b.ctx.Err() != nil {
				return // back up (or down again) meanwhile, or closed
			}
			b.fence(n.id)
			b.coordinatorsMoved()
		})
	})
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.repl.stopFence == nil {
		b.repl.stopFence = map[int32]func() bool{}
	}
	b.repl.stopFence[n.id] = stop
}

// stopFenceTimers cancels the fence timers of brokers that are down and
// not fenced yet: of broker id, or of every broker when id is -1 (Close).
func (b *Broker) stopFenceTimers(id int32) {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	for k, stop := range b.repl.stopFence {
		if id == -1 || k == id {
			stop()
			delete(b.repl.stopFence, k)
		}
	}
}

// fence takes broker id out of every in-sync set and elects a new leader
// for each partition it led: the first in-sync replica left, in replica
// order, with the leader epoch one higher; none (offline, leader -1, the
// in-sync set keeping its last member as Kafka's does) when no other
// replica is in sync. Call with the node's mu held.
func (b *Broker) fence(id int32) {
	moved := 0
	b.moves.mu.Lock()
	delete(b.repl.stopFence, id)
	if b.repl.fenced == nil {
		b.repl.fenced = map[int32]bool{}
	}
	if b.moves.leaders == nil {
		b.moves.leaders = map[topicPartition]movedLeader{}
	}
	b.eachPartition(func(topic string, p int32) {
		st := b.stateLocked(topic, p)
		if !slices.Contains(st.isr, id) && st.id != id {
			return
		}
		if len(st.isr) > 1 {
			st.isr = slices.DeleteFunc(slices.Clone(st.isr), func(r int32) bool { return r == id })
		}
		if st.id == id {
			st.id, st.epoch = -1, st.epoch+1
			for _, r := range st.isr {
				if r != id && !b.repl.fenced[r] {
					st.id = r
					break
				}
			}
			moved++
			if st.id != -1 {
				b.beginLeaderEpoch(topic, p, st.epoch)
			}
		}
		b.moves.leaders[topicPartition{topic, p}] = st
	})
	b.repl.fenced[id] = true
	b.moves.any.Store(true)
	b.noteLaggingLocked() // acks=all produces held for it are answered
	b.moves.mu.Unlock()
	b.log.Info("broker fenced: new leaders elected", "broker", id, "partitions", moved)
	if b.audited(rules.AnyAddressServes) {
		b.recordFinding(nil, rules.AnyAddressServes, rules.Differs, "", "", func() string {
			return "broker " + strconv.Itoa(int(id)) + " went down: Kafka elected new leaders for the " + strconv.Itoa(moved) +
				" partitions it led; VAST keeps leadership where it is and moves the node's virtual IPs (assumed)"
		})
	}
}

// rejoin brings broker id back after it was fenced: it rejoins the
// in-sync set of every partition it is a replica of that has a leader, as
// a follower (one shared log: it is caught up at once), and leads again
// each offline partition whose in-sync set it is the last of, with the
// leader epoch one higher. A replica that fell out of an offline
// partition's in-sync set does not lead it (no unclean election). Call
// with the node's mu held.
func (b *Broker) rejoin(id int32) {
	b.stopFenceTimers(id)
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if !b.repl.fenced[id] {
		return
	}
	b.eachPartition(func(topic string, p int32) {
		reps := b.replicasLocked(topic, p)
		if !slices.Contains(reps, id) {
			return
		}
		st := b.stateLocked(topic, p)
		switch {
		case st.id == -1 && slices.Contains(st.isr, id):
			st.id, st.epoch = id, st.epoch+1
			b.beginLeaderEpoch(topic, p, st.epoch)
		case st.id != -1 && !slices.Contains(st.isr, id):
		default:
			return
		}
		// With a leader, every live replica follows it and, the log
		// being shared, is in sync at once.
		st.isr = slices.DeleteFunc(slices.Clone(reps), func(r int32) bool { return r != id && b.repl.fenced[r] })
		b.moves.leaders[topicPartition{topic, p}] = st
	})
	delete(b.repl.fenced, id)
}

// minInsyncCode returns NOT_ENOUGH_REPLICAS for an acks=all produce to a
// partition with fewer in-sync replicas than the topic's
// min.insync.replicas, as Kafka's leader answers, and 0 otherwise.
func (b *Broker) minInsyncCode(topic string, p int32, cfg topicConfig) int16 {
	if !b.elects() || !b.moves.any.Load() {
		return 0
	}
	min, err := strconv.Atoi(cfg.set["min.insync.replicas"])
	if err != nil || min <= 1 {
		return 0
	}
	b.moves.mu.RLock()
	isr := len(b.stateLocked(topic, p).isr)
	b.moves.mu.RUnlock()
	if isr < min {
		return kerr.NotEnoughReplicas.Code
	}
	return 0
}

// setReplicationFactor records the replication factor CreateTopics asked
// for topic.
func (b *Broker) setReplicationFactor(topic string, f int16) {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.repl.factors == nil {
		b.repl.factors = map[string]int16{}
	}
	b.repl.factors[topic] = f
}

// checkReplicationFactor returns INVALID_REPLICATION_FACTOR and Kafka's
// message for a CreateTopics replication factor the cluster cannot have:
// 0, below -1, or above the broker count (one broker too, as Kafka's).
// With AnyAddressServes enforced (VAST) the replication factor is not a
// concept and any is accepted.
func (b *Broker) checkReplicationFactor(f int16) (int16, string) {
	switch {
	case b.enforced(rules.AnyAddressServes):
		return 0, ""
	case f == 0 || f < -1:
		return kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."
	case int(f) > len(b.nodes):
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", f, f, len(b.nodes))
	}
	return 0, ""
}

// checkReplicaList returns INVALID_REPLICA_ASSIGNMENT and Kafka's message
// for one partition's explicit replica list (CreateTopics, CreatePartitions)
// the cluster cannot have, checked as Kafka's controller checks it
// (ReplicationControlManager.validateManualPartitionAssignment, then the
// active-replica check): an empty list; in sorted order, a broker that does
// not exist or one named twice; a length other than factor (when above
// 0: the previous lists', or the topic's replication factor); every broker
// of the list fenced. partition names it in that last message. Without
// elections (VAST) assignments are accepted and ignored.
func (b *Broker) checkReplicaList(reps []int32, factor int, partition int32) (int16, string) {
	if b.enforced(rules.AnyAddressServes) {
		return 0, ""
	}
	if len(reps) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(reps))
	for i, id := range sorted {
		if b.nodeByID(id) == nil {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if factor > 0 && len(reps) != factor {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(reps), factor)
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	if !slices.ContainsFunc(reps, func(id int32) bool { return !b.repl.fenced[id] }) {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", partition)
	}
	return 0, ""
}

// checkTopicAssignment returns the error Kafka's controller answers for a
// CreateTopics topic with explicit replica assignments, in its order
// (ReplicationControlManager.createTopic): INVALID_REQUEST when the topic
// also sets a replication factor or a partition count; then, list by list
// in request order, INVALID_REPLICA_ASSIGNMENT for a partition assigned
// twice or a list checkReplicaList refuses (the first list's length sets
// the others'); then for partitions that are not 0 to n-1. On success it
// returns the lists by partition. Without elections (VAST) the lists are
// accepted (and ignored) whatever they hold.
func (b *Broker) checkTopicAssignment(rt *kmsg.CreateTopicsRequestTopic) ([][]int32, int16, string) {
	elects := !b.enforced(rules.AnyAddressServes)
	if elects && rt.ReplicationFactor != -1 {
		return nil, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1."
	}
	if elects && rt.NumPartitions != -1 {
		return nil, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."
	}
	byPartition := make(map[int32][]int32, len(rt.ReplicaAssignment))
	factor := 0
	for _, ra := range rt.ReplicaAssignment {
		if _, ok := byPartition[ra.Partition]; ok {
			return nil, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Found multiple manual partition assignments for partition %d", ra.Partition)
		}
		if code, msg := b.checkReplicaList(ra.Replicas, factor, ra.Partition); code != 0 {
			return nil, code, msg
		}
		factor = len(ra.Replicas)
		byPartition[ra.Partition] = ra.Replicas
	}
	assign := make([][]int32, len(byPartition))
	for p, reps := range byPartition {
		if p < 0 || int(p) >= len(assign) {
			return nil, kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence"
		}
		assign[p] = reps
	}
	return assign, 0, ""
}

// setAssignment records explicit replica assignments of topic's
// partitions from first on.
func (b *Broker) setAssignment(topic string, first int32, assign [][]int32) {
	if !b.elects() || len(assign) == 0 {
		return
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.repl.assigned == nil {
		b.repl.assigned = map[topicPartition][]int32{}
	}
	for i, reps := range assign {
		b.repl.assigned[topicPartition{topic, first + int32(i)}] = slices.Clone(reps)
	}
}

// replicationFactorOf returns the replication factor of topic's partition
// 0, the one its new partitions get.
func (b *Broker) replicationFactorOf(topic string) int {
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	return len(b.replicasLocked(topic, 0))
}

// ErrElectionNotNeeded and ErrPreferredLeaderNotAvailable are what
// ElectPreferredLeader returns when the preferred replica leads already,
// or cannot lead (fenced, or not in sync).
var (
	ErrElectionNotNeeded           = kerr.ElectionNotNeeded
	ErrPreferredLeaderNotAvailable = kerr.PreferredLeaderNotAvailable
)

// ElectPreferredLeader makes the preferred replica (the first) of
// partition p of topic its leader again, with the leader epoch one
// higher, as Kafka's preferred election (ElectLeaders, or
// kafka-leader-election.sh --election-type preferred) does after a broker
// came back. It returns ErrElectionNotNeeded when it leads already,
// ErrPreferredLeaderNotAvailable when it is fenced or not in sync, and
// ErrUnknownPartition for a partition that does not exist.
func (b *Broker) ElectPreferredLeader(topic string, p int32) error {
	if t := b.data.get(topic); t == nil || t.partition(p) == nil {
		return fmt.Errorf("%w: no partition %d of topic %q", ErrUnknownPartition, p, topic)
	}
	defer b.coordinatorsMoved()
	return b.elect(topic, p, false)
}

// ElectPreferredLeaders runs ElectPreferredLeader on every partition of
// the topic name, or of every topic when name is "", and returns how many
// partitions changed leader.
func (b *Broker) ElectPreferredLeaders(name string) (int, error) {
	var ts []*topic
	if name == "" {
		ts = b.data.all()
	} else if t := b.data.get(name); t != nil {
		ts = []*topic{t}
	} else {
		return 0, fmt.Errorf("%w: no topic %q", ErrUnknownPartition, name)
	}
	n := 0
	for _, t := range ts {
		for p := range t.partitions {
			if b.elect(t.name, int32(p), false) == nil {
				n++
			}
		}
	}
	b.coordinatorsMoved()
	return n, nil
}

// elect runs a preferred election (unclean false) or an unclean one on a
// partition that exists: the unclean one makes the first live replica
// leader of an offline partition (one shared log: nothing is lost), and
// returns ErrElectionNotNeeded for a partition with a leader and
// kerr.EligibleLeadersNotAvailable when no replica is live.
func (b *Broker) elect(topic string, p int32, unclean bool) error {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	st := b.stateLocked(topic, p)
	reps := b.replicasLocked(topic, p)
	if reps == nil {
		reps = []int32{b.nodes[int(max(p, 0))%len(b.nodes)].id}
	}
	if unclean {
		if st.id != -1 {
			return kerr.ElectionNotNeeded
		}
		for _, r := range reps {
			if !b.repl.fenced[r] {
				st.id, st.epoch = r, st.epoch+1
				st.isr = slices.DeleteFunc(slices.Clone(reps), func(r int32) bool { return b.repl.fenced[r] })
				b.storeLocked(topic, p, st)
				return nil
			}
		}
		return kerr.EligibleLeadersNotAvailable
	}
	switch pref := reps[0]; {
	case st.id == pref:
		return kerr.ElectionNotNeeded
	case b.repl.fenced[pref] || (st.isr != nil && !slices.Contains(st.isr, pref)):
		return kerr.PreferredLeaderNotAvailable
	default:
		st.id, st.epoch = pref, st.epoch+1
		b.storeLocked(topic, p, st)
	}
	return nil
}

// storeLocked stores a partition's leadership, a new leader with a new
// epoch, which it begins in the partition's log. Call with b.moves.mu
// held.
func (b *Broker) storeLocked(topic string, p int32, st movedLeader) {
	if b.moves.leaders == nil {
		b.moves.leaders = map[topicPartition]movedLeader{}
	}
	b.moves.leaders[topicPartition{topic, p}] = st
	b.moves.any.Store(true)
	if st.id != -1 {
		b.beginLeaderEpoch(topic, p, st.epoch)
	}
}

// handleElectLeaders answers ElectLeaders v0-v2 (kafka-leader-election.sh,
// Admin electLeaders): a preferred election (type 0, and v0) moves each
// partition's leadership back to its preferred replica, an unclean one
// (type 1) gives an offline partition a leader; null topics means every
// partition. A partition gets ELECTION_NOT_NEEDED when there is nothing to
// do, PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica cannot
// lead, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica can, and
// UNKNOWN_TOPIC_OR_PARTITION when it does not exist.
// VAST: not documented; leadership stays where it is (no broker is ever
// fenced), so a preferred election only undoes MoveLeader.
// Authorizes: KafkaAlterConfigs on the view (Kafka: ALTER on the cluster;
// CLUSTER_AUTHORIZATION_FAILED).
func handleElectLeaders(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	denied := b.authz.active() && !b.allow(r, KafkaAlterConfigs, ViewResource(b.cfg.view))
	switch {
	case denied:
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v0 has none: each partition has it below
	case req.ElectionType != 0 && req.ElectionType != 1:
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	topics := req.Topics
	if topics == nil && denied {
		return resp
	}
	if topics == nil {
		for _, t := range b.data.all() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = t.name
			for p := range t.partitions {
				rt.Partitions = append(rt.Partitions, int32(p))
			}
			topics = append(topics, rt)
		}
	}
	for _, rt := range mergeTopics(topics,
		func(t *kmsg.ElectLeadersRequestTopic) string { return t.Topic },
		func(t *kmsg.ElectLeadersRequestTopic) *[]int32 { return &t.Partitions },
		self, firstOfEach) {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		t := b.data.get(rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			if denied {
				sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			} else if t == nil || t.partition(p) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if err := b.elect(rt.Topic, p, req.ElectionType == 1); err != nil {
				if ke, ok := err.(*kerr.Error); ok {
					sp.ErrorCode = ke.Code
				}
				sp.ErrorMessage = kmsg.StringPtr(err.Error())
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.coordinatorsMoved() // a __consumer_offsets partition's leader may have moved
	return resp
}
