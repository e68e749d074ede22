package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/cockroachdb/pebble"
	"reflect"
	"sort"

	"github.com/sluice/sluice/internal/runtime/codec"
)

// ErrCorruptSnapshot is wrapped by errors decoding a keyed-state snapshot.
var ErrCorruptSnapshot = errors.New("state: corrupt keyed-state snapshot")

// Snapshotter is a table's checkpoint side: its entries of one key group in
// the canonical encoding (internal/runtime/codec), the same for every backend.
type Snapshotter interface {
	Table
	// SnapshotKeyGroup appends the entries of key group kg to b.
	SnapshotKeyGroup(b []byte, kg int) ([]byte, error)
	// RestoreKeyGroup adds the entries encoded in data to key group kg.
	RestoreKeyGroup(kg int, data []byte) error
}

// SnapshotKeyGroups encodes every registered table, per key group owned
// by this subtask, with restored state no table has claimed yet (so it
// survives until its operator registers it). Key groups without state are
// left out.
func (s *Keyed[K]) SnapshotKeyGroups() (map[int][]byte, error) {
	return s.snapshotSections(func(Table) bool { return true }, true)
}

// section is one state's part of a key group in a snapshot.
type section struct {
	name string
	// snapshot appends the state's entries of key group kg.
	snapshot func(b []byte, kg int) ([]byte, error)
}

// snapshotSections encodes, per key group, the registered tables that
// include selects and the state restored but not claimed yet; restored
// pebble tables not registered yet are included when raw is set.
func (s *Keyed[K]) snapshotSections(include func(Table) bool, raw bool) (map[int][]byte, error) {
	var sections []section
	for _, t := range s.ordered {
		if !include(t) {
			continue
		}
		sn, ok := t.(Snapshotter)
		if !ok {
			return nil, fmt.Errorf("state: table %q (%T) cannot be checkpointed", t.Name(), t)
		}
		sections = append(sections, section{t.Name(), sn.SnapshotKeyGroup})
	}
	for name, groups := range s.pending {
		sections = append(sections, section{name, func(b []byte, kg int) ([]byte, error) { return append(b, groups[kg]...), nil }})
	}
	if raw && s.store != nil {
		for name, mt := range s.store.restored {
			if _, ok := s.tables[name]; !ok {
				id := mt.ID
				sections = append(sections, section{name, func(b []byte, kg int) ([]byte, error) { return s.store.snapshotRaw(b, kg, id) }})
			}
		}
	}
	return assemble(sections, s.groups.Start, s.groups.End)
}

// assemble builds the per-key-group snapshot of sections, in name order.
func assemble(sections []section, start, end int) (map[int][]byte, error) {
	sort.Slice(sections, func(i, j int) bool { return sections[i].name < sections[j].name })
	out := map[int][]byte{}
	var buf []byte
	for kg := start; kg <= end; kg++ {
		var b []byte
		for _, sec := range sections {
			var err error
			buf, err = sec.snapshot(buf[:0], kg)
			if err != nil {
				return nil, fmt.Errorf("state: snapshotting %q: %w", sec.name, err)
			}
			if len(buf) == 0 {
				continue
			}
			b = binary.AppendUvarint(b, uint64(len(sec.name)))
			b = append(b, sec.name...)
			b = binary.AppendUvarint(b, uint64(len(buf)))
			b = append(b, buf...)
		}
		if len(b) > 0 {
			out[kg] = b
		}
	}
	return out, nil
}

// RestoreKeyGroups takes snapshotted key groups (those outside this
// subtask's range are ignored, so a rescaled job can hand every subtask
// the whole set). Tables registered later receive their entries when they
// register: operators create state lazily.
func (s *Keyed[K]) RestoreKeyGroups(groups map[int][]byte) error {
	if s.pending == nil {
		s.pending = map[string]map[int][]byte{}
	}
	for kg, b := range groups {
		if !s.groups.Contains(kg) {
			continue
		}
		for len(b) > 0 {
			name, rest, err := readChunk(b)
			if err != nil {
				return fmt.Errorf("%w: key group %d: %v", ErrCorruptSnapshot, kg, err)
			}
			section, rest, err := readChunk(rest)
			if err != nil {
				return fmt.Errorf("%w: key group %d, state %q: %v", ErrCorruptSnapshot, kg, name, err)
			}
			b = rest
			if t, ok := s.tables[string(name)]; ok {
				if err := restoreInto(t, kg, section); err != nil {
					return err
				}
				continue
			}
			m := s.pending[string(name)]
			if m == nil {
				m = map[int][]byte{}
				s.pending[string(name)] = m
			}
			m[kg] = section
		}
	}
	return nil
}

// PendingRestore lists restored state that no table has claimed yet.
func (s *Keyed[K]) PendingRestore() []string {
	var names []string
	for n := range s.pending {
		names = append(names, n)
	}
	if s.store != nil {
		for n := range s.store.restored {
			if _, ok := s.tables[n]; !ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func restoreInto(t Table, kg int, data []byte) error {
	sn, ok := t.(Snapshotter)
	if !ok {
		return fmt.Errorf("state: table %q (%T) cannot be restored", t.Name(), t)
	}
	if err := sn.RestoreKeyGroup(kg, data); err != nil {
		return fmt.Errorf("state: restoring %q, key group %d: %w", t.Name(), kg, err)
	}
	return nil
}

// claim restores pending entries into a newly registered table.
func (s *Keyed[K]) claim(t Table) error {
	groups, ok := s.pending[t.Name()]
	if !ok {
		return nil
	}
	delete(s.pending, t.Name())
	for kg, data := range groups {
		if err := restoreInto(t, kg, data); err != nil {
			return err
		}
	}
	return nil
}

func readChunk(b []byte) (chunk, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("bad length")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// codecs of a value table, built on first use.
type tableCodecs[K, N comparable, V any] struct {
	k   *codec.Codec[K]
	n   *codec.Codec[N]
	v   *codec.Codec[V]
	err error
}

func (t *ValueTable[K, N, V]) codecs() (*tableCodecs[K, N, V], error) {
	if t.cs == nil {
		c := &tableCodecs[K, N, V]{}
		if c.k, c.err = codec.For[K](); c.err == nil {
			if c.n, c.err = codec.For[N](); c.err == nil {
				c.v, c.err = codec.For[V]()
			}
		}
		t.cs = c
	}
	return t.cs, t.cs.err
}

// SnapshotKeyGroup implements Snapshotter: a count, then key, namespace,
// value and TTL timestamp of each entry.
func (t *ValueTable[K, N, V]) SnapshotKeyGroup(b []byte, kg int) ([]byte, error) {
	if t.p != nil {
		return t.p.snapshotKeyGroup(b, kg)
	}
	cs, err := t.codecs()
	if err != nil {
		return nil, err
	}
	return encodeGroup(b, t.m[kg-t.s.groups.Start], cs), nil
}

// encodeGroup appends the entries of one key group's map.
func encodeGroup[K, N comparable, V any](b []byte, m map[entryKey[K, N]]cell[V], cs *tableCodecs[K, N, V]) []byte {
	if len(m) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(m)))
	for ek, c := range m {
		b = cs.k.Append(b, ek.key)
		b = cs.n.Append(b, ek.ns)
		b = cs.v.Append(b, c.v)
		b = binary.AppendVarint(b, c.at)
	}
	return b
}

// freezer is a table that snapshots by copy-on-write: freezeSnapshot
// marks its current contents as shared with a snapshot and returns an
// encoder of them that may run on another goroutine while the task goes
// on (the task copies a key group before changing it). ok is false when
// the table cannot (the pebble backend).
type freezer interface {
	freezeSnapshot() (enc func(b []byte, kg int) ([]byte, error), ok bool, err error)
}

// freezeSnapshot implements freezer for heap tables.
func (t *ValueTable[K, N, V]) freezeSnapshot() (func(b []byte, kg int) ([]byte, error), bool, error) {
	if t.p != nil {
		return nil, false, nil
	}
	cs, err := t.codecs()
	if err != nil {
		return nil, true, err
	}
	if t.shared == nil {
		t.shared = make([]bool, len(t.m))
	}
	frozen := append([]map[entryKey[K, N]]cell[V](nil), t.m...)
	for i, m := range frozen {
		if len(m) > 0 {
			t.shared[i] = true
		}
	}
	start := t.s.groups.Start
	return func(b []byte, kg int) ([]byte, error) { return encodeGroup(b, frozen[kg-start], cs), nil }, true, nil
}

// unshare gives local key group i a map of its own before the task
// changes it, so a snapshot encoding the old map on another goroutine is
// not disturbed. Values holding references (slices, maps, pointers) are
// copied deeply, as the task may change them in place.
func (t *ValueTable[K, N, V]) unshare(i int) {
	src := t.m[i]
	dst := make(map[entryKey[K, N]]cell[V], len(src))
	deep := t.valuesHoldReferences()
	for k, c := range src {
		if deep {
			c.v = t.deepCopy(c.v)
		}
		dst[k] = c
	}
	t.m[i] = dst
	t.shared[i] = false
}

func (t *ValueTable[K, N, V]) valuesHoldReferences() bool {
	if t.refs == 0 {
		t.refs = 1
		if holdsReferences(reflect.TypeFor[V]()) {
			t.refs = 2
		}
	}
	return t.refs == 2
}

// deepCopy copies v through its canonical encoding; the codec exists:
// the table was frozen with it.
func (t *ValueTable[K, N, V]) deepCopy(v V) V {
	cs := t.cs
	c, _, err := cs.v.Decode(cs.v.Append(nil, v))
	if err != nil {
		panic(fmt.Sprintf("state: copying a %T through its own encoding failed: %v", v, err)) // codec invariant
	}
	return c
}

func holdsReferences(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return holdsReferences(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if holdsReferences(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// SnapshotKeyGroupsAsync takes a snapshot in two parts: the synchronous
// part, on the task goroutine, freezes the heap tables (constant work per
// key group) and encodes the small rest (timers, pebble-backed tables);
// the returned function encodes the frozen tables and may run on another
// goroutine while the task processes records.
//
// With the pebble backend the tables are read from a pebble snapshot taken
// at the barrier; release frees it (encode releases it too), and must be
// called if encode never runs.
func (s *Keyed[K]) SnapshotKeyGroupsAsync() (encode func() (map[int][]byte, error), release func(), err error) {
	release = func() {}
	var newIter iterFunc
	if s.store != nil {
		snap, rel, err := s.store.st.NewSnapshot()
		if err != nil {
			return nil, nil, fmt.Errorf("state: snapshotting: %w", err)
		}
		release = rel
		newIter = func(lower, upper []byte) (*pebble.Iterator, error) {
			return snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		}
	}
	fail := func(err error) (func() (map[int][]byte, error), func(), error) {
		release()
		return nil, nil, err
	}
	var sections []section
	for _, t := range s.ordered {
		if fz, ok := t.(freezer); ok {
			enc, ok, err := fz.freezeSnapshot()
			if err != nil {
				return fail(fmt.Errorf("state: snapshotting %q: %w", t.Name(), err))
			}
			if ok {
				sections = append(sections, section{t.Name(), enc})
				continue
			}
		}
		if pt, ok := t.(interface{ pebbleID() (uint32, bool) }); ok && newIter != nil {
			if id, ok := pt.pebbleID(); ok {
				sections = append(sections, section{t.Name(), func(b []byte, kg int) ([]byte, error) { return snapshotRawIn(newIter, b, kg, id) }})
				continue
			}
		}
		sn, ok := t.(Snapshotter)
		if !ok {
			return fail(fmt.Errorf("state: table %q (%T) cannot be checkpointed", t.Name(), t))
		}
		pre, err := s.precompute(sn.SnapshotKeyGroup)
		if err != nil {
			return fail(fmt.Errorf("state: snapshotting %q: %w", t.Name(), err))
		}
		sections = append(sections, pre.section(t.Name()))
	}
	for name, groups := range s.pending {
		sections = append(sections, precomputed(groups).section(name))
	}
	if s.store != nil {
		for name, mt := range s.store.restored {
			if _, ok := s.tables[name]; !ok {
				id := mt.ID
				sections = append(sections, section{name, func(b []byte, kg int) ([]byte, error) { return snapshotRawIn(newIter, b, kg, id) }})
			}
		}
	}
	groups := s.groups
	return func() (map[int][]byte, error) {
		defer release()
		return assemble(sections, groups.Start, groups.End)
	}, release, nil
}

type precomputed map[int][]byte

func (p precomputed) section(name string) section {
	return section{name, func(b []byte, kg int) ([]byte, error) { return append(b, p[kg]...), nil }}
}

func (s *Keyed[K]) precompute(enc func(b []byte, kg int) ([]byte, error)) (precomputed, error) {
	out := precomputed{}
	for kg := s.groups.Start; kg <= s.groups.End; kg++ {
		b, err := enc(nil, kg)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			out[kg] = b
		}
	}
	return out, nil
}

// RestoreKeyGroup implements Snapshotter.
func (t *ValueTable[K, N, V]) RestoreKeyGroup(kg int, data []byte) error {
	if t.p != nil {
		return t.p.restoreKeyGroup(kg, data)
	}
	cs, err := t.codecs()
	if err != nil {
		return err
	}
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return fmt.Errorf("%w: bad entry count", ErrCorruptSnapshot)
	}
	data = data[k:]
	i := kg - t.s.groups.Start
	if t.m[i] == nil {
		t.m[i] = make(map[entryKey[K, N]]cell[V], n)
	}
	for ; n > 0; n-- {
		var ek entryKey[K, N]
		var c cell[V]
		if ek.key, data, err = cs.k.Decode(data); err != nil {
			return err
		}
		if ek.ns, data, err = cs.n.Decode(data); err != nil {
			return err
		}
		if c.v, data, err = cs.v.Decode(data); err != nil {
			return err
		}
		at, k := binary.Varint(data)
		if k <= 0 {
			return fmt.Errorf("%w: bad TTL timestamp", ErrCorruptSnapshot)
		}
		c.at, data = at, data[k:]
		t.m[i][ek] = c
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorruptSnapshot, len(data))
	}
	return nil
}
