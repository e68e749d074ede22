package stream

import (
	"fmt"
	"github.com/sluice/sluice/internal/typed"
	"time"

	"github.com/sluice/sluice/internal/runtime/task"
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

// ErrNoTimestamp is returned when an event-time operator gets a record
// without an event timestamp.
var ErrNoTimestamp = typed.ErrNoTimestamp

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
	leftTag, rightTag := j.leftLateTag, j.rightLateTag
	f := typed.IntervalJoin(j.b.left.key, j.b.right.key, lower, upper, leftTag, rightTag, func() typed.IntervalJoinFns[L, R, O] {
		fn := perSubtask(fn)
		ctx := &ProcessJoinContext{}
		return typed.IntervalJoinFns[L, R, O]{
			Join: func(c *typed.FnContext, l L, r R, lts, rts int64, out *typed.Collector[O]) error {
				ctx.c, ctx.left, ctx.right = c, lts, rts
				return fn.ProcessElement(ctx, l, r, out)
			},
			Life: lifecycleOf(fn),
		}
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
