package clock

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var start = time.Unix(1_700_000_000, 0)

// TestAdvanceCoalescesPeriodicWork: an advance of any length, up to the
// largest duration, runs a periodic function once for all the periods that
// end between two one-shot timers, at the last of them, and the one-shot
// timers once each, in time order.
func TestAdvanceCoalescesPeriodicWork(t *testing.T) {
	t.Parallel()
	m := NewManual(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+m.Now().Sub(start).String()) }
	}
	stop := Every(m, time.Second, at("tick"))
	m.AfterFunc(20*time.Second, at("b"))
	m.AfterFunc(10*time.Second, at("a"))
	m.AfterFunc(10*time.Second, at("a2"))
	m.Advance(time.Hour)
	assert.Equal(t, []string{"tick@9s", "a@10s", "a2@10s", "tick@19s", "b@20s", "tick@1h0m0s"}, got)

	got = nil
	m.Advance(math.MaxInt64)
	assert.Len(t, got, 1, "the largest advance runs the periodic function once")
	assert.Equal(t, start.Add(time.Hour).Add(math.MaxInt64), m.Now())
	assert.Equal(t, 1, m.Pending())
	stop()
	assert.Zero(t, m.Pending())
	m.Advance(time.Hour)
	assert.Len(t, got, 1, "a stopped periodic function does not run")
}

// TestTimersRegisteredWhileAdvancing: a one-shot timer a function registers
// that is due within the advance runs in it, in order; the clock reads each
// function's time while it runs.
func TestTimersRegisteredWhileAdvancing(t *testing.T) {
	t.Parallel()
	m := NewManual(start)
	var got []time.Duration
	Every(m, time.Minute, func() {
		got = append(got, m.Now().Sub(start))
		if len(got) == 1 {
			m.AfterFunc(30*time.Second, func() { got = append(got, -m.Now().Sub(start)) })
		}
	})
	m.Advance(10 * time.Minute)
	assert.Equal(t, []time.Duration{10 * time.Minute}, got,
		"one tick stands for all ten; the timer it set is due after the advance's end, so it waits")
	m.Advance(time.Minute)
	assert.Equal(t, []time.Duration{10 * time.Minute, -(10*time.Minute + 30*time.Second), 11 * time.Minute}, got)
}

// TestStopOneShot: stopping a one-shot timer reports whether it stopped it.
func TestStopOneShot(t *testing.T) {
	t.Parallel()
	m := NewManual(start)
	ran := false
	stop := m.AfterFunc(time.Second, func() { ran = true })
	assert.Equal(t, 1, m.PendingOnce())
	assert.True(t, stop())
	assert.False(t, stop())
	m.Advance(time.Hour)
	assert.False(t, ran)
	stop = m.AfterFunc(time.Second, func() { ran = true })
	m.Advance(time.Second)
	assert.True(t, ran)
	assert.False(t, stop(), "it ran already")
}

// TestEveryOnTheWallClock: on the wall clock a periodic function runs once
// per period until stopped.
func TestEveryOnTheWallClock(t *testing.T) {
	t.Parallel()
	ticks := make(chan struct{}, 100)
	stop := Every(Real{}, time.Millisecond, func() { ticks <- struct{}{} })
	for range 3 {
		select {
		case <-ticks:
		case <-time.After(10 * time.Second):
			require.Fail(t, "no tick")
		}
	}
	stop()
}
