package stream

import (
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/state"
)

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
