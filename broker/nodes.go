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
	"strconv"
	"sync"
	"time"
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

	mu         sync.Mutex // guards ln, acceptDone and down
	ln         net.Listener
	acceptDone chan struct{}
	down       bool
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

// LeaderOf returns the broker id that leads partition p of any topic:
// broker i of the N (in BrokerIDs order) leads the partitions p with
// p mod N = i. Every broker serves every partition; clients send produce
// and fetch requests to the leader Metadata names.
func (b *Broker) LeaderOf(topic string, p int32) int32 {
	return b.nodes[int(max(p, 0))%len(b.nodes)].id
}

// CoordinatorOf returns the broker id FindCoordinator names for a group
// (or transactional id): the leader of the __consumer_offsets partition
// Kafka would keep it in, abs(Java hashCode of the id) mod 50.
func (b *Broker) CoordinatorOf(group string) int32 {
	return b.LeaderOf(offsetsTopic, int32((javaStringHash(group)&0x7fffffff)%offsetsTopicPartitions))
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
