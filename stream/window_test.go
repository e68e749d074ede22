package stream_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/stream"
)

// ev is a test record. A record with WM set is a watermark marker: the
// source emits watermark Ts right after it, and events() filters it out,
// so tests say exactly where watermarks fall between records.
type ev struct {
	Key string
	Val int
	Ts  int64
	WM  bool
}

func e(key string, val int, ts int64) ev { return ev{Key: key, Val: val, Ts: ts} }
func wm(ts int64) ev                     { return ev{WM: true, Ts: ts} }

// punctuated emits the watermark of every marker record, at once.
type punctuated struct{}

func (punctuated) OnEvent(v ev, ts stream.Timestamp, out stream.WatermarkOutput) {
	if v.WM {
		out.EmitWatermark(ts)
	}
}
func (punctuated) OnPeriodicEmit(stream.WatermarkOutput) {}

var punctuatedStrategy = stream.ForGenerator(func() stream.WatermarkGenerator[ev] { return punctuated{} }).
	WithTimestampAssigner(func(v ev, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(v.Ts) })

// events is a single-subtask source of data with event timestamps and the
// watermarks of its markers.
func events(env *stream.Environment, data ...ev) stream.DataStream[ev] {
	src := stream.DataGenWithWatermarks(env, int64(len(data)), 0, func(i int64) ev { return data[i] }, punctuatedStrategy).
		SetParallelism(1).Name("events")
	return stream.Filter(src, func(v ev) bool { return !v.WM }).SetParallelism(1).Name("drop markers")
}

func newEnv(par int, mode stream.RuntimeMode, opts ...stream.Option) *stream.Environment {
	opts = append([]stream.Option{stream.WithParallelism(par), stream.WithRuntimeMode(mode), stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	return stream.NewEnvironment(opts...)
}

func execute(t *testing.T, env *stream.Environment) {
	t.Helper()
	if _, err := env.Execute(t.Name()); err != nil {
		t.Fatal(err)
	}
}

// rec renders a record with its timestamp, for order-free comparisons.
func rec[T any](r stream.Record[T]) string {
	ts := fmt.Sprint(r.Timestamp)
	if r.Timestamp == math.MaxInt64 {
		ts = "MAX"
	}
	return fmt.Sprintf("%v@%s", r.Value, ts)
}

func sortedRecs[T any](c *stream.Collected[T]) []string {
	var out []string
	for _, r := range c.Records() {
		out = append(out, rec(r))
	}
	slices.Sort(out)
	return out
}

// keyRecs are the records of one key in arrival order (a key's results
// come from one subtask, in order).
func keyRecs[T any](c *stream.Collected[T], match func(T) bool) []string {
	var out []string
	for _, r := range c.Records() {
		if match(r.Value) {
			out = append(out, rec(r))
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func assertEqual(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

type sumOut struct {
	Key string
	Sum int
}

func (s sumOut) String() string { return s.Key + "=" + fmt.Sprint(s.Sum) }

func sumByKey(a, b ev) ev { return ev{Key: a.Key, Val: a.Val + b.Val} }

func asSum(s stream.DataStream[ev]) stream.DataStream[sumOut] {
	return stream.Map(s, func(v ev) sumOut { return sumOut{v.Key, v.Val} })
}

// winRes describes one firing of a window.
type winRes struct {
	Key        string
	Start, End int64
	Sum, N     int
}

func (r winRes) String() string {
	return fmt.Sprintf("%s[%d,%d)sum=%d,n=%d", r.Key, r.Start, r.End, r.Sum, r.N)
}

// describeWindow is a process function listing a time window's contents.
func describeWindow(key string, ctx stream.WindowContext[string, stream.TimeWindow], elems []ev, out stream.Collector[winRes]) error {
	r := winRes{Key: key, Start: int64(ctx.Window().Start), End: int64(ctx.Window().End), N: len(elems)}
	for _, v := range elems {
		r.Sum += v.Val
	}
	out.Collect(r)
	return nil
}

var modes = []struct {
	name string
	par  int
	mode stream.RuntimeMode
}{
	{"p1", 1, stream.Streaming},
	{"p4", 4, stream.Streaming},
	{"batch-p3", 3, stream.Batch},
}

func TestTumblingEventTimeWindows(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 5), e("b", 10, 3), e("a", 4, 12), e("b", 20, 15), e("a", 100, -3), e("a", 1000, -15), e("b", 40, 29)}
	tests := []struct {
		name   string
		offset []time.Duration
		want   []string
	}{
		{"no offset", nil, []string{
			"a=1000@-11", "a=100@-1", "a=3@9", "a=4@19",
			"b=10@9", "b=20@19", "b=40@29",
		}},
		{"offset 3ms", []time.Duration{3 * time.Millisecond}, []string{
			"a=1000@-8", "a=101@2", "a=6@12",
			"b=10@12", "b=20@22", "b=40@32",
		}},
		{"offset -7ms", []time.Duration{-7 * time.Millisecond}, []string{
			"a=1000@-8", "a=101@2", "a=6@12",
			"b=10@12", "b=20@22", "b=40@32",
		}},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				env := newEnv(m.par, m.mode)
				keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
				sums := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond, tt.offset...)).Reduce(sumByKey)
				res := stream.Collect(asSum(sums))
				execute(t, env)
				assertEqual(t, "window sums", sortedRecs(res), sorted(tt.want))
			})
		}
	}
}

func TestSlidingEventTimeWindows(t *testing.T) {
	type acc struct {
		Key string
		N   int
	}
	count := stream.AggregateFuncs[ev, acc, string]{
		AddFn:    func(v ev, a acc) acc { return acc{v.Key, a.N + 1} },
		ResultFn: func(a acc) string { return fmt.Sprintf("%s:%d", a.Key, a.N) },
	}
	data := []ev{e("a", 1, 0), e("a", 1, 4), e("a", 1, 7), e("a", 1, 12), e("b", 1, 5)}
	want := []string{"a:2@4", "a:3@9", "a:2@14", "a:1@19", "b:1@9", "b:1@14"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			ws := stream.Window(keyed, stream.SlidingEventTimeWindows(10*time.Millisecond, 5*time.Millisecond))
			res := stream.Collect(stream.WindowAggregate(ws, count))
			execute(t, env)
			assertEqual(t, "sliding counts", sortedRecs(res), sorted(want))
		})
	}
}

func TestSessionWindowsMerge(t *testing.T) {
	// a: [0,10) and [5,15) merge to [0,15); [30,40) and [20,30) touch and
	// merge to [20,40); the watermark passes 10 (nothing is due); then a
	// record at 14 opens [14,24), which bridges both sessions: [0,40).
	data := []ev{
		e("a", 1, 0), e("a", 2, 5), e("a", 4, 30), e("a", 8, 20), e("b", 100, 100),
		wm(10),
		e("a", 16, 14), e("b", 200, 111),
		wm(200),
		e("a", 32, 300),
	}
	want := []string{"a[0,40)sum=31,n=5@39", "a[300,310)sum=32,n=1@309", "b[100,110)sum=100,n=1@109", "b[111,121)sum=200,n=1@120"}
	t.Run("process", func(t *testing.T) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				env := newEnv(m.par, m.mode)
				keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
				ws := stream.Window(keyed, stream.EventTimeSessionWindows(10*time.Millisecond))
				res := stream.Collect(stream.WindowProcess(ws, stream.ProcessWindowFunc(describeWindow)))
				execute(t, env)
				assertEqual(t, "sessions", sortedRecs(res), want)
			})
		}
	})
	t.Run("aggregate merges accumulators", func(t *testing.T) {
		type acc struct{ Sum, N int }
		merges := 0
		agg := stream.AggregateFuncs[ev, acc, string]{
			AddFn:    func(v ev, a acc) acc { return acc{a.Sum + v.Val, a.N + 1} },
			ResultFn: func(a acc) string { return fmt.Sprintf("sum=%d,n=%d", a.Sum, a.N) },
			MergeFn:  func(a, b acc) acc { merges++; return acc{a.Sum + b.Sum, a.N + b.N} },
		}
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.EventTimeSessionWindows(10*time.Millisecond))
		res := stream.Collect(stream.WindowAggregate(ws, agg))
		execute(t, env)
		assertEqual(t, "sessions", sortedRecs(res), sorted([]string{"sum=31,n=5@39", "sum=32,n=1@309", "sum=100,n=1@109", "sum=200,n=1@120"}))
		// Growing a session keeps its state window: only the bridge merges
		// two accumulators ([20,40)'s into [0,15)'s).
		if merges != 1 {
			t.Fatalf("Merge called %d times, want 1", merges)
		}
	})
	t.Run("aggregate without merge is rejected", func(t *testing.T) {
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.EventTimeSessionWindows(10*time.Millisecond))
		stream.Discard(stream.WindowAggregate(ws, stream.AggregateFuncs[ev, int, int]{
			AddFn:    func(v ev, a int) int { return a + v.Val },
			ResultFn: func(a int) int { return a },
		}))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), "EventTimeSessionWindows(10) merges windows, so AggregateFuncs needs MergeFn") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestDynamicGapSessions(t *testing.T) {
	// The gap is the record's value in ms. a: [0,5) and [7,12) stay apart
	// until [4,7) touches both. b: [0,1) and [1,2) touch; [3,4) is alone.
	data := []ev{e("a", 5, 0), e("a", 5, 7), e("b", 1, 0), e("b", 1, 1), e("b", 1, 3), e("a", 3, 4)}
	want := []string{"a[0,12)sum=13,n=3@11", "b[0,2)sum=2,n=2@1", "b[3,4)sum=1,n=1@3"}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			gap := func(v ev) time.Duration { return time.Duration(v.Val) * time.Millisecond }
			ws := stream.Window(keyed, stream.EventTimeSessionWindowsWithDynamicGap(gap))
			res := stream.Collect(stream.WindowProcess(ws, stream.ProcessWindowFunc(describeWindow)))
			execute(t, env)
			assertEqual(t, "sessions", sortedRecs(res), want)
		})
	}
	t.Run("gap function of another type", func(t *testing.T) {
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.EventTimeSessionWindowsWithDynamicGap(func(int) time.Duration { return time.Second }))
		stream.Discard(ws.Reduce(sumByKey))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), "records of type int, but the stream carries stream_test.ev") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("non-positive gap fails the job", func(t *testing.T) {
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, e("a", 0, 5)), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.EventTimeSessionWindowsWithDynamicGap(func(ev) time.Duration { return 0 }))
		stream.Discard(ws.Reduce(sumByKey))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), "dynamic session gap must be at least one millisecond") || !strings.Contains(err.Error(), `operator "Window(DynamicEventTimeSessionWindows`) {
			t.Fatalf("got %v", err)
		}
	})
}

// lateData: the watermark passes [0,10) before a record for it arrives.
var lateData = []ev{e("a", 1, 1), e("a", 2, 2), e("b", 7, 3), wm(10), e("a", 4, 5), e("a", 8, 12), e("b", 16, 10)}

func TestLateRecordsDropped(t *testing.T) {
	env := newEnv(2, stream.Streaming)
	keyed := stream.KeyBy(events(env, lateData...), func(v ev) string { return v.Key })
	res := stream.Collect(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).Reduce(sumByKey)))
	execute(t, env)
	// a@5 is late: [0,10) fired at watermark 10 and is gone. b@10 is not.
	assertEqual(t, "sums", sortedRecs(res), []string{"a=3@9", "a=8@19", "b=16@19", "b=7@9"})
}

func TestLateRecordsToSideOutput(t *testing.T) {
	lateTag := stream.NewOutputTag[ev]("late")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, lateData...), func(v ev) string { return v.Key })
			sums := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).
				SideOutputLateData(lateTag).
				Reduce(sumByKey)
			res := stream.Collect(asSum(sums))
			late := stream.Collect(stream.SideOutput(sums, lateTag))
			execute(t, env)
			if m.mode == stream.Batch {
				// BATCH mode has no late data: one watermark at the end.
				assertEqual(t, "sums", sortedRecs(res), []string{"a=7@9", "a=8@19", "b=16@19", "b=7@9"})
				assertEqual(t, "late", sortedRecs(late), nil)
				return
			}
			assertEqual(t, "sums", sortedRecs(res), []string{"a=3@9", "a=8@19", "b=16@19", "b=7@9"})
			// The late record keeps its own timestamp.
			assertEqual(t, "late", sortedRecs(late), []string{"{a 4 5 false}@5"})
		})
	}
	t.Run("tag read with another type", func(t *testing.T) {
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, lateData...), func(v ev) string { return v.Key })
		sums := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).SideOutputLateData(lateTag).Reduce(sumByKey)
		stream.Discard(stream.SideOutput(sums, stream.NewOutputTag[string]("late")))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), `side output "late" carries stream_test.ev, not string`) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestAllowedLatenessRefiresWindows(t *testing.T) {
	// [0,10) fires on time at watermark 9, again for each late record
	// within 5ms of lateness (watermarks 9 and 12), and is dropped at
	// watermark 14: a@7 is then too late and goes to the side output.
	data := []ev{
		e("a", 1, 1), e("a", 2, 3), wm(9),
		e("a", 4, 4), wm(12),
		e("a", 8, 6), wm(14),
		e("a", 16, 7), e("a", 32, 11),
	}
	lateTag := stream.NewOutputTag[ev]("too-late")
	firings := stream.NewValueDescriptor[int]("firings")
	total := stream.NewValueDescriptor[int]("total firings")
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprint("p", par), func(t *testing.T) {
			env := newEnv(par, stream.Streaming)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			ws := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).
				AllowedLateness(5 * time.Millisecond).
				SideOutputLateData(lateTag)
			out := stream.WindowProcess(ws, stream.ProcessWindowFuncs[ev, string, string, stream.TimeWindow]{
				ProcessFn: func(key string, ctx stream.WindowContext[string, stream.TimeWindow], elems []ev, out stream.Collector[string]) error {
					// Per-window state counts this window's firings, global
					// state all firings of the key.
					n, _ := stream.Value(ctx.WindowState(), firings).Value()
					stream.Value(ctx.WindowState(), firings).Update(n + 1)
					g, _ := stream.Value(ctx.GlobalState(), total).Value()
					stream.Value(ctx.GlobalState(), total).Update(g + 1)
					sum := 0
					for _, v := range elems {
						sum += v.Val
					}
					out.Collect(fmt.Sprintf("%s%v sum=%d firing=%d of %d wm=%d", key, ctx.Window(), sum, n+1, g+1, ctx.CurrentWatermark()))
					return nil
				},
				ClearFn: func(ctx stream.WindowContext[string, stream.TimeWindow]) error {
					return stream.Value(ctx.WindowState(), firings).Clear()
				},
			})
			res := stream.Collect(out)
			late := stream.Collect(stream.SideOutput(out, lateTag))
			execute(t, env)
			got := keyRecs(res, func(string) bool { return true })
			assertEqual(t, "firings", got, []string{
				"aTimeWindow{start=0, end=10} sum=3 firing=1 of 1 wm=9@9",
				"aTimeWindow{start=0, end=10} sum=7 firing=2 of 2 wm=9@9",
				"aTimeWindow{start=0, end=10} sum=15 firing=3 of 3 wm=12@9",
				"aTimeWindow{start=10, end=20} sum=32 firing=1 of 4 wm=9223372036854775807@19",
			})
			assertEqual(t, "too late", sortedRecs(late), []string{"{a 16 7 false}@7"})
		})
	}
}

func TestEventTimeWindowNeedsWatermarks(t *testing.T) {
	env := newEnv(2, stream.Streaming)
	src := stream.FromElements(env, e("a", 1, 1), e("b", 2, 2))
	keyed := stream.KeyBy(src, func(v ev) string { return v.Key })
	stream.Discard(stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).Reduce(sumByKey))
	_, err := env.Execute("x")
	if !errors.Is(err, graph.ErrInvalidGraph) ||
		!strings.Contains(err.Error(), `operator "Window(TumblingEventTimeWindows(10), EventTimeTrigger, Reduce)" (id 1): uses event time but no watermark strategy is set upstream`) {
		t.Fatalf("got %v", err)
	}
}

func TestEventTimeWindowNeedsTimestamps(t *testing.T) {
	// A watermark strategy without a timestamp assigner, on a source that
	// attaches none: records have no event timestamp.
	env := newEnv(1, stream.Streaming)
	src := stream.DataGenWithWatermarks(env, 3, 0, func(i int64) int64 { return i }, stream.ForMonotonousTimestamps[int64]())
	keyed := stream.KeyBy(src, func(v int64) int64 { return v % 2 })
	stream.Discard(stream.Window(keyed, stream.TumblingEventTimeWindows(time.Second)).Reduce(func(a, b int64) int64 { return a + b }))
	_, err := env.Execute("x")
	if !errors.Is(err, stream.ErrNoTimestamp) || !strings.Contains(err.Error(), "TumblingEventTimeWindows(1000) assigns windows by event time") {
		t.Fatalf("got %v", err)
	}
}

func TestInvalidWindowParameters(t *testing.T) {
	tests := []struct {
		name  string
		build func(ks stream.KeyedStream[ev, string])
		want  string
	}{
		{"tumbling offset", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.TumblingEventTimeWindows(time.Second, 2*time.Second)).Reduce(sumByKey))
		}, "TumblingEventTimeWindows(size 1s, offset 2s): the parameters must satisfy 0 < size (in whole milliseconds) and abs(offset) < size"},
		{"tumbling zero", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.TumblingProcessingTimeWindows(time.Microsecond)).Reduce(sumByKey))
		}, "TumblingProcessingTimeWindows(size 1µs, offset 0s)"},
		{"sliding", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.SlidingEventTimeWindows(time.Second, 0)).Reduce(sumByKey))
		}, "SlidingEventTimeWindows(size 1s, slide 0s, offset 0s): the parameters must satisfy abs(offset) < slide and size > 0"},
		{"session", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.EventTimeSessionWindows(-time.Second)).Reduce(sumByKey))
		}, "EventTimeSessionWindows(gap -1s): the gap must be at least one millisecond"},
		{"lateness", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.TumblingEventTimeWindows(time.Second)).AllowedLateness(-time.Second).Reduce(sumByKey))
		}, "the allowed lateness -1s cannot be negative"},
		{"count", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.CountWindow(ks, 0).Reduce(sumByKey))
		}, "CountTrigger(0): the count must be at least 1"},
		{"trigger that cannot merge", func(ks stream.KeyedStream[ev, string]) {
			stream.Discard(stream.Window(ks, stream.EventTimeSessionWindows(time.Second)).Trigger(noMerge{}).Reduce(sumByKey))
		}, "does not support merging, so it cannot be used with the merging window assigner EventTimeSessionWindows(1000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(1, stream.Streaming)
			tt.build(stream.KeyBy(events(env, e("a", 1, 1)), func(v ev) string { return v.Key }))
			_, err := env.Execute("x")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `window after operator "drop markers"`) {
				t.Fatalf("got %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// noMerge is a trigger that does not support merging.
type noMerge struct{ stream.Trigger }

func (noMerge) CanMerge() bool { return false }
