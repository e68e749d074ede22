package stream

import (
	"errors"
	"fmt"
	"github.com/sluice/sluice/internal/typed"
	"math"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
	"github.com/sluice/sluice/internal/runtime/window"
)

// windowSpec is a window operator's configuration, shared by its subtasks.
type windowSpec[T any, K comparable, W AnyWindow] struct {
	key      func(T) K
	assigner WindowAssigner[W]
	// elemAssigner is set when the assigner needs the record.
	elemAssigner ElementWindowAssigner[T, W]
	// merging is set when windows merge (sessions).
	merging MergingWindowAssigner[W]
	trigger Trigger
	// elemTrigger is set when the trigger looks at the records.
	elemTrigger ElementTrigger[T]
	evictor     Evictor
	lateness    int64 // ms
	lateTag     string
	eventTime   bool
	// defaultEventTrigger: the trigger is the built-in EventTimeTrigger of
	// event-time windows that do not merge, which allows fast paths (see
	// addToWindow and clearAllState).
	defaultEventTrigger bool
}

// cleanupTime is when a window's state is dropped: the end of the window
// plus the allowed lateness in event time (saturating at the end of time),
// the end of the window in processing time.
func (s *windowSpec[T, K, W]) cleanupTime(w W) int64 {
	m := int64(w.MaxTimestamp())
	if !s.eventTime {
		return m
	}
	if c := m + s.lateness; c >= m {
		return c
	}
	return math.MaxInt64
}

// opDeps is what a window operator takes from its task: a harness test
// provides its own.
type opDeps struct {
	clock    clock.Clock
	schedule timer.Scheduler
	batch    bool
	maxPar   int
	groups   keygroup.Range
	// registerKeyed makes keyed state part of checkpoints (nil in harnesses).
	registerKeyed func(task.KeyedState) error
	// backend keeps keyed state (nil: in memory).
	backend state.Backend
}

func depsOf(ctx *task.Context) opDeps {
	return opDeps{
		clock:    ctx.Clock,
		schedule: ctx.RegisterProcessingTimer,
		batch:    ctx.Mode == task.BatchMode,
		maxPar:   ctx.MaxParallelism,
		groups:   ctx.KeyGroups,

		registerKeyed: ctx.RegisterKeyedState,
		backend:       ctx.StateBackend,
	}
}

// winEnv is the part of a window operator that function and trigger
// contexts see.
type winEnv[K comparable, W AnyWindow] struct {
	keyed   *state.Keyed[K]
	timers  *timer.Service[K, W]
	clock   clock.Clock
	global  *keyedStates[K]
	sides   sideOutputs
	merging bool
	// err is the first error of a callback that cannot return one (timer
	// registration from a trigger).
	err error
}

func (e *winEnv[K, W]) fail(err error) {
	if err != nil && e.err == nil {
		e.err = err
	}
}

func (e *winEnv[K, W]) takeErr() error {
	err := e.err
	e.err = nil
	return err
}

// trigCtx is the TriggerContext of a window operator subtask.
type trigCtx[K comparable, W AnyWindow] struct {
	env *winEnv[K, W]
	w   W
	// merged are the windows merging into w, during OnMerge.
	merged []W
	tables map[string]*trigTable[K, W]
	count  *trigTable[K, W]
	hs     map[any]any
}

func (c *trigCtx[K, W]) WindowMaxTimestamp() Timestamp { return c.w.MaxTimestamp() }
func (c *trigCtx[K, W]) CurrentWatermark() Timestamp {
	return Timestamp(c.env.timers.CurrentWatermark())
}
func (c *trigCtx[K, W]) CurrentProcessingTime() Timestamp { return Timestamp(c.env.clock.NowMillis()) }
func (c *trigCtx[K, W]) RegisterEventTimeTimer(t Timestamp) {
	c.env.fail(c.env.timers.RegisterEventTimer(c.w, int64(t)))
}
func (c *trigCtx[K, W]) DeleteEventTimeTimer(t Timestamp) {
	c.env.fail(c.env.timers.DeleteEventTimer(c.w, int64(t)))
}
func (c *trigCtx[K, W]) RegisterProcessingTimeTimer(t Timestamp) {
	c.env.fail(c.env.timers.RegisterProcessingTimer(c.w, int64(t)))
}
func (c *trigCtx[K, W]) DeleteProcessingTimeTimer(t Timestamp) {
	c.env.fail(c.env.timers.DeleteProcessingTimer(c.w, int64(t)))
}
func (c *trigCtx[K, W]) host() triggerHost    { return c }
func (c *trigCtx[K, W]) currentWindow() W     { return c.w }
func (c *trigCtx[K, W]) handles() map[any]any { return c.hs }

func (c *trigCtx[K, W]) store(name string, ttl StateTTL) trigStore {
	if t, ok := c.tables[name]; ok {
		return t
	}
	vt, err := state.NewValueTable[K, W, trigCell](c.env.keyed, "trigger/"+name, ttl.internal())
	t := &trigTable[K, W]{t: vt, ctx: c, err: err}
	c.tables[name] = t
	return t
}

func (c *trigCtx[K, W]) countStore() trigStore {
	if c.count == nil {
		vt, err := state.NewValueTable[K, W, trigCell](c.env.keyed, "trigger/builtin-count", state.TTL{})
		c.count = &trigTable[K, W]{t: vt, ctx: c, err: err}
	}
	return c.count
}

// trigTable is one trigger state, scoped to the trigger context's window.
type trigTable[K comparable, W AnyWindow] struct {
	t   *state.ValueTable[K, W, trigCell]
	ctx *trigCtx[K, W]
	err error // registration failed (the name is used by other state)
}

func (t *trigTable[K, W]) get() (trigCell, bool) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return trigCell{}, false
	}
	c, ok, err := t.t.Get(t.ctx.w)
	t.ctx.env.fail(err)
	return c, ok
}

func (t *trigTable[K, W]) put(c trigCell) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	t.ctx.env.fail(t.t.Put(t.ctx.w, c))
}

func (t *trigTable[K, W]) del() {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	t.ctx.env.fail(t.t.Delete(t.ctx.w))
}

// merge folds the cells of the merged windows into the current window's,
// as Flink merges namespaces: the sources first, in order, then into the
// target.
func (t *trigTable[K, W]) merge(fn func(a, b trigCell) trigCell) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	var acc trigCell
	have := false
	for _, m := range t.ctx.merged {
		c, ok, err := t.t.Get(m)
		if err != nil {
			t.ctx.env.fail(err)
			return
		}
		if !ok {
			continue
		}
		t.ctx.env.fail(t.t.Delete(m))
		if have {
			acc = fn(acc, c)
		} else {
			acc, have = c, true
		}
	}
	if !have {
		return
	}
	if cur, ok, _ := t.t.Get(t.ctx.w); ok {
		acc = fn(cur, acc)
	}
	t.ctx.env.fail(t.t.Put(t.ctx.w, acc))
}

// windowContents is a window's state: what records are added to, merged,
// and handed to the window function when it fires.
type windowContents[T any, W AnyWindow, ACC any] interface {
	add(ns W, v T, ts int64) (existed bool, err error)
	get(ns W) (ACC, bool, error)
	clear(ns W) error
	// merge moves the contents of sources into target.
	merge(target W, sources []W) error
}

// windowFn turns a window's contents into results.
type windowFn[K comparable, W AnyWindow, ACC any] interface {
	// process emits the results of window w, whose contents acc are kept
	// in the namespace of stateW.
	process(key K, w, stateW W, acc ACC) error
	// clear is called when window w's state is dropped.
	clear(key K, w W) error
}

// windowOp is the window operator (Flink's WindowOperator and
// EvictingWindowOperator: evicting windows keep every element and evict
// in their windowFn).
type windowOp[T any, K comparable, W AnyWindow, ACC any] struct {
	spec *windowSpec[T, K, W]
	deps opDeps
	env  winEnv[K, W]
	trig trigCtx[K, W]

	newContents func(keyed *state.Keyed[K]) (windowContents[T, W, ACC], error)
	newFn       func(env *winEnv[K, W], contents windowContents[T, W, ACC]) windowFn[K, W, ACC]
	contents    windowContents[T, W, ACC]
	fn          windowFn[K, W, ACC]

	emitWatermark func(int64) error
	late          task.Output[T]

	sets    *state.ValueTable[K, state.Void, *window.Set[W]]
	scratch window.Scratch[W]
	mergeWs window.MergeFunc[W]
	onMerge window.Merge[W]
	buf     []W
	// procDue is the earliest processing-time timer the timer service has
	// scheduled (MaxInt64: none).
	procDue int64
}

// CurrentProcessingTime implements WindowAssignerContext.
func (op *windowOp[T, K, W, ACC]) CurrentProcessingTime() Timestamp {
	return Timestamp(op.deps.clock.NowMillis())
}

func (op *windowOp[T, K, W, ACC]) Open() error {
	keyed, err := typed.NewKeyedState[K](op.deps.maxPar, op.deps.groups, op.deps.clock, op.deps.backend, op.deps.registerKeyed)
	if err != nil {
		return err
	}
	op.env.keyed, op.env.clock = keyed, op.deps.clock
	op.env.global = newKeyedStates(keyed)
	op.env.merging = op.spec.merging != nil
	op.trig = trigCtx[K, W]{env: &op.env, tables: map[string]*trigTable[K, W]{}, hs: map[any]any{}}
	op.procDue = math.MaxInt64
	op.env.timers = timer.New(keyed, op.scheduleProc,
		func(t timer.Timer[K, W]) error { return op.onTimer(t, true) },
		func(t timer.Timer[K, W]) error { return op.onTimer(t, false) })
	if op.contents, err = op.newContents(keyed); err != nil {
		return err
	}
	op.fn = op.newFn(&op.env, op.contents)
	if op.spec.merging != nil {
		if op.sets, err = state.NewValueTable[K, state.Void, *window.Set[W]](keyed, "merging-window-set", state.TTL{}); err != nil {
			return err
		}
		op.mergeWs = op.spec.merging.MergeWindows
		op.onMerge = op.mergeWindows
	}
	return nil
}

// scheduleProc arms the task's processing-time callback for the timer
// service and remembers the deadline, so records can fire due timers first.
func (op *windowOp[T, K, W, ACC]) scheduleProc(at int64, fn func(now int64) error) func() {
	op.procDue = at
	cancel := op.deps.schedule(at, func(now int64) error {
		op.procDue = math.MaxInt64
		return fn(now)
	})
	return func() {
		op.procDue = math.MaxInt64
		cancel()
	}
}

func (op *windowOp[T, K, W, ACC]) ProcessElement(v T, ts int64) error {
	spec := op.spec
	if op.procDue != math.MaxInt64 {
		// Processing-time timers that are due fire before the record, as
		// if they had fired on time while records were queued.
		if now := op.deps.clock.NowMillis(); now >= op.procDue {
			if err := op.env.timers.FireProcessingTimers(now); err != nil {
				return err
			}
		}
	}
	key := spec.key(v)
	op.env.keyed.SetCurrentKey(key)
	var err error
	if spec.elemAssigner != nil {
		op.buf, err = spec.elemAssigner.AssignElementWindows(v, Timestamp(ts), op, op.buf[:0])
	} else {
		op.buf, err = spec.assigner.AssignWindows(Timestamp(ts), op, op.buf[:0])
	}
	if err != nil {
		return err
	}
	skipped := true
	if spec.merging != nil {
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
	if skipped && spec.eventTime && ts+spec.lateness <= op.env.timers.CurrentWatermark() && op.late != nil {
		// Late beyond the allowed lateness: to the side output (or dropped).
		if err := op.late.Collect(v, ts); err != nil {
			return err
		}
	}
	return op.env.takeErr()
}

// isWindowLate reports whether an event-time window has been cleaned up
// already (its end plus the allowed lateness is behind the watermark).
func (op *windowOp[T, K, W, ACC]) isWindowLate(w W) bool {
	return op.spec.eventTime && op.spec.cleanupTime(w) <= op.env.timers.CurrentWatermark()
}

// addToWindow adds a record to window w (whose contents live in stateW's
// namespace) and runs the trigger.
func (op *windowOp[T, K, W, ACC]) addToWindow(key K, w, stateW W, v T, ts int64) error {
	existed, err := op.contents.add(stateW, v, ts)
	if err != nil {
		return err
	}
	spec := op.spec
	if existed && spec.defaultEventTrigger && int64(w.MaxTimestamp()) > op.env.timers.CurrentWatermark() {
		// Fast path: with the built-in event-time trigger, a window that
		// already had contents and is not late has its trigger and cleanup
		// timers registered; the trigger would register them again (a
		// no-op) and continue.
		return nil
	}
	op.trig.w = w
	var res TriggerResult
	if spec.elemTrigger != nil {
		res = spec.elemTrigger.OnElementValue(v, Timestamp(ts), &op.trig)
	} else {
		res = spec.trigger.OnElement(Timestamp(ts), &op.trig)
	}
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
	if spec.defaultEventTrigger && spec.lateness == 0 {
		// The cleanup timer is the trigger's own timer at the window's end,
		// registered just now (a window it would fire at once is late).
		return nil
	}
	op.registerCleanupTimer(w)
	return nil
}

func (op *windowOp[T, K, W, ACC]) addToMergingWindows(key K, v T, ts int64) (skipped bool, err error) {
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
func (op *windowOp[T, K, W, ACC]) persistSet(set *window.Set[W]) error {
	if set.Len() == 0 {
		return op.sets.Delete(state.Void{})
	}
	return op.sets.Put(state.Void{}, set)
}

// mergeWindows is called when windows merge into result: the trigger
// re-registers its timers for result and merges its state, the merged
// windows' triggers and cleanup timers are dropped, and their contents are
// merged into result's state window.
func (op *windowOp[T, K, W, ACC]) mergeWindows(result W, merged []W, stateResult W, mergedStates []W) error {
	spec := op.spec
	if spec.eventTime {
		if wm := op.env.timers.CurrentWatermark(); int64(result.MaxTimestamp())+spec.lateness <= wm {
			return fmt.Errorf("stream: the end timestamp of an event-time window cannot become earlier than the current watermark by merging (current watermark %d, window %v)", wm, result)
		}
	} else if now := op.deps.clock.NowMillis(); int64(result.MaxTimestamp()) <= now {
		return fmt.Errorf("stream: the end timestamp of a processing-time window cannot become earlier than the current processing time by merging (current processing time %d, window %v)", now, result)
	}
	op.trig.w, op.trig.merged = result, merged
	spec.trigger.OnMerge(&op.trig)
	op.trig.merged = nil
	for _, m := range merged {
		op.trig.w = m
		spec.trigger.Clear(&op.trig)
		op.deleteCleanupTimer(m)
	}
	return op.contents.merge(stateResult, mergedStates)
}

func (op *windowOp[T, K, W, ACC]) registerCleanupTimer(w W) {
	t := op.spec.cleanupTime(w)
	if t == math.MaxInt64 {
		return // no cleanup at the end of time
	}
	if op.spec.eventTime {
		op.env.fail(op.env.timers.RegisterEventTimer(w, t))
	} else {
		op.env.fail(op.env.timers.RegisterProcessingTimer(w, t))
	}
}

func (op *windowOp[T, K, W, ACC]) deleteCleanupTimer(w W) {
	t := op.spec.cleanupTime(w)
	if t == math.MaxInt64 {
		return
	}
	if op.spec.eventTime {
		op.env.fail(op.env.timers.DeleteEventTimer(w, t))
	} else {
		op.env.fail(op.env.timers.DeleteProcessingTimer(w, t))
	}
}

// onTimer handles an event-time (eventTime) or processing-time timer of
// window t.Namespace; the timer service has set the timer's key.
func (op *windowOp[T, K, W, ACC]) onTimer(t timer.Timer[K, W], eventTime bool) error {
	spec := op.spec
	w, stateW := t.Namespace, t.Namespace
	var set *window.Set[W]
	if spec.merging != nil {
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
		res = spec.trigger.OnEventTime(Timestamp(t.Time), &op.trig)
	} else {
		res = spec.trigger.OnProcessingTime(Timestamp(t.Time), &op.trig)
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
	if spec.eventTime == eventTime && t.Time == spec.cleanupTime(w) {
		if err := op.clearAllState(t.Key, w, stateW, set); err != nil {
			return err
		}
	}
	if set != nil {
		if err := op.persistSet(set); err != nil {
			return err
		}
	}
	return op.env.takeErr()
}

// clearAllState drops everything of window w: contents, trigger state and
// timers, the window function's per-window state, and its place in the
// merging window set.
func (op *windowOp[T, K, W, ACC]) clearAllState(key K, w, stateW W, set *window.Set[W]) error {
	if err := op.contents.clear(stateW); err != nil {
		return err
	}
	if !op.spec.defaultEventTrigger {
		// (The built-in event-time trigger's only timer, at the window's
		// end, has fired by the time the window is cleaned up.)
		op.trig.w = w
		op.spec.trigger.Clear(&op.trig)
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

func (op *windowOp[T, K, W, ACC]) ProcessWatermark(wm int64) error {
	if err := op.env.timers.AdvanceWatermark(wm); err != nil {
		return err
	}
	return op.emitWatermark(wm)
}

// Finish ends the input. In BATCH mode processing-time timers fire now (as
// Flink does at the end of a key); in STREAMING mode pending ones are
// dropped. Event-time windows have fired on the final watermark already.
func (op *windowOp[T, K, W, ACC]) Finish() error {
	if !op.deps.batch {
		return nil
	}
	return op.env.timers.FireProcessingTimers(math.MaxInt64)
}

func (op *windowOp[T, K, W, ACC]) Close() error { return nil }

// ErrPerWindowStateMerging fails a job whose ProcessWindowFunction asks for
// per-window state (WindowContext.WindowState) of merging (session)
// windows, as in Flink; the state's handles return it too.
var ErrPerWindowStateMerging = errors.New("stream: per-window state is not allowed when using merging (session) windows")
