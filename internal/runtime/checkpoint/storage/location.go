package storage

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"slices"
	"sync"

	"github.com/sluice/sluice/fs"
)

// Location is where one checkpoint or savepoint is written: its files, then
// its metadata. Create files with CreateFile (exclusive to this snapshot),
// CreateSharedFile (incremental state that later checkpoints may reuse) or
// CreateTaskOwnedFile; keep the handles they return in the payload; finish
// with WriteMetadata. A Location is safe for concurrent use.
type Location struct {
	fs           fs.FileSystem
	kind         Kind
	id           int64
	dir          string // holds the exclusive files and _metadata
	sharedDir    string // == dir for savepoints
	taskOwnedDir string // == dir for savepoints
	storage      *Storage

	// Lock order: l.mu before storage.mu.
	mu struct {
		sync.Mutex
		done bool
	}
}

// Kind says whether this is a checkpoint or a savepoint.
func (l *Location) Kind() Kind { return l.kind }

// ID is the checkpoint ID.
func (l *Location) ID() int64 { return l.id }

// Dir is the directory holding the exclusive files and the metadata.
func (l *Location) Dir() string { return l.dir }

// FileSystem is the filesystem Dir is on.
func (l *Location) FileSystem() fs.FileSystem { return l.fs }

// MetadataPath is where WriteMetadata puts the metadata.
func (l *Location) MetadataPath() string { return path.Join(l.dir, MetadataFileName) }

// CreateFile creates name among the snapshot's exclusive files (chk-<n>/ or
// the savepoint directory) and returns it with its handle. name is a
// single path element that the caller makes unique (an existing file is an
// error matching fs.ErrExist); names starting with _metadata are reserved.
func (l *Location) CreateFile(name string) (fs.File, string, error) {
	return l.create(l.dir, name, name)
}

// CreateSharedFile creates name in the job's shared directory, for files
// later incremental checkpoints may reference again; the handle is the
// same from every checkpoint of the job ("../shared/<name>"). List the
// handles of all shared files a checkpoint uses in WriteMetadata. For a
// savepoint, which is self-contained, it is the same as CreateFile.
func (l *Location) CreateSharedFile(name string) (fs.File, string, error) {
	if l.kind == KindSavepoint {
		return l.CreateFile(name)
	}
	return l.create(l.sharedDir, name, "../"+SharedDirName+"/"+name)
}

// SharedHandle returns the handle under which this checkpoint references
// the file at p, a path on its file system, if p is in the job's shared
// directory: the file a CreateSharedFile of an earlier checkpoint of the
// job created, which this one may use without uploading it again. A
// savepoint shares nothing: it has no shared directory.
func (l *Location) SharedHandle(p string) (string, bool) {
	if l.kind == KindSavepoint || path.Dir(p) != l.sharedDir {
		return "", false
	}
	return "../" + SharedDirName + "/" + path.Base(p), true
}

// CreateTaskOwnedFile creates name in the job's task-owned directory,
// whose files the TaskManagers manage: retention never deletes them. For a
// savepoint it is the same as CreateFile.
func (l *Location) CreateTaskOwnedFile(name string) (fs.File, string, error) {
	if l.kind == KindSavepoint {
		return l.CreateFile(name)
	}
	return l.create(l.taskOwnedDir, name, "../"+TaskOwnedDirName+"/"+name)
}

func (l *Location) create(dir, name, handle string) (fs.File, string, error) {
	if err := checkName("file name", name); err != nil {
		return nil, "", err
	}
	l.mu.Lock()
	done := l.mu.done
	l.mu.Unlock()
	if done {
		return nil, "", fmt.Errorf("%w: %s %d: no files may be added after its metadata", ErrAlreadyCompleted, l.kind, l.id)
	}
	f, err := l.fs.Create(path.Join(dir, name))
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint storage: %s %d: %w", l.kind, l.id, err)
	}
	return f, handle, nil
}

// WriteMetadata completes the checkpoint or savepoint: it writes payload
// (the caller's description of the snapshot) with the handles of the
// shared files the checkpoint uses (none for a savepoint) to a temporary
// file, makes it durable, and renames it to _metadata. Until the rename the
// snapshot is incomplete; the rename never replaces an existing _metadata
// (that fails with ErrAlreadyCompleted). On failure the temporary file is
// removed if possible; a crash may leave it behind, which is harmless (it
// is never taken for metadata, and goes with its directory). It returns
// the metadata path.
func (l *Location) WriteMetadata(payload []byte, shared []string) (string, error) {
	if l.kind == KindSavepoint && len(shared) > 0 {
		return "", fmt.Errorf("%w: savepoint %s must be self-contained but lists %d shared files", ErrBadName, l.dir, len(shared))
	}
	shared = slices.Clone(shared)
	slices.Sort(shared)
	shared = slices.Compact(shared)
	for _, h := range shared {
		if _, err := ResolveHandle(l.MetadataPath(), h); err != nil {
			return "", err
		}
	}
	data, err := (&Metadata{Kind: l.kind, CheckpointID: l.id, Shared: shared, Payload: payload}).MarshalBinary()
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.done {
		return "", fmt.Errorf("%w: %s %d", ErrAlreadyCompleted, l.kind, l.id)
	}
	final := l.MetadataPath()
	tmp := path.Join(l.dir, metadataTempPrefix+randomHex(8))
	if err := writeFile(l.fs, tmp, data); err != nil {
		return "", fmt.Errorf("checkpoint storage: writing the metadata of %s %d: %w", l.kind, l.id, err)
	}
	if err := l.fs.Rename(tmp, final); err != nil {
		l.fs.Remove(tmp) // best effort: the error below is what matters
		if errors.Is(err, iofs.ErrExist) {
			return "", fmt.Errorf("%w: %s %d: %s exists", ErrAlreadyCompleted, l.kind, l.id, final)
		}
		return "", fmt.Errorf("checkpoint storage: publishing the metadata of %s %d: %w", l.kind, l.id, err)
	}
	l.mu.done = true
	if l.storage != nil {
		l.storage.completed(l.id, shared)
	}
	return final, nil
}

// writeFile creates p with data, durably; on failure it removes what it
// created (best effort).
func writeFile(fsys fs.FileSystem, p string, data []byte) error {
	f, err := fsys.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		fsys.Remove(p)
		return err
	}
	if err := f.Close(); err != nil {
		fsys.Remove(p)
		return err
	}
	return nil
}

// OpenLocation returns, without any I/O, the location of the checkpoint or
// savepoint id whose directory (chk-<id>/ or the savepoint's) another
// process created, so that a process running tasks writes their files into
// it. Only the files are written through it, never the metadata.
func OpenLocation(fsys fs.FileSystem, kind Kind, id int64, dir string) (*Location, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if !path.IsAbs(dir) {
		return nil, fmt.Errorf("%w: the %s directory %q is not an absolute path", ErrBadName, kind, dir)
	}
	l := &Location{fs: fsys, kind: kind, id: id, dir: dir, sharedDir: dir, taskOwnedDir: dir}
	switch kind {
	case KindCheckpoint:
		jobDir := path.Dir(dir)
		l.sharedDir, l.taskOwnedDir = path.Join(jobDir, SharedDirName), path.Join(jobDir, TaskOwnedDirName)
	case KindSavepoint:
	default:
		return nil, fmt.Errorf("%w: unknown snapshot kind %d", ErrBadName, kind)
	}
	return l, nil
}
