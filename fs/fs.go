// Package fs is Sluice's filesystem interface: the few operations the
// engine and its connectors need to write files durably and publish them
// atomically (the file sink's part files now; checkpoint and savepoint
// storage later), and its implementation for the local filesystem. The
// HDFS implementation belongs to package hdfs.
//
// fs is a leaf: it imports only the standard library, so the engine
// (runtime/...), the user API (stream) and the connectors may all depend
// on it. A test enforces this.
//
// Paths are slash-separated. Errors name the path they concern (as
// *fs.PathError and *os.LinkError do), and implementations translate their
// failures so that errors.Is(err, fs.ErrNotExist), fs.ErrExist and
// fs.ErrPermission (from io/fs) work as for the local filesystem.
package fs

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
)

// FileSystem is a filesystem Sluice writes to.
type FileSystem interface {
	// Create creates the file at path for writing. It fails with an error
	// matching fs.ErrExist if the file exists; the parent directory must
	// exist.
	Create(path string) (File, error)
	// Rename moves the file src to dst, atomically where the filesystem
	// allows it (local and HDFS do). It fails with an error matching
	// fs.ErrNotExist if src does not exist, else with fs.ErrExist if dst
	// exists.
	Rename(src, dst string) error
	// Stat describes the file or directory at path.
	Stat(path string) (iofs.FileInfo, error)
	// Remove deletes the file or empty directory at path.
	Remove(path string) error
	// MkdirAll creates the directory path and any missing parents; it is
	// not an error if the directory exists.
	MkdirAll(path string) error
}

// File is a file open for writing.
type File interface {
	io.Writer
	// Close finishes the file: when it returns nil, what was written is
	// durable (synced to disk, or completed on HDFS).
	Close() error
}

// Local is the local filesystem.
type Local struct{}

var _ FileSystem = Local{}

// Create implements FileSystem.
func (Local) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return localFile{f}, nil
}

type localFile struct{ f *os.File }

func (l localFile) Write(p []byte) (int, error) { return l.f.Write(p) }

// Close syncs the file to disk, then closes it.
func (l localFile) Close() error {
	if err := l.f.Sync(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}

// Rename implements FileSystem. Unlike os.Rename it does not replace an
// existing dst (the check and the rename are two steps: two processes
// renaming onto the same dst at once are not detected).
func (Local) Rename(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		var pe *iofs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: err}
	}
	if _, err := os.Lstat(dst); err == nil {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: iofs.ErrExist}
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("rename %s %s: %w", src, dst, err)
	}
	return os.Rename(src, dst)
}

// Stat implements FileSystem.
func (Local) Stat(path string) (iofs.FileInfo, error) { return os.Stat(path) }

// Remove implements FileSystem.
func (Local) Remove(path string) error { return os.Remove(path) }

// MkdirAll implements FileSystem.
func (Local) MkdirAll(path string) error { return os.MkdirAll(path, 0o755) }
