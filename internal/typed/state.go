package typed

import (
	"fmt"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/state"
)

// The keyed-state handles of the typed functions: value, list, map,
// reducing and aggregating state of the current key, optionally scoped
// to a window, with TTL. Their interfaces have the method sets of
// stream's; stream caches each handle, as its own interface, per
// descriptor.

// TTL is a state's time to live (zero: none).
type TTL = state.TTL

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

// States caches one operator subtask's state handles by descriptor (the
// cache is stream's: Handles maps its descriptors to its interfaces).
type States[K comparable] struct {
	Keyed   *state.Keyed[K]
	Handles map[any]any
	// Scope is set on the per-window state store of a window function:
	// handles are then scoped by the window.
	Scope *WindowScope
}

// NewStates is the handle cache of keyed.
func NewStates[K comparable](k *state.Keyed[K]) *States[K] {
	return &States[K]{Keyed: k, Handles: map[any]any{}}
}

// ApplyToKeys calls fn for every key of this subtask that has the state
// named name, in no particular order, with that key as the current key
// (Flink's applyToKeyedState); the current key is cleared after. A state
// no key has yet calls fn for none.
func (s *States[K]) ApplyToKeys(name string, fn func(key K) error) error {
	var table state.Table
	for _, t := range s.Keyed.Tables() {
		if t.Name() == name {
			table = t
			break
		}
	}
	if table == nil {
		return nil // no key has this state yet
	}
	kt, ok := table.(interface {
		Keys(ns state.Void, fn func(K) error) error
	})
	if !ok {
		return fmt.Errorf("state %q (%T) cannot list its keys", name, table)
	}
	var keys []K
	if err := kt.Keys(state.Void{}, func(k K) error { keys = append(keys, k); return nil }); err != nil {
		return err
	}
	defer s.Keyed.ClearCurrentKey()
	for _, k := range keys {
		s.Keyed.SetCurrentKey(k)
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// WindowScope scopes a States store to one window (per-window state).
type WindowScope struct {
	NS  any   // the window
	Err error // per-window state is not allowed (merging windows)
}

// scopedTable registers the per-window table of a state.
func scopedTable[K comparable, V any](s *States[K], name string, ttl TTL) (*state.ValueTable[K, any, V], any, error) {
	if s.Scope.Err != nil {
		return nil, nil, s.Scope.Err
	}
	t, err := state.NewValueTable[K, any, V](s.Keyed, "window-state/"+name, ttl)
	if err != nil {
		return nil, nil, err
	}
	return t, s.Scope.NS, nil
}

// NewValue is the value state name of the current key. A state that
// cannot be registered (the name is taken by state of another type)
// yields a handle whose every method returns the error.
func NewValue[K comparable, V any](s *States[K], name string, ttl TTL) ValueState[V] {
	if s.Scope != nil {
		t, ns, err := scopedTable[K, V](s, name, ttl)
		if err != nil {
			return badValue[V]{err}
		}
		return &valueState[K, any, V]{t: t, ns: ns}
	}
	t, err := state.NewValueTable[K, state.Void, V](s.Keyed, name, ttl)
	if err != nil {
		return badValue[V]{err}
	}
	return &valueState[K, state.Void, V]{t: t}
}

// NewList is the list state name of the current key (per-element TTL).
func NewList[K comparable, V any](s *States[K], name string, ttl TTL) ListState[V] {
	if s.Scope != nil {
		t, ns, err := scopedTable[K, []V](s, name, ttl)
		if err != nil {
			return badList[V]{err}
		}
		return &listState[K, any, V]{t: t, ns: ns}
	}
	if ttl.Millis > 0 {
		return newTTLList[K, V](s.Keyed, name, ttl) // per-element TTL
	}
	t, err := state.NewValueTable[K, state.Void, []V](s.Keyed, name, ttl)
	if err != nil {
		return badList[V]{err}
	}
	return &listState[K, state.Void, V]{t: t}
}

// NewMap is the map state name of the current key (per-entry TTL).
func NewMap[K comparable, UK comparable, UV any](s *States[K], name string, ttl TTL) MapState[UK, UV] {
	if s.Scope != nil {
		t, ns, err := scopedTable[K, map[UK]UV](s, name, ttl)
		if err != nil {
			return badMap[UK, UV]{err}
		}
		return &mapState[K, any, UK, UV]{t: t, ns: ns}
	}
	if ttl.Millis > 0 {
		return newTTLMap[K, UK, UV](s.Keyed, name, ttl) // per-entry TTL
	}
	t, err := state.NewValueTable[K, state.Void, map[UK]UV](s.Keyed, name, ttl)
	if err != nil {
		return badMap[UK, UV]{err}
	}
	return &mapState[K, state.Void, UK, UV]{t: t}
}

// NewReducing is the reducing state name of the current key.
func NewReducing[K comparable, V any](s *States[K], name string, ttl TTL, fn func(acc, v V) V) ReducingState[V] {
	if s.Scope != nil {
		t, ns, err := scopedTable[K, V](s, name, ttl)
		if err != nil {
			return badReducing[V]{err}
		}
		return &reducingState[K, any, V]{t: t, ns: ns, fn: fn}
	}
	t, err := state.NewValueTable[K, state.Void, V](s.Keyed, name, ttl)
	if err != nil {
		return badReducing[V]{err}
	}
	return &reducingState[K, state.Void, V]{t: t, fn: fn}
}

// NewAggregating is the aggregating state name of the current key.
func NewAggregating[K comparable, IN, ACC, OUT any](s *States[K], name string, ttl TTL, fn Aggregator[IN, ACC, OUT]) AggregatingState[IN, OUT] {
	if s.Scope != nil {
		t, ns, err := scopedTable[K, ACC](s, name, ttl)
		if err != nil {
			return badAggregating[IN, OUT]{err}
		}
		return &aggregatingState[K, any, IN, ACC, OUT]{t: t, ns: ns, fn: fn}
	}
	t, err := state.NewValueTable[K, state.Void, ACC](s.Keyed, name, ttl)
	if err != nil {
		return badAggregating[IN, OUT]{err}
	}
	return &aggregatingState[K, state.Void, IN, ACC, OUT]{t: t, fn: fn}
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
	fn Aggregator[IN, ACC, OUT]
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

// List and map state with a TTL expire per element and per entry, as in
// Flink: every list element and every map entry carries the processing
// time it was written (or, with UpdateOnRead, last read), and only
// elements and entries older than the TTL are dropped. Value, reducing and
// aggregating state expire as a whole (internal/runtime/state's ValueTable TTL).
//
// Expired elements are removed when the state is read (and, for lists, an
// expired head of the list when elements are added), unless
// ReturnExpiredIfNotCleanedUp is set, in which case reads still return
// them until they are overwritten. State without a TTL takes none of these
// paths.

// ttlElem is a list element or map value with its TTL timestamp.
type ttlElem[V any] struct {
	v  V
	at int64
}

func newTTLList[K comparable, V any](keyed *state.Keyed[K], name string, ttl state.TTL) ListState[V] {
	t, err := state.NewValueTable[K, state.Void, []ttlElem[V]](keyed, name, state.TTL{})
	if err != nil {
		return badList[V]{err}
	}
	return &ttlListState[K, state.Void, V]{t: t, ttl: ttl, clk: keyed.Clock()}
}

func newTTLMap[K comparable, UK comparable, UV any](keyed *state.Keyed[K], name string, ttl state.TTL) MapState[UK, UV] {
	t, err := state.NewValueTable[K, state.Void, map[UK]ttlElem[UV]](keyed, name, state.TTL{})
	if err != nil {
		return badMap[UK, UV]{err}
	}
	return &ttlMapState[K, state.Void, UK, UV]{t: t, ttl: ttl, clk: keyed.Clock()}
}

type ttlListState[K, N comparable, V any] struct {
	t   *state.ValueTable[K, N, []ttlElem[V]]
	ns  N
	ttl state.TTL
	clk clock.Clock
}

func (s *ttlListState[K, N, V]) expired(e ttlElem[V], now int64) bool {
	return now-e.at >= s.ttl.Millis
}

func (s *ttlListState[K, N, V]) Get() ([]V, error) {
	cur, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		return nil, err
	}
	now := s.clk.NowMillis()
	var out []V
	kept := cur[:0]
	changed := false
	for _, e := range cur {
		if s.expired(e, now) {
			if !s.ttl.ReturnExpiredIfNotCleanedUp {
				changed = true
				continue
			}
		} else if s.ttl.UpdateOnRead {
			e.at = now
			changed = true
		}
		out = append(out, e.v)
		kept = append(kept, e)
	}
	if !changed {
		return out, nil
	}
	clear(cur[len(kept):])
	if len(kept) == 0 {
		return out, s.t.Delete(s.ns)
	}
	return out, s.t.Put(s.ns, kept)
}

func (s *ttlListState[K, N, V]) Add(v V) error {
	cur, _, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	now := s.clk.NowMillis()
	// Drop an expired head: elements are appended in time order, so this
	// removes each expired element once and keeps Add cheap.
	i := 0
	for i < len(cur) && s.expired(cur[i], now) {
		i++
	}
	if i > 0 {
		n := copy(cur, cur[i:])
		clear(cur[n:])
		cur = cur[:n]
	}
	return s.t.Put(s.ns, append(cur, ttlElem[V]{v, now}))
}

func (s *ttlListState[K, N, V]) AddAll(vs []V) error {
	for _, v := range vs {
		if err := s.Add(v); err != nil {
			return err
		}
	}
	return nil
}

func (s *ttlListState[K, N, V]) Update(vs []V) error {
	if len(vs) == 0 {
		return s.t.Delete(s.ns)
	}
	now := s.clk.NowMillis()
	l := make([]ttlElem[V], len(vs))
	for i, v := range vs {
		l[i] = ttlElem[V]{v, now}
	}
	return s.t.Put(s.ns, l)
}

func (s *ttlListState[K, N, V]) Clear() error { return s.t.Delete(s.ns) }

type ttlMapState[K, N comparable, UK comparable, UV any] struct {
	t   *state.ValueTable[K, N, map[UK]ttlElem[UV]]
	ns  N
	ttl state.TTL
	clk clock.Clock
}

func (s *ttlMapState[K, N, UK, UV]) expired(e ttlElem[UV], now int64) bool {
	return now-e.at >= s.ttl.Millis
}

// store writes m back, deleting the state when m is empty.
func (s *ttlMapState[K, N, UK, UV]) store(m map[UK]ttlElem[UV]) error {
	if len(m) == 0 {
		return s.t.Delete(s.ns)
	}
	return s.t.Put(s.ns, m)
}

func (s *ttlMapState[K, N, UK, UV]) Get(k UK) (UV, bool, error) {
	var zero UV
	m, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		return zero, false, err
	}
	e, ok := m[k]
	if !ok {
		return zero, false, nil
	}
	now := s.clk.NowMillis()
	if s.expired(e, now) {
		if s.ttl.ReturnExpiredIfNotCleanedUp {
			return e.v, true, nil
		}
		delete(m, k)
		return zero, false, s.store(m)
	}
	if s.ttl.UpdateOnRead {
		m[k] = ttlElem[UV]{e.v, now}
		return e.v, true, s.store(m)
	}
	return e.v, true, nil
}

func (s *ttlMapState[K, N, UK, UV]) Put(k UK, v UV) error {
	m, ok, err := s.t.Get(s.ns)
	if err != nil {
		return err
	}
	if !ok || m == nil {
		m = map[UK]ttlElem[UV]{}
	}
	m[k] = ttlElem[UV]{v, s.clk.NowMillis()}
	return s.t.Put(s.ns, m)
}

func (s *ttlMapState[K, N, UK, UV]) Remove(k UK) error {
	m, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		return err
	}
	delete(m, k)
	return s.store(m)
}

func (s *ttlMapState[K, N, UK, UV]) Contains(k UK) (bool, error) {
	_, ok, err := s.Get(k)
	return ok, err
}

// live visits the entries that reads may return, dropping expired ones
// (and refreshing read ones with UpdateOnRead); it writes m back if needed.
func (s *ttlMapState[K, N, UK, UV]) live(fn func(k UK, v UV)) error {
	m, ok, err := s.t.Get(s.ns)
	if err != nil || !ok {
		return err
	}
	now := s.clk.NowMillis()
	changed := false
	for k, e := range m {
		if s.expired(e, now) {
			if !s.ttl.ReturnExpiredIfNotCleanedUp {
				delete(m, k)
				changed = true
				continue
			}
		} else if s.ttl.UpdateOnRead {
			m[k] = ttlElem[UV]{e.v, now}
			changed = true
		}
		fn(k, e.v)
	}
	if changed {
		return s.store(m)
	}
	return nil
}

func (s *ttlMapState[K, N, UK, UV]) Entries() (map[UK]UV, error) {
	out := map[UK]UV{}
	err := s.live(func(k UK, v UV) { out[k] = v })
	return out, err
}

func (s *ttlMapState[K, N, UK, UV]) IsEmpty() (bool, error) {
	n := 0
	err := s.live(func(UK, UV) { n++ })
	return n == 0, err
}

func (s *ttlMapState[K, N, UK, UV]) Clear() error { return s.t.Delete(s.ns) }

// StoredTTLList is what the list state h (a handle NewList made with a
// TTL) stores for the current key: every element with its TTL timestamp,
// expired or not, for tests of the cleanup.
func StoredTTLList[K comparable, V any](h any) (vs []V, at []int64, err error) {
	s, ok := h.(*ttlListState[K, state.Void, V])
	if !ok {
		return nil, nil, fmt.Errorf("typed: %T is not a list state with a TTL", h)
	}
	raw, _, err := s.t.Get(state.Void{})
	for _, e := range raw {
		vs, at = append(vs, e.v), append(at, e.at)
	}
	return vs, at, err
}
