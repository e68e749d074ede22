// Package windowing is the window operator of the typed Go API (Flink's
// WindowOperator and EvictingWindowOperator): windows per key assigned to
// each record, their contents kept in keyed state (incrementally, or every
// element for process functions and evictors), triggers with their timers
// and their state, the merging-window set of session windows, cleanup at the
// end of the allowed lateness, late records to a side output, and the
// per-window and per-key state of process window functions.
//
// Like the rest of internal/typed it knows nothing of stream's user-facing
// types: the assigner, the trigger, the evictor and the window function
// reach it through the small interfaces and callbacks defined here, which
// stream implements with one adapter per subtask around the user's values.
// Window types are the user's own: any comparable type with a largest
// timestamp (Window), in the front end's timestamp type TS, milliseconds
// as int64.
package windowing

import (
	"fmt"
	"math"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
	"github.com/sluice/sluice/internal/runtime/window"
	"github.com/sluice/sluice/internal/typed"
)

// Window is the constraint on window types: comparable, with the largest
// timestamp that belongs to the window (window results carry it).
type Window[TS ~int64] interface {
	comparable
	MaxTimestamp() TS
}

// Spec is a window operator's configuration, shared by its subtasks.
type Spec[T any, K comparable, W Window[TS], TS ~int64] struct {
	// Key selects a record's key.
	Key func(T) K
	// MergeWindows is set when windows merge (sessions): it calls merge
	// once for every group of two or more of windows that must become one.
	MergeWindows func(windows []W, merge func(members []W, result W))
	// EventTime says whether the windows are in event time: they then fire
	// on watermarks and have allowed lateness.
	EventTime bool
	// Lateness is the allowed lateness of event-time windows, in ms.
	Lateness int64
	// LateTag is the side output of records later than the allowed
	// lateness ("": they are dropped).
	LateTag string
	// DefaultEventTrigger says the trigger is the built-in event-time
	// trigger of event-time windows that do not merge, which allows fast
	// paths (see addToWindow and clearAllState).
	DefaultEventTrigger bool
	// PerWindowMergingErr is the error per-window state of merging windows
	// fails the job with (stream's ErrPerWindowStateMerging).
	PerWindowMergingErr error
}

// cleanupTime is when a window's state is dropped: the end of the window
// plus the allowed lateness in event time (saturating at the end of time),
// the end of the window in processing time.
func (s *Spec[T, K, W, TS]) cleanupTime(w W) int64 {
	m := int64(w.MaxTimestamp())
	if !s.EventTime {
		return m
	}
	if c := m + s.Lateness; c >= m {
		return c
	}
	return math.MaxInt64
}

// Assigner assigns a record to its windows: it appends the windows of v,
// whose event timestamp is ts (typed.NoTimestamp if none), to dst.
type Assigner[T any, W comparable] interface {
	Assign(v T, ts int64, dst []W) ([]W, error)
}

// Fns are the callbacks of one subtask's window operator, adapted from the
// user's assigner, trigger and evictor.
type Fns[T any, K comparable, W Window[TS], TS ~int64] struct {
	Assigner Assigner[T, W]
	Trigger  Trigger[T, K, W, TS]
	// Evictor is set for evicting windows: they keep every element.
	Evictor Evictor[T, K, W, TS]
}

// New is the window operator that computes f over the windows of spec;
// fns makes the callbacks of each subtask. Late records go to the side
// output spec.LateTag when it is read.
func New[T, OUT any, K comparable, W Window[TS], TS ~int64](spec *Spec[T, K, W, TS], fns func(env *typed.Env) Fns[T, K, W, TS], f Function[T, OUT, K, W, TS]) *typed.ProcFactory[OUT] {
	return typed.NewProcFactory(func(env *typed.Env, out task.Output[OUT], sides map[string]any) (task.Operator, []any, error) {
		p := parts[T, K, W, TS]{spec: spec, fns: fns(env), env: env, emitWatermark: out.EmitWatermark}
		p.sides = typed.SideOutputs{Outs: sides}
		if spec.LateTag != "" {
			if o, ok := sides[spec.LateTag]; ok {
				late, ok := o.(task.Output[T])
				if !ok {
					return nil, nil, fmt.Errorf("stream: the late-data side output %q does not carry the window's input type %T", spec.LateTag, *new(T))
				}
				p.late = late
			}
		}
		var op task.Operator
		if p.fns.Evictor != nil {
			op = f.evicting(p, out)
		} else {
			op = f.incremental(p, out)
		}
		return typed.Single(op)
	})
}

// parts is what every window operator subtask is made of, whatever it
// computes.
type parts[T any, K comparable, W Window[TS], TS ~int64] struct {
	spec          *Spec[T, K, W, TS]
	fns           Fns[T, K, W, TS]
	env           *typed.Env
	late          task.Output[T]
	sides         typed.SideOutputs
	emitWatermark func(int64) error
}

// winEnv is the part of a window operator that function and trigger
// contexts see.
type winEnv[K comparable, W Window[TS], TS ~int64] struct {
	keyed   *state.Keyed[K]
	timers  *timer.Service[K, W]
	clock   clock.Clock
	global  *typed.States[K]
	sides   typed.SideOutputs
	merging bool
	// mergingErr is Spec.PerWindowMergingErr.
	mergingErr error
	// err is the first error of a callback that cannot return one (timer
	// registration from a trigger).
	err error
}

func (e *winEnv[K, W, TS]) fail(err error) {
	if err != nil && e.err == nil {
		e.err = err
	}
}

func (e *winEnv[K, W, TS]) takeErr() error {
	err := e.err
	e.err = nil
	return err
}

// contents is a window's state: what records are added to, merged, and
// handed to the window function when it fires.
type contents[T any, W comparable, ACC any] interface {
	add(ns W, v T, ts int64) (existed bool, err error)
	get(ns W) (ACC, bool, error)
	clear(ns W) error
	// merge moves the contents of sources into target.
	merge(target W, sources []W) error
}

// windowFn turns a window's contents into results.
type windowFn[K comparable, W comparable, ACC any] interface {
	// process emits the results of window w, whose contents acc are kept
	// in the namespace of stateW.
	process(key K, w, stateW W, acc ACC) error
	// clear is called when window w's state is dropped.
	clear(key K, w W) error
}

// windowOp is the window operator (Flink's WindowOperator and
// EvictingWindowOperator: evicting windows keep every element and evict
// in their windowFn).
type windowOp[T any, K comparable, W Window[TS], TS ~int64, ACC any] struct {
	parts[T, K, W, TS]
	winEnv winEnv[K, W, TS]
	trig   TriggerCtx[K, W, TS]

	newContents func(keyed *state.Keyed[K]) (contents[T, W, ACC], error)
	newFn       func(env *winEnv[K, W, TS], c contents[T, W, ACC]) windowFn[K, W, ACC]
	contents    contents[T, W, ACC]
	fn          windowFn[K, W, ACC]

	sets    *state.ValueTable[K, state.Void, *window.Set[W]]
	scratch window.Scratch[W]
	mergeWs window.MergeFunc[W]
	onMerge window.Merge[W]
	buf     []W
	// procDue is the earliest processing-time timer the timer service has
	// scheduled (MaxInt64: none).
	procDue int64
}

func newOp[T any, K comparable, W Window[TS], TS ~int64, ACC any](
	p parts[T, K, W, TS],
	newContents func(keyed *state.Keyed[K]) (contents[T, W, ACC], error),
	newFn func(env *winEnv[K, W, TS], c contents[T, W, ACC]) windowFn[K, W, ACC],
) *windowOp[T, K, W, TS, ACC] {
	return &windowOp[T, K, W, TS, ACC]{parts: p, newContents: newContents, newFn: newFn}
}

func (op *windowOp[T, K, W, TS, ACC]) Open() error {
	env := op.env
	keyed, err := typed.NewKeyedState[K](env.MaxPar, env.Groups, env.Clock, env.Backend, env.RegisterKeyed)
	if err != nil {
		return err
	}
	op.winEnv = winEnv[K, W, TS]{keyed: keyed, clock: env.Clock, global: typed.NewStates(keyed), sides: op.sides,
		merging: op.spec.MergeWindows != nil, mergingErr: op.spec.PerWindowMergingErr}
	op.trig = TriggerCtx[K, W, TS]{env: &op.winEnv, tables: map[string]*trigTable[K, W, TS]{}, hs: map[any]any{}}
	op.procDue = math.MaxInt64
	op.winEnv.timers = timer.New(keyed, op.scheduleProc,
		func(t timer.Timer[K, W]) error { return op.onTimer(t, true) },
		func(t timer.Timer[K, W]) error { return op.onTimer(t, false) })
	if op.contents, err = op.newContents(keyed); err != nil {
		return err
	}
	op.fn = op.newFn(&op.winEnv, op.contents)
	if op.spec.MergeWindows != nil {
		if op.sets, err = state.NewValueTable[K, state.Void, *window.Set[W]](keyed, "merging-window-set", state.TTL{}); err != nil {
			return err
		}
		op.mergeWs = op.spec.MergeWindows
		op.onMerge = op.mergeWindows
	}
	return nil
}

// scheduleProc arms the task's processing-time callback for the timer
// service and remembers the deadline, so records can fire due timers first.
func (op *windowOp[T, K, W, TS, ACC]) scheduleProc(at int64, fn func(now int64) error) func() {
	op.procDue = at
	cancel := op.env.Schedule(at, func(now int64) error {
		op.procDue = math.MaxInt64
		return fn(now)
	})
	return func() {
		op.procDue = math.MaxInt64
		cancel()
	}
}

func (op *windowOp[T, K, W, TS, ACC]) ProcessElement(v T, ts int64) error {
	spec := op.spec
	if op.procDue != math.MaxInt64 {
		// Processing-time timers that are due fire before the record, as
		// if they had fired on time while records were queued.
		if now := op.env.Clock.NowMillis(); now >= op.procDue {
			if err := op.winEnv.timers.FireProcessingTimers(now); err != nil {
				return err
			}
		}
	}
	key := spec.Key(v)
	op.winEnv.keyed.SetCurrentKey(key)
	var err error
	op.buf, err = op.fns.Assigner.Assign(v, ts, op.buf[:0])
	if err != nil {
		return err
	}
	skipped := true
	if spec.MergeWindows != nil {
		skipped, err = op.addToMergingWindows(key, v, ts)
	} else {
		for _, w := range op.buf {
			if op.isWindowLate(w) {
				continue
			}
			skipped = false
			if err = op.addToWindow(key, w, w, v, ts); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if skipped && spec.EventTime && ts+spec.Lateness <= op.winEnv.timers.CurrentWatermark() && op.late != nil {
		// Late beyond the allowed lateness: to the side output (or dropped).
		if err := op.late.Collect(v, ts); err != nil {
			return err
		}
	}
	return op.winEnv.takeErr()
}

// isWindowLate reports whether an event-time window has been cleaned up
// already (its end plus the allowed lateness is behind the watermark).
func (op *windowOp[T, K, W, TS, ACC]) isWindowLate(w W) bool {
	return op.spec.EventTime && op.spec.cleanupTime(w) <= op.winEnv.timers.CurrentWatermark()
}

// addToWindow adds a record to window w (whose contents live in stateW's
// namespace) and runs the trigger.
func (op *windowOp[T, K, W, TS, ACC]) addToWindow(key K, w, stateW W, v T, ts int64) error {
	existed, err := op.contents.add(stateW, v, ts)
	if err != nil {
		return err
	}
	spec := op.spec
	if existed && spec.DefaultEventTrigger && int64(w.MaxTimestamp()) > op.winEnv.timers.CurrentWatermark() {
		// Fast path: with the built-in event-time trigger, a window that
		// already had contents and is not late has its trigger and cleanup
		// timers registered; the trigger would register them again (a
		// no-op) and continue.
		return nil
	}
	op.trig.w = w
	res := op.fns.Trigger.OnElement(v, ts, &op.trig)
	if res.IsFire() {
		acc, ok, err := op.contents.get(stateW)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := op.fn.process(key, w, stateW, acc); err != nil {
			return err
		}
	}
	if res.IsPurge() {
		if err := op.contents.clear(stateW); err != nil {
			return err
		}
	}
	if spec.DefaultEventTrigger && spec.Lateness == 0 {
		// The cleanup timer is the trigger's own timer at the window's end,
		// registered just now (a window it would fire at once is late).
		return nil
	}
	op.registerCleanupTimer(w)
	return nil
}

func (op *windowOp[T, K, W, TS, ACC]) addToMergingWindows(key K, v T, ts int64) (skipped bool, err error) {
	set, ok, err := op.sets.Get(state.Void{})
	if err != nil {
		return true, err
	}
	if !ok {
		set = &window.Set[W]{}
		if err := op.sets.Put(state.Void{}, set); err != nil {
			return true, err
		}
	}
	skipped = true
	for _, w := range op.buf {
		actual, err := set.Add(w, op.mergeWs, &op.scratch, op.onMerge)
		if err != nil {
			return skipped, err
		}
		if op.isWindowLate(actual) {
			if err := set.Retire(actual); err != nil {
				return skipped, fmt.Errorf("stream: window %v: %w", actual, err)
			}
			continue
		}
		skipped = false
		stateW, ok := set.StateWindow(actual)
		if !ok {
			return skipped, fmt.Errorf("stream: window %v: %w", w, window.ErrNotInFlight)
		}
		if err := op.addToWindow(key, actual, stateW, v, ts); err != nil {
			return skipped, err
		}
	}
	return skipped, op.persistSet(set)
}

// persistSet writes a key's merging window set back (backends other than
// the hashmap do not share the pointer) or drops it once it is empty.
func (op *windowOp[T, K, W, TS, ACC]) persistSet(set *window.Set[W]) error {
	if set.Len() == 0 {
		return op.sets.Delete(state.Void{})
	}
	return op.sets.Put(state.Void{}, set)
}

// mergeWindows is called when windows merge into result: the trigger
// re-registers its timers for result and merges its state, the merged
// windows' triggers and cleanup timers are dropped, and their contents are
// merged into result's state window.
func (op *windowOp[T, K, W, TS, ACC]) mergeWindows(result W, merged []W, stateResult W, mergedStates []W) error {
	spec := op.spec
	if spec.EventTime {
		if wm := op.winEnv.timers.CurrentWatermark(); int64(result.MaxTimestamp())+spec.Lateness <= wm {
			return fmt.Errorf("stream: the end timestamp of an event-time window cannot become earlier than the current watermark by merging (current watermark %d, window %v)", wm, result)
		}
	} else if now := op.env.Clock.NowMillis(); int64(result.MaxTimestamp()) <= now {
		return fmt.Errorf("stream: the end timestamp of a processing-time window cannot become earlier than the current processing time by merging (current processing time %d, window %v)", now, result)
	}
	op.trig.w, op.trig.merged = result, merged
	op.fns.Trigger.OnMerge(&op.trig)
	op.trig.merged = nil
	for _, m := range merged {
		op.trig.w = m
		op.fns.Trigger.Clear(&op.trig)
		op.deleteCleanupTimer(m)
	}
	return op.contents.merge(stateResult, mergedStates)
}

func (op *windowOp[T, K, W, TS, ACC]) registerCleanupTimer(w W) {
	t := op.spec.cleanupTime(w)
	if t == math.MaxInt64 {
		return // no cleanup at the end of time
	}
	if op.spec.EventTime {
		op.winEnv.fail(op.winEnv.timers.RegisterEventTimer(w, t))
	} else {
		op.winEnv.fail(op.winEnv.timers.RegisterProcessingTimer(w, t))
	}
}

func (op *windowOp[T, K, W, TS, ACC]) deleteCleanupTimer(w W) {
	t := op.spec.cleanupTime(w)
	if t == math.MaxInt64 {
		return
	}
	if op.spec.EventTime {
		op.winEnv.fail(op.winEnv.timers.DeleteEventTimer(w, t))
	} else {
		op.winEnv.fail(op.winEnv.timers.DeleteProcessingTimer(w, t))
	}
}

// onTimer handles an event-time (eventTime) or processing-time timer of
// window t.Namespace; the timer service has set the timer's key.
func (op *windowOp[T, K, W, TS, ACC]) onTimer(t timer.Timer[K, W], eventTime bool) error {
	spec := op.spec
	w, stateW := t.Namespace, t.Namespace
	var set *window.Set[W]
	if spec.MergeWindows != nil {
		s, ok, err := op.sets.Get(state.Void{})
		if err != nil {
			return err
		}
		if !ok {
			return nil // a timer of a window that is gone
		}
		sw, ok := s.StateWindow(w)
		if !ok {
			return nil
		}
		set, stateW = s, sw
	}
	op.trig.w = w
	var res TriggerResult
	if eventTime {
		res = op.fns.Trigger.OnEventTime(t.Time, &op.trig)
	} else {
		res = op.fns.Trigger.OnProcessingTime(t.Time, &op.trig)
	}
	if res.IsFire() {
		acc, ok, err := op.contents.get(stateW)
		if err != nil {
			return err
		}
		if ok {
			if err := op.fn.process(t.Key, w, stateW, acc); err != nil {
				return err
			}
		}
	}
	if res.IsPurge() {
		if err := op.contents.clear(stateW); err != nil {
			return err
		}
	}
	if spec.EventTime == eventTime && t.Time == spec.cleanupTime(w) {
		if err := op.clearAllState(t.Key, w, stateW, set); err != nil {
			return err
		}
	}
	if set != nil {
		if err := op.persistSet(set); err != nil {
			return err
		}
	}
	return op.winEnv.takeErr()
}

// clearAllState drops everything of window w: contents, trigger state and
// timers, the window function's per-window state, and its place in the
// merging window set.
func (op *windowOp[T, K, W, TS, ACC]) clearAllState(key K, w, stateW W, set *window.Set[W]) error {
	if err := op.contents.clear(stateW); err != nil {
		return err
	}
	if !op.spec.DefaultEventTrigger {
		// (The built-in event-time trigger's only timer, at the window's
		// end, has fired by the time the window is cleaned up.)
		op.trig.w = w
		op.fns.Trigger.Clear(&op.trig)
	}
	if err := op.fn.clear(key, w); err != nil {
		return err
	}
	if set != nil {
		if err := set.Retire(w); err != nil {
			return fmt.Errorf("stream: window %v: %w", w, err)
		}
	}
	return nil
}

func (op *windowOp[T, K, W, TS, ACC]) ProcessWatermark(wm int64) error {
	if err := op.winEnv.timers.AdvanceWatermark(wm); err != nil {
		return err
	}
	return op.emitWatermark(wm)
}

// Finish ends the input. In BATCH mode processing-time timers fire now (as
// Flink does at the end of a key); in STREAMING mode pending ones are
// dropped. Event-time windows have fired on the final watermark already.
func (op *windowOp[T, K, W, TS, ACC]) Finish() error {
	if !op.env.Batch {
		return nil
	}
	return op.winEnv.timers.FireProcessingTimers(math.MaxInt64)
}

func (op *windowOp[T, K, W, TS, ACC]) Close() error { return nil }
