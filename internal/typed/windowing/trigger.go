package windowing

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/typed"
)

// TriggerResult is what a trigger decides for a window (Flink's
// TriggerResult); stream's TriggerResult has the same values.
type TriggerResult uint8

// Trigger results.
const (
	TriggerContinue TriggerResult = iota
	TriggerFire
	TriggerPurge
	TriggerFireAndPurge
)

// IsFire reports whether the window's result is emitted.
func (r TriggerResult) IsFire() bool { return r == TriggerFire || r == TriggerFireAndPurge }

// IsPurge reports whether the window's contents are dropped.
func (r TriggerResult) IsPurge() bool { return r == TriggerPurge || r == TriggerFireAndPurge }

// Trigger decides when a window fires. The operator calls it for every
// record added to a window, for the timers it registered, when windows
// merge into ctx's window and when ctx's window is dropped.
type Trigger[T any, K comparable, W Window[TS], TS ~int64] interface {
	OnElement(v T, ts int64, ctx *TriggerCtx[K, W, TS]) TriggerResult
	OnEventTime(time int64, ctx *TriggerCtx[K, W, TS]) TriggerResult
	OnProcessingTime(time int64, ctx *TriggerCtx[K, W, TS]) TriggerResult
	OnMerge(ctx *TriggerCtx[K, W, TS])
	Clear(ctx *TriggerCtx[K, W, TS])
}

// TriggerCtx is the trigger context of a window operator subtask: the
// window being decided on, the clocks, timers scoped to the window and
// trigger state scoped to the key and window. Timer and state calls
// cannot return errors; the first one sticks and fails the task after the
// call.
type TriggerCtx[K comparable, W Window[TS], TS ~int64] struct {
	env *winEnv[K, W, TS]
	w   W
	// merged are the windows merging into w, during OnMerge.
	merged []W
	tables map[string]*trigTable[K, W, TS]
	count  *trigTable[K, W, TS]
	hs     map[any]any
}

// Window is the window the call is about.
func (c *TriggerCtx[K, W, TS]) Window() W { return c.w }

// WindowMaxTimestamp is the window's largest timestamp.
func (c *TriggerCtx[K, W, TS]) WindowMaxTimestamp() int64 { return int64(c.w.MaxTimestamp()) }

// CurrentWatermark is the operator's input watermark.
func (c *TriggerCtx[K, W, TS]) CurrentWatermark() int64 { return c.env.timers.CurrentWatermark() }

// CurrentProcessingTime is the processing time.
func (c *TriggerCtx[K, W, TS]) CurrentProcessingTime() int64 { return c.env.clock.NowMillis() }

func (c *TriggerCtx[K, W, TS]) RegisterEventTimeTimer(t int64) {
	c.env.fail(c.env.timers.RegisterEventTimer(c.w, t))
}

func (c *TriggerCtx[K, W, TS]) DeleteEventTimeTimer(t int64) {
	c.env.fail(c.env.timers.DeleteEventTimer(c.w, t))
}

func (c *TriggerCtx[K, W, TS]) RegisterProcessingTimeTimer(t int64) {
	c.env.fail(c.env.timers.RegisterProcessingTimer(c.w, t))
}

func (c *TriggerCtx[K, W, TS]) DeleteProcessingTimeTimer(t int64) {
	c.env.fail(c.env.timers.DeleteProcessingTimer(c.w, t))
}

// Handles caches the front end's trigger-state handles by descriptor.
func (c *TriggerCtx[K, W, TS]) Handles() map[any]any { return c.hs }

// Store is the trigger state name (of the current key and window).
func (c *TriggerCtx[K, W, TS]) Store(name string, ttl typed.TTL) TriggerState {
	if t, ok := c.tables[name]; ok {
		return t
	}
	vt, err := state.NewValueTable[K, W, Cell](c.env.keyed, "trigger/"+name, ttl)
	t := &trigTable[K, W, TS]{t: vt, ctx: c, err: err}
	c.tables[name] = t
	return t
}

// CountStore is the state of the built-in count trigger.
func (c *TriggerCtx[K, W, TS]) CountStore() TriggerState {
	if c.count == nil {
		vt, err := state.NewValueTable[K, W, Cell](c.env.keyed, "trigger/builtin-count", state.TTL{})
		c.count = &trigTable[K, W, TS]{t: vt, ctx: c, err: err}
	}
	return c.count
}

// Cell is one trigger-state value: counters live in N, anything else
// (boxed) in V.
type Cell struct {
	N int64
	V any
}

// TriggerState is a trigger state of the current key and window.
type TriggerState interface {
	Get() (Cell, bool)
	Put(c Cell)
	Delete()
	// Merge folds the merged windows' cells into the current window's
	// (during OnMerge).
	Merge(fn func(a, b Cell) Cell)
}

// trigTable is one trigger state, scoped to the trigger context's window.
type trigTable[K comparable, W Window[TS], TS ~int64] struct {
	t   *state.ValueTable[K, W, Cell]
	ctx *TriggerCtx[K, W, TS]
	err error // registration failed (the name is used by other state)
}

func (t *trigTable[K, W, TS]) Get() (Cell, bool) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return Cell{}, false
	}
	c, ok, err := t.t.Get(t.ctx.w)
	t.ctx.env.fail(err)
	return c, ok
}

func (t *trigTable[K, W, TS]) Put(c Cell) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	t.ctx.env.fail(t.t.Put(t.ctx.w, c))
}

func (t *trigTable[K, W, TS]) Delete() {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	t.ctx.env.fail(t.t.Delete(t.ctx.w))
}

// Merge folds the cells of the merged windows into the current window's,
// as Flink merges namespaces: the sources first, in order, then into the
// target.
func (t *trigTable[K, W, TS]) Merge(fn func(a, b Cell) Cell) {
	if t.err != nil {
		t.ctx.env.fail(t.err)
		return
	}
	var acc Cell
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

// NewTriggerValue is a value state over trigger state st. Its errors
// stick in the trigger context, so its methods return none.
func NewTriggerValue[V any](st TriggerState) typed.ValueState[V] { return &trigValue[V]{st: st} }

// NewTriggerReducing is a reducing state over trigger state st.
func NewTriggerReducing[V any](st TriggerState, fn func(acc, v V) V) typed.ReducingState[V] {
	return &trigReducing[V]{st: st, fn: fn}
}

// MergeReducing folds the reducing trigger state st of the merged windows
// into the current window's with fn (during OnMerge).
func MergeReducing[V any](st TriggerState, fn func(acc, v V) V) {
	st.Merge(func(a, b Cell) Cell { return Cell{V: fn(a.V.(V), b.V.(V))} })
}

type trigValue[V any] struct{ st TriggerState }

func (s *trigValue[V]) Value() (V, error) {
	v, _, err := s.Lookup()
	return v, err
}

func (s *trigValue[V]) Lookup() (V, bool, error) {
	c, ok := s.st.Get()
	if !ok {
		var zero V
		return zero, false, nil
	}
	return c.V.(V), true, nil
}

func (s *trigValue[V]) Update(v V) error { s.st.Put(Cell{V: v}); return nil }
func (s *trigValue[V]) Clear() error     { s.st.Delete(); return nil }

type trigReducing[V any] struct {
	st TriggerState
	fn func(acc, v V) V
}

func (s *trigReducing[V]) Get() (V, bool, error) {
	c, ok := s.st.Get()
	if !ok {
		var zero V
		return zero, false, nil
	}
	return c.V.(V), true, nil
}

func (s *trigReducing[V]) Add(v V) error {
	if c, ok := s.st.Get(); ok {
		v = s.fn(c.V.(V), v)
	}
	s.st.Put(Cell{V: v})
	return nil
}

func (s *trigReducing[V]) Clear() error { s.st.Delete(); return nil }

func (r TriggerResult) String() string {
	switch r {
	case TriggerContinue:
		return "CONTINUE"
	case TriggerFire:
		return "FIRE"
	case TriggerPurge:
		return "PURGE"
	case TriggerFireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return fmt.Sprintf("TriggerResult(%d)", uint8(r))
}

// EventTimeTrigger is the built-in event-time trigger, the default of
// event-time windows: it fires a window once the watermark passes its end,
// and again for every late record within the allowed lateness. A front end
// hands it to the operator in place of an adapter around its own (stream's
// EventTimeTrigger, which decides the same), so that the common case calls
// the trigger context directly.
func EventTimeTrigger[T any, K comparable, W Window[TS], TS ~int64]() Trigger[T, K, W, TS] {
	return eventTimeTrigger[T, K, W, TS]{}
}

type eventTimeTrigger[T any, K comparable, W Window[TS], TS ~int64] struct{}

func (eventTimeTrigger[T, K, W, TS]) OnElement(_ T, _ int64, ctx *TriggerCtx[K, W, TS]) TriggerResult {
	m := ctx.WindowMaxTimestamp()
	if m <= ctx.CurrentWatermark() {
		// The watermark is past the window already: fire at once.
		return TriggerFire
	}
	ctx.RegisterEventTimeTimer(m)
	return TriggerContinue
}

func (eventTimeTrigger[T, K, W, TS]) OnEventTime(time int64, ctx *TriggerCtx[K, W, TS]) TriggerResult {
	if time == ctx.WindowMaxTimestamp() {
		return TriggerFire
	}
	return TriggerContinue
}

func (eventTimeTrigger[T, K, W, TS]) OnProcessingTime(int64, *TriggerCtx[K, W, TS]) TriggerResult {
	return TriggerContinue
}

func (eventTimeTrigger[T, K, W, TS]) OnMerge(ctx *TriggerCtx[K, W, TS]) {
	// Only re-register the timer if the watermark has not passed the end
	// of the merged window yet; otherwise it would fire at once.
	if m := ctx.WindowMaxTimestamp(); m > ctx.CurrentWatermark() {
		ctx.RegisterEventTimeTimer(m)
	}
}

func (eventTimeTrigger[T, K, W, TS]) Clear(ctx *TriggerCtx[K, W, TS]) {
	ctx.DeleteEventTimeTimer(ctx.WindowMaxTimestamp())
}
