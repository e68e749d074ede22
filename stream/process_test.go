package stream_test

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/stream"
)

// newEnv is an environment with a manual clock that never moves (so only
// event time and the end of input drive timers) and discarded logs.
func newProcTestEnv(par int, mode stream.RuntimeMode) *stream.Environment {
	return stream.NewEnvironment(stream.WithParallelism(par), stream.WithRuntimeMode(mode),
		stream.WithClock(clock.NewManual(1_000_000)), stream.WithLogger(slog.New(slog.DiscardHandler)))
}

// everyRecord is a punctuated watermark generator: after each record it
// declares event time up to just before the record's timestamp complete.
type everyRecord[T any] struct{}

func (everyRecord[T]) OnEvent(_ T, ts stream.Timestamp, out stream.WatermarkOutput) {
	out.EmitWatermark(ts - 1)
}
func (everyRecord[T]) OnPeriodicEmit(stream.WatermarkOutput) {}

// eventTimeSource reads data in order on one subtask and stamps it with
// ts, emitting a watermark after every record. One source subtask and
// in-order timestamps make event-time results exact at any parallelism
// downstream: every subtask sees each watermark after the records before it.
func eventTimeSource[T any](env *stream.Environment, name string, data []T, ts func(T) int64) stream.DataStream[T] {
	src := stream.FromSlice(env, data).SetParallelism(1).Name(name)
	strategy := stream.ForGenerator(func() stream.WatermarkGenerator[T] { return everyRecord[T]{} }).
		WithTimestampAssigner(func(v T, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(ts(v)) })
	return stream.AssignTimestampsAndWatermarks(src, strategy).SetParallelism(1)
}

func executeOK(t *testing.T, env *stream.Environment) {
	t.Helper()
	if _, err := env.Execute(t.Name()); err != nil {
		t.Fatal(err)
	}
}

func sortedRecords[T any](recs []stream.Record[T], less func(a, b T) int) []stream.Record[T] {
	slices.SortStableFunc(recs, func(a, b stream.Record[T]) int {
		if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
			return c
		}
		return less(a.Value, b.Value)
	})
	return recs
}

type tx struct {
	Account int
	Amount  float64
	TS      int64 // ms
}

type alert struct {
	Account int
	Amount  float64
}

// fraudDetector is Flink's fraud-detection walkthrough in event time: a
// transaction under 1.00 followed within a minute by one over 500.00 on the
// same account raises an alert. The flag and the cleanup timer's time are
// keyed state; the timer clears the flag a minute after the small one.
func fraudDetector() stream.KeyedProcessFunction[int, tx, alert] {
	flag := stream.NewValueDescriptor[bool]("flag")
	timerAt := stream.NewValueDescriptor[int64]("timer")
	cleanUp := func(ctx *stream.KeyedContext[int]) error {
		at, err := stream.Value(ctx, timerAt).Value()
		if err != nil {
			return err
		}
		ctx.TimerService().DeleteEventTimeTimer(stream.Timestamp(at))
		if err := stream.Value(ctx, timerAt).Clear(); err != nil {
			return err
		}
		return stream.Value(ctx, flag).Clear()
	}
	return stream.KeyedProcessFuncs[int, tx, alert]{
		Element: func(ctx *stream.KeyedContext[int], t tx, out stream.Collector[alert]) error {
			small, err := stream.Value(ctx, flag).Value()
			if err != nil {
				return err
			}
			if small {
				if t.Amount > 500 {
					out.Collect(alert{ctx.CurrentKey(), t.Amount})
				}
				if err := cleanUp(ctx); err != nil {
					return err
				}
			}
			if t.Amount < 1 {
				if err := stream.Value(ctx, flag).Update(true); err != nil {
					return err
				}
				at := ctx.Timestamp() + stream.Timestamp(time.Minute.Milliseconds())
				ctx.TimerService().RegisterEventTimeTimer(at)
				return stream.Value(ctx, timerAt).Update(int64(at))
			}
			return nil
		},
		Timer: func(ctx *stream.OnTimerContext[int], _ stream.Timestamp, _ stream.Collector[alert]) error {
			if err := stream.Value(ctx, timerAt).Clear(); err != nil {
				return err
			}
			return stream.Value(ctx, flag).Clear()
		},
	}
}

var transactions = func() []tx {
	s := int64(1000)
	return []tx{
		{1, 0.5, 0},        // small: account 1 flagged until 60 s
		{2, 0.3, 10 * s},   // small
		{1, 600, 30 * s},   // large within the minute: ALERT
		{3, 0.2, 40 * s},   // small, flag until 100 s
		{2, 50, 50 * s},    // neither: account 2's flag cleared
		{4, 0.1, 55 * s},   // small, flag until 115 s
		{9, 5, 120 * s},    // another account moves event time past 115 s
		{3, 700, 121 * s},  // large, but account 3's flag expired
		{4, 800, 130 * s},  // likewise
		{5, 0.5, 200 * s},  // small, flag until 260 s
		{5, 0.6, 250 * s},  // small again: the flag restarts, until 310 s
		{5, 1000, 305 * s}, // ALERT
		{6, 0.5, 400 * s},  // small
		{6, 501, 460 * s},  // exactly a minute later, before the timer: ALERT
		{7, 0.5, 500 * s},  // small
		{9, 5, 561 * s},    // event time passes 560 s
		{7, 900, 562 * s},  // too late
		{8, 2000, 600 * s}, // large without a small one
	}
}()

func runFraud(t *testing.T, par int, mode stream.RuntimeMode) []stream.Record[alert] {
	env := newProcTestEnv(par, mode)
	txs := eventTimeSource(env, "transactions", transactions, func(t tx) int64 { return t.TS })
	alerts := stream.KeyedProcess(stream.KeyBy(txs, func(t tx) int { return t.Account }), fraudDetector()).Name("fraud-detector")
	res := stream.Collect(alerts)
	executeOK(t, env)
	return sortedRecords(res.Records(), func(a, b alert) int { return cmp.Compare(a.Account, b.Account) })
}

func TestFraudDetectionKeyedProcessFunction(t *testing.T) {
	want := []stream.Record[alert]{
		{Value: alert{1, 600}, Timestamp: 30_000},
		{Value: alert{5, 1000}, Timestamp: 305_000},
		{Value: alert{6, 501}, Timestamp: 460_000},
	}
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			if got := runFraud(t, par, stream.Streaming); !slices.Equal(got, want) {
				t.Fatalf("alerts %v\nwant   %v", got, want)
			}
		})
	}
	// In BATCH mode event time does not progress until the end of the
	// input (as in Flink), so no flag expires: every small-then-large pair
	// alerts.
	t.Run("batch", func(t *testing.T) {
		want := []stream.Record[alert]{
			{Value: alert{1, 600}, Timestamp: 30_000},
			{Value: alert{3, 700}, Timestamp: 121_000},
			{Value: alert{4, 800}, Timestamp: 130_000},
			{Value: alert{5, 1000}, Timestamp: 305_000},
			{Value: alert{6, 501}, Timestamp: 460_000},
			{Value: alert{7, 900}, Timestamp: 562_000},
		}
		if got := runFraud(t, 2, stream.Batch); !slices.Equal(got, want) {
			t.Fatalf("alerts %v\nwant   %v", got, want)
		}
	})
}

func TestProcessWithSideOutputsAndOpen(t *testing.T) {
	odd := stream.NewOutputTag[string]("odd")
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			env := newProcTestEnv(par, stream.Streaming)
			var mu sync.Mutex
			subtasks := map[int]bool{}
			nums := stream.DataGen(env, 1000, 0, func(i int64) int { return int(i) })
			evens := stream.Process(nums, stream.ProcessFuncs[int, int]{
				Open: func(rc stream.RuntimeContext) error {
					mu.Lock()
					defer mu.Unlock()
					if rc.Parallelism() != par || rc.OperatorName() != "split" || rc.JobName() != t.Name() {
						return fmt.Errorf("runtime context %d/%d %q %q", rc.Subtask(), rc.Parallelism(), rc.OperatorName(), rc.JobName())
					}
					subtasks[rc.Subtask()] = true
					return nil
				},
				Element: func(ctx *stream.ProcessContext, v int, out stream.Collector[int]) error {
					if v%2 == 1 {
						stream.Output(ctx, odd, fmt.Sprint("odd ", v))
						return nil
					}
					out.Collect(v * 10)
					return nil
				},
			}).Name("split")
			mainRes := stream.Collect(evens)
			sideRes := stream.Collect(stream.SideOutput(evens, odd))
			executeOK(t, env)
			gotMain, gotSide := mainRes.Values(), sideRes.Values()
			slices.Sort(gotMain)
			slices.Sort(gotSide)
			var wantMain []int
			var wantSide []string
			for i := 0; i < 1000; i++ {
				if i%2 == 0 {
					wantMain = append(wantMain, i*10)
				} else {
					wantSide = append(wantSide, fmt.Sprint("odd ", i))
				}
			}
			slices.Sort(wantSide)
			if !slices.Equal(gotMain, wantMain) || !slices.Equal(gotSide, wantSide) {
				t.Fatalf("main %d records, side %d records; want %d and %d", len(gotMain), len(gotSide), len(wantMain), len(wantSide))
			}
			if len(subtasks) != par {
				t.Fatalf("Open ran on subtasks %v, want all %d", subtasks, par)
			}
		})
	}
}

type visit struct {
	User string
	Page string
	TS   int64
}

type summary struct {
	User     string
	Visits   int
	Pages    string
	Distinct int
	Longest  int
	MeanLen  float64
}

func TestKeyedProcessStateKindsInAJob(t *testing.T) {
	count := stream.NewValueDescriptor[int]("count")
	pages := stream.NewListDescriptor[string]("pages")
	distinct := stream.NewMapDescriptor[string, bool]("distinct")
	longest := stream.NewReducingDescriptor("longest", func(a, b int) int { return max(a, b) })
	meanLen := stream.NewAggregatingDescriptor("mean", stream.AggregateFunction[int, [2]int, float64](stream.AggregateFuncs[int, [2]int, float64]{
		AddFn:    func(v int, acc [2]int) [2]int { return [2]int{acc[0] + v, acc[1] + 1} },
		ResultFn: func(acc [2]int) float64 { return float64(acc[0]) / float64(acc[1]) },
	}))
	fn := stream.KeyedProcessFuncs[string, visit, summary]{
		Element: func(ctx *stream.KeyedContext[string], v visit, _ stream.Collector[summary]) error {
			n, err := stream.Value(ctx, count).Value()
			if err != nil {
				return err
			}
			errs := []error{
				stream.Value(ctx, count).Update(n + 1),
				stream.List(ctx, pages).Add(v.Page),
				stream.MapOf(ctx, distinct).Put(v.Page, true),
				stream.Reducing(ctx, longest).Add(len(v.Page)),
				stream.Aggregating(ctx, meanLen).Add(len(v.Page)),
			}
			// Summarise when the input ends (the final watermark fires it).
			ctx.TimerService().RegisterEventTimeTimer(stream.MaxWatermark)
			return errors.Join(errs...)
		},
		Timer: func(ctx *stream.OnTimerContext[string], _ stream.Timestamp, out stream.Collector[summary]) error {
			n, err1 := stream.Value(ctx, count).Value()
			l, err2 := stream.List(ctx, pages).Get()
			m, err3 := stream.MapOf(ctx, distinct).Entries()
			lg, _, err4 := stream.Reducing(ctx, longest).Get()
			mean, _, err5 := stream.Aggregating(ctx, meanLen).Get()
			out.Collect(summary{ctx.CurrentKey(), n, strings.Join(l, ","), len(m), lg, mean})
			return errors.Join(err1, err2, err3, err4, err5)
		},
	}
	visits := []visit{
		{"ann", "home", 1}, {"cy", "a", 2}, {"ann", "cart", 3}, {"bob", "home", 4}, {"cy", "bb", 5},
		{"ann", "home", 6}, {"cy", "ccc", 7}, {"ann", "checkout", 8}, {"cy", "bb", 9},
	}
	run := func(par int, mode stream.RuntimeMode) []summary {
		env := newProcTestEnv(par, mode)
		src := stream.FromSlice(env, visits).SetParallelism(1)
		res := stream.Collect(stream.KeyedProcess(stream.KeyBy(src, func(v visit) string { return v.User }), fn))
		executeOK(t, env)
		got := res.Values()
		slices.SortFunc(got, func(a, b summary) int { return cmp.Compare(a.User, b.User) })
		return got
	}
	want := []summary{
		{"ann", 4, "home,cart,home,checkout", 3, 8, 5},
		{"bob", 1, "home", 1, 4, 4},
		{"cy", 4, "a,bb,ccc,bb", 3, 3, 2},
	}
	for _, tc := range []struct {
		par  int
		mode stream.RuntimeMode
	}{{1, stream.Streaming}, {4, stream.Streaming}, {3, stream.Batch}} {
		t.Run(fmt.Sprintf("p%d %s", tc.par, tc.mode), func(t *testing.T) {
			if got := run(tc.par, tc.mode); !slices.Equal(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestProcessingTimeTimersAtTheEndOfInput(t *testing.T) {
	// The clock never moves, so processing-time timers an hour ahead only
	// fire in BATCH mode, at the end of the input; STREAMING drops them
	// when the input ends, as Flink does.
	fn := stream.KeyedProcessFuncs[string, string, string]{
		Element: func(ctx *stream.KeyedContext[string], v string, _ stream.Collector[string]) error {
			ts := ctx.TimerService()
			ts.RegisterProcessingTimeTimer(ts.CurrentProcessingTime().Add(time.Hour))
			return nil
		},
		Timer: func(ctx *stream.OnTimerContext[string], at stream.Timestamp, out stream.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s %v %d", ctx.CurrentKey(), ctx.TimeDomain(), at))
			return nil
		},
	}
	run := func(mode stream.RuntimeMode, par int) []string {
		env := newProcTestEnv(par, mode)
		src := stream.FromElements(env, "a", "b", "a", "c", "b", "a")
		res := stream.Collect(stream.KeyedProcess(stream.KeyBy(src, func(s string) string { return s }), fn))
		executeOK(t, env)
		got := res.Values()
		slices.Sort(got)
		return got
	}
	want := []string{"a PROCESSING_TIME 4600000", "b PROCESSING_TIME 4600000", "c PROCESSING_TIME 4600000"}
	for _, par := range []int{1, 4} {
		if got := run(stream.Batch, par); !slices.Equal(got, want) {
			t.Errorf("BATCH p%d: %q, want %q", par, got, want)
		}
		if got := run(stream.Streaming, par); len(got) != 0 {
			t.Errorf("STREAMING p%d fired pending processing-time timers at the end of input: %q", par, got)
		}
	}
}

func TestProcessFunctionBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(env *stream.Environment)
		want  string
	}{
		{"nil process function", func(env *stream.Environment) {
			stream.Discard(stream.Process[int, int](stream.FromElements(env, 1), nil))
		}, "Process: the function is nil"},
		{"missing element callback", func(env *stream.Environment) {
			ks := stream.KeyBy(stream.FromElements(env, 1), func(i int) int { return i })
			stream.Discard(stream.KeyedProcess(ks, stream.KeyedProcessFuncs[int, int, int]{}))
		}, "KeyedProcess: KeyedProcessFuncs.Element is nil"},
		{"interval bounds reversed", func(env *stream.Environment) {
			ks := stream.KeyBy(stream.FromElements(env, 1), func(i int) int { return i })
			j := stream.IntervalJoin(ks, ks).Between(time.Second, -time.Second)
			stream.Discard(stream.IntervalJoinProcess(j, stream.ProcessJoinFunc[int, int, int](func(*stream.ProcessJoinContext, int, int, stream.Collector[int]) error { return nil })))
		}, "interval join: the lower bound 1s is above the upper bound -1s"},
		{"duplicate broadcast state", func(env *stream.Environment) {
			stream.Broadcast(stream.FromElements(env, 1), stream.NewMapDescriptor[string, int]("r"), stream.NewMapDescriptor[int, int]("r"))
		}, `broadcast state "r" is declared twice`},
		{"broadcast state with TTL", func(env *stream.Environment) {
			stream.Broadcast(stream.FromElements(env, 1), stream.NewMapDescriptor[string, int]("r").WithTTL(stream.StateTTL{TTL: time.Second}))
		}, `broadcast state "r" has a TTL`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newProcTestEnv(1, stream.Streaming)
			tc.build(env)
			_, err := env.Execute("x")
			var be *stream.BuildError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a BuildError containing %q", err, tc.want)
			}
		})
	}
	t.Run("interval join needs watermarks", func(t *testing.T) {
		env := newProcTestEnv(1, stream.Streaming)
		ks := stream.KeyBy(stream.FromElements(env, 1), func(i int) int { return i })
		j := stream.IntervalJoin(ks, ks).Between(0, time.Second)
		stream.Discard(stream.IntervalJoinProcess(j, stream.ProcessJoinFunc[int, int, int](func(*stream.ProcessJoinContext, int, int, stream.Collector[int]) error { return nil })).Name("join"))
		_, err := env.Execute("x")
		if !errors.Is(err, graph.ErrInvalidGraph) || !strings.Contains(err.Error(), `operator "join" (id 1): uses event time but no watermark strategy`) {
			t.Fatalf("got %v", err)
		}
	})
}
