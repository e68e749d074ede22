package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/stream"
)

func TestCountWindows(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 2), e("b", 10, 3), e("a", 3, 4), e("a", 4, 5), e("b", 20, 6), e("a", 5, 7), e("a", 6, 8), e("b", 30, 9), e("a", 7, 10)}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			tumbling := stream.Collect(asSum(stream.CountWindow(keyed, 3).Reduce(sumByKey)))
			sliding := stream.Collect(asSum(stream.CountWindowSliding(keyed, 3, 2).Reduce(sumByKey)))
			execute(t, env)
			isA := func(s sumOut) bool { return s.Key == "a" }
			isB := func(s sumOut) bool { return s.Key == "b" }
			// The incomplete last window (a=7) is never emitted; results
			// carry the global window's timestamp, the end of time.
			assertEqual(t, "tumbling a", keyRecs(tumbling, isA), []string{"a=6@MAX", "a=15@MAX"})
			assertEqual(t, "tumbling b", keyRecs(tumbling, isB), []string{"b=60@MAX"})
			// Every 2 records, the sum of the last 3.
			assertEqual(t, "sliding a", keyRecs(sliding, isA), []string{"a=3@MAX", "a=9@MAX", "a=15@MAX"})
			assertEqual(t, "sliding b", keyRecs(sliding, isB), []string{"b=30@MAX"})
		})
	}
}

func TestGlobalWindowsWithEndOfStream(t *testing.T) {
	data := []ev{e("a", 1, 1), e("b", 2, 2), e("a", 4, 3), wm(100), e("a", 8, 4)}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			res := stream.Collect(asSum(stream.Window(keyed, stream.GlobalWindowsWithEndOfStream()).Reduce(sumByKey)))
			execute(t, env)
			// Watermarks before the end do not fire it, nor are records late.
			assertEqual(t, "sums", sortedRecs(res), []string{"a=13@MAX", "b=2@MAX"})
		})
	}
}

func TestWindowAll(t *testing.T) {
	data := []ev{e("a", 1, 1), e("b", 2, 2), e("c", 4, 12), e("a", 8, 14), e("b", 16, 25)}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			src := events(env, data...)
			sums := stream.WindowAll(src, stream.TumblingEventTimeWindows(10*time.Millisecond)).Reduce(sumByKey)
			counts := stream.CountWindowAll(src, 2).Reduce(sumByKey)
			res := stream.Collect(stream.Map(sums, func(v ev) int { return v.Val }))
			cnt := stream.Collect(stream.Map(counts, func(v ev) int { return v.Val }))
			jr, err := env.Execute(t.Name())
			if err != nil {
				t.Fatal(err)
			}
			assertEqual(t, "all-window sums", sortedRecs(res), []string{"12@19", "16@29", "3@9"})
			// (The map after the one-subtask window runs in parallel: order is lost.)
			assertEqual(t, "count-window sums", sortedRecs(cnt), []string{"12@MAX", "3@MAX"})
			n := 0
			for _, s := range jr.Subtasks {
				if strings.Contains(s.Vertex, "AllWindow(TumblingEventTimeWindows(10), EventTimeTrigger, Reduce)") {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("the all-window operator ran in %d subtasks, want 1", n)
			}
		})
	}
	t.Run("parallelism cannot be raised", func(t *testing.T) {
		env := newEnv(2, stream.Streaming)
		stream.Discard(stream.WindowAll(events(env, data...), stream.TumblingEventTimeWindows(10*time.Millisecond)).Reduce(sumByKey).SetParallelism(2))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), "parallelism 2 is above its max parallelism 1") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestIncrementalAggregationWithProcessFunction(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 2), e("b", 10, 5), e("a", 4, 15), e("b", 20, 9)}
	count := stream.AggregateFuncs[ev, int, int]{
		AddFn:    func(_ ev, n int) int { return n + 1 },
		ResultFn: func(n int) int { return n },
		MergeFn:  func(a, b int) int { return a + b },
	}
	labelCount := stream.ProcessWindowFunc(func(key string, ctx stream.WindowContext[string, stream.TimeWindow], counts []int, out stream.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s%v count=%d elems=%d", key, ctx.Window(), counts[0], len(counts)))
		return nil
	})
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			tumbling := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond))
			reduced := stream.Collect(stream.WindowReduceWith(tumbling, sumByKey, stream.ProcessWindowFunc(describeWindow)))
			aggregated := stream.Collect(stream.WindowAggregateWith(tumbling, count, labelCount))
			sessions := stream.Window(keyed, stream.EventTimeSessionWindows(5*time.Millisecond))
			sessionSums := stream.Collect(stream.WindowReduceWith(sessions, sumByKey, stream.ProcessWindowFunc(describeWindow)))
			execute(t, env)
			// The process function sees one element: the pre-aggregated value.
			assertEqual(t, "reduce+process", sortedRecs(reduced), []string{"a[0,10)sum=3,n=1@9", "a[10,20)sum=4,n=1@19", "b[0,10)sum=30,n=1@9"})
			assertEqual(t, "aggregate+process", sortedRecs(aggregated), []string{
				"aTimeWindow{start=0, end=10} count=2 elems=1@9",
				"aTimeWindow{start=10, end=20} count=1 elems=1@19",
				"bTimeWindow{start=0, end=10} count=2 elems=1@9",
			})
			// b@5 [5,10) and b@9 [9,14) merge; reduce state merges too.
			assertEqual(t, "session reduce+process", sortedRecs(sessionSums), []string{"a[1,7)sum=3,n=1@6", "a[15,20)sum=4,n=1@19", "b[5,14)sum=30,n=1@13"})
		})
	}
}

func TestTriggerOverride(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 2), e("a", 4, 3), e("a", 8, 4), e("a", 16, 5), e("b", 100, 6)}
	tests := []struct {
		name    string
		trigger stream.Trigger
		want    []string
	}{
		// Fires every 2 records and keeps the contents; the last record of
		// a never fires (the window is dropped at its end).
		{"count", stream.CountTrigger(2), []string{"a=3@99", "a=15@99"}},
		{"purging count", stream.PurgingTrigger(stream.CountTrigger(2)), []string{"a=3@99", "a=12@99"}},
		// Purging the event-time trigger: one firing, then nothing left.
		{"purging event time", stream.PurgingTrigger(stream.EventTimeTrigger()), []string{"a=31@99", "b=100@99"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(2, stream.Streaming)
			keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
			res := stream.Collect(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(100*time.Millisecond)).Trigger(tt.trigger).Reduce(sumByKey)))
			execute(t, env)
			got := keyRecs(res, func(s sumOut) bool { return s.Key == "a" })
			if tt.name == "purging event time" {
				got = sortedRecs(res)
			}
			assertEqual(t, "firings", got, tt.want)
		})
	}
}

// everyOther is a user trigger with trigger state: it fires on every
// second record of a window, and at the window's end.
type everyOther struct{}

var seenDesc = stream.NewValueDescriptor[bool]("seen")

func (everyOther) OnElement(_ stream.Timestamp, ctx stream.TriggerContext) stream.TriggerResult {
	ctx.RegisterEventTimeTimer(ctx.WindowMaxTimestamp())
	seen := stream.TriggerValue(ctx, seenDesc)
	if s, _ := seen.Value(); s {
		seen.Clear()
		return stream.TriggerFire
	}
	seen.Update(true)
	return stream.TriggerContinue
}

func (everyOther) OnEventTime(t stream.Timestamp, ctx stream.TriggerContext) stream.TriggerResult {
	if w, ok := stream.TriggerWindow[stream.TimeWindow](ctx); ok && t == w.End-1 {
		return stream.TriggerFire
	}
	return stream.TriggerContinue
}
func (everyOther) OnProcessingTime(stream.Timestamp, stream.TriggerContext) stream.TriggerResult {
	return stream.TriggerContinue
}
func (everyOther) CanMerge() bool                { return false }
func (everyOther) OnMerge(stream.TriggerContext) {}
func (everyOther) Clear(ctx stream.TriggerContext) {
	ctx.DeleteEventTimeTimer(ctx.WindowMaxTimestamp())
	stream.TriggerValue(ctx, seenDesc).Clear()
}

func TestCustomTriggerWithState(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 2), e("a", 4, 3), e("b", 100, 6), e("a", 8, 14)}
	env := newEnv(2, stream.Streaming)
	keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
	res := stream.Collect(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond)).Trigger(everyOther{}).Reduce(sumByKey)))
	execute(t, env)
	assertEqual(t, "a", keyRecs(res, func(s sumOut) bool { return s.Key == "a" }), []string{"a=3@9", "a=7@9", "a=8@19"})
	assertEqual(t, "b", keyRecs(res, func(s sumOut) bool { return s.Key == "b" }), []string{"b=100@9"})
}

func TestEvictors(t *testing.T) {
	data := []ev{e("a", 1, 1), e("a", 2, 5), e("a", 4, 20), e("a", 8, 25), e("b", 16, 50)}
	t.Run("time evictor before reduce", func(t *testing.T) {
		env := newEnv(2, stream.Streaming)
		keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
		res := stream.Collect(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(100*time.Millisecond)).Evictor(stream.TimeEvictor(10 * time.Millisecond)).Reduce(sumByKey)))
		execute(t, env)
		// Newest a is at 25: only records after 15 stay.
		assertEqual(t, "sums", sortedRecs(res), []string{"a=12@99", "b=16@99"})
	})
	t.Run("count evictor before process", func(t *testing.T) {
		env := newEnv(2, stream.Batch)
		keyed := stream.KeyBy(events(env, data...), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.TumblingEventTimeWindows(100*time.Millisecond)).Evictor(stream.CountEvictor(3))
		res := stream.Collect(stream.WindowProcess(ws, stream.ProcessWindowFunc(describeWindow)))
		execute(t, env)
		assertEqual(t, "windows", sortedRecs(res), []string{"a[0,100)sum=14,n=3@99", "b[0,100)sum=16,n=1@99"})
	})
	t.Run("count evictor after aggregate", func(t *testing.T) {
		// With lateness the window fires again: evicting after the first
		// firing leaves the newest element for the second.
		late := []ev{e("a", 1, 1), e("a", 2, 5), wm(99), e("a", 4, 20)}
		env := newEnv(1, stream.Streaming)
		keyed := stream.KeyBy(events(env, late...), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.TumblingEventTimeWindows(100*time.Millisecond)).AllowedLateness(time.Second).Evictor(stream.CountEvictor(1, true))
		sum := stream.AggregateFuncs[ev, int, int]{AddFn: func(v ev, s int) int { return s + v.Val }, ResultFn: func(s int) int { return s }}
		res := stream.Collect(stream.WindowAggregate(ws, sum))
		execute(t, env)
		assertEqual(t, "firings", keyRecs(res, func(int) bool { return true }), []string{"3@99", "6@99"})
	})
}

// item is the second input type of the join tests.
type item struct {
	User string
	ID   string
	Ts   int64
}

func items(env *stream.Environment, data ...item) stream.DataStream[item] {
	wmk := stream.ForMonotonousTimestamps[item]().WithTimestampAssigner(func(v item, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(v.Ts) })
	return stream.DataGenWithWatermarks(env, int64(len(data)), 0, func(i int64) item { return data[i] }, wmk).SetParallelism(1)
}

func TestWindowJoin(t *testing.T) {
	// Orders (Val is the order number) and payments, tumbling 10ms.
	orders := []ev{e("u1", 1, 1), e("u1", 2, 3), e("u2", 3, 5), e("u1", 4, 12)}
	payments := []item{{"u1", "p1", 2}, {"u2", "p2", 8}, {"u3", "p3", 9}, {"u1", "p4", 15}, {"u1", "p5", 16}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			env := newEnv(m.par, m.mode)
			a, b := events(env, orders...), items(env, payments...)
			tumbling := stream.TumblingEventTimeWindows(10 * time.Millisecond)
			joined := stream.JoinApply(stream.Join(a, b, func(o ev) string { return o.Key }, func(p item) string { return p.User }, tumbling),
				func(o ev, p item) string { return fmt.Sprintf("o%d-%s", o.Val, p.ID) })
			cogrouped := stream.CoGroupApply(stream.CoGroup(a, b, func(o ev) string { return o.Key }, func(p item) string { return p.User }, tumbling),
				func(os []ev, ps []item, out stream.Collector[string]) {
					var on, pn []string
					for _, o := range os {
						on = append(on, fmt.Sprintf("o%d", o.Val))
					}
					for _, p := range ps {
						pn = append(pn, p.ID)
					}
					// The two inputs' records interleave in any order.
					slices.Sort(on)
					slices.Sort(pn)
					out.Collect(fmt.Sprintf("%v|%v", on, pn))
				})
			jres, cres := stream.Collect(joined), stream.Collect(cogrouped)
			execute(t, env)
			assertEqual(t, "join", sortedRecs(jres), []string{"o1-p1@9", "o2-p1@9", "o3-p2@9", "o4-p4@19", "o4-p5@19"})
			assertEqual(t, "co-group", sortedRecs(cres), []string{"[]|[p3]@9", "[o1 o2]|[p1]@9", "[o3]|[p2]@9", "[o4]|[p4 p5]@19"})
		})
	}
}

// TestPerWindowStateNotAllowedInSessions: asking for per-window state of a
// merging window fails the job, as in Flink, even when the function ignores
// the error the state handle returns.
func TestPerWindowStateNotAllowedInSessions(t *testing.T) {
	d := stream.NewValueDescriptor[int]("n")
	for _, tc := range []struct {
		name   string
		handle func(err error) error // what the function does with the handle's error
	}{
		{"ignored", func(error) error { return nil }},
		{"returned", func(err error) error { return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(1, stream.Streaming)
			keyed := stream.KeyBy(events(env, e("a", 1, 1)), func(v ev) string { return v.Key })
			ws := stream.Window(keyed, stream.EventTimeSessionWindows(time.Second))
			var handleErr error // one subtask; read after Execute
			stream.Discard(stream.WindowProcess(ws, stream.ProcessWindowFunc(func(_ string, ctx stream.WindowContext[string, stream.TimeWindow], _ []ev, out stream.Collector[string]) error {
				handleErr = stream.Value(ctx.WindowState(), d).Update(1)
				out.Collect("fired")
				return tc.handle(handleErr)
			})))
			_, err := env.Execute(t.Name())
			if !errors.Is(err, stream.ErrPerWindowStateMerging) {
				t.Fatalf("job ended with %v, want %v", err, stream.ErrPerWindowStateMerging)
			}
			if !strings.Contains(err.Error(), "stream: per-window state is not allowed when using merging (session) windows") {
				t.Fatalf("error %q does not say why", err)
			}
			if !errors.Is(handleErr, stream.ErrPerWindowStateMerging) {
				t.Fatalf("the state handle returned %v", handleErr)
			}
		})
	}
}

func TestProcessingTimeWindowsAtEndOfInput(t *testing.T) {
	data := []ev{e("a", 1, 0), e("b", 2, 0), e("a", 4, 0)}
	run := func(t *testing.T, mode stream.RuntimeMode) []string {
		env := newEnv(2, mode, stream.WithClock(clock.NewManual(1005)))
		keyed := stream.KeyBy(stream.FromSlice(env, data), func(v ev) string { return v.Key })
		ws := stream.Window(keyed, stream.TumblingProcessingTimeWindows(10*time.Millisecond))
		res := stream.Collect(stream.WindowProcess(ws, stream.ProcessWindowFunc(describeWindow)))
		execute(t, env)
		return sortedRecs(res)
	}
	t.Run("batch fires at the end", func(t *testing.T) {
		assertEqual(t, "windows", run(t, stream.Batch), []string{"a[1000,1010)sum=5,n=2@1009", "b[1000,1010)sum=2,n=1@1009"})
	})
	t.Run("streaming drops pending timers", func(t *testing.T) {
		assertEqual(t, "windows", run(t, stream.Streaming), nil)
	})
}

// liveSink records what it gets at once, for jobs that do not end.
type liveSink[T any] struct {
	mu   sync.Mutex
	recs []stream.Record[T]
}

func newLiveSink[T any]() *liveSink[T] { return &liveSink[T]{} }

func (s *liveSink[T]) CreateWriter(stream.SinkContext) (stream.SinkWriter[T], error) { return s, nil }
func (s *liveSink[T]) Flush(context.Context, bool) error                             { return nil }
func (s *liveSink[T]) Close() error                                                  { return nil }
func (s *liveSink[T]) Write(_ context.Context, v T, ts stream.Timestamp) error {
	s.mu.Lock()
	s.recs = append(s.recs, stream.Record[T]{Value: v, Timestamp: ts})
	s.mu.Unlock()
	return nil
}

func (s *liveSink[T]) records() []stream.Record[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stream.Record[T](nil), s.recs...)
}

// quietSplitSource is an unbounded source with two splits: "busy" has a
// record every 100ms of processing time (stamped with that time), "quiet"
// has one record at time 0 and then nothing.
type quietSplitSource struct{}

type namedSplit string

func (s namedSplit) SplitID() string { return string(s) }

func (quietSplitSource) Boundedness() stream.Boundedness { return stream.Unbounded }
func (quietSplitSource) CreateEnumerator(ctx stream.SplitEnumeratorContext[namedSplit]) (stream.SplitEnumerator[namedSplit], error) {
	return &onceEnumerator{ctx: ctx}, nil
}
func (quietSplitSource) CreateReader(ctx stream.SourceReaderContext) (stream.SourceReader[ev, namedSplit], error) {
	return &quietSplitReader{ctx: ctx}, nil
}

// onceEnumerator gives both splits to the first reader that asks.
type onceEnumerator struct {
	ctx  stream.SplitEnumeratorContext[namedSplit]
	done bool
}

func (e *onceEnumerator) Start() error                          { return nil }
func (e *onceEnumerator) AddReader(int) error                   { return nil }
func (e *onceEnumerator) AddSplitsBack([]namedSplit, int) error { return nil }
func (e *onceEnumerator) Close() error                          { return nil }
func (e *onceEnumerator) HandleSplitRequest(subtask int) error {
	if !e.done {
		e.done = true
		e.ctx.AssignSplits(subtask, []namedSplit{"busy", "quiet"})
	}
	return nil
}

type quietSplitReader struct {
	ctx    stream.SourceReaderContext
	splits []namedSplit
	quiet  bool  // the quiet split's record was emitted
	next   int64 // time of the busy split's next record
	wait   <-chan struct{}
	stop   func()
}

func (r *quietSplitReader) Start(context.Context) error { r.ctx.SendSplitRequest(); return nil }
func (r *quietSplitReader) AddSplits(s []namedSplit) error {
	r.splits = append(r.splits, s...)
	return nil
}
func (r *quietSplitReader) NotifyNoMoreSplits()                       {}
func (r *quietSplitReader) Available() <-chan struct{}                { return r.wait }
func (r *quietSplitReader) SnapshotState(int64) ([]namedSplit, error) { return r.splits, nil }
func (r *quietSplitReader) Close() error {
	if r.stop != nil {
		r.stop()
	}
	return nil
}

func (r *quietSplitReader) PollNext(_ context.Context, out stream.ReaderOutput[ev]) (stream.InputStatus, error) {
	if len(r.splits) < 2 {
		r.wait = nil
		return stream.NothingAvailable, nil
	}
	if !r.quiet {
		out.ForSplit("quiet").Collect(e("quiet", 1, 0), stream.NoTimestamp)
		r.quiet = true
	}
	busy := out.ForSplit("busy")
	now := r.ctx.Clock().NowMillis()
	for ; r.next <= now; r.next += 100 {
		busy.Collect(e("busy", 1, r.next), stream.NoTimestamp)
	}
	if r.stop != nil {
		r.stop()
	}
	r.wait, r.stop = r.ctx.Clock().AfterMillis(r.next)
	return stream.NothingAvailable, nil
}

func TestIdleSplitDoesNotHoldBackWindows(t *testing.T) {
	clk := clock.NewManual(0)
	env := newEnv(2, stream.Streaming, stream.WithClock(clk), stream.WithAutoWatermarkInterval(100*time.Millisecond))
	strategy := stream.ForMonotonousTimestamps[ev]().
		WithTimestampAssigner(func(v ev, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(v.Ts) }).
		WithIdleness(500 * time.Millisecond)
	src := stream.FromSource[ev, namedSplit](env, quietSplitSource{}, strategy, "two splits").SetParallelism(1)
	keyed := stream.KeyBy(src, func(v ev) string { return v.Key })
	sink := newLiveSink[sumOut]()
	stream.SinkTo(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(time.Second)).Reduce(sumByKey)), sink)

	stepUntilFirstWindow(t, env, clk, sink)
}

// stepUntilFirstWindow runs the job of env, moving clk one watermark period
// (100 ms) at a time, each once the source has taken the one before, until
// the window [0,1000) of busy and quiet has fired in sink; then it cancels
// the job. The window can only fire once the quiet split is idle: its
// watermark would hold the source's at -1 for ever.
func stepUntilFirstWindow(t *testing.T, env *stream.Environment, clk *clock.Manual, sink *liveSink[sumOut]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteContext(ctx, t.Name())
		done <- err
	}()
	first := func() []string {
		var got []string
		for _, r := range sink.records() {
			if r.Timestamp == 999 {
				got = append(got, rec(r))
			}
		}
		return sorted(got)
	}
	testwait.EventuallyNil(t, 30*time.Second, "window [0,1000)", func() error {
		if len(first()) >= 2 {
			return nil
		}
		select {
		case err := <-done:
			t.Fatalf("job ended: %v", err)
		default:
		}
		// One watermark period at a time, each once the source has taken
		// the one before (it arms its next timers then).
		clk.Advance(100)
		armed, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		if err := clk.BlockUntilArmedAt(armed, clk.NowMillis()+100); err != nil {
			t.Fatalf("the source did not take the period at %d: %v", clk.NowMillis(), err)
		}
		return fmt.Errorf("window [0,1000) did not fire; clock at %d, results %v", clk.NowMillis(), sink.records())
	})
	assertEqual(t, "first window", first(), []string{"busy=10@999", "quiet=1@999"})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("job ended with %v, want context.Canceled", err)
	}
}

// TestProcessWindowFunctionErrorFailsTheJob: an error from Process or
// Clear fails the task, as one from a keyed process function does.
func TestProcessWindowFunctionErrorFailsTheJob(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		fn   stream.ProcessWindowFuncs[ev, string, string, stream.TimeWindow]
	}{
		{"Process", stream.ProcessWindowFuncs[ev, string, string, stream.TimeWindow]{
			ProcessFn: func(string, stream.WindowContext[string, stream.TimeWindow], []ev, stream.Collector[string]) error {
				return boom
			},
		}},
		{"Clear", stream.ProcessWindowFuncs[ev, string, string, stream.TimeWindow]{
			ProcessFn: func(string, stream.WindowContext[string, stream.TimeWindow], []ev, stream.Collector[string]) error {
				return nil
			},
			ClearFn: func(stream.WindowContext[string, stream.TimeWindow]) error { return boom },
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(1, stream.Streaming)
			keyed := stream.KeyBy(events(env, e("a", 1, 1), wm(100)), func(v ev) string { return v.Key })
			ws := stream.Window(keyed, stream.TumblingEventTimeWindows(10*time.Millisecond))
			stream.Discard(stream.WindowProcess(ws, tc.fn))
			if _, err := env.Execute(t.Name()); !errors.Is(err, boom) {
				t.Fatalf("job ended with %v, want %v", err, boom)
			}
		})
	}
}
