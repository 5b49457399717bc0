package coordinator

// Coordinator failover. With several brokers in the kafka profile each
// group has a coordinator, the broker leading its __consumer_offsets
// partition, and that broker can go down. In Kafka the group's timers run
// in the coordinator that holds it: while it is down no one expires a
// member, and the broker that takes the group over loads it and gives
// every member a fresh session timeout (and a KIP-848 member that owes a
// revocation a fresh rebalance timeout), as its GroupMetadataManager does
// when it loads a group, share groups' members included. Here one coordinator holds every group whatever
// broker coordinates it, so the broker says where each group is
// coordinated (Config.Locate) and calls CoordinatorsMoved whenever that
// may have changed: a group whose coordinator stops serving has its timers
// paused; one whose coordinator serves again, or moved to another broker,
// is taken over with fresh timers.

// CoordinatorsMoved applies the broker's Locate to every group: groups
// whose coordinator no longer serves are paused (no session, rebalance or
// join-phase timer runs, so no member is expelled while the coordinator is
// away), and groups that a serving broker took over (a paused group's
// coordinator back, or a group moved to another broker) get a fresh session
// timeout for every member, and fresh rebalance timers, from now on the
// coordinator's clock. It does nothing without Config.Locate.
func (c *Coordinator) CoordinatorsMoved() {
	if c.locate == nil {
		return
	}
	c.mu.Lock()
	defer c.unlock()
	for _, g := range c.groups {
		c.relocate(g)
	}
}

// relocate applies Locate to g: see CoordinatorsMoved. Call it with c.mu
// held.
func (c *Coordinator) relocate(g *group) {
	if c.locate == nil || c.closed {
		return
	}
	at, serving := c.locate(g.name)
	moved := g.located && at != g.coordinator
	g.coordinator, g.located = at, true
	switch {
	case !serving:
		if !g.paused {
			c.pauseGroup(g)
		}
	case g.paused || moved:
		c.takeOver(g)
	}
}

// pauseGroup stops g's timers while its coordinator is away: every
// member's session timer (classic, KIP-848 and share group members), a
// KIP-848 member's rebalance timer, and a classic group's join and sync
// phase timers. A share partition's acquisition locks run on: the
// partition's leader holds them, not the coordinator. Call it with c.mu held.
func (c *Coordinator) pauseGroup(g *group) {
	g.paused = true
	c.log.Debug("coordinator: group paused while its coordinator is away", "group", g.name)
	for _, m := range g.members {
		m.sessionTimer.cancel()
		m.sessionTimer = nil
	}
	g.joinTimer.cancel()
	g.joinTimer = nil
	g.syncTimer.cancel()
	g.syncTimer = nil
	if g.cg != nil {
		for _, m := range g.cg.members {
			m.sessionTimer.cancel()
			m.rebalanceTimer.cancel()
			m.sessionTimer, m.rebalanceTimer = nil, nil
		}
	}
	if g.sg != nil {
		for _, m := range g.sg.members {
			m.sessionTimer.cancel()
			m.sessionTimer = nil
		}
	}
}

// takeOver gives g's members fresh timers, as a coordinator that loads a
// group does: each member's session timeout starts now (a classic member
// blocked in JoinGroup or SyncGroup keeps its session paused until it is
// answered), a KIP-848 member that owes a revocation gets a fresh
// rebalance timeout, and a classic group in the middle of a rebalance
// gets a fresh rebalance timeout for its join or sync phase. Call it with
// c.mu held.
func (c *Coordinator) takeOver(g *group) {
	g.paused = false
	c.log.Debug("coordinator: group taken over, every member's session starts again", "group", g.name)
	for _, m := range g.members {
		c.resetSession(g, m)
	}
	switch {
	case g.state == statePreparingRebalance:
		g.joinTimer.cancel()
		g.inInitialDelay = false
		g.joinTimer = c.after(g.rebalanceTimeout(), func() { c.completeJoin(g) })
	case len(g.pendingSync) > 0:
		g.syncTimer.cancel()
		gen := g.generation
		g.syncTimer = c.after(g.rebalanceTimeout(), func() { c.syncExpired(g, gen) })
	}
	if g.cg != nil {
		for _, m := range g.cg.members {
			c.resetConsumerSession(g, m)
			m.rebalanceTimer.cancel()
			m.rebalanceTimer = nil
			if m.state == memberUnrevoked {
				c.startRevocationTimer(g, m)
			}
		}
	}
	if g.sg != nil {
		for _, m := range g.sg.members {
			c.resetShareSession(g, m)
		}
	}
}
