package stream

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/task"
)

// BenchmarkWindowOperator drives one window operator subtask directly, on
// one goroutine, without task, exchange or source: a one-second tumbling
// event-time count per key, timestamps advancing 1 ms per 100 records and
// a watermark 100 ms behind every 1000 records, as bench's
// KeyedWindowCount does through a whole job. With 1000 keys most records
// take the fast path of a window that has contents; with 100 000 almost
// every record opens a (key, window) with its timer and firing.
func BenchmarkWindowOperator(b *testing.B) {
	type rec struct{ Key, Ts int64 }
	count := AggregateFuncs[rec, int64, int64]{
		AddFn:    func(_ rec, n int64) int64 { return n + 1 },
		ResultFn: func(n int64) int64 { return n },
		MergeFn:  func(a, c int64) int64 { return a + c },
	}
	for _, keys := range []int64{1000, 100_000} {
		b.Run(fmt.Sprint("keys=", keys), func(b *testing.B) {
			ks := KeyBy(FromSlice[rec](testEnv(), nil), func(r rec) int64 { return r.Key })
			op, in := benchWindowOp[rec](b, WindowAggregate(Window(ks, TumblingEventTimeWindows(time.Second)), count))
			b.ReportAllocs()
			b.ResetTimer()
			for i := int64(0); i < int64(b.N); i++ {
				ts := i / 100
				if err := in.ProcessElement(rec{i % keys, ts}, ts); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 {
					if err := op.ProcessWatermark(ts - 100); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// discardOutput is an operator output that drops everything.
type discardOutput[T any] struct{}

func (discardOutput[T]) Collect(T, int64) error    { return nil }
func (discardOutput[T]) EmitWatermark(int64) error { return nil }

// benchWindowOp builds and opens the window operator of out.
func benchWindowOp[T, O any](b *testing.B, out DataStream[O]) (task.Operator, task.Input[T]) {
	b.Helper()
	if len(out.env.errs) > 0 {
		b.Fatal(out.env.errs)
	}
	f, ok := out.node.Impl.(*procFactory[O])
	if !ok {
		b.Fatalf("node %s is not a window operator", out.node.Label())
	}
	env := &procEnv{Clock: clock.NewManual(0), MaxPar: 128, Groups: keygroup.Range{Start: 0, End: 127},
		Schedule: func(int64, func(int64) error) func() { return func() {} }}
	op, ins, err := f.Build(env, discardOutput[O]{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := op.Open(); err != nil {
		b.Fatal(err)
	}
	return op, ins[0].(task.Input[T])
}
