package core

import "github.com/sluice/sluice/internal/runtime/state"

// VoidNamespace is the namespace of state not scoped by a window.
const VoidNamespace = ""

// ValueState is one byte string per (current key, namespace). It is kept
// by the engine's keyed state (either backend), checkpointed per key group
// and redistributed by key group on rescaling.
type ValueState struct {
	t *state.ValueTable[string, string, []byte]
}

// Get returns the current key's value in ns.
func (s *ValueState) Get(ns string) (v []byte, ok bool, err error) { return s.t.Get(ns) }

// Put sets the current key's value in ns (a copy of v).
func (s *ValueState) Put(ns string, v []byte) error {
	return s.t.Put(ns, append(make([]byte, 0, len(v)), v...))
}

// Delete removes the current key's value in ns.
func (s *ValueState) Delete(ns string) error { return s.t.Delete(ns) }

// Keys calls fn with every key that has a value in ns (any order).
func (s *ValueState) Keys(ns string, fn func(key string) error) error { return s.t.Keys(ns, fn) }

// ListState is a list of byte strings per (current key, namespace).
type ListState struct {
	t *state.ValueTable[string, string, [][]byte]
}

// Get returns the current key's list in ns (nil when empty). Do not
// modify it.
func (s *ListState) Get(ns string) ([][]byte, error) {
	l, _, err := s.t.Get(ns)
	return l, err
}

// Add appends a copy of v to the current key's list in ns.
func (s *ListState) Add(ns string, v []byte) error {
	l, _, err := s.t.Get(ns)
	if err != nil {
		return err
	}
	// In place: the table gives a snapshot in progress a copy of its own.
	return s.t.Put(ns, append(l, append([]byte(nil), v...)))
}

// Update replaces the current key's list in ns (empty: clears it).
func (s *ListState) Update(ns string, vs [][]byte) error {
	if len(vs) == 0 {
		return s.t.Delete(ns)
	}
	nl := make([][]byte, len(vs))
	for i, v := range vs {
		nl[i] = append([]byte(nil), v...)
	}
	return s.t.Put(ns, nl)
}

// Clear removes the current key's list in ns.
func (s *ListState) Clear(ns string) error { return s.t.Delete(ns) }

// MapState is a map from strings to byte strings per (current key,
// namespace).
type MapState struct {
	t *state.ValueTable[string, string, map[string][]byte]
}

// Get returns the value of k in the current key's map in ns.
func (s *MapState) Get(ns, k string) (v []byte, ok bool, err error) {
	m, _, err := s.t.Get(ns)
	if err != nil {
		return nil, false, err
	}
	v, ok = m[k]
	return v, ok, nil
}

// Put sets k to a copy of v in the current key's map in ns.
func (s *MapState) Put(ns, k string, v []byte) error {
	m, _, err := s.t.Get(ns)
	if err != nil {
		return err
	}
	if m == nil {
		m = map[string][]byte{}
	}
	// In place: the table gives a snapshot in progress a copy of its own.
	m[k] = append([]byte(nil), v...)
	return s.t.Put(ns, m)
}

// Remove deletes k from the current key's map in ns.
func (s *MapState) Remove(ns, k string) error {
	m, _, err := s.t.Get(ns)
	if err != nil {
		return err
	}
	if _, ok := m[k]; !ok {
		return nil
	}
	if len(m) == 1 {
		return s.t.Delete(ns)
	}
	delete(m, k)
	return s.t.Put(ns, m)
}

// Entries calls fn for every entry of the current key's map in ns (any
// order).
func (s *MapState) Entries(ns string, fn func(k string, v []byte) error) error {
	m, _, err := s.t.Get(ns)
	if err != nil {
		return err
	}
	for k, v := range m {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Clear removes the current key's map in ns.
func (s *MapState) Clear(ns string) error { return s.t.Delete(ns) }
