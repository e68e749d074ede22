package stream

import (
	"errors"

	"github.com/sluice/sluice/internal/typed"
	"github.com/sluice/sluice/internal/typed/windowing"
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

// ErrPerWindowStateMerging fails a job whose ProcessWindowFunction asks for
// per-window state (WindowContext.WindowState) of merging (session)
// windows, as in Flink; the state's handles return it too.
var ErrPerWindowStateMerging = errors.New("stream: per-window state is not allowed when using merging (session) windows")

// processWindowFns adapts pf onto the window operator: each subtask gets
// its own instance of pf and one context, which wraps the operator's.
func processWindowFns[IN, OUT any, K comparable, W AnyWindow](pf ProcessWindowFunction[IN, OUT, K, W]) func() windowing.ProcessFns[IN, OUT, K, W, Timestamp] {
	return func() windowing.ProcessFns[IN, OUT, K, W, Timestamp] {
		pf := perSubtask(pf)
		ctx := &windowCtx[K, W]{}
		return windowing.ProcessFns[IN, OUT, K, W, Timestamp]{
			Process: func(key K, c *windowing.Ctx[K, W, Timestamp], elems []IN, out *typed.Collector[OUT]) error {
				ctx.c = c
				return pf.Process(key, ctx, elems, out)
			},
			Clear: func(c *windowing.Ctx[K, W, Timestamp]) error {
				ctx.c = c
				return pf.Clear(ctx)
			},
		}
	}
}

// stateStore makes a keyedStates a KeyedStateContext.
type stateStore[K comparable] struct{ s *keyedStates[K] }

func (c stateStore[K]) keyedStates() *keyedStates[K] { return c.s }

// windowCtx is the WindowContext of a process window function: the window
// operator's context, in Timestamps.
type windowCtx[K comparable, W AnyWindow] struct {
	c *windowing.Ctx[K, W, Timestamp]
}

func (c *windowCtx[K, W]) Window() W                   { return c.c.Window() }
func (c *windowCtx[K, W]) CurrentWatermark() Timestamp { return Timestamp(c.c.CurrentWatermark()) }
func (c *windowCtx[K, W]) CurrentProcessingTime() Timestamp {
	return Timestamp(c.c.CurrentProcessingTime())
}
func (c *windowCtx[K, W]) GlobalState() KeyedStateContext[K] { return stateStore[K]{c.c.GlobalState()} }
func (c *windowCtx[K, W]) WindowState() KeyedStateContext[K] { return stateStore[K]{c.c.WindowState()} }
func (c *windowCtx[K, W]) sides() *sideOutputs               { return c.c.Sides() }
