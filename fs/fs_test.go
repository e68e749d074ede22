package fs_test

import (
	"errors"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
)

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var local fs.FileSystem = fs.Local{}
	tests := []struct {
		name    string
		do      func() error
		wantErr error  // nil: success
		naming  string // a path the error must name
	}{
		{"create new", func() error { return create(local, filepath.Join(dir, "new"), "hello") }, nil, ""},
		{"create existing", func() error { return create(local, file, "y") }, iofs.ErrExist, file},
		{"create without parent", func() error { return create(local, filepath.Join(dir, "no", "f"), "y") }, iofs.ErrNotExist, filepath.Join(dir, "no", "f")},
		{"create under a file", func() error { return create(local, filepath.Join(file, "f"), "y") }, nil, filepath.Join(file, "f")},
		{"mkdirall", func() error { return local.MkdirAll(filepath.Join(dir, "a", "b")) }, nil, ""},
		{"mkdirall existing", func() error { return local.MkdirAll(filepath.Join(dir, "a", "b")) }, nil, ""},
		{"mkdirall under a file", func() error { return local.MkdirAll(filepath.Join(file, "d")) }, nil, file},
		{"rename", func() error { return local.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "a", "moved")) }, nil, ""},
		{"rename missing", func() error { return local.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "x")) }, iofs.ErrNotExist, filepath.Join(dir, "new")},
		{"rename onto existing", func() error { return local.Rename(filepath.Join(dir, "a", "moved"), file) }, iofs.ErrExist, file},
		{"stat missing", func() error { _, err := local.Stat(filepath.Join(dir, "new")); return err }, iofs.ErrNotExist, filepath.Join(dir, "new")},
		{"remove", func() error { return local.Remove(filepath.Join(dir, "a", "moved")) }, nil, ""},
		{"remove missing", func() error { return local.Remove(filepath.Join(dir, "a", "moved")) }, iofs.ErrNotExist, filepath.Join(dir, "a", "moved")},
	}
	for _, tt := range tests {
		err := tt.do()
		switch {
		case tt.naming == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.naming != "" && err == nil:
			t.Errorf("%s: succeeded, want an error", tt.name)
		case err != nil && tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: %v is not %v", tt.name, err, tt.wantErr)
		case err != nil && !strings.Contains(err.Error(), tt.naming):
			t.Errorf("%s: error %q does not name %s", tt.name, err, tt.naming)
		}
	}
	fi, err := local.Stat(filepath.Join(dir, "a"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("stat of a directory: %v %v", fi, err)
	}
	// The old file keeps its content: Rename never replaced it.
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Fatalf("%s holds %q, %v", file, b, err)
	}
}

func create(f fs.FileSystem, path, content string) error {
	w, err := f.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(content)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(b) != content {
		return errors.New("content lost: " + string(b))
	}
	return nil
}

// fs is a leaf package: it imports the standard library only.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s; package fs may import only the standard library", f, p)
			}
		}
	}
}
