package kerberos

import (
	"sync"
	"time"
)

// scriptedClock is a Clock that moves only when the test says.
type scriptedClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []scriptedTimer
}

type scriptedTimer struct {
	at time.Time
	c  chan time.Time
}

func newScriptedClock(t time.Time) *scriptedClock { return &scriptedClock{now: t} }

func (c *scriptedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *scriptedClock) NewTimer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(d)
	if d <= 0 {
		ch <- c.now
		return ch, func() {}
	}
	c.waiters = append(c.waiters, scriptedTimer{at, ch})
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.c == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				return
			}
		}
	}
}

// set moves the clock to t and fires the timers due.
func (c *scriptedClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.c <- t
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// nextTimer is the earliest armed timer's time, false if none.
func (c *scriptedClock) nextTimer() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return time.Time{}, false
	}
	m := c.waiters[0].at
	for _, w := range c.waiters[1:] {
		if w.at.Before(m) {
			m = w.at
		}
	}
	return m, true
}
