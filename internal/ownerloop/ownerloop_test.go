package ownerloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sluice/sluice/internal/clock"
)

// counter is a Machine: "add N" adds, "get" answers the sum, "alarm T"
// wants a tick at T, "tick" records the time, "bounce" asks the applier for
// a follow-up "add 100".
type counter struct {
	sum   int
	alarm int64
	armed bool
	ticks []int64
	seen  []string
}

func (c *counter) Step(now int64, e string) ([]string, int) {
	c.seen = append(c.seen, e)
	var n int64
	switch {
	case e == "tick":
		c.ticks = append(c.ticks, now)
		c.armed = false
		return []string{fmt.Sprintf("ticked at %d", now)}, c.sum
	case e == "bounce":
		return []string{"bounce"}, c.sum
	case e == "get":
		return nil, c.sum
	}
	if _, err := fmt.Sscanf(e, "alarm %d", &n); err == nil {
		c.alarm, c.armed = n, true
		return nil, c.sum
	}
	if _, err := fmt.Sscanf(e, "add %d", &n); err == nil {
		c.sum += int(n)
		return []string{fmt.Sprintf("sum %d", c.sum)}, c.sum
	}
	panic("unknown event " + e)
}

func (c *counter) Deadline() (int64, bool) { return c.alarm, c.armed }

type recorder struct {
	mu      sync.Mutex
	applied []string
	ticked  chan int64
}

func (r *recorder) apply(fx []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var follow []string
	for _, f := range fx {
		r.applied = append(r.applied, f)
		var at int64
		if _, err := fmt.Sscanf(f, "ticked at %d", &at); err == nil && r.ticked != nil {
			r.ticked <- at
		}
		if f == "bounce" {
			follow = append(follow, "add 100")
		}
	}
	return follow
}

func (r *recorder) effects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.applied)
}

func start(t *testing.T, l *Loop[string, string, int]) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestCallPostAndFollowUps(t *testing.T) {
	c := &counter{}
	r := &recorder{}
	l := New(Config[string, string, int]{Machine: c, Apply: r.apply, Tick: "tick", Clock: clock.NewManual(0)})
	// Events queued before Run are stepped once it runs, in order.
	l.Post("add 1")
	start(t, l)
	l.Post("add 2")
	if got, err := l.Call(context.Background(), "get"); err != nil || got != 3 {
		t.Fatalf("get = %d, %v; want 3", got, err)
	}
	// A follow-up is stepped before the next event of the inbox.
	if got, err := l.Call(context.Background(), "bounce"); err != nil || got != 3 {
		t.Fatalf("bounce = %d, %v; want the answer before the follow-up, 3", got, err)
	}
	if got, _ := l.Call(context.Background(), "get"); got != 103 {
		t.Fatalf("get after bounce = %d, want 103", got)
	}
	want := []string{"sum 1", "sum 3", "bounce", "sum 103"}
	if got := r.effects(); !slices.Equal(got, want) {
		t.Fatalf("applied %q, want %q", got, want)
	}
}

func TestDeadlineTicks(t *testing.T) {
	c := &counter{}
	clk := clock.NewManual(1000)
	r := &recorder{ticked: make(chan int64, 4)}
	l := New(Config[string, string, int]{Machine: c, Apply: r.apply, Tick: "tick", Clock: clk})
	start(t, l)
	if _, err := l.Call(context.Background(), "alarm 1500"); err != nil {
		t.Fatal(err)
	}
	// The timer is armed once Call has returned: the loop arms it before
	// taking the next event, so a second Call orders after it.
	if _, err := l.Call(context.Background(), "get"); err != nil {
		t.Fatal(err)
	}
	clk.Set(1499)
	if _, err := l.Call(context.Background(), "get"); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-r.ticked:
		t.Fatalf("ticked at %d before the deadline", at)
	default:
	}
	clk.Set(1600)
	if at := <-r.ticked; at != 1600 {
		t.Fatalf("ticked at %d, want 1600", at)
	}
	// A moved deadline re-arms the timer.
	if _, err := l.Call(context.Background(), "alarm 2000"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Call(context.Background(), "alarm 1700"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Call(context.Background(), "get"); err != nil {
		t.Fatal(err)
	}
	clk.Set(1700)
	if at := <-r.ticked; at != 1700 {
		t.Fatalf("ticked at %d, want 1700", at)
	}
}

func TestStop(t *testing.T) {
	c := &counter{}
	l := New(Config[string, string, int]{Machine: c, Tick: "tick", Clock: clock.NewManual(0)})
	errBoom := errors.New("boom")
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	if _, err := l.Call(context.Background(), "add 5"); err != nil {
		t.Fatal(err)
	}
	l.Stop(errBoom)
	l.Stop(errors.New("second stop is ignored"))
	if err := <-done; !errors.Is(err, errBoom) {
		t.Fatalf("Run = %v, want %v", err, errBoom)
	}
	<-l.Done()
	if _, err := l.Call(context.Background(), "add 1"); !errors.Is(err, ErrStopped) {
		t.Fatalf("Call after Run = %v, want ErrStopped", err)
	}
	l.Post("add 1") // dropped, does not block
	if err := l.Run(context.Background()); err == nil {
		t.Fatal("second Run succeeded")
	}
	// The machine may be read once Run has returned.
	if c.sum != 5 {
		t.Fatalf("sum %d, want 5", c.sum)
	}
}

func TestCancelledCallIsWithdrawn(t *testing.T) {
	c := &counter{}
	l := New(Config[string, string, int]{Machine: c, Tick: "tick", Clock: clock.NewManual(0)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Not running yet: the event stays queued until ctx ends.
	if _, err := l.Call(ctx, "add 7"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	stop := start(t, l)
	if got, err := l.Call(context.Background(), "get"); err != nil || got != 0 {
		t.Fatalf("get = %d, %v; want 0: a withdrawn event is never stepped", got, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"get"}; !slices.Equal(c.seen, want) {
		t.Fatalf("stepped %q, want %q", c.seen, want)
	}
}

func TestConcurrentCallers(t *testing.T) {
	c := &counter{}
	l := New(Config[string, string, int]{Machine: c, Tick: "tick", Clock: clock.NewManual(0)})
	start(t, l)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := l.Call(context.Background(), "add 1"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, _ := l.Call(context.Background(), "get"); got != 400 {
		t.Fatalf("sum %d, want 400", got)
	}
}

// stopper stops its loop when it steps "stop".
type stopper struct {
	l    *Loop[string, string, int]
	seen []string
}

func (s *stopper) Step(_ int64, e string) ([]string, int) {
	s.seen = append(s.seen, e)
	if e == "stop" {
		s.l.Stop(nil)
	}
	return nil, len(s.seen)
}

func (s *stopper) Deadline() (int64, bool) { return 0, false }

func TestStopFromStep(t *testing.T) {
	s := &stopper{}
	s.l = New(Config[string, string, int]{Machine: s, Clock: clock.NewManual(0)})
	// Queued before Run: taken in one batch, of which "after" is never
	// stepped.
	s.l.Post("before")
	s.l.Post("stop")
	s.l.Post("after")
	if err := s.l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"before", "stop"}; !slices.Equal(s.seen, want) {
		t.Fatalf("stepped %q, want %q", s.seen, want)
	}
	if _, err := s.l.Call(context.Background(), "late"); !errors.Is(err, ErrStopped) {
		t.Fatalf("Call after a stop = %v, want ErrStopped", err)
	}
}
