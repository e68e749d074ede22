package stream_test

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"testing"

	"github.com/sluice/sluice/stream"
)

// everyTenth emits a watermark at the timestamp of every record whose value
// ends in 9, right after it (a punctuated generator).
type everyTenth struct{}

func (everyTenth) OnEvent(v int64, ts stream.Timestamp, out stream.WatermarkOutput) {
	if v%10 == 9 {
		out.EmitWatermark(ts)
	}
}
func (everyTenth) OnPeriodicEmit(stream.WatermarkOutput) {}

// TestChainedStatelessOperatorsKeepOrderTimestampsAndWatermarks: a source
// hands its chain of stateless operators batches (Map, Filter and Map take
// them in one call); every record still arrives in order with its own
// timestamp, and sees exactly the watermarks emitted before it — a
// punctuated watermark after record 9 is seen by record 10, not earlier
// and not later.
func TestChainedStatelessOperatorsKeepOrderTimestampsAndWatermarks(t *testing.T) {
	const n = 1000
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithLogger(slog.New(slog.DiscardHandler)))
	strategy := stream.ForGenerator(func() stream.WatermarkGenerator[int64] { return everyTenth{} }).
		WithTimestampAssigner(func(v int64, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(1000 + v) })
	src := stream.DataGenWithWatermarks(env, n, 0, func(i int64) int64 { return i }, strategy)
	tripled := stream.Map(src, func(v int64) int64 { return 3 * v })
	odd := stream.Filter(tripled, func(v int64) bool { return v%2 == 1 })
	back := stream.Map(odd, func(v int64) int64 { return v / 3 })
	seen := stream.Process(back, stream.ProcessFuncs[int64, string]{
		Element: func(ctx *stream.ProcessContext, v int64, out stream.Collector[string]) error {
			out.Collect(fmt.Sprintf("%d@%d wm=%d", v, ctx.Timestamp(), ctx.CurrentWatermark()))
			return nil
		},
	})
	got := stream.Collect(seen)
	if _, err := env.Execute("batch-chain"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for v := int64(1); v < n; v += 2 {
		wm := int64(math.MinInt64)
		if v >= 10 {
			wm = 1000 + v/10*10 - 1 // the watermark after the last record ending in 9
		}
		want = append(want, fmt.Sprintf("%d@%d wm=%d", v, 1000+v, wm))
	}
	if g := got.Values(); !slices.Equal(g, want) {
		t.Errorf("got %d records, want %d; first differences:", len(g), len(want))
		for i := range min(len(g), len(want)) {
			if g[i] != want[i] {
				t.Errorf("record %d: got %q, want %q", i, g[i], want[i])
				break
			}
		}
	}
}
