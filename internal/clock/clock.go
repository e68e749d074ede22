// Package clock is the one source of time of the tree. Operators, timer
// services, coordinators and the Kerberos login never read the wall clock
// directly: they are handed a Clock, so tests drive time with a Manual clock
// and need no sleeps.
//
// A Clock speaks epoch milliseconds, the unit of the engine's hot paths
// (processing-time timers, TTLs, heartbeats), so reading it costs no
// conversion there. Code that works in time.Time and time.Duration (ticket
// lifetimes, token renewals) uses Now and After, which convert at the edge.
//
// The package imports only the standard library.
package clock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Clock tells time and arms timers.
type Clock interface {
	// NowMillis is the current time in epoch milliseconds.
	NowMillis() int64
	// AfterMillis returns a channel that receives once the clock has reached
	// deadline (epoch ms), and a stop function that releases the timer. A
	// deadline not after now fires at once.
	AfterMillis(deadline int64) (<-chan struct{}, func())
}

// Now is c's current time as a time.Time (millisecond precision, no
// monotonic reading).
func Now(c Clock) time.Time { return time.UnixMilli(c.NowMillis()) }

// After returns a channel that receives once d has passed on c (rounded up
// to a whole millisecond, so it never fires early), and a stop function that
// releases the timer. A d not above zero fires at once.
func After(c Clock, d time.Duration) (<-chan struct{}, func()) {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return c.AfterMillis(c.NowMillis() + ms)
}

// System is the wall clock.
type System struct{}

// NowMillis implements Clock.
func (System) NowMillis() int64 { return time.Now().UnixMilli() }

// AfterMillis implements Clock.
func (s System) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	d := time.Duration(deadline-s.NowMillis()) * time.Millisecond
	if d <= 0 {
		ch <- struct{}{}
		return ch, func() {}
	}
	t := time.AfterFunc(d, func() { ch <- struct{}{} })
	return ch, func() { t.Stop() }
}

// Manual is a clock that moves only when Advance or Set is called, and that
// reports the timers armed on it: a test waits with BlockUntil or
// BlockUntilArmedAt until the code under test is waiting on the clock, then
// moves time, instead of polling. It is safe for concurrent use; its zero
// value is a clock at epoch 0.
type Manual struct {
	mu struct {
		sync.Mutex
		now     int64
		waiters []manualWaiter
		// changed is closed when waiters changes; nil while no
		// BlockUntil waits, so arming costs nothing more then.
		changed chan struct{}
	}
}

type manualWaiter struct {
	deadline int64
	ch       chan struct{}
}

// NewManual returns a manual clock set to start (epoch ms).
func NewManual(start int64) *Manual {
	m := &Manual{}
	m.mu.now = start
	return m
}

// NewManualAt returns a manual clock set to t (truncated to milliseconds).
func NewManualAt(t time.Time) *Manual { return NewManual(t.UnixMilli()) }

// NowMillis implements Clock.
func (m *Manual) NowMillis() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.now
}

// AfterMillis implements Clock. A timer whose deadline is not after now
// fires at once and is never counted as armed.
func (m *Manual) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{}, 1)
	if deadline <= m.mu.now {
		ch <- struct{}{}
		return ch, func() {}
	}
	m.mu.waiters = append(m.mu.waiters, manualWaiter{deadline: deadline, ch: ch})
	m.changedLocked()
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, w := range m.mu.waiters {
			if w.ch == ch {
				m.mu.waiters = slices.Delete(m.mu.waiters, i, i+1)
				m.changedLocked()
				return
			}
		}
	}
}

// changedLocked wakes every BlockUntil.
// REQUIRES: m.mu held.
func (m *Manual) changedLocked() {
	if m.mu.changed != nil {
		close(m.mu.changed)
		m.mu.changed = nil
	}
}

// Advance moves the clock forward by d milliseconds and fires due timers.
func (m *Manual) Advance(d int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(m.mu.now + d)
}

// AdvanceBy moves the clock forward by d (truncated to milliseconds) and
// fires due timers.
func (m *Manual) AdvanceBy(d time.Duration) { m.Advance(d.Milliseconds()) }

// Set moves the clock to t (epoch ms; never backwards) and fires due timers.
func (m *Manual) Set(t int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(t)
}

// SetTime moves the clock to t (truncated to milliseconds; never
// backwards) and fires due timers.
func (m *Manual) SetTime(t time.Time) { m.Set(t.UnixMilli()) }

// REQUIRES: m.mu held.
func (m *Manual) setLocked(t int64) {
	if t > m.mu.now {
		m.mu.now = t
	}
	kept := m.mu.waiters[:0]
	for _, w := range m.mu.waiters {
		if w.deadline <= m.mu.now {
			w.ch <- struct{}{}
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) != len(m.mu.waiters) {
		clear(m.mu.waiters[len(kept):])
		m.mu.waiters = kept
		m.changedLocked()
	}
}

// Armed lists the deadlines (epoch ms) of the timers waiting on the clock,
// earliest first: armed and neither fired nor stopped.
func (m *Manual) Armed() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.armedLocked()
}

// REQUIRES: m.mu held.
func (m *Manual) armedLocked() []int64 {
	out := make([]int64, len(m.mu.waiters))
	for i, w := range m.mu.waiters {
		out[i] = w.deadline
	}
	slices.Sort(out)
	return out
}

// BlockUntil waits until at least n timers are armed on the clock (as
// clockwork's BlockUntil does), or ctx ends; then it returns an error that
// names what was armed and wraps ctx's.
func (m *Manual) BlockUntil(ctx context.Context, n int) error {
	return m.blockUntil(ctx, func(armed []int64) bool { return len(armed) >= n },
		func() string { return fmt.Sprintf("%d timers", n) })
}

// BlockUntilArmedAt waits until a timer for deadline (epoch ms) is armed
// on the clock, or ctx ends; then it returns an error that names what was
// armed and wraps ctx's.
func (m *Manual) BlockUntilArmedAt(ctx context.Context, deadline int64) error {
	return m.blockUntil(ctx, func(armed []int64) bool { return slices.Contains(armed, deadline) },
		func() string { return fmt.Sprintf("a timer at %d", deadline) })
}

func (m *Manual) blockUntil(ctx context.Context, ok func(armed []int64) bool, want func() string) error {
	for {
		m.mu.Lock()
		if m.mu.changed == nil {
			m.mu.changed = make(chan struct{})
		}
		armed, now, changed := m.armedLocked(), m.mu.now, m.mu.changed
		m.mu.Unlock()
		if ok(armed) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("clock: waiting for %s to be armed: at %d, armed %v: %w", want(), now, armed, context.Cause(ctx))
		}
	}
}
