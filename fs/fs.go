// Package fs is Sluice's filesystem interface: the few operations the
// engine and its connectors need to write files durably, publish them
// atomically and read them back (the file sink's part files, checkpoint and
// savepoint storage), its implementation for the local filesystem, and a
// [Resolver] that maps a URI such as file:///data/ckp or
// hdfs://namenode:8020/ckp to the filesystem that serves it. The HDFS
// implementation belongs to package hdfs, which registers itself with a
// Resolver handed to it.
//
// fs is a leaf: it imports only the standard library, so the engine
// (runtime/...), the user API (stream) and the connectors may all depend
// on it. A test enforces this.
//
// Paths are slash-separated. Errors name the path they concern (as
// *fs.PathError and *os.LinkError do), and implementations translate their
// failures so that errors.Is(err, fs.ErrNotExist), fs.ErrExist and
// fs.ErrPermission (from io/fs) work as for the local filesystem.
//
// Every implementation must pass the conformance suite in package
// fs/fstest.
package fs

import (
	"io"
	iofs "io/fs"
)

// FileSystem is a filesystem Sluice writes to and reads from. Implementations
// are safe for concurrent use.
type FileSystem interface {
	// Create creates the file at path for writing. It fails with an error
	// matching fs.ErrExist if the file exists; the parent directory must
	// exist.
	Create(path string) (File, error)
	// Open opens the file at path for reading. It fails with an error
	// matching fs.ErrNotExist if there is no such file.
	Open(path string) (io.ReadCloser, error)
	// Rename moves the file or directory src to dst, atomically where the
	// filesystem allows it (local and HDFS do). It fails with an error
	// matching fs.ErrNotExist if src does not exist, else with fs.ErrExist
	// if dst exists: it never replaces dst. The parent of dst must exist.
	// Local and HDFS check dst before renaming (neither offers a rename
	// that refuses an existing dst atomically), so two writers racing onto
	// the same dst are not told apart.
	Rename(src, dst string) error
	// Stat describes the file or directory at path.
	Stat(path string) (iofs.FileInfo, error)
	// ReadDir describes the entries of the directory at path, sorted by
	// name. It fails with an error matching fs.ErrNotExist if there is no
	// such directory.
	ReadDir(path string) ([]iofs.FileInfo, error)
	// Remove deletes the file or empty directory at path.
	Remove(path string) error
	// RemoveAll deletes path and everything below it. It is not an error if
	// path does not exist.
	RemoveAll(path string) error
	// MkdirAll creates the directory path and any missing parents; it is
	// not an error if the directory exists.
	MkdirAll(path string) error
	// MkdirAllPrivate is MkdirAll for a directory only its owner may list
	// or enter (what HA data and staged job binaries need): the
	// directories it creates get mode 0700, and path itself, if it
	// existed, is set to 0700. Parents that existed are left as they are.
	MkdirAllPrivate(path string) error
	// CreatePrivate is Create for a file only its owner may read or write:
	// it is created with mode 0600.
	CreatePrivate(path string) (File, error)
}

// Modes of what MkdirAllPrivate and CreatePrivate create.
const (
	PrivateDirMode  iofs.FileMode = 0o700
	PrivateFileMode iofs.FileMode = 0o600
)

// File is a file open for writing.
type File interface {
	io.Writer
	// Close finishes the file: when it returns nil, what was written is
	// durable (synced to disk, or completed on HDFS).
	Close() error
}
