// Package state holds keyed state: per-key values that an operator reads
// and writes for the key of the record it is processing.
//
// A Keyed[K] tracks the current key (and its key group) of one operator
// subtask; state tables are registered with it by name. Every table is
// scoped by key and namespace (the window for window state, Void for plain
// keyed state). Tables group entries by key group so that snapshots and
// rescaling can move whole key groups.
//
// Two backends keep the entries: the default "hashmap" backend holds them
// in Go maps; the "pebble" backend (PebbleBackend) in an embedded Pebble
// database on local disk, for state larger than memory and incremental
// checkpoints (SnapshotFiles). Savepoints and full checkpoints have the same
// canonical encoding with either backend, so they restore into both.
package state

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state/pebblestore"
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

// Backend selects where the tables of a Keyed keep their entries: nil or
// HashMapBackend{} in memory, a *PebbleBackend on local disk.
type Backend interface {
	// Name is the backend's state.backend.type.
	Name() string
}

// HashMapBackend keeps state in memory (the default).
type HashMapBackend struct{}

// Name implements Backend.
func (HashMapBackend) Name() string { return "hashmap" }

// PebbleBackend keeps state in a Pebble database per operator subtask, in a
// working directory of its own under Dir that Keyed.Close removes.
type PebbleBackend struct {
	// Dir is the base directory of the working directories
	// (state.backend.pebble.localdir). Default: os.TempDir()/sluice-pebble.
	Dir string
	// CacheSize is each database's block cache in bytes. Default: 8 MiB.
	CacheSize int64
	// MemTableSize is each database's memtable size in bytes. Default: 16 MiB.
	MemTableSize uint64
	// Log receives Pebble's messages at debug level. Default: discarded.
	Log *slog.Logger
}

// Name implements Backend.
func (*PebbleBackend) Name() string { return "pebble" }

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
	// store is the pebble backend's database (nil: hashmap).
	store *pebbleKeyed
}

// NewKeyed returns the in-memory keyed-state context for a subtask owning
// groups.
func NewKeyed[K comparable](maxParallelism int, groups keygroup.Range, clk clock.Clock) (*Keyed[K], error) {
	return NewKeyedWithBackend[K](maxParallelism, groups, clk, nil)
}

// NewKeyedWithBackend returns the keyed-state context for a subtask owning
// groups, keeping state in backend (nil: in memory). Close releases it.
func NewKeyedWithBackend[K comparable](maxParallelism int, groups keygroup.Range, clk clock.Clock, backend Backend) (*Keyed[K], error) {
	h, err := keygroup.NewHasher[K]()
	if err != nil {
		return nil, err
	}
	if maxParallelism < 1 || maxParallelism > keygroup.UpperBound {
		return nil, fmt.Errorf("state: max parallelism %d is outside [1, %d]", maxParallelism, keygroup.UpperBound)
	}
	s := &Keyed[K]{hasher: h, maxPar: maxParallelism, groups: groups, clock: clk, tables: map[string]Table{}}
	switch b := backend.(type) {
	case nil, HashMapBackend, *HashMapBackend:
	case *PebbleBackend:
		st, err := pebblestore.Open(pebblestore.Options{Dir: b.Dir, CacheSize: b.CacheSize, MemTableSize: b.MemTableSize, Log: b.Log})
		if err != nil {
			return nil, err
		}
		s.store = newPebbleKeyed(st)
	default:
		return nil, fmt.Errorf("state: unknown state backend %T", backend)
	}
	return s, nil
}

// Backend is the name of the backend keeping the state: hashmap or pebble.
func (s *Keyed[K]) Backend() string {
	if s.store != nil {
		return "pebble"
	}
	return "hashmap"
}

// Close releases the backend: the pebble backend closes its database and
// removes its working directory. The state is gone afterwards.
func (s *Keyed[K]) Close() error {
	if s.store == nil {
		return nil
	}
	return s.store.st.Close()
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

func register[K comparable, T Table](s *Keyed[K], name string, create func() (T, error)) (T, error) {
	if t, ok := s.tables[name]; ok {
		tt, ok := t.(T)
		if !ok {
			var zero T
			return zero, fmt.Errorf("state: %q is already registered as a different kind or type of state (%T)", name, t)
		}
		return tt, nil
	}
	t, err := create()
	if err != nil {
		var zero T
		return zero, err
	}
	s.tables[name] = t
	s.ordered = append(s.ordered, t)
	if err := s.claim(t); err != nil {
		var zero T
		return zero, err
	}
	return t, nil
}

// Register adds a table created outside this package (the timer service).
// Such tables stay in memory with every backend; incremental snapshots
// carry them in their manifest.
func Register[K comparable, T Table](s *Keyed[K], name string, create func() T) (T, error) {
	return register(s, name, func() (T, error) { return create(), nil })
}

// entryKey scopes an entry by key and namespace.
type entryKey[K, N comparable] struct {
	key K
	ns  N
}
