package stream

import (
	"context"
	"time"

	"github.com/sluice/sluice/internal/clock"
)

// Clock is a job's processing time: what processing-time windows and
// timers, state TTL, rolling file parts and source readers see. A job runs
// on the system clock unless WithClock gives another (a ManualClock, in
// tests).
type Clock interface {
	// NowMillis is the current processing time, in epoch milliseconds.
	NowMillis() int64
	// AfterMillis returns a channel closed once processing time reaches
	// deadline (epoch milliseconds), and a function that stops the timer.
	AfterMillis(deadline int64) (<-chan struct{}, func())
}

// ManualClock is a processing-time clock that moves only when told to,
// for tests of processing-time behaviour: windows, timers, TTL, idleness.
// It reports the timers the job has armed on it, so a test advances time
// exactly when the job waits for it.
type ManualClock struct{ m *clock.Manual }

// NewManualClock returns a manual clock standing at start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{m: clock.NewManualAt(start)}
}

// NowMillis implements Clock.
func (c *ManualClock) NowMillis() int64 { return c.m.NowMillis() }

// AfterMillis implements Clock.
func (c *ManualClock) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	return c.m.AfterMillis(deadline)
}

// Now is the clock's time.
func (c *ManualClock) Now() time.Time { return clock.Now(c.m) }

// Advance moves the clock forward by d, firing the timers it passes.
func (c *ManualClock) Advance(d time.Duration) { c.m.AdvanceBy(d) }

// Set moves the clock to t (never backwards), firing the timers it passes.
func (c *ManualClock) Set(t time.Time) { c.m.SetTime(t) }

// Armed lists the deadlines of the timers waiting on the clock, earliest
// first, in epoch milliseconds.
func (c *ManualClock) Armed() []int64 { return c.m.Armed() }

// BlockUntil waits until at least n timers are armed on the clock, or ctx
// ends.
func (c *ManualClock) BlockUntil(ctx context.Context, n int) error { return c.m.BlockUntil(ctx, n) }
