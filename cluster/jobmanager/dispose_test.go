package jobmanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/rest"
)

// Backend.DisposeSavepoint deletes a savepoint through the cluster's file
// systems, and deletes nothing at a path that holds no savepoint.
func TestBackendDisposeSavepoint(t *testing.T) {
	d, err := NewDispatcher(Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := Backend{D: d}
	dir := t.TempDir()
	loc, err := storage.NewSavepointWriter(fs.Local{}, dir, "0123456789abcdef0123456789abcdef", 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loc.WriteMetadata([]byte("state"), nil); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Dir(loc.MetadataPath())
	notSavepoint := filepath.Join(dir, "precious")
	if err := os.MkdirAll(notSavepoint, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notSavepoint, "data"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"not a savepoint", "file://" + notSavepoint, rest.ErrBadRequest},
		{"relative", "precious", rest.ErrBadRequest},
		{"unknown scheme", "nope://x/y", rest.ErrBadRequest},
		{"missing", "file://" + filepath.Join(dir, "savepoint-012345-000000000000"), rest.ErrNotFound},
		{"a savepoint", "file://" + sp, nil},
		{"disposed of already", sp, rest.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := b.DisposeSavepoint(context.Background(), tc.path); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("DisposeSavepoint(%s) = %v, want %v", tc.path, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(sp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the savepoint %s is still there: %v", sp, err)
	}
	if b, err := os.ReadFile(filepath.Join(notSavepoint, "data")); err != nil || string(b) != "keep me" {
		t.Errorf("a directory that is no savepoint was touched: %q, %v", b, err)
	}
}
