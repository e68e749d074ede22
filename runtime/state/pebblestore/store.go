// Package pebblestore is the on-disk store of the pebble state backend: one
// Pebble database per operator subtask, in a working directory of its own
// that Close removes. It deals in bytes only; internal/runtime/state lays typed
// tables over it.
//
// Every key starts with its key group, two bytes big-endian, so the entries
// of a key group (and of a range of key groups) are one contiguous key
// range: rescaling cuts the store along key-group boundaries.
//
// A checkpoint is a set of immutable files (Checkpoint): the memtable is
// flushed and Pebble's checkpoint hard-links the live SSTs into a directory
// of their own. An SST keeps its name from checkpoint to checkpoint, so a
// checkpoint after a small change shares all but a few files with the one
// before it. The few small files that change every time (MANIFEST, OPTIONS,
// markers) are returned inline, to be stored with the checkpoint's
// metadata rather than as files of their own. Restore rebuilds a store from the files of one or more
// checkpoints, keeping only the key groups it owns.
package pebblestore

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble"

	"github.com/sluice/sluice/internal/runtime/keygroup"
)

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("pebblestore: store is closed")

// ErrBadCheckpoint is wrapped by errors about files handed to Restore.
var ErrBadCheckpoint = errors.New("pebblestore: bad checkpoint files")

// Options configure a store. The zero value is usable.
type Options struct {
	// Dir is the base directory; every store creates a working directory of
	// its own in it. Default: os.TempDir()/sluice-pebble.
	Dir string
	// CacheSize is the block cache of the store in bytes. Default: 8 MiB.
	CacheSize int64
	// MemTableSize is the size of a memtable in bytes. Default: 16 MiB.
	MemTableSize uint64
	// Log receives Pebble's informational messages at debug level.
	// Default: discarded.
	Log *slog.Logger
}

// DefaultDir is the base directory used when Options.Dir is empty.
func DefaultDir() string { return filepath.Join(os.TempDir(), "sluice-pebble") }

// WriteOptions of every write: checkpoints, not the WAL or fsync, make the
// state durable.
var writeOpts = pebble.NoSync

// Store is the Pebble database of one operator subtask. It is used from one
// goroutine (the task's), except Release, which the checkpoint uploader may
// call from another.
type Store struct {
	// snapMu guards the open-snapshot count, closed and closePending.
	snapMu       sync.Mutex
	snaps        int
	closePending bool

	opts  Options
	root  string // working directory: db/ and the checkpoint directories
	uid   string // unique per opened store: prefixes the names of its files
	db    *pebble.DB
	cache *pebble.Cache
	// names are the names of SSTs restored from a checkpoint (by local base
	// name): they are the same files under the names they were uploaded as.
	names  map[string]string
	closed bool
}

// Open creates a store in a new working directory under o.Dir.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 8 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 16 << 20
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebblestore: creating the state directory: %w", err)
	}
	root, err := os.MkdirTemp(o.Dir, "keyed-")
	if err != nil {
		return nil, fmt.Errorf("pebblestore: creating a working directory in %s: %w", o.Dir, err)
	}
	s := &Store{opts: o, root: root, uid: newUID(), cache: pebble.NewCache(o.CacheSize), names: map[string]string{}}
	if s.db, err = pebble.Open(s.dbDir(), s.pebbleOptions(false)); err != nil {
		s.cache.Unref()
		os.RemoveAll(root)
		return nil, fmt.Errorf("pebblestore: opening %s: %w", s.dbDir(), err)
	}
	return s, nil
}

func newUID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("pebblestore: crypto/rand: %v", err)) // never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

func (s *Store) dbDir() string { return filepath.Join(s.root, "db") }

func (s *Store) pebbleOptions(readOnly bool) *pebble.Options {
	o := &pebble.Options{
		Cache:        s.cache,
		MemTableSize: s.opts.MemTableSize,
		DisableWAL:   true,
		// The MANIFEST is copied into every checkpoint: keep it small (it is
		// rolled over when it exceeds this and twice its starting size).
		MaxManifestFileSize: 256 << 10,
		FormatMajorVersion:  pebble.FormatNewest,
		Logger:              logger{s.opts.Log},
		ReadOnly:            readOnly,
		// No L0 flush split intervals (0 would mean the default): a flush
		// after a few changes all over the key space is one small SST, not
		// dozens, so a checkpoint uploads one file.
		FlushSplitBytes: 1 << 40,
	}
	return o.EnsureDefaults()
}

// logger routes Pebble's messages to slog.
type logger struct{ l *slog.Logger }

func (l logger) Infof(format string, args ...any) {
	if l.l != nil {
		l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l logger) Fatalf(format string, args ...any) {
	// Pebble calls Fatalf for broken invariants of its own and expects no
	// return.
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// UID identifies the store among all stores of all jobs.
func (s *Store) UID() string { return s.uid }

// Dir is the store's working directory.
func (s *Store) Dir() string { return s.root }

// DB is the Pebble database (nil after Close).
func (s *Store) DB() *pebble.DB { return s.db }

// NewSnapshot returns a consistent view of the database for an
// asynchronous snapshot, and its release (idempotent, from any goroutine).
// A Close while snapshots are open closes the database at the last release.
func (s *Store) NewSnapshot() (*pebble.Snapshot, func(), error) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if s.db == nil || s.closed {
		return nil, nil, ErrClosed
	}
	snap := s.db.NewSnapshot()
	s.snaps++
	var once sync.Once
	return snap, func() {
		once.Do(func() {
			snap.Close()
			s.snapMu.Lock()
			s.snaps--
			last := s.snaps == 0 && s.closePending
			s.snapMu.Unlock()
			if last {
				s.finishClose()
			}
		})
	}, nil
}

// Close closes the database and removes the working directory, with every
// checkpoint directory not released yet (after the last open snapshot is
// released).
func (s *Store) Close() error {
	s.snapMu.Lock()
	if s.closed {
		s.snapMu.Unlock()
		return nil
	}
	s.closed = true
	if s.snaps > 0 {
		s.closePending = true
		s.snapMu.Unlock()
		return nil
	}
	s.snapMu.Unlock()
	return s.finishClose()
}

func (s *Store) finishClose() error {
	var err error
	if s.db != nil { // nil after a failed Restore
		err = s.db.Close()
		s.db = nil
	}
	s.cache.Unref()
	if rerr := os.RemoveAll(s.root); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("pebblestore: closing %s: %w", s.root, err)
	}
	return nil
}

// Get returns a copy of the value of key (appended to buf); ok is false if
// there is none.
func (s *Store) Get(key, buf []byte) (val []byte, ok bool, err error) {
	if s.db == nil {
		return nil, false, ErrClosed
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return buf, false, nil
	}
	if err != nil {
		return buf, false, err
	}
	buf = append(buf, v...)
	return buf, true, closer.Close()
}

// Set writes key = value.
func (s *Store) Set(key, value []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	return s.db.Set(key, value, writeOpts)
}

// Delete removes key.
func (s *Store) Delete(key []byte) error {
	if s.db == nil {
		return ErrClosed
	}
	return s.db.Delete(key, writeOpts)
}

// NewIter returns an iterator over [lower, upper).
func (s *Store) NewIter(lower, upper []byte) (*pebble.Iterator, error) {
	if s.db == nil {
		return nil, ErrClosed
	}
	return s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
}

// NewBatch returns a batch of writes; commit it with Commit.
func (s *Store) NewBatch() (*pebble.Batch, error) {
	if s.db == nil {
		return nil, ErrClosed
	}
	return s.db.NewBatch(), nil
}

// Commit applies a batch (and does not close it).
func (s *Store) Commit(b *pebble.Batch) error { return b.Commit(writeOpts) }

// AppendKeyGroup appends the two-byte prefix of key group kg to b.
func AppendKeyGroup(b []byte, kg int) []byte { return binary.BigEndian.AppendUint16(b, uint16(kg)) }

// KeyGroupOf is the key group of a key.
func KeyGroupOf(key []byte) int { return int(binary.BigEndian.Uint16(key)) }

// Bounds are the keys [lower, upper) of the key groups of r.
func Bounds(r keygroup.Range) (lower, upper []byte) {
	return AppendKeyGroup(nil, r.Start), AppendKeyGroup(nil, r.End+1)
}

// File is one file of a checkpoint: an SST, or a small file inline.
type File struct {
	// Name of an SST is unique across the stores of all subtasks and
	// checkpoints, and the same in every checkpoint that has the SST.
	Name string
	// Local is the file's base name in the database directory.
	Local string
	// Path of an SST is where it is (Checkpoint: in the checkpoint
	// directory; Restore: a downloaded copy).
	Path string
	Size int64
	// Inline files (not SSTs) come with their contents.
	Inline bool
	Data   []byte
}

// IsSST reports whether the file is an SST (shared by checkpoints).
func (f File) IsSST() bool { return strings.HasSuffix(f.Local, ".sst") }

func (s *Store) checkpointDir(id int64) string {
	return filepath.Join(s.root, fmt.Sprintf("chk-%d", id))
}

// Checkpoint flushes the memtables and links the live files into a
// checkpoint directory of their own: the files stay there, immutable, until
// Release(id) or Close. It runs on the task goroutine; the files may be
// read from any goroutine.
func (s *Store) Checkpoint(id int64) ([]File, error) {
	if s.db == nil {
		return nil, ErrClosed
	}
	if err := s.db.Flush(); err != nil {
		return nil, fmt.Errorf("pebblestore: flushing for checkpoint %d: %w", id, err)
	}
	dir := s.checkpointDir(id)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pebblestore: checkpoint %d: %w", id, err)
	}
	if err := s.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebblestore: checkpoint %d: %w", id, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: checkpoint %d: %w", id, err)
	}
	files := make([]File, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("pebblestore: checkpoint %d: %w", id, err)
		}
		f := File{Local: e.Name(), Path: filepath.Join(dir, e.Name()), Size: info.Size()}
		switch {
		case !f.IsSST():
			if f.Data, err = os.ReadFile(f.Path); err != nil {
				return nil, fmt.Errorf("pebblestore: checkpoint %d: %w", id, err)
			}
			f.Inline, f.Path, f.Size = true, "", int64(len(f.Data))
		case s.names[f.Local] != "":
			f.Name = s.names[f.Local]
		default:
			f.Name = s.uid + "-" + f.Local
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Local < files[j].Local })
	return files, nil
}

// Release removes the local files of checkpoint id (once uploaded). It may
// be called from any goroutine, also after Close.
func (s *Store) Release(id int64) error {
	if err := os.RemoveAll(s.checkpointDir(id)); err != nil {
		return fmt.Errorf("pebblestore: releasing checkpoint %d: %w", id, err)
	}
	return nil
}

// Source is the checkpoint of one store, as Restore reads it.
type Source struct {
	// Groups are the key groups the store owned.
	Groups keygroup.Range
	// Files with Path set to a local copy.
	Files []File
}

func overlap(a, b keygroup.Range) keygroup.Range {
	return keygroup.Range{Start: max(a.Start, b.Start), End: min(a.End, b.End)}
}

// Restore replaces the store's (empty) database with the state of sources
// in the key groups of groups. The source that overlaps groups most becomes
// the database itself (its SSTs keep their names, so the next checkpoint
// does not upload them again) with the key groups outside groups deleted;
// the entries of the others are copied in.
func (s *Store) Restore(groups keygroup.Range, sources []Source) error {
	if s.db == nil {
		return ErrClosed
	}
	base, best := -1, 0
	for i, src := range sources {
		if err := checkFiles(src.Files); err != nil {
			return err
		}
		if n := overlap(src.Groups, groups).Len(); n > best {
			base, best = i, n
		}
	}
	if base < 0 {
		return nil // nothing of ours
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("pebblestore: restore: %w", err)
	}
	s.db = nil
	if err := os.RemoveAll(s.dbDir()); err != nil {
		return fmt.Errorf("pebblestore: restore: %w", err)
	}
	if err := placeFiles(s.dbDir(), sources[base].Files); err != nil {
		return err
	}
	opts := s.pebbleOptions(false)
	opts.ErrorIfNotExists = true
	db, err := pebble.Open(s.dbDir(), opts)
	if err != nil {
		return fmt.Errorf("%w: opening the checkpoint of key groups %v: %v", ErrBadCheckpoint, sources[base].Groups, err)
	}
	s.db = db
	for _, f := range sources[base].Files {
		if f.IsSST() {
			s.names[f.Local] = f.Name
		}
	}
	// Drop the key groups of other subtasks; compactions reclaim the space.
	lower, upper := Bounds(groups)
	if groups.Start > 0 {
		if err := s.db.DeleteRange(AppendKeyGroup(nil, 0), lower, writeOpts); err != nil {
			return fmt.Errorf("pebblestore: restore: %w", err)
		}
	}
	if groups.End+1 < keygroup.UpperBound {
		if err := s.db.DeleteRange(upper, AppendKeyGroup(nil, keygroup.UpperBound), writeOpts); err != nil {
			return fmt.Errorf("pebblestore: restore: %w", err)
		}
	}
	for i, src := range sources {
		r := overlap(src.Groups, groups)
		if i == base || r.Len() == 0 {
			continue
		}
		b := s.db.NewBatch()
		err := Scan(s.root, src, r, func(k, v []byte) error {
			if err := b.Set(k, v, nil); err != nil {
				return err
			}
			if b.Len() < 4<<20 {
				return nil
			}
			err := b.Commit(writeOpts)
			b.Close()
			b = s.db.NewBatch()
			return err
		})
		if err == nil {
			err = b.Commit(writeOpts)
		}
		b.Close()
		if err != nil {
			return fmt.Errorf("pebblestore: restoring key groups %v: %w", r, err)
		}
	}
	return nil
}

// Scan calls fn for every entry of src in the key groups r, in key order,
// reading src in a temporary directory under tmp (default os.TempDir()).
// k and v are valid during the call only.
func Scan(tmp string, src Source, r keygroup.Range, fn func(k, v []byte) error) (err error) {
	if err := checkFiles(src.Files); err != nil {
		return err
	}
	if tmp != "" {
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return fmt.Errorf("pebblestore: %w", err)
		}
	}
	dir, err := os.MkdirTemp(tmp, "scan-")
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := placeFiles(dir, src.Files); err != nil {
		return err
	}
	tmpStore := &Store{opts: Options{CacheSize: 1 << 20}, cache: pebble.NewCache(1 << 20)}
	defer tmpStore.cache.Unref()
	opts := tmpStore.pebbleOptions(true)
	opts.ErrorIfNotExists = true
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("%w: opening the checkpoint of key groups %v: %v", ErrBadCheckpoint, src.Groups, err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	lower, upper := Bounds(r)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// checkFiles rejects file lists that would write outside a directory.
func checkFiles(files []File) error {
	seen := map[string]bool{}
	for _, f := range files {
		if f.Local == "" || f.Local != filepath.Base(f.Local) || f.Local == "." || f.Local == ".." || strings.ContainsAny(f.Local, `/\`) {
			return fmt.Errorf("%w: file %q has a bad local name %q", ErrBadCheckpoint, f.Name, f.Local)
		}
		if seen[f.Local] {
			return fmt.Errorf("%w: local name %q appears twice", ErrBadCheckpoint, f.Local)
		}
		seen[f.Local] = true
		if f.Path == "" && !f.Inline {
			return fmt.Errorf("%w: file %q has no local copy", ErrBadCheckpoint, f.Name)
		}
	}
	return nil
}

// placeFiles puts files into dir under their local names: SSTs hard-linked
// (they are immutable), the rest written or copied (Pebble appends to its
// MANIFEST).
func placeFiles(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	for _, f := range files {
		dst := filepath.Join(dir, f.Local)
		if f.Inline {
			if err := os.WriteFile(dst, f.Data, 0o644); err != nil {
				return fmt.Errorf("pebblestore: %w", err)
			}
			continue
		}
		if f.IsSST() {
			if err := os.Link(f.Path, dst); err == nil {
				continue
			}
		}
		if err := copyFile(f.Path, dst); err != nil {
			return fmt.Errorf("%w: file %q: %v", ErrBadCheckpoint, f.Name, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
