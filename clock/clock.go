// Package clock is the broker's source of time. The coordinator, retention
// and timestamp rules read time only through a Clock, so a test that owns a
// Manual clock expires sessions, rebalance timeouts and retention at once,
// with no real waiting.
package clock

import (
	"sort"
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

// Manual is a clock that moves only when told to. Its zero value is not
// usable; create one with NewManual. It is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[uint64]*manualTimer
}

type manualTimer struct {
	at  time.Time
	seq uint64
	f   func()
}

// NewManual returns a Manual clock that reads start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, timers: make(map[uint64]*manualTimer)}
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
	id := m.seq
	m.timers[id] = &manualTimer{at: m.now.Add(d), seq: id, f: f}
	return func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.timers[id]
		delete(m.timers, id)
		return ok
	}
}

// Advance moves the clock forward by d and runs, in time order, every function
// that has come due. It returns after those functions have returned; a
// function that registers a new timer already due runs in the same call.
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
		var due []*manualTimer
		for _, t := range m.timers {
			if !t.at.After(target) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			if target.After(m.now) {
				m.now = target
			}
			m.mu.Unlock()
			return
		}
		sort.Slice(due, func(i, j int) bool {
			if !due[i].at.Equal(due[j].at) {
				return due[i].at.Before(due[j].at)
			}
			return due[i].seq < due[j].seq
		})
		next := due[0]
		delete(m.timers, next.seq)
		if next.at.After(m.now) {
			m.now = next.at
		}
		m.mu.Unlock()
		next.f()
	}
}

// Pending returns how many functions are waiting to run.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}
