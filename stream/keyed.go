package stream

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

// KeyedStream is a stream partitioned by key: every record of a key goes to
// the same subtask, which keeps the key's state. Keys are hashed to key
// groups, and key groups to subtasks, so state can be redistributed when
// the parallelism changes.
type KeyedStream[T any, K comparable] struct {
	DataStream[T]
	key func(T) K
}

// KeyBy partitions the stream by the key that fn extracts. Keys must be
// strings, numbers, booleans, or arrays and structs of them (hashed
// deterministically, the same in every process).
func KeyBy[T any, K comparable](in DataStream[T], fn func(T) K) KeyedStream[T, K] {
	if _, err := keygroup.NewHasher[K](); err != nil {
		in.env.fail(fmt.Errorf("KeyBy after operator %s: %w", in.node.Label(), err))
	}
	s := in
	s.part = graph.Hash
	s.partitioner = keyPartitioner[T, K]{key: fn}
	return KeyedStream[T, K]{DataStream: s, key: fn}
}

// KeySelector returns the stream's key function.
func (k KeyedStream[T, K]) KeySelector() func(T) K { return k.key }

type keyPartitioner[T any, K comparable] struct{ key func(T) K }

func (p keyPartitioner[T, K]) NewKeyGroupFunc(maxParallelism int) func(T) int {
	h, err := keygroup.NewHasher[K]()
	if err != nil {
		panic(err) // checked by KeyBy
	}
	return func(v T) int { return h.KeyGroup(p.key(v), maxParallelism) }
}

// keyedOneInput adds a keyed one-input operator.
func keyedOneInput[T any, K comparable, O any](in KeyedStream[T, K], kind, name string, f *factory[O]) DataStream[O] {
	out := oneInput(in.DataStream, kind, name, f)
	out.node.Keyed = true
	return out
}

// newKeyed returns the keyed-state context of an operator subtask.
func newKeyed[K comparable](ctx *task.Context) (*state.Keyed[K], error) {
	return newKeyedState[K](ctx.MaxParallelism, ctx.KeyGroups, ctx.Clock, ctx.StateBackend, ctx.RegisterKeyedState)
}

type reduceOp[T any, K comparable] struct {
	base[T]
	ctx   *task.Context
	key   func(T) K
	fn    func(a, b T) T
	keyed *state.Keyed[K]
	acc   *state.ValueTable[K, state.Void, T]
	batch bool
}

func (r *reduceOp[T, K]) Open() error {
	k, err := newKeyed[K](r.ctx)
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
	return r.out.Collect(v, ts)
}

// Finish emits the final value per key in BATCH mode.
func (r *reduceOp[T, K]) Finish() error {
	if !r.batch {
		return nil
	}
	return r.acc.Entries(func(_ K, _ state.Void, v T) error { return r.out.Collect(v, noTimestamp) })
}

// Reduce combines the records of each key with fn and emits the running
// result after every record (in BATCH mode: only the final result per key).
func Reduce[T any, K comparable](in KeyedStream[T, K], fn func(acc, v T) T) DataStream[T] {
	return keyedOneInput(in, "reduce", "Keyed Reduce", &factory[T]{create: func(ctx *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		op := &reduceOp[T, K]{base: base[T]{out}, ctx: ctx, key: in.key, fn: fn, batch: ctx.Mode == task.BatchMode}
		return op, []any{op}, nil
	}})
}

// AggregateFunction folds records into an accumulator of a type of its own
// and derives a result from it.
type AggregateFunction[IN, ACC, OUT any] interface {
	CreateAccumulator() ACC
	Add(v IN, acc ACC) ACC
	Result(acc ACC) OUT
	// Merge combines two accumulators (session windows merge).
	Merge(a, b ACC) ACC
}

// AggregateFuncs builds an AggregateFunction from closures, one field per
// method of the interface, named for it. AddFn and ResultFn are required;
// CreateAccumulatorFn may be nil (the accumulator starts as ACC's zero
// value); MergeFn may be nil when the aggregate is never merged (session
// windows need it).
type AggregateFuncs[IN, ACC, OUT any] struct {
	CreateAccumulatorFn func() ACC
	AddFn               func(v IN, acc ACC) ACC
	ResultFn            func(acc ACC) OUT
	MergeFn             func(a, b ACC) ACC
}

// CreateAccumulator implements AggregateFunction.
func (f AggregateFuncs[IN, ACC, OUT]) CreateAccumulator() ACC {
	if f.CreateAccumulatorFn == nil {
		var zero ACC
		return zero
	}
	return f.CreateAccumulatorFn()
}

// Add implements AggregateFunction.
func (f AggregateFuncs[IN, ACC, OUT]) Add(v IN, acc ACC) ACC { return f.AddFn(v, acc) }

// Result implements AggregateFunction.
func (f AggregateFuncs[IN, ACC, OUT]) Result(acc ACC) OUT { return f.ResultFn(acc) }

// Merge implements AggregateFunction.
func (f AggregateFuncs[IN, ACC, OUT]) Merge(a, b ACC) ACC {
	if f.MergeFn == nil {
		panic("stream: AggregateFuncs.MergeFn is nil but the aggregate was merged (session windows need it)")
	}
	return f.MergeFn(a, b)
}

type aggregateOp[IN any, K comparable, ACC, OUT any] struct {
	base[OUT]
	ctx   *task.Context
	key   func(IN) K
	fn    AggregateFunction[IN, ACC, OUT]
	keyed *state.Keyed[K]
	acc   *state.ValueTable[K, state.Void, ACC]
	batch bool
}

func (a *aggregateOp[IN, K, ACC, OUT]) Open() error {
	k, err := newKeyed[K](a.ctx)
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
	return a.out.Collect(a.fn.Result(acc), ts)
}

func (a *aggregateOp[IN, K, ACC, OUT]) Finish() error {
	if !a.batch {
		return nil
	}
	return a.acc.Entries(func(_ K, _ state.Void, acc ACC) error {
		return a.out.Collect(a.fn.Result(acc), noTimestamp)
	})
}

// Aggregate is a rolling keyed aggregation: every record is added to its
// key's accumulator and the current result is emitted (in BATCH mode: only
// the final result per key).
func Aggregate[IN any, K comparable, ACC, OUT any](in KeyedStream[IN, K], fn AggregateFunction[IN, ACC, OUT]) DataStream[OUT] {
	return keyedOneInput(in, "aggregate", "Keyed Aggregation", &factory[OUT]{create: func(ctx *task.Context, out task.Output[OUT], _ map[string]any) (task.Operator, []any, error) {
		op := &aggregateOp[IN, K, ACC, OUT]{base: base[OUT]{out}, ctx: ctx, key: in.key, fn: fn, batch: ctx.Mode == task.BatchMode}
		return op, []any{op}, nil
	}})
}
