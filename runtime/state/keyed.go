// Package state holds keyed state: per-key values that an operator reads
// and writes for the key of the record it is processing.
//
// A Keyed[K] tracks the current key (and its key group) of one operator
// subtask; state tables are registered with it by name. Every table is
// scoped by key and namespace (the window for window state, Void for plain
// keyed state). This package is the in-memory ("hashmap") backend; tables
// group entries by key group so that snapshots and rescaling can move whole
// key groups.
package state

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/runtime/clock"
	"github.com/sluice/sluice/runtime/keygroup"
)

// ErrNoKey is returned when state is accessed outside keyed processing.
var ErrNoKey = errors.New("state: no current key (keyed state is only available while processing a keyed record or timer)")

// Void is the namespace of state that is not scoped by a window.
type Void struct{}

// Table is the type-erased view of one state table.
type Table interface {
	// Name of the state.
	Name() string
	// Len is the number of (key, namespace) entries.
	Len() int
}

// Keyed is the keyed-state context of one operator subtask.
type Keyed[K comparable] struct {
	hasher  *keygroup.Hasher[K]
	maxPar  int
	groups  keygroup.Range
	clock   clock.Clock
	key     K
	kg      int
	hasKey  bool
	tables  map[string]Table
	ordered []Table
	// pending holds restored state of tables not registered yet.
	pending map[string]map[int][]byte
}

// NewKeyed returns the keyed-state context for a subtask owning groups.
func NewKeyed[K comparable](maxParallelism int, groups keygroup.Range, clk clock.Clock) (*Keyed[K], error) {
	h, err := keygroup.NewHasher[K]()
	if err != nil {
		return nil, err
	}
	return &Keyed[K]{hasher: h, maxPar: maxParallelism, groups: groups, clock: clk, tables: map[string]Table{}}, nil
}

// SetCurrentKey makes k the key of subsequent state accesses.
func (s *Keyed[K]) SetCurrentKey(k K) {
	s.key = k
	s.kg = s.hasher.KeyGroup(k, s.maxPar)
	s.hasKey = true
}

// SetCurrentKeyAndGroup sets a key whose group is already known (timers).
func (s *Keyed[K]) SetCurrentKeyAndGroup(k K, kg int) {
	s.key, s.kg, s.hasKey = k, kg, true
}

// ClearCurrentKey ends keyed processing.
func (s *Keyed[K]) ClearCurrentKey() {
	var zero K
	s.key, s.hasKey = zero, false
}

// CurrentKey is the current key; ok is false outside keyed processing.
func (s *Keyed[K]) CurrentKey() (k K, ok bool) { return s.key, s.hasKey }

// CurrentKeyGroup is the current key's key group.
func (s *Keyed[K]) CurrentKeyGroup() int { return s.kg }

// KeyGroups is the range this subtask owns.
func (s *Keyed[K]) KeyGroups() keygroup.Range { return s.groups }

// Clock is the processing-time clock (for TTL).
func (s *Keyed[K]) Clock() clock.Clock { return s.clock }

// Tables returns the registered tables in registration order.
func (s *Keyed[K]) Tables() []Table { return s.ordered }

func register[K comparable, T Table](s *Keyed[K], name string, create func() T) (T, error) {
	if t, ok := s.tables[name]; ok {
		tt, ok := t.(T)
		if !ok {
			var zero T
			return zero, fmt.Errorf("state: %q is already registered as a different kind or type of state (%T)", name, t)
		}
		return tt, nil
	}
	t := create()
	s.tables[name] = t
	s.ordered = append(s.ordered, t)
	if err := s.claim(t); err != nil {
		var zero T
		return zero, err
	}
	return t, nil
}

// Register adds a table created outside this package (the timer service).
func Register[K comparable, T Table](s *Keyed[K], name string, create func() T) (T, error) {
	return register(s, name, create)
}

// entryKey scopes an entry by key and namespace.
type entryKey[K, N comparable] struct {
	key K
	ns  N
}
