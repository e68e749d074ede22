package bench

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

// runJob executes env and reports throughput for n records.
func runJob(b *testing.B, env *stream.Environment, n int) *stream.JobResult {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	res, err := env.Execute(b.Name())
	if err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.ReportMetric(float64(n)/el.Seconds(), "records/s")
	return res
}

func quiet() stream.Option { return stream.WithLogger(slog.New(slog.DiscardHandler)) }

// BenchmarkStatelessChain: generator → map → filter → map → discard, all
// chained, at parallelism 2. One op is one record, so allocs/op is
// allocations per record.
func BenchmarkStatelessChain(b *testing.B) {
	env := stream.NewEnvironment(stream.WithParallelism(2), quiet())
	src := stream.DataGen(env, int64(b.N), 0, func(i int64) int64 { return i })
	m := stream.Map(src, func(v int64) int64 { return v * 3 })
	f := stream.Filter(m, func(v int64) bool { return v%2 == 0 })
	stream.Discard(stream.Map(f, func(v int64) int64 { return v + 1 }))
	runJob(b, env, b.N)
}

type event struct {
	Key   int64
	Value int64
}

// BenchmarkStatelessChainStruct is the stateless chain on plain structs.
func BenchmarkStatelessChainStruct(b *testing.B) {
	env := stream.NewEnvironment(stream.WithParallelism(2), quiet())
	src := stream.DataGen(env, int64(b.N), 0, func(i int64) event { return event{i % 1000, i} })
	m := stream.Map(src, func(e event) event { e.Value *= 3; return e })
	f := stream.Filter(m, func(e event) bool { return e.Value%2 == 0 })
	stream.Discard(stream.Map(f, func(e event) event { e.Key++; return e }))
	runJob(b, env, b.N)
}

// BenchmarkRebalanceExchange: generator → rebalance → map → discard, so
// every record crosses an in-process exchange.
func BenchmarkRebalanceExchange(b *testing.B) {
	env := stream.NewEnvironment(stream.WithParallelism(2), quiet())
	src := stream.DataGen(env, int64(b.N), 0, func(i int64) int64 { return i })
	stream.Discard(stream.Map(src.Rebalance(), func(v int64) int64 { return v + 1 }))
	runJob(b, env, b.N)
}

type keyed struct {
	Key int64
	Ts  int64
}

// BenchmarkKeyedWindowCount: generator → KeyBy (1000 keys) → one-second
// tumbling event-time window counting per key → discard, at parallelism 2.
// Timestamps advance 1 ms per 100 records, so each window of a key sees
// about 100 records.
func BenchmarkKeyedWindowCount(b *testing.B) {
	benchWindow(b, 1000)
}

// BenchmarkKeyedWindowCountSparse is the window benchmark with 100 000
// keys: almost every record opens a (key, window) of its own, with its
// state entry, timer and firing.
func BenchmarkKeyedWindowCountSparse(b *testing.B) {
	benchWindow(b, 100_000)
}

func benchWindow(b *testing.B, keys int64) {
	env := stream.NewEnvironment(stream.WithParallelism(2), quiet())
	strategy := stream.ForBoundedOutOfOrderness[keyed](100 * time.Millisecond).
		WithTimestampAssigner(func(r keyed, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(r.Ts) })
	src := stream.DataGenWithWatermarks(env, int64(b.N), 0, func(i int64) keyed { return keyed{Key: i % keys, Ts: i / 100} }, strategy)
	count := stream.AggregateFuncs[keyed, int64, int64]{
		AddFn:    func(_ keyed, n int64) int64 { return n + 1 },
		ResultFn: func(n int64) int64 { return n },
		MergeFn:  func(a, c int64) int64 { return a + c },
	}
	ks := stream.KeyBy(src, func(r keyed) int64 { return r.Key })
	stream.Discard(stream.WindowAggregate(stream.Window(ks, stream.TumblingEventTimeWindows(time.Second)), count))
	runJob(b, env, b.N)
}

// BenchmarkKeyedValueState: generator → KeyBy (10 000 keys) → keyed process
// function counting per key in a ValueState and emitting the count →
// discard, at parallelism 2.
func BenchmarkKeyedValueState(b *testing.B) { benchValueState(b) }

// BenchmarkKeyedValueStateCheckpointed is BenchmarkKeyedValueState with an
// exactly-once checkpoint every second (to a local directory); compare its
// records/s with the unchecked run (target: at least 0.9 of it). Run it
// long enough for several checkpoints (make bench uses 60M records).
func BenchmarkKeyedValueStateCheckpointed(b *testing.B) {
	benchValueState(b, stream.WithCheckpointing(time.Second, b.TempDir()))
}

func benchValueState(b *testing.B, opts ...stream.Option) {
	env := stream.NewEnvironment(append([]stream.Option{stream.WithParallelism(2), quiet()}, opts...)...)
	src := stream.DataGen(env, int64(b.N), 0, func(i int64) keyed { return keyed{Key: i % 10_000, Ts: i} })
	countDesc := stream.NewValueDescriptor[int64]("count")
	fn := stream.KeyedProcessFuncs[int64, keyed, int64]{
		Element: func(ctx *stream.KeyedContext[int64], r keyed, out stream.Collector[int64]) error {
			st := stream.Value(ctx, countDesc)
			n, err := st.Value()
			if err != nil {
				return err
			}
			n++
			out.Collect(n)
			return st.Update(n)
		},
	}
	stream.Discard(stream.KeyedProcess(stream.KeyBy(src, func(r keyed) int64 { return r.Key }), fn))
	res := runJob(b, env, b.N)
	if res.Checkpoints > 0 {
		b.ReportMetric(float64(res.Checkpoints), "checkpoints")
	}
}
