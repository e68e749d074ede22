package stream

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
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

// procEnv is what the process-function operators need of their subtask.
// Factories fill it from the task's Context; the operator test harness
// fills it with a manual clock and its own timer queue.
type procEnv struct {
	job, name      string
	subtask        int
	parallelism    int
	maxParallelism int
	groups         keygroup.Range
	batch          bool
	clock          clock.Clock
	log            *slog.Logger
	// schedule arms a processing-time callback on the task goroutine.
	schedule timer.Scheduler
	// autoWatermark is the periodic watermark interval in ms.
	autoWatermark int64
	// emitIdle marks the task's outputs idle or active.
	emitIdle func(idle bool) error
	// registerKeyed makes keyed state part of checkpoints (nil in harnesses).
	registerKeyed func(task.KeyedState) error
	// backend keeps keyed state (nil: in memory).
	backend state.Backend
}

// newKeyedState creates the keyed state of an operator subtask and
// registers it for checkpoints and restore (the task closes it with the
// operator).
func newKeyedState[K comparable](maxPar int, groups keygroup.Range, clk clock.Clock, backend state.Backend, register func(task.KeyedState) error) (*state.Keyed[K], error) {
	keyed, err := state.NewKeyedWithBackend[K](maxPar, groups, clk, backend)
	if err != nil {
		return nil, err
	}
	if register != nil {
		if err := register(keyed); err != nil {
			keyed.Close()
			return nil, err
		}
	}
	return keyed, nil
}

func procEnvOf(ctx *task.Context) *procEnv {
	return &procEnv{
		job:            ctx.Job,
		name:           ctx.Node.Name,
		subtask:        ctx.Subtask,
		parallelism:    ctx.Parallelism,
		maxParallelism: ctx.MaxParallelism,
		groups:         ctx.KeyGroups,
		batch:          ctx.Mode == task.BatchMode,
		clock:          ctx.Clock,
		log:            ctx.Log,
		schedule:       ctx.RegisterProcessingTimer,
		autoWatermark:  ctx.AutoWatermarkInterval,
		emitIdle:       ctx.EmitIdle,
		registerKeyed:  ctx.RegisterKeyedState,
		backend:        ctx.StateBackend,
	}
}

func (e *procEnv) JobName() string      { return e.job }
func (e *procEnv) OperatorName() string { return e.name }
func (e *procEnv) Subtask() int         { return e.subtask }
func (e *procEnv) Parallelism() int     { return e.parallelism }
func (e *procEnv) MaxParallelism() int  { return e.maxParallelism }
func (e *procEnv) Logger() *slog.Logger { return e.log }

// procFactory is the factory of the process-function operators: it builds
// the operator from a procEnv, so tests can build it without a task.
type procFactory[O any] struct {
	factory[O]
	build func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error)
}

func newProcFactory[O any](build func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error)) *procFactory[O] {
	f := &procFactory[O]{build: build}
	f.Make = func(ctx *task.Context, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		return build(procEnvOf(ctx), out, sides)
	}
	return f
}

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

// inputFunc adapts a method value to a task.Input (two-input operators
// have one per input).
type inputFunc[T any] func(v T, ts int64) error

func (f inputFunc[T]) ProcessElement(v T, ts int64) error { return f(v, ts) }

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

// lifecycle calls a user function's optional Open and Close.
type lifecycle struct {
	fn     any
	opened bool
}

func (l *lifecycle) open(rc RuntimeContext) error {
	l.opened = true
	if o, ok := l.fn.(interface{ Open(RuntimeContext) error }); ok {
		return o.Open(rc)
	}
	return nil
}

func (l *lifecycle) close() error {
	if !l.opened {
		return nil
	}
	l.opened = false
	if c, ok := l.fn.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// opTime is an operator subtask's view of time: its input watermark and
// the processing-time clock.
type opTime struct {
	wm    int64
	clock clock.Clock
}

// fnContext is what every function context has: the timestamp of the
// record (or timer) being processed, time, and side outputs.
type fnContext struct {
	t  *opTime
	so sideOutputs // so.ts is the current timestamp
}

// Timestamp is the event timestamp of the record being processed (for an
// event-time timer: the timer's time), or NoTimestamp when it has none.
func (c *fnContext) Timestamp() Timestamp { return Timestamp(c.so.Ts) }

// CurrentWatermark is the operator's current input watermark (math.MinInt64
// before the first one).
func (c *fnContext) CurrentWatermark() Timestamp { return Timestamp(c.t.wm) }

// CurrentProcessingTime is the processing time.
func (c *fnContext) CurrentProcessingTime() Timestamp { return Timestamp(c.t.clock.NowMillis()) }

func (c *fnContext) sides() *sideOutputs { return &c.so }

// settle returns the first of a callback's error and the sticky errors of
// its collector and side outputs, clearing them.
func settle[O any](err error, c *collector[O], so *sideOutputs) error {
	cerr := c.TakeErr()
	serr := so.TakeErr()
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	return serr
}

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

type processOp[I, O any] struct {
	env  *procEnv
	out  task.Output[O]
	fn   ProcessFunction[I, O]
	life lifecycle
	time opTime
	ctx  ProcessContext
	c    collector[O]
}

func (p *processOp[I, O]) Open() error { return p.life.open(p.env) }

func (p *processOp[I, O]) ProcessElement(v I, ts int64) error {
	p.ctx.so.Ts, p.c.Ts = ts, ts
	err := p.fn.ProcessElement(&p.ctx, v, &p.c)
	return settle(err, &p.c, &p.ctx.so)
}

func (p *processOp[I, O]) ProcessWatermark(wm int64) error {
	p.time.wm = wm
	return p.out.EmitWatermark(wm)
}

func (p *processOp[I, O]) Finish() error { return nil }
func (p *processOp[I, O]) Close() error  { return p.life.close() }

// Process applies a ProcessFunction to every record of a non-keyed stream.
// Records fn emits keep the timestamp of the record being processed.
func Process[I, O any](in DataStream[I], fn ProcessFunction[I, O]) DataStream[O] {
	checkFn(in.env, "Process", fn)
	return procOneInput(in, "process", "Process", newProcFactory(func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		op := &processOp[I, O]{env: env, out: out, fn: fn, life: lifecycle{fn: adaptLifecycle(fn)}}
		op.time = opTime{wm: noWatermarkYet, clock: env.clock}
		op.ctx.t = &op.time
		op.ctx.so.Outs = sides
		op.c.Out = out
		return op, []any{op}, nil
	}))
}

const noWatermarkYet int64 = -1 << 63

// TimeDomain says whether a timer fired in event time or processing time.
type TimeDomain int

// Time domains of timers.
const (
	// EventTimeDomain timers fire when the watermark passes them.
	EventTimeDomain TimeDomain = iota
	// ProcessingTimeDomain timers fire when the clock passes them.
	ProcessingTimeDomain
)

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

// timerService is the TimerService of a keyed function operator. Timer
// calls cannot fail while a key is set; an error (a call with no current
// key) sticks and fails the task after the callback.
type timerService[K comparable] struct {
	s   *timer.Service[K, state.Void]
	t   *opTime
	err error
}

func (t *timerService[K]) CurrentProcessingTime() Timestamp {
	return Timestamp(t.t.clock.NowMillis())
}
func (t *timerService[K]) CurrentWatermark() Timestamp { return Timestamp(t.t.wm) }
func (t *timerService[K]) RegisterEventTimeTimer(ts Timestamp) {
	t.stick(t.s.RegisterEventTimer(state.Void{}, int64(ts)))
}
func (t *timerService[K]) RegisterProcessingTimeTimer(ts Timestamp) {
	t.stick(t.s.RegisterProcessingTimer(state.Void{}, int64(ts)))
}
func (t *timerService[K]) DeleteEventTimeTimer(ts Timestamp) {
	t.stick(t.s.DeleteEventTimer(state.Void{}, int64(ts)))
}
func (t *timerService[K]) DeleteProcessingTimeTimer(ts Timestamp) {
	t.stick(t.s.DeleteProcessingTimer(state.Void{}, int64(ts)))
}

func (t *timerService[K]) stick(err error) {
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("stream: timer service used outside the processing of a keyed record or timer: %w", err)
	}
}

func (t *timerService[K]) takeErr() error {
	err := t.err
	t.err = nil
	return err
}

// keyedRuntime is the keyed state and timers of one keyed function
// operator subtask.
type keyedRuntime[K comparable] struct {
	env    *procEnv
	time   opTime
	keyed  *state.Keyed[K]
	states *keyedStates[K]
	timers *timer.Service[K, state.Void]
	ts     timerService[K]
}

// init creates the keyed state and timer service; onTimer runs for every
// timer that fires, with its key as the current key.
func (r *keyedRuntime[K]) init(env *procEnv, onTimer func(ts int64, domain TimeDomain) error) error {
	r.env = env
	r.time = opTime{wm: noWatermarkYet, clock: env.clock}
	keyed, err := newKeyedState[K](env.maxParallelism, env.groups, env.clock, env.backend, env.registerKeyed)
	if err != nil {
		return err
	}
	r.keyed = keyed
	r.states = newKeyedStates(keyed)
	schedule := func(at int64, fire func(now int64) error) func() {
		// Processing-time timers may fire while a record of this operator
		// is still being processed further down the chain (an operator that
		// yields to the task, like async I/O): restore the record's key.
		return env.schedule(at, func(now int64) error {
			k, had := keyed.CurrentKey()
			kg := keyed.CurrentKeyGroup()
			err := fire(now)
			if had {
				keyed.SetCurrentKeyAndGroup(k, kg)
			}
			return err
		})
	}
	if env.batch {
		// BATCH mode fires processing-time timers at the end of the input only.
		schedule = func(int64, func(int64) error) func() { return func() {} }
	}
	r.timers = timer.New[K, state.Void](keyed, schedule,
		func(t timer.Timer[K, state.Void]) error { return onTimer(t.Time, EventTimeDomain) },
		func(t timer.Timer[K, state.Void]) error { return onTimer(t.Time, ProcessingTimeDomain) })
	r.ts = timerService[K]{s: r.timers, t: &r.time}
	return nil
}

// advance fires the event-time timers up to wm.
func (r *keyedRuntime[K]) advance(wm int64) error {
	if wm > r.time.wm {
		r.time.wm = wm
	}
	return r.timers.AdvanceWatermark(wm)
}

// finish fires, in BATCH mode, every remaining timer: event-time timers
// with the final watermark, then processing-time timers (as Flink does at
// the end of a key). In STREAMING mode pending processing-time timers are
// dropped, as in Flink.
func (r *keyedRuntime[K]) finish() error {
	if !r.env.batch {
		return nil
	}
	if err := r.advance(maxWatermark); err != nil {
		return err
	}
	return r.timers.FireProcessingTimers(maxWatermark)
}

// KeyedContext is the context of a keyed function's call for a record. It
// gives the record's key, the timer service and, through the state
// functions (Value, List, MapOf, Reducing, Aggregating), the key's state.
// It is only valid during the call.
type KeyedContext[K comparable] struct {
	fnContext
	r *keyedRuntime[K]
}

// CurrentKey is the key of the record (or timer) being processed.
func (c *KeyedContext[K]) CurrentKey() K {
	k, _ := c.r.keyed.CurrentKey()
	return k
}

// TimerService registers timers for the current key.
func (c *KeyedContext[K]) TimerService() TimerService { return &c.r.ts }

func (c *KeyedContext[K]) keyedStates() *keyedStates[K] { return c.r.states }

// OnTimerContext is the context of a keyed function's OnTimer call.
type OnTimerContext[K comparable] struct {
	KeyedContext[K]
	domain TimeDomain
}

// TimeDomain says whether the firing timer is an event-time or a
// processing-time timer.
func (c *OnTimerContext[K]) TimeDomain() TimeDomain { return c.domain }

// timerTimestamp is the timestamp of records emitted by a timer: the
// timer's time for event-time timers, none for processing-time timers (as
// in Flink).
func timerTimestamp(ts int64, domain TimeDomain) int64 {
	if domain == EventTimeDomain {
		return ts
	}
	return noTimestamp
}

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

// keyedFnOp is the part shared by the operators of keyed functions with
// one kind of OnTimer context: keyed state, timers, the collector and the
// contexts.
type keyedFnOp[K comparable, O any] struct {
	env  *procEnv
	out  task.Output[O]
	life lifecycle
	r    keyedRuntime[K]
	c    collector[O] // for records
	tc   collector[O] // for timers, which may fire while a record is in flight
	ctx  KeyedContext[K]
	tctx OnTimerContext[K]
	// onTimer is the user's OnTimer.
	onTimer func(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error
}

func (k *keyedFnOp[K, O]) setup(env *procEnv, out task.Output[O], sides map[string]any, fn any) {
	k.env, k.out = env, out
	k.life = lifecycle{fn: adaptLifecycle(fn)}
	k.c.Out, k.tc.Out = out, out
	k.ctx = KeyedContext[K]{fnContext: fnContext{t: &k.r.time, so: sideOutputs{Outs: sides}}, r: &k.r}
	k.tctx = OnTimerContext[K]{KeyedContext: KeyedContext[K]{fnContext: fnContext{t: &k.r.time, so: sideOutputs{Outs: sides}}, r: &k.r}}
}

func (k *keyedFnOp[K, O]) Open() error {
	if err := k.r.init(k.env, k.fire); err != nil {
		return err
	}
	return k.life.open(k.env)
}

func (k *keyedFnOp[K, O]) fire(ts int64, domain TimeDomain) error {
	out := timerTimestamp(ts, domain)
	k.tctx.so.Ts, k.tc.Ts, k.tctx.domain = out, out, domain
	err := k.onTimer(&k.tctx, Timestamp(ts), &k.tc)
	return k.settle(err, &k.tc, &k.tctx.so)
}

// element prepares the record context for key and ts.
func (k *keyedFnOp[K, O]) element(key K, ts int64) {
	k.r.keyed.SetCurrentKey(key)
	k.ctx.so.Ts, k.c.Ts = ts, ts
}

func (k *keyedFnOp[K, O]) settle(err error, c *collector[O], so *sideOutputs) error {
	terr := k.r.ts.takeErr()
	if err = settle(err, c, so); err != nil {
		return err
	}
	return terr
}

func (k *keyedFnOp[K, O]) ProcessWatermark(wm int64) error {
	if err := k.r.advance(wm); err != nil {
		return err
	}
	return k.out.EmitWatermark(wm)
}

func (k *keyedFnOp[K, O]) Finish() error { return k.r.finish() }
func (k *keyedFnOp[K, O]) Close() error  { return k.life.close() }

type keyedProcessOp[K comparable, I, O any] struct {
	keyedFnOp[K, O]
	key func(I) K
	fn  KeyedProcessFunction[K, I, O]
}

func (p *keyedProcessOp[K, I, O]) ProcessElement(v I, ts int64) error {
	p.element(p.key(v), ts)
	err := p.fn.ProcessElement(&p.ctx, v, &p.c)
	return p.settle(err, &p.c, &p.ctx.so)
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
	key := in.key
	out := procOneInput(in.DataStream, "keyed-process", "KeyedProcess", newProcFactory(func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		op := &keyedProcessOp[K, I, O]{key: key, fn: fn}
		op.setup(env, out, sides, fn)
		op.onTimer = fn.OnTimer
		return op, []any{op}, nil
	}))
	out.node.Keyed = true
	return out
}
