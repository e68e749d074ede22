package stream

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
	"github.com/sluice/sluice/internal/typed/windowing"
)

// WindowedStream is a keyed stream cut into windows, waiting for the
// function that computes each window's result: Reduce, WindowAggregate,
// WindowProcess, WindowReduceWith or WindowAggregateWith. Its methods
// configure the windows and return the updated stream.
type WindowedStream[T any, K comparable, W AnyWindow] struct {
	in       KeyedStream[T, K]
	assigner WindowAssigner[W]
	trigger  Trigger
	evictor  Evictor
	lateness time.Duration
	lateTag  string
	all      bool
	errs     []error
}

// Window groups the records of each key into the windows the assigner
// gives them (Flink's keyBy(...).window(...)).
func Window[T any, K comparable, W AnyWindow](in KeyedStream[T, K], assigner WindowAssigner[W]) WindowedStream[T, K, W] {
	ws := WindowedStream[T, K, W]{in: in, assigner: assigner}
	if assigner == nil {
		return ws.fail(errors.New("the window assigner is nil"))
	}
	if c, ok := assigner.(assignerChecker); ok {
		if err := c.check(); err != nil {
			ws = ws.fail(err)
		}
	}
	if ea, ok := assigner.(elementAssigner); ok {
		if _, ok := assigner.(ElementWindowAssigner[T, W]); !ok {
			ws = ws.fail(fmt.Errorf("%s computes its gap from records of type %s, but the stream carries %T", describe(assigner), ea.elemType(), *new(T)))
		}
	}
	if ws.trigger = assigner.DefaultTrigger(); ws.trigger == nil {
		ws = ws.fail(fmt.Errorf("window assigner %s has no default trigger; set one with Trigger", describe(assigner)))
	}
	return ws
}

// WindowAll groups all records of the stream, whatever their key, into
// windows. It runs in a single subtask (parallelism 1), as in Flink.
func WindowAll[T any, W AnyWindow](in DataStream[T], assigner WindowAssigner[W]) WindowedStream[T, struct{}, W] {
	ws := Window(KeyBy(in, func(T) struct{} { return struct{}{} }), assigner)
	ws.all = true
	return ws
}

// CountWindow emits a result for every size records of a key (Flink's
// countWindow(size): GlobalWindows with PurgingTrigger(CountTrigger(size))).
// Records of an incomplete last window are not emitted.
func CountWindow[T any, K comparable](in KeyedStream[T, K], size int64) WindowedStream[T, K, GlobalWindow] {
	return Window(in, GlobalWindows()).Trigger(PurgingTrigger(CountTrigger(size)))
}

// CountWindowSliding emits, every slide records of a key, a result over
// its last size records (Flink's countWindow(size, slide): GlobalWindows
// with CountEvictor(size) and CountTrigger(slide)).
func CountWindowSliding[T any, K comparable](in KeyedStream[T, K], size, slide int64) WindowedStream[T, K, GlobalWindow] {
	return Window(in, GlobalWindows()).Evictor(CountEvictor(size)).Trigger(CountTrigger(slide))
}

// CountWindowAll is CountWindow over all records of the stream (one subtask).
func CountWindowAll[T any](in DataStream[T], size int64) WindowedStream[T, struct{}, GlobalWindow] {
	return WindowAll(in, GlobalWindows()).Trigger(PurgingTrigger(CountTrigger(size)))
}

// CountWindowAllSliding is CountWindowSliding over all records of the
// stream (one subtask).
func CountWindowAllSliding[T any](in DataStream[T], size, slide int64) WindowedStream[T, struct{}, GlobalWindow] {
	return WindowAll(in, GlobalWindows()).Evictor(CountEvictor(size)).Trigger(CountTrigger(slide))
}

func (ws WindowedStream[T, K, W]) fail(err error) WindowedStream[T, K, W] {
	ws.errs = append(slices.Clip(ws.errs), err)
	return ws
}

// Trigger replaces the assigner's default trigger.
func (ws WindowedStream[T, K, W]) Trigger(t Trigger) WindowedStream[T, K, W] {
	if t == nil {
		return ws.fail(errors.New("the trigger is nil"))
	}
	if c, ok := t.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			ws = ws.fail(err)
		}
	}
	if _, merging := ws.assigner.(MergingWindowAssigner[W]); merging && !t.CanMerge() {
		ws = ws.fail(fmt.Errorf("trigger %s does not support merging, so it cannot be used with the merging window assigner %s", describe(t), describe(ws.assigner)))
	}
	ws.trigger = t
	return ws
}

// Evictor removes elements from windows before and/or after the window
// function runs. Windows then keep all their elements, and Reduce and
// WindowAggregate run over the kept ones when a window fires.
func (ws WindowedStream[T, K, W]) Evictor(e Evictor) WindowedStream[T, K, W] {
	if e == nil {
		return ws.fail(errors.New("the evictor is nil"))
	}
	if c, ok := e.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			ws = ws.fail(err)
		}
	}
	ws.evictor = e
	return ws
}

// AllowedLateness keeps event-time windows for d after the watermark has
// passed their end: a late record within d is added and, with the default
// trigger, fires the window again with the updated result. A window's
// state is dropped when the watermark passes its end plus d. Default 0.
func (ws WindowedStream[T, K, W]) AllowedLateness(d time.Duration) WindowedStream[T, K, W] {
	if d < 0 {
		return ws.fail(fmt.Errorf("the allowed lateness %v cannot be negative", d))
	}
	ws.lateness = d
	return ws
}

// SideOutputLateData sends records that arrive after their windows were
// dropped (later than the allowed lateness) to the side output tag, read
// with SideOutput on the window's result. Without it they are dropped.
func (ws WindowedStream[T, K, W]) SideOutputLateData(tag OutputTag[T]) WindowedStream[T, K, W] {
	if tag.id == "" {
		return ws.fail(errors.New("the late-data output tag has an empty id"))
	}
	ws.lateTag = tag.id
	return ws
}

// Reduce combines each window's records with fn, incrementally, and emits
// one result per window firing, with the window's MaxTimestamp as its
// timestamp.
func (ws WindowedStream[T, K, W]) Reduce(fn func(acc, v T) T) DataStream[T] {
	if fn == nil {
		ws = ws.fail(errors.New("the reduce function is nil"))
	}
	return applyWindow(ws, "Reduce", windowing.Reduce[T, K, W, Timestamp](fn))
}

// WindowAggregate aggregates each window's records incrementally with fn
// and emits fn's result per window firing. Session windows merge
// accumulators with fn.Merge.
func WindowAggregate[T any, K comparable, W AnyWindow, ACC, OUT any](ws WindowedStream[T, K, W], fn AggregateFunction[T, ACC, OUT]) DataStream[OUT] {
	ws = checkAggregate(ws, fn)
	return applyWindow(ws, "Aggregate", windowing.Aggregate[T, K, W, Timestamp](typed.Aggregator[T, ACC, OUT](fn)))
}

// WindowProcess calls pf with all records of each window that fires. The
// window keeps every record until it is dropped; prefer the incremental
// forms (Reduce, WindowAggregate, or WindowReduceWith/WindowAggregateWith)
// when a result can be folded.
func WindowProcess[T any, K comparable, W AnyWindow, OUT any](ws WindowedStream[T, K, W], pf ProcessWindowFunction[T, OUT, K, W]) DataStream[OUT] {
	return windowProcess(ws, "Process", pf)
}

func windowProcess[T any, K comparable, W AnyWindow, OUT any](ws WindowedStream[T, K, W], fnName string, pf ProcessWindowFunction[T, OUT, K, W]) DataStream[OUT] {
	if pf == nil {
		ws = ws.fail(errors.New("the process window function is nil"))
	}
	return applyWindow(ws, fnName, windowing.Process(processWindowFns(pf)))
}

// WindowReduceWith reduces each window's records incrementally with
// reduce and, when the window fires, calls pf with the reduced value as
// its only element (Flink's reduce(reduceFunction, processWindowFunction)).
func WindowReduceWith[T any, K comparable, W AnyWindow, OUT any](ws WindowedStream[T, K, W], reduce func(acc, v T) T, pf ProcessWindowFunction[T, OUT, K, W]) DataStream[OUT] {
	if reduce == nil || pf == nil {
		ws = ws.fail(errors.New("the reduce function and the process window function must not be nil"))
	}
	return applyWindow(ws, "Reduce+Process", windowing.ReduceProcess(reduce, processWindowFns(pf)))
}

// WindowAggregateWith aggregates each window's records incrementally with
// agg and, when the window fires, calls pf with agg's result as its only
// element (Flink's aggregate(aggregateFunction, processWindowFunction)).
func WindowAggregateWith[T any, K comparable, W AnyWindow, ACC, R, OUT any](ws WindowedStream[T, K, W], agg AggregateFunction[T, ACC, R], pf ProcessWindowFunction[R, OUT, K, W]) DataStream[OUT] {
	ws = checkAggregate(ws, agg)
	if pf == nil {
		ws = ws.fail(errors.New("the process window function is nil"))
	}
	return applyWindow(ws, "Aggregate+Process", windowing.AggregateProcess[T, K, W, Timestamp](typed.Aggregator[T, ACC, R](agg), processWindowFns(pf)))
}

func checkAggregate[T any, K comparable, W AnyWindow, ACC, OUT any](ws WindowedStream[T, K, W], fn AggregateFunction[T, ACC, OUT]) WindowedStream[T, K, W] {
	if fn == nil {
		return ws.fail(errors.New("the aggregate function is nil"))
	}
	if f, ok := fn.(AggregateFuncs[T, ACC, OUT]); ok {
		if f.AddFn == nil || f.ResultFn == nil {
			ws = ws.fail(errors.New("AggregateFuncs needs AddFn and ResultFn"))
		}
		if _, merging := ws.assigner.(MergingWindowAssigner[W]); merging && f.MergeFn == nil && ws.evictor == nil {
			ws = ws.fail(fmt.Errorf("%s merges windows, so AggregateFuncs needs MergeFn", describe(ws.assigner)))
		}
	}
	return ws
}

// applyWindow adds the window operator computing fn to the job.
func applyWindow[T any, K comparable, W AnyWindow, OUT any](ws WindowedStream[T, K, W], fnName string, fn windowing.Function[T, OUT, K, W, Timestamp]) DataStream[OUT] {
	env := ws.in.env
	for _, err := range ws.errs {
		env.fail(fmt.Errorf("window after operator %s: %w", ws.in.node.Label(), err))
	}
	spec := &windowing.Spec[T, K, W, Timestamp]{
		Key:                 ws.in.key,
		Lateness:            ws.lateness.Milliseconds(),
		LateTag:             ws.lateTag,
		PerWindowMergingErr: ErrPerWindowStateMerging,
	}
	if ws.assigner != nil {
		spec.EventTime = ws.assigner.IsEventTime()
		if m, ok := ws.assigner.(MergingWindowAssigner[W]); ok {
			spec.MergeWindows = m.MergeWindows
		}
	}
	_, builtin := ws.trigger.(eventTimeTrigger)
	spec.DefaultEventTrigger = builtin && spec.MergeWindows == nil && spec.EventTime

	f := windowing.New(spec, windowFns[T, K, W](ws.assigner, ws.trigger, ws.evictor), fn)
	if spec.LateTag != "" {
		// Declared now so that reading the tag with another type fails at once.
		if err := f.DeclareSide(spec.LateTag, task.TypeOf[T]()); err != nil {
			env.fail(err)
		}
	}

	kind, name := "window", "Window"
	if ws.all {
		kind, name = "window-all", "AllWindow"
	}
	parts := []string{describe(ws.assigner), describe(ws.trigger)}
	if ws.evictor != nil {
		parts = append(parts, describe(ws.evictor))
	}
	parts = append(parts, fnName)
	name += "(" + joinComma(parts) + ")"
	n := env.addNode(kind, name, 1, f)
	ws.in.DataStream.connect(n, 0)
	n.Keyed = true
	n.NeedsWatermarks = spec.EventTime
	n.Props = map[string]string{
		"assigner": describe(ws.assigner),
		"trigger":  describe(ws.trigger),
		"function": fnName,
	}
	if ws.evictor != nil {
		n.Props["evictor"] = describe(ws.evictor)
	}
	if spec.Lateness != 0 {
		n.Props["allowed-lateness-ms"] = strconv.FormatInt(spec.Lateness, 10)
	}
	if spec.LateTag != "" {
		n.Props["late-data-tag"] = spec.LateTag
	}
	if ws.all {
		// Non-keyed windows run in one subtask; setting another
		// parallelism fails validation (above the max parallelism).
		n.Parallelism, n.MaxParallelism = 1, 1
	}
	return newStream[OUT](env, n)
}

func joinComma(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += ", "
		}
		s += p
	}
	return s
}
