package bench

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

// runJob executes env and reports throughput for n records.
func runJob(b *testing.B, env *stream.Environment, n int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if _, err := env.Execute(b.Name()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.ReportMetric(float64(n)/el.Seconds(), "records/s")
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
