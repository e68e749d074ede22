package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/stream"
)

// asyncTestDeadline bounds how long a test waits for a job before it reports
// it stuck (it is never reached by a passing test).
const asyncTestDeadline = 60 * time.Second

func asyncTestEnv(opts ...stream.Option) *stream.Environment {
	return stream.NewEnvironment(append([]stream.Option{stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
}

func asyncInputs(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// runAsyncJob runs env's job on a goroutine; the result arrives on the channel.
func runAsyncJob(t *testing.T, env *stream.Environment) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), asyncTestDeadline)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		_, err := env.ExecuteContext(ctx, "async")
		done <- err
	}()
	return done
}

// asyncEvent is what the asyncScript job reports, in the order the task
// goroutine produced it.
type asyncEvent struct {
	kind   string // "invoke", "emit", "wm"
	v      int    // invoke: the input
	out    string // emit: the result
	ts     int64  // emit: its timestamp
	wm     int64  // wm: the watermark
	result stream.ResultFuture[string]
}

// asyncScript runs source → punctuate → async → observe at parallelism 1 and
// completes requests in an order chosen by pick. The driver mirrors the
// operator's occupancy (records taken and not yet emitted): it completes a
// request only when the operator must be waiting for one (occupancy at
// capacity, or all input taken), so it also checks that the operator
// never exceeds its capacity and does fill it.
type asyncScript struct {
	ordered  bool
	n        int
	capacity int
	segment  int // a watermark follows every segment-th record (0: none)
	pick     func(pending []asyncEvent) int
}

type asyncScriptResult struct {
	out         []asyncEvent // emits and watermarks, in order
	completions []int        // inputs in the order the driver completed them
	maxOcc      int
}

func (s asyncScript) run(t *testing.T) asyncScriptResult {
	t.Helper()
	events := make(chan asyncEvent, 4*s.n+16)
	env := asyncTestEnv(stream.WithParallelism(1))
	src := stream.PunctuateForTest(stream.FromSlice(env, asyncInputs(s.n)),
		func(v int) int64 { return int64(v) * 10 },
		func(v int) bool { return s.segment > 0 && v%s.segment == s.segment-1 })
	fn := stream.AsyncFuncs[int, string]{Invoke: func(_ context.Context, v int, r stream.ResultFuture[string]) {
		events <- asyncEvent{kind: "invoke", v: v, result: r}
	}}
	var out stream.DataStream[string]
	if s.ordered {
		out = stream.AsyncOrdered(src, fn, 0, s.capacity)
	} else {
		out = stream.AsyncUnordered(src, fn, 0, s.capacity)
	}
	stream.Discard(stream.ObserveForTest(out.Name("lookup"),
		func(v string, ts int64) { events <- asyncEvent{kind: "emit", out: v, ts: ts} },
		func(wm int64) { events <- asyncEvent{kind: "wm", wm: wm} }))
	done := runAsyncJob(t, env)

	var res asyncScriptResult
	invoked, emitted := 0, 0
	var pending []asyncEvent
	handle := func(ev asyncEvent) {
		switch ev.kind {
		case "invoke":
			invoked++
			occ := invoked - emitted
			if occ > s.capacity {
				t.Errorf("input %d started with %d records in flight; capacity is %d", ev.v, occ, s.capacity)
			}
			res.maxOcc = max(res.maxOcc, occ)
			pending = append(pending, ev)
		case "emit":
			emitted++
			res.out = append(res.out, ev)
		case "wm":
			res.out = append(res.out, ev)
		}
	}
	stuck := time.After(asyncTestDeadline)
	for {
		if len(pending) > 0 && (invoked-emitted == s.capacity || invoked == s.n) {
			i := s.pick(pending)
			r := pending[i]
			pending = slices.Delete(pending, i, i+1)
			res.completions = append(res.completions, r.v)
			r.result.Complete([]string{"r" + strconv.Itoa(r.v)})
			continue
		}
		select {
		case ev := <-events:
			handle(ev)
		case err := <-done:
			if err != nil {
				t.Fatalf("job failed: %v", err)
			}
			for len(events) > 0 {
				handle(<-events)
			}
			if len(pending) > 0 {
				t.Fatalf("job finished with %d requests never completed", len(pending))
			}
			return res
		case <-stuck:
			t.Fatalf("stuck: %d invoked, %d emitted, %d awaiting completion", invoked, emitted, len(pending))
		}
	}
}

func asyncRandomPick(seed uint64) func([]asyncEvent) int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(p []asyncEvent) int { return rng.IntN(len(p)) }
}

func asyncLastPick(p []asyncEvent) int { return len(p) - 1 }

// asyncExpectedOrdered is the exact output of the ordered operator: results in
// input order with the inputs' timestamps, watermarks where they were.
// (n must not be a multiple of segment: a last watermark with no record
// after it may be merged into the final one.)
func asyncExpectedOrdered(n, segment int) []string {
	var want []string
	for v := 0; v < n; v++ {
		want = append(want, fmt.Sprintf("r%d@%d", v, v*10))
		if segment > 0 && v%segment == segment-1 {
			want = append(want, fmt.Sprintf("wm %d", v*10))
		}
	}
	return append(want, fmt.Sprintf("wm %d", stream.MaxWatermark))
}

func asyncRender(evs []asyncEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		if ev.kind == "wm" {
			out[i] = fmt.Sprintf("wm %d", ev.wm)
		} else {
			out[i] = fmt.Sprintf("%s@%d", ev.out, ev.ts)
		}
	}
	return out
}

func TestAsyncOrderedKeepsInputOrder(t *testing.T) {
	cases := []struct {
		name              string
		n, capacity, segm int
		seed              uint64
	}{
		{"capacity 1", 20, 1, 0, 1},
		{"capacity 5", 200, 5, 0, 2},
		{"capacity 5 with watermarks", 200, 5, 7, 3},
		{"capacity above input", 30, 100, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := asyncScript{ordered: true, n: c.n, capacity: c.capacity, segment: c.segm, pick: asyncRandomPick(c.seed)}.run(t)
			if got, want := asyncRender(res.out), asyncExpectedOrdered(c.n, c.segm); !slices.Equal(got, want) {
				t.Fatalf("output\n%v\nwant\n%v", got, want)
			}
			if want := min(c.capacity, c.n); res.maxOcc != want {
				t.Errorf("at most %d records were in flight, want %d (the capacity)", res.maxOcc, want)
			}
			if c.capacity > 1 && slices.IsSorted(res.completions) {
				t.Errorf("requests completed in input order %v; the test did not reorder them", res.completions)
			}
		})
	}
}

func TestAsyncUnorderedEmitsOnCompletionWithinWatermarks(t *testing.T) {
	cases := []struct {
		name              string
		n, capacity, segm int
		pick              func([]asyncEvent) int
	}{
		{"no watermarks, last first", 50, 6, 0, asyncLastPick},
		{"watermarks, last first", 65, 6, 10, asyncLastPick},
		{"watermarks, random", 200, 8, 9, asyncRandomPick(7)},
		{"capacity above input, last first", 35, 100, 10, asyncLastPick},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := asyncScript{ordered: false, n: c.n, capacity: c.capacity, segment: c.segm, pick: c.pick}.run(t)
			if want := min(c.capacity, c.n); res.maxOcc != want {
				t.Errorf("at most %d records were in flight, want %d (the capacity)", res.maxOcc, want)
			}
			if slices.IsSorted(res.completions) {
				t.Fatalf("requests completed in input order %v; the test did not reorder them", res.completions)
			}
			// Expected: per segment between watermarks, the segment's results
			// in the order their requests completed; then the watermark.
			segOf := func(v int) int {
				if c.segm == 0 {
					return 0
				}
				return v / c.segm
			}
			nseg := 1
			if c.segm > 0 {
				nseg = (c.n + c.segm - 1) / c.segm
			}
			var want []string
			for s := 0; s < nseg; s++ {
				for _, v := range res.completions {
					if segOf(v) == s {
						want = append(want, fmt.Sprintf("r%d@%d", v, v*10))
					}
				}
				if c.segm > 0 && (s+1)*c.segm <= c.n {
					want = append(want, fmt.Sprintf("wm %d", ((s+1)*c.segm-1)*10))
				}
			}
			want = append(want, fmt.Sprintf("wm %d", stream.MaxWatermark))
			if got := asyncRender(res.out); !slices.Equal(got, want) {
				t.Fatalf("output\n%v\nwant\n%v\n(completion order %v)", got, want, res.completions)
			}
			if got := asyncRender(res.out); slices.Equal(got, asyncExpectedOrdered(c.n, c.segm)) {
				t.Fatalf("unordered output is in input order: %v", got)
			}
		})
	}
}

// A watermark that reaches the operator while it waits for a free slot
// (here: the source's periodic watermark, fired by a timer the operator's
// wait runs) stays behind the record that was waiting.
func TestAsyncWaitAtCapacityDoesNotReenterUpstream(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			clk := clock.NewManual(1_000_000)
			env := asyncTestEnv(stream.WithParallelism(1), stream.WithClock(clk), stream.WithAutoWatermarkInterval(200*time.Millisecond))
			periodic := make(chan struct{}, 16)
			strategy := stream.ForGenerator(func() stream.WatermarkGenerator[int] { return &asyncSignallingGen{max: -1 << 62, fired: periodic} }).
				WithTimestampAssigner(func(v int, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(int64(v) * 10) })
			src := stream.DataGenWithWatermarks(env, 3, 0, func(i int64) int { return int(i) }, strategy)
			invokes := make(chan asyncEvent, 16)
			fn := stream.AsyncFuncs[int, string]{Invoke: func(_ context.Context, v int, r stream.ResultFuture[string]) {
				invokes <- asyncEvent{v: v, result: r}
			}}
			var out stream.DataStream[string]
			if ordered {
				out = stream.AsyncOrdered(src, fn, 0, 1)
			} else {
				out = stream.AsyncUnordered(src, fn, 0, 1)
			}
			var mu sync.Mutex
			var got []string
			stream.Discard(stream.ObserveForTest(out,
				func(v string, ts int64) { mu.Lock(); got = append(got, fmt.Sprintf("%s@%d", v, ts)); mu.Unlock() },
				func(wm int64) { mu.Lock(); got = append(got, fmt.Sprintf("wm %d", wm)); mu.Unlock() }))
			done := runAsyncJob(t, env)
			next := func() asyncEvent {
				select {
				case ev := <-invokes:
					return ev
				case err := <-done:
					t.Fatalf("job ended early: %v", err)
				}
				return asyncEvent{}
			}
			ev := next()
			// Record 1 now waits for the slot record 0 holds. The source's
			// watermark timer is due, but the wait must not re-enter the
			// source (Flink's yield runs only downstream mail): the
			// watermark is generated after the source's poll returns.
			clk.Advance(200)
			ev.result.Complete([]string{"r0"})
			for v := 1; v < 3; v++ {
				ev = next()
				if ev.v != v {
					t.Fatalf("invoked %d, want %d", ev.v, v)
				}
				ev.result.Complete([]string{"r" + strconv.Itoa(v)})
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// The periodic watermark (19) may merge into the final one when
			// both wait behind r2; a watermark between r1 and r2 (9) would
			// mean the wait re-entered the source.
			want := []string{"r0@0", "r1@10", "r2@20", "wm 19", fmt.Sprintf("wm %d", stream.MaxWatermark)}
			merged := []string{"r0@0", "r1@10", "r2@20", fmt.Sprintf("wm %d", stream.MaxWatermark)}
			if !slices.Equal(got, want) && !slices.Equal(got, merged) {
				t.Fatalf("got %v, want %v or %v", got, want, merged)
			}
		})
	}
}

// asyncSignallingGen emits the largest timestamp seen minus one on every
// period and tells the test that a period ran.
type asyncSignallingGen struct {
	max   int64
	fired chan<- struct{}
}

func (g *asyncSignallingGen) OnEvent(_ int, ts stream.Timestamp, _ stream.WatermarkOutput) {
	g.max = max(g.max, int64(ts))
}
func (g *asyncSignallingGen) OnPeriodicEmit(out stream.WatermarkOutput) {
	out.EmitWatermark(stream.Timestamp(g.max - 1))
	g.fired <- struct{}{}
}

// Requests complete on goroutines of their own after random delays; the
// results are exact at parallelism 1 and 4, in order per source split in
// ordered mode, with the input timestamps.
func TestAsyncExactResultsAtAnyParallelism(t *testing.T) {
	const n = 3000
	results := func(v int) []string {
		out := make([]string, v%3) // 0, 1 or 2 results per record
		for i := range out {
			out[i] = fmt.Sprintf("%d.%d", v, i)
		}
		return out
	}
	var want []string
	for v := 0; v < n; v++ {
		want = append(want, results(v)...)
	}
	slices.Sort(want)
	for _, par := range []int{1, 4} {
		for _, ordered := range []bool{true, false} {
			t.Run(fmt.Sprintf("p%d ordered=%v", par, ordered), func(t *testing.T) {
				const capacity = 7
				var inFlight, maxInFlight atomic.Int64
				env := asyncTestEnv(stream.WithParallelism(par))
				src := stream.PunctuateForTest(stream.FromSlice(env, asyncInputs(n)),
					func(v int) int64 { return int64(v) }, func(int) bool { return false })
				fn := stream.AsyncFuncs[int, string]{Invoke: func(ctx context.Context, v int, r stream.ResultFuture[string]) {
					cur := inFlight.Add(1)
					for m := maxInFlight.Load(); cur > m && !maxInFlight.CompareAndSwap(m, cur); m = maxInFlight.Load() {
					}
					go func() {
						for k := rand.IntN(20); k > 0; k-- {
							runtime.Gosched()
						}
						inFlight.Add(-1)
						r.Complete(results(v))
					}()
				}}
				var out stream.DataStream[string]
				if ordered {
					out = stream.AsyncOrdered(src, fn, time.Minute, capacity)
				} else {
					out = stream.AsyncUnordered(src, fn, time.Minute, capacity)
				}
				res := stream.Collect(out)
				if err := <-runAsyncJob(t, env); err != nil {
					t.Fatal(err)
				}
				recs := res.Records()
				var got []string
				for _, r := range recs {
					got = append(got, r.Value)
					v, _ := strconv.Atoi(strings.Split(r.Value, ".")[0])
					if r.Timestamp != stream.Timestamp(int64(v)) {
						t.Fatalf("result %s has timestamp %d, want its input's %d", r.Value, r.Timestamp, v)
					}
				}
				if ordered {
					asyncCheckOrderPerSplit(t, recs, n, par)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("got %d results, want %d", len(got), len(want))
				}
				if m := maxInFlight.Load(); m > int64(par*capacity) {
					t.Fatalf("%d requests ran at once; capacity %d × %d subtasks", m, capacity, par)
				}
			})
		}
	}
}

// asyncCheckOrderPerSplit checks that the results of each source split (a
// contiguous range of inputs read by one subtask) arrive in input order.
func asyncCheckOrderPerSplit(t *testing.T, recs []stream.Record[string], n, splits int) {
	t.Helper()
	last := make([]int64, splits)
	for i := range last {
		last[i] = -1
	}
	for _, r := range recs {
		split := 0
		for int64(r.Timestamp) >= int64(n)*int64(split+1)/int64(splits) {
			split++
		}
		if r.Timestamp < stream.Timestamp(last[split]) {
			t.Fatalf("result %s (input %d) came after a result of input %d of the same split", r.Value, r.Timestamp, last[split])
		}
		last[split] = int64(r.Timestamp)
	}
}

func TestAsyncTimeoutFailsJobNamingOperator(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			clk := clock.NewManual(1_000_000)
			env := asyncTestEnv(stream.WithParallelism(1), stream.WithClock(clk))
			invoked := make(chan int, 16)
			var mu sync.Mutex
			ctxs := map[int]context.Context{}
			fn := stream.AsyncFuncs[int, string]{Invoke: func(ctx context.Context, v int, r stream.ResultFuture[string]) {
				mu.Lock()
				ctxs[v] = ctx
				mu.Unlock()
				invoked <- v
				if v != 3 && v != 4 {
					r.Complete([]string{strconv.Itoa(v)}) // completing at once is allowed
				}
			}}
			var out stream.DataStream[string]
			if ordered {
				out = stream.AsyncOrdered(stream.FromSlice(env, asyncInputs(6)), fn, time.Second, 10)
			} else {
				out = stream.AsyncUnordered(stream.FromSlice(env, asyncInputs(6)), fn, time.Second, 10)
			}
			stream.Discard(out.Name("lookup"))
			done := runAsyncJob(t, env)
			for v := range invoked {
				if v == 5 {
					break
				}
			}
			clk.Advance(1000)
			err := <-done
			if !errors.Is(err, stream.ErrAsyncTimeout) || !strings.Contains(err.Error(), `operator "lookup"`) || !strings.Contains(err.Error(), "after 1s") {
				t.Fatalf("want a timeout naming the operator, got %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for v, ctx := range ctxs {
				if ctx.Err() == nil {
					t.Errorf("the context of request %d is not cancelled after the job ended", v)
				}
			}
		})
	}
}

func TestAsyncTimeoutCallbackCompletesRequests(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			const n = 10
			clk := clock.NewManual(1_000_000)
			env := asyncTestEnv(stream.WithParallelism(1), stream.WithClock(clk))
			invoked := make(chan int, n)
			var mu sync.Mutex
			stuck := map[int]context.Context{}
			fn := stream.AsyncFuncs[int, string]{
				Invoke: func(ctx context.Context, v int, r stream.ResultFuture[string]) {
					if v%2 == 0 {
						r.Complete([]string{fmt.Sprintf("ok %d", v)})
					} else {
						mu.Lock()
						stuck[v] = ctx
						mu.Unlock()
					}
					invoked <- v
				},
				TimeoutFn: func(v int, r stream.ResultFuture[string]) {
					r.Complete([]string{fmt.Sprintf("timeout %d", v)})
				},
			}
			var out stream.DataStream[string]
			if ordered {
				out = stream.AsyncOrdered(stream.FromSlice(env, asyncInputs(n)), fn, 50*time.Millisecond, n)
			} else {
				out = stream.AsyncUnordered(stream.FromSlice(env, asyncInputs(n)), fn, 50*time.Millisecond, n)
			}
			res := stream.Collect(out)
			done := runAsyncJob(t, env)
			for range n {
				<-invoked
			}
			clk.Advance(50)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var want []string
			for v := 0; v < n; v++ {
				if v%2 == 0 {
					want = append(want, fmt.Sprintf("ok %d", v))
				} else {
					want = append(want, fmt.Sprintf("timeout %d", v))
				}
			}
			got := res.Values()
			if !ordered {
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			for v, ctx := range stuck {
				if ctx.Err() == nil {
					t.Errorf("request %d timed out but its context is not cancelled", v)
				}
			}
		})
	}
}

func TestAsyncCompleteExceptionallyFailsJobNamingOperator(t *testing.T) {
	errLookup := errors.New("lookup service unavailable")
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			env := asyncTestEnv(stream.WithParallelism(2))
			fn := stream.AsyncFuncs[int, int]{Invoke: func(_ context.Context, v int, r stream.ResultFuture[int]) {
				go func() {
					if v == 77 {
						r.CompleteExceptionally(errLookup)
						return
					}
					r.Complete([]int{v})
				}()
			}}
			src := stream.FromSlice(env, asyncInputs(200))
			var out stream.DataStream[int]
			if ordered {
				out = stream.AsyncOrdered(src, fn, 0, 4)
			} else {
				out = stream.AsyncUnordered(src, fn, 0, 4)
			}
			stream.Discard(out.Name("enrich"))
			err := <-runAsyncJob(t, env)
			if !errors.Is(err, errLookup) || !strings.Contains(err.Error(), `operator "enrich"`) {
				t.Fatalf("want the request's error naming the operator, got %v", err)
			}
		})
	}
}

func TestAsyncRejectsBadArguments(t *testing.T) {
	env := asyncTestEnv(stream.WithParallelism(1))
	src := stream.FromElements(env, 1, 2).Name("numbers")
	stream.Discard(stream.AsyncOrdered[int, int](src, nil, time.Second, 0))
	stream.Discard(stream.AsyncUnordered(src, stream.AsyncFuncs[int, int]{}, time.Second, 1))
	_, err := env.Execute("bad")
	for _, want := range []string{
		`AsyncOrdered after operator "numbers"`,
		"capacity must be positive, got 0",
		"the async function is nil",
		`AsyncUnordered after operator "numbers" (id 0): the async function is nil`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q: %v", want, err)
		}
	}
}
