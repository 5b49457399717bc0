package broker

// Several broker addresses in one broker. Each node is one Kafka broker id
// with its own listener and advertised address; every node serves the same
// topics, logs, groups and committed offsets, as VAST's virtual IPs all
// front one cluster. Metadata lists every node and names a leader for each
// partition, FindCoordinator a coordinator for each group, by rules a test
// can compute (LeaderOf, CoordinatorOf). A node can be taken down and
// brought back (BrokerDown, BrokerUp) while the others serve.

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// MaxBrokers bounds WithBrokers: a listener and an accept goroutine each.
const MaxBrokers = 16

// ErrUnknownBroker is returned for a broker id the broker does not have.
var ErrUnknownBroker = errors.New("vastfake: no broker with that id")

// node is one broker id and its address.
type node struct {
	id   int32
	addr string // the address it listens on
	host string // advertised host and port
	port int32

	mu         sync.Mutex // guards the fields below
	ln         net.Listener
	acceptDone chan struct{}
	down       bool
	// gen counts down and up changes, so that a blackout's end
	// (FailOverAddress) brings back only the down it started.
	gen int
	// stopBlackout cancels a blackout's timer, or is nil.
	stopBlackout func() bool
}

// advertised returns n's advertised host:port.
func (n *node) advertised() string { return net.JoinHostPort(n.host, strconv.Itoa(int(n.port))) }

// WithBrokers makes the broker n broker ids, each with its own listener:
// ids WithNodeID's and the next n-1, listening on the WithListen address
// and the ports after it (all on ports the system picks when its port is
// 0). It is 1 by default; New fails for n below 1 or above MaxBrokers.
func WithBrokers(n int) Option { return func(c *config) { c.brokers = n } }

// WithAdvertiseBrokers sets the host:port each broker id hands to clients,
// in id order, for brokers behind NAT or in containers; New fails unless
// there is one per broker. WithAdvertise sets the first.
func WithAdvertiseBrokers(addrs ...string) Option {
	return func(c *config) { c.advertiseAll = addrs }
}

// listenNodes opens a listener for each of cfg.brokers nodes.
func (b *Broker) listenNodes() error {
	cfg := &b.cfg
	if cfg.brokers < 1 || cfg.brokers > MaxBrokers {
		return fmt.Errorf("vastfake: %d brokers: want 1 to %d", cfg.brokers, MaxBrokers)
	}
	adv := cfg.advertiseAll
	switch {
	case len(adv) == 0 && cfg.advertise != "":
		adv = []string{cfg.advertise}
		if cfg.brokers > 1 {
			return fmt.Errorf("vastfake: advertise %q names one broker of %d: give one address per broker", cfg.advertise, cfg.brokers)
		}
	case len(adv) != 0 && len(adv) != cfg.brokers:
		return fmt.Errorf("vastfake: %d advertised addresses for %d brokers", len(adv), cfg.brokers)
	}
	host, portStr, err := net.SplitHostPort(cfg.listen)
	if err != nil {
		return fmt.Errorf("vastfake: listen %q: %w", cfg.listen, err)
	}
	first, err := strconv.Atoi(portStr)
	if err != nil || first < 0 || first+cfg.brokers-1 > 65535 {
		return fmt.Errorf("vastfake: listen %q: bad port", cfg.listen)
	}
	for i := range cfg.brokers {
		addr := cfg.listen
		if i > 0 && first != 0 {
			addr = net.JoinHostPort(host, strconv.Itoa(first+i))
		}
		ln, err := b.listen(addr)
		if err != nil {
			b.closeListeners()
			return fmt.Errorf("vastfake: listen: %w", err)
		}
		n := &node{id: cfg.nodeID + int32(i), addr: ln.Addr().String(), ln: ln}
		b.nodes = append(b.nodes, n)
		a := n.addr
		if len(adv) > 0 {
			a = adv[i]
		}
		h, p, err := net.SplitHostPort(a)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil || port < 0 || port > 65535 {
			b.closeListeners()
			return fmt.Errorf("vastfake: advertise %q: want host:port", a)
		}
		n.host, n.port = h, int32(port)
	}
	return nil
}

// closeListeners closes the listeners New opened, when it fails.
func (b *Broker) closeListeners() {
	for _, n := range b.nodes {
		n.ln.Close()
	}
	b.nodes = nil
}

// startAccepting serves n's listener ln in a new goroutine. Call with n.mu
// held or before the broker is shared.
func (b *Broker) startAccepting(n *node, ln net.Listener) {
	n.ln = ln
	done := make(chan struct{})
	n.acceptDone = done
	b.wg.Add(1)
	go func() {
		defer close(done)
		b.acceptLoop(n, ln)
	}()
}

// stopNode closes n's listener and every connection it accepted, and
// waits for its accept loop to end. Call with n.mu held.
func (b *Broker) stopNode(n *node) {
	n.ln.Close()
	<-n.acceptDone
	b.dropConnections(n)
}

// startNode listens on n's address again and serves it. Call with n.mu
// held. The old socket may linger briefly, so binding is retried for up to
// a second.
func (b *Broker) startNode(n *node) error {
	var ln net.Listener
	var err error
	for try := 0; try < 100; try++ {
		if ln, err = b.listen(n.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	b.startAccepting(n, ln)
	return nil
}

// nodeByID returns the node with broker id id, or nil.
func (b *Broker) nodeByID(id int32) *node {
	for _, n := range b.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// isBrokerName reports whether name is one of the broker ids, as a
// DescribeConfigs broker resource names it ("1").
func (b *Broker) isBrokerName(name string) bool {
	for _, n := range b.nodes {
		if strconv.Itoa(int(n.id)) == name {
			return true
		}
	}
	return false
}

// BrokerIDs returns the broker ids, in order; the first is the bootstrap
// address's (Addr).
func (b *Broker) BrokerIDs() []int32 {
	ids := make([]int32, len(b.nodes))
	for i, n := range b.nodes {
		ids[i] = n.id
	}
	return ids
}

// BrokerAddr returns the address broker id listens on, or "" when there is
// no such broker.
func (b *Broker) BrokerAddr(id int32) string {
	if n := b.nodeByID(id); n != nil {
		return n.addr
	}
	return ""
}

// BrokerDown takes broker id down: its listener closes, so the address
// refuses connections, and the connections it has are dropped; the other
// brokers serve on, and leadership stays where it is, as when a VAST node
// fails before its virtual IPs move. It returns ErrUnknownBroker for an id
// the broker does not have, an error when the broker is already down, and
// ErrClosed after Close.
func (b *Broker) BrokerDown(id int32) error {
	n := b.nodeByID(id)
	if n == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case b.ctx.Err() != nil:
		return ErrClosed
	case n.down:
		return fmt.Errorf("vastfake: broker %d is already down", id)
	}
	b.stopNode(n)
	n.down = true
	n.gen++
	return nil
}

// BrokerUp brings broker id back on the same address after BrokerDown. It
// returns ErrUnknownBroker for an id the broker does not have, an error
// when the broker is up or its address cannot be bound again (another
// process took the port), and ErrClosed after Close.
func (b *Broker) BrokerUp(id int32) error {
	n := b.nodeByID(id)
	if n == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case b.ctx.Err() != nil:
		return ErrClosed
	case !n.down:
		return fmt.Errorf("vastfake: broker %d is up", id)
	}
	if err := b.startNode(n); err != nil {
		return fmt.Errorf("vastfake: broker %d up: %w", id, err)
	}
	n.down = false
	n.gen++
	return nil
}

// FailOverAddress emulates a VAST virtual-IP failover of broker id: every
// connection on its address is reset, the address refuses connections for
// blackout on the broker's clock (a manual clock's Advance ends it; 0 is
// none), then the same id serves again on the same address. Leaders,
// coordinators, records and committed offsets stay where they are (Failover
// is the fault that loses committed offsets). It returns ErrUnknownBroker
// for an id the broker does not have, an error when the broker is down,
// and ErrClosed after Close. BrokerUp ends a blackout early.
func (b *Broker) FailOverAddress(id int32, blackout time.Duration) error {
	n := b.nodeByID(id)
	if n == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	if blackout < 0 {
		return fmt.Errorf("vastfake: blackout %v: want 0 or more", blackout)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case b.ctx.Err() != nil:
		return ErrClosed
	case n.down:
		return fmt.Errorf("vastfake: broker %d is down", id)
	}
	b.stopNode(n)
	if blackout == 0 {
		if err := b.startNode(n); err != nil {
			n.down = true
			return fmt.Errorf("vastfake: broker %d failover: %w", id, err)
		}
		return nil
	}
	n.down = true
	n.gen++
	gen := n.gen
	n.stopBlackout = b.clock.AfterFunc(blackout, func() {
		b.background(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.gen != gen || b.ctx.Err() != nil {
				return // brought up (or down again) meanwhile, or closed
			}
			if err := b.startNode(n); err != nil {
				b.log.Error("failover: the address cannot be bound again", "broker", n.id, "err", err)
				return
			}
			n.down = false
			n.gen++
		})
	})
	return nil
}

// BrokerIsDown reports whether broker id is down (BrokerDown).
func (b *Broker) BrokerIsDown(id int32) bool {
	n := b.nodeByID(id)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

// LeaderOf returns the broker id that leads partition p of topic: broker i
// of the N (in BrokerIDs order) leads the partitions p with p mod N = i,
// unless MoveLeader moved it. Clients send produce and fetch requests to
// the leader Metadata names.
func (b *Broker) LeaderOf(topic string, p int32) int32 {
	if b.moves.any.Load() {
		b.moves.mu.RLock()
		l, ok := b.moves.leaders[topicPartition{topic, p}]
		b.moves.mu.RUnlock()
		if ok {
			return l.id
		}
	}
	return b.nodes[int(max(p, 0))%len(b.nodes)].id
}

// LeaderEpochOf returns partition p's leader epoch: 0, one more for each
// MoveLeader.
func (b *Broker) LeaderEpochOf(topic string, p int32) int32 {
	if !b.moves.any.Load() {
		return 0
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	return b.moves.leaders[topicPartition{topic, p}].epoch
}

// CoordinatorOf returns the broker id FindCoordinator names for a group
// (or transactional id): unless MoveCoordinator moved it, the leader of
// the __consumer_offsets partition Kafka would keep it in, abs(Java
// hashCode of the id) mod 50.
func (b *Broker) CoordinatorOf(group string) int32 {
	if b.moves.any.Load() {
		b.moves.mu.RLock()
		id, ok := b.moves.coordinators[group]
		b.moves.mu.RUnlock()
		if ok {
			return id
		}
	}
	return b.nodes[int((javaStringHash(group)&0x7fffffff)%offsetsTopicPartitions)%len(b.nodes)].id
}

// checkLeaderEpoch checks the leader epoch a Fetch or ListOffsets
// partition says it knows (-1: none) against the partition's, as Kafka
// does: an older one gets FENCED_LEADER_EPOCH (the client's metadata is
// stale), a newer one UNKNOWN_LEADER_EPOCH; 0 when it matches.
func (b *Broker) checkLeaderEpoch(topic string, p, known int32) int16 {
	switch epoch := b.LeaderEpochOf(topic, p); {
	case known < 0 || known == epoch:
		return 0
	case known < epoch:
		return kerr.FencedLeaderEpoch.Code
	}
	return kerr.UnknownLeaderEpoch.Code
}

// moves are the leaders and coordinators MoveLeader and MoveCoordinator
// set; any is set once there is one, so that LeaderOf costs no lock until
// a test moves something.
type moves struct {
	any          atomic.Bool
	mu           sync.RWMutex
	leaders      map[topicPartition]movedLeader
	coordinators map[string]int32
}

type topicPartition struct {
	topic     string
	partition int32
}

type movedLeader struct{ id, epoch int32 }

// MoveLeader makes broker id the leader of partition p of topic, with the
// leader epoch one higher, as when Kafka elects a new leader: Metadata
// names it, and in the kafka profile (AnyAddressServes off) the old leader
// answers NOT_LEADER_OR_FOLLOWER and a fetch with the old epoch gets
// FENCED_LEADER_EPOCH, so clients refresh their metadata and move. It
// returns ErrUnknownBroker for an id the broker does not have and
// ErrUnknownPartition for a partition that does not exist. The move lasts
// until the topic is deleted.
func (b *Broker) MoveLeader(topic string, p int32, id int32) error {
	if b.nodeByID(id) == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	t := b.data.get(topic)
	if t == nil || t.partition(p) == nil {
		return fmt.Errorf("%w: no partition %d of topic %q", ErrUnknownPartition, p, topic)
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.moves.leaders == nil {
		b.moves.leaders = map[topicPartition]movedLeader{}
	}
	tp := topicPartition{topic, p}
	b.moves.leaders[tp] = movedLeader{id: id, epoch: b.moves.leaders[tp].epoch + 1}
	b.moves.any.Store(true)
	return nil
}

// MaxCoordinatorMoves bounds the groups MoveCoordinator keeps a moved
// coordinator for (leader moves are bounded by the partitions).
const MaxCoordinatorMoves = 10_000

// MoveCoordinator makes broker id the coordinator of group: FindCoordinator
// names it, and in the kafka profile the old coordinator answers the
// group's requests with NOT_COORDINATOR, so clients look it up again. The
// group's members, generation and committed offsets stay. It returns
// ErrUnknownBroker for an id the broker does not have, and an error past
// MaxCoordinatorMoves groups.
func (b *Broker) MoveCoordinator(group string, id int32) error {
	if b.nodeByID(id) == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if _, ok := b.moves.coordinators[group]; !ok && len(b.moves.coordinators) >= MaxCoordinatorMoves {
		return fmt.Errorf("vastfake: coordinators of %d groups moved already, the most kept", MaxCoordinatorMoves)
	}
	if b.moves.coordinators == nil {
		b.moves.coordinators = map[string]int32{}
	}
	b.moves.coordinators[group] = id
	b.moves.any.Store(true)
	return nil
}

// forgetMoves drops the leader moves of a deleted topic.
func (b *Broker) forgetMoves(topic string) {
	if !b.moves.any.Load() {
		return
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	for tp := range b.moves.leaders {
		if tp.topic == topic {
			delete(b.moves.leaders, tp)
		}
	}
}

// leaderAPIs are the APIs a partition's leader serves, coordinatorAPIs
// those a group's coordinator serves: with AnyAddressServes off, another
// broker refuses them as Kafka does.
var leaderAPIs = map[int16]bool{
	int16(kmsg.Produce): true, int16(kmsg.Fetch): true, int16(kmsg.ListOffsets): true, int16(kmsg.DeleteRecords): true,
	int16(kmsg.DescribeProducers): true,
}

var coordinatorAPIs = map[int16]bool{
	int16(kmsg.JoinGroup): true, int16(kmsg.SyncGroup): true, int16(kmsg.Heartbeat): true, int16(kmsg.LeaveGroup): true,
	int16(kmsg.OffsetCommit): true, int16(kmsg.OffsetFetch): true, int16(kmsg.DescribeGroups): true,
	int16(kmsg.DeleteGroups): true, int16(kmsg.OffsetDelete): true, int16(kmsg.TxnOffsetCommit): true,
	int16(kmsg.ConsumerGroupHeartbeat): true, int16(kmsg.ConsumerGroupDescribe): true,
}

// txnCoordinatorAPIs are the requests a transactional id's coordinator
// serves.
var txnCoordinatorAPIs = map[int16]bool{
	int16(kmsg.InitProducerID): true, int16(kmsg.AddPartitionsToTxn): true, int16(kmsg.AddOffsetsToTxn): true,
	int16(kmsg.EndTxn): true,
}

// transactionalIDsOf returns the transactional ids a transaction request
// names.
func transactionalIDsOf(kreq kmsg.Request) []string {
	switch req := kreq.(type) {
	case *kmsg.InitProducerIDRequest:
		if req.TransactionalID != nil {
			return []string{*req.TransactionalID}
		}
	case *kmsg.AddPartitionsToTxnRequest:
		return []string{req.TransactionalID}
	case *kmsg.AddOffsetsToTxnRequest:
		return []string{req.TransactionalID}
	case *kmsg.EndTxnRequest:
		return []string{req.TransactionalID}
	}
	return nil
}

// misdirected answers r when it reached a broker other than the leader of
// a partition it names or the coordinator of every group it names, and
// AnyAddressServes does not serve it there: the partitions led elsewhere
// get NOT_LEADER_OR_FOLLOWER (with the current leader, where the version
// carries it) while the others are handled; a group request gets
// NOT_COORDINATOR. A request naming several groups is served whole when
// this broker coordinates one of them. It returns nil when r is served
// here as usual.
func (b *Broker) misdirected(a *api, r *request, key int16) kmsg.Response {
	here, ok := b.servesOnlyOwn(r)
	if !ok || !b.mayBeMisdirected(r.kreq, here) {
		return nil
	}
	v := reflect.ValueOf(r.kreq).Elem()
	switch {
	case coordinatorAPIs[key]:
		groups := groupsOf(v)
		if len(groups) == 0 || slices.ContainsFunc(groups, func(g string) bool { return b.CoordinatorOf(g) == here }) {
			return nil
		}
		if b.vast(r, rules.AnyAddressServes, rules.Differs, "", groups[0], func() string {
			return kmsg.NameForKey(key) + " for group " + groups[0] + " reached broker " + strconv.Itoa(int(here)) +
				", not its coordinator " + strconv.Itoa(int(b.CoordinatorOf(groups[0]))) + "; Kafka answers NOT_COORDINATOR, VAST serves it (assumed)"
		}) {
			return nil
		}
		return errorAnswer(r, kerr.NotCoordinator.Code)
	case txnCoordinatorAPIs[key]:
		ids := transactionalIDsOf(r.kreq)
		if len(ids) == 0 || slices.ContainsFunc(ids, func(id string) bool { return b.CoordinatorOf(id) == here }) {
			return nil
		}
		if b.vast(r, rules.AnyAddressServes, rules.Differs, "", "", func() string {
			return kmsg.NameForKey(key) + " for transactional id " + ids[0] + " reached broker " + strconv.Itoa(int(here)) +
				", not its coordinator " + strconv.Itoa(int(b.CoordinatorOf(ids[0]))) + "; Kafka answers NOT_COORDINATOR, VAST serves it (assumed)"
		}) {
			return nil
		}
		resp := errorAnswer(r, kerr.NotCoordinator.Code)
		if init, ok := resp.(*kmsg.InitProducerIDResponse); ok {
			init.ProducerID, init.ProducerEpoch = -1, -1
		}
		return resp
	case leaderAPIs[key]:
		elsewhere := func(topic string, p int32) bool { return b.LeaderOf(topic, p) != here }
		first, firstP := "", int32(0)
		eachTopic(v, b.topicNameOf, func(topic string, parts reflect.Value) {
			for i := 0; i < parts.Len() && first == ""; i++ {
				if p := partitionOf(parts.Index(i)); elsewhere(topic, p) {
					first, firstP = topic, p
				}
			}
		})
		if first == "" {
			return nil
		}
		if b.vast(r, rules.AnyAddressServes, rules.Differs, first, "", func() string {
			return kmsg.NameForKey(key) + " for partition " + strconv.Itoa(int(firstP)) + " reached broker " + strconv.Itoa(int(here)) +
				", not its leader " + strconv.Itoa(int(b.LeaderOf(first, firstP))) + "; Kafka answers NOT_LEADER_OR_FOLLOWER, VAST serves it (assumed)"
		}) {
			return nil
		}
		resp := b.splitAnswer(a, r, elsewhere, kerr.NotLeaderForPartition.Code)
		b.addLeaderHints(resp)
		return resp
	}
	return nil
}

// servesOnlyOwn returns the broker r reached, and true when that broker
// serves only the partitions it leads and the keys it coordinates: with
// several brokers, unless VAST's AnyAddressServes is enforced (every
// address serves everything, and there is nothing to record).
func (b *Broker) servesOnlyOwn(r *request) (int32, bool) {
	if len(b.nodes) < 2 || r.conn == nil || r.conn.node == nil || b.enforced(rules.AnyAddressServes) {
		return 0, false
	}
	return r.conn.node.id, true
}

// mayBeMisdirected is the cheap first look for the produce and fetch paths:
// false when every partition of a Produce or Fetch request is led by here,
// so that misdirected's reflection runs only for requests that need it;
// true for every other request.
func (b *Broker) mayBeMisdirected(kreq kmsg.Request, here int32) bool {
	elsewhere := func(name string, id [16]byte, p int32) bool { return b.LeaderOf(b.topicName(name, id), p) != here }
	switch req := kreq.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if elsewhere(t.Topic, t.TopicID, p.Partition) {
					return true
				}
			}
		}
		return false
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if elsewhere(t.Topic, t.TopicID, p.Partition) {
					return true
				}
			}
		}
		return false
	}
	return true
}

// groupsOf returns the group ids a group request names.
func groupsOf(v reflect.Value) []string {
	var out []string
	if g := v.FieldByName("Group"); g.IsValid() && g.Kind() == reflect.String {
		out = append(out, g.String())
	}
	if gs := v.FieldByName("Groups"); gs.IsValid() && gs.Kind() == reflect.Slice {
		for i := 0; i < gs.Len(); i++ {
			switch e := gs.Index(i); e.Kind() {
			case reflect.String:
				out = append(out, e.String())
			case reflect.Struct:
				out = append(out, groupsOf(e)...)
			}
		}
	}
	return out
}

// addLeaderHints names the current leader of each partition answered
// NOT_LEADER_OR_FOLLOWER, and its address, in a Produce (v10+) or Fetch
// (v12+, addresses v16+) answer, as Kafka does (KIP-951); older versions
// do not carry the fields, which then go unsent.
func (b *Broker) addLeaderHints(resp kmsg.Response) {
	seen := map[int32]bool{}
	// hint returns partition p's leader and epoch, and the leader's node
	// when the answer does not list its address yet (else nil).
	hint := func(name string, id [16]byte, p int32) (leader, epoch int32, n *node) {
		name = b.topicName(name, id)
		leader, epoch = b.LeaderOf(name, p), b.LeaderEpochOf(name, p)
		if n = b.nodeByID(leader); n == nil || seen[leader] {
			return leader, epoch, nil
		}
		seen[leader] = true
		return leader, epoch, n
	}
	switch resp := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				if p.ErrorCode != kerr.NotLeaderForPartition.Code {
					continue
				}
				var n *node
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, n = hint(t.Topic, t.TopicID, p.Partition)
				if n != nil {
					br := kmsg.NewProduceResponseBroker()
					br.NodeID, br.Host, br.Port = n.id, n.host, n.port
					resp.Brokers = append(resp.Brokers, br)
				}
			}
		}
	case *kmsg.FetchResponse:
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				if p.ErrorCode != kerr.NotLeaderForPartition.Code {
					continue
				}
				var n *node
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, n = hint(t.Topic, t.TopicID, p.Partition)
				if n != nil {
					br := kmsg.NewFetchResponseBroker()
					br.NodeID, br.Host, br.Port = n.id, n.host, n.port
					resp.Brokers = append(resp.Brokers, br)
				}
			}
		}
	}
}

// javaStringHash is Java's String.hashCode over s's UTF-16 code units,
// which Kafka's partitionFor takes the absolute value of (Utils.abs, which
// maps MinInt32 to 0 by masking the sign bit).
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
