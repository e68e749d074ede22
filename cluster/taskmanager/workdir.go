package taskmanager

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// workDirPattern names the working directories TaskManagers make for
// themselves under the temporary directory when none is configured.
const workDirPattern = "sluice-taskmanager-"

// lockFileName is the file of a working directory whose lock its
// TaskManager holds for as long as it runs: the kernel drops the lock when
// the process ends however it ends, so a directory whose lock can be taken
// belongs to no running TaskManager.
const lockFileName = ".lock"

// ownWorkDir is a working directory a TaskManager made and removes when it
// stops.
type ownWorkDir struct {
	path string
	lock *os.File
}

// makeWorkDir creates a TaskManager's own working directory under tmp,
// locked, after removing the directories that TaskManagers which ended
// without cleaning up (kill -9, a crash) left there.
func makeWorkDir(tmp string, log *slog.Logger) (*ownWorkDir, error) {
	removeStaleWorkDirs(tmp, log)
	dir, err := os.MkdirTemp(tmp, workDirPattern)
	if err != nil {
		return nil, fmt.Errorf("taskmanager: working directory: %w", err)
	}
	f, ok, err := tryLock(dir)
	if err != nil || !ok {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("taskmanager: locking working directory %s: %w", dir, cmp.Or(err, errors.New("held by another process")))
	}
	return &ownWorkDir{path: dir, lock: f}, nil
}

// remove deletes the directory, then drops its lock.
func (w *ownWorkDir) remove() error {
	err := os.RemoveAll(w.path)
	w.lock.Close()
	if err != nil {
		return fmt.Errorf("taskmanager: removing working directory: %w", err)
	}
	return nil
}

// tryLock takes dir's lock without waiting; ok is false when a running
// process holds it.
func tryLock(dir string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// removeStaleWorkDirs removes the working directories under tmp whose
// TaskManager is gone: those with a lock file nobody holds. A directory
// without a lock file is left alone (it is not known to be ours).
func removeStaleWorkDirs(tmp string, log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, workDirPattern+"*"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, lockFileName)); err != nil {
			continue
		}
		f, ok, err := tryLock(d)
		if err != nil || !ok {
			continue
		}
		err = os.RemoveAll(d)
		f.Close()
		if err != nil {
			log.Warn("could not remove the working directory of an ended TaskManager", "dir", d, "err", err)
			continue
		}
		log.Info("removed the working directory of an ended TaskManager", "dir", d)
	}
}

// privateDir makes dir and its missing parents with mode 0700, and sets
// dir's own mode to 0700 if it existed.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("taskmanager: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("taskmanager: %w", err)
	}
	return nil
}
