package stream

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// IntervalJoinBuilder is the first step of an interval join; set the
// interval with Between.
type IntervalJoinBuilder[L, R any, K comparable] struct {
	left  KeyedStream[L, K]
	right KeyedStream[R, K]
}

// IntervalJoin joins two keyed streams in event time: a left record l and
// a right record r of the same key are joined when
//
//	l.ts + lower <= r.ts <= l.ts + upper
//
// (bounds inclusive unless made exclusive). Finish it with Between and
// IntervalJoinProcess:
//
//	joined := stream.IntervalJoin(orders, payments).Between(-time.Minute, time.Minute)
//	out := stream.IntervalJoinProcess(joined, stream.ProcessJoinFunc[Order, Payment, Paid](...))
//
// Both inputs need event timestamps and watermarks. Each side's records are
// kept in keyed state until the watermark passes the last time they can
// join, then dropped by an event-time timer; records behind the watermark
// when they arrive are late and dropped (or sent to a side output, see
// SideOutputLeftLateData), as in Flink.
func IntervalJoin[L, R any, K comparable](left KeyedStream[L, K], right KeyedStream[R, K]) IntervalJoinBuilder[L, R, K] {
	return IntervalJoinBuilder[L, R, K]{left: left, right: right}
}

// Between sets the interval, relative to the left record's timestamp, in
// which right records join it (millisecond precision). lower must not be
// above upper.
func (b IntervalJoinBuilder[L, R, K]) Between(lower, upper time.Duration) IntervalJoined[L, R, K] {
	return IntervalJoined[L, R, K]{b: b, lower: lower, upper: upper}
}

// IntervalJoined is an interval join with its bounds set; apply a
// ProcessJoinFunction with IntervalJoinProcess.
type IntervalJoined[L, R any, K comparable] struct {
	b                         IntervalJoinBuilder[L, R, K]
	lower, upper              time.Duration
	lowerExcl, upperExcl      bool
	leftLateTag, rightLateTag string
}

// LowerBoundExclusive excludes the lower bound from the interval.
func (j IntervalJoined[L, R, K]) LowerBoundExclusive() IntervalJoined[L, R, K] {
	j.lowerExcl = true
	return j
}

// UpperBoundExclusive excludes the upper bound from the interval.
func (j IntervalJoined[L, R, K]) UpperBoundExclusive() IntervalJoined[L, R, K] {
	j.upperExcl = true
	return j
}

// SideOutputLeftLateData sends left records that arrive behind the
// watermark to the side output tag instead of dropping them; read it with
// SideOutput on the joined stream.
func (j IntervalJoined[L, R, K]) SideOutputLeftLateData(tag OutputTag[L]) IntervalJoined[L, R, K] {
	j.leftLateTag = tag.id
	return j
}

// SideOutputRightLateData is SideOutputLeftLateData for right records.
func (j IntervalJoined[L, R, K]) SideOutputRightLateData(tag OutputTag[R]) IntervalJoined[L, R, K] {
	j.rightLateTag = tag.id
	return j
}

// ProcessJoinContext is the context of a ProcessJoinFunction call. Its
// Timestamp is that of the joined pair, the larger of the two records'
// timestamps; records emitted (and side outputs) carry it.
type ProcessJoinContext struct {
	fnContext
	left, right int64
}

// LeftTimestamp is the left record's timestamp.
func (c *ProcessJoinContext) LeftTimestamp() Timestamp { return Timestamp(c.left) }

// RightTimestamp is the right record's timestamp.
func (c *ProcessJoinContext) RightTimestamp() Timestamp { return Timestamp(c.right) }

// ProcessJoinFunction is called for every joined pair of an interval join.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type ProcessJoinFunction[L, R, O any] interface {
	ProcessElement(ctx *ProcessJoinContext, left L, right R, out Collector[O]) error
}

// ProcessJoinFunc adapts a closure to a ProcessJoinFunction.
type ProcessJoinFunc[L, R, O any] func(ctx *ProcessJoinContext, left L, right R, out Collector[O]) error

// ProcessElement implements ProcessJoinFunction.
func (f ProcessJoinFunc[L, R, O]) ProcessElement(ctx *ProcessJoinContext, left L, right R, out Collector[O]) error {
	return f(ctx, left, right, out)
}

// joinSide is the namespace of an interval join's cleanup timers.
type joinSide uint8

const (
	leftSide joinSide = iota
	rightSide
)

// ErrNoTimestamp is returned when an event-time operator gets a record
// without an event timestamp.
var ErrNoTimestamp = errors.New("stream: record has no event timestamp")

type intervalJoinOp[L, R any, K comparable, O any] struct {
	env          *procEnv
	out          task.Output[O]
	fn           ProcessJoinFunction[L, R, O]
	life         lifecycle
	keyL         func(L) K
	keyR         func(R) K
	lower, upper int64 // inclusive, in ms
	leftLate     task.Output[L]
	rightLate    task.Output[R]

	time   opTime
	keyed  *state.Keyed[K]
	timers *timer.Service[K, joinSide]
	lbuf   *state.ValueTable[K, state.Void, map[int64][]L]
	rbuf   *state.ValueTable[K, state.Void, map[int64][]R]
	ctx    ProcessJoinContext
	c      collector[O]
}

func (j *intervalJoinOp[L, R, K, O]) Open() error {
	j.time = opTime{wm: noWatermarkYet, clock: j.env.clock}
	keyed, err := newKeyedState[K](j.env.maxParallelism, j.env.groups, j.env.clock, j.env.backend, j.env.registerKeyed)
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
	j.ctx.t = &j.time
	return j.life.open(j.env)
}

func (j *intervalJoinOp[L, R, K, O]) late(ts int64) bool {
	return j.time.wm != noWatermarkYet && ts < j.time.wm
}

func (j *intervalJoinOp[L, R, K, O]) left(v L, ts int64) error {
	if ts == noTimestamp {
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
	if ts == noTimestamp {
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
	j.ctx.left, j.ctx.right = lts, rts
	j.ctx.so.Ts, j.c.Ts = ts, ts
	err := j.fn.ProcessElement(&j.ctx, l, r, &j.c)
	return settle(err, &j.c, &j.ctx.so)
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
	if wm > j.time.wm {
		j.time.wm = wm
	}
	if err := j.timers.AdvanceWatermark(wm); err != nil {
		return err
	}
	return j.out.EmitWatermark(wm)
}

func (j *intervalJoinOp[L, R, K, O]) Finish() error { return nil }
func (j *intervalJoinOp[L, R, K, O]) Close() error  { return j.life.close() }

// IntervalJoinProcess applies fn to every pair an interval join finds and
// returns what fn emits, stamped with the larger timestamp of the pair.
// Pairs of one key are found in no particular order.
func IntervalJoinProcess[L, R any, K comparable, O any](j IntervalJoined[L, R, K], fn ProcessJoinFunction[L, R, O]) DataStream[O] {
	env := j.b.left.env
	checkFn(env, "IntervalJoinProcess", fn)
	if j.lower > j.upper {
		env.fail(fmt.Errorf("interval join: the lower bound %v is above the upper bound %v", j.lower, j.upper))
	}
	lower, upper := j.lower.Milliseconds(), j.upper.Milliseconds()
	if j.lowerExcl {
		lower++
	}
	if j.upperExcl {
		upper--
	}
	keyL, keyR := j.b.left.key, j.b.right.key
	leftTag, rightTag := j.leftLateTag, j.rightLateTag
	f := newProcFactory(func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		op := &intervalJoinOp[L, R, K, O]{env: env, out: out, fn: fn, life: lifecycle{fn: adaptLifecycle(fn)},
			keyL: keyL, keyR: keyR, lower: lower, upper: upper}
		if o, ok := sides[leftTag].(task.Output[L]); ok && leftTag != "" {
			op.leftLate = o
		}
		if o, ok := sides[rightTag].(task.Output[R]); ok && rightTag != "" {
			op.rightLate = o
		}
		op.ctx.so.Outs = sides
		op.c.Out = out
		return op, []any{inputFunc[L](op.left), inputFunc[R](op.right)}, nil
	})
	if leftTag != "" && leftTag == rightTag {
		env.fail(fmt.Errorf("interval join: left and right late data need different side output tags (both are %q)", leftTag))
	}
	out := procTwoInput(j.b.left.DataStream, j.b.right.DataStream, "interval-join", "IntervalJoin", f)
	out.node.Keyed = true
	out.node.NeedsWatermarks = true
	if leftTag != "" {
		if err := f.DeclareSide(leftTag, task.TypeOf[L]()); err != nil {
			env.fail(fmt.Errorf("interval join: %w", err))
		}
	}
	if rightTag != "" {
		if err := f.DeclareSide(rightTag, task.TypeOf[R]()); err != nil {
			env.fail(fmt.Errorf("interval join: %w", err))
		}
	}
	return out
}
