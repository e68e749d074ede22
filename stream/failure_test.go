package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/stream"
)

// genTxnSink is a two-phase-commit sink committing, idempotently per
// transaction, into a shared map; failPrepare injects failures during
// checkpoints.
type genTxnSink[T any] struct {
	mu          sync.Mutex
	committed   map[string][]T
	seq         atomic.Int64
	failPrepare func() bool
}

type genTxn[T any] struct {
	ID      string
	Records []T
}

type genTxnWriter[T any] struct {
	s   *genTxnSink[T]
	sub int
	buf []T
}

func (s *genTxnSink[T]) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[T], error) {
	return &genTxnWriter[T]{s: s, sub: ctx.Subtask()}, nil
}
func (s *genTxnSink[T]) CreateCommitter() (stream.Committer[genTxn[T]], error) {
	return genTxnCommitter[T]{s}, nil
}
func (w *genTxnWriter[T]) Write(_ context.Context, v T, _ stream.Timestamp) error {
	w.buf = append(w.buf, v)
	return nil
}
func (w *genTxnWriter[T]) Flush(context.Context, bool) error { return nil }
func (w *genTxnWriter[T]) Close() error                      { return nil }
func (w *genTxnWriter[T]) PrepareCommit(context.Context) ([]genTxn[T], error) {
	if w.s.failPrepare != nil && w.s.failPrepare() {
		return nil, fmt.Errorf("injected failure during a checkpoint")
	}
	t := genTxn[T]{ID: fmt.Sprintf("%d-%d", w.sub, w.s.seq.Add(1)), Records: w.buf}
	w.buf = nil
	return []genTxn[T]{t}, nil
}

type genTxnCommitter[T any] struct{ s *genTxnSink[T] }

func (c genTxnCommitter[T]) Commit(_ context.Context, ts []genTxn[T]) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, t := range ts {
		c.s.committed[t.ID] = t.Records
	}
	return nil
}
func (c genTxnCommitter[T]) Close() error { return nil }

type windowTotal struct {
	Key, Start, Count, Sum int64
}

// windowJob: generated events with event-time timestamps, up to 40 ms out
// of order → per-key 100 ms tumbling windows (count and sum) → sink.
func windowJob[T any](par int, sink *genTxnSink[windowTotal], mapFail func(int64), opts ...stream.Option) *stream.Environment {
	env := stream.NewEnvironment(append([]stream.Option{stream.WithParallelism(par), stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	type ev struct{ Key, Ts, V int64 }
	strategy := stream.ForBoundedOutOfOrderness[ev](50 * time.Millisecond).WithTimestampAssigner(func(e ev, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(e.Ts) })
	src := stream.DataGenWithWatermarks(env, 40000, 40000, func(i int64) ev {
		return ev{Key: i % 11, Ts: i - (i*7919)%40, V: i % 97}
	}, strategy).UID("events")
	checked := stream.Map(src, func(e ev) ev { mapFail(e.Ts); return e })
	type acc struct{ N, S int64 }
	agg := stream.AggregateFuncs[ev, acc, acc]{
		AddFn: func(e ev, a acc) acc { return acc{a.N + 1, a.S + e.V} }, ResultFn: func(a acc) acc { return a },
		MergeFn: func(a, b acc) acc { return acc{a.N + b.N, a.S + b.S} },
	}
	totals := stream.WindowAggregateWith(stream.Window(stream.KeyBy(checked, func(e ev) int64 { return e.Key }), stream.TumblingEventTimeWindows(100*time.Millisecond)),
		agg, stream.ProcessWindowFunc(func(k int64, ctx stream.WindowContext[int64, stream.TimeWindow], as []acc, out stream.Collector[windowTotal]) error {
			for _, a := range as {
				out.Collect(windowTotal{k, int64(ctx.Window().Start), a.N, a.S})
			}
			return nil
		})).UID("windows")
	stream.SinkToCommitting(totals, sink)
	return env
}

func committedSet(s *genTxnSink[windowTotal]) (map[windowTotal]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[windowTotal]int{}
	n := 0
	for _, rs := range s.committed {
		for _, r := range rs {
			out[r]++
			n++
		}
	}
	return out, n
}

// TestRandomFailuresGiveTheFailureFreeWindowResults fails the job at
// random points — in an operator and while a checkpoint is taken — and
// checks that the committed window results equal a failure-free run,
// each exactly once.
func TestRandomFailuresGiveTheFailureFreeWindowResults(t *testing.T) {
	ref := &genTxnSink[windowTotal]{committed: map[string][]windowTotal{}}
	if _, err := windowJob[windowTotal](2, ref, func(int64) {}).Execute("reference"); err != nil {
		t.Fatal(err)
	}
	want, _ := committedSet(ref)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			var mu sync.Mutex
			var failures atomic.Int32
			chance := func(p float64) bool {
				mu.Lock()
				defer mu.Unlock()
				return failures.Load() < 4 && rng.Float64() < p
			}
			sink := &genTxnSink[windowTotal]{committed: map[string][]windowTotal{},
				failPrepare: func() bool {
					if chance(0.08) {
						failures.Add(1)
						return true
					}
					return false
				}}
			strategy := stream.FixedDelayRestart(20, 0)
			env := windowJob[windowTotal](2, sink, func(int64) {
				if chance(0.0002) {
					failures.Add(1)
					panic("injected operator failure")
				}
			}, stream.WithCheckpointing(10*time.Millisecond, ""), stream.WithRestartStrategy(strategy))
			res, err := env.Execute("random failures")
			if err != nil {
				t.Fatal(err)
			}
			got, n := committedSet(sink)
			if !maps.Equal(got, want) {
				t.Fatalf("after %d restarts (%d failures injected), %d committed window results differ from the %d of the failure-free run", res.Restarts, failures.Load(), n, len(want))
			}
			for r, c := range got {
				if c != 1 {
					t.Fatalf("window %+v committed %d times", r, c)
				}
			}
			t.Logf("%d restarts, %d checkpoints", res.Restarts, res.Checkpoints)
		})
	}
}

// TestAtLeastOnceLosesNothing: without barrier alignment, records after a
// barrier may be replayed on recovery (counted twice) but none is lost.
func TestAtLeastOnceLosesNothing(t *testing.T) {
	ref := &genTxnSink[windowTotal]{committed: map[string][]windowTotal{}}
	if _, err := windowJob[windowTotal](2, ref, func(int64) {}).Execute("reference"); err != nil {
		t.Fatal(err)
	}
	want, _ := committedSet(ref)
	var failed atomic.Int32
	sink := &genTxnSink[windowTotal]{committed: map[string][]windowTotal{}}
	cfg := conf.New().Set("execution.checkpointing.mode", "AT_LEAST_ONCE").Set("restart-strategy.type", "fixed-delay").
		Set("restart-strategy.fixed-delay.delay", "0 ms").Set("restart-strategy.fixed-delay.attempts", "5")
	env := windowJob[windowTotal](2, sink, func(ts int64) {
		if ts > 25000 && failed.CompareAndSwap(0, 1) {
			panic("injected failure")
		}
	}, stream.WithConfiguration(cfg), stream.WithCheckpointing(10*time.Millisecond, ""))
	res, err := env.Execute("at least once")
	if err != nil {
		t.Fatal(err)
	}
	if res.Restarts != 1 {
		t.Fatalf("%d restarts, want 1", res.Restarts)
	}
	got, _ := committedSet(sink)
	byWindow := map[[2]int64]windowTotal{}
	for r := range got {
		k := [2]int64{r.Key, r.Start}
		if r.Count > byWindow[k].Count {
			byWindow[k] = r
		}
	}
	for r := range want {
		if g := byWindow[[2]int64{r.Key, r.Start}]; g.Count < r.Count {
			t.Fatalf("window %+v: got count %d, want at least %d", r, g.Count, r.Count)
		}
	}
}
