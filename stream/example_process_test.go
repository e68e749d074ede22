package stream_test

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluice/sluice/stream"
)

type click struct {
	User string
	TS   int64
}

// sessionCounter counts a user's clicks and reports them once the user
// has been quiet for 30 s of event time: the count is keyed state, the
// quiet period an event-time timer that each click moves.
type sessionCounter struct {
	count *stream.ValueDescriptor[int]
	due   *stream.ValueDescriptor[int64]
}

func (s sessionCounter) ProcessElement(ctx *stream.KeyedContext[string], c click, _ stream.Collector[string]) error {
	n, err := stream.Value(ctx, s.count).Value()
	if err != nil {
		return err
	}
	if err := stream.Value(ctx, s.count).Update(n + 1); err != nil {
		return err
	}
	if old, ok, _ := stream.Value(ctx, s.due).Lookup(); ok {
		ctx.TimerService().DeleteEventTimeTimer(stream.Timestamp(old))
	}
	due := ctx.Timestamp() + stream.Timestamp((30 * time.Second).Milliseconds())
	ctx.TimerService().RegisterEventTimeTimer(due)
	return stream.Value(ctx, s.due).Update(int64(due))
}

func (s sessionCounter) OnTimer(ctx *stream.OnTimerContext[string], ts stream.Timestamp, out stream.Collector[string]) error {
	n, err := stream.Value(ctx, s.count).Value()
	if err != nil {
		return err
	}
	out.Collect(fmt.Sprintf("%s: %d clicks, quiet since %ds", ctx.CurrentKey(), n, (ts-30_000)/1000))
	if err := stream.Value(ctx, s.due).Clear(); err != nil {
		return err
	}
	return stream.Value(ctx, s.count).Clear()
}

// watermarkPerClick declares event time complete up to each click (a
// punctuated watermark generator).
type watermarkPerClick struct{}

func (watermarkPerClick) OnEvent(_ click, ts stream.Timestamp, out stream.WatermarkOutput) {
	out.EmitWatermark(ts - 1)
}
func (watermarkPerClick) OnPeriodicEmit(stream.WatermarkOutput) {}

func ExampleKeyedProcess() {
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithLogger(slog.New(slog.DiscardHandler)))
	clicks := stream.FromElements(env, click{"ann", 0}, click{"bob", 5_000}, click{"ann", 20_000},
		click{"cy", 60_000}, click{"ann", 70_000}, click{"bob", 90_000})
	stamped := stream.AssignTimestampsAndWatermarks(clicks,
		stream.ForGenerator(func() stream.WatermarkGenerator[click] { return watermarkPerClick{} }).
			WithTimestampAssigner(func(c click, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(c.TS) }))
	reports := stream.KeyedProcess(stream.KeyBy(stamped, func(c click) string { return c.User }),
		sessionCounter{stream.NewValueDescriptor[int]("count"), stream.NewValueDescriptor[int64]("due")})
	stream.PrintTo(reports, os.Stdout)
	if _, err := env.Execute("sessions"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// bob: 1 clicks, quiet since 5s
	// ann: 2 clicks, quiet since 20s
	// cy: 1 clicks, quiet since 60s
	// ann: 1 clicks, quiet since 70s
	// bob: 1 clicks, quiet since 90s
}
