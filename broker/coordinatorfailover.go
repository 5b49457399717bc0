package broker

// A group coordinator going down and another taking over (kafka profile,
// several brokers). The coordinator holds every group whatever broker
// coordinates it; this tells it which broker does and whether that broker
// serves, so that, as in Kafka, no member's session runs out while its
// coordinator is away, and the broker that takes a group over starts every
// member's session timeout afresh (coordinator/failover.go).

// locateGroup is the coordinator's Config.Locate: the broker that
// coordinates group (CoordinatorOf; -1 while its __consumer_offsets
// partition is offline) and whether it serves, which a broker taken down
// (BrokerDown) does not until it is back up. It takes b.moves.mu only.
func (b *Broker) locateGroup(group string) (int32, bool) {
	id := b.CoordinatorOf(group)
	if id == -1 {
		return -1, false
	}
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	return id, !b.repl.down[id]
}

// coordinatorsMoved tells the coordinator that groups may have changed
// coordinator or that one went down or came back. Call it after the
// change, without b.moves.mu held.
func (b *Broker) coordinatorsMoved() {
	if b.elects() && b.coord != nil {
		b.coord.CoordinatorsMoved()
	}
}

// setDown records whether broker id is down (BrokerDown), for locateGroup
// and the produces held for in-sync replicas.
func (b *Broker) setDown(id int32, down bool) {
	if !b.elects() {
		return
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.repl.down == nil {
		b.repl.down = map[int32]bool{}
	}
	if down {
		b.repl.down[id] = true
	} else {
		delete(b.repl.down, id)
	}
	b.noteLaggingLocked()
}
