// Package clock is the broker's source of time. The coordinator, retention
// and timestamp rules read time only through a Clock, so a test that owns a
// Manual clock expires sessions, rebalance timeouts and retention at once,
// with no real waiting.
package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Clock tells the time and runs functions after a duration of its time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc runs f once d has passed on this clock: Real runs it in its
	// own goroutine, Manual in the goroutine that advances the clock. The
	// returned stop function cancels it and reports whether it stopped f
	// from running. f must not call back into the clock's Advance.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Every runs f every period of c's time until stop is called; stop does not
// wait for a run under way. Periodic work that only depends on the time it
// runs at (retention, expiry, a sweep) should use Every rather than an
// AfterFunc that schedules itself again: on a Manual clock an Advance then
// runs f once for all the periods that pass between two one-shot timers,
// not once per period (see Manual.Advance), so an advance of any length
// costs what happens in it, not its length. On other clocks f runs once per
// period, each run scheduled when the one before returns. f must not call
// back into the clock's Advance.
func Every(c Clock, period time.Duration, f func()) (stop func()) {
	if m, ok := c.(*Manual); ok {
		return m.every(period, f)
	}
	var mu sync.Mutex
	stopped := false
	var cancel func() bool
	var tick func()
	tick = func() {
		f()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			cancel = c.AfterFunc(period, tick)
		}
	}
	mu.Lock()
	cancel = c.AfterFunc(period, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		cancel()
	}
}

// Manual is a clock that moves only when told to. Its zero value is not
// usable; create one with NewManual. It is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers timerHeap // one-shot timers, by time and then registration
	ticks  timerHeap // periodic timers (Every), by their next time
}

type manualTimer struct {
	at     time.Time
	seq    uint64
	f      func()
	period time.Duration // 0 for a one-shot timer
	index  int           // in its heap; -1 once removed
}

// timerHeap orders timers by time, then by registration.
type timerHeap []*manualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// NewManual returns a Manual clock that reads start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start}
}

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc registers f to run when the clock is advanced to or past now+d.
func (m *Manual) AfterFunc(d time.Duration, f func()) func() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{at: m.now.Add(d), seq: m.seq, f: f}
	heap.Push(&m.timers, t)
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		if t.index < 0 {
			return false
		}
		heap.Remove(&m.timers, t.index)
		return true
	}
}

// every registers f to run every period (see Every).
func (m *Manual) every(period time.Duration, f func()) func() {
	if period <= 0 {
		period = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	t := &manualTimer{at: m.now.Add(period), seq: m.seq, f: f, period: period}
	heap.Push(&m.ticks, t)
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if t.index >= 0 {
			heap.Remove(&m.ticks, t.index)
		}
	}
}

// Advance moves the clock forward by d and runs, in time order, every
// function that has come due, returning after they have returned; a
// function that registers a new timer already due runs in the same call.
// One-shot timers (AfterFunc) run once each, at their time. A periodic
// function (Every) runs once for all of its periods that end between two
// one-shot timers, at the last of them (before the next one-shot timer, or
// at the end of the advance): so an advance of any length runs each
// periodic function at most once more than the one-shot timers it fires,
// and the clock reads the time of each function while it runs.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	target := m.now.Add(d)
	m.mu.Unlock()
	m.advanceTo(target)
}

// Set moves the clock to t, which may not be earlier than Now, and runs what
// came due as Advance does.
func (m *Manual) Set(t time.Time) {
	m.advanceTo(t)
}

func (m *Manual) advanceTo(target time.Time) {
	for {
		m.mu.Lock()
		var shot, tick *manualTimer
		if len(m.timers) > 0 && !m.timers[0].at.After(target) {
			shot = m.timers[0]
		}
		if len(m.ticks) > 0 && !m.ticks[0].at.After(target) {
			tick = m.ticks[0]
		}
		var run *manualTimer
		switch {
		case shot == nil && tick == nil:
			if target.After(m.now) {
				m.now = target
			}
			m.mu.Unlock()
			return
		case tick != nil && (shot == nil || tick.at.Before(shot.at)):
			// The tick's last period that ends before the next one-shot
			// timer (or at the end of the advance) stands for all of them.
			limit := target
			if shot != nil {
				limit = shot.at.Add(-1)
			}
			at := tick.at.Add(limit.Sub(tick.at) / tick.period * tick.period)
			tick.at = at.Add(tick.period)
			heap.Fix(&m.ticks, tick.index)
			if at.After(m.now) {
				m.now = at
			}
			run = tick
		default:
			heap.Pop(&m.timers)
			if shot.at.After(m.now) {
				m.now = shot.at
			}
			run = shot
		}
		m.mu.Unlock()
		run.f()
	}
}

// Pending returns how many functions are waiting to run, periodic ones
// (Every) included.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers) + len(m.ticks)
}

// PendingOnce returns how many one-shot functions (AfterFunc) are waiting
// to run.
func (m *Manual) PendingOnce() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}
