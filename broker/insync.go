package broker

// acks=all over replicas that can go down (kafka profile, several brokers).
// Kafka's leader answers an acks=all produce once every replica in the
// partition's in-sync set has the records. Every broker id here shares one
// log, so a follower that is up is never behind; one that went down
// (BrokerDown) and is not fenced yet stays in the in-sync set without
// fetching, as a Kafka follower whose broker died does until the
// controller fences it (broker.session.timeout.ms, the election delay)
// and takes it out of every in-sync set. A produce with acks=all to a
// partition whose in-sync set holds such a broker is appended at once and
// its answer held until the broker is fenced (or back up), or until the
// request's timeout (REQUEST_TIMED_OUT), as Kafka's delayed produce is:
// that is the stall a producer sees when a broker dies. Kafka's leader
// also shrinks the in-sync set of a follower that has not caught up for
// replica.lag.time.max.ms (30 s, checked every 15 s); with Kafka's
// defaults the 9 s fence comes first, and vastfake models the fence only.
//
// A held produce holds no lock: its connection waits, as a Kafka
// connection does while its request is in purgatory (Kafka handles one
// request per connection at a time), and every other connection is
// served. The broker holds at most MaxHeldProduces of them, of at most
// MaxHeldProduceBytes of requests together; a produce past either is
// answered at once. Close, or the connection closing, ends a hold.

import (
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxHeldProduces bounds the acks=all produces the broker holds at once
// while an in-sync replica is down, and MaxHeldProduceBytes the bytes of
// their requests together: a produce past either is answered at once, as
// with acks=1 (its records are stored either way). Kafka holds one request
// per connection in its purgatory, unbounded otherwise; these are
// vastfake's own guards.
const (
	MaxHeldProduces     = 1024
	MaxHeldProduceBytes = 256 << 20
)

// heldProduces counts the produces held for in-sync replicas.
type heldProduces struct {
	mu       sync.Mutex
	n        int
	bytes    int64
	maxN     int   // MaxHeldProduces; tests lower it
	maxBytes int64 // MaxHeldProduceBytes; tests lower it
	refused  int64 // produces answered at once for want of room
}

// take makes room for a held produce of size bytes. When there is none it
// returns false and how many produces have been answered at once so.
func (h *heldProduces) take(size int64) (bool, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= h.maxN || h.bytes+size > h.maxBytes {
		h.refused++
		return false, h.refused
	}
	h.n++
	h.bytes += size
	return true, 0
}

// give gives back what take took.
func (h *heldProduces) give(size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n--
	h.bytes -= size
}

// HeldProduces returns how many acks=all produces the broker holds now,
// waiting for an in-sync replica that is down, and the bytes of their
// requests.
func (b *Broker) HeldProduces() (n int, bytes int64) {
	b.held.mu.Lock()
	defer b.held.mu.Unlock()
	return b.held.n, b.held.bytes
}

// lagsLocked reports whether a broker of isr is down and not fenced: in
// the in-sync set without fetching. Call with b.moves.mu held.
func (b *Broker) lagsLocked(isr []int32) bool {
	for _, id := range isr {
		if b.repl.down[id] && !b.repl.fenced[id] {
			return true
		}
	}
	return false
}

// anyLagging reports, without a lock, whether a broker is down and not
// fenced, so that acks=all produces cost nothing more otherwise.
func (b *Broker) anyLagging() bool { return b.repl.lagging.Load() > 0 }

// noteLaggingLocked recounts the brokers down and not fenced and wakes the
// held produces, whose in-sync sets may have changed. Call with b.moves.mu
// held, after any change to down or fenced.
func (b *Broker) noteLaggingLocked() {
	n := int32(0)
	for id := range b.repl.down {
		if !b.repl.fenced[id] {
			n++
		}
	}
	b.repl.lagging.Store(n)
	if n > 0 || b.repl.holding {
		b.holdHighWatermarksLocked()
	}
	if b.repl.isrChanged != nil {
		close(b.repl.isrChanged)
		b.repl.isrChanged = nil
	}
}

// holdHighWatermarksLocked holds the high watermark of every partition
// whose in-sync set has a broker that is down and not fenced, and releases
// the others': a Kafka leader's high watermark does not pass what every
// in-sync replica has, so what is appended while a follower is down and
// still in the set (acks=1, or acks=all held for it) is stored but not
// readable until the follower is fenced or back, when it all becomes
// readable at once. Call with b.moves.mu held.
func (b *Broker) holdHighWatermarksLocked() {
	holding, released := false, false
	b.eachPartition(func(name string, p int32) {
		t := b.data.get(name)
		if t == nil {
			return
		}
		part := t.partition(p)
		if part == nil {
			return
		}
		if b.lagsLocked(b.stateLocked(name, p).isr) {
			part.HoldHighWatermark()
			holding = true
		} else if part.ReleaseHighWatermark() {
			released = true
		}
	})
	b.repl.holding = holding
	if released {
		b.notifyData() // fetches waiting at the old high watermark
	}
}

// wakeHeldProduces wakes the held produces to look again (a topic of
// theirs may be gone).
func (b *Broker) wakeHeldProduces() {
	if !b.anyLagging() {
		return
	}
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	b.noteLaggingLocked()
}

// isrWaiter returns a channel closed at the next change of who lags.
func (b *Broker) isrWaiter() <-chan struct{} {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	if b.repl.isrChanged == nil {
		b.repl.isrChanged = make(chan struct{})
	}
	return b.repl.isrChanged
}

// awaitInSync holds an acks=all produce whose appended partitions (those
// of pending answered without error) have a broker in their in-sync set
// that is down and not fenced, until none has: see the top of this file.
// A partition still waiting when the request's timeout passes on the
// broker's clock gets REQUEST_TIMED_OUT; one whose in-sync set shrank
// below the topic's min.insync.replicas meanwhile gets
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, as from Kafka's leader. It returns at
// once when the connection or the broker closes (nothing is answered then)
// and when the broker holds MaxHeldProduces already.
func (b *Broker) awaitInSync(r *request, timeoutMillis int32, pending []pendingAppend) {
	if !b.anyLagging() || !b.elects() {
		return
	}
	waiting := b.stillLagging(pending, nil)
	if len(waiting) == 0 {
		return
	}
	size := int64(0)
	if r.conn != nil {
		size = int64(r.conn.lastFrame)
	}
	if ok, refused := b.held.take(size); !ok {
		if refused == 1 || refused%1000 == 0 { // a line, not one per produce
			b.log.Warn("acks=all produce answered without waiting for a down in-sync replica: the broker holds as many as it may",
				"max_held", b.held.maxN, "max_held_bytes", b.held.maxBytes, "answered_so", refused)
		}
		return
	}
	defer b.held.give(size)
	expired := make(chan struct{})
	if timeoutMillis <= 0 {
		close(expired) // Kafka's delayed produce expires at once
	} else {
		stop := b.clock.AfterFunc(time.Duration(timeoutMillis)*time.Millisecond, func() { close(expired) })
		defer stop()
	}
	held := waiting
	for len(waiting) > 0 {
		changed := b.isrWaiter()
		if waiting = b.stillLagging(pending, waiting); len(waiting) == 0 {
			break
		}
		select {
		case <-changed:
		case <-expired:
			for _, i := range waiting {
				p := &pending[i]
				p.resp.ErrorCode = kerr.RequestTimedOut.Code
				p.resp.ErrorMessage = kmsg.StringPtr("acks=all: in-sync replica still down and not fenced after the request's timeout of " +
					strconv.Itoa(int(timeoutMillis)) + " ms")
			}
			return
		case <-r.ctx.Done():
			return
		}
	}
	for _, i := range held {
		p := &pending[i]
		if code := b.minInsyncCode(p.topic, p.partition, p.cfg); code != 0 {
			p.resp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
			p.resp.ErrorMessage = kmsg.StringPtr("acks=all: the in-sync replicas shrank below min.insync.replicas after the append")
		}
	}
}

// stillLagging returns the indexes of pending (of among, when not nil)
// appended without error whose partition's in-sync set still has a broker
// down and not fenced, and whose partition is still there.
func (b *Broker) stillLagging(pending []pendingAppend, among []int) []int {
	b.moves.mu.RLock()
	defer b.moves.mu.RUnlock()
	var out []int
	check := func(i int) {
		p := &pending[i]
		if p.resp.ErrorCode == 0 && !p.part.Released() && b.lagsLocked(b.stateLocked(p.topic, p.partition).isr) {
			out = append(out, i)
		}
	}
	if among == nil {
		for i := range pending {
			check(i)
		}
	} else {
		for _, i := range among {
			check(i)
		}
	}
	return out
}
