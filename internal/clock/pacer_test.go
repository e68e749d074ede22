package clock

import "testing"

func TestPacer(t *testing.T) {
	p := &Pacer{PerSecond: 10} // one every 100 ms, the first at once
	type step struct {
		now, limit, wantN, wantNext, take int64
	}
	for i, s := range []step{
		{now: 1000, limit: 5, wantN: 1, take: 1},
		{now: 1000, limit: 5, wantNext: 1100},
		{now: 1099, limit: 5, wantNext: 1100},
		{now: 1100, limit: 5, wantN: 1, take: 1},
		{now: 1750, limit: 5, wantN: 5, take: 3}, // 8 due by 1750, 2 taken; 3 of 5 used
		{now: 1750, limit: 5, wantN: 3, take: 3},
		{now: 1750, limit: 5, wantNext: 1800},
		{now: 5000, limit: 100, wantN: 33, take: 33}, // 41 due by 5000, 8 taken
	} {
		n, next := p.Allow(s.now, s.limit)
		if n != s.wantN || next != s.wantNext {
			t.Fatalf("step %d: Allow(%d, %d) = %d, %d; want %d, %d", i, s.now, s.limit, n, next, s.wantN, s.wantNext)
		}
		p.Took(s.take)
	}
	if n, next := (&Pacer{}).Allow(7, 256); n != 256 || next != 0 {
		t.Errorf("an unlimited pacer allowed %d, %d; want 256, 0", n, next)
	}
}
