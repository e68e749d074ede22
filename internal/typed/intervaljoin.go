package typed

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// joinSide is the namespace of an interval join's cleanup timers.
type joinSide uint8

const (
	leftSide joinSide = iota
	rightSide
)

// ErrNoTimestamp is stream's sentinel for a record without an event
// timestamp reaching an event-time operator.
var ErrNoTimestamp = errors.New("stream: record has no event timestamp")

// JoinFn is an interval join's function over a joined pair: ctx's
// timestamp is the pair's, the larger of lts and rts.
type JoinFn[L, R, O any] func(ctx *FnContext, l L, r R, lts, rts int64, out *Collector[O]) error

type intervalJoinOp[L, R any, K comparable, O any] struct {
	env          *Env
	out          task.Output[O]
	fn           JoinFn[L, R, O]
	life         *Lifecycle
	keyL         func(L) K
	keyR         func(R) K
	lower, upper int64 // inclusive, in ms
	leftLate     task.Output[L]
	rightLate    task.Output[R]

	time   Time
	keyed  *state.Keyed[K]
	timers *timer.Service[K, joinSide]
	lbuf   *state.ValueTable[K, state.Void, map[int64][]L]
	rbuf   *state.ValueTable[K, state.Void, map[int64][]R]
	ctx    FnContext
	c      Collector[O]
}

func (j *intervalJoinOp[L, R, K, O]) Open() error {
	j.time = NewTime(j.env.Clock)
	keyed, err := NewKeyedState[K](j.env.MaxPar, j.env.Groups, j.env.Clock, j.env.Backend, j.env.RegisterKeyed)
	if err != nil {
		return err
	}
	j.keyed = keyed
	if j.lbuf, err = state.NewValueTable[K, state.Void, map[int64][]L](keyed, "left-buffer", state.TTL{}); err != nil {
		return err
	}
	if j.rbuf, err = state.NewValueTable[K, state.Void, map[int64][]R](keyed, "right-buffer", state.TTL{}); err != nil {
		return err
	}
	noProc := func(int64, func(int64) error) func() { return func() {} }
	j.timers = timer.New[K, joinSide](keyed, noProc, j.cleanup, func(timer.Timer[K, joinSide]) error { return nil })
	j.ctx.T = &j.time
	return j.life.DoOpen(j.env)
}

func (j *intervalJoinOp[L, R, K, O]) late(ts int64) bool {
	return j.time.WM != NoWatermarkYet && ts < j.time.WM
}

func (j *intervalJoinOp[L, R, K, O]) left(v L, ts int64) error {
	if ts == NoTimestamp {
		return fmt.Errorf("interval join, left input: %w; assign timestamps with a watermark strategy on the source or with AssignTimestampsAndWatermarks", ErrNoTimestamp)
	}
	if j.late(ts) {
		if j.leftLate != nil {
			return j.leftLate.Collect(v, ts)
		}
		return nil
	}
	j.keyed.SetCurrentKey(j.keyL(v))
	if err := addToBuffer(j.lbuf, v, ts); err != nil {
		return err
	}
	other, _, err := j.rbuf.Get(state.Void{})
	if err != nil {
		return err
	}
	for rts, bucket := range other {
		if rts < ts+j.lower || rts > ts+j.upper {
			continue
		}
		for _, r := range bucket {
			if err := j.emit(v, r, ts, rts); err != nil {
				return err
			}
		}
	}
	cleanupAt := ts
	if j.upper > 0 {
		cleanupAt = ts + j.upper
	}
	return j.timers.RegisterEventTimer(leftSide, cleanupAt)
}

func (j *intervalJoinOp[L, R, K, O]) right(v R, ts int64) error {
	if ts == NoTimestamp {
		return fmt.Errorf("interval join, right input: %w; assign timestamps with a watermark strategy on the source or with AssignTimestampsAndWatermarks", ErrNoTimestamp)
	}
	if j.late(ts) {
		if j.rightLate != nil {
			return j.rightLate.Collect(v, ts)
		}
		return nil
	}
	j.keyed.SetCurrentKey(j.keyR(v))
	if err := addToBuffer(j.rbuf, v, ts); err != nil {
		return err
	}
	other, _, err := j.lbuf.Get(state.Void{})
	if err != nil {
		return err
	}
	// Relative to the right record, left records join in [ts-upper, ts-lower].
	for lts, bucket := range other {
		if lts < ts-j.upper || lts > ts-j.lower {
			continue
		}
		for _, l := range bucket {
			if err := j.emit(l, v, lts, ts); err != nil {
				return err
			}
		}
	}
	cleanupAt := ts
	if j.lower < 0 {
		cleanupAt = ts - j.lower
	}
	return j.timers.RegisterEventTimer(rightSide, cleanupAt)
}

func (j *intervalJoinOp[L, R, K, O]) emit(l L, r R, lts, rts int64) error {
	ts := max(lts, rts)
	j.ctx.SO.Ts, j.c.Ts = ts, ts
	err := j.fn(&j.ctx, l, r, lts, rts, &j.c)
	return Settle(err, &j.c, &j.ctx.SO)
}

func addToBuffer[K comparable, T any](t *state.ValueTable[K, state.Void, map[int64][]T], v T, ts int64) error {
	m, ok, err := t.Get(state.Void{})
	if err != nil {
		return err
	}
	if !ok {
		m = map[int64][]T{}
	}
	m[ts] = append(m[ts], v)
	return t.Put(state.Void{}, m) // write back: other backends do not share the map
}

func removeBucket[K comparable, T any](t *state.ValueTable[K, state.Void, map[int64][]T], ts int64) error {
	m, ok, err := t.Get(state.Void{})
	if err != nil || !ok {
		return err
	}
	delete(m, ts)
	if len(m) == 0 {
		return t.Delete(state.Void{})
	}
	return t.Put(state.Void{}, m)
}

// cleanup drops a side's records whose time to join has passed.
func (j *intervalJoinOp[L, R, K, O]) cleanup(t timer.Timer[K, joinSide]) error {
	if t.Namespace == leftSide {
		ts := t.Time
		if j.upper > 0 {
			ts -= j.upper
		}
		return removeBucket(j.lbuf, ts)
	}
	ts := t.Time
	if j.lower < 0 {
		ts += j.lower
	}
	return removeBucket(j.rbuf, ts)
}

func (j *intervalJoinOp[L, R, K, O]) ProcessWatermark(wm int64) error {
	if wm > j.time.WM {
		j.time.WM = wm
	}
	if err := j.timers.AdvanceWatermark(wm); err != nil {
		return err
	}
	return j.out.EmitWatermark(wm)
}

func (j *intervalJoinOp[L, R, K, O]) Finish() error { return nil }
func (j *intervalJoinOp[L, R, K, O]) Close() error  { return j.life.DoClose() }

// IntervalJoinFns are the callbacks of one subtask's join function.
type IntervalJoinFns[L, R, O any] struct {
	Join JoinFn[L, R, O]
	Life Lifecycle
}

// IntervalJoin joins the records of input 0 (keyed by keyL) with those of
// input 1 (keyed by keyR) of the same key whose timestamps lie within
// [lower, upper] ms of the left record's (inclusive); fns makes the join
// function of each subtask. Late records go to the side outputs leftTag
// and rightTag when they are set, and are dropped otherwise.
func IntervalJoin[L, R any, K comparable, O any](keyL func(L) K, keyR func(R) K, lower, upper int64, leftTag, rightTag string, fns func() IntervalJoinFns[L, R, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &intervalJoinOp[L, R, K, O]{env: env, out: out, fn: f.Join, life: &f.Life,
			keyL: keyL, keyR: keyR, lower: lower, upper: upper}
		if o, ok := sides[leftTag].(task.Output[L]); ok && leftTag != "" {
			op.leftLate = o
		}
		if o, ok := sides[rightTag].(task.Output[R]); ok && rightTag != "" {
			op.rightLate = o
		}
		op.ctx.SO.Outs = sides
		op.c.Out = out
		return op, []any{Input[L](op.left), Input[R](op.right)}, nil
	})
}

// JoinBuffers are the buffered records of an interval join operator made
// by IntervalJoin (for tests that look at what it keeps); ok is false for
// another operator.
func JoinBuffers[L, R any, K comparable, O any](op task.Operator) (left *state.ValueTable[K, state.Void, map[int64][]L], right *state.ValueTable[K, state.Void, map[int64][]R], ok bool) {
	j, ok := op.(*intervalJoinOp[L, R, K, O])
	if !ok {
		return nil, nil, false
	}
	return j.lbuf, j.rbuf, true
}
