package timer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
)

// fakeScheduler records what the service arms, like the task's timer queue.
type fakeScheduler struct {
	at map[int]int64
	fn map[int]func(int64) error
	n  int
}

func (f *fakeScheduler) schedule(at int64, fn func(int64) error) func() {
	f.n++
	id := f.n
	f.at[id], f.fn[id] = at, fn
	return func() { delete(f.at, id); delete(f.fn, id) }
}

func (f *fakeScheduler) armed() []int64 {
	var out []int64
	for _, at := range f.at {
		out = append(out, at)
	}
	return out
}

func newService(t *testing.T, log *[]string) (*Service[string, int], *state.Keyed[string], *fakeScheduler) {
	t.Helper()
	k, err := state.NewKeyed[string](128, keygroup.Range{Start: 0, End: 127}, clock.NewManual(0))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeScheduler{at: map[int]int64{}, fn: map[int]func(int64) error{}}
	var svc *Service[string, int]
	rec := func(kind string) func(Timer[string, int]) error {
		return func(tm Timer[string, int]) error {
			cur, _ := k.CurrentKey()
			*log = append(*log, fmt.Sprintf("%s %s/%d@%d key=%s", kind, tm.Key, tm.Namespace, tm.Time, cur))
			return nil
		}
	}
	svc = New[string, int](k, fs.schedule, rec("event"), rec("proc"))
	return svc, k, fs
}

func TestEventTimersFireInOrderOnceWithTheirKey(t *testing.T) {
	var log []string
	svc, k, _ := newService(t, &log)
	reg := func(key string, ns int, ts int64) {
		k.SetCurrentKey(key)
		if err := svc.RegisterEventTimer(ns, ts); err != nil {
			t.Fatal(err)
		}
	}
	reg("b", 0, 20)
	reg("a", 0, 10)
	reg("a", 0, 10) // duplicate: fires once
	reg("c", 1, 10) // same time, registered later: fires later
	reg("a", 1, 30)
	k.SetCurrentKey("a")
	svc.DeleteEventTimer(1, 30)
	if err := svc.AdvanceWatermark(25); err != nil {
		t.Fatal(err)
	}
	want := "event a/0@10 key=a\nevent c/1@10 key=c\nevent b/0@20 key=b"
	if got := strings.Join(log, "\n"); got != want {
		t.Fatalf("fired:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := k.CurrentKey(); ok {
		t.Fatal("current key must be cleared after firing")
	}
	if svc.NumEventTimers() != 0 {
		t.Fatalf("%d timers left; the deleted one must not count", svc.NumEventTimers())
	}
}

func TestProcessingTimersArmTheEarliestDeadline(t *testing.T) {
	var log []string
	svc, k, fs := newService(t, &log)
	k.SetCurrentKey("x")
	svc.RegisterProcessingTimer(0, 50)
	svc.RegisterProcessingTimer(0, 30)
	if got := fs.armed(); len(got) != 1 || got[0] != 30 {
		t.Fatalf("armed %v, want only the earliest deadline 30", got)
	}
	k.ClearCurrentKey()
	if err := svc.FireProcessingTimers(40); err != nil {
		t.Fatal(err)
	}
	if got := fs.armed(); len(got) != 1 || got[0] != 50 {
		t.Fatalf("after firing, armed %v, want 50", got)
	}
	if strings.Join(log, ";") != "proc x/0@30 key=x" {
		t.Fatalf("fired %v", log)
	}
}

func TestRegisteringWithoutAKeyFails(t *testing.T) {
	var log []string
	svc, _, _ := newService(t, &log)
	if err := svc.RegisterEventTimer(0, 1); err != state.ErrNoKey {
		t.Fatalf("got %v, want ErrNoKey", err)
	}
}

func TestManyTimersFireSortedByTimeThenRegistration(t *testing.T) {
	var log []string
	svc, k, _ := newService(t, &log)
	r := uint64(42)
	want := 0
	seen := map[[2]int64]bool{}
	for i := 0; i < 2000; i++ {
		r = r*6364136223846793005 + 1442695040888963407
		ts := int64(r>>33) % 500
		ns := int(r>>20) % 3
		k.SetCurrentKey(fmt.Sprint(ns))
		svc.RegisterEventTimer(ns, ts)
		if !seen[[2]int64{int64(ns), ts}] {
			seen[[2]int64{int64(ns), ts}] = true
			want++
		}
	}
	var times []int64
	svc.onEvent = func(tm Timer[string, int]) error { times = append(times, tm.Time); return nil }
	if err := svc.AdvanceWatermark(1 << 40); err != nil {
		t.Fatal(err)
	}
	if len(times) != want {
		t.Fatalf("fired %d timers, want %d distinct ones", len(times), want)
	}
	for i := 1; i < len(times); i++ {
		if times[i] < times[i-1] {
			t.Fatalf("timer %d at %d fired after one at %d", i, times[i], times[i-1])
		}
	}
}

func TestTimersSurviveASnapshot(t *testing.T) {
	var log []string
	svc, k, _ := newService(t, &log)
	for i, key := range []string{"a", "b", "c"} {
		k.SetCurrentKey(key)
		svc.RegisterEventTimer(i, int64(10*(i+1)))
		svc.RegisterProcessingTimer(i, int64(100*(i+1)))
	}
	k.SetCurrentKey("b")
	svc.DeleteEventTimer(1, 20)
	snap, err := k.SnapshotKeyGroups()
	if err != nil {
		t.Fatal(err)
	}
	var log2 []string
	k2, _ := state.NewKeyed[string](128, keygroup.Range{Start: 0, End: 127}, clock.NewManual(0))
	if err := k2.RestoreKeyGroups(snap); err != nil {
		t.Fatal(err)
	}
	fs := &fakeScheduler{at: map[int]int64{}, fn: map[int]func(int64) error{}}
	rec := func(kind string) func(Timer[string, int]) error {
		return func(tm Timer[string, int]) error {
			log2 = append(log2, fmt.Sprintf("%s %s/%d@%d", kind, tm.Key, tm.Namespace, tm.Time))
			return nil
		}
	}
	svc2 := New[string, int](k2, fs.schedule, rec("event"), rec("proc"))
	if svc2.Err() != nil {
		t.Fatal(svc2.Err())
	}
	if got := fs.armed(); len(got) != 1 || got[0] != 100 {
		t.Fatalf("restored processing timers armed %v, want [100]", got)
	}
	svc2.AdvanceWatermark(1000)
	svc2.FireProcessingTimers(1000)
	want := "event a/0@10;event c/2@30;proc a/0@100;proc b/1@200;proc c/2@300"
	if got := strings.Join(log2, ";"); got != want {
		t.Fatalf("restored timers fired %s, want %s", got, want)
	}
}
