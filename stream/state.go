package stream

import (
	"time"

	"github.com/sluice/sluice/internal/runtime/state"
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

func (t StateTTL) internal() state.TTL {
	return state.TTL{Millis: t.TTL.Milliseconds(), UpdateOnRead: t.UpdateOnRead, ReturnExpiredIfNotCleanedUp: t.ReturnExpiredIfNotCleanedUp}
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

// keyedStates caches one operator subtask's state handles by descriptor.
type keyedStates[K comparable] struct {
	keyed   *state.Keyed[K]
	handles map[any]any
	// scope is set on the per-window state store of a window function:
	// handles are then scoped by the window (see window_function.go).
	scope *windowScope
}

func newKeyedStates[K comparable](k *state.Keyed[K]) *keyedStates[K] {
	return &keyedStates[K]{keyed: k, handles: map[any]any{}}
}

// handle returns the cached handle for desc, creating it on first use. A
// state that cannot be registered (the name is taken by state of another
// type) yields a handle whose every method returns the error.
func handle[K comparable, H any](s *keyedStates[K], desc any, create func() (H, error)) H {
	if h, ok := s.handles[desc]; ok {
		return h.(H)
	}
	h, _ := create()
	s.handles[desc] = h
	return h
}

// Value returns the current key's value state for d.
func Value[K comparable, V any](ctx KeyedStateContext[K], d *ValueDescriptor[V]) ValueState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ValueState[V], error) {
		if s.scope != nil {
			t, ns, err := scopedTable[K, V](s, d.StateDescriptor)
			if err != nil {
				return badValue[V]{err}, nil
			}
			return &valueState[K, any, V]{t: t, ns: ns}, nil
		}
		t, err := state.NewValueTable[K, state.Void, V](s.keyed, d.Name, d.TTL.internal())
		if err != nil {
			return badValue[V]{err}, nil
		}
		return &valueState[K, state.Void, V]{t: t}, nil
	})
}

// List returns the current key's list state for d.
func List[K comparable, V any](ctx KeyedStateContext[K], d *ListDescriptor[V]) ListState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ListState[V], error) {
		if s.scope != nil {
			t, ns, err := scopedTable[K, []V](s, d.StateDescriptor)
			if err != nil {
				return badList[V]{err}, nil
			}
			return &listState[K, any, V]{t: t, ns: ns}, nil
		}
		if d.TTL.TTL > 0 {
			return newTTLList[K, V](s.keyed, d.Name, d.TTL.internal()), nil // per-element TTL
		}
		t, err := state.NewValueTable[K, state.Void, []V](s.keyed, d.Name, d.TTL.internal())
		if err != nil {
			return badList[V]{err}, nil
		}
		return &listState[K, state.Void, V]{t: t}, nil
	})
}

// MapOf returns the current key's map state for d.
func MapOf[K comparable, UK comparable, UV any](ctx KeyedStateContext[K], d *MapDescriptor[UK, UV]) MapState[UK, UV] {
	s := ctx.keyedStates()
	return handle(s, d, func() (MapState[UK, UV], error) {
		if s.scope != nil {
			t, ns, err := scopedTable[K, map[UK]UV](s, d.StateDescriptor)
			if err != nil {
				return badMap[UK, UV]{err}, nil
			}
			return &mapState[K, any, UK, UV]{t: t, ns: ns}, nil
		}
		if d.TTL.TTL > 0 {
			return newTTLMap[K, UK, UV](s.keyed, d.Name, d.TTL.internal()), nil // per-entry TTL
		}
		t, err := state.NewValueTable[K, state.Void, map[UK]UV](s.keyed, d.Name, d.TTL.internal())
		if err != nil {
			return badMap[UK, UV]{err}, nil
		}
		return &mapState[K, state.Void, UK, UV]{t: t}, nil
	})
}

// Reducing returns the current key's reducing state for d.
func Reducing[K comparable, V any](ctx KeyedStateContext[K], d *ReducingDescriptor[V]) ReducingState[V] {
	s := ctx.keyedStates()
	return handle(s, d, func() (ReducingState[V], error) {
		if s.scope != nil {
			t, ns, err := scopedTable[K, V](s, d.StateDescriptor)
			if err != nil {
				return badReducing[V]{err}, nil
			}
			return &reducingState[K, any, V]{t: t, ns: ns, fn: d.Reduce}, nil
		}
		t, err := state.NewValueTable[K, state.Void, V](s.keyed, d.Name, d.TTL.internal())
		if err != nil {
			return badReducing[V]{err}, nil
		}
		return &reducingState[K, state.Void, V]{t: t, fn: d.Reduce}, nil
	})
}

// Aggregating returns the current key's aggregating state for d.
func Aggregating[K comparable, IN, ACC, OUT any](ctx KeyedStateContext[K], d *AggregatingDescriptor[IN, ACC, OUT]) AggregatingState[IN, OUT] {
	s := ctx.keyedStates()
	return handle(s, d, func() (AggregatingState[IN, OUT], error) {
		if s.scope != nil {
			t, ns, err := scopedTable[K, ACC](s, d.StateDescriptor)
			if err != nil {
				return badAggregating[IN, OUT]{err}, nil
			}
			return &aggregatingState[K, any, IN, ACC, OUT]{t: t, ns: ns, fn: d.Fn}, nil
		}
		t, err := state.NewValueTable[K, state.Void, ACC](s.keyed, d.Name, d.TTL.internal())
		if err != nil {
			return badAggregating[IN, OUT]{err}, nil
		}
		return &aggregatingState[K, state.Void, IN, ACC, OUT]{t: t, fn: d.Fn}, nil
	})
}

type valueState[K, N comparable, V any] struct {
	t  *state.ValueTable[K, N, V]
	ns N
}

func (s *valueState[K, N, V]) Value() (V, error) {
	v, _, err := s.t.Get(s.ns)
	return v, err
}
func (s *valueState[K, N, V]) Lookup() (V, bool, error) { return s.t.Get(s.ns) }
func (s *valueState[K, N, V]) Update(v V) error         { return s.t.Put(s.ns, v) }
func (s *valueState[K, N, V]) Clear() error             { return s.t.Delete(s.ns) }

type listState[K, N comparable, V any] struct {
	t  *state.ValueTable[K, N, []V]
	ns N
}

func (s *listState[K, N, V]) Get() ([]V, error) {
	v, _, err := s.t.Get(s.ns)
	return v, err
}
func (s *listState[K, N, V]) Add(v V) error { return s.AddAll([]V{v}) }
func (s *listState[K, N, V]) AddAll(vs []V) error {
	cur, _, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	return s.t.Put(s.ns, append(cur, vs...))
}
func (s *listState[K, N, V]) Update(vs []V) error {
	if len(vs) == 0 {
		return s.t.Delete(s.ns)
	}
	return s.t.Put(s.ns, append([]V(nil), vs...))
}
func (s *listState[K, N, V]) Clear() error { return s.t.Delete(s.ns) }

type mapState[K, N comparable, UK comparable, UV any] struct {
	t  *state.ValueTable[K, N, map[UK]UV]
	ns N
}

func (s *mapState[K, N, UK, UV]) Get(k UK) (UV, bool, error) {
	m, _, err := s.t.Get(s.ns)
	v, ok := m[k]
	return v, ok, err
}
func (s *mapState[K, N, UK, UV]) Put(k UK, v UV) error {
	m, ok, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	if !ok || m == nil {
		m = map[UK]UV{}
	}
	m[k] = v
	return s.t.Put(s.ns, m)
}
func (s *mapState[K, N, UK, UV]) Remove(k UK) error {
	m, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		return err
	}
	delete(m, k)
	if len(m) == 0 {
		return s.t.Delete(s.ns)
	}
	return s.t.Put(s.ns, m)
}
func (s *mapState[K, N, UK, UV]) Contains(k UK) (bool, error) {
	_, ok, err := s.Get(k)
	return ok, err
}
func (s *mapState[K, N, UK, UV]) Entries() (map[UK]UV, error) {
	m, _, err := s.t.Get(s.ns)
	out := make(map[UK]UV, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, err
}
func (s *mapState[K, N, UK, UV]) IsEmpty() (bool, error) {
	m, _, err := s.t.Get(s.ns)
	return len(m) == 0, err
}
func (s *mapState[K, N, UK, UV]) Clear() error { return s.t.Delete(s.ns) }

type reducingState[K, N comparable, V any] struct {
	t  *state.ValueTable[K, N, V]
	ns N
	fn func(acc, v V) V
}

func (s *reducingState[K, N, V]) Get() (V, bool, error) { return s.t.Get(s.ns) }
func (s *reducingState[K, N, V]) Add(v V) error {
	cur, ok, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	if ok {
		v = s.fn(cur, v)
	}
	return s.t.Put(s.ns, v)
}
func (s *reducingState[K, N, V]) Clear() error { return s.t.Delete(s.ns) }

type aggregatingState[K, N comparable, IN, ACC, OUT any] struct {
	t  *state.ValueTable[K, N, ACC]
	ns N
	fn AggregateFunction[IN, ACC, OUT]
}

func (s *aggregatingState[K, N, IN, ACC, OUT]) Get() (OUT, bool, error) {
	acc, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		var zero OUT
		return zero, false, err
	}
	return s.fn.Result(acc), true, nil
}
func (s *aggregatingState[K, N, IN, ACC, OUT]) Add(v IN) error {
	acc, ok, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	if !ok {
		acc = s.fn.CreateAccumulator()
	}
	return s.t.Put(s.ns, s.fn.Add(v, acc))
}
func (s *aggregatingState[K, N, IN, ACC, OUT]) Clear() error { return s.t.Delete(s.ns) }

// Handles for state that failed to register: every call returns the error.
type badValue[V any] struct{ err error }

func (b badValue[V]) Value() (V, error)        { var z V; return z, b.err }
func (b badValue[V]) Lookup() (V, bool, error) { var z V; return z, false, b.err }
func (b badValue[V]) Update(V) error           { return b.err }
func (b badValue[V]) Clear() error             { return b.err }

type badList[V any] struct{ err error }

func (b badList[V]) Get() ([]V, error) { return nil, b.err }
func (b badList[V]) Add(V) error       { return b.err }
func (b badList[V]) AddAll([]V) error  { return b.err }
func (b badList[V]) Update([]V) error  { return b.err }
func (b badList[V]) Clear() error      { return b.err }

type badMap[UK comparable, UV any] struct{ err error }

func (b badMap[UK, UV]) Get(UK) (UV, bool, error)    { var z UV; return z, false, b.err }
func (b badMap[UK, UV]) Put(UK, UV) error            { return b.err }
func (b badMap[UK, UV]) Remove(UK) error             { return b.err }
func (b badMap[UK, UV]) Contains(UK) (bool, error)   { return false, b.err }
func (b badMap[UK, UV]) Entries() (map[UK]UV, error) { return nil, b.err }
func (b badMap[UK, UV]) IsEmpty() (bool, error)      { return true, b.err }
func (b badMap[UK, UV]) Clear() error                { return b.err }

type badReducing[V any] struct{ err error }

func (b badReducing[V]) Get() (V, bool, error) { var z V; return z, false, b.err }
func (b badReducing[V]) Add(V) error           { return b.err }
func (b badReducing[V]) Clear() error          { return b.err }

type badAggregating[IN, OUT any] struct{ err error }

func (b badAggregating[IN, OUT]) Get() (OUT, bool, error) { var z OUT; return z, false, b.err }
func (b badAggregating[IN, OUT]) Add(IN) error            { return b.err }
func (b badAggregating[IN, OUT]) Clear() error            { return b.err }
