package clock

import "testing"

func TestManualFiresTimersWhenTimeReachesThem(t *testing.T) {
	m := NewManual(100)
	c1, _ := m.AfterMillis(150)
	c2, stop2 := m.AfterMillis(120)
	c0, _ := m.AfterMillis(90) // already due
	select {
	case <-c0:
	default:
		t.Fatal("a deadline in the past must fire at once")
	}
	stop2()
	m.Advance(30) // 130
	select {
	case <-c2:
		t.Fatal("a stopped timer fired")
	case <-c1:
		t.Fatal("a timer fired before its deadline")
	default:
	}
	m.Set(100) // never backwards
	if m.NowMillis() != 130 {
		t.Fatalf("now %d, want 130", m.NowMillis())
	}
	m.Set(150)
	select {
	case <-c1:
	default:
		t.Fatal("the timer at 150 did not fire at 150")
	}
}
