package stream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

type benchRec struct {
	Key int64
	Ts  int64
}

// BenchmarkKeyedTumblingWindowCount runs a whole job at parallelism 2:
// a generator of b.N records (100 records per millisecond of event time and
// subtask, periodic bounded-out-of-orderness watermarks) -> KeyBy -> 1s tumbling
// event-time windows counting per key -> discard. It reports records/s
// through the job.
func BenchmarkKeyedTumblingWindowCount(b *testing.B) {
	for _, keys := range []int64{1000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			count := stream.AggregateFuncs[benchRec, int64, int64]{
				AddFn:   func(_ benchRec, n int64) int64 { return n + 1 },
				Get:     func(n int64) int64 { return n },
				MergeFn: func(a, c int64) int64 { return a + c },
			}
			strategy := stream.ForBoundedOutOfOrderness[benchRec](100 * time.Millisecond).
				WithTimestampAssigner(func(r benchRec, _ int64) int64 { return r.Ts })
			env := newEnv(2, stream.Streaming)
			// DataGen gives each subtask a contiguous half of the indexes:
			// both halves cover the same span of event time, so the two
			// source subtasks' watermarks advance together.
			half := max(int64(b.N)/2, 1)
			src := stream.DataGenWithWatermarks(env, int64(b.N), 0, func(i int64) benchRec {
				return benchRec{Key: i % keys, Ts: (i % half) / 100}
			}, strategy)
			keyed := stream.KeyBy(src, func(r benchRec) int64 { return r.Key })
			counts := stream.WindowAggregate(stream.Window(keyed, stream.TumblingEventTimeWindows(time.Second)), count)
			stream.Discard(counts)
			b.ResetTimer()
			start := time.Now()
			if _, err := env.Execute("bench"); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}
