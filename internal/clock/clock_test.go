package clock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

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

func TestManualReportsArmedTimers(t *testing.T) {
	m := NewManual(100)
	if got := m.Armed(); len(got) != 0 {
		t.Fatalf("a new clock has %v armed", got)
	}
	m.AfterMillis(90) // due at once: never armed
	_, stop := m.AfterMillis(150)
	m.AfterMillis(120)
	if got := m.Armed(); !slices.Equal(got, []int64{120, 150}) {
		t.Fatalf("armed %v, want [120 150]", got)
	}
	stop()
	if got := m.Armed(); !slices.Equal(got, []int64{120}) {
		t.Fatalf("after stop armed %v, want [120]", got)
	}
	m.Set(120)
	if got := m.Armed(); len(got) != 0 {
		t.Fatalf("after firing armed %v, want none", got)
	}
}

// TestBlockUntilWaitsForTheCodeUnderTest: a goroutine arms timers; the
// test learns of each through BlockUntil and BlockUntilArmedAt, with no
// polling, and moves time only then.
func TestBlockUntilWaitsForTheCodeUnderTest(t *testing.T) {
	m := NewManual(0)
	fired := make(chan int64)
	go func() {
		for _, d := range []int64{10, 20} {
			c, _ := m.AfterMillis(d)
			<-c
			fired <- m.NowMillis()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m.Set(10)
	if got := <-fired; got != 10 {
		t.Fatalf("fired at %d, want 10", got)
	}
	if err := m.BlockUntilArmedAt(ctx, 20); err != nil {
		t.Fatal(err)
	}
	m.Advance(10)
	if got := <-fired; got != 20 {
		t.Fatalf("fired at %d, want 20", got)
	}
}

func TestBlockUntilNamesWhatWasArmedWhenItGivesUp(t *testing.T) {
	m := NewManual(5)
	m.AfterMillis(7)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, err := range map[string]error{
		"BlockUntil":        m.BlockUntil(ctx, 2),
		"BlockUntilArmedAt": m.BlockUntilArmedAt(ctx, 9),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err %v, want context.Canceled", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "armed [7]") {
			t.Errorf("%s: %q does not name the armed timer", name, err)
		}
	}
	if err := m.BlockUntil(ctx, 1); err != nil {
		t.Errorf("BlockUntil(1) with one armed: %v", err)
	}
}

func TestTimeViews(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewManualAt(start)
	if got := Now(m); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c, _ := After(m, 1500*time.Microsecond) // rounds up to 2 ms
	if got := m.Armed(); !slices.Equal(got, []int64{start.UnixMilli() + 2}) {
		t.Fatalf("After(1.5ms) armed %v, want now+2", got)
	}
	m.AdvanceBy(time.Millisecond)
	select {
	case <-c:
		t.Fatal("After fired early")
	default:
	}
	m.SetTime(start.Add(2 * time.Millisecond))
	<-c
	if c, _ := After(m, 0); len(c) != 1 {
		t.Fatal("After(0) did not fire at once")
	}
}

func TestSystemFires(t *testing.T) {
	var s System
	c, _ := After(s, time.Millisecond)
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("the system clock's timer did not fire")
	}
	if d := time.Since(Now(s)); d < -time.Second || d > time.Second {
		t.Fatalf("Now(System) is %v off the wall clock", d)
	}
}

func TestManualZeroValue(t *testing.T) {
	var m Manual
	c, _ := m.AfterMillis(5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m.Advance(5)
	<-c
}

func TestBlockUntilCountsTimersArmedConcurrently(t *testing.T) {
	m := NewManual(0)
	const n = 8
	fired := make(chan struct{}, n)
	for i := range n {
		go func() {
			c, _ := m.AfterMillis(int64(10 + i))
			<-c
			fired <- struct{}{}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.BlockUntil(ctx, n); err != nil {
		t.Fatal(err)
	}
	m.Advance(100)
	for range n {
		<-fired
	}
	if got := m.Armed(); len(got) != 0 {
		t.Fatalf("armed %v after all fired", got)
	}
}
