package scheduler

import (
	"slices"
	"testing"
)

func TestHeartbeats(t *testing.T) {
	type step struct {
		op   string // seen, forget, expire
		peer string
		now  int64
		// for expire: the peers reported lost; then the next deadline
		// (-1: none) after the step.
		lost []string
		next int64
	}
	tests := []struct {
		name    string
		timeout int64
		steps   []step
	}{
		{"empty", 100, []step{
			{op: "expire", now: 1000, next: -1},
		}},
		{"lost exactly at the timeout", 100, []step{
			{op: "seen", peer: "a", now: 0, next: 100},
			{op: "expire", now: 99, next: 100},
			{op: "expire", now: 100, lost: []string{"a"}, next: -1},
			{op: "expire", now: 500, next: -1}, // reported once
		}},
		{"heartbeats keep a peer", 100, []step{
			{op: "seen", peer: "a", now: 0, next: 100},
			{op: "seen", peer: "a", now: 90, next: 190},
			{op: "expire", now: 150, next: 190},
			{op: "seen", peer: "a", now: 180, next: 280},
			{op: "expire", now: 279, next: 280},
		}},
		{"a time going backwards is ignored", 100, []step{
			{op: "seen", peer: "a", now: 50, next: 150},
			{op: "seen", peer: "a", now: 10, next: 150},
		}},
		{"the earliest deadline of several", 100, []step{
			{op: "seen", peer: "b", now: 30, next: 130},
			{op: "seen", peer: "a", now: 10, next: 110},
			{op: "seen", peer: "c", now: 20, next: 110},
			{op: "expire", now: 125, lost: []string{"a", "c"}, next: 130},
			{op: "seen", peer: "a", now: 126, next: 130},
			{op: "expire", now: 200, lost: []string{"b"}, next: 226},
		}},
		{"forgotten peers are not reported", 100, []step{
			{op: "seen", peer: "a", now: 0, next: 100},
			{op: "seen", peer: "b", now: 50, next: 100},
			{op: "forget", peer: "a", next: 150},
			{op: "expire", now: 1000, lost: []string{"b"}, next: -1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHeartbeats(tt.timeout)
			for i, s := range tt.steps {
				var lost []string
				switch s.op {
				case "seen":
					h.Seen(s.peer, s.now)
					if last, ok := h.LastSeen(s.peer); !ok || last < s.now {
						t.Fatalf("step %d: LastSeen(%s) = %d, %v", i, s.peer, last, ok)
					}
				case "forget":
					h.Forget(s.peer)
					if _, ok := h.LastSeen(s.peer); ok {
						t.Fatalf("step %d: %s still tracked after Forget", i, s.peer)
					}
				case "expire":
					lost = h.Expire(s.now)
				}
				if !slices.Equal(lost, s.lost) {
					t.Fatalf("step %d (%s at %d): lost %v, want %v", i, s.op, s.now, lost, s.lost)
				}
				next, ok := h.NextDeadline()
				if !ok {
					next = -1
				}
				if next != s.next {
					t.Fatalf("step %d (%s %s at %d): next deadline %d, want %d", i, s.op, s.peer, s.now, next, s.next)
				}
			}
		})
	}
}
