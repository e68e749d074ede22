package fs

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Local is the local filesystem. Paths are operating-system paths.
type Local struct{}

var _ FileSystem = Local{}

// Create implements FileSystem.
func (Local) Create(path string) (File, error) { return create(path, 0o644) }

// CreatePrivate implements FileSystem.
func (Local) CreatePrivate(path string) (File, error) { return create(path, PrivateFileMode) }

func create(path string, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
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

// Open implements FileSystem.
func (Local) Open(path string) (io.ReadCloser, error) { return os.Open(path) }

// Rename implements FileSystem. Unlike os.Rename it does not replace an
// existing dst (the check and the rename are two steps: two processes
// renaming onto the same dst at once are not detected). After the rename
// it syncs dst's directory, so that the new name survives a crash.
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
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// syncDir makes the directory's entries durable. Filesystems that cannot
// sync a directory (EINVAL) are left as they are.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Stat implements FileSystem.
func (Local) Stat(path string) (iofs.FileInfo, error) { return os.Stat(path) }

// ReadDir implements FileSystem. Entries removed while it runs are left out.
func (Local) ReadDir(path string) ([]iofs.FileInfo, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	infos := make([]iofs.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		infos = append(infos, fi)
	}
	return infos, nil
}

// Remove implements FileSystem.
func (Local) Remove(path string) error { return os.Remove(path) }

// RemoveAll implements FileSystem.
func (Local) RemoveAll(path string) error { return os.RemoveAll(path) }

// MkdirAll implements FileSystem.
func (Local) MkdirAll(path string) error { return os.MkdirAll(path, 0o755) }

// MkdirAllPrivate implements FileSystem. The umask cannot widen 0700, and
// the directory's mode is set after it is made, so an existing one is
// narrowed too.
func (Local) MkdirAllPrivate(path string) error {
	if err := os.MkdirAll(path, PrivateDirMode); err != nil {
		return err
	}
	return os.Chmod(path, PrivateDirMode)
}
