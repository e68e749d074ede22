package storage_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/memfs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }

func TestBadInput(t *testing.T) {
	m := memfs.New()
	s, err := storage.New(m, "/ckp", jobID)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := s.NewCheckpointWriter(1)
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) error { _, _, err := loc.CreateFile(name); return err }
	tests := []struct {
		name   string
		err    error
		want   error
		naming string
	}{
		{"nil filesystem", newErr(nil, "/ckp", jobID), nil, "nil filesystem"},
		{"relative checkpoints dir", newErr(m, "ckp", jobID), storage.ErrBadName, `"ckp"`},
		{"empty job ID", newErr(m, "/ckp", ""), storage.ErrBadName, "job ID"},
		{"job ID with a slash", newErr(m, "/ckp", "a/b"), storage.ErrBadName, `"a/b"`},
		{"job ID ..", newErr(m, "/ckp", ".."), storage.ErrBadName, `".."`},
		{"checkpoint 0", writerErr(s, 0), storage.ErrBadName, "checkpoint ID 0"},
		{"negative checkpoint", writerErr(s, -3), storage.ErrBadName, "checkpoint ID -3"},
		{"empty file name", create(""), storage.ErrBadName, "file name"},
		{"file name with a slash", create("x/y"), storage.ErrBadName, `"x/y"`},
		{"file name ..", create(".."), storage.ErrBadName, `".."`},
		{"the metadata name", create("_metadata"), storage.ErrBadName, `"_metadata"`},
		{"a temporary metadata name", create("_metadata.inprogress.1"), storage.ErrBadName, "_metadata.inprogress.1"},
		{"savepoint of checkpoint 0", spErr(m, "/sp", jobID, 0), storage.ErrBadName, "checkpoint ID 0"},
		{"relative savepoints dir", spErr(m, "sp", jobID, 1), storage.ErrBadName, `"sp"`},
		{"retain 0", retainErr(s, 0), nil, "at least 1"},
	}
	for _, tt := range tests {
		switch {
		case tt.err == nil:
			t.Errorf("%s: no error", tt.name)
		case tt.want != nil && !errors.Is(tt.err, tt.want):
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		case !strings.Contains(tt.err.Error(), tt.naming):
			t.Errorf("%s: %q does not name %s", tt.name, tt.err, tt.naming)
		}
	}
}

func newErr(fsys fs.FileSystem, dir, job string) error {
	_, err := storage.New(fsys, dir, job)
	return err
}

func writerErr(s *storage.Storage, id int64) error {
	_, err := s.NewCheckpointWriter(id)
	return err
}

func spErr(fsys fs.FileSystem, dir, job string, id int64) error {
	_, err := storage.NewSavepointWriter(fsys, dir, job, id)
	return err
}

func retainErr(s *storage.Storage, n int) error {
	_, err := s.Retain(n)
	return err
}

// TestCompletedOnce: metadata is published once; a second writer of the
// same checkpoint (a stale coordinator) gets ErrAlreadyCompleted and the
// first metadata stays.
func TestCompletedOnce(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			s := newStorage(t, tf)
			first, err := s.NewCheckpointWriter(3)
			if err != nil {
				t.Fatal(err)
			}
			second, err := s.CheckpointLocation(3)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := first.WriteMetadata([]byte("first"), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := first.WriteMetadata([]byte("again"), nil); !errors.Is(err, storage.ErrAlreadyCompleted) {
				t.Errorf("a second WriteMetadata on the location: %v", err)
			}
			_, err = second.WriteMetadata([]byte("second"), nil)
			if !errors.Is(err, storage.ErrAlreadyCompleted) || !strings.Contains(err.Error(), "chk-3/_metadata") {
				t.Errorf("a competing WriteMetadata: %v; want ErrAlreadyCompleted naming chk-3/_metadata", err)
			}
			if _, err := s.NewCheckpointWriter(3); !errors.Is(err, storage.ErrAlreadyCompleted) {
				t.Errorf("NewCheckpointWriter of a completed checkpoint: %v", err)
			}
			c, err := s.Checkpoint(3)
			if err != nil || string(c.Metadata.Payload) != "first" {
				t.Fatalf("checkpoint 3 holds %q, %v", c.Metadata.Payload, err)
			}
			// The competing writer left no temporary file behind.
			if got := strings.Join(tree(t, tf.fs, s.CheckpointDir(3)), " "); got != "_metadata" {
				t.Errorf("chk-3 holds %s", got)
			}
		})
	}
}

// TestConcurrentWriters: many tasks write files of the same checkpoint at
// once through their own locations, then the coordinator completes it.
func TestConcurrentWriters(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			coord := newStorage(t, tf)
			if _, err := coord.NewCheckpointWriter(1); err != nil {
				t.Fatal(err)
			}
			const tasks = 8
			handles := make([][]string, tasks)
			errs := make([]error, tasks)
			var wg sync.WaitGroup
			for i := range tasks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tm := newStorage(t, tf) // the task's own process
					loc, err := tm.CheckpointLocation(1)
					if err != nil {
						errs[i] = err
						return
					}
					for _, create := range []func(string) (fs.File, string, error){loc.CreateFile, loc.CreateSharedFile, loc.CreateTaskOwnedFile} {
						f, h, err := create(fmt.Sprintf("task-%d", i))
						if err != nil {
							errs[i] = err
							return
						}
						f.Write([]byte(h))
						if err := f.Close(); err != nil {
							errs[i] = err
							return
						}
						handles[i] = append(handles[i], h)
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			loc, _ := coord.CheckpointLocation(1)
			var shared []string
			for _, hs := range handles {
				shared = append(shared, hs[1])
			}
			if _, err := loc.WriteMetadata([]byte("x"), shared); err != nil {
				t.Fatal(err)
			}
			c, _, err := coord.LatestCompleted(func(c storage.Checkpoint) error {
				var all []string
				for _, hs := range handles {
					all = append(all, hs...)
				}
				return coord.CheckFiles(c, all...)
			})
			if err != nil || c.ID != 1 || len(c.Metadata.Shared) != tasks {
				t.Fatalf("LatestCompleted = %d with %d shared, %v", c.ID, len(c.Metadata.Shared), err)
			}
		})
	}
}

func TestDiscardJob(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			s := newStorage(t, tf)
			if err := writeCheckpoint(s, 1, []string{"a"}, []string{"s"}, true); err != nil {
				t.Fatal(err)
			}
			if err := s.DiscardJob(); err != nil {
				t.Fatal(err)
			}
			if _, err := tf.fs.Stat(s.JobDir()); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("job directory still there: %v", err)
			}
			if ids, err := s.Completed(); err != nil || len(ids) != 0 {
				t.Errorf("Completed() = %v, %v", ids, err)
			}
			_, _, err := s.LatestCompleted(nil)
			if !errors.Is(err, storage.ErrNoCheckpoint) || !strings.Contains(err.Error(), s.JobDir()) {
				t.Errorf("LatestCompleted on nothing: %v", err)
			}
			// The storage is usable again afterwards.
			if err := writeCheckpoint(s, 2, []string{"a"}, []string{"s"}, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSharedHandle checks which files a checkpoint may reference without
// uploading them: those in its own job's shared directory.
func TestSharedHandle(t *testing.T) {
	m := memfs.New()
	s, err := storage.New(m, "/ckp", jobID)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := s.NewCheckpointWriter(2)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := storage.OpenLocation(m, storage.KindCheckpoint, 2, "/ckp/"+jobID+"/chk-2")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := storage.NewSavepointWriter(m, "/sp", jobID, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		loc  *storage.Location
		p    string
		want string // "": not referenced
	}{
		{"its job's shared file", loc, "/ckp/" + jobID + "/shared/x.sst", "../shared/x.sst"},
		{"from a location another process opened", opened, "/ckp/" + jobID + "/shared/x.sst", "../shared/x.sst"},
		{"another job's shared file", loc, "/ckp/other/shared/x.sst", ""},
		{"a checkpoint's own file", loc, "/ckp/" + jobID + "/chk-1/x.sst", ""},
		{"a savepoint's file", loc, "/sp/savepoint-x/x.sst", ""},
		{"in a subdirectory of shared", loc, "/ckp/" + jobID + "/shared/d/x.sst", ""},
		{"a savepoint shares nothing", sp, "/ckp/" + jobID + "/shared/x.sst", ""},
	} {
		h, ok := tc.loc.SharedHandle(tc.p)
		if h != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: SharedHandle(%q) = %q, %v; want %q", tc.name, tc.p, h, ok, tc.want)
			continue
		}
		if ok { // the handle resolves back to the path
			if p, err := storage.ResolveHandle(tc.loc.MetadataPath(), h); err != nil || p != tc.p {
				t.Errorf("%s: handle %q resolves to %q, %v", tc.name, h, p, err)
			}
		}
	}
}
