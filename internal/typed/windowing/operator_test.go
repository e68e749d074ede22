package windowing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// The operator driven without the typed user API: a front end of its own
// (plain int64 timestamps, its own window type, assigner and trigger), as
// the Beam runner or SQL could be.

// win is a window [Start, End) of the test's front end.
type win struct{ Start, End int64 }

func (w win) MaxTimestamp() int64 { return w.End - 1 }

type rec struct {
	K string
	V int
}

// tumbling assigns a record to the window of size containing ts.
type tumbling struct{ size int64 }

func (a tumbling) Assign(_ rec, ts int64, dst []win) ([]win, error) {
	start := ts - ts%a.size
	return append(dst, win{start, start + a.size}), nil
}

// sessions opens a window [ts, ts+gap) per record; windows that touch merge.
type sessions struct{ gap int64 }

func (a sessions) Assign(_ rec, ts int64, dst []win) ([]win, error) {
	return append(dst, win{ts, ts + a.gap}), nil
}

func mergeWins(ws []win, merge func(members []win, result win)) {
	slices.SortFunc(ws, func(a, b win) int { return int(a.Start - b.Start) })
	for i := 0; i < len(ws); {
		cover, j := ws[i], i+1
		for j < len(ws) && ws[j].Start <= cover.End {
			cover.End = max(cover.End, ws[j].End)
			j++
		}
		if j-i > 1 {
			merge(ws[i:j], cover)
		}
		i = j
	}
}

// atEnd fires a window when the watermark passes its end.
type atEnd struct{}

type ctx = TriggerCtx[string, win, int64]

func (atEnd) OnElement(_ rec, _ int64, c *ctx) TriggerResult {
	if c.WindowMaxTimestamp() <= c.CurrentWatermark() {
		return TriggerFire
	}
	c.RegisterEventTimeTimer(c.WindowMaxTimestamp())
	return TriggerContinue
}

func (atEnd) OnEventTime(t int64, c *ctx) TriggerResult {
	if t == c.WindowMaxTimestamp() {
		return TriggerFire
	}
	return TriggerContinue
}

func (atEnd) OnProcessingTime(int64, *ctx) TriggerResult { return TriggerContinue }

func (atEnd) OnMerge(c *ctx) {
	if m := c.WindowMaxTimestamp(); m > c.CurrentWatermark() {
		c.RegisterEventTimeTimer(m)
	}
}

func (atEnd) Clear(c *ctx) { c.DeleteEventTimeTimer(c.WindowMaxTimestamp()) }

// everyN fires and purges a window every n records, counting in trigger
// state (merged by adding).
type everyN struct{ n int64 }

func (t everyN) OnElement(_ rec, _ int64, c *ctx) TriggerResult {
	st := c.CountStore()
	cell, _ := st.Get()
	if cell.N++; cell.N >= t.n {
		st.Delete()
		return TriggerFireAndPurge
	}
	st.Put(cell)
	return TriggerContinue
}

func (everyN) OnEventTime(int64, *ctx) TriggerResult      { return TriggerContinue }
func (everyN) OnProcessingTime(int64, *ctx) TriggerResult { return TriggerContinue }
func (everyN) OnMerge(c *ctx)                             {}
func (everyN) Clear(c *ctx)                               { c.CountStore().Delete() }

// keepLast evicts all but the last n elements before the function runs.
type keepLast struct{ n int }

func (e keepLast) EvictBefore(el *Elements[rec], _ *EvictorCtx[string, win, int64]) {
	for i := 0; i < el.Len()-e.n; i++ {
		el.Evict(i)
	}
}

func (keepLast) EvictAfter(*Elements[rec], *EvictorCtx[string, win, int64]) {}

// logOut is an operator output that logs what it receives.
type logOut[T any] struct {
	log  *[]string
	name string
}

func (o logOut[T]) Collect(v T, ts int64) error {
	*o.log = append(*o.log, fmt.Sprintf("%s %v@%d", o.name, v, ts))
	return nil
}

func (o logOut[T]) EmitWatermark(wm int64) error {
	if wm == math.MaxInt64 {
		*o.log = append(*o.log, o.name+" wm MAX")
		return nil
	}
	*o.log = append(*o.log, fmt.Sprintf("%s wm %d", o.name, wm))
	return nil
}

// step is one input of a test: a record (at ts) or a watermark (wm set).
type step struct {
	v  rec
	ts int64
	wm bool
}

func r(k string, v int, ts int64) step { return step{v: rec{k, v}, ts: ts} }
func wm(t int64) step                  { return step{ts: t, wm: true} }

func sum(a, b rec) rec { return rec{a.K, a.V + b.V} }

var errMerging = errors.New("per-window state of merging windows")

func TestWindowOperator(t *testing.T) {
	spec := func(mergeWs func([]win, func([]win, win)), lateness int64, lateTag string) *Spec[rec, string, win, int64] {
		return &Spec[rec, string, win, int64]{Key: func(x rec) string { return x.K }, MergeWindows: mergeWs,
			EventTime: true, Lateness: lateness, LateTag: lateTag, PerWindowMergingErr: errMerging}
	}
	fns := func(a Assigner[rec, win], tr Trigger[rec, string, win, int64], ev Evictor[rec, string, win, int64]) func(*typed.Env) Fns[rec, string, win, int64] {
		return func(*typed.Env) Fns[rec, string, win, int64] {
			return Fns[rec, string, win, int64]{Assigner: a, Trigger: tr, Evictor: ev}
		}
	}
	list := func(windowState bool) func() ProcessFns[rec, string, string, win, int64] {
		return func() ProcessFns[rec, string, string, win, int64] {
			return ProcessFns[rec, string, string, win, int64]{
				Process: func(key string, c *Ctx[string, win, int64], elems []rec, out *typed.Collector[string]) error {
					if windowState {
						_ = c.WindowState()
					}
					vs := make([]int, 0, len(elems))
					for _, e := range elems {
						vs = append(vs, e.V)
					}
					out.Collect(fmt.Sprintf("%s[%d,%d)%v", key, c.Window().Start, c.Window().End, vs))
					return nil
				},
			}
		}
	}
	tests := []struct {
		name    string
		factory *typed.ProcFactory[string]
		lateTag string
		steps   []step
		want    []string
		wantErr error
	}{
		{
			name: "tumbling process fires at the watermark, late records to the side output",
			factory: New(spec(nil, 0, "late"), fns(tumbling{10}, atEnd{}, nil),
				Process(list(false))),
			lateTag: "late",
			steps:   []step{r("a", 1, 1), r("b", 2, 12), r("a", 4, 9), wm(9), r("a", 8, 3), wm(math.MaxInt64)},
			want:    []string{"out a[0,10)[1 4]@9", "out wm 9", "late {a 8}@3", "out b[10,20)[2]@19", "out wm MAX"},
		},
		{
			name: "sessions merge; the merged session fires once (the built-in event-time trigger)",
			factory: New(spec(mergeWins, 0, ""), fns(sessions{5}, EventTimeTrigger[rec, string, win, int64](), nil),
				Process(list(false))),
			steps: []step{r("a", 1, 0), r("a", 2, 4), r("a", 4, 20), wm(8), wm(math.MaxInt64)},
			want:  []string{"out a[0,9)[1 2]@8", "out wm 8", "out a[20,25)[4]@24", "out wm MAX"},
		},
		{
			name: "per-window state of merging windows fails the call",
			factory: New(spec(mergeWins, 0, ""), fns(sessions{5}, atEnd{}, nil),
				Process(list(true))),
			steps:   []step{r("a", 1, 0), wm(math.MaxInt64)},
			wantErr: errMerging,
		},
		{
			name: "count trigger state fires and purges every two records",
			factory: New(spec(nil, 0, ""), fns(tumbling{100}, everyN{2}, nil),
				Process(list(false))),
			steps: []step{r("a", 1, 1), r("b", 2, 2), r("a", 4, 3), r("a", 8, 4), r("b", 16, 5), r("a", 32, 6)},
			want:  []string{"out a[0,100)[1 4]@99", "out b[0,100)[2 16]@99", "out a[0,100)[8 32]@99"},
		},
		{
			name: "an evictor keeps the last two elements",
			factory: New(spec(nil, 0, ""), fns(tumbling{10}, atEnd{}, keepLast{2}),
				Process(list(false))),
			steps: []step{r("a", 1, 1), r("a", 2, 2), r("a", 4, 3), wm(9)},
			want:  []string{"out a[0,10)[2 4]@9", "out wm 9"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			sides := map[string]any{}
			if tt.lateTag != "" {
				sides[tt.lateTag] = logOut[rec]{log: &log, name: "late"}
			}
			env := &typed.Env{Clock: clock.NewManual(0), MaxPar: 128, Groups: keygroup.Range{Start: 0, End: 127},
				Schedule: func(int64, func(int64) error) func() { return func() {} }}
			op, ins, err := tt.factory.Build(env, logOut[string]{log: &log, name: "out"}, sides)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Open(); err != nil {
				t.Fatal(err)
			}
			in := ins[0].(task.Input[rec])
			for _, s := range tt.steps {
				if s.wm {
					err = op.ProcessWatermark(s.ts)
				} else {
					err = in.ProcessElement(s.v, s.ts)
				}
				if err != nil {
					break
				}
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, tt.want) {
				t.Fatalf("emitted:\n got  %q\n want %q", log, tt.want)
			}
		})
	}
}
