package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/sluice/sluice/runtime/codec"
)

// ErrCorruptSnapshot is wrapped by errors decoding a keyed-state snapshot.
var ErrCorruptSnapshot = errors.New("state: corrupt keyed-state snapshot")

// Snapshotter is a table's checkpoint side: its entries of one key group in
// the canonical encoding (runtime/codec), the same for every backend.
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
	sort.Slice(sections, func(i, j int) bool { return sections[i].name < sections[j].name })
	out := map[int][]byte{}
	var buf []byte
	for kg := s.groups.Start; kg <= s.groups.End; kg++ {
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
	m := t.m[kg-t.s.groups.Start]
	if len(m) == 0 {
		return b, nil
	}
	cs, err := t.codecs()
	if err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(m)))
	for ek, c := range m {
		b = cs.k.Append(b, ek.key)
		b = cs.n.Append(b, ek.ns)
		b = cs.v.Append(b, c.v)
		b = binary.AppendVarint(b, c.at)
	}
	return b, nil
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
