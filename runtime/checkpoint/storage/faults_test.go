package storage_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs/memfs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

// crashAt is a fault that kills the "process" at the first call matching
// trigger: that call and every later one fail, so nothing after it (no
// clean-up either) reaches the filesystem.
func crashAt(trigger func(c memfs.Call) bool) memfs.Fault {
	crashed := false
	return func(c memfs.Call) error {
		if crashed || trigger(c) {
			crashed = true
			return memfs.ErrInjected
		}
		return nil
	}
}

func isMetadataTemp(p string) bool {
	return strings.HasPrefix(path.Base(p), storage.MetadataFileName+".inprogress.")
}

// TestMetadataFaults injects failures and crashes into every step of
// publishing checkpoint 2's metadata. Whatever happens, checkpoint 2 is
// either complete and intact or not complete at all, checkpoint 1 stays the
// latest until 2 is, and checkpoint 2 can then be written again.
func TestMetadataFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault memfs.Fault
		// leftover: the tree of chk-2 after the failure, seen by a new process
		leftover string
	}{
		{
			name:     "create of the temporary file fails",
			fault:    memfs.FailMatching(memfs.OpCreate, isMetadataTemp, memfs.ErrInjected),
			leftover: "chk-2/ chk-2/state",
		},
		{
			name:     "write of the temporary file fails",
			fault:    memfs.FailMatching(memfs.OpWrite, isMetadataTemp, memfs.ErrInjected),
			leftover: "chk-2/ chk-2/state",
		},
		{
			name:     "close (sync) of the temporary file fails",
			fault:    memfs.FailMatching(memfs.OpClose, isMetadataTemp, memfs.ErrInjected),
			leftover: "chk-2/ chk-2/state",
		},
		{
			name:     "rename fails",
			fault:    memfs.FailMatching(memfs.OpRename, isMetadataTemp, memfs.ErrInjected),
			leftover: "chk-2/ chk-2/state",
		},
		{
			name:     "crash during the write",
			fault:    crashAt(func(c memfs.Call) bool { return c.Op == memfs.OpWrite && isMetadataTemp(c.Path) }),
			leftover: "chk-2/ chk-2/_metadata.inprogress.* chk-2/state",
		},
		{
			name:     "crash before the rename",
			fault:    crashAt(func(c memfs.Call) bool { return c.Op == memfs.OpRename }),
			leftover: "chk-2/ chk-2/_metadata.inprogress.* chk-2/state",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memfs.New()
			tf := testFS{name: "memfs", fs: m, root: "/data", mem: m}
			s := newStorage(t, tf)
			if err := writeCheckpoint(s, 1, []string{"state"}, []string{"s1"}, true); err != nil {
				t.Fatal(err)
			}
			loc, err := s.NewCheckpointWriter(2)
			if err != nil {
				t.Fatal(err)
			}
			f, h, err := loc.CreateFile("state")
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("checkpoint 2"))
			f.Close()

			m.SetFault(tt.fault)
			_, err = loc.WriteMetadata([]byte("files="+h), []string{"../shared/s1"})
			if !errors.Is(err, memfs.ErrInjected) {
				t.Fatalf("WriteMetadata: %v, want the injected fault", err)
			}
			if !strings.Contains(err.Error(), "checkpoint 2") {
				t.Errorf("error %q does not say which checkpoint", err)
			}
			m.SetFault(nil)

			// A new process looks at what is left.
			s = newStorage(t, tf)
			var got []string
			for _, p := range tree(t, m, s.JobDir()) {
				if strings.HasPrefix(p, "chk-2/") {
					got = append(got, p)
				}
			}
			if strings.Join(got, " ") != tt.leftover {
				t.Errorf("chk-2 holds %q, want %q", got, tt.leftover)
			}
			if ids, err := s.Completed(); err != nil || len(ids) != 1 || ids[0] != 1 {
				t.Fatalf("Completed() = %v, %v; want [1]", ids, err)
			}
			c, skipped, err := s.LatestCompleted(nil)
			if err != nil || c.ID != 1 || len(skipped) != 0 {
				t.Fatalf("LatestCompleted = %d, %v, %v; want 1", c.ID, skipped, err)
			}
			if err := s.Verify(2); !errors.Is(err, storage.ErrIncomplete) {
				t.Errorf("Verify(2) = %v, want ErrIncomplete", err)
			}
			// Retention does not mistake the leftovers for a checkpoint.
			if cl, err := s.Retain(1); err != nil || len(cl.Discarded) != 0 {
				t.Errorf("Retain(1) = %+v, %v; want nothing discarded", cl, err)
			}

			// Checkpoint 2 can be written again (a restarted coordinator
			// would rather use a new ID; this shows leftovers block nothing).
			if err := writeCheckpoint(s, 2, []string{"state-retry"}, []string{"s1"}, true); err != nil {
				t.Fatalf("rewriting checkpoint 2: %v", err)
			}
			c, _, err = s.LatestCompleted(nil)
			if err != nil || c.ID != 2 || string(c.Metadata.Payload) != "files=state-retry" {
				t.Fatalf("after the retry LatestCompleted = %d %q, %v", c.ID, c.Metadata.Payload, err)
			}
		})
	}
}

// TestFailedFileWrites: the Nth data write of a checkpoint fails; the
// checkpoint is never completed and is cleaned up by DiscardIncomplete.
func TestFailedFileWrites(t *testing.T) {
	for n := 1; n <= 3; n++ {
		m := memfs.New()
		tf := testFS{name: "memfs", fs: m, root: "/data", mem: m}
		s := newStorage(t, tf)
		if err := writeCheckpoint(s, 1, []string{"a"}, nil, true); err != nil {
			t.Fatal(err)
		}
		m.SetFault(memfs.FailNth(memfs.OpWrite, m.Calls(memfs.OpWrite)+n, memfs.ErrInjected))
		err := writeCheckpoint(s, 2, []string{"a", "b"}, []string{"s"}, true)
		if !errors.Is(err, memfs.ErrInjected) {
			t.Fatalf("write %d failing: %v", n, err)
		}
		m.SetFault(nil)
		if ids, _ := s.Completed(); len(ids) != 1 {
			t.Errorf("write %d failing: completed %v", n, ids)
		}
		got, err := s.DiscardIncomplete(3)
		if err != nil || len(got) != 1 || got[0] != 2 {
			t.Errorf("DiscardIncomplete = %v, %v", got, err)
		}
	}
}

// TestIOErrorStopsFallback: a metadata file that cannot be read now (as
// opposed to one that is damaged) is not skipped: that could restore an
// older checkpoint than the newest intact one.
func TestIOErrorStopsFallback(t *testing.T) {
	m := memfs.New()
	tf := testFS{name: "memfs", fs: m, root: "/data", mem: m}
	s := newStorage(t, tf)
	for id := int64(1); id <= 2; id++ {
		if err := writeCheckpoint(s, id, []string{"a"}, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	ioErr := errors.New("connection reset by NameNode")
	m.SetFault(memfs.FailMatching(memfs.OpOpen, func(p string) bool { return strings.Contains(p, "chk-2/") }, ioErr))
	_, _, err := s.LatestCompleted(nil)
	if !errors.Is(err, ioErr) || errors.Is(err, storage.ErrNoCheckpoint) {
		t.Fatalf("LatestCompleted = %v; want the I/O error, not a fallback", err)
	}
	if _, err := s.Retain(1); !errors.Is(err, ioErr) {
		t.Fatalf("Retain = %v; want the I/O error", err)
	}
	m.SetFault(nil)
	if ids, _ := s.Completed(); len(ids) != 2 {
		t.Fatalf("a failed Retain deleted checkpoints: %v left", ids)
	}
}

// TestRetainDeletionFailure: when a shared file cannot be deleted, retention
// still discards the checkpoint and reports the file.
func TestRetainDeletionFailure(t *testing.T) {
	m := memfs.New()
	tf := testFS{name: "memfs", fs: m, root: "/data", mem: m}
	s := newStorage(t, tf)
	if err := writeCheckpoint(s, 1, []string{"a"}, []string{"s1", "s2"}, true); err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(s, 2, []string{"a"}, []string{"s3"}, true); err != nil {
		t.Fatal(err)
	}
	m.SetFault(memfs.FailMatching(memfs.OpRemove, func(p string) bool { return strings.HasSuffix(p, "/s1") }, memfs.ErrInjected))
	cl, err := s.Retain(1)
	if !errors.Is(err, memfs.ErrInjected) || !strings.Contains(err.Error(), "shared/s1") {
		t.Errorf("Retain error %v; want the failure naming shared/s1", err)
	}
	if len(cl.Discarded) != 1 || cl.Discarded[0] != 1 || strings.Join(cl.Shared, " ") != "../shared/s2" {
		t.Errorf("Retain = %+v", cl)
	}
	m.SetFault(nil)
	if ids, _ := s.Completed(); len(ids) != 1 || ids[0] != 2 {
		t.Errorf("completed %v, want [2]", ids)
	}
}
