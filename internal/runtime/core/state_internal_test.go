package core

import (
	"errors"
	"slices"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

// keyedContext is an operator Context with keyed state and no task (the
// state handles need none).
func keyedContext(t *testing.T) (*Context, *state.Keyed[string]) {
	t.Helper()
	k, err := state.NewKeyed[string](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	if err != nil {
		t.Fatal(err)
	}
	node := &graph.Node{Name: "op"}
	return &Context{tc: &task.Context{Node: node}, keyed: &keyedRuntime{keyed: k}}, k
}

func TestStateIsScopedByKeyAndNamespace(t *testing.T) {
	ctx, k := keyedContext(t)
	v, err := ctx.ValueState("v")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ctx.ListState("l")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ctx.MapState("m")
	if err != nil {
		t.Fatal(err)
	}
	buf := []byte("one")
	for _, key := range []string{"a", "b"} {
		k.SetCurrentKey(key)
		for _, ns := range []string{VoidNamespace, "w1"} {
			if err := v.Put(ns, buf); err != nil {
				t.Fatal(err)
			}
			if err := l.Add(ns, []byte(key+ns+"1")); err != nil {
				t.Fatal(err)
			}
			if err := l.Add(ns, []byte(key+ns+"2")); err != nil {
				t.Fatal(err)
			}
			if err := m.Put(ns, "x", []byte(key+ns)); err != nil {
				t.Fatal(err)
			}
			if err := m.Put(ns, "y", []byte("y")); err != nil {
				t.Fatal(err)
			}
		}
	}
	buf[0] = 'X' // the state keeps a copy
	k.SetCurrentKey("b")
	if got, ok, _ := v.Get("w1"); !ok || string(got) != "one" {
		t.Fatalf("value %q %v", got, ok)
	}
	got, _ := l.Get("w1")
	if len(got) != 2 || string(got[0]) != "bw11" || string(got[1]) != "bw12" {
		t.Fatalf("list %q", got)
	}
	if x, ok, _ := m.Get("w1", "x"); !ok || string(x) != "bw1" {
		t.Fatalf("map x %q %v", x, ok)
	}
	if err := m.Remove("w1", "x"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	m.Entries("w1", func(k string, _ []byte) error { keys = append(keys, k); return nil })
	if !slices.Equal(keys, []string{"y"}) {
		t.Fatalf("map keys after Remove: %q", keys)
	}
	if err := l.Update("w1", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Get("w1"); got != nil {
		t.Fatalf("list after Update(nil): %q", got)
	}
	if err := v.Delete("w1"); err != nil {
		t.Fatal(err)
	}
	var withValue []string
	v.Keys("w1", func(k string) error { withValue = append(withValue, k); return nil })
	if !slices.Equal(withValue, []string{"a"}) {
		t.Fatalf("keys with a value in w1: %q", withValue)
	}
	// The other key and namespace are untouched.
	k.SetCurrentKey("a")
	if got, _ := l.Get(VoidNamespace); len(got) != 2 || string(got[0]) != "a1" {
		t.Fatalf("list of a: %q", got)
	}
}

func TestStateNeedsAKeyedInput(t *testing.T) {
	ctx := &Context{tc: &task.Context{Node: &graph.Node{Name: "op"}}}
	if _, err := ctx.ValueState("v"); !errors.Is(err, ErrNotKeyed) {
		t.Fatalf("value state: %v", err)
	}
	if err := ctx.RegisterEventTimer(VoidNamespace, 1); !errors.Is(err, ErrNotKeyed) {
		t.Fatalf("timer: %v", err)
	}
	if _, ok := ctx.CurrentKey(); ok {
		t.Fatal("a current key without keyed input")
	}
	if err := ctx.EmitSide("nope", BytesRecord(nil), 0); !errors.Is(err, ErrNoSideOutput) {
		t.Fatalf("undeclared side output: %v", err)
	}
}

// fakeOutput collects what an operator emits.
type fakeOutput struct {
	n   int
	wms []int64
}

func (o *fakeOutput) Collect([]byte, int64) error { o.n++; return nil }
func (o *fakeOutput) EmitWatermark(wm int64) error {
	o.wms = append(o.wms, wm)
	return nil
}

type forward struct{}

func (forward) ProcessElement(ctx *Context, _ int, r Record, ts int64) error { return ctx.Emit(r, ts) }

// TestChainedBytesAllocs: inside a chain a Bytes record passes through an
// untyped operator by function calls, with no allocation, and a keyed
// operator's run of records of one key sets it without allocating.
func TestChainedBytesAllocs(t *testing.T) {
	f := &opFactory{out: Bytes(), ins: []inputSpec{{typ: Bytes()}}, newOp: func() Operator { return forward{} }}
	out := &fakeOutput{}
	tc := &task.Context{Node: &graph.Node{Name: "forward"}}
	_, ins, err := f.Create(tc, task.Output[[]byte](out), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := ins[0].(task.Input[[]byte])
	rec := []byte("record")
	if n := testing.AllocsPerRun(1000, func() { in.ProcessElement(rec, 1) }); n != 0 {
		t.Fatalf("%.1f allocations per record", n)
	}
	if out.n == 0 {
		t.Fatal("nothing emitted")
	}

	_, k := keyedContext(t)
	kr := &keyedRuntime{keyed: k}
	key := []byte("user-1")
	if n := testing.AllocsPerRun(1000, func() {
		kr.keyBuf = BytesKey(BytesRecord(key), kr.keyBuf[:0])
		kr.setKey(kr.keyBuf)
	}); n != 0 {
		t.Fatalf("%.1f allocations per record of the same key", n)
	}
	if got, _ := k.CurrentKey(); got != "user-1" {
		t.Fatalf("current key %q", got)
	}
}

// holdBack holds the watermark 5 behind its input, as a Beam watermark
// hold does.
type holdBack struct{ forward }

func (holdBack) ProcessWatermark(ctx *Context, wm int64) error { return ctx.EmitWatermark(wm - 5) }

func TestWatermarks(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Operator
		want []int64
	}{
		{"forwarded", forward{}, []int64{10, 20}},
		{"held back", holdBack{}, []int64{5, 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &opFactory{out: Bytes(), ins: []inputSpec{{typ: Bytes()}}, newOp: func() Operator { return tc.op }}
			out := &fakeOutput{}
			op, _, err := f.Create(&task.Context{Node: &graph.Node{Name: "wm"}}, task.Output[[]byte](out), nil)
			if err != nil {
				t.Fatal(err)
			}
			a := op.(*opAdapter)
			if a.ctx.CurrentWatermark() != NoWatermark {
				t.Fatalf("watermark before the first: %d", a.ctx.CurrentWatermark())
			}
			for _, wm := range []int64{10, 20} {
				if err := op.ProcessWatermark(wm); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(out.wms, tc.want) || a.ctx.CurrentWatermark() != 20 {
				t.Fatalf("emitted %v (current %d), want %v", out.wms, a.ctx.CurrentWatermark(), tc.want)
			}
		})
	}
}
