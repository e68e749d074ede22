package core

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// inputSpec is one input of an untyped operator: its record type and, for
// a keyed input, its key.
type inputSpec struct {
	typ Type
	key KeySelector
}

// opFactory is the task.Factory of untyped operators and sources: the
// node's Impl, rebuilt by every process that runs the job's main.
type opFactory struct {
	out    Type
	sides  map[string]Type
	ins    []inputSpec
	newOp  func() Operator
	newSrc func() Source
}

func (f *opFactory) OutType() task.TypeOps { return f.out.Ops() }

func (f *opFactory) SideOutputs() map[string]task.TypeOps {
	if len(f.sides) == 0 {
		return nil
	}
	m := make(map[string]task.TypeOps, len(f.sides))
	for tag, t := range f.sides {
		if t.Valid() { // invalid ones are build errors
			m[tag] = t.Ops()
		}
	}
	return m
}

func (f *opFactory) keyed() bool {
	for _, in := range f.ins {
		if in.key != nil {
			return true
		}
	}
	return false
}

// Create builds the adapter of one subtask: a task.Operator (a
// task.SourceOperator for sources) that drives the untyped operator, and
// a task.Input of each input's Go type.
func (f *opFactory) Create(tc *task.Context, out any, sides map[string]any) (task.Operator, []any, error) {
	a := &opAdapter{f: f}
	a.ctx.tc = tc
	a.ctx.watermark = NoWatermark
	a.ctx.batch = tc.Mode == task.BatchMode
	a.ctx.emit, a.ctx.wm = f.out.impl.output(out)
	if len(sides) > 0 {
		a.ctx.sides = make(map[string]func(Record, int64) error, len(sides))
		for tag, o := range sides {
			a.ctx.sides[tag], _ = f.sides[tag].impl.output(o)
		}
	}
	if f.newSrc != nil {
		src := f.newSrc()
		if src == nil {
			return nil, nil, fmt.Errorf("core: source %s: New returned nil", tc.Node.Label())
		}
		a.impl = src
		return &srcAdapter{opAdapter: a, src: src}, nil, nil
	}
	op := f.newOp()
	if op == nil {
		return nil, nil, fmt.Errorf("core: operator %s: New returned nil", tc.Node.Label())
	}
	a.impl, a.op = op, op
	ins := make([]any, len(f.ins))
	for i, in := range f.ins {
		key := in.key
		ins[i] = in.typ.impl.input(func(r Record, ts int64) error { return a.element(i, key, r, ts) })
	}
	return a, ins, nil
}

// opAdapter drives an untyped operator (or source, impl) as a task.Operator
// with operator state and checkpoint notifications.
type opAdapter struct {
	f    *opFactory
	ctx  Context
	impl any
	op   Operator
}

func (a *opAdapter) Open() error {
	if a.f.keyed() {
		if err := a.openKeyed(); err != nil {
			return err
		}
	}
	if o, ok := a.impl.(Opener); ok {
		return o.Open(&a.ctx)
	}
	return nil
}

// openKeyed creates the subtask's keyed state (restored from the checkpoint
// the task starts from) and timer service.
func (a *opAdapter) openKeyed() error {
	tc := a.ctx.tc
	keyed, err := state.NewKeyedWithBackend[string](tc.MaxParallelism, tc.KeyGroups, tc.Clock, tc.StateBackend)
	if err != nil {
		return err
	}
	if err := tc.RegisterKeyedState(keyed); err != nil {
		keyed.Close()
		return err
	}
	schedule := func(at int64, fire func(now int64) error) func() {
		// A processing-time timer may fire while a record of this operator
		// is still in flight down the chain: keep the record's key.
		return tc.RegisterProcessingTimer(at, func(now int64) error {
			k, had := keyed.CurrentKey()
			kg := keyed.CurrentKeyGroup()
			err := fire(now)
			if had {
				keyed.SetCurrentKeyAndGroup(k, kg)
			}
			return err
		})
	}
	if a.ctx.batch {
		// BATCH mode fires processing-time timers at the end of input only.
		schedule = func(int64, func(int64) error) func() { return func() {} }
	}
	fire := func(d TimeDomain) func(timer.Timer[string, string]) error {
		return func(t timer.Timer[string, string]) error {
			h, ok := a.impl.(TimerHandler)
			if !ok {
				return nil
			}
			return h.OnTimer(&a.ctx, Timer{Key: t.Key, Namespace: t.Namespace, Time: t.Time, Domain: d})
		}
	}
	ts := timer.New[string, string](keyed, schedule, fire(EventTime), fire(ProcessingTime))
	if err := ts.Err(); err != nil {
		return err
	}
	a.ctx.keyed = &keyedRuntime{keyed: keyed, timers: ts}
	return nil
}

func (a *opAdapter) element(input int, key KeySelector, r Record, ts int64) error {
	if k := a.ctx.keyed; k != nil {
		if key != nil {
			k.keyBuf = key(r, k.keyBuf[:0])
			k.setKey(k.keyBuf)
		} else {
			k.keyed.ClearCurrentKey() // a broadcast input of a keyed operator
		}
	}
	return a.op.ProcessElement(&a.ctx, input, r, ts)
}

func (a *opAdapter) ProcessWatermark(wm int64) error {
	if wm > a.ctx.watermark {
		a.ctx.watermark = wm
	}
	if k := a.ctx.keyed; k != nil {
		if err := k.timers.AdvanceWatermark(wm); err != nil {
			return err
		}
	}
	if h, ok := a.impl.(WatermarkHandler); ok {
		return h.ProcessWatermark(&a.ctx, wm)
	}
	return a.ctx.wm(wm)
}

// Finish fires, in BATCH mode, every remaining timer (event-time ones with
// the final watermark, then processing-time ones, as Flink does), then
// the operator's Finish. In STREAMING mode pending processing-time timers
// are dropped, as in Flink.
func (a *opAdapter) Finish() error {
	if k := a.ctx.keyed; k != nil && a.ctx.batch {
		a.ctx.watermark = MaxWatermark
		if err := k.timers.AdvanceWatermark(MaxWatermark); err != nil {
			return err
		}
		if err := k.timers.FireProcessingTimers(MaxWatermark); err != nil {
			return err
		}
	}
	if f, ok := a.impl.(Finisher); ok {
		return f.Finish(&a.ctx)
	}
	return nil
}

func (a *opAdapter) Close() error {
	if c, ok := a.impl.(Closer); ok {
		return c.Close()
	}
	return nil
}

func (a *opAdapter) SnapshotOperatorState(checkpointID int64) ([][]byte, bool, error) {
	if s, ok := a.impl.(OperatorState); ok {
		return s.SnapshotState(&a.ctx, checkpointID)
	}
	return nil, false, nil
}

func (a *opAdapter) RestoreOperatorState(entries [][]byte) error {
	s, ok := a.impl.(OperatorState)
	if !ok {
		return fmt.Errorf("core: operator %s has operator state in the checkpoint but takes none (%T implements no OperatorState)", a.ctx.tc.Node.Label(), a.impl)
	}
	return s.RestoreState(&a.ctx, entries)
}

func (a *opAdapter) NotifyCheckpointComplete(checkpointID int64) error {
	if l, ok := a.impl.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(&a.ctx, checkpointID)
	}
	return nil
}

// srcAdapter drives an untyped source as a task.SourceOperator.
type srcAdapter struct {
	*opAdapter
	src Source
}

// EmitNext polls the source; the end of a source ends event time, so every
// window and event-time timer downstream fires (Flink's MAX_WATERMARK at
// the end of a bounded source).
func (s *srcAdapter) EmitNext() (task.SourceStatus, error) {
	st, err := s.src.EmitNext(&s.ctx)
	if err == nil && st == EndOfInput {
		err = s.ctx.wm(MaxWatermark)
	}
	return st, err
}

func (s *srcAdapter) Available() <-chan struct{} {
	if av, ok := s.src.(Availability); ok {
		return av.Available()
	}
	return nil // woken by mail, timers and checkpoints only
}

// The adapters are what the engine expects of operators.
var (
	_ task.Operator           = (*opAdapter)(nil)
	_ task.OperatorStateful   = (*opAdapter)(nil)
	_ task.CheckpointListener = (*opAdapter)(nil)
	_ task.SourceOperator     = (*srcAdapter)(nil)
)
