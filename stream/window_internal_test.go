package stream

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/task"
)

// capture is an operator output that logs records and watermarks in order.
type capture[T any] struct {
	log  *[]string
	name string
}

func (c capture[T]) Collect(v T, ts int64) error {
	*c.log = append(*c.log, fmt.Sprintf("%s %v@%s", c.name, v, tsString(ts)))
	return nil
}

func (c capture[T]) EmitWatermark(wm int64) error {
	*c.log = append(*c.log, fmt.Sprintf("%s wm %s", c.name, tsString(wm)))
	return nil
}

func tsString(ts int64) string {
	if ts == math.MaxInt64 {
		return "MAX"
	}
	return fmt.Sprint(ts)
}

type windowHarnessTimer struct {
	at        int64
	fn        func(int64) error
	cancelled bool
}

// windowHarness drives one window operator subtask directly: records,
// watermarks and processing time are all scripted.
type windowHarness[T, O any] struct {
	t      *testing.T
	clk    *clock.Manual
	op     task.Operator
	in     task.Input[T]
	log    []string
	timers []*windowHarnessTimer
}

// newWindowHarness builds the window operator of out (the result of a
// window function) with the harness as its task.
func newWindowHarness[T, O any](t *testing.T, clk *clock.Manual, batch bool, out DataStream[O], lateTag string) *windowHarness[T, O] {
	t.Helper()
	if err := out.env.errs; len(err) > 0 {
		t.Fatal(err)
	}
	f, ok := out.node.Impl.(*procFactory[O])
	if !ok {
		t.Fatalf("node %s is not a window operator", out.node.Label())
	}
	h := &windowHarness[T, O]{t: t, clk: clk}
	sides := map[string]any{}
	if lateTag != "" {
		sides[lateTag] = capture[T]{log: &h.log, name: "late"}
	}
	env := &procEnv{Clock: clk, Schedule: h.schedule, Batch: batch, MaxPar: 128, Groups: keygroup.Range{Start: 0, End: 127}}
	op, ins, err := f.Build(env, capture[O]{log: &h.log, name: "out"}, sides)
	if err != nil {
		t.Fatal(err)
	}
	h.op, h.in = op, ins[0].(task.Input[T])
	if err := op.Open(); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *windowHarness[T, O]) schedule(at int64, fn func(int64) error) func() {
	tm := &windowHarnessTimer{at: at, fn: fn}
	h.timers = append(h.timers, tm)
	return func() { tm.cancelled = true }
}

// element processes v (with event timestamp ts) at the clock's time.
func (h *windowHarness[T, O]) element(v T, ts int64) {
	h.t.Helper()
	if err := h.in.ProcessElement(v, ts); err != nil {
		h.t.Fatal(err)
	}
}

func (h *windowHarness[T, O]) watermark(wm int64) {
	h.t.Helper()
	if err := h.op.ProcessWatermark(wm); err != nil {
		h.t.Fatal(err)
	}
}

// advance moves processing time to now and runs the due timers in order,
// as the task does.
func (h *windowHarness[T, O]) advance(now int64) {
	h.t.Helper()
	h.clk.Set(now)
	for {
		var next *windowHarnessTimer
		for _, tm := range h.timers {
			if !tm.cancelled && tm.at <= now && (next == nil || tm.at < next.at) {
				next = tm
			}
		}
		if next == nil {
			return
		}
		next.cancelled = true
		if err := next.fn(now); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *windowHarness[T, O]) finish() {
	h.t.Helper()
	if err := h.op.Finish(); err != nil {
		h.t.Fatal(err)
	}
}

// expect checks what the operator emitted since the last call.
func (h *windowHarness[T, O]) expect(want ...string) {
	h.t.Helper()
	if !slices.Equal(h.log, want) && (len(h.log) != 0 || len(want) != 0) {
		h.t.Fatalf("emitted:\n got  %q\n want %q", h.log, want)
	}
	h.log = h.log[:0]
}

type kv struct {
	K string
	V int
}

func (x kv) String() string { return fmt.Sprintf("%s=%d", x.K, x.V) }

func sumKV(a, b kv) kv { return kv{a.K, a.V + b.V} }

func testEnv() *Environment {
	return NewEnvironment(WithParallelism(1), WithLogger(slog.New(slog.DiscardHandler)))
}

func keyedKV(env *Environment) KeyedStream[kv, string] {
	return KeyBy(FromSlice[kv](env, nil), func(x kv) string { return x.K })
}

func listWindow(key string, ctx WindowContext[string, TimeWindow], elems []kv, out Collector[string]) error {
	var vs []int
	for _, x := range elems {
		vs = append(vs, x.V)
	}
	out.Collect(fmt.Sprintf("%s[%d,%d)%v", key, ctx.Window().Start, ctx.Window().End, vs))
	return nil
}

func TestHarnessProcessingTimeTumbling(t *testing.T) {
	clk := clock.NewManual(0)
	ds := Window(keyedKV(testEnv()), TumblingProcessingTimeWindows(10*time.Millisecond)).Reduce(sumKV)
	h := newWindowHarness[kv](t, clk, false, ds, "")
	h.advance(3)
	h.element(kv{"a", 1}, noTimestamp)
	h.advance(5)
	h.element(kv{"b", 2}, noTimestamp)
	h.advance(8)
	h.element(kv{"a", 4}, noTimestamp)
	h.expect()
	h.advance(9) // the end of [0,10)
	h.expect("out a=5@9", "out b=2@9")
	h.advance(12)
	h.element(kv{"a", 8}, noTimestamp)
	h.advance(18)
	h.expect()
	// Watermarks pass through a processing-time window untouched.
	h.watermark(1000)
	h.expect("out wm 1000")
	h.advance(19)
	h.expect("out a=8@19")
	// STREAMING: pending processing-time windows are dropped at the end.
	h.advance(25)
	h.element(kv{"c", 16}, noTimestamp)
	h.finish()
	h.expect()
}

func TestHarnessProcessingTimeSliding(t *testing.T) {
	clk := clock.NewManual(7)
	ds := Window(keyedKV(testEnv()), SlidingProcessingTimeWindows(10*time.Millisecond, 5*time.Millisecond)).Reduce(sumKV)
	h := newWindowHarness[kv](t, clk, false, ds, "")
	h.element(kv{"a", 1}, noTimestamp) // [5,15) and [0,10)
	h.advance(11)
	h.element(kv{"a", 2}, noTimestamp) // [10,20) and [5,15)
	h.expect("out a=1@9")
	h.advance(14)
	h.expect("out a=3@14")
	h.advance(100)
	h.expect("out a=2@19")
}

func TestHarnessProcessingTimeSessions(t *testing.T) {
	clk := clock.NewManual(0)
	ds := WindowProcess(Window(keyedKV(testEnv()), ProcessingTimeSessionWindows(10*time.Millisecond)), ProcessWindowFunc(listWindow))
	h := newWindowHarness[kv](t, clk, false, ds, "")
	h.element(kv{"a", 1}, noTimestamp) // [0,10)
	h.advance(5)
	h.element(kv{"a", 2}, noTimestamp) // [5,15): merges to [0,15)
	h.advance(9)
	h.expect() // the merge moved the session's end
	h.advance(14)
	h.expect("out a[0,15)[1 2]@14")

	h.advance(30)
	h.element(kv{"a", 4}, noTimestamp) // [30,40)
	// Processing time reaches 40 while the task is busy: the timer of
	// [30,40) is due but has not run when the next record comes. It fires
	// first, so the record opens a new session instead of extending the
	// one that has ended.
	clk.Set(40)
	h.element(kv{"a", 8}, noTimestamp) // [40,50)
	h.expect("out a[30,40)[4]@39")
	h.advance(49)
	h.expect("out a[40,50)[8]@49")
}

func TestHarnessBatchFiresProcessingTimeAtEnd(t *testing.T) {
	clk := clock.NewManual(100)
	ds := WindowProcess(Window(keyedKV(testEnv()), ProcessingTimeSessionWindows(time.Second)), ProcessWindowFunc(listWindow))
	h := newWindowHarness[kv](t, clk, true, ds, "")
	h.element(kv{"a", 1}, noTimestamp)
	h.element(kv{"b", 2}, noTimestamp)
	h.element(kv{"a", 4}, noTimestamp)
	h.expect()
	h.finish()
	h.expect("out a[100,1100)[1 4]@1099", "out b[100,1100)[2]@1099")
}

func TestHarnessEventTimeFiresBeforeForwardingWatermark(t *testing.T) {
	clk := clock.NewManual(0)
	late := NewOutputTag[kv]("late")
	ds := Window(keyedKV(testEnv()), TumblingEventTimeWindows(10*time.Millisecond)).
		AllowedLateness(5 * time.Millisecond).SideOutputLateData(late).Reduce(sumKV)
	h := newWindowHarness[kv](t, clk, false, ds, late.ID())
	h.element(kv{"a", 1}, 1)
	h.element(kv{"b", 2}, 12)
	h.element(kv{"a", 4}, 9)
	h.watermark(9)
	h.expect("out a=5@9", "out wm 9")
	h.element(kv{"a", 8}, 2) // late, within the lateness: fires again
	h.expect("out a=13@9")
	h.watermark(14) // [0,10) is dropped
	h.expect("out wm 14")
	h.element(kv{"a", 16}, 3)  // too late
	h.element(kv{"b", 32}, 10) // [10,20) is on time
	h.expect("late a=16@3")
	h.watermark(math.MaxInt64)
	h.expect("out b=34@19", "out wm MAX")
}

func TestHarnessGlobalWindowsNeverFireByDefault(t *testing.T) {
	clk := clock.NewManual(0)
	ds := Window(keyedKV(testEnv()), GlobalWindows()).Reduce(sumKV)
	h := newWindowHarness[kv](t, clk, true, ds, "")
	for i := 0; i < 5; i++ {
		h.element(kv{"a", i}, int64(i))
	}
	h.watermark(math.MaxInt64)
	h.finish()
	h.expect("out wm MAX")
}

// The per-record path of incremental windows allocates nothing once the
// state of the (key, window) entries exists.
func TestWindowPerRecordPathDoesNotAllocate(t *testing.T) {
	type rec struct {
		Key int64
		Ts  int64
	}
	keyed := func() KeyedStream[rec, int64] {
		return KeyBy(FromSlice[rec](testEnv(), nil), func(r rec) int64 { return r.Key })
	}
	count := AggregateFuncs[rec, int64, int64]{
		AddFn:    func(_ rec, n int64) int64 { return n + 1 },
		ResultFn: func(n int64) int64 { return n },
		MergeFn:  func(a, b int64) int64 { return a + b },
	}
	input := func(t *testing.T, ds DataStream[int64]) task.Input[rec] {
		return newWindowHarness[rec](t, clock.NewManual(0), false, ds, "").in
	}
	tests := []struct {
		name  string
		build func(t *testing.T) task.Input[rec]
	}{
		{"tumbling aggregate", func(t *testing.T) task.Input[rec] {
			return input(t, WindowAggregate(Window(keyed(), TumblingEventTimeWindows(time.Hour)), count))
		}},
		{"sliding aggregate", func(t *testing.T) task.Input[rec] {
			return input(t, WindowAggregate(Window(keyed(), SlidingEventTimeWindows(time.Hour, 10*time.Minute)), count))
		}},
		{"tumbling reduce with lateness", func(t *testing.T) task.Input[rec] {
			ds := Window(keyed(), TumblingEventTimeWindows(time.Hour)).AllowedLateness(time.Minute).
				Reduce(func(a, b rec) rec { return rec{a.Key, a.Ts + b.Ts} })
			return newWindowHarness[rec](t, clock.NewManual(0), false, ds, "").in
		}},
		{"count window", func(t *testing.T) task.Input[rec] {
			return input(t, WindowAggregate(CountWindow(keyed(), 1_000_000), count))
		}},
		{"purging count trigger", func(t *testing.T) task.Input[rec] {
			return input(t, WindowAggregate(Window(keyed(), TumblingEventTimeWindows(time.Hour)).Trigger(PurgingTrigger(CountTrigger(1_000_000))), count))
		}},
		{"session aggregate", func(t *testing.T) task.Input[rec] {
			return input(t, WindowAggregate(Window(keyed(), EventTimeSessionWindows(time.Hour)), count))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.build(t)
			for k := int64(0); k < 100; k++ {
				if err := in.ProcessElement(rec{k, 1000 + k}, 1000+k); err != nil {
					t.Fatal(err)
				}
			}
			i := int64(0)
			allocs := testing.AllocsPerRun(1000, func() {
				i++
				if err := in.ProcessElement(rec{i % 100, 1000 + i%1000}, 1000+i%1000); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%.2f allocations per record", allocs)
			}
		})
	}
}
