package windowing

import (
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// Function is what a window operator computes when a window fires:
// Reduce, Aggregate, Process, ReduceProcess or AggregateProcess. It builds
// the operator of one subtask, for windows that keep their contents
// (incrementally, or as the list a process function sees) or for evicting
// windows, which keep every element with its timestamp.
type Function[T, OUT any, K comparable, W Window[TS], TS ~int64] struct {
	incremental func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator
	evicting    func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator
}

// Reduce combines each window's records with fn, incrementally, and emits
// the result with the window's MaxTimestamp.
func Reduce[T any, K comparable, W Window[TS], TS ~int64](fn func(a, b T) T) Function[T, T, K, W, TS] {
	return Function[T, T, K, W, TS]{
		incremental: func(p parts[T, K, W, TS], out task.Output[T]) task.Operator {
			return newOp(p, reducing[T, K, W](fn), func(*winEnv[K, W, TS], contents[T, W, T]) windowFn[K, W, T] {
				return &emitValue[K, W, TS, T]{out: out}
			})
		},
		evicting: func(p parts[T, K, W, TS], out task.Output[T]) task.Operator {
			return newEvictingOp(p, func(*winEnv[K, W, TS]) windowFn[K, W, []T] {
				return &reduceAll[K, W, T]{fn: fn, next: &emitValue[K, W, TS, T]{out: out}}
			})
		},
	}
}

// Aggregate aggregates each window's records with agg, incrementally
// (merging windows merge accumulators with agg.Merge), and emits agg's
// result.
func Aggregate[T any, K comparable, W Window[TS], TS ~int64, ACC, OUT any](agg typed.Aggregator[T, ACC, OUT]) Function[T, OUT, K, W, TS] {
	return Function[T, OUT, K, W, TS]{
		incremental: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newOp(p, aggregating[T, K, W](agg), func(*winEnv[K, W, TS], contents[T, W, ACC]) windowFn[K, W, ACC] {
				return &emitAgg[K, W, TS, T, ACC, OUT]{agg: agg, out: out}
			})
		},
		evicting: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newEvictingOp(p, func(*winEnv[K, W, TS]) windowFn[K, W, []T] {
				return &aggregateAll[K, W, T, ACC, OUT]{agg: agg, next: &emitAgg[K, W, TS, T, ACC, OUT]{agg: agg, out: out}}
			})
		},
	}
}

// Process calls a process window function with all records of each window
// that fires; fns makes the function of each subtask.
func Process[T, OUT any, K comparable, W Window[TS], TS ~int64](fns func() ProcessFns[T, OUT, K, W, TS]) Function[T, OUT, K, W, TS] {
	return Function[T, OUT, K, W, TS]{
		incremental: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newOp(p, listing[T, K, W](), func(env *winEnv[K, W, TS], _ contents[T, W, []T]) windowFn[K, W, []T] {
				return newProcessList(fns(), env, out)
			})
		},
		evicting: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newEvictingOp(p, func(env *winEnv[K, W, TS]) windowFn[K, W, []T] {
				return newProcessList(fns(), env, out)
			})
		},
	}
}

// ReduceProcess reduces each window's records incrementally with reduce
// and calls the process window function with the reduced value as its
// only element (Flink's reduce(reduceFunction, processWindowFunction)).
func ReduceProcess[T, OUT any, K comparable, W Window[TS], TS ~int64](reduce func(a, b T) T, fns func() ProcessFns[T, OUT, K, W, TS]) Function[T, OUT, K, W, TS] {
	single := func(env *winEnv[K, W, TS], out task.Output[OUT]) *processSingle[T, OUT, K, W, TS] {
		return &processSingle[T, OUT, K, W, TS]{list: newProcessList(fns(), env, out)}
	}
	return Function[T, OUT, K, W, TS]{
		incremental: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newOp(p, reducing[T, K, W](reduce), func(env *winEnv[K, W, TS], _ contents[T, W, T]) windowFn[K, W, T] {
				return single(env, out)
			})
		},
		evicting: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newEvictingOp(p, func(env *winEnv[K, W, TS]) windowFn[K, W, []T] {
				return &reduceAll[K, W, T]{fn: reduce, next: single(env, out)}
			})
		},
	}
}

// AggregateProcess aggregates each window's records incrementally with agg
// and calls the process window function with agg's result as its only
// element (Flink's aggregate(aggregateFunction, processWindowFunction)).
func AggregateProcess[T any, K comparable, W Window[TS], TS ~int64, ACC, R, OUT any](agg typed.Aggregator[T, ACC, R], fns func() ProcessFns[R, OUT, K, W, TS]) Function[T, OUT, K, W, TS] {
	withProcess := func(env *winEnv[K, W, TS], out task.Output[OUT]) *processAgg[T, ACC, R, OUT, K, W, TS] {
		return &processAgg[T, ACC, R, OUT, K, W, TS]{agg: agg, single: processSingle[R, OUT, K, W, TS]{list: newProcessList(fns(), env, out)}}
	}
	return Function[T, OUT, K, W, TS]{
		incremental: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newOp(p, aggregating[T, K, W](agg), func(env *winEnv[K, W, TS], _ contents[T, W, ACC]) windowFn[K, W, ACC] {
				return withProcess(env, out)
			})
		},
		evicting: func(p parts[T, K, W, TS], out task.Output[OUT]) task.Operator {
			return newEvictingOp(p, func(env *winEnv[K, W, TS]) windowFn[K, W, []T] {
				return &aggregateAll[K, W, T, ACC, R]{agg: agg, next: withProcess(env, out)}
			})
		},
	}
}

// Ctx is what a process window function knows of the window it is called
// for. It is valid only during the call.
type Ctx[K comparable, W Window[TS], TS ~int64] struct {
	env       *winEnv[K, W, TS]
	w         W
	perWindow *typed.States[K]
	// err is set when the function asked for per-window state of a
	// merging window: the call fails the task with it.
	err error
}

// Window is the window being processed.
func (c *Ctx[K, W, TS]) Window() W { return c.w }

// CurrentWatermark is the operator's input watermark.
func (c *Ctx[K, W, TS]) CurrentWatermark() int64 { return c.env.timers.CurrentWatermark() }

// CurrentProcessingTime is the processing time.
func (c *Ctx[K, W, TS]) CurrentProcessingTime() int64 { return c.env.clock.NowMillis() }

// GlobalState is the state of the key, shared by all its windows.
func (c *Ctx[K, W, TS]) GlobalState() *typed.States[K] { return c.env.global }

// Sides are the operator's side outputs, stamped with the window's
// MaxTimestamp.
func (c *Ctx[K, W, TS]) Sides() *typed.SideOutputs { return &c.env.sides }

// WindowState is the state of the key and this window. With merging
// windows there is none: asking for it fails the call with
// Spec.PerWindowMergingErr, whether or not the function looks at the
// errors of the state's methods (which return it too), as Flink fails the
// job.
func (c *Ctx[K, W, TS]) WindowState() *typed.States[K] {
	if c.perWindow == nil {
		scope := &typed.WindowScope{NS: c.w}
		if c.env.merging {
			scope.Err = c.env.mergingErr
			c.err = c.env.mergingErr
		}
		c.perWindow = &typed.States[K]{Keyed: c.env.keyed, Handles: map[any]any{}, Scope: scope}
	}
	return c.perWindow
}

func (c *Ctx[K, W, TS]) reset(w W) { c.w, c.perWindow, c.err = w, nil, nil }

// settle returns the first of a window function call's error, the
// per-window state misuse and the sticky errors of its outputs.
func (c *Ctx[K, W, TS]) settle(err error) error {
	if err == nil {
		err = c.err
	}
	c.err = nil
	if serr := c.env.sides.TakeErr(); err == nil {
		err = serr
	}
	return err
}

// ProcessFns are the callbacks of one subtask's process window function.
type ProcessFns[IN, OUT any, K comparable, W Window[TS], TS ~int64] struct {
	// Process emits the results of a window that fired from its elements,
	// which belong to the operator.
	Process func(key K, ctx *Ctx[K, W, TS], elements []IN, out *typed.Collector[OUT]) error
	// Clear is called when the window's state is dropped.
	Clear func(ctx *Ctx[K, W, TS]) error
}

// Window contents.

// mergeInto folds the values of sources into target as Flink merges state
// namespaces: the sources in order, then the result into the target's.
func mergeInto[K, W comparable, V any](t *state.ValueTable[K, W, V], target W, sources []W, fn func(a, b V) V) error {
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
type reducingContents[T any, K, W comparable] struct {
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
type aggContents[T any, K, W comparable, ACC, OUT any] struct {
	t   *state.ValueTable[K, W, ACC]
	agg typed.Aggregator[T, ACC, OUT]
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
type listContents[T any, K, W comparable] struct {
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

func reducing[T any, K, W comparable](fn func(a, b T) T) func(*state.Keyed[K]) (contents[T, W, T], error) {
	return func(keyed *state.Keyed[K]) (contents[T, W, T], error) {
		t, err := state.NewValueTable[K, W, T](keyed, "window-contents", state.TTL{})
		return &reducingContents[T, K, W]{t: t, fn: fn}, err
	}
}

func aggregating[T any, K, W comparable, ACC, OUT any](agg typed.Aggregator[T, ACC, OUT]) func(*state.Keyed[K]) (contents[T, W, ACC], error) {
	return func(keyed *state.Keyed[K]) (contents[T, W, ACC], error) {
		t, err := state.NewValueTable[K, W, ACC](keyed, "window-contents", state.TTL{})
		return &aggContents[T, K, W, ACC, OUT]{t: t, agg: agg}, err
	}
}

func listing[T any, K, W comparable]() func(*state.Keyed[K]) (contents[T, W, []T], error) {
	return func(keyed *state.Keyed[K]) (contents[T, W, []T], error) {
		t, err := state.NewValueTable[K, W, []T](keyed, "window-contents", state.TTL{})
		return &listContents[T, K, W]{t: t}, err
	}
}

// Window functions.

// emitValue emits a window's reduced value (Reduce).
type emitValue[K comparable, W Window[TS], TS ~int64, T any] struct{ out task.Output[T] }

func (e *emitValue[K, W, TS, T]) process(_ K, w, _ W, acc T) error {
	return e.out.Collect(acc, int64(w.MaxTimestamp()))
}
func (e *emitValue[K, W, TS, T]) clear(K, W) error { return nil }

// emitAgg emits a window's aggregate result (Aggregate).
type emitAgg[K comparable, W Window[TS], TS ~int64, T, ACC, OUT any] struct {
	agg typed.Aggregator[T, ACC, OUT]
	out task.Output[OUT]
}

func (e *emitAgg[K, W, TS, T, ACC, OUT]) process(_ K, w, _ W, acc ACC) error {
	return e.out.Collect(e.agg.Result(acc), int64(w.MaxTimestamp()))
}
func (e *emitAgg[K, W, TS, T, ACC, OUT]) clear(K, W) error { return nil }

// processList runs a process window function over a window's elements.
type processList[IN, OUT any, K comparable, W Window[TS], TS ~int64] struct {
	fns ProcessFns[IN, OUT, K, W, TS]
	env *winEnv[K, W, TS]
	ctx Ctx[K, W, TS]
	out typed.Collector[OUT]
}

func newProcessList[IN, OUT any, K comparable, W Window[TS], TS ~int64](fns ProcessFns[IN, OUT, K, W, TS], env *winEnv[K, W, TS], out task.Output[OUT]) *processList[IN, OUT, K, W, TS] {
	return &processList[IN, OUT, K, W, TS]{fns: fns, env: env, ctx: Ctx[K, W, TS]{env: env}, out: typed.Collector[OUT]{Out: out}}
}

func (p *processList[IN, OUT, K, W, TS]) process(key K, w, _ W, elems []IN) error {
	p.ctx.reset(w)
	ts := int64(w.MaxTimestamp())
	p.out.Ts, p.env.sides.Ts = ts, ts
	err := p.fns.Process(key, &p.ctx, elems, &p.out)
	if cerr := p.out.TakeErr(); err == nil {
		err = cerr
	}
	return p.ctx.settle(err)
}

func (p *processList[IN, OUT, K, W, TS]) clear(_ K, w W) error {
	p.ctx.reset(w)
	p.env.sides.Ts = int64(w.MaxTimestamp())
	if p.fns.Clear == nil {
		return p.ctx.settle(nil)
	}
	return p.ctx.settle(p.fns.Clear(&p.ctx))
}

// processSingle runs a process window function over a pre-reduced value.
type processSingle[IN, OUT any, K comparable, W Window[TS], TS ~int64] struct {
	list *processList[IN, OUT, K, W, TS]
	one  [1]IN
}

func (p *processSingle[IN, OUT, K, W, TS]) process(key K, w, stateW W, acc IN) error {
	p.one[0] = acc
	err := p.list.process(key, w, stateW, p.one[:])
	clear(p.one[:])
	return err
}

func (p *processSingle[IN, OUT, K, W, TS]) clear(key K, w W) error { return p.list.clear(key, w) }

// processAgg runs a process window function over an aggregate's result.
type processAgg[T, ACC, R, OUT any, K comparable, W Window[TS], TS ~int64] struct {
	agg    typed.Aggregator[T, ACC, R]
	single processSingle[R, OUT, K, W, TS]
}

func (p *processAgg[T, ACC, R, OUT, K, W, TS]) process(key K, w, stateW W, acc ACC) error {
	return p.single.process(key, w, stateW, p.agg.Result(acc))
}

func (p *processAgg[T, ACC, R, OUT, K, W, TS]) clear(key K, w W) error {
	return p.single.clear(key, w)
}

// reduceAll reduces an evicting window's kept elements, then hands the
// result on (an empty window emits nothing).
type reduceAll[K, W comparable, T any] struct {
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
type aggregateAll[K, W comparable, T, ACC, OUT any] struct {
	agg  typed.Aggregator[T, ACC, OUT]
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
