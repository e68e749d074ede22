package fs_test

import (
	"errors"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/fstest"
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

func TestLocalConformance(t *testing.T) {
	fstest.Run(t, fs.Local{}, t.TempDir())
}

func TestResolver(t *testing.T) {
	r := fs.NewResolver()
	defer r.Close()
	tests := []struct {
		uri      string
		wantPath string // "" when an error is expected
		wantErr  error
	}{
		{"/data/ckp", "/data/ckp", nil},
		{"/data//ckp/../x/", "/data/x", nil},
		{"file:///data/ckp", "/data/ckp", nil},
		{"file://localhost/data/ckp", "/data/ckp", nil},
		{"file:/data/ckp", "/data/ckp", nil},
		{"FILE:///data/ckp", "/data/ckp", nil},
		{"file:///data/a%20b", "/data/a b", nil},
		{"file:///", "/", nil},
		{"", "", fs.ErrBadURI},
		{"data/ckp", "", fs.ErrBadURI},
		{"./ckp", "", fs.ErrBadURI},
		{"file:data/ckp", "", fs.ErrBadURI},
		{"file://otherhost/data", "", fs.ErrBadURI},
		{"file:///data?x=1", "", fs.ErrBadURI},
		{"file:///data#frag", "", fs.ErrBadURI},
		{"file://user@localhost/data", "", fs.ErrBadURI},
		{"hdfs://nn:8020/ckp", "", fs.ErrUnknownScheme},
		{"s3://bucket/ckp", "", fs.ErrUnknownScheme},
		{"://x", "", fs.ErrBadURI},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			fsys, p, err := r.For(tt.uri)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("For(%q) = %v, %q, %v; want error %v", tt.uri, fsys, p, err, tt.wantErr)
				}
				if tt.uri != "" && !strings.Contains(err.Error(), tt.uri) {
					t.Errorf("error %q does not name %q", err, tt.uri)
				}
				return
			}
			if err != nil {
				t.Fatalf("For(%q): %v", tt.uri, err)
			}
			if _, ok := fsys.(fs.Local); !ok {
				t.Errorf("For(%q) gave %T, want fs.Local", tt.uri, fsys)
			}
			if p != filepath.FromSlash(tt.wantPath) {
				t.Errorf("For(%q) path = %q, want %q", tt.uri, p, tt.wantPath)
			}
		})
	}
}

// closeCounter is a FileSystem that records how often it was opened and closed.
type closeCounter struct {
	fs.Local
	closed *int
}

func (c closeCounter) Close() error { *c.closed++; return nil }

func TestResolverRegistry(t *testing.T) {
	r := fs.NewResolver()
	var opened []string
	closed := 0
	err := r.Register("mem", func(u *url.URL) (fs.FileSystem, error) {
		if u.Host == "bad" {
			return nil, errors.New("cannot reach bad")
		}
		opened = append(opened, u.Scheme+"://"+u.Host)
		return closeCounter{closed: &closed}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"file", "mem"} {
		if err := r.Register(bad, func(*url.URL) (fs.FileSystem, error) { return fs.Local{}, nil }); err == nil {
			t.Errorf("registering %q twice succeeded", bad)
		}
	}
	if err := r.Register("Bad Scheme", func(*url.URL) (fs.FileSystem, error) { return fs.Local{}, nil }); err == nil {
		t.Error("registering an invalid scheme succeeded")
	}
	if got := strings.Join(r.Schemes(), ","); got != "file,mem" {
		t.Errorf("Schemes() = %s", got)
	}

	// One filesystem per scheme://authority, shared by later calls.
	for _, uri := range []string{"mem://a/x", "MEM://A/y", "mem://b/x", "mem:///x", "mem://a"} {
		if _, _, err := r.For(uri); err != nil {
			t.Fatalf("For(%q): %v", uri, err)
		}
	}
	if got := strings.Join(opened, " "); got != "mem://a mem://b mem://" {
		t.Errorf("opened %q; want each authority once", got)
	}
	if _, p, _ := r.For("mem://a"); p != "/" {
		t.Errorf("the path of mem://a is %q, want /", p)
	}
	_, _, err = r.For("mem://bad/x")
	if err == nil || !strings.Contains(err.Error(), "mem://bad/x") || !strings.Contains(err.Error(), "cannot reach bad") {
		t.Errorf("a failing Opener gave %v", err)
	}

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if closed != 3 {
		t.Errorf("Close closed %d filesystems, want 3", closed)
	}
	if _, _, err := r.For("mem://a/x"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("For after Close: %v, want ErrClosed", err)
	}
	if _, _, err := r.For("/x"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("For after Close: %v, want ErrClosed", err)
	}
}
