package typed

import (
	"fmt"
	"math"

	"github.com/sluice/sluice/internal/runtime/task"
)

// NoTimestamp and MaxWatermark are a record without an event timestamp
// and the watermark that ends event time, in the engine's milliseconds.
const (
	NoTimestamp  int64 = math.MinInt64
	MaxWatermark int64 = math.MaxInt64
	// NoWatermarkYet is an operator's input watermark before the first one.
	NoWatermarkYet int64 = math.MinInt64
)

// Factory is the task.Factory of most typed operators: Make builds the
// operator of one subtask (and its inputs, one per logical input) with the
// subtask's output and the outputs of its declared side outputs.
type Factory[O any] struct {
	// Sides are the side outputs declared on the operator, by tag.
	Sides map[string]task.TypeOps
	// Make builds one subtask's operator.
	Make func(ctx *task.Context, out task.Output[O], sides map[string]any) (task.Operator, []any, error)
}

// OutType implements task.Factory.
func (f *Factory[O]) OutType() task.TypeOps { return task.TypeOf[O]() }

// SideOutputs implements task.Factory.
func (f *Factory[O]) SideOutputs() map[string]task.TypeOps { return f.Sides }

// Create implements task.Factory.
func (f *Factory[O]) Create(ctx *task.Context, out any, sides map[string]any) (task.Operator, []any, error) {
	return f.Make(ctx, out.(task.Output[O]), sides)
}

// DeclareSide declares the side output id carrying records of ops. It
// fails when id was declared with another type.
func (f *Factory[O]) DeclareSide(id string, ops task.TypeOps) error {
	if f.Sides == nil {
		f.Sides = map[string]task.TypeOps{}
	}
	if prev, ok := f.Sides[id]; ok && prev.TypeName() != ops.TypeName() {
		return fmt.Errorf("side output %q carries %s, not %s", id, prev.TypeName(), ops.TypeName())
	}
	f.Sides[id] = ops
	return nil
}

// SideDeclarer is a factory whose operator may emit to side outputs.
type SideDeclarer interface {
	DeclareSide(id string, ops task.TypeOps) error
}

// Single is the operator list of an operator that is its own only input.
func Single(op task.Operator) (task.Operator, []any, error) { return op, []any{op}, nil }

// Base implements the lifecycle methods operators do not customise; it
// forwards watermarks to Out.
type Base[O any] struct{ Out task.Output[O] }

func (b *Base[O]) Open() error                     { return nil }
func (b *Base[O]) ProcessWatermark(wm int64) error { return b.Out.EmitWatermark(wm) }
func (b *Base[O]) Finish() error                   { return nil }
func (b *Base[O]) Close() error                    { return nil }

// Collector adapts an Output to the Collect(v) of user functions, stamping
// the timestamp Ts of the record (or timer) being processed. The first
// downstream error sticks and later records are dropped: the task fails
// with that error after the call (TakeErr).
type Collector[T any] struct {
	Out task.Output[T]
	Ts  int64
	err error
}

// Collect emits v with the current timestamp.
func (c *Collector[T]) Collect(v T) {
	if c.err == nil {
		c.err = c.Out.Collect(v, c.Ts)
	}
}

// TakeErr returns and clears the sticky error.
func (c *Collector[T]) TakeErr() error {
	err := c.err
	c.err = nil
	return err
}

// SideOutputs routes records to an operator's side outputs, with the
// timestamp Ts of the record (or timer) being processed. Like Collector's,
// its first error sticks.
type SideOutputs struct {
	Outs map[string]any // tag → task.Output[S]
	Ts   int64
	err  error
}

// EmitSide emits v to the side output tag of so; a tag nobody reads drops
// it, as in Flink.
func EmitSide[S any](so *SideOutputs, tag string, v S) {
	if so.err != nil {
		return
	}
	o, ok := so.Outs[tag]
	if !ok {
		return // nobody reads this tag
	}
	out, ok := o.(task.Output[S])
	if !ok {
		so.err = fmt.Errorf("stream: side output %q carries another type than %T", tag, v)
		return
	}
	so.err = out.Collect(v, so.Ts)
}

// TakeErr returns and clears the sticky error.
func (so *SideOutputs) TakeErr() error {
	err := so.err
	so.err = nil
	return err
}

// Settle returns the first of a callback's error and the sticky errors of
// its collector and side outputs, clearing them.
func Settle[O any](err error, c *Collector[O], so *SideOutputs) error {
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
