package stream

import (
	"math"
	"time"

	"github.com/sluice/sluice/internal/typed"
)

// WatermarkOutput receives a generator's watermarks.
type WatermarkOutput interface {
	EmitWatermark(wm Timestamp)
}

// WatermarkGenerator derives watermarks from the records of one source
// split (or one subtask, for AssignTimestampsAndWatermarks).
type WatermarkGenerator[T any] interface {
	// OnEvent sees every record with its assigned timestamp.
	OnEvent(v T, ts Timestamp, out WatermarkOutput)
	// OnPeriodicEmit is called every pipeline.auto-watermark-interval.
	OnPeriodicEmit(out WatermarkOutput)
}

// WatermarkStrategy says how records get event timestamps and how
// watermarks are generated, per source split.
type WatermarkStrategy[T any] struct {
	newGenerator func() WatermarkGenerator[T]
	assigner     func(v T, recordTs Timestamp) Timestamp
	idleness     time.Duration
}

// NoWatermarks generates no watermarks; records keep the source's timestamps.
func NoWatermarks[T any]() WatermarkStrategy[T] { return WatermarkStrategy[T]{} }

// ForBoundedOutOfOrderness emits, periodically, the largest timestamp seen
// minus maxOutOfOrderness minus one millisecond: records up to that much
// out of order are not late.
func ForBoundedOutOfOrderness[T any](maxOutOfOrderness time.Duration) WatermarkStrategy[T] {
	d := maxOutOfOrderness.Milliseconds()
	return WatermarkStrategy[T]{newGenerator: func() WatermarkGenerator[T] {
		return &boundedOutOfOrderness[T]{delay: d, maxTs: math.MinInt64 + d + 1}
	}}
}

// ForMonotonousTimestamps is for sources whose timestamps never decrease
// within a split (bounded out-of-orderness of zero).
func ForMonotonousTimestamps[T any]() WatermarkStrategy[T] { return ForBoundedOutOfOrderness[T](0) }

// ForGenerator uses a custom watermark generator, one per split.
func ForGenerator[T any](newGenerator func() WatermarkGenerator[T]) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{newGenerator: newGenerator}
}

// WithTimestampAssigner extracts event timestamps from records;
// recordTs is the timestamp the source attached (e.g. Kafka's), or
// NoTimestamp.
func (w WatermarkStrategy[T]) WithTimestampAssigner(fn func(v T, recordTs Timestamp) Timestamp) WatermarkStrategy[T] {
	w.assigner = fn
	return w
}

// WithIdleness marks a split idle when it has produced no records for d of
// processing time, so it stops holding back the watermark; it becomes
// active again with its next record.
func (w WatermarkStrategy[T]) WithIdleness(d time.Duration) WatermarkStrategy[T] {
	w.idleness = d
	return w
}

// generatesWatermarks reports whether the strategy produces watermarks.
func (w WatermarkStrategy[T]) generatesWatermarks() bool { return w.newGenerator != nil }

type boundedOutOfOrderness[T any] struct {
	delay int64
	maxTs int64
}

func (b *boundedOutOfOrderness[T]) OnEvent(_ T, ts Timestamp, _ WatermarkOutput) {
	if int64(ts) > b.maxTs {
		b.maxTs = int64(ts)
	}
}

func (b *boundedOutOfOrderness[T]) OnPeriodicEmit(out WatermarkOutput) {
	out.EmitWatermark(Timestamp(b.maxTs - b.delay - 1))
}

// typedStrategy is the strategy as the typed operators run it: one
// generator per split, adapted to the user's WatermarkGenerator.
func (w WatermarkStrategy[T]) typedStrategy() typed.WMStrategy[T] {
	ts := typed.WMStrategy[T]{IdlenessMs: w.idleness.Milliseconds()}
	if w.assigner != nil {
		assign := w.assigner
		ts.Assigner = func(v T, recordTs int64) int64 { return int64(assign(v, Timestamp(recordTs))) }
	}
	if w.newGenerator != nil {
		newGen := w.newGenerator
		ts.NewGenerator = func(t *typed.WMTracker[T]) typed.WMGenerator[T] {
			return &wmGenerator[T]{gen: newGen(), out: wmOutput[T]{t}}
		}
	}
	return ts
}

// wmGenerator is a user's generator over one split's tracker.
type wmGenerator[T any] struct {
	gen WatermarkGenerator[T]
	out wmOutput[T]
}

func (g *wmGenerator[T]) OnEvent(v T, ts int64) { g.gen.OnEvent(v, Timestamp(ts), &g.out) }
func (g *wmGenerator[T]) OnPeriodicEmit()       { g.gen.OnPeriodicEmit(&g.out) }

// wmOutput is a WatermarkOutput into a split's tracker.
type wmOutput[T any] struct{ t *typed.WMTracker[T] }

func (o *wmOutput[T]) EmitWatermark(wm Timestamp) { o.t.EmitWatermark(int64(wm)) }
