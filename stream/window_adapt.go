package stream

import (
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/typed"
	"github.com/sluice/sluice/internal/typed/windowing"
)

// The adapters of a window operator subtask: the user's assigner, trigger
// and evictor called with stream's contexts, which wrap the operator's
// (internal/typed/windowing). One of each is made per subtask when it
// starts, never per record.

// windowFns makes the callbacks of one subtask's window operator.
func windowFns[T any, K comparable, W AnyWindow](assigner WindowAssigner[W], trigger Trigger, evictor Evictor) func(env *typed.Env) windowing.Fns[T, K, W, Timestamp] {
	elemAssigner, _ := assigner.(ElementWindowAssigner[T, W])
	elemTrigger, _ := trigger.(ElementTrigger[T])
	return func(env *typed.Env) windowing.Fns[T, K, W, Timestamp] {
		fns := windowing.Fns[T, K, W, Timestamp]{
			Assigner: &assignerAdapter[T, W]{a: assigner, elem: elemAssigner, clock: env.Clock},
			Trigger:  &triggerAdapter[T, K, W]{t: trigger, elem: elemTrigger},
		}
		if _, builtin := trigger.(eventTimeTrigger); builtin {
			// The default of event-time windows, without an adapter.
			fns.Trigger = windowing.EventTimeTrigger[T, K, W, Timestamp]()
		}
		if evictor != nil {
			fns.Evictor = &evictorAdapter[T, K, W]{ev: evictor}
		}
		return fns
	}
}

// assignerAdapter is a WindowAssigner as the operator calls it, and its
// WindowAssignerContext.
type assignerAdapter[T any, W AnyWindow] struct {
	a WindowAssigner[W]
	// elem is set when the assigner needs the record.
	elem  ElementWindowAssigner[T, W]
	clock clock.Clock
}

// CurrentProcessingTime implements WindowAssignerContext.
func (a *assignerAdapter[T, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(a.clock.NowMillis())
}

func (a *assignerAdapter[T, W]) Assign(v T, ts int64, dst []W) ([]W, error) {
	if a.elem != nil {
		return a.elem.AssignElementWindows(v, Timestamp(ts), a, dst)
	}
	return a.a.AssignWindows(Timestamp(ts), a, dst)
}

// triggerAdapter is a Trigger as the operator calls it.
type triggerAdapter[T any, K comparable, W AnyWindow] struct {
	t Trigger
	// elem is set when the trigger looks at the records.
	elem ElementTrigger[T]
	ctx  trigCtx[K, W]
}

func (a *triggerAdapter[T, K, W]) OnElement(v T, ts int64, c *windowing.TriggerCtx[K, W, Timestamp]) windowing.TriggerResult {
	a.ctx.c = c
	if a.elem != nil {
		return windowing.TriggerResult(a.elem.OnElementValue(v, Timestamp(ts), &a.ctx))
	}
	return windowing.TriggerResult(a.t.OnElement(Timestamp(ts), &a.ctx))
}

func (a *triggerAdapter[T, K, W]) OnEventTime(t int64, c *windowing.TriggerCtx[K, W, Timestamp]) windowing.TriggerResult {
	a.ctx.c = c
	return windowing.TriggerResult(a.t.OnEventTime(Timestamp(t), &a.ctx))
}

func (a *triggerAdapter[T, K, W]) OnProcessingTime(t int64, c *windowing.TriggerCtx[K, W, Timestamp]) windowing.TriggerResult {
	a.ctx.c = c
	return windowing.TriggerResult(a.t.OnProcessingTime(Timestamp(t), &a.ctx))
}

func (a *triggerAdapter[T, K, W]) OnMerge(c *windowing.TriggerCtx[K, W, Timestamp]) {
	a.ctx.c = c
	a.t.OnMerge(&a.ctx)
}

func (a *triggerAdapter[T, K, W]) Clear(c *windowing.TriggerCtx[K, W, Timestamp]) {
	a.ctx.c = c
	a.t.Clear(&a.ctx)
}

// trigCtx is the TriggerContext of a window operator subtask: the
// operator's trigger context, in Timestamps.
type trigCtx[K comparable, W AnyWindow] struct {
	c *windowing.TriggerCtx[K, W, Timestamp]
}

func (c *trigCtx[K, W]) WindowMaxTimestamp() Timestamp { return c.c.Window().MaxTimestamp() }
func (c *trigCtx[K, W]) CurrentWatermark() Timestamp   { return Timestamp(c.c.CurrentWatermark()) }
func (c *trigCtx[K, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(c.c.CurrentProcessingTime())
}
func (c *trigCtx[K, W]) RegisterEventTimeTimer(t Timestamp) {
	c.c.RegisterEventTimeTimer(int64(t))
}
func (c *trigCtx[K, W]) DeleteEventTimeTimer(t Timestamp) { c.c.DeleteEventTimeTimer(int64(t)) }
func (c *trigCtx[K, W]) RegisterProcessingTimeTimer(t Timestamp) {
	c.c.RegisterProcessingTimeTimer(int64(t))
}
func (c *trigCtx[K, W]) DeleteProcessingTimeTimer(t Timestamp) {
	c.c.DeleteProcessingTimeTimer(int64(t))
}
func (c *trigCtx[K, W]) host() triggerHost    { return c }
func (c *trigCtx[K, W]) currentWindow() W     { return c.c.Window() }
func (c *trigCtx[K, W]) handles() map[any]any { return c.c.Handles() }
func (c *trigCtx[K, W]) countStore() trigStore {
	return c.c.CountStore()
}
func (c *trigCtx[K, W]) store(name string, ttl StateTTL) trigStore {
	return c.c.Store(name, ttl.internal())
}

// evictorAdapter is an Evictor as the operator calls it.
type evictorAdapter[T any, K comparable, W AnyWindow] struct {
	ev    Evictor
	elems evictable[T]
	ctx   evictorCtx[K, W]
}

func (a *evictorAdapter[T, K, W]) EvictBefore(e *windowing.Elements[T], c *windowing.EvictorCtx[K, W, Timestamp]) {
	a.elems.e, a.ctx.c = e, c
	a.ev.EvictBefore(&a.elems, &a.ctx)
}

func (a *evictorAdapter[T, K, W]) EvictAfter(e *windowing.Elements[T], c *windowing.EvictorCtx[K, W, Timestamp]) {
	a.elems.e, a.ctx.c = e, c
	a.ev.EvictAfter(&a.elems, &a.ctx)
}

// evictorCtx is the EvictorContext of an evicting window: the operator's,
// in Timestamps.
type evictorCtx[K comparable, W AnyWindow] struct {
	c *windowing.EvictorCtx[K, W, Timestamp]
}

func (c *evictorCtx[K, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(c.c.CurrentProcessingTime())
}
func (c *evictorCtx[K, W]) CurrentWatermark() Timestamp   { return Timestamp(c.c.CurrentWatermark()) }
func (c *evictorCtx[K, W]) WindowMaxTimestamp() Timestamp { return Timestamp(c.c.WindowMaxTimestamp()) }
