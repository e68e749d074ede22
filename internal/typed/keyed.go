package typed

import (
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

// NewKeyedState creates the keyed state of an operator subtask and
// registers it for checkpoints and restore (the task closes it with the
// operator). register may be nil (harnesses).
func NewKeyedState[K comparable](maxPar int, groups keygroup.Range, clk clock.Clock, backend state.Backend, register func(task.KeyedState) error) (*state.Keyed[K], error) {
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

// NewKeyed returns the keyed-state context of an operator subtask.
func NewKeyed[K comparable](ctx *task.Context) (*state.Keyed[K], error) {
	return NewKeyedState[K](ctx.MaxParallelism, ctx.KeyGroups, ctx.Clock, ctx.StateBackend, ctx.RegisterKeyedState)
}

type reduceOp[T any, K comparable] struct {
	Base[T]
	ctx   *task.Context
	key   func(T) K
	fn    func(a, b T) T
	keyed *state.Keyed[K]
	acc   *state.ValueTable[K, state.Void, T]
	batch bool
}

func (r *reduceOp[T, K]) Open() error {
	k, err := NewKeyed[K](r.ctx)
	if err != nil {
		return err
	}
	r.keyed = k
	r.acc, err = state.NewValueTable[K, state.Void, T](k, "reduce", state.TTL{})
	return err
}

func (r *reduceOp[T, K]) ProcessElement(v T, ts int64) error {
	r.keyed.SetCurrentKey(r.key(v))
	cur, ok, err := r.acc.Get(state.Void{})
	if err != nil {
		return err
	}
	if ok {
		v = r.fn(cur, v)
	}
	if err := r.acc.Put(state.Void{}, v); err != nil {
		return err
	}
	if r.batch {
		return nil
	}
	return r.Out.Collect(v, ts)
}

// Finish emits the final value per key in BATCH mode.
func (r *reduceOp[T, K]) Finish() error {
	if !r.batch {
		return nil
	}
	return r.acc.Entries(func(_ K, _ state.Void, v T) error { return r.Out.Collect(v, NoTimestamp) })
}

// Reduce combines the records of each key (selected by key) with fn and
// emits the running result after every record (in BATCH mode: only the
// final result per key, without a timestamp). Its node is keyed.
func Reduce[T any, K comparable](key func(T) K, fn func(acc, v T) T) *Factory[T] {
	return &Factory[T]{Make: func(ctx *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&reduceOp[T, K]{Base: Base[T]{out}, ctx: ctx, key: key, fn: fn, batch: ctx.Mode == task.BatchMode})
	}}
}

// Aggregator folds records into an accumulator and derives a result from
// it; stream's AggregateFunction has the same method set.
type Aggregator[IN, ACC, OUT any] interface {
	CreateAccumulator() ACC
	Add(v IN, acc ACC) ACC
	Result(acc ACC) OUT
	Merge(a, b ACC) ACC
}

type aggregateOp[IN any, K comparable, ACC, OUT any] struct {
	Base[OUT]
	ctx   *task.Context
	key   func(IN) K
	fn    Aggregator[IN, ACC, OUT]
	keyed *state.Keyed[K]
	acc   *state.ValueTable[K, state.Void, ACC]
	batch bool
}

func (a *aggregateOp[IN, K, ACC, OUT]) Open() error {
	k, err := NewKeyed[K](a.ctx)
	if err != nil {
		return err
	}
	a.keyed = k
	a.acc, err = state.NewValueTable[K, state.Void, ACC](k, "aggregate", state.TTL{})
	return err
}

func (a *aggregateOp[IN, K, ACC, OUT]) ProcessElement(v IN, ts int64) error {
	a.keyed.SetCurrentKey(a.key(v))
	acc, ok, err := a.acc.Get(state.Void{})
	if err != nil {
		return err
	}
	if !ok {
		acc = a.fn.CreateAccumulator()
	}
	acc = a.fn.Add(v, acc)
	if err := a.acc.Put(state.Void{}, acc); err != nil {
		return err
	}
	if a.batch {
		return nil
	}
	return a.Out.Collect(a.fn.Result(acc), ts)
}

func (a *aggregateOp[IN, K, ACC, OUT]) Finish() error {
	if !a.batch {
		return nil
	}
	return a.acc.Entries(func(_ K, _ state.Void, acc ACC) error {
		return a.Out.Collect(a.fn.Result(acc), NoTimestamp)
	})
}

// Aggregate is a rolling keyed aggregation: every record is added to its
// key's accumulator and the current result is emitted (in BATCH mode:
// only the final result per key).
func Aggregate[IN any, K comparable, ACC, OUT any](key func(IN) K, fn Aggregator[IN, ACC, OUT]) *Factory[OUT] {
	return &Factory[OUT]{Make: func(ctx *task.Context, out task.Output[OUT], _ map[string]any) (task.Operator, []any, error) {
		return Single(&aggregateOp[IN, K, ACC, OUT]{Base: Base[OUT]{out}, ctx: ctx, key: key, fn: fn, batch: ctx.Mode == task.BatchMode})
	}}
}
