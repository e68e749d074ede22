// Package clock is the engine's source of processing time. Operators and
// timer services never read the wall clock directly: they are handed a Clock,
// so tests can drive time with a Manual clock and need no sleeps.
package clock

import (
	"sync"
	"time"
)

// Clock tells processing time and arms timers.
type Clock interface {
	// NowMillis is the current processing time in epoch milliseconds.
	NowMillis() int64
	// AfterMillis returns a channel that receives once the clock has reached
	// deadline (epoch ms), and a stop function that releases the timer.
	AfterMillis(deadline int64) (<-chan struct{}, func())
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

// Manual is a clock that moves only when Advance or Set is called. It is safe
// for concurrent use.
type Manual struct {
	mu struct {
		sync.Mutex
		now     int64
		waiters []manualWaiter
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

// NowMillis implements Clock.
func (m *Manual) NowMillis() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.now
}

// AfterMillis implements Clock.
func (m *Manual) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{}, 1)
	if deadline <= m.mu.now {
		ch <- struct{}{}
		return ch, func() {}
	}
	m.mu.waiters = append(m.mu.waiters, manualWaiter{deadline: deadline, ch: ch})
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, w := range m.mu.waiters {
			if w.ch == ch {
				m.mu.waiters = append(m.mu.waiters[:i], m.mu.waiters[i+1:]...)
				return
			}
		}
	}
}

// Advance moves the clock forward by d milliseconds and fires due timers.
func (m *Manual) Advance(d int64) { m.Set(m.NowMillis() + d) }

// Set moves the clock to t (never backwards) and fires due timers.
func (m *Manual) Set(t int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
	m.mu.waiters = kept
}
