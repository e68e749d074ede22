package stream

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sluice/sluice/internal/runtime/window"
)

// TimeWindow is the half-open interval [Start, End) of event or processing
// time. MaxTimestamp is End-1.
type TimeWindow struct {
	Start Timestamp
	End   Timestamp
}

// MaxTimestamp is the largest timestamp that belongs to the window (End-1).
func (w TimeWindow) MaxTimestamp() Timestamp { return w.End - 1 }

func (w TimeWindow) String() string {
	return fmt.Sprintf("TimeWindow{start=%d, end=%d}", w.Start, w.End)
}

// timeWindowOf converts the engine's window.
func timeWindowOf(w window.TimeWindow) TimeWindow {
	return TimeWindow{Start: Timestamp(w.Start), End: Timestamp(w.End)}
}

// intersects reports whether w overlaps o or touches it: such windows merge.
func (w TimeWindow) intersects(o TimeWindow) bool { return w.Start <= o.End && w.End >= o.Start }

// cover is the smallest window that contains both w and o.
func (w TimeWindow) cover(o TimeWindow) TimeWindow {
	return TimeWindow{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// slidingWindows appends to dst the sliding windows that contain ts, the
// latest first, as Flink lists them (the engine's window.Sliding).
func slidingWindows(dst []TimeWindow, ts, size, slide, offset int64) []TimeWindow {
	last := window.StartWithOffset(ts, offset, slide)
	for start := last; start > ts-size; start -= slide {
		dst = append(dst, TimeWindow{Start: Timestamp(start), End: Timestamp(start + size)})
	}
	return dst
}

// mergeTimeWindows is the engine's window.MergeTimeWindows for TimeWindow:
// it calls merge once for every group of two or more distinct windows that
// intersect (directly or through others of the group), with the members
// and the window covering them, in order of start. windows is sorted and
// compacted in place; members is valid only during the call.
func mergeTimeWindows(windows []TimeWindow, merge func(members []TimeWindow, result TimeWindow)) {
	slices.SortStableFunc(windows, func(a, b TimeWindow) int { return cmp.Compare(a.Start, b.Start) })
	for i := 0; i < len(windows); {
		cover := windows[i]
		j := i + 1
		for j < len(windows) && cover.intersects(windows[j]) {
			cover = cover.cover(windows[j])
			j++
		}
		// The distinct windows of the group, in order, at its front.
		g, n := windows[i:j], 0
	outer:
		for _, w := range g {
			for _, seen := range g[:n] {
				if seen == w {
					continue outer
				}
			}
			g[n] = w
			n++
		}
		if n > 1 {
			merge(g[:n], cover)
		}
		i = j
	}
}

// GlobalWindow is the single window that holds every element of a key
// (GlobalWindows). Its MaxTimestamp is the end of time.
type GlobalWindow struct{}

// MaxTimestamp is the end of time.
func (GlobalWindow) MaxTimestamp() Timestamp { return MaxWatermark }

func (GlobalWindow) String() string { return "GlobalWindow" }

// AnyWindow is the constraint on window types: TimeWindow, GlobalWindow, or
// a comparable window type of your own.
type AnyWindow interface {
	comparable
	// MaxTimestamp is the largest timestamp that belongs to the window;
	// window results carry it as their timestamp.
	MaxTimestamp() Timestamp
}

// WindowAssignerContext is what an assigner may ask the window operator.
type WindowAssignerContext interface {
	// CurrentProcessingTime is the operator's processing time.
	CurrentProcessingTime() Timestamp
}

// WindowAssigner assigns every record to zero or more windows.
type WindowAssigner[W AnyWindow] interface {
	// AssignWindows appends the windows of a record with event timestamp
	// ts (NoTimestamp if none) to dst and returns the extended slice.
	AssignWindows(ts Timestamp, ctx WindowAssignerContext, dst []W) ([]W, error)
	// DefaultTrigger is the trigger used unless WindowedStream.Trigger sets one.
	DefaultTrigger() Trigger
	// IsEventTime says whether the windows are in event time (they then
	// fire on watermarks, have allowed lateness, and need a watermark
	// strategy upstream).
	IsEventTime() bool
}

// MergingWindowAssigner is an assigner whose windows merge (sessions).
type MergingWindowAssigner[W AnyWindow] interface {
	WindowAssigner[W]
	// MergeWindows calls merge once for every group of two or more of
	// windows that must become one, with the group and the resulting
	// window. It may reorder windows; members is valid only during the call.
	MergeWindows(windows []W, merge func(members []W, result W))
}

// ElementWindowAssigner is an assigner that looks at the record itself
// (sessions with a dynamic gap). The window operator calls
// AssignElementWindows instead of AssignWindows.
type ElementWindowAssigner[T any, W AnyWindow] interface {
	WindowAssigner[W]
	AssignElementWindows(v T, ts Timestamp, ctx WindowAssignerContext, dst []W) ([]W, error)
}

// assignerChecker is implemented by the built-in assigners, which report
// bad parameters when the window is declared.
type assignerChecker interface{ check() error }

// elementAssigner marks assigners that need the record; elemType names the
// record type they expect.
type elementAssigner interface{ elemType() string }

func noTimestampErr(assigner string) error {
	return fmt.Errorf("%w: %s assigns windows by event time; set a watermark strategy with a timestamp assigner on the source (or use a processing-time assigner)", ErrNoTimestamp, assigner)
}

func optionalOffset(name string, offset []time.Duration) (int64, error) {
	switch len(offset) {
	case 0:
		return 0, nil
	case 1:
		return offset[0].Milliseconds(), nil
	default:
		return 0, fmt.Errorf("%s takes at most one offset, got %d", name, len(offset))
	}
}

// tumbling assigns each timestamp to the one window of size containing it.
type tumbling struct {
	size, offset int64
	eventTime    bool
	err          error
}

// TumblingEventTimeWindows puts records into consecutive, non-overlapping
// windows of the given size by event time. The optional offset shifts the
// window boundaries (for instance -8h for days in UTC+8): windows start at
// offset + k*size.
func TumblingEventTimeWindows(size time.Duration, offset ...time.Duration) WindowAssigner[TimeWindow] {
	return newTumbling("TumblingEventTimeWindows", size, offset, true)
}

// TumblingProcessingTimeWindows is TumblingEventTimeWindows by the
// operator's processing time.
func TumblingProcessingTimeWindows(size time.Duration, offset ...time.Duration) WindowAssigner[TimeWindow] {
	return newTumbling("TumblingProcessingTimeWindows", size, offset, false)
}

func newTumbling(name string, size time.Duration, offset []time.Duration, eventTime bool) *tumbling {
	t := &tumbling{size: size.Milliseconds(), eventTime: eventTime}
	off, err := optionalOffset(name, offset)
	t.offset, t.err = off, err
	if err == nil && (t.size <= 0 || abs(t.offset) >= t.size) {
		t.err = fmt.Errorf("%s(size %v, offset %v): the parameters must satisfy 0 < size (in whole milliseconds) and abs(offset) < size", name, size, time.Duration(off)*time.Millisecond)
	}
	return t
}

func (t *tumbling) check() error { return t.err }

func (t *tumbling) AssignWindows(ts Timestamp, ctx WindowAssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !t.eventTime {
		return append(dst, timeWindowOf(window.Tumbling(int64(ctx.CurrentProcessingTime()), t.size, t.offset))), nil
	}
	if ts == NoTimestamp {
		return dst, noTimestampErr(t.String())
	}
	return append(dst, timeWindowOf(window.Tumbling(int64(ts), t.size, t.offset))), nil
}

func (t *tumbling) DefaultTrigger() Trigger {
	if t.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

func (t *tumbling) IsEventTime() bool { return t.eventTime }

func (t *tumbling) String() string {
	name := "TumblingProcessingTimeWindows"
	if t.eventTime {
		name = "TumblingEventTimeWindows"
	}
	if t.offset != 0 {
		return fmt.Sprintf("%s(%d, %d)", name, t.size, t.offset)
	}
	return fmt.Sprintf("%s(%d)", name, t.size)
}

// sliding assigns each timestamp to the size/slide windows containing it.
type sliding struct {
	size, slide, offset int64
	eventTime           bool
	err                 error
}

// SlidingEventTimeWindows puts records into overlapping windows of the
// given size that start every slide, by event time; a record belongs to
// about size/slide windows. The optional offset shifts the boundaries.
func SlidingEventTimeWindows(size, slide time.Duration, offset ...time.Duration) WindowAssigner[TimeWindow] {
	return newSliding("SlidingEventTimeWindows", size, slide, offset, true)
}

// SlidingProcessingTimeWindows is SlidingEventTimeWindows by the
// operator's processing time.
func SlidingProcessingTimeWindows(size, slide time.Duration, offset ...time.Duration) WindowAssigner[TimeWindow] {
	return newSliding("SlidingProcessingTimeWindows", size, slide, offset, false)
}

func newSliding(name string, size, slide time.Duration, offset []time.Duration, eventTime bool) *sliding {
	s := &sliding{size: size.Milliseconds(), slide: slide.Milliseconds(), eventTime: eventTime}
	off, err := optionalOffset(name, offset)
	s.offset, s.err = off, err
	if err == nil && (abs(s.offset) >= s.slide || s.size <= 0) {
		s.err = fmt.Errorf("%s(size %v, slide %v, offset %v): the parameters must satisfy abs(offset) < slide and size > 0 (in whole milliseconds)", name, size, slide, time.Duration(off)*time.Millisecond)
	}
	return s
}

func (s *sliding) check() error { return s.err }

func (s *sliding) AssignWindows(ts Timestamp, ctx WindowAssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !s.eventTime {
		return slidingWindows(dst, int64(ctx.CurrentProcessingTime()), s.size, s.slide, s.offset), nil
	}
	if ts == NoTimestamp {
		return dst, noTimestampErr(s.String())
	}
	return slidingWindows(dst, int64(ts), s.size, s.slide, s.offset), nil
}

func (s *sliding) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

func (s *sliding) IsEventTime() bool { return s.eventTime }

func (s *sliding) String() string {
	name := "SlidingProcessingTimeWindows"
	if s.eventTime {
		name = "SlidingEventTimeWindows"
	}
	if s.offset != 0 {
		return fmt.Sprintf("%s(%d, %d, %d)", name, s.size, s.slide, s.offset)
	}
	return fmt.Sprintf("%s(%d, %d)", name, s.size, s.slide)
}

// session opens a window [ts, ts+gap) per record; overlapping or touching
// windows merge into one session.
type session struct {
	gap       int64
	eventTime bool
	err       error
}

// EventTimeSessionWindows groups the records of a key into sessions: a
// session ends when no record arrives for gap of event time.
func EventTimeSessionWindows(gap time.Duration) WindowAssigner[TimeWindow] {
	return newSession("EventTimeSessionWindows", gap, true)
}

// ProcessingTimeSessionWindows is EventTimeSessionWindows by processing time.
func ProcessingTimeSessionWindows(gap time.Duration) WindowAssigner[TimeWindow] {
	return newSession("ProcessingTimeSessionWindows", gap, false)
}

func newSession(name string, gap time.Duration, eventTime bool) *session {
	s := &session{gap: gap.Milliseconds(), eventTime: eventTime}
	if s.gap <= 0 {
		s.err = fmt.Errorf("%s(gap %v): the gap must be at least one millisecond", name, gap)
	}
	return s
}

func (s *session) check() error { return s.err }

func (s *session) AssignWindows(ts Timestamp, ctx WindowAssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	if !s.eventTime {
		return append(dst, timeWindowOf(window.Session(int64(ctx.CurrentProcessingTime()), s.gap))), nil
	}
	if ts == NoTimestamp {
		return dst, noTimestampErr(s.String())
	}
	return append(dst, timeWindowOf(window.Session(int64(ts), s.gap))), nil
}

func (s *session) MergeWindows(windows []TimeWindow, merge func(members []TimeWindow, result TimeWindow)) {
	mergeTimeWindows(windows, merge)
}

func (s *session) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

func (s *session) IsEventTime() bool { return s.eventTime }

func (s *session) String() string {
	if s.eventTime {
		return fmt.Sprintf("EventTimeSessionWindows(%d)", s.gap)
	}
	return fmt.Sprintf("ProcessingTimeSessionWindows(%d)", s.gap)
}

// dynamicSession is a session assigner whose gap depends on the record.
type dynamicSession[T any] struct {
	gap       func(T) time.Duration
	eventTime bool
}

// EventTimeSessionWindowsWithDynamicGap is EventTimeSessionWindows with a
// gap computed per record (Flink's EventTimeSessionWindows.withDynamicGap).
// A gap below one millisecond fails the job.
func EventTimeSessionWindowsWithDynamicGap[T any](gap func(v T) time.Duration) WindowAssigner[TimeWindow] {
	return &dynamicSession[T]{gap: gap, eventTime: true}
}

// ProcessingTimeSessionWindowsWithDynamicGap is ProcessingTimeSessionWindows
// with a gap computed per record.
func ProcessingTimeSessionWindowsWithDynamicGap[T any](gap func(v T) time.Duration) WindowAssigner[TimeWindow] {
	return &dynamicSession[T]{gap: gap}
}

func (s *dynamicSession[T]) check() error {
	if s.gap == nil {
		return fmt.Errorf("%s: the gap function is nil", s)
	}
	return nil
}

func (s *dynamicSession[T]) elemType() string { return fmt.Sprintf("%T", *new(T)) }

func (s *dynamicSession[T]) AssignWindows(Timestamp, WindowAssignerContext, []TimeWindow) ([]TimeWindow, error) {
	return nil, fmt.Errorf("%s needs the record to assign windows", s)
}

func (s *dynamicSession[T]) AssignElementWindows(v T, ts Timestamp, ctx WindowAssignerContext, dst []TimeWindow) ([]TimeWindow, error) {
	gap := s.gap(v).Milliseconds()
	if gap <= 0 {
		return dst, fmt.Errorf("%s: the dynamic session gap must be at least one millisecond, got %v for record %+v", s, s.gap(v), v)
	}
	if !s.eventTime {
		return append(dst, timeWindowOf(window.Session(int64(ctx.CurrentProcessingTime()), gap))), nil
	}
	if ts == NoTimestamp {
		return dst, noTimestampErr(s.String())
	}
	return append(dst, timeWindowOf(window.Session(int64(ts), gap))), nil
}

func (s *dynamicSession[T]) MergeWindows(windows []TimeWindow, merge func(members []TimeWindow, result TimeWindow)) {
	mergeTimeWindows(windows, merge)
}

func (s *dynamicSession[T]) DefaultTrigger() Trigger {
	if s.eventTime {
		return EventTimeTrigger()
	}
	return ProcessingTimeTrigger()
}

func (s *dynamicSession[T]) IsEventTime() bool { return s.eventTime }

func (s *dynamicSession[T]) String() string {
	if s.eventTime {
		return "DynamicEventTimeSessionWindows"
	}
	return "DynamicProcessingTimeSessionWindows"
}

// globalWindows puts every record into the one GlobalWindow.
type globalWindows struct{ endOfStream bool }

// GlobalWindows puts all records of a key into a single window that never
// ends: set a trigger (CountTrigger, ...) or nothing is ever emitted. See
// CountWindow.
func GlobalWindows() WindowAssigner[GlobalWindow] { return globalWindows{} }

// GlobalWindowsWithEndOfStream is GlobalWindows whose window fires once, at
// the end of the input (Flink's GlobalWindows.createWithEndOfStreamTrigger).
func GlobalWindowsWithEndOfStream() WindowAssigner[GlobalWindow] {
	return globalWindows{endOfStream: true}
}

func (globalWindows) AssignWindows(_ Timestamp, _ WindowAssignerContext, dst []GlobalWindow) ([]GlobalWindow, error) {
	return append(dst, GlobalWindow{}), nil
}

func (g globalWindows) DefaultTrigger() Trigger {
	if g.endOfStream {
		return EndOfStreamTrigger()
	}
	return NeverTrigger()
}
func (globalWindows) IsEventTime() bool { return false }
func (globalWindows) String() string    { return "GlobalWindows" }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
