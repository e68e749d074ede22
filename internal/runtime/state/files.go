package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state/pebblestore"
)

// Incremental snapshots (pebble backend): a checkpoint is a set of
// immutable files, most of them shared with the checkpoint before, and a
// small manifest that lists them with the state kept in memory (timers).

// ErrNotIncremental is returned by SnapshotFiles of a backend without
// incremental snapshots (hashmap).
var ErrNotIncremental = errors.New("state: incremental snapshots need the pebble state backend")

// LocalFile is a file of an incremental snapshot on local disk.
type LocalFile struct {
	// Name is unique across the subtasks and checkpoints of all jobs, and
	// stable: a file with the Name of one already uploaded is that file.
	Name string
	// Path of the file, valid until ReleaseSnapshotFiles or Close.
	Path string
	Size int64
}

// manifestMagic starts every manifest.
var manifestMagic = []byte("SLUICE-PEBBLE-1\n")

// manifest describes one subtask's incremental snapshot.
type manifest struct {
	// UID is the store's unique ID (for diagnostics).
	UID            string
	MaxParallelism int
	// Start and End are the key groups of the subtask.
	Start, End int
	// Files are the SSTs, uploaded as files.
	Files []manifestFile
	// Inline are the database's other files (MANIFEST, OPTIONS, markers):
	// small, changing with every checkpoint.
	Inline map[string][]byte
	Tables []manifestTable
	// Heap holds the state kept in memory (timers, tables without an
	// encoding) per key group, in the canonical snapshot encoding.
	Heap map[int][]byte
}

type manifestFile struct {
	Name  string
	Local string
	Size  int64
}

type manifestTable struct {
	Name string
	ID   uint32
	// Type is "K/N/V" of the table's Go types.
	Type string
}

var manifestCodec = codec.MustFor[manifest]()

func encodeManifest(m manifest) []byte {
	return manifestCodec.Append(append([]byte(nil), manifestMagic...), m)
}

func decodeManifest(b []byte) (manifest, error) {
	if !bytes.HasPrefix(b, manifestMagic) {
		return manifest{}, fmt.Errorf("%w: not a pebble snapshot manifest", ErrCorruptSnapshot)
	}
	m, rest, err := manifestCodec.Decode(b[len(manifestMagic):])
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return manifest{}, fmt.Errorf("%w: manifest: %v", ErrCorruptSnapshot, err)
	}
	return m, nil
}

// IncrementalSnapshots reports whether SnapshotFiles is available.
func (s *Keyed[K]) IncrementalSnapshots() bool { return s.store != nil }

// SnapshotFiles takes an incremental snapshot: the database's files (the
// SSTs keep their names from one checkpoint to the next, so only new ones
// need uploading) and a manifest to restore from. The files stay on local
// disk until ReleaseSnapshotFiles(checkpointID) or Close. It runs on the
// task goroutine, at the barrier.
func (s *Keyed[K]) SnapshotFiles(checkpointID int64) (files []LocalFile, manifestBytes []byte, err error) {
	if s.store == nil {
		return nil, nil, ErrNotIncremental
	}
	m := manifest{UID: s.store.st.UID(), MaxParallelism: s.maxPar, Start: s.groups.Start, End: s.groups.End}
	// State in memory: tables that are not in the database, and restored
	// state of such tables not registered yet.
	heap, err := s.snapshotSections(func(t Table) bool {
		vt, ok := t.(interface{ onPebble() bool })
		return !ok || !vt.onPebble()
	}, false)
	if err != nil {
		return nil, nil, err
	}
	if len(heap) > 0 {
		m.Heap = heap
	}
	for _, t := range s.ordered {
		if vt, ok := t.(interface {
			onPebble() bool
			typeName() string
		}); ok && vt.onPebble() {
			m.Tables = append(m.Tables, manifestTable{Name: t.Name(), ID: tableID(t.Name()), Type: vt.typeName()})
		}
	}
	for name, mt := range s.store.restored {
		if _, ok := s.tables[name]; !ok {
			m.Tables = append(m.Tables, mt)
		}
	}
	sort.Slice(m.Tables, func(i, j int) bool { return m.Tables[i].Name < m.Tables[j].Name })
	pf, err := s.store.st.Checkpoint(checkpointID)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range pf {
		if f.Inline {
			if m.Inline == nil {
				m.Inline = map[string][]byte{}
			}
			m.Inline[f.Local] = f.Data
			continue
		}
		files = append(files, LocalFile{Name: f.Name, Path: f.Path, Size: f.Size})
		m.Files = append(m.Files, manifestFile{Name: f.Name, Local: f.Local, Size: f.Size})
	}
	return files, encodeManifest(m), nil
}

// ReleaseSnapshotFiles removes the local files of the snapshot of
// checkpointID once they are uploaded. Unlike the other methods it may be
// called from any goroutine.
func (s *Keyed[K]) ReleaseSnapshotFiles(checkpointID int64) error {
	if s.store == nil {
		return nil
	}
	return s.store.st.Release(checkpointID)
}

// RestoreFiles restores the incremental snapshots of one or more subtasks
// (several when rescaling merges them), keeping the key groups this
// subtask owns. files maps the names of the manifests' files to local
// copies. It must run before any state is written. The hashmap backend
// restores from them too, reading the files.
func (s *Keyed[K]) RestoreFiles(files map[string]string, manifests [][]byte) error {
	var sources []pebblestore.Source
	var all []manifest
	for i, b := range manifests {
		m, err := decodeManifest(b)
		if err != nil {
			return fmt.Errorf("state: manifest %d: %w", i, err)
		}
		if m.MaxParallelism != s.maxPar {
			return fmt.Errorf("state: the snapshot of key groups [%d..%d] has max parallelism %d, the operator %d: keyed state only moves within the same max parallelism",
				m.Start, m.End, m.MaxParallelism, s.maxPar)
		}
		src := pebblestore.Source{Groups: keygroup.Range{Start: m.Start, End: m.End}}
		for _, f := range m.Files {
			p, ok := files[f.Name]
			if !ok {
				return fmt.Errorf("state: restoring key groups [%d..%d]: no local copy of file %q", m.Start, m.End, f.Name)
			}
			src.Files = append(src.Files, pebblestore.File{Name: f.Name, Local: f.Local, Path: p, Size: f.Size})
		}
		for local, data := range m.Inline {
			src.Files = append(src.Files, pebblestore.File{Local: local, Inline: true, Data: data, Size: int64(len(data))})
		}
		for _, t := range m.Tables {
			if t.ID != tableID(t.Name) {
				return fmt.Errorf("%w: table %q has ID %d, expected %d", ErrCorruptSnapshot, t.Name, t.ID, tableID(t.Name))
			}
		}
		sources = append(sources, src)
		all = append(all, m)
	}
	if s.store != nil {
		if err := s.restoreTablesFromFiles(sources, all); err != nil {
			return err
		}
	} else if err := s.restoreHeapFromFiles(sources, all); err != nil {
		return err
	}
	heap := map[int][]byte{}
	for _, m := range all {
		for kg, b := range m.Heap {
			heap[kg] = append(heap[kg], b...)
		}
	}
	return s.RestoreKeyGroups(heap)
}

func (s *Keyed[K]) restoreTablesFromFiles(sources []pebblestore.Source, all []manifest) error {
	tables := map[string]manifestTable{}
	for _, m := range all {
		for _, t := range m.Tables {
			if prev, ok := tables[t.Name]; ok && !sameTypes(prev.Type, t.Type) {
				return fmt.Errorf("state: snapshots disagree on the type of %q: %s and %s", t.Name, prev.Type, t.Type)
			}
			tables[t.Name] = t
		}
	}
	for name, t := range tables {
		if reg, ok := s.tables[name]; ok {
			vt, ok := reg.(interface {
				onPebble() bool
				typeName() string
			})
			if !ok || !vt.onPebble() || !sameTypes(t.Type, vt.typeName()) {
				return fmt.Errorf("state: %q was checkpointed as state of %s, registered as %T", name, t.Type, reg)
			}
			continue
		}
		if _, err := s.store.claimID(name); err != nil {
			return err
		}
	}
	if err := s.store.st.Restore(s.groups, sources); err != nil {
		return err
	}
	for name, t := range tables {
		s.store.restored[name] = t
	}
	return nil
}

// restoreHeapFromFiles reads the database files into canonical sections
// and restores them as from a savepoint.
func (s *Keyed[K]) restoreHeapFromFiles(sources []pebblestore.Source, all []manifest) error {
	groups := map[int][]byte{}
	for i, src := range sources {
		names := map[uint32]string{}
		for _, t := range all[i].Tables {
			names[t.ID] = t.Name
		}
		r := keygroup.Range{Start: max(src.Groups.Start, s.groups.Start), End: min(src.Groups.End, s.groups.End)}
		if r.Len() == 0 {
			continue
		}
		// Entries of one (key group, table) are adjacent in key order.
		var (
			curKG   = -1
			curID   uint32
			entries []byte
			n       int
		)
		flush := func() {
			if n == 0 {
				return
			}
			name := names[curID]
			b := groups[curKG]
			b = binary.AppendUvarint(b, uint64(len(name)))
			b = append(b, name...)
			sec := binary.AppendUvarint(nil, uint64(n))
			b = binary.AppendUvarint(b, uint64(len(sec)+len(entries)))
			b = append(b, sec...)
			groups[curKG] = append(b, entries...)
			entries, n = entries[:0], 0
		}
		err := pebblestore.Scan("", src, r, func(key, val []byte) error {
			kg, id, tail, err := parseKey(key)
			if err != nil {
				return err
			}
			if _, ok := names[id]; !ok {
				return fmt.Errorf("%w: entry of unknown table ID %d", ErrCorruptSnapshot, id)
			}
			if kg != curKG || id != curID {
				flush()
				curKG, curID = kg, id
			}
			entries, err = appendCanonical(entries, tail, val)
			n++
			return err
		})
		if err != nil {
			return fmt.Errorf("state: restoring key groups %v: %w", r, err)
		}
		flush()
	}
	return s.RestoreKeyGroups(groups)
}
