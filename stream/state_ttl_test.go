package stream

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/typed"
)

// scriptStep is a record that carries the code to run for its key: the state
// tests script a keyed process function through the harness.
type scriptStep struct {
	key string
	fn  func(ctx *KeyedContext[string], out Collector[string]) error
}

func newScriptHarness(t *testing.T, backend state.Backend) *opHarness[string] {
	env := procTestEnv()
	ks := KeyBy(FromElements(env, scriptStep{}), func(s scriptStep) string { return s.key })
	fn := KeyedProcessFuncs[string, scriptStep, string]{
		Element: func(ctx *KeyedContext[string], s scriptStep, out Collector[string]) error { return s.fn(ctx, out) },
	}
	return newHarness(t, KeyedProcess(ks, fn), harnessOpts{start: 0, backend: backend})
}

// at runs fn for key "k" at processing time ms (the clock only moves forward).
func atTime(t *testing.T, h *opHarness[string], ms int64, fn func(ctx *KeyedContext[string], out Collector[string]) error) {
	t.Helper()
	mustOK(t, h.advance(ms-h.clock.NowMillis()))
	mustOK(t, feed(h, scriptStep{"k", fn}, noTimestamp))
}

func expectValues(t *testing.T, h *opHarness[string], want ...string) {
	t.Helper()
	var got []string
	for _, r := range h.out.take() {
		got = append(got, r.Value)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func ttl(d time.Duration, onRead, returnExpired bool) StateTTL {
	return StateTTL{TTL: d, UpdateOnRead: onRead, ReturnExpiredIfNotCleanedUp: returnExpired}
}

func TestTTLValueState(t *testing.T) { onEveryBackend(t, testTTLValueState) }

func testTTLValueState(t *testing.T, backend state.Backend) {
	tests := []struct {
		name  string
		ttl   StateTTL
		reads []int64 // read times after a write at 0
		want  []string
	}{
		{"expires after the TTL", ttl(time.Second, false, false), []int64{999, 1000}, []string{"v true", "_ false"}},
		{"reads do not refresh by default", ttl(time.Second, false, false), []int64{600, 1500}, []string{"v true", "_ false"}},
		{"reads refresh with UpdateOnRead", ttl(time.Second, true, false), []int64{600, 1500, 2500}, []string{"v true", "v true", "_ false"}},
		{"expired value returned if not cleaned up", ttl(time.Second, false, true), []int64{5000}, []string{"v true"}},
		{"no TTL keeps values", StateTTL{}, []int64{1 << 40}, []string{"v true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewValueDescriptor[string]("v").WithTTL(tc.ttl)
			h := newScriptHarness(t, backend)
			atTime(t, h, 0, func(ctx *KeyedContext[string], _ Collector[string]) error { return Value(ctx, d).Update("v") })
			for _, ms := range tc.reads {
				atTime(t, h, ms, func(ctx *KeyedContext[string], out Collector[string]) error {
					v, ok, err := Value(ctx, d).Lookup()
					if v == "" {
						v = "_"
					}
					out.Collect(fmt.Sprint(v, " ", ok))
					return err
				})
			}
			expectValues(t, h, tc.want...)
		})
	}
}

func TestTTLListStatePerElement(t *testing.T) { onEveryBackend(t, testTTLListStatePerElement) }

func testTTLListStatePerElement(t *testing.T, backend state.Backend) {
	get := func(d *ListDescriptor[string]) func(ctx *KeyedContext[string], out Collector[string]) error {
		return func(ctx *KeyedContext[string], out Collector[string]) error {
			l, err := List(ctx, d).Get()
			out.Collect(fmt.Sprint(l))
			return err
		}
	}
	add := func(d *ListDescriptor[string], v string) func(ctx *KeyedContext[string], out Collector[string]) error {
		return func(ctx *KeyedContext[string], _ Collector[string]) error { return List(ctx, d).Add(v) }
	}
	t.Run("elements expire one by one", func(t *testing.T) {
		d := NewListDescriptor[string]("l").WithTTL(ttl(time.Second, false, false))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, add(d, "a"))
		atTime(t, h, 500, add(d, "b"))
		atTime(t, h, 999, get(d))
		atTime(t, h, 1000, get(d))
		atTime(t, h, 1200, add(d, "c"))
		atTime(t, h, 1499, get(d))
		atTime(t, h, 2200, get(d))
		expectValues(t, h, "[a b]", "[b]", "[b c]", "[]")
	})
	t.Run("reads refresh with UpdateOnRead", func(t *testing.T) {
		d := NewListDescriptor[string]("l").WithTTL(ttl(time.Second, true, false))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, add(d, "a"))
		atTime(t, h, 500, add(d, "b"))
		atTime(t, h, 900, get(d))
		atTime(t, h, 1899, get(d))
		atTime(t, h, 2898, get(d))
		atTime(t, h, 3898, get(d))
		expectValues(t, h, "[a b]", "[a b]", "[a b]", "[]")
	})
	t.Run("update and addAll stamp every element", func(t *testing.T) {
		d := NewListDescriptor[string]("l").WithTTL(ttl(time.Second, false, false))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, func(ctx *KeyedContext[string], _ Collector[string]) error {
			return List(ctx, d).Update([]string{"x", "y"})
		})
		atTime(t, h, 600, func(ctx *KeyedContext[string], _ Collector[string]) error { return List(ctx, d).AddAll([]string{"z"}) })
		atTime(t, h, 999, get(d))
		atTime(t, h, 1000, get(d))
		atTime(t, h, 1600, get(d))
		expectValues(t, h, "[x y z]", "[z]", "[]")
	})
	t.Run("expired elements returned if not cleaned up", func(t *testing.T) {
		d := NewListDescriptor[string]("l").WithTTL(ttl(time.Second, false, true))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, add(d, "a"))
		atTime(t, h, 5000, get(d))
		expectValues(t, h, "[a]")
	})
	t.Run("adding drops the expired head", func(t *testing.T) {
		d := NewListDescriptor[string]("l").WithTTL(ttl(time.Second, false, false))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, add(d, "a"))
		atTime(t, h, 100, add(d, "b"))
		atTime(t, h, 700, add(d, "c"))
		atTime(t, h, 1150, add(d, "d"))
		atTime(t, h, 1150, func(ctx *KeyedContext[string], out Collector[string]) error {
			vs, ats, err := typed.StoredTTLList[string, string](ctx.v.states.Handles[d])
			var stored []string
			for i := range vs {
				stored = append(stored, fmt.Sprint(vs[i], "@", ats[i]))
			}
			out.Collect(fmt.Sprint(stored))
			return err
		})
		expectValues(t, h, "[c@700 d@1150]")
	})
}

func TestTTLMapStatePerEntry(t *testing.T) { onEveryBackend(t, testTTLMapStatePerEntry) }

func testTTLMapStatePerEntry(t *testing.T, backend state.Backend) {
	d := NewMapDescriptor[string, int]("m").WithTTL(ttl(time.Second, false, false))
	h := newScriptHarness(t, backend)
	atTime(t, h, 0, func(ctx *KeyedContext[string], _ Collector[string]) error { return MapOf(ctx, d).Put("x", 1) })
	atTime(t, h, 500, func(ctx *KeyedContext[string], _ Collector[string]) error { return MapOf(ctx, d).Put("y", 2) })
	show := func(ctx *KeyedContext[string], out Collector[string]) error {
		m := MapOf(ctx, d)
		x, okx, err := m.Get("x")
		if err != nil {
			return err
		}
		hasY, err := m.Contains("y")
		if err != nil {
			return err
		}
		all, err := m.Entries()
		if err != nil {
			return err
		}
		empty, err := m.IsEmpty()
		out.Collect(fmt.Sprint(x, okx, hasY, all, empty))
		return err
	}
	atTime(t, h, 999, show)
	atTime(t, h, 1000, show)
	atTime(t, h, 1200, func(ctx *KeyedContext[string], _ Collector[string]) error { return MapOf(ctx, d).Put("x", 3) })
	atTime(t, h, 1499, show)
	atTime(t, h, 1500, show)
	atTime(t, h, 2200, show)
	expectValues(t, h,
		"1 true true map[x:1 y:2] false",
		"0 false true map[y:2] false",
		"3 true true map[x:3 y:2] false",
		"3 true false map[x:3] false",
		"0 false false map[] true",
	)
	t.Run("UpdateOnRead refreshes read entries only", func(t *testing.T) {
		d := NewMapDescriptor[string, int]("m").WithTTL(ttl(time.Second, true, false))
		h := newScriptHarness(t, backend)
		atTime(t, h, 0, func(ctx *KeyedContext[string], _ Collector[string]) error {
			if err := MapOf(ctx, d).Put("x", 1); err != nil {
				return err
			}
			return MapOf(ctx, d).Put("y", 2)
		})
		atTime(t, h, 800, func(ctx *KeyedContext[string], _ Collector[string]) error {
			_, _, err := MapOf(ctx, d).Get("x")
			return err
		})
		atTime(t, h, 1500, func(ctx *KeyedContext[string], out Collector[string]) error {
			all, err := MapOf(ctx, d).Entries()
			out.Collect(fmt.Sprint(all))
			return err
		})
		expectValues(t, h, "map[x:1]")
	})
}

func TestTTLReducingAndAggregatingState(t *testing.T) {
	onEveryBackend(t, testTTLReducingAndAggregatingState)
}

func testTTLReducingAndAggregatingState(t *testing.T, backend state.Backend) {
	sum := NewReducingDescriptor("sum", func(a, b int) int { return a + b }).WithTTL(ttl(time.Second, false, false))
	avg := NewAggregatingDescriptor("avg", AggregateFunction[int, [2]int, float64](AggregateFuncs[int, [2]int, float64]{
		AddFn:    func(v int, acc [2]int) [2]int { return [2]int{acc[0] + v, acc[1] + 1} },
		ResultFn: func(acc [2]int) float64 { return float64(acc[0]) / float64(acc[1]) },
	})).WithTTL(ttl(time.Second, false, false))
	h := newScriptHarness(t, backend)
	add := func(v int) func(ctx *KeyedContext[string], out Collector[string]) error {
		return func(ctx *KeyedContext[string], _ Collector[string]) error {
			if err := Reducing(ctx, sum).Add(v); err != nil {
				return err
			}
			return Aggregating(ctx, avg).Add(v)
		}
	}
	show := func(ctx *KeyedContext[string], out Collector[string]) error {
		s, oks, err := Reducing(ctx, sum).Get()
		if err != nil {
			return err
		}
		a, oka, err := Aggregating(ctx, avg).Get()
		out.Collect(fmt.Sprint(s, oks, a, oka))
		return err
	}
	atTime(t, h, 0, add(1))
	atTime(t, h, 500, add(2)) // a write refreshes the whole value
	atTime(t, h, 1499, show)
	atTime(t, h, 1500, show)
	atTime(t, h, 1600, add(5))
	atTime(t, h, 1700, show)
	expectValues(t, h, "3 true 1.5 true", "0 false 0 false", "5 true 5 true")
}

func TestKeyedStateKindsPerKey(t *testing.T) { onEveryBackend(t, testKeyedStateKindsPerKey) }

func testKeyedStateKindsPerKey(t *testing.T, backend state.Backend) {
	// Every state kind, for two keys, without TTL: each key sees only its own.
	cnt := NewValueDescriptor[int]("count")
	seen := NewListDescriptor[int]("seen")
	byParity := NewMapDescriptor[bool, int]("parity")
	maxD := NewReducingDescriptor("max", func(a, b int) int { return max(a, b) })
	mean := NewAggregatingDescriptor("mean", AggregateFunction[int, [2]int, float64](AggregateFuncs[int, [2]int, float64]{
		AddFn:    func(v int, acc [2]int) [2]int { return [2]int{acc[0] + v, acc[1] + 1} },
		ResultFn: func(acc [2]int) float64 { return float64(acc[0]) / float64(acc[1]) },
	}))
	h := newScriptHarness(t, backend)
	put := func(key string, v int) {
		mustOK(t, feed(h, scriptStep{key, func(ctx *KeyedContext[string], out Collector[string]) error {
			c, err := Value(ctx, cnt).Value()
			if err != nil {
				return err
			}
			if err := Value(ctx, cnt).Update(c + 1); err != nil {
				return err
			}
			if err := List(ctx, seen).Add(v); err != nil {
				return err
			}
			n, _, err := MapOf(ctx, byParity).Get(v%2 == 0)
			if err != nil {
				return err
			}
			if err := MapOf(ctx, byParity).Put(v%2 == 0, n+1); err != nil {
				return err
			}
			if err := Reducing(ctx, maxD).Add(v); err != nil {
				return err
			}
			if err := Aggregating(ctx, mean).Add(v); err != nil {
				return err
			}
			l, _ := List(ctx, seen).Get()
			m, _ := MapOf(ctx, byParity).Entries()
			mx, _, _ := Reducing(ctx, maxD).Get()
			avg, _, _ := Aggregating(ctx, mean).Get()
			out.Collect(fmt.Sprintf("%s: count=%d seen=%v parity=%v max=%d mean=%.1f", ctx.CurrentKey(), c+1, l, m, mx, avg))
			return nil
		}}, noTimestamp))
	}
	put("a", 3)
	put("b", 10)
	put("a", 8)
	put("a", 1)
	put("b", 4)
	expectValues(t, h,
		"a: count=1 seen=[3] parity=map[false:1] max=3 mean=3.0",
		"b: count=1 seen=[10] parity=map[true:1] max=10 mean=10.0",
		"a: count=2 seen=[3 8] parity=map[false:1 true:1] max=8 mean=5.5",
		"a: count=3 seen=[3 8 1] parity=map[false:2 true:1] max=8 mean=4.0",
		"b: count=2 seen=[10 4] parity=map[true:2] max=10 mean=7.0",
	)
	// Clearing one key's state leaves the other's.
	mustOK(t, feed(h, scriptStep{"a", func(ctx *KeyedContext[string], out Collector[string]) error {
		for _, err := range []error{Value(ctx, cnt).Clear(), List(ctx, seen).Clear(), MapOf(ctx, byParity).Clear(), Reducing(ctx, maxD).Clear(), Aggregating(ctx, mean).Clear()} {
			if err != nil {
				return err
			}
		}
		return nil
	}}, noTimestamp))
	put("a", 2)
	put("b", 5)
	expectValues(t, h,
		"a: count=1 seen=[2] parity=map[true:1] max=2 mean=2.0",
		"b: count=3 seen=[10 4 5] parity=map[false:1 true:2] max=10 mean=6.3",
	)
}
