package state_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// subtask is an operator subtask's keyed state as an operator holds it: a
// value table, a list table registered lazily, and event-time timers.
type subtask struct {
	k      *state.Keyed[string]
	counts *state.ValueTable[string, state.Void, int64]
	lists  *state.ValueTable[string, int, []string]
	timers *timer.Service[string, int]
	fired  *[]string
}

func newSubtask(t *testing.T, b state.Backend, maxPar, par, idx int, restore func(k *state.Keyed[string])) *subtask {
	t.Helper()
	k, err := state.NewKeyedWithBackend[string](maxPar, keygroup.RangeFor(maxPar, par, idx), clock.NewManual(0), b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if restore != nil {
		restore(k) // as the task does: before the operator registers state
	}
	s := &subtask{k: k, fired: new([]string)}
	if s.counts, err = state.NewValueTable[string, state.Void, int64](k, "counts", state.TTL{}); err != nil {
		t.Fatal(err)
	}
	if s.lists, err = state.NewValueTable[string, int, []string](k, "lists", state.TTL{}); err != nil {
		t.Fatal(err)
	}
	noSchedule := func(int64, func(int64) error) func() { return func() {} }
	s.timers = timer.New(k, noSchedule, func(tm timer.Timer[string, int]) error {
		*s.fired = append(*s.fired, fmt.Sprintf("%s@%d", tm.Key, tm.Time))
		return nil
	}, func(timer.Timer[string, int]) error { return nil })
	if err := s.timers.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *subtask) owns(key string) bool {
	h, _ := keygroup.NewHasher[string]()
	return s.k.KeyGroups().Contains(h.KeyGroup(key, 128))
}

// contents is every key's state and timers, as "key=count lists timer".
func contents(t *testing.T, subs []*subtask) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(key, part string) {
		if out[key] != "" {
			out[key] += " "
		}
		out[key] += part
	}
	for i, s := range subs {
		seen := map[string]bool{}
		if err := s.counts.Entries(func(k string, _ state.Void, n int64) error {
			if !s.owns(k) {
				t.Errorf("subtask %d has key %s of another subtask", i, k)
			}
			if seen[k] {
				t.Errorf("key %s twice", k)
			}
			seen[k] = true
			add(k, fmt.Sprintf("count=%d", n))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.lists.Entries(func(k string, ns int, v []string) error {
			if !s.owns(k) {
				t.Errorf("subtask %d has list of key %s of another subtask", i, k)
			}
			add(k, fmt.Sprintf("list%d=%s", ns, strings.Join(v, ",")))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		*s.fired = nil
		if err := s.timers.AdvanceWatermark(1 << 40); err != nil {
			t.Fatal(err)
		}
		for _, f := range *s.fired {
			key := f[:strings.IndexByte(f, '@')]
			if !s.owns(key) {
				t.Errorf("subtask %d fired a timer of key %s of another subtask", i, key)
			}
			add(key, "timer@"+f[len(key)+1:])
		}
	}
	for k, v := range out {
		parts := strings.Split(v, " ")
		sort.Strings(parts)
		out[k] = strings.Join(parts, " ")
	}
	return out
}

func diff(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d keys, want %d", len(got), len(want))
	}
	n := 0
	for k, w := range want {
		if got[k] != w && n < 10 {
			t.Errorf("key %s: %q, want %q", k, got[k], w)
			n++
		}
	}
}

func TestIncrementalSnapshotsRestoreAndRescale(t *testing.T) {
	dir := t.TempDir()
	pebble := &state.PebbleBackend{Dir: dir}
	const maxPar = 128
	// Two subtasks write state, checkpoint twice (the second one after a
	// few changes), and the second checkpoint is restored at parallelism
	// 3, 1 and 2, into pebble and into the hashmap backend.
	src := []*subtask{newSubtask(t, pebble, maxPar, 2, 0, nil), newSubtask(t, pebble, maxPar, 2, 1, nil)}
	write := func(from, to int, tag string) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("key-%d", i)
			for _, s := range src {
				if !s.owns(key) {
					continue
				}
				s.k.SetCurrentKey(key)
				if err := s.counts.Put(state.Void{}, int64(i)); err != nil {
					t.Fatal(err)
				}
				if err := s.lists.Put(i%4, []string{tag, key}); err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					if err := s.timers.RegisterEventTimer(i%4, int64(1000+i)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	write(0, 3000, "v1")
	files := map[string]string{}
	for _, s := range src {
		fs, _, err := s.k.SnapshotFiles(7)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			files[f.Name] = f.Path
		}
	}
	write(0, 20, "v2")
	var manifests [][]byte
	for _, s := range src {
		fs, m, err := s.k.SnapshotFiles(8)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if prev, ok := files[f.Name]; ok && prev == f.Path {
				t.Fatalf("file %s reported at the same path by two checkpoints", f.Name)
			}
			files[f.Name] = f.Path
		}
		manifests = append(manifests, m)
	}
	want := contents(t, src)
	if len(want) != 3000 {
		t.Fatalf("source state has %d keys", len(want))
	}
	for _, c := range []struct {
		backend string
		par     int
	}{{"pebble", 3}, {"pebble", 1}, {"pebble", 2}, {"hashmap", 3}, {"hashmap", 1}} {
		t.Run(fmt.Sprintf("%s-parallelism-%d", c.backend, c.par), func(t *testing.T) {
			var b state.Backend
			if c.backend == "pebble" {
				b = pebble
			}
			var subs []*subtask
			for i := 0; i < c.par; i++ {
				subs = append(subs, newSubtask(t, b, maxPar, c.par, i, func(k *state.Keyed[string]) {
					if err := k.RestoreFiles(files, manifests); err != nil {
						t.Fatal(err)
					}
				}))
				if p := subs[i].k.PendingRestore(); len(p) != 0 {
					t.Errorf("unclaimed state after registering: %v", p)
				}
			}
			diff(t, contents(t, subs), want)
		})
	}
}

func TestIncrementalSnapshotCarriesUnclaimedState(t *testing.T) {
	dir := t.TempDir()
	pebble := &state.PebbleBackend{Dir: dir}
	src := newSubtask(t, pebble, 128, 1, 0, nil)
	for i := 0; i < 100; i++ {
		src.k.SetCurrentKey(fmt.Sprint(i))
		if err := src.counts.Put(state.Void{}, int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := src.timers.RegisterEventTimer(0, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	want := contents(t, []*subtask{src})
	src.timers.AdvanceWatermark(-1 << 62) // contents fired the timers: re-register them
	for i := 0; i < 100; i++ {
		src.k.SetCurrentKey(fmt.Sprint(i))
		src.timers.RegisterEventTimer(0, int64(i))
	}
	fs, m, err := src.k.SnapshotFiles(1)
	if err != nil {
		t.Fatal(err)
	}
	// A restored subtask checkpoints before its operator registered any
	// state: the next checkpoint still has all of it.
	k, err := state.NewKeyedWithBackend[string](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0), pebble)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	files := map[string]string{}
	for _, f := range fs {
		files[f.Name] = f.Path
	}
	if err := k.RestoreFiles(files, [][]byte{m}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(k.PendingRestore()); got != "[_timers counts lists]" {
		t.Fatalf("pending %s", got)
	}
	fs2, m2, err := k.SnapshotFiles(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs2 {
		files[f.Name] = f.Path
	}
	dst := newSubtask(t, pebble, 128, 1, 0, func(k *state.Keyed[string]) {
		if err := k.RestoreFiles(files, [][]byte{m2}); err != nil {
			t.Fatal(err)
		}
	})
	diff(t, contents(t, []*subtask{dst}), want)
}
