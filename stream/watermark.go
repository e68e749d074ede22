package stream

import (
	"math"
	"time"
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

// wmTracker holds the watermark state of one split (or subtask).
type wmTracker[T any] struct {
	gen          WatermarkGenerator[T]
	wm           int64 // generator's latest watermark
	idle         bool
	lastActivity int64 // processing time of the last record
	active       bool  // a record arrived since the last periodic check
}

func (t *wmTracker[T]) EmitWatermark(wm Timestamp) {
	if int64(wm) > t.wm {
		t.wm = int64(wm)
	}
}

// wmMultiplexer combines the watermarks of a subtask's splits: the minimum
// over non-idle splits, never going backwards.
type wmMultiplexer[T any] struct {
	strategy WatermarkStrategy[T]
	splits   map[string]*wmTracker[T]
	order    []string
	emitted  int64
	idle     bool
}

func newWMMultiplexer[T any](s WatermarkStrategy[T]) *wmMultiplexer[T] {
	return &wmMultiplexer[T]{strategy: s, splits: map[string]*wmTracker[T]{}, emitted: math.MinInt64}
}

func (m *wmMultiplexer[T]) add(id string, now int64) *wmTracker[T] {
	if t, ok := m.splits[id]; ok {
		return t
	}
	t := &wmTracker[T]{wm: math.MinInt64, lastActivity: now}
	if m.strategy.newGenerator != nil {
		t.gen = m.strategy.newGenerator()
	}
	m.splits[id] = t
	m.order = append(m.order, id)
	return t
}

func (m *wmMultiplexer[T]) remove(id string) {
	delete(m.splits, id)
	for i, s := range m.order {
		if s == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

// onEvent records a record of split t.
func (m *wmMultiplexer[T]) onEvent(t *wmTracker[T], v T, ts int64) {
	t.active = true
	if t.gen != nil {
		t.gen.OnEvent(v, Timestamp(ts), t)
	}
}

// periodic runs the generators and idleness detection; it returns the new
// combined watermark (advanced reports a change) and idleness changes.
func (m *wmMultiplexer[T]) periodic(now int64) (wm int64, advanced bool, idle, idleChanged bool) {
	for _, id := range m.order {
		t := m.splits[id]
		if t.active {
			t.active, t.idle, t.lastActivity = false, false, now
		} else if m.strategy.idleness > 0 && now-t.lastActivity >= m.strategy.idleness.Milliseconds() {
			t.idle = true
		}
		if t.gen != nil {
			t.gen.OnPeriodicEmit(t)
		}
	}
	return m.combine()
}

func (m *wmMultiplexer[T]) combine() (wm int64, advanced bool, idle, idleChanged bool) {
	min := int64(math.MaxInt64)
	anyActive := false
	for _, id := range m.order {
		t := m.splits[id]
		if t.idle {
			continue
		}
		anyActive = true
		if t.wm < min {
			min = t.wm
		}
	}
	allIdle := !anyActive // a subtask without splits never holds the watermark back
	if allIdle != m.idle {
		m.idle, idleChanged = allIdle, true
	}
	if anyActive && min > m.emitted && min != math.MinInt64 {
		m.emitted = min
		return min, true, m.idle, idleChanged
	}
	return m.emitted, false, m.idle, idleChanged
}
