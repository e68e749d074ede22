package stream

import (
	"fmt"
	"math"
	"time"

	"github.com/sluice/sluice/internal/typed/windowing"
)

// TriggerResult is what a trigger decides for a window.
type TriggerResult uint8

// Trigger results (Flink's TriggerResult).
const (
	// TriggerContinue does nothing.
	TriggerContinue TriggerResult = iota
	// TriggerFire emits the window's result and keeps its contents.
	TriggerFire
	// TriggerPurge drops the window's contents without emitting.
	TriggerPurge
	// TriggerFireAndPurge emits the window's result and drops its contents.
	TriggerFireAndPurge
)

// IsFire reports whether the window's result is emitted.
func (r TriggerResult) IsFire() bool { return r == TriggerFire || r == TriggerFireAndPurge }

// IsPurge reports whether the window's contents are dropped.
func (r TriggerResult) IsPurge() bool { return r == TriggerPurge || r == TriggerFireAndPurge }

// The results are the window operator's, converted (windowing.TriggerResult(r)).
var _ = [1]struct{}{}[TriggerContinue-TriggerResult(windowing.TriggerContinue)+TriggerFire-TriggerResult(windowing.TriggerFire)+
	TriggerPurge-TriggerResult(windowing.TriggerPurge)+TriggerFireAndPurge-TriggerResult(windowing.TriggerFireAndPurge)]

func (r TriggerResult) String() string {
	switch r {
	case TriggerContinue:
		return "CONTINUE"
	case TriggerFire:
		return "FIRE"
	case TriggerPurge:
		return "PURGE"
	case TriggerFireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return fmt.Sprintf("TriggerResult(%d)", uint8(r))
}

// Trigger decides when a window's result is emitted (Flink's Trigger). The
// window operator calls it for every record added to a window and for the
// timers it registered; the window concerned is ctx's.
//
// One Trigger value serves every subtask of the operator at once: keep
// state in trigger state (TriggerValue, TriggerReducing), never in the
// Trigger itself.
type Trigger interface {
	// OnElement is called for every record added to the window.
	OnElement(ts Timestamp, ctx TriggerContext) TriggerResult
	// OnEventTime is called when an event-time timer set through ctx fires.
	OnEventTime(time Timestamp, ctx TriggerContext) TriggerResult
	// OnProcessingTime is called when a processing-time timer fires.
	OnProcessingTime(time Timestamp, ctx TriggerContext) TriggerResult
	// CanMerge says whether the trigger supports merging windows (sessions).
	CanMerge() bool
	// OnMerge is called when windows merged into ctx's window: re-register
	// timers for it and merge trigger state (MergeTriggerState).
	OnMerge(ctx TriggerContext)
	// Clear drops the trigger's timers and state of ctx's window; it is
	// called when the window is dropped.
	Clear(ctx TriggerContext)
}

// ElementTrigger is a Trigger that looks at the records: the operator
// calls OnElementValue instead of OnElement. T must be the stream's type.
type ElementTrigger[T any] interface {
	Trigger
	OnElementValue(v T, ts Timestamp, ctx TriggerContext) TriggerResult
}

// TriggerContext gives a trigger its window, the operator's clocks, timers
// scoped to the window, and (through TriggerValue and friends) state
// scoped to the key and window.
type TriggerContext interface {
	// WindowMaxTimestamp is the window's largest timestamp.
	WindowMaxTimestamp() Timestamp
	CurrentWatermark() Timestamp
	CurrentProcessingTime() Timestamp
	RegisterEventTimeTimer(t Timestamp)
	DeleteEventTimeTimer(t Timestamp)
	RegisterProcessingTimeTimer(t Timestamp)
	DeleteProcessingTimeTimer(t Timestamp)

	host() triggerHost
}

// TriggerWindow returns the window ctx is about, as its concrete type.
func TriggerWindow[W AnyWindow](ctx TriggerContext) (W, bool) {
	if c, ok := ctx.(interface{ currentWindow() W }); ok {
		return c.currentWindow(), true
	}
	var zero W
	return zero, false
}

// triggerHost is the trigger-state side of the operator's trigger context.
type triggerHost interface {
	store(name string, ttl StateTTL) trigStore
	countStore() trigStore
	handles() map[any]any
}

// trigCell is one trigger-state value and trigStore a trigger state of the
// current key and window, kept by the window operator.
type (
	trigCell  = windowing.Cell
	trigStore = windowing.TriggerState
)

func triggerHandle[H any](ctx TriggerContext, desc any, create func(h triggerHost) H) H {
	h := ctx.host()
	hs := h.handles()
	if x, ok := hs[desc]; ok {
		return x.(H)
	}
	x := create(h)
	hs[desc] = x
	return x
}

// TriggerValue returns the trigger's value state d for ctx's key and window.
func TriggerValue[V any](ctx TriggerContext, d *ValueDescriptor[V]) ValueState[V] {
	return triggerHandle(ctx, d, func(h triggerHost) ValueState[V] {
		return windowing.NewTriggerValue[V](h.store(d.Name, d.TTL))
	})
}

// TriggerReducing returns the trigger's reducing state d for ctx's key and
// window.
func TriggerReducing[V any](ctx TriggerContext, d *ReducingDescriptor[V]) ReducingState[V] {
	return triggerHandle(ctx, d, func(h triggerHost) ReducingState[V] {
		return windowing.NewTriggerReducing(h.store(d.Name, d.TTL), d.Reduce)
	})
}

// MergeTriggerState merges the reducing state d of the windows that merged
// into ctx's window. Call it from OnMerge.
func MergeTriggerState[V any](ctx TriggerContext, d *ReducingDescriptor[V]) {
	windowing.MergeReducing(ctx.host().store(d.Name, d.TTL), d.Reduce)
}

// eventTimeTrigger fires when the watermark passes the end of the window.
type eventTimeTrigger struct{}

// EventTimeTrigger fires a window once the watermark passes its end, and
// again for every late record within the allowed lateness. It is the
// default trigger of event-time windows.
func EventTimeTrigger() Trigger { return eventTimeTrigger{} }

func (eventTimeTrigger) OnElement(_ Timestamp, ctx TriggerContext) TriggerResult {
	if ctx.WindowMaxTimestamp() <= ctx.CurrentWatermark() {
		// The watermark is past the window already: fire at once.
		return TriggerFire
	}
	ctx.RegisterEventTimeTimer(ctx.WindowMaxTimestamp())
	return TriggerContinue
}

func (eventTimeTrigger) OnEventTime(time Timestamp, ctx TriggerContext) TriggerResult {
	if time == ctx.WindowMaxTimestamp() {
		return TriggerFire
	}
	return TriggerContinue
}

func (eventTimeTrigger) OnProcessingTime(Timestamp, TriggerContext) TriggerResult {
	return TriggerContinue
}

func (eventTimeTrigger) CanMerge() bool { return true }

func (eventTimeTrigger) OnMerge(ctx TriggerContext) {
	// Only re-register the timer if the watermark has not passed the end
	// of the merged window yet; otherwise it would fire at once.
	if m := ctx.WindowMaxTimestamp(); m > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(m)
	}
}

func (eventTimeTrigger) Clear(ctx TriggerContext) { ctx.DeleteEventTimeTimer(ctx.WindowMaxTimestamp()) }
func (eventTimeTrigger) String() string           { return "EventTimeTrigger" }

// processingTimeTrigger fires when processing time passes the window's end.
type processingTimeTrigger struct{}

// ProcessingTimeTrigger fires a window once processing time passes its
// end. It is the default trigger of processing-time windows.
func ProcessingTimeTrigger() Trigger { return processingTimeTrigger{} }

func (processingTimeTrigger) OnElement(_ Timestamp, ctx TriggerContext) TriggerResult {
	ctx.RegisterProcessingTimeTimer(ctx.WindowMaxTimestamp())
	return TriggerContinue
}

func (processingTimeTrigger) OnEventTime(Timestamp, TriggerContext) TriggerResult {
	return TriggerContinue
}

func (processingTimeTrigger) OnProcessingTime(Timestamp, TriggerContext) TriggerResult {
	return TriggerFire
}

func (processingTimeTrigger) CanMerge() bool { return true }

func (processingTimeTrigger) OnMerge(ctx TriggerContext) {
	if m := ctx.WindowMaxTimestamp(); m > ctx.CurrentProcessingTime() {
		ctx.RegisterProcessingTimeTimer(m)
	}
}

func (processingTimeTrigger) Clear(ctx TriggerContext) {
	ctx.DeleteProcessingTimeTimer(ctx.WindowMaxTimestamp())
}
func (processingTimeTrigger) String() string { return "ProcessingTimeTrigger" }

// countTrigger fires every max records.
type countTrigger struct{ max int64 }

// CountTrigger fires a window every time it has received n more records
// (it does not purge: wrap it in PurgingTrigger for tumbling counts).
// n must be at least 1.
func CountTrigger(n int64) Trigger { return countTrigger{max: n} }

func (c countTrigger) check() error {
	if c.max < 1 {
		return fmt.Errorf("CountTrigger(%d): the count must be at least 1", c.max)
	}
	return nil
}

func (c countTrigger) OnElement(_ Timestamp, ctx TriggerContext) TriggerResult {
	st := ctx.host().countStore()
	cell, _ := st.Get()
	cell.N++
	if cell.N >= c.max {
		st.Delete()
		return TriggerFire
	}
	st.Put(cell)
	return TriggerContinue
}

func (countTrigger) OnEventTime(Timestamp, TriggerContext) TriggerResult      { return TriggerContinue }
func (countTrigger) OnProcessingTime(Timestamp, TriggerContext) TriggerResult { return TriggerContinue }
func (countTrigger) CanMerge() bool                                           { return true }

func (countTrigger) OnMerge(ctx TriggerContext) {
	ctx.host().countStore().Merge(func(a, b trigCell) trigCell { return trigCell{N: a.N + b.N} })
}

func (countTrigger) Clear(ctx TriggerContext) { ctx.host().countStore().Delete() }
func (c countTrigger) String() string         { return fmt.Sprintf("CountTrigger(%d)", c.max) }

// purgingTrigger turns the FIRE of the trigger it wraps into FIRE_AND_PURGE.
type purgingTrigger struct{ nested Trigger }

// PurgingTrigger makes every firing of t also drop the window's contents.
func PurgingTrigger(t Trigger) Trigger { return purgingTrigger{nested: t} }

func purge(r TriggerResult) TriggerResult {
	if r.IsFire() {
		return TriggerFireAndPurge
	}
	return r
}

func (p purgingTrigger) check() error {
	if p.nested == nil {
		return fmt.Errorf("PurgingTrigger: the nested trigger is nil")
	}
	if c, ok := p.nested.(interface{ check() error }); ok {
		return c.check()
	}
	return nil
}

func (p purgingTrigger) OnElement(ts Timestamp, ctx TriggerContext) TriggerResult {
	return purge(p.nested.OnElement(ts, ctx))
}

func (p purgingTrigger) OnEventTime(time Timestamp, ctx TriggerContext) TriggerResult {
	return purge(p.nested.OnEventTime(time, ctx))
}

func (p purgingTrigger) OnProcessingTime(time Timestamp, ctx TriggerContext) TriggerResult {
	return purge(p.nested.OnProcessingTime(time, ctx))
}

func (p purgingTrigger) CanMerge() bool             { return p.nested.CanMerge() }
func (p purgingTrigger) OnMerge(ctx TriggerContext) { p.nested.OnMerge(ctx) }
func (p purgingTrigger) Clear(ctx TriggerContext)   { p.nested.Clear(ctx) }
func (p purgingTrigger) String() string             { return "PurgingTrigger(" + describe(p.nested) + ")" }

// neverTrigger never fires (the default of GlobalWindows).
type neverTrigger struct{}

// NeverTrigger never fires; it is the default trigger of GlobalWindows.
func NeverTrigger() Trigger { return neverTrigger{} }

func (neverTrigger) OnElement(Timestamp, TriggerContext) TriggerResult        { return TriggerContinue }
func (neverTrigger) OnEventTime(Timestamp, TriggerContext) TriggerResult      { return TriggerContinue }
func (neverTrigger) OnProcessingTime(Timestamp, TriggerContext) TriggerResult { return TriggerContinue }
func (neverTrigger) CanMerge() bool                                           { return true }
func (neverTrigger) OnMerge(TriggerContext)                                   {}
func (neverTrigger) Clear(TriggerContext)                                     {}
func (neverTrigger) String() string                                           { return "NeverTrigger" }

// endOfStreamTrigger fires once, when event time ends (the end of a
// bounded input).
type endOfStreamTrigger struct{}

// EndOfStreamTrigger fires a window once, at the end of the input (when
// the final watermark arrives). With GlobalWindows it gives one result per
// key over all its records, as Flink's GlobalWindows.createWithEndOfStreamTrigger.
func EndOfStreamTrigger() Trigger { return endOfStreamTrigger{} }

func (endOfStreamTrigger) OnElement(_ Timestamp, ctx TriggerContext) TriggerResult {
	ctx.RegisterEventTimeTimer(MaxWatermark)
	return TriggerContinue
}

func (endOfStreamTrigger) OnEventTime(time Timestamp, _ TriggerContext) TriggerResult {
	if time == MaxWatermark {
		return TriggerFire
	}
	return TriggerContinue
}

func (endOfStreamTrigger) OnProcessingTime(Timestamp, TriggerContext) TriggerResult {
	return TriggerContinue
}
func (endOfStreamTrigger) CanMerge() bool             { return true }
func (endOfStreamTrigger) OnMerge(ctx TriggerContext) { ctx.RegisterEventTimeTimer(MaxWatermark) }
func (endOfStreamTrigger) Clear(ctx TriggerContext)   { ctx.DeleteEventTimeTimer(MaxWatermark) }
func (endOfStreamTrigger) String() string             { return "EndOfStreamTrigger" }

// describe names a trigger, assigner or evictor for plans and errors.
func describe(x any) string {
	if s, ok := x.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", x)
}

// Evictor removes elements from a window before and/or after the window
// function runs (Flink's Evictor). With an evictor the window keeps every
// element, and Reduce and Aggregate run over the kept ones when the
// window fires. Like a Trigger, one Evictor serves every subtask.
type Evictor interface {
	EvictBefore(elems EvictableElements, ctx EvictorContext)
	EvictAfter(elems EvictableElements, ctx EvictorContext)
}

// EvictableElements are a window's elements, in arrival order, as an
// evictor sees them.
type EvictableElements interface {
	Len() int
	// Timestamp is element i's event timestamp; ok is false if it has none.
	Timestamp(i int) (ts Timestamp, ok bool)
	// Evict removes element i once the evictor returns.
	Evict(i int)
}

// EvictableValue returns element i of elems as the stream's type T.
func EvictableValue[T any](elems EvictableElements, i int) (T, bool) {
	if e, ok := elems.(*evictable[T]); ok {
		return e.e.Value(i)
	}
	var zero T
	return zero, false
}

// EvictorContext gives an evictor the operator's clocks and the window.
type EvictorContext interface {
	CurrentProcessingTime() Timestamp
	CurrentWatermark() Timestamp
	WindowMaxTimestamp() Timestamp
}

// countEvictor keeps the last max elements.
type countEvictor struct {
	max   int64
	after bool
}

// CountEvictor keeps the last n elements of a window (evicting before the
// window function runs, or after with evictAfter true).
func CountEvictor(n int64, evictAfter ...bool) Evictor {
	return countEvictor{max: n, after: len(evictAfter) > 0 && evictAfter[0]}
}

func (c countEvictor) check() error {
	if c.max < 1 {
		return fmt.Errorf("CountEvictor(%d): the count must be at least 1", c.max)
	}
	return nil
}

func (c countEvictor) EvictBefore(e EvictableElements, _ EvictorContext) {
	if !c.after {
		c.evict(e)
	}
}

func (c countEvictor) EvictAfter(e EvictableElements, _ EvictorContext) {
	if c.after {
		c.evict(e)
	}
}

func (c countEvictor) evict(e EvictableElements) {
	n := int64(e.Len())
	for i := int64(0); i < n-c.max; i++ {
		e.Evict(int(i))
	}
}

func (c countEvictor) String() string { return fmt.Sprintf("CountEvictor(%d)", c.max) }

// timeEvictor keeps the elements within size of the newest one.
type timeEvictor struct {
	size  int64
	after bool
}

// TimeEvictor keeps the elements whose timestamp is within size of the
// window's newest element: those with ts > newest - size (evicting before
// the window function runs, or after with evictAfter true).
func TimeEvictor(size time.Duration, evictAfter ...bool) Evictor {
	return timeEvictor{size: size.Milliseconds(), after: len(evictAfter) > 0 && evictAfter[0]}
}

func (t timeEvictor) EvictBefore(e EvictableElements, _ EvictorContext) {
	if !t.after {
		t.evict(e)
	}
}

func (t timeEvictor) EvictAfter(e EvictableElements, _ EvictorContext) {
	if t.after {
		t.evict(e)
	}
}

func (t timeEvictor) evict(e EvictableElements) {
	if e.Len() == 0 {
		return
	}
	if _, ok := e.Timestamp(0); !ok {
		return
	}
	newest := int64(math.MinInt64)
	for i := 0; i < e.Len(); i++ {
		if ts, _ := e.Timestamp(i); int64(ts) > newest {
			newest = int64(ts)
		}
	}
	cutoff := newest - t.size
	for i := 0; i < e.Len(); i++ {
		if ts, _ := e.Timestamp(i); int64(ts) <= cutoff {
			e.Evict(i)
		}
	}
}

func (t timeEvictor) String() string { return fmt.Sprintf("TimeEvictor(%d)", t.size) }

// evictable is the EvictableElements of an evicting window: the window
// operator's elements, in Timestamps.
type evictable[T any] struct{ e *windowing.Elements[T] }

func (e *evictable[T]) Len() int    { return e.e.Len() }
func (e *evictable[T]) Evict(i int) { e.e.Evict(i) }

func (e *evictable[T]) Timestamp(i int) (Timestamp, bool) {
	ts, ok := e.e.Timestamp(i)
	return Timestamp(ts), ok
}
