package stream

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

type reading struct {
	Key   string
	Value int
}

type bcRule struct {
	Name  string
	Min   int // < 0 removes the bcRule
	Reset bool
}

func sortedRules(st ReadOnlyBroadcastState[string, int]) []string {
	var names []string
	for name := range st.All() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func TestHarnessKeyedBroadcastProcess(t *testing.T) {
	rules := NewMapDescriptor[string, int]("rules")
	count := NewValueDescriptor[int]("count")
	fn := KeyedBroadcastProcessFuncs[string, reading, bcRule, string]{
		Element: func(ctx *KeyedBroadcastReadOnlyContext[string], r reading, out Collector[string]) error {
			n, err := Value(ctx, count).Value()
			if err != nil {
				return err
			}
			n++
			if err := Value(ctx, count).Update(n); err != nil {
				return err
			}
			st := ReadOnlyBroadcastStateOf(ctx, rules)
			for _, name := range sortedRules(st) {
				if min, _ := st.Get(name); r.Value >= min {
					out.Collect(fmt.Sprintf("%s %s %d #%d", ctx.CurrentKey(), name, r.Value, n))
				}
			}
			ctx.TimerService().RegisterEventTimeTimer(ctx.Timestamp() + 10)
			return nil
		},
		Broadcast: func(ctx *KeyedBroadcastContext[string], r bcRule, out Collector[string]) error {
			if r.Reset {
				var resets []string
				err := ApplyToKeyedState(ctx, count, func(key string, st KeyedStateContext[string]) error {
					n, err := Value(st, count).Value()
					resets = append(resets, fmt.Sprintf("reset %s=%d", key, n))
					if err != nil {
						return err
					}
					return Value(st, count).Clear()
				})
				sort.Strings(resets)
				for _, s := range resets {
					out.Collect(s)
				}
				return err
			}
			st := BroadcastStateOf(ctx, rules)
			if r.Min < 0 {
				st.Remove(r.Name)
			} else {
				st.Put(r.Name, r.Min)
			}
			return nil
		},
		Timer: func(ctx *KeyedBroadcastOnTimerContext[string], ts Timestamp, out Collector[string]) error {
			n, err := Value(ctx, count).Value()
			out.Collect(fmt.Sprintf("timer %s@%d rules=%d count=%d", ctx.CurrentKey(), ts, ReadOnlyBroadcastStateOf(ctx, rules).Len(), n))
			return err
		},
	}
	env := procTestEnv()
	ks := KeyBy(FromElements(env, reading{}), func(r reading) string { return r.Key })
	bs := Broadcast(FromElements(env, bcRule{}), rules)
	s := KeyedBroadcastProcess(ConnectKeyedBroadcast(ks, bs), fn)
	h := newHarness(t, s, harnessOpts{})
	read := func(k string, v int, ts int64) { mustOK(t, feedTo(h, 0, reading{k, v}, ts)) }
	bcast := func(r bcRule) { mustOK(t, feedTo(h, 1, r, noTimestamp)) }
	read("a", 5, 1)
	bcast(bcRule{Name: "hi", Min: 7})
	bcast(bcRule{Name: "lo", Min: 3})
	read("a", 5, 4)
	read("b", 9, 5)
	mustOK(t, h.watermark(12))
	bcast(bcRule{Reset: true})
	read("a", 8, 6)
	bcast(bcRule{Name: "hi", Min: -1})
	read("b", 8, 7)
	mustOK(t, h.endInput())
	var got []string
	for _, r := range h.out.take() {
		got = append(got, fmt.Sprintf("%s (ts %d)", r.Value, r.Timestamp))
	}
	want := []string{
		"a lo 5 #2 (ts 4)",
		"b hi 9 #1 (ts 5)",
		"b lo 9 #1 (ts 5)",
		"timer a@11 rules=2 count=2 (ts 11)",
		fmt.Sprintf("reset a=2 (ts %d)", NoTimestamp),
		fmt.Sprintf("reset b=1 (ts %d)", NoTimestamp),
		"a hi 8 #1 (ts 6)",
		"a lo 8 #1 (ts 6)",
		"b lo 8 #1 (ts 7)",
		"timer a@14 rules=1 count=1 (ts 14)",
		"timer b@15 rules=1 count=1 (ts 15)",
		"timer a@16 rules=1 count=1 (ts 16)",
		"timer b@17 rules=1 count=1 (ts 17)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestHarnessBroadcastStateMisuse(t *testing.T) {
	declared := NewMapDescriptor[string, int]("rules")
	undeclared := NewMapDescriptor[string, int]("other")
	wrongTypes := NewMapDescriptor[int, string]("rules")
	tests := []struct {
		name string
		use  func(ctx *BroadcastContext)
		want string
	}{
		{"undeclared", func(ctx *BroadcastContext) { BroadcastStateOf(ctx, undeclared).Put("x", 1) }, `"other" (pass its descriptor to Broadcast)`},
		{"other types", func(ctx *BroadcastContext) { ReadOnlyBroadcastStateOf(ctx, wrongTypes).Len() }, `"rules" is declared as map[string]int, not as map[int]string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := procTestEnv()
			bs := Broadcast(FromElements(env, 0), declared)
			s := BroadcastProcess(ConnectBroadcast(FromElements(env, ""), bs), BroadcastProcessFuncs[string, int, string]{
				Element:   func(*BroadcastReadOnlyContext, string, Collector[string]) error { return nil },
				Broadcast: func(ctx *BroadcastContext, _ int, _ Collector[string]) error { tc.use(ctx); return nil },
			})
			h := newHarness(t, s, harnessOpts{})
			err := feedTo(h, 1, 1, noTimestamp)
			if !errors.Is(err, ErrUndeclaredBroadcastState) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrUndeclaredBroadcastState containing %q", err, tc.want)
			}
			// The error does not stick to later calls.
			if err := feedTo(h, 0, "fine", noTimestamp); err != nil {
				t.Fatalf("next record: %v", err)
			}
		})
	}
}

func TestBroadcastContextsGrantOnlyTheirAccess(t *testing.T) {
	readOnly := []any{&BroadcastReadOnlyContext{}, &KeyedBroadcastReadOnlyContext[string]{}, &KeyedBroadcastOnTimerContext[string]{}}
	for _, c := range readOnly {
		if _, ok := c.(ReadOnlyBroadcastStateContext); !ok {
			t.Errorf("%T cannot read broadcast state", c)
		}
		if _, ok := c.(BroadcastStateContext); ok {
			t.Errorf("%T can write broadcast state; only the broadcast side may", c)
		}
	}
	for _, c := range []any{&BroadcastContext{}, &KeyedBroadcastContext[string]{}} {
		if _, ok := c.(BroadcastStateContext); !ok {
			t.Errorf("%T cannot write broadcast state", c)
		}
	}
	if _, ok := any(&KeyedBroadcastContext[string]{}).(KeyedStateContext[string]); ok {
		t.Error("the broadcast side of a keyed broadcast function has keyed state access without a current key")
	}
	for _, c := range []any{&KeyedBroadcastReadOnlyContext[string]{}, &KeyedBroadcastOnTimerContext[string]{}, &KeyedContext[string]{}, &OnTimerContext[string]{}} {
		if _, ok := c.(KeyedStateContext[string]); !ok {
			t.Errorf("%T has no keyed state access", c)
		}
	}
	for _, c := range []any{&ProcessContext{}, &BroadcastContext{}, &KeyedBroadcastContext[string]{}, &ProcessJoinContext{}} {
		if _, ok := c.(KeyedStateContext[string]); ok {
			t.Errorf("%T has keyed state access on a non-keyed call", c)
		}
	}
}
