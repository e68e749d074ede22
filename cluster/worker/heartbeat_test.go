package worker

import (
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
)

// TestHeartbeats: the loop beats every interval and, when a tick finds
// the one before heartbeat.timeout or more ago (the process was stopped),
// reports the silence instead and ends.
func TestHeartbeats(t *testing.T) {
	const interval, timeout = 1000, 5000
	type event struct {
		seq, gap int64 // a beat, or a silence of gap ms
	}
	for _, tc := range []struct {
		name string
		// steps are the clock's moves (ms), each after the loop has
		// reacted to the one before.
		steps []int64
		want  []event
		// stopped: the loop is still running after the steps.
		running bool
	}{
		{name: "a beat every interval", steps: []int64{1000, 1000, 1000},
			want: []event{{seq: 1}, {seq: 2}, {seq: 3}}, running: true},
		{name: "a late tick within the timeout still beats", steps: []int64{1000, 4999},
			want: []event{{seq: 1}, {seq: 2}}, running: true},
		{name: "stopped for the timeout: silent", steps: []int64{1000, 5000},
			want: []event{{seq: 1}, {gap: 5000}}},
		{name: "stopped from the start", steps: []int64{12000},
			want: []event{{gap: 12000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &armClock{Manual: clock.NewManual(0), armed: make(chan int64, 64)}
			events := make(chan event, 16)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				heartbeats(clk, interval, timeout, stop,
					func(seq int64) { events <- event{seq: seq} },
					func(gap int64) { events <- event{gap: gap} })
			}()
			var got []event
			for _, d := range tc.steps {
				// The loop has armed its next tick: it has taken the time
				// it last beat at.
				select {
				case <-clk.armed:
				case <-time.After(10 * time.Second):
					t.Fatal("the loop armed no tick")
				}
				clk.Advance(d)
				select {
				case e := <-events:
					got = append(got, e)
				case <-time.After(10 * time.Second):
					t.Fatalf("nothing happened after the clock moved %d ms; so far %v", d, got)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("events %v, want %v", got, tc.want)
				}
			}
			select {
			case <-done:
				if tc.running {
					t.Fatal("the loop ended")
				}
			default:
				if !tc.running {
					// After a silence the loop ends by itself.
					select {
					case <-done:
					case <-time.After(10 * time.Second):
						t.Fatal("the loop runs on after reporting a silence")
					}
				}
			}
			close(stop)
			<-done
		})
	}
}

// armClock is a manual clock that reports every timer armed on it.
type armClock struct {
	*clock.Manual
	armed chan int64
}

func (c *armClock) AfterMillis(deadline int64) (<-chan struct{}, func()) {
	c.armed <- deadline
	return c.Manual.AfterMillis(deadline)
}
