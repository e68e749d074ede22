package stream

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/typed"
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
func keyedOneInput[T any, K comparable, O any](in KeyedStream[T, K], kind, name string, f *typed.Factory[O]) DataStream[O] {
	out := oneInput(in.DataStream, kind, name, f)
	out.node.Keyed = true
	return out
}

// Reduce combines the records of each key with fn and emits the running
// result after every record (in BATCH mode: only the final result per key).
func Reduce[T any, K comparable](in KeyedStream[T, K], fn func(acc, v T) T) DataStream[T] {
	return keyedOneInput(in, "reduce", "Keyed Reduce", typed.Reduce(in.key, fn))
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

// Aggregate is a rolling keyed aggregation: every record is added to its
// key's accumulator and the current result is emitted (in BATCH mode: only
// the final result per key).
func Aggregate[IN any, K comparable, ACC, OUT any](in KeyedStream[IN, K], fn AggregateFunction[IN, ACC, OUT]) DataStream[OUT] {
	return keyedOneInput(in, "aggregate", "Keyed Aggregation", typed.Aggregate[IN, K, ACC, OUT](in.key, fn))
}
