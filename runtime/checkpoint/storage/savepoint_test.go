package storage_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

// TestSavepointRelocatable writes a savepoint, moves its directory, and
// restores it from the new place: every handle resolves and every file
// reads back.
func TestSavepointRelocatable(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			spDir := path.Join(tf.root, "savepoints")
			loc, err := storage.NewSavepointWriter(tf.fs, spDir, jobID, 42)
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := regexp.MatchString(`^savepoint-a1b2c3-[0-9a-f]{12}$`, path.Base(loc.Dir())); !ok || path.Dir(loc.Dir()) != spDir {
				t.Fatalf("savepoint directory %s; want %s/savepoint-a1b2c3-<12 hex digits>", loc.Dir(), spDir)
			}
			want := map[string]string{} // handle → content
			for i, create := range []func(string) (fs.File, string, error){loc.CreateFile, loc.CreateSharedFile, loc.CreateTaskOwnedFile} {
				name := fmt.Sprintf("state-%d", i)
				f, h, err := create(name)
				if err != nil {
					t.Fatal(err)
				}
				if h != name {
					t.Errorf("savepoint handle %q, want the bare name %q", h, name)
				}
				content := "content of " + name
				f.Write([]byte(content))
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				want[h] = content
			}
			if _, err := loc.WriteMetadata([]byte("payload"), []string{"../shared/x"}); !errors.Is(err, storage.ErrBadName) {
				t.Errorf("a savepoint listing shared files: %v, want ErrBadName", err)
			}
			metaPath, err := loc.WriteMetadata([]byte("payload"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if metaPath != path.Join(loc.Dir(), "_metadata") {
				t.Errorf("metadata at %s", metaPath)
			}
			if _, _, err := loc.CreateFile("late"); !errors.Is(err, storage.ErrAlreadyCompleted) {
				t.Errorf("CreateFile after WriteMetadata: %v", err)
			}

			// Move the savepoint elsewhere.
			moved := path.Join(tf.root, "archive", "sp-copy")
			if err := tf.fs.MkdirAll(path.Dir(moved)); err != nil {
				t.Fatal(err)
			}
			if err := tf.fs.Rename(loc.Dir(), moved); err != nil {
				t.Fatal(err)
			}
			for _, given := range []string{moved, moved + "/", path.Join(moved, "_metadata")} {
				meta, err := storage.Resolve(tf.fs, given)
				if err != nil {
					t.Fatalf("Resolve(%s): %v", given, err)
				}
				if meta != path.Join(moved, "_metadata") {
					t.Errorf("Resolve(%s) = %s", given, meta)
				}
			}
			meta := path.Join(moved, "_metadata")
			m, err := storage.ReadMetadata(tf.fs, meta)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind != storage.KindSavepoint || m.CheckpointID != 42 || string(m.Payload) != "payload" || len(m.Shared) != 0 {
				t.Errorf("metadata %+v", m)
			}
			for h, content := range want {
				p, err := storage.ResolveHandle(meta, h)
				if err != nil {
					t.Fatal(err)
				}
				b, err := fstest.ReadFile(tf.fs, p)
				if err != nil || string(b) != content {
					t.Errorf("handle %s → %s: %q, %v; want %q", h, p, b, err, content)
				}
			}

			if err := storage.DisposeSavepoint(tf.fs, meta); err != nil {
				t.Fatal(err)
			}
			if _, err := tf.fs.Stat(moved); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("after DisposeSavepoint, Stat(%s) = %v", moved, err)
			}
		})
	}
}

// TestRetainedCheckpointResolves: a retained checkpoint is restored from
// its chk-<n> directory, and its handles, shared ones included, resolve
// even after the job directory moved.
func TestRetainedCheckpointResolves(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			s := newStorage(t, tf)
			if err := writeCheckpoint(s, 7, []string{"a"}, []string{"sst"}, true); err != nil {
				t.Fatal(err)
			}
			movedJob := path.Join(tf.root, "elsewhere")
			if err := tf.fs.Rename(s.JobDir(), movedJob); err != nil {
				t.Fatal(err)
			}
			meta, err := storage.Resolve(tf.fs, path.Join(movedJob, "chk-7"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := storage.ReadMetadata(tf.fs, meta)
			if err != nil {
				t.Fatal(err)
			}
			if err := storage.CheckFiles(tf.fs, meta, append([]string{"a"}, m.Shared...)); err != nil {
				t.Fatal(err)
			}
			p, _ := storage.ResolveHandle(meta, m.Shared[0])
			if b, err := fstest.ReadFile(tf.fs, p); err != nil || string(b) != "shared sst" {
				t.Errorf("shared file %s: %q, %v", p, b, err)
			}
			// A checkpoint is not a savepoint: DisposeSavepoint refuses it.
			if err := storage.DisposeSavepoint(tf.fs, path.Join(movedJob, "chk-7")); !errors.Is(err, storage.ErrNotSavepoint) {
				t.Errorf("DisposeSavepoint of a checkpoint: %v, want ErrNotSavepoint", err)
			}
		})
	}
}

func TestResolveAndDisposeErrors(t *testing.T) {
	for _, tf := range filesystems(t) {
		t.Run(tf.name, func(t *testing.T) {
			plain := path.Join(tf.root, "plain")
			if err := tf.fs.MkdirAll(plain); err != nil {
				t.Fatal(err)
			}
			if err := fstest.WriteFile(tf.fs, path.Join(plain, "data"), []byte("precious")); err != nil {
				t.Fatal(err)
			}
			half := path.Join(tf.root, "savepoint-a1b2c3-000000000000")
			if err := tf.fs.MkdirAll(half); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name    string
				err     error
				want    error
				naming  string
				dispose bool // whether the directory must be gone afterwards
			}{
				{"resolve missing", resolveErr(tf, path.Join(tf.root, "nope")), iofs.ErrNotExist, "nope", false},
				{"resolve dir without metadata", resolveErr(tf, plain), storage.ErrIncomplete, plain, false},
				{"resolve a non-metadata file", resolveErr(tf, path.Join(plain, "data")), storage.ErrNotSavepoint, "data", false},
				{"resolve relative", resolveErr(tf, "savepoints/x"), storage.ErrBadName, "savepoints/x", false},
				{"dispose a plain directory", storage.DisposeSavepoint(tf.fs, plain), storage.ErrNotSavepoint, plain, false},
				{"dispose a missing savepoint", storage.DisposeSavepoint(tf.fs, path.Join(tf.root, "savepoint-x")), iofs.ErrNotExist, "savepoint-x", false},
				{"dispose a half-written savepoint", storage.DisposeSavepoint(tf.fs, half), nil, "", true},
			}
			for _, tt := range tests {
				switch {
				case tt.want == nil && tt.err != nil:
					t.Errorf("%s: %v", tt.name, tt.err)
				case tt.want != nil && !errors.Is(tt.err, tt.want):
					t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
				case tt.want != nil && !containsStr(tt.err.Error(), tt.naming):
					t.Errorf("%s: %q does not name %s", tt.name, tt.err, tt.naming)
				}
			}
			if b, err := fstest.ReadFile(tf.fs, path.Join(plain, "data")); err != nil || string(b) != "precious" {
				t.Errorf("a refused dispose touched %s: %q, %v", plain, b, err)
			}
			if _, err := tf.fs.Stat(half); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("the half-written savepoint is still there: %v", err)
			}
		})
	}
}

func resolveErr(tf testFS, p string) error {
	_, err := storage.Resolve(tf.fs, p)
	return err
}
