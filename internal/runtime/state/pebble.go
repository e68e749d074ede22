package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble"

	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state/pebblestore"
)

// The pebble backend stores the entry (key k, namespace ns) of table t in
// key group kg as
//
//	[kg: 2 bytes big-endian][tableID(t): uvarint][codec(k)][codec(ns)] → [TTL timestamp: varint][codec(v)]
//
// so a key group is one key range, a table's entries in a key group are
// one key range, and the canonical snapshot entry (key, namespace, value,
// TTL varint) is the key's tail followed by the value's parts swapped: no
// decoding is needed to write savepoints.

// pebbleKeyed is the pebble backend's state of a Keyed.
type pebbleKeyed struct {
	st *pebblestore.Store
	// ids are the table IDs in use, by ID, against hash collisions.
	ids map[uint32]string
	// restored are the tables restored from snapshot files, by name: their
	// entries are in the database whether registered yet or not.
	restored map[string]manifestTable
}

func newPebbleKeyed(st *pebblestore.Store) *pebbleKeyed {
	return &pebbleKeyed{st: st, ids: map[uint32]string{}, restored: map[string]manifestTable{}}
}

// tableID is the key prefix of a table: a hash of its name, so that the
// same state has the same ID in every subtask (snapshots of several
// subtasks merge on rescaling without rewriting keys).
func tableID(name string) uint32 { return uint32(xxhash.Sum64String(name)) }

func typeName[K, N comparable, V any]() string {
	return fmt.Sprintf("%v/%v/%v", reflect.TypeFor[K](), reflect.TypeFor[N](), reflect.TypeFor[V]())
}

// sameTypes reports whether a table's types as a snapshot recorded them
// (typeName's "K/N/V") are those registered now. The codec's encoding
// depends on a type's shape, not on the package that declares it, so each
// of K, N and V is compared without package qualifiers: state written
// before a type moved to another package (the window operator's contents
// moved from stream to internal/typed/windowing) restores after the move.
// A renamed type or a changed type argument is still another type.
func sameTypes(recorded, registered string) bool {
	if recorded == registered {
		return true
	}
	a, b := typeParts(recorded), typeParts(registered)
	if len(a) != 3 || len(b) != 3 {
		return false
	}
	for i := range a {
		if unqualified(a[i]) != unqualified(b[i]) {
			return false
		}
	}
	return true
}

// typeParts splits "K/N/V" at the slashes outside brackets: reflect names
// a type by its package's name ("stream.T") and only a type argument by its
// import path ("stream.W[github.com/x/jobs.E]"), so every other slash is
// inside brackets.
func typeParts(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
		case '/':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// unqualified drops the package qualifiers of a type name: every run of
// name and path characters keeps what follows its last dot
// ("[]stream.tsValue[github.com/x/jobs.E]" → "[]tsValue[E]").
func unqualified(s string) string {
	var b strings.Builder
	run := -1
	flush := func(end int) {
		if run >= 0 {
			w := s[run:end]
			b.WriteString(w[strings.LastIndexByte(w, '.')+1:])
			run = -1
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '.' || c == '/' || c == '-' || c == '~' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 {
			if run < 0 {
				run = i
			}
			continue
		}
		flush(i)
		b.WriteByte(c)
	}
	flush(len(s))
	return b.String()
}

// claimID reserves the ID of table name.
func (p *pebbleKeyed) claimID(name string) (uint32, error) {
	id := tableID(name)
	if other, ok := p.ids[id]; ok && other != name {
		return 0, fmt.Errorf("state: the names of states %q and %q collide in the pebble backend (table ID %d); rename one", other, name, id)
	}
	p.ids[id] = name
	return id, nil
}

func appendTablePrefix(b []byte, kg int, id uint32) []byte {
	b = pebblestore.AppendKeyGroup(b, kg)
	return binary.AppendUvarint(b, uint64(id))
}

// prefixEnd is the smallest key after every key starting with prefix; the
// last byte of a table prefix is a uvarint's last byte, below 0x80.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	end[len(end)-1]++
	return end
}

// parseKey splits a stored key into key group, table ID and tail.
func parseKey(key []byte) (kg int, id uint32, tail []byte, err error) {
	if len(key) < 3 {
		return 0, 0, nil, fmt.Errorf("%w: key of %d bytes", ErrCorruptSnapshot, len(key))
	}
	v, n := binary.Uvarint(key[2:])
	if n <= 0 || v > 1<<32-1 {
		return 0, 0, nil, fmt.Errorf("%w: bad table ID in key", ErrCorruptSnapshot)
	}
	return pebblestore.KeyGroupOf(key), uint32(v), key[2+n:], nil
}

// appendCanonical appends the canonical snapshot entry of a stored entry.
func appendCanonical(b, tail, val []byte) ([]byte, error) {
	_, n := binary.Varint(val)
	if n <= 0 {
		return nil, fmt.Errorf("%w: bad TTL timestamp in a stored value", ErrCorruptSnapshot)
	}
	b = append(b, tail...)
	b = append(b, val[n:]...)
	return append(b, val[:n]...), nil
}

// forEachEntry calls fn with the tail and value of every stored entry of
// table id in the key groups of r, key group by key group.
func (p *pebbleKeyed) forEachEntry(r keygroup.Range, id uint32, fn func(kg int, tail, val []byte) error) error {
	return forEachEntryIn(p.st.NewIter, r, id, fn)
}

// iterFunc opens an iterator over [lower, upper) of the database or of a
// snapshot of it.
type iterFunc func(lower, upper []byte) (*pebble.Iterator, error)

func forEachEntryIn(newIter iterFunc, r keygroup.Range, id uint32, fn func(kg int, tail, val []byte) error) error {
	var it *pebble.Iterator
	for kg := r.Start; kg <= r.End; kg++ {
		lower := appendTablePrefix(nil, kg, id)
		upper := prefixEnd(lower)
		if it == nil {
			var err error
			if it, err = newIter(lower, upper); err != nil {
				return err
			}
		} else {
			it.SetBounds(lower, upper)
		}
		for valid := it.First(); valid; valid = it.Next() {
			val, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return err
			}
			if err := fn(kg, it.Key()[len(lower):], val); err != nil {
				it.Close()
				return err
			}
		}
	}
	if it == nil {
		return nil
	}
	return it.Close()
}

// snapshotRaw appends the canonical section of table id in key group kg
// (empty: no entries) without decoding: for tables restored but not
// registered yet.
func (p *pebbleKeyed) snapshotRaw(b []byte, kg int, id uint32) ([]byte, error) {
	return snapshotRawIn(p.st.NewIter, b, kg, id)
}

// snapshotRawIn is snapshotRaw over the database or a snapshot of it.
func snapshotRawIn(newIter iterFunc, b []byte, kg int, id uint32) ([]byte, error) {
	var entries []byte
	n := 0
	err := forEachEntryIn(newIter, keygroup.Range{Start: kg, End: kg}, id, func(_ int, tail, val []byte) error {
		var err error
		entries, err = appendCanonical(entries, tail, val)
		n++
		return err
	})
	if err != nil || n == 0 {
		return b, err
	}
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, entries...), nil
}

// pebbleTable is a ValueTable's entries in the pebble backend.
type pebbleTable[K, N comparable, V any] struct {
	pk   *pebbleKeyed
	id   uint32
	cs   *tableCodecs[K, N, V]
	kbuf []byte // the key of the current access
	vbuf []byte
	sbuf []byte // snapshot entries
}

func newPebbleTable[K, N comparable, V any](pk *pebbleKeyed, name, typ string, cs *tableCodecs[K, N, V]) (*pebbleTable[K, N, V], error) {
	if r, ok := pk.restored[name]; ok && !sameTypes(r.Type, typ) {
		return nil, fmt.Errorf("state: %q was checkpointed as state of %s, now registered as %s", name, r.Type, typ)
	}
	id, err := pk.claimID(name)
	if err != nil {
		return nil, err
	}
	return &pebbleTable[K, N, V]{pk: pk, id: id, cs: cs}, nil
}

// key encodes the current key's entry in namespace ns.
func (p *pebbleTable[K, N, V]) key(t *ValueTable[K, N, V], ns N) ([]byte, error) {
	if !t.s.hasKey {
		return nil, ErrNoKey
	}
	b := appendTablePrefix(p.kbuf[:0], t.s.kg, p.id)
	b = p.cs.k.Append(b, t.s.key)
	b = p.cs.n.Append(b, ns)
	p.kbuf = b
	return b, nil
}

func (p *pebbleTable[K, N, V]) get(t *ValueTable[K, N, V], ns N) (v V, ok bool, err error) {
	key, err := p.key(t, ns)
	if err != nil {
		return v, false, err
	}
	val, ok, err := p.pk.st.Get(key, p.vbuf[:0])
	p.vbuf = val
	if err != nil || !ok {
		return v, false, p.err(err)
	}
	at, n := binary.Varint(val)
	if n <= 0 {
		return v, false, p.err(fmt.Errorf("%w: bad TTL timestamp", ErrCorruptSnapshot))
	}
	if t.ttl.Millis > 0 {
		now := t.s.clock.NowMillis()
		if now-at >= t.ttl.Millis {
			if !t.ttl.ReturnExpiredIfNotCleanedUp {
				return v, false, p.err(p.pk.st.Delete(key))
			}
		} else if t.ttl.UpdateOnRead {
			fresh := binary.AppendVarint(make([]byte, 0, len(val)), now)
			fresh = append(fresh, val[n:]...)
			if err := p.pk.st.Set(key, fresh); err != nil {
				return v, false, p.err(err)
			}
		}
	}
	v, rest, err := p.cs.v.Decode(val[n:])
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes in a value", ErrCorruptSnapshot, len(rest))
	}
	if err != nil {
		var zero V
		return zero, false, p.err(err)
	}
	return v, true, nil
}

func (p *pebbleTable[K, N, V]) put(t *ValueTable[K, N, V], ns N, v V) error {
	key, err := p.key(t, ns)
	if err != nil {
		return err
	}
	var at int64
	if t.ttl.Millis > 0 {
		at = t.s.clock.NowMillis()
	}
	val := binary.AppendVarint(p.vbuf[:0], at)
	val = p.cs.v.Append(val, v)
	p.vbuf = val
	return p.err(p.pk.st.Set(key, val))
}

func (p *pebbleTable[K, N, V]) delete(t *ValueTable[K, N, V], ns N) error {
	key, err := p.key(t, ns)
	if err != nil {
		return err
	}
	return p.err(p.pk.st.Delete(key))
}

// err names the table in an error of the store.
func (p *pebbleTable[K, N, V]) err(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("state: %q (pebble): %w", p.pk.ids[p.id], err)
}

// decodeTail decodes the key and namespace of a stored key's tail.
func (p *pebbleTable[K, N, V]) decodeTail(tail []byte) (k K, ns N, err error) {
	if k, tail, err = p.cs.k.Decode(tail); err != nil {
		return k, ns, err
	}
	if ns, tail, err = p.cs.n.Decode(tail); err != nil {
		return k, ns, err
	}
	if len(tail) != 0 {
		return k, ns, fmt.Errorf("%w: %d trailing bytes in a key", ErrCorruptSnapshot, len(tail))
	}
	return k, ns, nil
}

func (p *pebbleTable[K, N, V]) len(t *ValueTable[K, N, V]) int {
	n := 0
	// Len has no error: a failing store counts what it could read.
	_ = p.pk.forEachEntry(t.s.groups, p.id, func(int, []byte, []byte) error { n++; return nil })
	return n
}

func (p *pebbleTable[K, N, V]) keys(t *ValueTable[K, N, V], ns N, fn func(K) error) error {
	return p.err(p.pk.forEachEntry(t.s.groups, p.id, func(_ int, tail, _ []byte) error {
		k, kns, err := p.decodeTail(tail)
		if err != nil {
			return err
		}
		if kns != ns {
			return nil
		}
		return fn(k)
	}))
}

func (p *pebbleTable[K, N, V]) entries(t *ValueTable[K, N, V], fn func(K, N, V) error) error {
	var userErr error
	err := p.pk.forEachEntry(t.s.groups, p.id, func(_ int, tail, val []byte) error {
		k, ns, err := p.decodeTail(tail)
		if err != nil {
			return err
		}
		_, n := binary.Varint(val)
		if n <= 0 {
			return fmt.Errorf("%w: bad TTL timestamp", ErrCorruptSnapshot)
		}
		v, rest, err := p.cs.v.Decode(val[n:])
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("%w: %d trailing bytes in a value", ErrCorruptSnapshot, len(rest))
		}
		if err != nil {
			return err
		}
		if err := fn(k, ns, v); err != nil {
			userErr = err
			return err
		}
		return nil
	})
	if err != nil && errors.Is(err, userErr) {
		return err // the callback's own error, unwrapped
	}
	return p.err(err)
}

// snapshotKeyGroup appends the canonical section of key group kg.
func (p *pebbleTable[K, N, V]) snapshotKeyGroup(b []byte, kg int) ([]byte, error) {
	entries := p.sbuf[:0]
	n := 0
	err := p.pk.forEachEntry(keygroup.Range{Start: kg, End: kg}, p.id, func(_ int, tail, val []byte) error {
		var err error
		entries, err = appendCanonical(entries, tail, val)
		n++
		return err
	})
	p.sbuf = entries
	if err != nil || n == 0 {
		return b, p.err(err)
	}
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, entries...), nil
}

// restoreKeyGroup writes the entries of a canonical section. Keys are
// re-encoded (the canonical encoding of the decoded key) so lookups find
// them; values are stored as they come.
func (p *pebbleTable[K, N, V]) restoreKeyGroup(kg int, data []byte) error {
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return fmt.Errorf("%w: bad entry count", ErrCorruptSnapshot)
	}
	data = data[k:]
	b, err := p.pk.st.NewBatch()
	if err != nil {
		return p.err(err)
	}
	defer func() { b.Close() }()
	var key, val []byte
	for ; n > 0; n-- {
		var (
			kk  K
			ns  N
			err error
		)
		if kk, data, err = p.cs.k.Decode(data); err != nil {
			return err
		}
		if ns, data, err = p.cs.n.Decode(data); err != nil {
			return err
		}
		rest := data
		if _, data, err = p.cs.v.Decode(data); err != nil {
			return err
		}
		raw := rest[:len(rest)-len(data)]
		at, k := binary.Varint(data)
		if k <= 0 {
			return fmt.Errorf("%w: bad TTL timestamp", ErrCorruptSnapshot)
		}
		data = data[k:]
		key = appendTablePrefix(key[:0], kg, p.id)
		key = p.cs.k.Append(key, kk)
		key = p.cs.n.Append(key, ns)
		val = binary.AppendVarint(val[:0], at)
		val = append(val, raw...)
		if err := b.Set(key, val, nil); err != nil {
			return p.err(err)
		}
		if b.Len() >= 4<<20 {
			if err := p.pk.st.Commit(b); err != nil {
				return p.err(err)
			}
			b.Close()
			if b, err = p.pk.st.NewBatch(); err != nil {
				return p.err(err)
			}
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorruptSnapshot, len(data))
	}
	return p.err(p.pk.st.Commit(b))
}
