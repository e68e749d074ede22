package storage

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/sluice/sluice/fs"
)

// savepointDirPrefix starts every savepoint directory's name.
const savepointDirPrefix = "savepoint-"

// NewSavepointWriter makes a new savepoint directory
// <savepointsDir>/savepoint-<first 6 characters of jobID>-<12 random hex
// digits>/ and returns its location; checkpointID is the ID of the
// checkpoint the savepoint is taken at. Everything the savepoint holds is
// inside that directory and referred to by relative handles, so it can be
// moved or copied elsewhere and still restored (Resolve).
func NewSavepointWriter(fsys fs.FileSystem, savepointsDir, jobID string, checkpointID int64) (*Location, error) {
	if !path.IsAbs(savepointsDir) {
		return nil, fmt.Errorf("%w: the savepoints directory %q is not an absolute path", ErrBadName, savepointsDir)
	}
	if err := checkName("job ID", jobID); err != nil {
		return nil, err
	}
	if err := checkID(checkpointID); err != nil {
		return nil, err
	}
	prefix := jobID[:min(6, len(jobID))]
	for range 3 { // a collision of 48 random bits is not expected even once
		dir := path.Join(savepointsDir, savepointDirPrefix+prefix+"-"+randomHex(6))
		_, err := fsys.Stat(dir)
		if err == nil {
			continue
		}
		if !errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("checkpoint storage: creating a savepoint: %w", err)
		}
		if err := fsys.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("checkpoint storage: creating a savepoint: %w", err)
		}
		return &Location{fs: fsys, kind: KindSavepoint, id: checkpointID, dir: dir, sharedDir: dir, taskOwnedDir: dir}, nil
	}
	return nil, fmt.Errorf("checkpoint storage: creating a savepoint in %s: no unused directory name found", savepointsDir)
}

// Resolve returns the metadata path of the savepoint or retained checkpoint
// at p: a savepoint directory, a chk-<n> directory, or their _metadata
// file (the forms execution.state-recovery.path takes). It fails with an
// error wrapping ErrIncomplete if the directory has no metadata, and with
// fs.ErrNotExist if p does not exist. It does not read the metadata
// (ReadMetadata does).
func Resolve(fsys fs.FileSystem, p string) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrBadName, p)
	}
	p = path.Clean(p)
	fi, err := fsys.Stat(p)
	if err != nil {
		return "", fmt.Errorf("checkpoint storage: resolving %s: %w", p, err)
	}
	if !fi.IsDir() {
		if path.Base(p) != MetadataFileName {
			return "", fmt.Errorf("%w: %s is a file but not a %s file", ErrNotSavepoint, p, MetadataFileName)
		}
		return p, nil
	}
	meta := path.Join(p, MetadataFileName)
	if _, err := fsys.Stat(meta); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s has no %s file", ErrIncomplete, p, MetadataFileName)
		}
		return "", fmt.Errorf("checkpoint storage: resolving %s: %w", p, err)
	}
	return meta, nil
}

// DisposeSavepoint deletes the savepoint at p (its directory or its
// _metadata file): first the metadata, then the directory. A missing
// savepoint is an error matching fs.ErrNotExist. It refuses,
// with ErrNotSavepoint, a directory whose metadata describes a checkpoint
// or that has no (readable) metadata and is not named savepoint-*, so that
// a mistyped path cannot delete unrelated data.
func DisposeSavepoint(fsys fs.FileSystem, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%w: %q is not an absolute path", ErrBadName, p)
	}
	p = path.Clean(p)
	dir := p
	if path.Base(p) == MetadataFileName {
		dir = path.Dir(p)
	}
	if fi, err := fsys.Stat(dir); err != nil {
		return fmt.Errorf("checkpoint storage: disposing of savepoint %s: %w", dir, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrNotSavepoint, dir)
	}
	meta := path.Join(dir, MetadataFileName)
	named := strings.HasPrefix(path.Base(dir), savepointDirPrefix)
	m, err := ReadMetadata(fsys, meta)
	switch {
	case err == nil && m.Kind != KindSavepoint:
		return fmt.Errorf("%w: %s holds a %s", ErrNotSavepoint, meta, m.Kind)
	case err == nil, named && unusable(err):
	case unusable(err):
		return fmt.Errorf("%w: %s: %v", ErrNotSavepoint, dir, err)
	default:
		return fmt.Errorf("checkpoint storage: disposing of savepoint %s: %w", dir, err)
	}
	if err := fsys.Remove(meta); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("checkpoint storage: disposing of savepoint %s: %w", dir, err)
	}
	if err := fsys.RemoveAll(dir); err != nil {
		return fmt.Errorf("checkpoint storage: disposing of savepoint %s: %w", dir, err)
	}
	return nil
}
