// Package fstest checks that an fs.FileSystem behaves as the interface
// promises. Every implementation (fs.Local, memfs, hdfs) runs the same
// suite, so code written against fs.FileSystem can rely on the same
// semantics everywhere:
//
//	func TestConformance(t *testing.T) { fstest.Run(t, myFS, "/an/empty/dir") }
package fstest

import (
	"errors"
	"io"
	iofs "io/fs"
	"path"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
)

// Run runs the conformance suite against fsys inside root, an existing
// directory that the suite may fill (each subtest works in a fresh
// subdirectory). Paths are joined with "/".
func Run(t *testing.T, fsys fs.FileSystem, root string) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c checker)
	}{
		{"CreateOpenStat", testCreateOpenStat},
		{"CreateErrors", testCreateErrors},
		{"MkdirAll", testMkdirAll},
		{"Private", testPrivate},
		{"RenameFile", testRenameFile},
		{"RenameNeverReplaces", testRenameNeverReplaces},
		{"RenameDirectory", testRenameDirectory},
		{"ReadDir", testReadDir},
		{"Remove", testRemove},
		{"RemoveAll", testRemoveAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := path.Join(root, tc.name)
			if err := fsys.MkdirAll(dir); err != nil {
				t.Fatalf("MkdirAll(%s): %v", dir, err)
			}
			tc.run(t, checker{t: t, fs: fsys, dir: dir})
		})
	}
}

type checker struct {
	t   *testing.T
	fs  fs.FileSystem
	dir string
}

func (c checker) p(elem ...string) string { return path.Join(append([]string{c.dir}, elem...)...) }

// write creates name with content, failing the test on error.
func (c checker) write(name, content string) {
	c.t.Helper()
	if err := WriteFile(c.fs, name, []byte(content)); err != nil {
		c.t.Fatalf("writing %s: %v", name, err)
	}
}

// content returns the content of name, failing the test on error.
func (c checker) content(name string) string {
	c.t.Helper()
	b, err := ReadFile(c.fs, name)
	if err != nil {
		c.t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

// wantErr checks that err matches target (nil: any error) and names path.
func (c checker) wantErr(what string, err, target error, path string) {
	c.t.Helper()
	switch {
	case err == nil:
		c.t.Errorf("%s succeeded; want an error", what)
	case target != nil && !errors.Is(err, target):
		c.t.Errorf("%s: error %v does not match %v", what, err, target)
	case !strings.Contains(err.Error(), path):
		c.t.Errorf("%s: error %q does not name %s", what, err, path)
	}
}

func (c checker) exists(name string) bool {
	c.t.Helper()
	_, err := c.fs.Stat(name)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		c.t.Fatalf("Stat(%s): %v", name, err)
	}
	return err == nil
}

// WriteFile creates name on fsys and writes data to it.
func WriteFile(fsys fs.FileSystem, name string, data []byte) error {
	f, err := fsys.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads the whole file name from fsys.
func ReadFile(fsys fs.FileSystem, name string) ([]byte, error) {
	r, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return b, err
}

func testCreateOpenStat(t *testing.T, c checker) {
	f := c.p("f")
	big := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB: several packets on HDFS
	for i, content := range []string{"", "hello", big} {
		name := f + "-" + string(rune('a'+i))
		c.write(name, content)
		if got := c.content(name); got != content {
			t.Errorf("%s holds %d bytes, want %d", name, len(got), len(content))
		}
		fi, err := c.fs.Stat(name)
		if err != nil {
			t.Fatalf("Stat(%s): %v", name, err)
		}
		if fi.IsDir() || fi.Size() != int64(len(content)) || fi.Name() != path.Base(name) {
			t.Errorf("Stat(%s) = name %q dir %v size %d; want %q, a file of %d bytes", name, fi.Name(), fi.IsDir(), fi.Size(), path.Base(name), len(content))
		}
	}
	fi, err := c.fs.Stat(c.dir)
	if err != nil || !fi.IsDir() {
		t.Errorf("Stat(%s) of a directory: %v, %v", c.dir, fi, err)
	}
	_, err = c.fs.Open(c.p("missing"))
	c.wantErr("Open of a missing file", err, iofs.ErrNotExist, c.p("missing"))
	_, err = c.fs.Stat(c.p("missing"))
	c.wantErr("Stat of a missing file", err, iofs.ErrNotExist, c.p("missing"))
}

func testCreateErrors(t *testing.T, c checker) {
	c.write(c.p("f"), "first")
	_, err := c.fs.Create(c.p("f"))
	c.wantErr("Create of an existing file", err, iofs.ErrExist, c.p("f"))
	if got := c.content(c.p("f")); got != "first" {
		t.Errorf("a refused Create changed the file: %q", got)
	}
	_, err = c.fs.Create(c.p("no", "f"))
	c.wantErr("Create without parent", err, iofs.ErrNotExist, c.p("no", "f"))
	if c.exists(c.p("no")) {
		t.Errorf("Create made the missing parent %s", c.p("no"))
	}
}

func testMkdirAll(t *testing.T, c checker) {
	d := c.p("a", "b", "c")
	for range 2 { // the second call finds it existing
		if err := c.fs.MkdirAll(d); err != nil {
			t.Fatalf("MkdirAll(%s): %v", d, err)
		}
	}
	for _, q := range []string{c.p("a"), c.p("a", "b"), d} {
		if fi, err := c.fs.Stat(q); err != nil || !fi.IsDir() {
			t.Errorf("after MkdirAll, Stat(%s) = %v, %v; want a directory", q, fi, err)
		}
	}
	c.write(c.p("file"), "x")
	err := c.fs.MkdirAll(c.p("file", "d"))
	c.wantErr("MkdirAll under a file", err, nil, c.p("file"))
}

// testPrivate checks the modes of what MkdirAllPrivate and CreatePrivate
// make: 0700 directories (new ones, and an existing one narrowed), 0600
// files, while Create and MkdirAll keep their wider modes.
func testPrivate(t *testing.T, c checker) {
	mode := func(p string) iofs.FileMode {
		t.Helper()
		fi, err := c.fs.Stat(p)
		if err != nil {
			t.Fatalf("Stat(%s): %v", p, err)
		}
		return fi.Mode().Perm()
	}
	d := c.p("a", "b")
	for range 2 { // the second call finds it existing
		if err := c.fs.MkdirAllPrivate(d); err != nil {
			t.Fatalf("MkdirAllPrivate(%s): %v", d, err)
		}
	}
	for _, q := range []string{c.p("a"), d} {
		if m := mode(q); m != fs.PrivateDirMode {
			t.Errorf("MkdirAllPrivate made %s with mode %v, want %v", q, m, fs.PrivateDirMode)
		}
	}
	wide := c.p("wide")
	if err := c.fs.MkdirAll(wide); err != nil {
		t.Fatal(err)
	}
	if m := mode(wide); m&0o077 == 0 {
		t.Fatalf("MkdirAll made %s with mode %v: the test needs a wider one", wide, m)
	}
	if err := c.fs.MkdirAllPrivate(wide); err != nil {
		t.Fatalf("MkdirAllPrivate(%s) of an existing directory: %v", wide, err)
	}
	if m := mode(wide); m != fs.PrivateDirMode {
		t.Errorf("MkdirAllPrivate left the existing %s with mode %v, want %v", wide, m, fs.PrivateDirMode)
	}

	f := c.p("a", "b", "secret")
	w, err := c.fs.CreatePrivate(f)
	if err != nil {
		t.Fatalf("CreatePrivate(%s): %v", f, err)
	}
	if m := mode(f); m != fs.PrivateFileMode {
		t.Errorf("CreatePrivate made %s with mode %v before a byte was written, want %v", f, m, fs.PrivateFileMode)
	}
	if _, err := w.Write([]byte("s3cret")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.content(f); got != "s3cret" {
		t.Errorf("%s holds %q", f, got)
	}
	if m := mode(f); m != fs.PrivateFileMode {
		t.Errorf("%s has mode %v once closed, want %v", f, m, fs.PrivateFileMode)
	}
	_, err = c.fs.CreatePrivate(f)
	c.wantErr("CreatePrivate of an existing file", err, iofs.ErrExist, f)
	_, err = c.fs.CreatePrivate(c.p("no", "f"))
	c.wantErr("CreatePrivate without parent", err, iofs.ErrNotExist, c.p("no", "f"))
}

func testRenameFile(t *testing.T, c checker) {
	c.write(c.p("src"), "content")
	if err := c.fs.MkdirAll(c.p("sub")); err != nil {
		t.Fatal(err)
	}
	if err := c.fs.Rename(c.p("src"), c.p("sub", "dst")); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if c.exists(c.p("src")) {
		t.Errorf("%s still exists after Rename", c.p("src"))
	}
	if got := c.content(c.p("sub", "dst")); got != "content" {
		t.Errorf("renamed file holds %q", got)
	}
	err := c.fs.Rename(c.p("src"), c.p("other"))
	c.wantErr("Rename of a missing file", err, iofs.ErrNotExist, c.p("src"))
	if c.exists(c.p("other")) {
		t.Errorf("a failed Rename created %s", c.p("other"))
	}
}

func testRenameNeverReplaces(t *testing.T, c checker) {
	c.write(c.p("a"), "new")
	c.write(c.p("b"), "old")
	err := c.fs.Rename(c.p("a"), c.p("b"))
	c.wantErr("Rename onto an existing file", err, iofs.ErrExist, c.p("b"))
	if got := c.content(c.p("b")); got != "old" {
		t.Errorf("Rename replaced the existing file: it holds %q", got)
	}
	if got := c.content(c.p("a")); got != "new" {
		t.Errorf("a refused Rename changed the source: %q", got)
	}
	if err := c.fs.MkdirAll(c.p("dir")); err != nil {
		t.Fatal(err)
	}
	err = c.fs.Rename(c.p("a"), c.p("dir"))
	c.wantErr("Rename onto an existing directory", err, iofs.ErrExist, c.p("dir"))
	if c.exists(c.p("dir", "a")) {
		t.Errorf("Rename onto a directory moved the file into it")
	}
}

func testRenameDirectory(t *testing.T, c checker) {
	if err := c.fs.MkdirAll(c.p("d1", "sub")); err != nil {
		t.Fatal(err)
	}
	c.write(c.p("d1", "f"), "1")
	c.write(c.p("d1", "sub", "g"), "2")
	if err := c.fs.Rename(c.p("d1"), c.p("d2")); err != nil {
		t.Fatalf("Rename of a directory: %v", err)
	}
	if c.exists(c.p("d1")) {
		t.Errorf("%s still exists", c.p("d1"))
	}
	if c.content(c.p("d2", "f")) != "1" || c.content(c.p("d2", "sub", "g")) != "2" {
		t.Errorf("the renamed directory lost its content")
	}
}

func testReadDir(t *testing.T, c checker) {
	for _, n := range []string{"c", "a", "b"} {
		c.write(c.p(n), n+n)
	}
	if err := c.fs.MkdirAll(c.p("d", "inner")); err != nil {
		t.Fatal(err)
	}
	infos, err := c.fs.ReadDir(c.dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	var got []string
	for _, fi := range infos {
		s := fi.Name()
		if fi.IsDir() {
			s += "/"
		} else if fi.Size() != 2 {
			t.Errorf("ReadDir says %s has %d bytes, want 2", fi.Name(), fi.Size())
		}
		got = append(got, s)
	}
	if want := "a b c d/"; strings.Join(got, " ") != want {
		t.Errorf("ReadDir(%s) = %q, want %q (sorted, one level)", c.dir, got, want)
	}
	empty, err := c.fs.ReadDir(c.p("d", "inner"))
	if err != nil || len(empty) != 0 {
		t.Errorf("ReadDir of an empty directory = %v, %v", empty, err)
	}
	_, err = c.fs.ReadDir(c.p("missing"))
	c.wantErr("ReadDir of a missing directory", err, iofs.ErrNotExist, c.p("missing"))
}

func testRemove(t *testing.T, c checker) {
	c.write(c.p("f"), "x")
	if err := c.fs.Remove(c.p("f")); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if c.exists(c.p("f")) {
		t.Errorf("%s exists after Remove", c.p("f"))
	}
	err := c.fs.Remove(c.p("f"))
	c.wantErr("Remove of a missing file", err, iofs.ErrNotExist, c.p("f"))

	if err := c.fs.MkdirAll(c.p("full")); err != nil {
		t.Fatal(err)
	}
	c.write(c.p("full", "f"), "x")
	err = c.fs.Remove(c.p("full"))
	c.wantErr("Remove of a non-empty directory", err, nil, c.p("full"))
	if !c.exists(c.p("full", "f")) {
		t.Errorf("a refused Remove deleted the directory's content")
	}
	if err := c.fs.MkdirAll(c.p("empty")); err != nil {
		t.Fatal(err)
	}
	if err := c.fs.Remove(c.p("empty")); err != nil {
		t.Errorf("Remove of an empty directory: %v", err)
	}
}

func testRemoveAll(t *testing.T, c checker) {
	if err := c.fs.MkdirAll(c.p("tree", "a", "b")); err != nil {
		t.Fatal(err)
	}
	c.write(c.p("tree", "f"), "x")
	c.write(c.p("tree", "a", "b", "g"), "y")
	c.write(c.p("keep"), "z")
	if err := c.fs.RemoveAll(c.p("tree")); err != nil {
		t.Fatalf("RemoveAll: %v", err)
	}
	if c.exists(c.p("tree")) {
		t.Errorf("%s exists after RemoveAll", c.p("tree"))
	}
	if !c.exists(c.p("keep")) {
		t.Errorf("RemoveAll removed a sibling")
	}
	if err := c.fs.RemoveAll(c.p("tree")); err != nil {
		t.Errorf("RemoveAll of a missing path: %v, want nil", err)
	}
	if err := c.fs.RemoveAll(c.p("keep")); err != nil || c.exists(c.p("keep")) {
		t.Errorf("RemoveAll of a file: %v", err)
	}
}
