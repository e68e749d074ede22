package stream

import (
	"time"

	"github.com/sluice/sluice/internal/typed"
)

// StateTTL makes state entries expire after a time of processing time
// without writes (or reads, with UpdateOnRead), as Flink's StateTtlConfig.
type StateTTL struct {
	TTL time.Duration
	// UpdateOnRead refreshes the expiry on reads too (OnReadAndWrite).
	UpdateOnRead bool
	// ReturnExpiredIfNotCleanedUp may return an expired value still stored.
	ReturnExpiredIfNotCleanedUp bool
}

func (t StateTTL) internal() typed.TTL {
	return typed.TTL{Millis: t.TTL.Milliseconds(), UpdateOnRead: t.UpdateOnRead, ReturnExpiredIfNotCleanedUp: t.ReturnExpiredIfNotCleanedUp}
}

// StateDescriptor is what every state descriptor has: a name unique within
// its operator, and an optional TTL.
type StateDescriptor struct {
	Name string
	TTL  StateTTL
}

// ValueDescriptor declares a value state of type V.
type ValueDescriptor[V any] struct{ StateDescriptor }

// NewValueDescriptor declares a value state. Declare descriptors once (in
// main) and use them from functions through the Value function.
func NewValueDescriptor[V any](name string) *ValueDescriptor[V] {
	return &ValueDescriptor[V]{StateDescriptor{Name: name}}
}

// WithTTL sets the state's time to live.
func (d *ValueDescriptor[V]) WithTTL(ttl StateTTL) *ValueDescriptor[V] { d.TTL = ttl; return d }

// ListDescriptor declares a list state of elements V.
type ListDescriptor[V any] struct{ StateDescriptor }

// NewListDescriptor declares a list state.
func NewListDescriptor[V any](name string) *ListDescriptor[V] {
	return &ListDescriptor[V]{StateDescriptor{Name: name}}
}

// WithTTL sets the state's time to live.
func (d *ListDescriptor[V]) WithTTL(ttl StateTTL) *ListDescriptor[V] { d.TTL = ttl; return d }

// MapDescriptor declares a map state from UK to UV.
type MapDescriptor[UK comparable, UV any] struct{ StateDescriptor }

// NewMapDescriptor declares a map state.
func NewMapDescriptor[UK comparable, UV any](name string) *MapDescriptor[UK, UV] {
	return &MapDescriptor[UK, UV]{StateDescriptor{Name: name}}
}

// WithTTL sets the state's time to live.
func (d *MapDescriptor[UK, UV]) WithTTL(ttl StateTTL) *MapDescriptor[UK, UV] { d.TTL = ttl; return d }

// ReducingDescriptor declares a state that folds added values with Reduce.
type ReducingDescriptor[V any] struct {
	StateDescriptor
	Reduce func(acc, v V) V
}

// NewReducingDescriptor declares a reducing state.
func NewReducingDescriptor[V any](name string, reduce func(acc, v V) V) *ReducingDescriptor[V] {
	return &ReducingDescriptor[V]{StateDescriptor{Name: name}, reduce}
}

// WithTTL sets the state's time to live.
func (d *ReducingDescriptor[V]) WithTTL(ttl StateTTL) *ReducingDescriptor[V] { d.TTL = ttl; return d }

// AggregatingDescriptor declares a state that aggregates added values.
type AggregatingDescriptor[IN, ACC, OUT any] struct {
	StateDescriptor
	Fn AggregateFunction[IN, ACC, OUT]
}

// NewAggregatingDescriptor declares an aggregating state.
func NewAggregatingDescriptor[IN, ACC, OUT any](name string, fn AggregateFunction[IN, ACC, OUT]) *AggregatingDescriptor[IN, ACC, OUT] {
	return &AggregatingDescriptor[IN, ACC, OUT]{StateDescriptor{Name: name}, fn}
}

// WithTTL sets the state's time to live.
func (d *AggregatingDescriptor[IN, ACC, OUT]) WithTTL(ttl StateTTL) *AggregatingDescriptor[IN, ACC, OUT] {
	d.TTL = ttl
	return d
}

// ValueState is a single value per key.
type ValueState[V any] interface {
	// Value is the current key's value, or the zero value when unset.
	Value() (V, error)
	// Lookup is the value and whether it is set.
	Lookup() (V, bool, error)
	Update(v V) error
	Clear() error
}

// ListState is a list of values per key.
type ListState[V any] interface {
	Get() ([]V, error)
	Add(v V) error
	AddAll(vs []V) error
	Update(vs []V) error
	Clear() error
}

// MapState is a map per key.
type MapState[UK comparable, UV any] interface {
	Get(k UK) (UV, bool, error)
	Put(k UK, v UV) error
	Remove(k UK) error
	Contains(k UK) (bool, error)
	// Entries returns a copy of the current key's map.
	Entries() (map[UK]UV, error)
	IsEmpty() (bool, error)
	Clear() error
}

// ReducingState folds added values into one.
type ReducingState[V any] interface {
	Get() (V, bool, error)
	Add(v V) error
	Clear() error
}

// AggregatingState aggregates added values into a result.
type AggregatingState[IN, OUT any] interface {
	Get() (OUT, bool, error)
	Add(v IN) error
	Clear() error
}

// KeyedStateContext is implemented by the contexts of functions that run on
// keyed streams; it gives access to the current key's state.
type KeyedStateContext[K comparable] interface {
	keyedStates() *keyedStates[K]
}

// keyedStates caches one operator subtask's state handles by descriptor
// (internal/typed's store; the handles are typed's, cached as stream's
// interfaces).
type keyedStates[K comparable] = typed.States[K]

// handle returns the cached handle for desc, creating it on first use. A
// state that cannot be registered (the name is taken by state of another
// type) yields a handle whose every method returns the error.
func handle[K comparable, H any](s *keyedStates[K], desc any, create func() (H, error)) H {
	if h, ok := s.Handles[desc]; ok {
		return h.(H)
	}
	h, _ := create()
	s.Handles[desc] = h
	return h
}

// Value returns the current key's value state for d.
func Value[K comparable, V any](ctx KeyedStateContext[K], d *ValueDescriptor[V]) ValueState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ValueState[V], error) {
		return typed.NewValue[K, V](s, d.Name, d.TTL.internal()), nil
	})
}

// List returns the current key's list state for d.
func List[K comparable, V any](ctx KeyedStateContext[K], d *ListDescriptor[V]) ListState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ListState[V], error) {
		return typed.NewList[K, V](s, d.Name, d.TTL.internal()), nil
	})
}

// MapOf returns the current key's map state for d.
func MapOf[K comparable, UK comparable, UV any](ctx KeyedStateContext[K], d *MapDescriptor[UK, UV]) MapState[UK, UV] {
	s := ctx.keyedStates()
	return handle(s, d, func() (MapState[UK, UV], error) {
		return typed.NewMap[K, UK, UV](s, d.Name, d.TTL.internal()), nil
	})
}

// Reducing returns the current key's reducing state for d.
func Reducing[K comparable, V any](ctx KeyedStateContext[K], d *ReducingDescriptor[V]) ReducingState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ReducingState[V], error) {
		return typed.NewReducing[K, V](s, d.Name, d.TTL.internal(), d.Reduce), nil
	})
}

// Aggregating returns the current key's aggregating state for d.
func Aggregating[K comparable, IN, ACC, OUT any](ctx KeyedStateContext[K], d *AggregatingDescriptor[IN, ACC, OUT]) AggregatingState[IN, OUT] {
	s := ctx.keyedStates()
	return handle(s, d, func() (AggregatingState[IN, OUT], error) {
		return typed.NewAggregating[K, IN, ACC, OUT](s, d.Name, d.TTL.internal(), d.Fn), nil
	})
}
