// Package testwait is the tree's one test helper for waiting on another
// goroutine or process: Eventually polls a condition until it holds or a
// deadline passes. It is for conditions no event announces (a file written by
// a child process, a counter in another goroutine, a remote service's state);
// a test that waits for code to arm a timer uses internal/clock's
// Manual.BlockUntil instead, and a test that can receive from a channel
// receives.
//
// The package imports only the standard library.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// Polling starts at minInterval and doubles up to maxInterval, so a
// condition that holds soon is seen soon and a slow one (an HTTP call, a
// YARN report) is not hammered.
const (
	minInterval = time.Millisecond
	maxInterval = 50 * time.Millisecond
)

// Eventually polls cond until it returns true, and fails t (Fatalf) if it
// has not within timeout, saying how long it waited and for what. cond runs
// on the caller's goroutine, so it may itself call t.Fatal.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("%v waiting for %s", err, what)
	}
}

// EventuallyNil polls cond until it returns nil, and fails t (Fatalf) if it
// has not within timeout, naming what it waited for and the last error.
func EventuallyNil(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	var last error
	if err := Poll(timeout, func() bool { last = cond(); return last == nil }); err != nil {
		t.Fatalf("%v waiting for %s: last error: %v", err, what, last)
	}
}

// Poll is Eventually for code without a testing.TB (a test harness's
// helpers that return errors): it polls cond until it returns true and
// returns nil, or returns an error once timeout has passed.
func Poll(timeout time.Duration, cond func() bool) error {
	start := time.Now()
	deadline := start.Add(timeout)
	interval := minInterval
	polls := 0
	for {
		polls++
		if cond() {
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("timed out after %v (%d polls)", now.Sub(start).Round(time.Millisecond), polls)
		}
		time.Sleep(min(interval, deadline.Sub(now))) // the polling interval: the condition has no event to wait on
		interval = min(2*interval, maxInterval)
	}
}
