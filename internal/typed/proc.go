package typed

import (
	"fmt"
	"log/slog"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// Env is what the process-function operators need of their subtask.
// EnvOf fills it from the task's Context; an operator test harness fills
// it with a manual clock and its own timer queue. Its methods are those of
// stream's RuntimeContext, which a user function's Open receives.
type Env struct {
	Job, Name string
	Index     int // the subtask's index
	Par       int // the operator's parallelism
	MaxPar    int // the operator's max parallelism (key groups)
	Groups    keygroup.Range
	Batch     bool
	Clock     clock.Clock
	Log       *slog.Logger
	// Schedule arms a processing-time callback on the task goroutine.
	Schedule timer.Scheduler
	// AutoWatermark is the periodic watermark interval in ms.
	AutoWatermark int64
	// EmitIdle marks the task's outputs idle or active.
	EmitIdle func(idle bool) error
	// RegisterKeyed makes keyed state part of checkpoints (nil in harnesses).
	RegisterKeyed func(task.KeyedState) error
	// Backend keeps keyed state (nil: in memory).
	Backend state.Backend
}

// EnvOf is the Env of a task's subtask.
func EnvOf(ctx *task.Context) *Env {
	return &Env{
		Job:           ctx.Job,
		Name:          ctx.Node.Name,
		Index:         ctx.Subtask,
		Par:           ctx.Parallelism,
		MaxPar:        ctx.MaxParallelism,
		Groups:        ctx.KeyGroups,
		Batch:         ctx.Mode == task.BatchMode,
		Clock:         ctx.Clock,
		Log:           ctx.Log,
		Schedule:      ctx.RegisterProcessingTimer,
		AutoWatermark: ctx.AutoWatermarkInterval,
		EmitIdle:      ctx.EmitIdle,
		RegisterKeyed: ctx.RegisterKeyedState,
		Backend:       ctx.StateBackend,
	}
}

func (e *Env) JobName() string      { return e.Job }
func (e *Env) OperatorName() string { return e.Name }
func (e *Env) Subtask() int         { return e.Index }
func (e *Env) Parallelism() int     { return e.Par }
func (e *Env) MaxParallelism() int  { return e.MaxPar }
func (e *Env) Logger() *slog.Logger { return e.Log }

// ProcFactory is the factory of the process-function operators: it
// builds the operator from an Env, so tests can build it without a task.
type ProcFactory[O any] struct {
	Factory[O]
	Build func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error)
}

// NewProcFactory returns the factory of operators build makes.
func NewProcFactory[O any](build func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error)) *ProcFactory[O] {
	f := &ProcFactory[O]{Build: build}
	f.Make = func(ctx *task.Context, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		return build(EnvOf(ctx), out, sides)
	}
	return f
}

// Input adapts a method value to a task.Input (two-input operators have
// one per input).
type Input[T any] func(v T, ts int64) error

func (f Input[T]) ProcessElement(v T, ts int64) error { return f(v, ts) }

// Lifecycle calls a user function's optional Open (once, before the first
// record) and its Close (when the subtask ends, if Open was called).
type Lifecycle struct {
	Open   func(env *Env) error
	Close  func() error
	opened bool
}

func (l *Lifecycle) DoOpen(env *Env) error {
	l.opened = true
	if l.Open != nil {
		return l.Open(env)
	}
	return nil
}

func (l *Lifecycle) DoClose() error {
	if !l.opened {
		return nil
	}
	l.opened = false
	if l.Close != nil {
		return l.Close()
	}
	return nil
}

// Time is an operator subtask's view of time: its input watermark and the
// processing-time clock.
type Time struct {
	WM    int64
	Clock clock.Clock
}

// NewTime is the time of a subtask that has seen no watermark yet.
func NewTime(clk clock.Clock) Time { return Time{WM: NoWatermarkYet, Clock: clk} }

// FnContext is what every function context has: the timestamp of the
// record (or timer) being processed, time, and side outputs (SO.Ts is the
// current timestamp).
type FnContext struct {
	T  *Time
	SO SideOutputs
}

// Timestamp is the event timestamp of the record (or timer) being processed.
func (c *FnContext) Timestamp() int64 { return c.SO.Ts }

// CurrentWatermark is the operator's input watermark.
func (c *FnContext) CurrentWatermark() int64 { return c.T.WM }

// CurrentProcessingTime is the processing time.
func (c *FnContext) CurrentProcessingTime() int64 { return c.T.Clock.NowMillis() }

// ProcessFn is a process function over an FnContext.
type ProcessFn[I, O any] func(ctx *FnContext, v I, out *Collector[O]) error

type processOp[I, O any] struct {
	env  *Env
	out  task.Output[O]
	fn   ProcessFn[I, O]
	life *Lifecycle
	time Time
	ctx  FnContext
	c    Collector[O]
}

func (p *processOp[I, O]) Open() error { return p.life.DoOpen(p.env) }

func (p *processOp[I, O]) ProcessElement(v I, ts int64) error {
	p.ctx.SO.Ts, p.c.Ts = ts, ts
	err := p.fn(&p.ctx, v, &p.c)
	return Settle(err, &p.c, &p.ctx.SO)
}

func (p *processOp[I, O]) ProcessWatermark(wm int64) error {
	p.time.WM = wm
	return p.out.EmitWatermark(wm)
}

func (p *processOp[I, O]) Finish() error { return nil }
func (p *processOp[I, O]) Close() error  { return p.life.DoClose() }

// ProcessFns are the callbacks of one subtask's process function.
type ProcessFns[I, O any] struct {
	Element ProcessFn[I, O]
	Life    Lifecycle
}

// Process applies a process function to every record of a non-keyed
// stream; fns makes the function of each subtask. Records it emits keep
// the timestamp of the record being processed.
func Process[I, O any](fns func() ProcessFns[I, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &processOp[I, O]{env: env, out: out, fn: f.Element, life: &f.Life, time: NewTime(env.Clock)}
		op.ctx.T = &op.time
		op.ctx.SO.Outs = sides
		op.c.Out = out
		return Single(op)
	})
}

// TimeDomain says whether a timer fired in event time or processing time.
type TimeDomain int

// Time domains of timers.
const (
	EventTimeDomain TimeDomain = iota
	ProcessingTimeDomain
)

// TimerTimestamp is the timestamp of records emitted by a timer: the
// timer's time for event-time timers, none for processing-time timers (as
// in Flink).
func TimerTimestamp(ts int64, domain TimeDomain) int64 {
	if domain == EventTimeDomain {
		return ts
	}
	return NoTimestamp
}

// Timers are the timers of a keyed function operator for the current
// key. Timer calls cannot fail while a key is set; an error (a call with
// no current key) sticks and fails the task after the callback.
type Timers[K comparable] struct {
	s   *timer.Service[K, state.Void]
	t   *Time
	err error
}

func (t *Timers[K]) CurrentProcessingTime() int64 { return t.t.Clock.NowMillis() }
func (t *Timers[K]) CurrentWatermark() int64      { return t.t.WM }
func (t *Timers[K]) RegisterEventTimeTimer(ts int64) {
	t.stick(t.s.RegisterEventTimer(state.Void{}, ts))
}
func (t *Timers[K]) RegisterProcessingTimeTimer(ts int64) {
	t.stick(t.s.RegisterProcessingTimer(state.Void{}, ts))
}
func (t *Timers[K]) DeleteEventTimeTimer(ts int64) {
	t.stick(t.s.DeleteEventTimer(state.Void{}, ts))
}
func (t *Timers[K]) DeleteProcessingTimeTimer(ts int64) {
	t.stick(t.s.DeleteProcessingTimer(state.Void{}, ts))
}

func (t *Timers[K]) stick(err error) {
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("stream: timer service used outside the processing of a keyed record or timer: %w", err)
	}
}

// TakeErr returns and clears the sticky error.
func (t *Timers[K]) TakeErr() error {
	err := t.err
	t.err = nil
	return err
}

// KeyedRuntime is the keyed state and timers of one keyed function
// operator subtask.
type KeyedRuntime[K comparable] struct {
	Env    *Env
	Time   Time
	Keyed  *state.Keyed[K]
	timers *timer.Service[K, state.Void]
	TS     Timers[K]
}

// Init creates the keyed state and timer service; onTimer runs for every
// timer that fires, with its key as the current key.
func (r *KeyedRuntime[K]) Init(env *Env, onTimer func(ts int64, domain TimeDomain) error) error {
	r.Env = env
	r.Time = NewTime(env.Clock)
	keyed, err := NewKeyedState[K](env.MaxPar, env.Groups, env.Clock, env.Backend, env.RegisterKeyed)
	if err != nil {
		return err
	}
	r.Keyed = keyed
	schedule := func(at int64, fire func(now int64) error) func() {
		// Processing-time timers may fire while a record of this operator
		// is still being processed further down the chain (an operator that
		// yields to the task, like async I/O): restore the record's key.
		return env.Schedule(at, func(now int64) error {
			k, had := keyed.CurrentKey()
			kg := keyed.CurrentKeyGroup()
			err := fire(now)
			if had {
				keyed.SetCurrentKeyAndGroup(k, kg)
			}
			return err
		})
	}
	if env.Batch {
		// BATCH mode fires processing-time timers at the end of the input only.
		schedule = func(int64, func(int64) error) func() { return func() {} }
	}
	r.timers = timer.New[K, state.Void](keyed, schedule,
		func(t timer.Timer[K, state.Void]) error { return onTimer(t.Time, EventTimeDomain) },
		func(t timer.Timer[K, state.Void]) error { return onTimer(t.Time, ProcessingTimeDomain) })
	r.TS = Timers[K]{s: r.timers, t: &r.Time}
	return nil
}

// CurrentKey is the key of the record (or timer) being processed.
func (r *KeyedRuntime[K]) CurrentKey() K {
	k, _ := r.Keyed.CurrentKey()
	return k
}

// Advance fires the event-time timers up to wm.
func (r *KeyedRuntime[K]) Advance(wm int64) error {
	if wm > r.Time.WM {
		r.Time.WM = wm
	}
	return r.timers.AdvanceWatermark(wm)
}

// Finish fires, in BATCH mode, every remaining timer: event-time timers
// with the final watermark, then processing-time timers (as Flink does at
// the end of a key). In STREAMING mode pending processing-time timers are
// dropped, as in Flink.
func (r *KeyedRuntime[K]) Finish() error {
	if !r.Env.Batch {
		return nil
	}
	if err := r.Advance(MaxWatermark); err != nil {
		return err
	}
	return r.timers.FireProcessingTimers(MaxWatermark)
}

// KeyedCtx is the context of a keyed function's call: the function
// context and the keyed runtime (key, state, timers); Domain is set for
// a timer's call.
type KeyedCtx[K comparable] struct {
	FnContext
	R      *KeyedRuntime[K]
	Domain TimeDomain
}

// OnTimerFn is a keyed function's OnTimer over a KeyedCtx.
type OnTimerFn[K comparable, O any] func(ctx *KeyedCtx[K], ts int64, out *Collector[O]) error

// KeyedFnOp is the part shared by the operators of keyed functions:
// keyed state, timers, the collectors and the contexts.
type KeyedFnOp[K comparable, O any] struct {
	Env  *Env
	Out  task.Output[O]
	Life *Lifecycle
	R    KeyedRuntime[K]
	C    Collector[O] // for records
	TC   Collector[O] // for timers, which may fire while a record is in flight
	Ctx  KeyedCtx[K]
	TCtx KeyedCtx[K]
	// OnTimer is the user's OnTimer.
	OnTimer OnTimerFn[K, O]
	// Bind, if set, runs when the runtime exists (in Open, before the
	// function's Open) with the runtime and the record and timer contexts.
	Bind func(r *KeyedRuntime[K], rec, tim *KeyedCtx[K])
}

// Setup prepares the operator; call it before Open.
func (k *KeyedFnOp[K, O]) Setup(env *Env, out task.Output[O], sides map[string]any, life *Lifecycle) {
	k.Env, k.Out, k.Life = env, out, life
	k.C.Out, k.TC.Out = out, out
	k.Ctx = KeyedCtx[K]{FnContext: FnContext{T: &k.R.Time, SO: SideOutputs{Outs: sides}}, R: &k.R}
	k.TCtx = KeyedCtx[K]{FnContext: FnContext{T: &k.R.Time, SO: SideOutputs{Outs: sides}}, R: &k.R}
}

func (k *KeyedFnOp[K, O]) Open() error {
	if err := k.R.Init(k.Env, k.fire); err != nil {
		return err
	}
	if k.Bind != nil {
		k.Bind(&k.R, &k.Ctx, &k.TCtx)
	}
	return k.Life.DoOpen(k.Env)
}

func (k *KeyedFnOp[K, O]) fire(ts int64, domain TimeDomain) error {
	out := TimerTimestamp(ts, domain)
	k.TCtx.SO.Ts, k.TC.Ts, k.TCtx.Domain = out, out, domain
	if k.OnTimer == nil {
		return k.Settle(nil, &k.TC, &k.TCtx.SO)
	}
	err := k.OnTimer(&k.TCtx, ts, &k.TC)
	return k.Settle(err, &k.TC, &k.TCtx.SO)
}

// Element prepares the record context for key and ts.
func (k *KeyedFnOp[K, O]) Element(key K, ts int64) {
	k.R.Keyed.SetCurrentKey(key)
	k.Ctx.SO.Ts, k.C.Ts = ts, ts
}

// Settle is Settle with the timer service's sticky error.
func (k *KeyedFnOp[K, O]) Settle(err error, c *Collector[O], so *SideOutputs) error {
	terr := k.R.TS.TakeErr()
	if err = Settle(err, c, so); err != nil {
		return err
	}
	return terr
}

func (k *KeyedFnOp[K, O]) ProcessWatermark(wm int64) error {
	if err := k.R.Advance(wm); err != nil {
		return err
	}
	return k.Out.EmitWatermark(wm)
}

func (k *KeyedFnOp[K, O]) Finish() error { return k.R.Finish() }
func (k *KeyedFnOp[K, O]) Close() error  { return k.Life.DoClose() }

type keyedProcessOp[K comparable, I, O any] struct {
	KeyedFnOp[K, O]
	key func(I) K
	fn  KeyedProcessFn[K, I, O]
}

func (p *keyedProcessOp[K, I, O]) ProcessElement(v I, ts int64) error {
	p.Element(p.key(v), ts)
	err := p.fn(&p.Ctx, v, &p.C)
	return p.Settle(err, &p.C, &p.Ctx.SO)
}

// KeyedProcessFn is a keyed function's ProcessElement over a KeyedCtx.
type KeyedProcessFn[K comparable, I, O any] func(ctx *KeyedCtx[K], v I, out *Collector[O]) error

// KeyedProcessFns are the callbacks of one subtask's keyed process function.
type KeyedProcessFns[K comparable, I, O any] struct {
	Element KeyedProcessFn[K, I, O]
	OnTimer OnTimerFn[K, O]
	Bind    func(r *KeyedRuntime[K], rec, tim *KeyedCtx[K])
	Life    Lifecycle
}

// KeyedProcess applies a keyed process function to a keyed stream (key
// selects the key); fns makes the function of each subtask. Records it
// emits while processing a record keep that record's timestamp; records
// emitted by an event-time timer carry the timer's time, those of a
// processing-time timer none. In BATCH mode, event-time timers fire with
// the final watermark and processing-time timers at the end of the input.
func KeyedProcess[K comparable, I, O any](key func(I) K, fns func() KeyedProcessFns[K, I, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &keyedProcessOp[K, I, O]{key: key, fn: f.Element}
		op.Setup(env, out, sides, &f.Life)
		op.OnTimer, op.Bind = f.OnTimer, f.Bind
		return Single(op)
	})
}
