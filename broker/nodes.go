package broker

// Several broker addresses in one broker. Each node is one Kafka broker id
// with its own listener and advertised address; every node serves the same
// topics, logs, groups and committed offsets, as VAST's virtual IPs all
// front one cluster. Metadata lists every node and names a leader for each
// partition, FindCoordinator a coordinator for each group, by rules a test
// can compute (LeaderOf, CoordinatorOf). A node can be taken down and
// brought back (BrokerDown, BrokerUp) while the others serve; in the kafka
// profile leaders and coordinators then move by election (replicas.go), and
// which broker answers which request is the API table's share column
// (share.go).

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/coordinator"
)

// MaxBrokers bounds WithBrokers: a listener and an accept goroutine each.
const MaxBrokers = 16

// ErrUnknownBroker is returned for a broker id the broker does not have.
var ErrUnknownBroker = errors.New("vastfake: no broker with that id")

// node is one broker id and its address.
type node struct {
	id   int32
	addr string // the address it listens on
	// adv is the host and port Metadata, FindCoordinator and leader hints
	// hand to clients; SetAdvertised replaces it while clients connect.
	adv atomic.Pointer[hostPort]

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

// hostPort is an advertised address, split as Kafka's answers carry it.
type hostPort struct {
	host string
	port int32
}

// advertisedHostPort returns n's advertised host and port.
func (n *node) advertisedHostPort() (string, int32) {
	a := n.adv.Load()
	return a.host, a.port
}

// advertised returns n's advertised host:port.
func (n *node) advertised() string {
	host, port := n.advertisedHostPort()
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

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
			return fmt.Errorf("vastfake: advertise %q names one broker of %d: give one address per broker", clip(cfg.advertise), cfg.brokers)
		}
	case len(adv) != 0 && len(adv) != cfg.brokers:
		return fmt.Errorf("vastfake: %d advertised addresses for %d brokers", len(adv), cfg.brokers)
	}
	host, portStr, err := net.SplitHostPort(cfg.listen)
	if err != nil {
		return fmt.Errorf("vastfake: listen %q: want host:port", clip(cfg.listen))
	}
	if len(host) > MaxAdvertisedHost {
		return fmt.Errorf("vastfake: listen %q: a host of %d bytes, more than %d", clip(cfg.listen), len(host), MaxAdvertisedHost)
	}
	first, err := strconv.Atoi(portStr)
	if err != nil || first < 0 || first+cfg.brokers-1 > 65535 {
		return fmt.Errorf("vastfake: listen %q: want a port from 0 to %d", clip(cfg.listen), 65535-cfg.brokers+1)
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
		n := &node{id: cfg.nodeID + int32(i), addr: boundAddr(host, ln.Addr()), ln: ln}
		b.nodes = append(b.nodes, n)
		var hp *hostPort
		if len(adv) > 0 {
			// Given: a host and a port from 1 to 65535, as SetAdvertised
			// (PUT /advertise) takes.
			hp, err = parseAdvertised(adv[i], 1)
			if err == nil && hp.host == "" {
				err = fmt.Errorf("vastfake: advertise %q: want a host before the port", clip(adv[i]))
			}
		} else {
			a := n.addr
			if h, p, err := net.SplitHostPort(a); err == nil {
				if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
					// Listening on every interface (0.0.0.0 or ::, as in a
					// container): that address is no destination, and Kafka
					// refuses to advertise it, so clients are told localhost
					// (docker run -p 9092:9092) until -advertise or
					// SetAdvertised says otherwise.
					a = net.JoinHostPort("localhost", p)
				}
			}
			hp, err = parseAdvertised(a, 0)
		}
		if err != nil {
			b.closeListeners()
			return err
		}
		n.adv.Store(hp)
	}
	return nil
}

// boundAddr names a listener as every log line and view of it does: the
// host it was asked to listen on ("" for every interface, as in ":9092",
// stays "") and the port it got. Go reports a listener on 0.0.0.0 as [::],
// which is where it listens, but not what was asked for.
func boundAddr(host string, a net.Addr) string {
	_, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return net.JoinHostPort(host, port)
}

// MaxAdvertisedHost bounds the host of an advertised address, which every
// Metadata answer carries: a DNS name is at most 253 bytes.
const MaxAdvertisedHost = 255

// parseAdvertised parses an advertised host:port whose port is at least
// minPort.
func parseAdvertised(a string, minPort int) (*hostPort, error) {
	h, p, err := net.SplitHostPort(a)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < minPort || port > 65535 {
		return nil, fmt.Errorf("vastfake: advertise %q: want host:port with a port from %d to 65535", clip(a), minPort)
	}
	if len(h) > MaxAdvertisedHost {
		return nil, fmt.Errorf("vastfake: advertise %q: a host of %d bytes, more than %d", clip(a), len(h), MaxAdvertisedHost)
	}
	if strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r > '~' || r == '/' }) {
		return nil, fmt.Errorf("vastfake: advertise %q: a host name or IP address has no spaces, slashes or control characters", clip(a))
	}
	return &hostPort{host: h, port: int32(port)}, nil
}

// SetAdvertised replaces the host:port each broker id hands to clients, one
// per broker id in BrokerIDs order, as WithAdvertiseBrokers sets them at
// start: for a broker in a container, whose mapped host ports are known
// only once it runs. Metadata, FindCoordinator and leader hints answer the
// new addresses from the next request on; listeners and open connections
// are untouched. It returns an error, and changes nothing, unless there is
// one address per broker, each a host and a port from 1 to 65535.
func (b *Broker) SetAdvertised(addrs ...string) error {
	if len(addrs) != len(b.nodes) {
		return fmt.Errorf("vastfake: %d advertised addresses for %d brokers: give one per broker id, in order", len(addrs), len(b.nodes))
	}
	hps := make([]*hostPort, len(addrs))
	for i, a := range addrs {
		hp, err := parseAdvertised(a, 1)
		if err != nil {
			return err
		}
		if hp.host == "" {
			return fmt.Errorf("vastfake: advertise %q: want a host before the port", clip(a))
		}
		hps[i] = hp
	}
	for i, n := range b.nodes {
		n.adv.Store(hps[i])
	}
	return nil
}

// Advertised returns the host:port each broker id hands to clients, in
// BrokerIDs order.
func (b *Broker) Advertised() []string {
	out := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		out[i] = n.advertised()
	}
	return out
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
// brokers serve on. In the VAST profile leadership stays where it is, as
// when a VAST node fails before its virtual IPs move; in the kafka profile
// the broker is fenced after the election delay (WithElectionDelay) and
// its partitions and coordinators move to the next in-sync replicas
// (replicas.go), unless it is back up first. It returns ErrUnknownBroker for an id
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
	b.setDown(id, true)
	b.scheduleFence(n, n.gen)
	b.coordinatorsMoved()
	return nil
}

// BrokerUp brings broker id back on the same address after BrokerDown; a
// broker that was fenced rejoins the in-sync sets as a follower. It
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
	n.endBlackout()
	b.setDown(id, false)
	b.rejoin(n.id)
	b.coordinatorsMoved()
	return nil
}

// endBlackout stops the timer of a blackout (FailOverAddress) that BrokerUp
// ended early, so that it does not wait on the clock for an end that
// already came. Call it with n.mu held.
func (n *node) endBlackout() {
	if n.stopBlackout != nil {
		n.stopBlackout()
		n.stopBlackout = nil
	}
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
			if n.gen == gen {
				n.stopBlackout = nil
			}
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
// unless MoveLeader, an election (a broker fenced: see WithElectionDelay)
// or ElectPreferredLeader moved it; -1 while it is offline. Clients send
// produce and fetch requests to the leader Metadata names.
func (b *Broker) LeaderOf(topic string, p int32) int32 {
	if b.moves.any.Load() {
		b.moves.mu.RLock()
		defer b.moves.mu.RUnlock()
		if l, ok := b.moves.leaders[topicPartition{topic, p}]; ok || len(b.repl.fenced) > 0 {
			if !ok {
				l = b.stateLocked(topic, p)
			}
			return l.id
		}
	}
	return b.nodes[int(max(p, 0))%len(b.nodes)].id
}

// LeaderEpochOf returns partition p's leader epoch: 0, one more for each
// MoveLeader, election (a fenced leader's partition moving or going
// offline, an offline one getting a leader) and preferred election.
func (b *Broker) LeaderEpochOf(topic string, p int32) int32 {
	if !b.moves.any.Load() {
		return 0
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	return b.stateLocked(topic, p).epoch
}

// CoordinatorOf returns the broker id FindCoordinator names for a group:
// unless MoveCoordinator moved it, the leader of the __consumer_offsets
// partition Kafka would keep it in, abs(Java hashCode of the id) mod 50,
// so that it moves when that partition's leader does; -1 while the
// partition is offline.
func (b *Broker) CoordinatorOf(group string) int32 {
	if id, ok := b.movedCoordinator(group); ok {
		return id
	}
	return b.LeaderOf(offsetsTopic, OffsetsTopicPartition(group))
}

// TxnCoordinatorOf returns the broker id FindCoordinator names for a
// transactional id: unless MoveCoordinator moved it, the leader of the
// __transaction_state partition Kafka would keep it in, abs(Java hashCode
// of the id) mod 50.
func (b *Broker) TxnCoordinatorOf(id string) int32 {
	if c, ok := b.movedCoordinator(id); ok {
		return c
	}
	return b.LeaderOf(transactionStateTopic, TransactionStatePartition(id))
}

// movedCoordinator returns where MoveCoordinator moved the coordinator of
// a group or transactional id, if it did.
func (b *Broker) movedCoordinator(key string) (int32, bool) {
	if !b.moves.any.Load() {
		return 0, false
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	id, ok := b.moves.coordinators[key]
	return id, ok
}

// moves are the leaders and coordinators MoveLeader and MoveCoordinator
// set; any is set once there is one, so that LeaderOf costs no lock until
// a test moves something.
type moves struct {
	any          atomic.Bool
	mu           sync.RWMutex
	leaders      map[topicPartition]movedLeader
	coordinators map[string]int32
	coordBytes   int // the length of every name in coordinators together
}

type topicPartition struct {
	topic     string
	partition int32
}

// movedLeader is a partition's leader (-1: none), leader epoch and
// in-sync replicas once a move or an election changed them.
type movedLeader struct {
	id, epoch int32
	isr       []int32
}

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
	st := b.stateLocked(topic, p)
	st.id, st.epoch = id, st.epoch+1
	b.storeLocked(topic, p, st)
	b.moves.mu.Unlock()
	if topic == offsetsTopic {
		b.coordinatorsMoved()
	}
	return nil
}

// MaxCoordinatorMoves bounds the groups MoveCoordinator keeps a moved
// coordinator for (leader moves are bounded by the partitions), and
// MaxCoordinatorMoveBytes the bytes of their names together; a name is at
// most coordinator.MaxGroupIDBytes long, Kafka's bound on a group id (a
// transactional id's is the same). These are vastfake's own guards.
const (
	MaxCoordinatorMoves     = 10_000
	MaxCoordinatorMoveBytes = 16 << 20
)

// ErrTooManyMoves is MoveCoordinator's answer past MaxCoordinatorMoves
// groups or MaxCoordinatorMoveBytes of names.
var ErrTooManyMoves = fmt.Errorf("vastfake: too many moved coordinators (at most %d groups, %d bytes of names together)",
	MaxCoordinatorMoves, MaxCoordinatorMoveBytes)

// ErrNameTooLong is the answer to a call naming a group, transactional id
// or topic longer than any the broker can hold: coordinator.MaxGroupIDBytes
// for a group or transactional id, 249 bytes for a topic.
var ErrNameTooLong = errors.New("vastfake: name too long")

// MoveCoordinator makes broker id the coordinator of group: FindCoordinator
// names it, and in the kafka profile the old coordinator answers the
// group's requests with NOT_COORDINATOR, so clients look it up again. The
// group's members, generation and committed offsets stay. It returns
// ErrUnknownBroker for an id the broker does not have, ErrNameTooLong for a
// group name over coordinator.MaxGroupIDBytes, and ErrTooManyMoves past
// MaxCoordinatorMoves groups or MaxCoordinatorMoveBytes of names.
func (b *Broker) MoveCoordinator(group string, id int32) error {
	if b.nodeByID(id) == nil {
		return fmt.Errorf("%w: %d", ErrUnknownBroker, id)
	}
	if len(group) > coordinator.MaxGroupIDBytes {
		return fmt.Errorf("%w: a group name of %d bytes, over the %d bytes of Kafka's group ids", ErrNameTooLong, len(group), coordinator.MaxGroupIDBytes)
	}
	if err := b.storeCoordinator(group, id); err != nil {
		return err
	}
	b.coordinatorsMoved() // the new coordinator takes the group over
	return nil
}

// storeCoordinator records broker id as group's coordinator, within
// MaxCoordinatorMoves and MaxCoordinatorMoveBytes.
func (b *Broker) storeCoordinator(group string, id int32) error {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if _, ok := b.moves.coordinators[group]; !ok &&
		(len(b.moves.coordinators) >= MaxCoordinatorMoves || b.moves.coordBytes+len(group) > MaxCoordinatorMoveBytes) {
		return ErrTooManyMoves
	}
	if b.moves.coordinators == nil {
		b.moves.coordinators = map[string]int32{}
	}
	if _, ok := b.moves.coordinators[group]; !ok {
		group = strings.Clone(group)
		b.moves.coordBytes += len(group)
	}
	b.moves.coordinators[group] = id
	b.moves.any.Store(true)
	return nil
}

// forgetMoves drops the leader moves, elections and replication factor of
// a deleted topic.
func (b *Broker) forgetMoves(topic string) {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	for tp := range b.moves.leaders {
		if tp.topic == topic {
			delete(b.moves.leaders, tp)
		}
	}
	delete(b.repl.factors, topic)
	for tp := range b.repl.assigned {
		if tp.topic == topic {
			delete(b.repl.assigned, tp)
		}
	}
}

// addLeaderHints names the current leader of each partition answered
// NOT_LEADER_OR_FOLLOWER (in a Fetch, FENCED_LEADER_EPOCH too), and its
// address, in a Produce (v10+) or Fetch (v12+, addresses v16+) answer, as
// Kafka does (KIP-951); older versions do not carry the fields, which then
// go unsent.
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
					br.NodeID = n.id
					br.Host, br.Port = n.advertisedHostPort()
					resp.Brokers = append(resp.Brokers, br)
				}
			}
		}
	case *kmsg.FetchResponse:
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				if p.ErrorCode != kerr.NotLeaderForPartition.Code && p.ErrorCode != kerr.FencedLeaderEpoch.Code {
					continue
				}
				var n *node
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, n = hint(t.Topic, t.TopicID, p.Partition)
				if n != nil {
					br := kmsg.NewFetchResponseBroker()
					br.NodeID = n.id
					br.Host, br.Port = n.advertisedHostPort()
					resp.Brokers = append(resp.Brokers, br)
				}
			}
		}
	}
}
