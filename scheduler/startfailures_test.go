package scheduler

import "testing"

func TestStartFailures(t *testing.T) {
	type step struct {
		at         int64
		fail       bool  // Record a failure at `at`; otherwise ask Paused
		wantPaused bool  // Record's or Paused's answer
		wantUntil  int64 // Paused's until (steps that ask)
		wantRecent int
	}
	tests := []struct {
		name  string
		rate  float64
		retry int64
		steps []step
	}{
		{
			name: "below the rate nothing pauses", rate: 3, retry: 3000,
			steps: []step{
				{at: 0, fail: true, wantRecent: 1},
				{at: 10_000, fail: true, wantRecent: 2},
				{at: 10_001, wantRecent: 2},
			},
		},
		{
			name: "reaching the rate pauses for the retry interval", rate: 3, retry: 3000,
			steps: []step{
				{at: 0, fail: true, wantRecent: 1},
				{at: 100, fail: true, wantRecent: 2},
				{at: 200, fail: true, wantPaused: true, wantRecent: 3},
				{at: 201, wantPaused: true, wantUntil: 3200, wantRecent: 3},
				{at: 3199, wantPaused: true, wantUntil: 3200, wantRecent: 3},
				{at: 3200, wantRecent: 3},
			},
		},
		{
			name: "a failure after the pause with the rate still reached pauses again", rate: 2, retry: 1000,
			steps: []step{
				{at: 0, fail: true, wantRecent: 1},
				{at: 10, fail: true, wantPaused: true, wantRecent: 2},
				{at: 1010, wantRecent: 2},
				{at: 2000, fail: true, wantPaused: true, wantRecent: 3},
				{at: 2999, wantPaused: true, wantUntil: 3000, wantRecent: 3},
			},
		},
		{
			name: "failures older than a minute no longer count", rate: 2, retry: 1000,
			steps: []step{
				{at: 0, fail: true, wantRecent: 1},
				{at: 60_000, fail: true, wantRecent: 1},
				{at: 119_999, fail: true, wantPaused: true, wantRecent: 2},
				{at: 180_000, wantRecent: 0},
			},
		},
		{
			name: "a fractional rate pauses at the next whole failure", rate: 1.5, retry: 500,
			steps: []step{
				{at: 0, fail: true, wantRecent: 1},
				{at: 1, fail: true, wantPaused: true, wantRecent: 2},
				{at: 2, wantPaused: true, wantUntil: 501, wantRecent: 2},
			},
		},
		{
			name: "a failure during a pause extends it", rate: 1, retry: 1000,
			steps: []step{
				{at: 0, fail: true, wantPaused: true, wantRecent: 1},
				{at: 500, fail: true, wantPaused: true, wantRecent: 2},
				{at: 1200, wantPaused: true, wantUntil: 1500, wantRecent: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStartFailures(tt.rate, tt.retry)
			for i, st := range tt.steps {
				if st.fail {
					if got := s.Record(st.at); got != st.wantPaused {
						t.Errorf("step %d: Record(%d) = %v, want %v", i, st.at, got, st.wantPaused)
					}
				} else {
					paused, until := s.Paused(st.at)
					if paused != st.wantPaused || until != st.wantUntil {
						t.Errorf("step %d: Paused(%d) = %v, %d, want %v, %d", i, st.at, paused, until, st.wantPaused, st.wantUntil)
					}
				}
				if got := s.Recent(st.at); got != st.wantRecent {
					t.Errorf("step %d: Recent(%d) = %d, want %d", i, st.at, got, st.wantRecent)
				}
			}
		})
	}
}
