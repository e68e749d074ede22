package stream

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/typed"
)

// RuntimeContext tells a function about the subtask it runs in. A process
// function that has a method Open(RuntimeContext) error gets it once, on the
// subtask's goroutine, before its first record; a method Close() error is
// called when the subtask ends (whether or not it failed).
//
// Each parallel subtask gets its own instance of a user function, as in
// Flink (which deserialises a copy per subtask): when the function passed
// to Process, KeyedProcess, CoProcess, KeyedCoProcess, BroadcastProcess,
// KeyedBroadcastProcess, IntervalJoinProcess, the window functions or the
// async I/O operators is a pointer to a struct, every subtask calls Open,
// its methods and Close on a shallow copy of that struct made when the
// subtask starts. Fields set in Open or while processing are the subtask's
// own and never race. The copy is shallow: maps, slices, channels and
// pointers the struct holds before the job starts are shared by all
// subtasks, so create per-subtask resources in Open. The func-struct
// adapters (ProcessFuncs, KeyedProcessFuncs, ...) and plain functions are
// not copied: their closures share what they capture, so keep per-subtask
// state in a struct type of your own, or in keyed state.
type RuntimeContext interface {
	// JobName is the name passed to Execute.
	JobName() string
	// OperatorName is the operator's name (set with Name).
	OperatorName() string
	// Subtask is the index of this subtask, in [0, Parallelism()).
	Subtask() int
	// Parallelism is the operator's number of subtasks.
	Parallelism() int
	// MaxParallelism is the operator's number of key groups.
	MaxParallelism() int
	// Logger is scoped to the job, operator and subtask.
	Logger() *slog.Logger
}

// procEnv and procFactory are internal/typed's: the process-function
// operators are built from an Env, so tests can build them without a task.
type (
	procEnv            = typed.Env
	procFactory[O any] = typed.ProcFactory[O]
)

// procOneInput adds a one-input operator reading from in.
func procOneInput[I, O any](in DataStream[I], kind, name string, f *procFactory[O]) DataStream[O] {
	n := in.env.addNode(kind, name, 1, f)
	in.connect(n, 0)
	return newStream[O](in.env, n)
}

// procTwoInput adds a two-input operator reading a into input 0 and b into
// input 1. It heads a chain (a two-input operator never chains to its inputs).
func procTwoInput[A, B, O any](a DataStream[A], b DataStream[B], kind, name string, f *procFactory[O]) DataStream[O] {
	env := a.env
	n := env.addNode(kind, name, 2, f)
	n.Chaining = graph.ChainHead
	a.connect(n, 0)
	if b.env != env {
		env.fail(fmt.Errorf("%s: the two streams belong to different environments", name))
	} else {
		b.connect(n, 1)
	}
	return newStream[O](env, n)
}

// checkable is implemented by the func-struct adapters, which report
// missing required callbacks when the job is built.
type checkable interface{ check() error }

// checkFn records a build error when fn is nil or an incomplete adapter.
func checkFn(env *Environment, what string, fn any) {
	if fn == nil {
		env.fail(fmt.Errorf("%s: the function is nil", what))
		return
	}
	if c, ok := fn.(checkable); ok {
		if err := c.check(); err != nil {
			env.fail(fmt.Errorf("%s: %w", what, err))
		}
	}
}

// lifecycleOf is the typed operators' view of a user function's optional
// Open(RuntimeContext) error and Close() error (or a func-struct adapter's
// Open and Close fields).
func lifecycleOf(fn any) typed.Lifecycle {
	fn = adaptLifecycle(fn)
	var l typed.Lifecycle
	if o, ok := fn.(interface{ Open(RuntimeContext) error }); ok {
		l.Open = func(env *typed.Env) error { return o.Open(env) }
	}
	if c, ok := fn.(io.Closer); ok {
		l.Close = c.Close
	}
	return l
}

// fnContext is what every function context has: the timestamp of the
// record (or timer) being processed, time, and side outputs, kept by the
// typed operator the context belongs to.
type fnContext struct{ c *typed.FnContext }

// Timestamp is the event timestamp of the record being processed (for an
// event-time timer: the timer's time), or NoTimestamp when it has none.
func (c *fnContext) Timestamp() Timestamp { return Timestamp(c.c.SO.Ts) }

// CurrentWatermark is the operator's current input watermark (math.MinInt64
// before the first one).
func (c *fnContext) CurrentWatermark() Timestamp { return Timestamp(c.c.T.WM) }

// CurrentProcessingTime is the processing time.
func (c *fnContext) CurrentProcessingTime() Timestamp { return Timestamp(c.c.T.Clock.NowMillis()) }

func (c *fnContext) sides() *sideOutputs { return &c.c.SO }

// ProcessContext is the context of a ProcessFunction or CoProcessFunction
// call. It is only valid during the call. Emit to side outputs with
// Output(ctx, tag, v).
type ProcessContext struct{ fnContext }

// ProcessFunction is the lowest-level function on a non-keyed stream: it
// sees every record with its timestamp and the current watermark, and
// emits any number of records to out and to side outputs. It has no keyed
// state and no timers; for those, key the stream and use KeyedProcess.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type ProcessFunction[I, O any] interface {
	ProcessElement(ctx *ProcessContext, v I, out Collector[O]) error
}

// ProcessFuncs builds a ProcessFunction from closures. Element is required;
// Open and Close may be nil.
type ProcessFuncs[I, O any] struct {
	Element func(ctx *ProcessContext, v I, out Collector[O]) error
	Open    func(rc RuntimeContext) error
	Close   func() error
}

// ProcessElement implements ProcessFunction.
func (f ProcessFuncs[I, O]) ProcessElement(ctx *ProcessContext, v I, out Collector[O]) error {
	return f.Element(ctx, v, out)
}

func (f ProcessFuncs[I, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f ProcessFuncs[I, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f ProcessFuncs[I, O]) check() error {
	if f.Element == nil {
		return errors.New("ProcessFuncs.Element is nil")
	}
	return nil
}

// funcsLifecycle lets the func-struct adapters expose their optional Open
// and Close fields through the lifecycle's interface checks.
type funcsLifecycle interface {
	open(RuntimeContext) error
	close() error
}

// adaptLifecycle returns the object whose Open/Close the lifecycle calls.
func adaptLifecycle(fn any) any {
	if f, ok := fn.(funcsLifecycle); ok {
		return funcsOpenClose{f}
	}
	return fn
}

type funcsOpenClose struct{ f funcsLifecycle }

func (f funcsOpenClose) Open(rc RuntimeContext) error { return f.f.open(rc) }
func (f funcsOpenClose) Close() error                 { return f.f.close() }

// Process applies a ProcessFunction to every record of a non-keyed stream.
// Records fn emits keep the timestamp of the record being processed.
func Process[I, O any](in DataStream[I], fn ProcessFunction[I, O]) DataStream[O] {
	checkFn(in.env, "Process", fn)
	return procOneInput(in, "process", "Process", typed.Process(func() typed.ProcessFns[I, O] {
		fn := perSubtask(fn)
		ctx := &ProcessContext{}
		return typed.ProcessFns[I, O]{
			Element: func(c *typed.FnContext, v I, out *typed.Collector[O]) error {
				ctx.c = c
				return fn.ProcessElement(ctx, v, out)
			},
			Life: lifecycleOf(fn),
		}
	}))
}

// TimeDomain says whether a timer fired in event time or processing time.
type TimeDomain int

// Time domains of timers.
const (
	// EventTimeDomain timers fire when the watermark passes them.
	EventTimeDomain TimeDomain = iota
	// ProcessingTimeDomain timers fire when the clock passes them.
	ProcessingTimeDomain
)

// The domains are typed's, converted (TimeDomain(typed.EventTimeDomain)).
var _ = [1]struct{}{}[EventTimeDomain-TimeDomain(typed.EventTimeDomain)+ProcessingTimeDomain-TimeDomain(typed.ProcessingTimeDomain)]

func (d TimeDomain) String() string {
	if d == ProcessingTimeDomain {
		return "PROCESSING_TIME"
	}
	return "EVENT_TIME"
}

// TimerService registers and deletes the timers of the current key and
// tells the time. Timers are deduplicated: registering the same time twice
// for a key fires once. Timers fire in time order, each with its key as the
// current key. Event-time timers fire when the watermark reaches them; a
// timer at or behind the current watermark fires with the next watermark.
// Processing-time timers fire when the clock reaches them; in STREAMING
// mode, processing-time timers still pending when the input ends are
// dropped, and in BATCH mode all timers fire at the end of the input.
type TimerService interface {
	CurrentProcessingTime() Timestamp
	CurrentWatermark() Timestamp
	RegisterEventTimeTimer(ts Timestamp)
	RegisterProcessingTimeTimer(ts Timestamp)
	DeleteEventTimeTimer(ts Timestamp)
	DeleteProcessingTimeTimer(ts Timestamp)
}

// timerService is the TimerService of a keyed function operator: typed's
// timers, in Timestamps.
type timerService[K comparable] struct{ t *typed.Timers[K] }

func (t *timerService[K]) CurrentProcessingTime() Timestamp {
	return Timestamp(t.t.CurrentProcessingTime())
}
func (t *timerService[K]) CurrentWatermark() Timestamp { return Timestamp(t.t.CurrentWatermark()) }
func (t *timerService[K]) RegisterEventTimeTimer(ts Timestamp) {
	t.t.RegisterEventTimeTimer(int64(ts))
}
func (t *timerService[K]) RegisterProcessingTimeTimer(ts Timestamp) {
	t.t.RegisterProcessingTimeTimer(int64(ts))
}
func (t *timerService[K]) DeleteEventTimeTimer(ts Timestamp) { t.t.DeleteEventTimeTimer(int64(ts)) }
func (t *timerService[K]) DeleteProcessingTimeTimer(ts Timestamp) {
	t.t.DeleteProcessingTimeTimer(int64(ts))
}

// keyedView is the user's side of one keyed function operator subtask:
// its contexts, timer service and state handles over the typed
// operator's keyed runtime. It is made once per subtask and bound to the
// runtime when the operator opens (typed.KeyedFnOp.Bind).
type keyedView[K comparable] struct {
	r      *typed.KeyedRuntime[K]
	states *keyedStates[K]
	ts     timerService[K]
	ctx    KeyedContext[K]
	tctx   OnTimerContext[K]
}

func newKeyedView[K comparable]() *keyedView[K] {
	v := &keyedView[K]{}
	v.ctx.v, v.tctx.v = v, v
	return v
}

// bind is the typed operator's Bind: the runtime exists (Open), its
// contexts are fields of the operator and never move.
func (v *keyedView[K]) bind(r *typed.KeyedRuntime[K], rec, tim *typed.KeyedCtx[K]) {
	v.r = r
	v.states = typed.NewStates(r.Keyed)
	v.ts.t = &r.TS
	v.ctx.c = &rec.FnContext
	v.tctx.c, v.tctx.t = &tim.FnContext, tim
}

func (v *keyedView[K]) keyedStates() *keyedStates[K] { return v.states }

// KeyedContext is the context of a keyed function's call for a record. It
// gives the record's key, the timer service and, through the state
// functions (Value, List, MapOf, Reducing, Aggregating), the key's state.
// It is only valid during the call.
type KeyedContext[K comparable] struct {
	fnContext
	v *keyedView[K]
}

// CurrentKey is the key of the record (or timer) being processed.
func (c *KeyedContext[K]) CurrentKey() K { return c.v.r.CurrentKey() }

// TimerService registers timers for the current key.
func (c *KeyedContext[K]) TimerService() TimerService { return &c.v.ts }

func (c *KeyedContext[K]) keyedStates() *keyedStates[K] { return c.v.states }

// OnTimerContext is the context of a keyed function's OnTimer call.
type OnTimerContext[K comparable] struct {
	KeyedContext[K]
	t *typed.KeyedCtx[K]
}

// TimeDomain says whether the firing timer is an event-time or a
// processing-time timer.
func (c *OnTimerContext[K]) TimeDomain() TimeDomain { return TimeDomain(c.t.Domain) }

// KeyedProcessFunction processes the records of a keyed stream with keyed
// state and timers. ProcessElement runs for every record and OnTimer for
// every timer that fires; both run with the record's (timer's) key as the
// current key, so state accessed through their contexts is that key's.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type KeyedProcessFunction[K comparable, I, O any] interface {
	ProcessElement(ctx *KeyedContext[K], v I, out Collector[O]) error
	OnTimer(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error
}

// KeyedProcessFuncs builds a KeyedProcessFunction from closures. Element is
// required; Timer, Open and Close may be nil (a nil Timer ignores timers).
type KeyedProcessFuncs[K comparable, I, O any] struct {
	Element func(ctx *KeyedContext[K], v I, out Collector[O]) error
	Timer   func(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error
	Open    func(rc RuntimeContext) error
	Close   func() error
}

// ProcessElement implements KeyedProcessFunction.
func (f KeyedProcessFuncs[K, I, O]) ProcessElement(ctx *KeyedContext[K], v I, out Collector[O]) error {
	return f.Element(ctx, v, out)
}

// OnTimer implements KeyedProcessFunction.
func (f KeyedProcessFuncs[K, I, O]) OnTimer(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error {
	if f.Timer == nil {
		return nil
	}
	return f.Timer(ctx, ts, out)
}

func (f KeyedProcessFuncs[K, I, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f KeyedProcessFuncs[K, I, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f KeyedProcessFuncs[K, I, O]) check() error {
	if f.Element == nil {
		return errors.New("KeyedProcessFuncs.Element is nil")
	}
	return nil
}

// KeyedProcess applies a KeyedProcessFunction to a keyed stream: the
// function has per-key state and timers. Records it emits while processing
// a record keep that record's timestamp; records emitted by an event-time
// timer carry the timer's time, those of a processing-time timer none.
//
// It takes a KeyedStream, so a keyed process function on a non-keyed
// stream does not compile: key the stream with KeyBy first.
//
// In BATCH mode, event-time timers fire with the final watermark and
// processing-time timers at the end of the input, as in Flink.
func KeyedProcess[K comparable, I, O any](in KeyedStream[I, K], fn KeyedProcessFunction[K, I, O]) DataStream[O] {
	checkFn(in.env, "KeyedProcess", fn)
	out := procOneInput(in.DataStream, "keyed-process", "KeyedProcess", typed.KeyedProcess(in.key, func() typed.KeyedProcessFns[K, I, O] {
		fn := perSubtask(fn)
		v := newKeyedView[K]()
		return typed.KeyedProcessFns[K, I, O]{
			Element: func(_ *typed.KeyedCtx[K], x I, out *typed.Collector[O]) error {
				return fn.ProcessElement(&v.ctx, x, out)
			},
			OnTimer: func(_ *typed.KeyedCtx[K], ts int64, out *typed.Collector[O]) error {
				return fn.OnTimer(&v.tctx, Timestamp(ts), out)
			},
			Bind: v.bind,
			Life: lifecycleOf(fn),
		}
	}))
	out.node.Keyed = true
	return out
}
