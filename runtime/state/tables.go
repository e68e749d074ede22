package state

// TTL configures time-to-live of state entries, measured in processing
// time as in Flink.
type TTL struct {
	// Millis is the time to live; 0 disables TTL.
	Millis int64
	// UpdateOnRead refreshes an entry's timestamp on reads as well as writes
	// (Flink's OnReadAndWrite); the default refreshes on create and write.
	UpdateOnRead bool
	// ReturnExpiredIfNotCleanedUp returns expired values still present
	// (Flink's ReturnExpiredIfNotCleanedUp); the default never returns them.
	ReturnExpiredIfNotCleanedUp bool
}

type cell[V any] struct {
	v  V
	at int64 // last access time for TTL
}

// ValueTable stores one value per (key, namespace). With the pebble
// backend, values are stored encoded: a value read and changed must be
// written back with Put (as with Flink's RocksDB backend).
type ValueTable[K, N comparable, V any] struct {
	name string
	s    *Keyed[K]
	ttl  TTL
	m    []map[entryKey[K, N]]cell[V] // per local key group (hashmap)
	cs   *tableCodecs[K, N, V]
	p    *pebbleTable[K, N, V] // the pebble backend's table, or nil
	// shared marks the key groups whose maps a snapshot in progress is
	// encoding (copy-on-write); refs caches whether V holds references.
	shared []bool
	refs   int8
}

// NewValueTable registers (or returns) the value state called name.
//
// With the pebble backend, a table whose key, namespace or value type has
// no canonical encoding (internal/runtime/codec: interfaces, channels, funcs) is
// kept in memory, as with the hashmap backend, and cannot be checkpointed.
func NewValueTable[K, N comparable, V any](s *Keyed[K], name string, ttl TTL) (*ValueTable[K, N, V], error) {
	return register(s, name, func() (*ValueTable[K, N, V], error) {
		t := &ValueTable[K, N, V]{name: name, s: s, ttl: ttl}
		if s.store != nil {
			if cs, err := t.codecs(); err == nil {
				p, err := newPebbleTable(s.store, name, typeName[K, N, V](), cs)
				if err != nil {
					return nil, err
				}
				t.p = p
				return t, nil
			}
		}
		t.m = make([]map[entryKey[K, N]]cell[V], s.groups.Len())
		return t, nil
	})
}

// Name implements Table.
func (t *ValueTable[K, N, V]) Name() string { return t.name }

// Len implements Table. With the pebble backend it counts by scanning.
func (t *ValueTable[K, N, V]) Len() int {
	if t.p != nil {
		return t.p.len(t)
	}
	n := 0
	for _, m := range t.m {
		n += len(m)
	}
	return n
}

// group returns the current key's key-group map; write says the caller
// may change the map or a value in it.
func (t *ValueTable[K, N, V]) group(write bool) (map[entryKey[K, N]]cell[V], error) {
	if !t.s.hasKey {
		return nil, ErrNoKey
	}
	i := t.s.kg - t.s.groups.Start
	if t.shared != nil && t.shared[i] && (write || t.valuesHoldReferences()) {
		t.unshare(i)
	}
	m := t.m[i]
	if m == nil {
		m = map[entryKey[K, N]]cell[V]{}
		t.m[i] = m
	}
	return m, nil
}

// Get returns the value of the current key in namespace ns.
func (t *ValueTable[K, N, V]) Get(ns N) (v V, ok bool, err error) {
	if t.p != nil {
		return t.p.get(t, ns)
	}
	m, err := t.group(t.ttl.Millis > 0)
	if err != nil {
		return v, false, err
	}
	ek := entryKey[K, N]{t.s.key, ns}
	c, ok := m[ek]
	if !ok {
		return v, false, nil
	}
	if t.ttl.Millis > 0 {
		now := t.s.clock.NowMillis()
		if now-c.at >= t.ttl.Millis {
			if !t.ttl.ReturnExpiredIfNotCleanedUp {
				delete(m, ek)
				return v, false, nil
			}
		} else if t.ttl.UpdateOnRead {
			c.at = now
			m[ek] = c
		}
	}
	return c.v, true, nil
}

// Put sets the value of the current key in namespace ns.
func (t *ValueTable[K, N, V]) Put(ns N, v V) error {
	if t.p != nil {
		return t.p.put(t, ns, v)
	}
	m, err := t.group(true)
	if err != nil {
		return err
	}
	c := cell[V]{v: v}
	if t.ttl.Millis > 0 {
		c.at = t.s.clock.NowMillis()
	}
	m[entryKey[K, N]{t.s.key, ns}] = c
	return nil
}

// Delete removes the value of the current key in namespace ns.
func (t *ValueTable[K, N, V]) Delete(ns N) error {
	if t.p != nil {
		return t.p.delete(t, ns)
	}
	m, err := t.group(true)
	if err != nil {
		return err
	}
	delete(m, entryKey[K, N]{t.s.key, ns})
	return nil
}

// Keys calls fn for every key with a value in namespace ns (any order).
func (t *ValueTable[K, N, V]) Keys(ns N, fn func(K) error) error {
	if t.p != nil {
		return t.p.keys(t, ns, fn)
	}
	for _, m := range t.m {
		for ek := range m {
			if ek.ns == ns {
				if err := fn(ek.key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Entries calls fn for every entry (for snapshots and BATCH-mode flushes),
// expired or not; the pebble backend calls it in key order.
func (t *ValueTable[K, N, V]) Entries(fn func(k K, ns N, v V) error) error {
	if t.p != nil {
		return t.p.entries(t, fn)
	}
	for _, m := range t.m {
		for ek, c := range m {
			if err := fn(ek.key, ek.ns, c.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// onPebble reports whether the table's entries are in the pebble backend.
func (t *ValueTable[K, N, V]) onPebble() bool { return t.p != nil }

// typeName is the table's types, as recorded in snapshot manifests.
func (t *ValueTable[K, N, V]) typeName() string { return typeName[K, N, V]() }

// pebbleID is the table's ID in the pebble store (ok false on the heap).
func (t *ValueTable[K, N, V]) pebbleID() (uint32, bool) {
	if t.p == nil {
		return 0, false
	}
	return t.p.id, true
}
