package stream

import (
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// WindowContext is what a ProcessWindowFunction knows of the window it is
// called for. It is valid only during the call.
type WindowContext[K comparable, W AnyWindow] interface {
	// SideOutputContext lets the function emit to side outputs with Output.
	SideOutputContext
	// Window is the window being processed.
	Window() W
	CurrentWatermark() Timestamp
	CurrentProcessingTime() Timestamp
	// WindowState is state scoped to the key and this window: use it with
	// Value, List, MapOf, Reducing, Aggregating. Clear it in Clear. It is
	// not available with merging (session) windows: there, calling it fails
	// the job with ErrPerWindowStateMerging (as Flink does), whether or not
	// the function looks at the errors of the state's methods.
	WindowState() KeyedStateContext[K]
	// GlobalState is state scoped to the key only, shared by all windows.
	GlobalState() KeyedStateContext[K]
}

// ProcessWindowFunction computes a window's results from all its elements
// (Flink's ProcessWindowFunction). Each subtask gets its own instance of a
// function that is a pointer to a struct (see RuntimeContext). Combined with incremental aggregation
// (WindowReduceWith, WindowAggregateWith) it receives the single
// pre-aggregated value instead.
type ProcessWindowFunction[IN, OUT any, K comparable, W AnyWindow] interface {
	// Process emits the results of a window that fired. elements belong to
	// the operator: do not modify or keep them after the call. An error
	// fails the task, as from a keyed process function.
	Process(key K, ctx WindowContext[K, W], elements []IN, out Collector[OUT]) error
	// Clear is called when the window's state is dropped: clear the
	// per-window state (ctx.WindowState()) here. An error fails the task.
	Clear(ctx WindowContext[K, W]) error
}

// ProcessWindowFuncs builds a ProcessWindowFunction from closures; ClearFn
// may be nil.
type ProcessWindowFuncs[IN, OUT any, K comparable, W AnyWindow] struct {
	ProcessFn func(key K, ctx WindowContext[K, W], elements []IN, out Collector[OUT]) error
	ClearFn   func(ctx WindowContext[K, W]) error
}

// Process implements ProcessWindowFunction.
func (f ProcessWindowFuncs[IN, OUT, K, W]) Process(key K, ctx WindowContext[K, W], elements []IN, out Collector[OUT]) error {
	return f.ProcessFn(key, ctx, elements, out)
}

// Clear implements ProcessWindowFunction.
func (f ProcessWindowFuncs[IN, OUT, K, W]) Clear(ctx WindowContext[K, W]) error {
	if f.ClearFn != nil {
		return f.ClearFn(ctx)
	}
	return nil
}

// ProcessWindowFunc turns a plain function into a ProcessWindowFunction
// (without Clear); its types are inferred from fn.
func ProcessWindowFunc[IN, OUT any, K comparable, W AnyWindow](fn func(key K, ctx WindowContext[K, W], elements []IN, out Collector[OUT]) error) ProcessWindowFunction[IN, OUT, K, W] {
	return ProcessWindowFuncs[IN, OUT, K, W]{ProcessFn: fn}
}

// stateStore makes a keyedStates a KeyedStateContext.
type stateStore[K comparable] struct{ s *keyedStates[K] }

func (c stateStore[K]) keyedStates() *keyedStates[K] { return c.s }

// windowCtx implements WindowContext.
type windowCtx[K comparable, W AnyWindow] struct {
	env       *winEnv[K, W]
	w         W
	perWindow *keyedStates[K]
	// err is set when the function asked for per-window state of a
	// merging window: the call fails the task with it.
	err error
}

func (c *windowCtx[K, W]) Window() W { return c.w }
func (c *windowCtx[K, W]) CurrentWatermark() Timestamp {
	return Timestamp(c.env.timers.CurrentWatermark())
}
func (c *windowCtx[K, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(c.env.clock.NowMillis())
}
func (c *windowCtx[K, W]) GlobalState() KeyedStateContext[K] {
	return stateStore[K]{c.env.global}
}
func (c *windowCtx[K, W]) sides() *sideOutputs { return &c.env.sides }

func (c *windowCtx[K, W]) WindowState() KeyedStateContext[K] {
	if c.perWindow == nil {
		scope := &typed.WindowScope{NS: c.w}
		if c.env.merging {
			scope.Err = ErrPerWindowStateMerging
			c.err = ErrPerWindowStateMerging
		}
		c.perWindow = &keyedStates[K]{Keyed: c.env.keyed, Handles: map[any]any{}, Scope: scope}
	}
	return stateStore[K]{c.perWindow}
}

func (c *windowCtx[K, W]) reset(w W) { c.w, c.perWindow, c.err = w, nil, nil }

// settle returns the first of a window function call's error, the
// per-window state misuse and the sticky errors of its outputs.
func (c *windowCtx[K, W]) settle(err error) error {
	if err == nil {
		err = c.err
	}
	c.err = nil
	if serr := c.env.sides.TakeErr(); err == nil {
		err = serr
	}
	return err
}

// Window contents.

// mergeInto folds the values of sources into target as Flink merges state
// namespaces: the sources in order, then the result into the target's.
func mergeInto[K comparable, W AnyWindow, V any](t *state.ValueTable[K, W, V], target W, sources []W, fn func(a, b V) V) error {
	var acc V
	have := false
	for _, s := range sources {
		v, ok, err := t.Get(s)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := t.Delete(s); err != nil {
			return err
		}
		if have {
			acc = fn(acc, v)
		} else {
			acc, have = v, true
		}
	}
	if !have {
		return nil
	}
	cur, ok, err := t.Get(target)
	if err != nil {
		return err
	}
	if ok {
		acc = fn(cur, acc)
	}
	return t.Put(target, acc)
}

// reducingContents keeps the reduction of a window's records.
type reducingContents[T any, K comparable, W AnyWindow] struct {
	t  *state.ValueTable[K, W, T]
	fn func(a, b T) T
}

func (c *reducingContents[T, K, W]) add(ns W, v T, _ int64) (bool, error) {
	cur, ok, err := c.t.Get(ns)
	if err != nil {
		return false, err
	}
	if ok {
		v = c.fn(cur, v)
	}
	return ok, c.t.Put(ns, v)
}

func (c *reducingContents[T, K, W]) get(ns W) (T, bool, error) { return c.t.Get(ns) }
func (c *reducingContents[T, K, W]) clear(ns W) error          { return c.t.Delete(ns) }
func (c *reducingContents[T, K, W]) merge(target W, sources []W) error {
	return mergeInto(c.t, target, sources, c.fn)
}

// aggContents keeps the accumulator of a window's records.
type aggContents[T any, K comparable, W AnyWindow, ACC, OUT any] struct {
	t   *state.ValueTable[K, W, ACC]
	agg AggregateFunction[T, ACC, OUT]
}

func (c *aggContents[T, K, W, ACC, OUT]) add(ns W, v T, _ int64) (bool, error) {
	acc, ok, err := c.t.Get(ns)
	if err != nil {
		return false, err
	}
	if !ok {
		acc = c.agg.CreateAccumulator()
	}
	return ok, c.t.Put(ns, c.agg.Add(v, acc))
}

func (c *aggContents[T, K, W, ACC, OUT]) get(ns W) (ACC, bool, error) { return c.t.Get(ns) }
func (c *aggContents[T, K, W, ACC, OUT]) clear(ns W) error            { return c.t.Delete(ns) }
func (c *aggContents[T, K, W, ACC, OUT]) merge(target W, sources []W) error {
	return mergeInto(c.t, target, sources, c.agg.Merge)
}

// listContents keeps all records of a window.
type listContents[T any, K comparable, W AnyWindow] struct {
	t *state.ValueTable[K, W, []T]
}

func (c *listContents[T, K, W]) add(ns W, v T, _ int64) (bool, error) {
	cur, ok, err := c.t.Get(ns)
	if err != nil {
		return false, err
	}
	return ok, c.t.Put(ns, append(cur, v))
}

func (c *listContents[T, K, W]) get(ns W) ([]T, bool, error) { return c.t.Get(ns) }
func (c *listContents[T, K, W]) clear(ns W) error            { return c.t.Delete(ns) }
func (c *listContents[T, K, W]) merge(target W, sources []W) error {
	return mergeInto(c.t, target, sources, func(a, b []T) []T { return append(a, b...) })
}

// tsListContents keeps all records of a window with their timestamps
// (evicting windows).
type tsListContents[T any, K comparable, W AnyWindow] struct {
	t *state.ValueTable[K, W, []tsValue[T]]
}

func (c *tsListContents[T, K, W]) add(ns W, v T, ts int64) (bool, error) {
	cur, ok, err := c.t.Get(ns)
	if err != nil {
		return false, err
	}
	return ok, c.t.Put(ns, append(cur, tsValue[T]{v: v, ts: ts}))
}

func (c *tsListContents[T, K, W]) get(ns W) ([]tsValue[T], bool, error) { return c.t.Get(ns) }
func (c *tsListContents[T, K, W]) clear(ns W) error                     { return c.t.Delete(ns) }
func (c *tsListContents[T, K, W]) merge(target W, sources []W) error {
	return mergeInto(c.t, target, sources, func(a, b []tsValue[T]) []tsValue[T] { return append(a, b...) })
}

func (c *tsListContents[T, K, W]) put(ns W, elems []tsValue[T]) error {
	if len(elems) == 0 {
		return c.t.Delete(ns)
	}
	return c.t.Put(ns, elems)
}

// Window functions.

// emitValue emits a window's reduced value (Reduce).
type emitValue[K comparable, W AnyWindow, T any] struct{ out task.Output[T] }

func (e *emitValue[K, W, T]) process(_ K, w, _ W, acc T) error {
	return e.out.Collect(acc, int64(w.MaxTimestamp()))
}
func (e *emitValue[K, W, T]) clear(K, W) error { return nil }

// emitAgg emits a window's aggregate result (Aggregate).
type emitAgg[K comparable, W AnyWindow, T, ACC, OUT any] struct {
	agg AggregateFunction[T, ACC, OUT]
	out task.Output[OUT]
}

func (e *emitAgg[K, W, T, ACC, OUT]) process(_ K, w, _ W, acc ACC) error {
	return e.out.Collect(e.agg.Result(acc), int64(w.MaxTimestamp()))
}
func (e *emitAgg[K, W, T, ACC, OUT]) clear(K, W) error { return nil }

// processList runs a ProcessWindowFunction over a window's elements.
type processList[IN, OUT any, K comparable, W AnyWindow] struct {
	pf  ProcessWindowFunction[IN, OUT, K, W]
	env *winEnv[K, W]
	ctx windowCtx[K, W]
	out collector[OUT]
}

func newProcessList[IN, OUT any, K comparable, W AnyWindow](pf ProcessWindowFunction[IN, OUT, K, W], env *winEnv[K, W], out task.Output[OUT]) *processList[IN, OUT, K, W] {
	return &processList[IN, OUT, K, W]{pf: perSubtask(pf), env: env, ctx: windowCtx[K, W]{env: env}, out: collector[OUT]{Out: out}}
}

func (p *processList[IN, OUT, K, W]) process(key K, w, _ W, elems []IN) error {
	p.ctx.reset(w)
	ts := w.MaxTimestamp()
	p.out.Ts, p.env.sides.Ts = int64(ts), int64(ts)
	err := p.pf.Process(key, &p.ctx, elems, &p.out)
	if cerr := p.out.TakeErr(); err == nil {
		err = cerr
	}
	return p.ctx.settle(err)
}

func (p *processList[IN, OUT, K, W]) clear(_ K, w W) error {
	p.ctx.reset(w)
	p.env.sides.Ts = int64(w.MaxTimestamp())
	return p.ctx.settle(p.pf.Clear(&p.ctx))
}

// processSingle runs a ProcessWindowFunction over a pre-reduced value.
type processSingle[IN, OUT any, K comparable, W AnyWindow] struct {
	list *processList[IN, OUT, K, W]
	one  [1]IN
}

func (p *processSingle[IN, OUT, K, W]) process(key K, w, stateW W, acc IN) error {
	p.one[0] = acc
	err := p.list.process(key, w, stateW, p.one[:])
	clear(p.one[:])
	return err
}

func (p *processSingle[IN, OUT, K, W]) clear(key K, w W) error { return p.list.clear(key, w) }

// processAgg runs a ProcessWindowFunction over an aggregate's result.
type processAgg[T, ACC, R, OUT any, K comparable, W AnyWindow] struct {
	agg    AggregateFunction[T, ACC, R]
	single processSingle[R, OUT, K, W]
}

func (p *processAgg[T, ACC, R, OUT, K, W]) process(key K, w, stateW W, acc ACC) error {
	return p.single.process(key, w, stateW, p.agg.Result(acc))
}

func (p *processAgg[T, ACC, R, OUT, K, W]) clear(key K, w W) error { return p.single.clear(key, w) }

// reduceAll reduces an evicting window's kept elements, then hands the
// result on (an empty window emits nothing).
type reduceAll[K comparable, W AnyWindow, T any] struct {
	fn   func(a, b T) T
	next windowFn[K, W, T]
}

func (r *reduceAll[K, W, T]) process(key K, w, stateW W, vals []T) error {
	if len(vals) == 0 {
		return nil
	}
	acc := vals[0]
	for _, v := range vals[1:] {
		acc = r.fn(acc, v)
	}
	return r.next.process(key, w, stateW, acc)
}

func (r *reduceAll[K, W, T]) clear(key K, w W) error { return r.next.clear(key, w) }

// aggregateAll aggregates an evicting window's kept elements.
type aggregateAll[K comparable, W AnyWindow, T, ACC, OUT any] struct {
	agg  AggregateFunction[T, ACC, OUT]
	next windowFn[K, W, ACC]
}

func (a *aggregateAll[K, W, T, ACC, OUT]) process(key K, w, stateW W, vals []T) error {
	acc := a.agg.CreateAccumulator()
	for _, v := range vals {
		acc = a.agg.Add(v, acc)
	}
	return a.next.process(key, w, stateW, acc)
}

func (a *aggregateAll[K, W, T, ACC, OUT]) clear(key K, w W) error { return a.next.clear(key, w) }

// evicting runs the evictor around the window function of an evicting
// window and keeps what the evictor kept.
type evicting[T any, K comparable, W AnyWindow] struct {
	evictor  Evictor
	contents *tsListContents[T, K, W]
	inner    windowFn[K, W, []T]
	ev       evictable[T]
	ctx      evictorCtx[K, W]
	vals     []T
}

func (e *evicting[T, K, W]) process(key K, w, stateW W, elems []tsValue[T]) error {
	e.ctx.w = w
	e.ev.reset(elems)
	e.evictor.EvictBefore(&e.ev, &e.ctx)
	e.ev.compact()
	e.vals = e.vals[:0]
	for _, x := range e.ev.elems {
		e.vals = append(e.vals, x.v)
	}
	err := e.inner.process(key, w, stateW, e.vals)
	clear(e.vals)
	if err != nil {
		return err
	}
	e.evictor.EvictAfter(&e.ev, &e.ctx)
	e.ev.compact()
	kept := e.ev.elems
	e.ev.elems = nil
	return e.contents.put(stateW, kept)
}

func (e *evicting[T, K, W]) clear(key K, w W) error { return e.inner.clear(key, w) }

type evictorCtx[K comparable, W AnyWindow] struct {
	env *winEnv[K, W]
	w   W
}

func (c *evictorCtx[K, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(c.env.clock.NowMillis())
}
func (c *evictorCtx[K, W]) CurrentWatermark() Timestamp {
	return Timestamp(c.env.timers.CurrentWatermark())
}
func (c *evictorCtx[K, W]) WindowMaxTimestamp() Timestamp { return c.w.MaxTimestamp() }
