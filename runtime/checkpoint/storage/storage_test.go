package storage_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/fs/memfs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

const jobID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

// testFS is a filesystem the storage tests run on, with a directory to use.
type testFS struct {
	name string
	fs   fs.FileSystem
	root string
	mem  *memfs.FS // nil for the local filesystem
}

// filesystems returns the local filesystem and an in-memory one; every
// storage test runs on both and must give the same results.
func filesystems(t *testing.T) []testFS {
	m := memfs.New()
	if err := m.MkdirAll("/data"); err != nil {
		t.Fatal(err)
	}
	return []testFS{
		{name: "local", fs: fs.Local{}, root: filepath.ToSlash(t.TempDir())},
		{name: "memfs", fs: m, root: "/data", mem: m},
	}
}

func newStorage(t *testing.T, tf testFS) *storage.Storage {
	t.Helper()
	s, err := storage.New(tf.fs, path.Join(tf.root, "checkpoints"), jobID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeCheckpoint completes checkpoint id with exclusive files files and
// shared files shared (created unless they exist); the payload lists the
// exclusive handles.
func writeCheckpoint(s *storage.Storage, id int64, files, shared []string, complete bool) error {
	loc, err := s.NewCheckpointWriter(id)
	if err != nil {
		return err
	}
	var handles []string
	for _, name := range files {
		f, h, err := loc.CreateFile(name)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(f, "%d/%s", id, name); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		handles = append(handles, h)
	}
	var sharedHandles []string
	for _, name := range shared {
		f, h, err := loc.CreateSharedFile(name)
		switch {
		case errors.Is(err, iofs.ErrExist): // uploaded by an earlier checkpoint; reused
			h = "../shared/" + name
		case err != nil:
			return err
		default:
			if _, err := fmt.Fprintf(f, "shared %s", name); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		sharedHandles = append(sharedHandles, h)
	}
	if !complete {
		return nil
	}
	_, err = loc.WriteMetadata([]byte("files="+strings.Join(handles, ",")), sharedHandles)
	return err
}

// payloadHandles returns the exclusive handles a test payload lists.
func payloadHandles(c storage.Checkpoint) []string {
	return list(strings.TrimPrefix(string(c.Metadata.Payload), "files="))
}

// tree lists everything below dir, relative, directories with a trailing
// "/", in name order; temporary metadata files' random suffixes become *.
func tree(t *testing.T, fsys fs.FileSystem, dir string) []string {
	t.Helper()
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		infos, err := fsys.ReadDir(path.Join(dir, rel))
		if err != nil {
			t.Fatalf("tree: %v", err)
		}
		for _, fi := range infos {
			p := path.Join(rel, fi.Name())
			if fi.IsDir() {
				out = append(out, p+"/")
				walk(p)
			} else {
				out = append(out, tempSuffix.ReplaceAllString(p, ".inprogress.*"))
			}
		}
	}
	walk("")
	return out
}

var tempSuffix = regexp.MustCompile(`\.inprogress\.[0-9a-f]+$`)

// replaceFile replaces a file's content through the filesystem interface.
func replaceFile(fsys fs.FileSystem, p string, data []byte) error {
	if err := fsys.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	return fstest.WriteFile(fsys, p, data)
}

func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no data-driven tests: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			for i, tf := range filesystems(t) {
				t.Run(tf.name, func(t *testing.T) {
					d := &ddStorage{tf: tf, s: newStorage(t, tf)}
					runDataDriven(t, file, i == 0, d.do)
				})
			}
		})
	}
}

type ddStorage struct {
	tf testFS
	s  *storage.Storage
}

func (d *ddStorage) errString(err error) string {
	if err == nil {
		return "ok"
	}
	s := strings.ReplaceAll(err.Error(), d.s.JobDir(), "<job>")
	return "error: " + strings.ReplaceAll(s, "\n", "\n  ")
}

func (d *ddStorage) do(t *testing.T, cmd string, args []string) string {
	a := kv(args)
	id := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: bad ID %q", cmd, s)
		}
		return n
	}
	ids := func(s string) []int64 {
		var out []int64
		for _, x := range list(s) {
			out = append(out, id(x))
		}
		return out
	}
	switch cmd {
	case "checkpoint", "incomplete":
		return d.errString(writeCheckpoint(d.s, id(args[0]), list(a["files"]), list(a["shared"]), cmd == "checkpoint"))
	case "corrupt":
		return d.errString(d.corrupt(id(args[0]), args[1]))
	case "remove":
		return d.errString(d.tf.fs.Remove(path.Join(d.s.JobDir(), args[0])))
	case "completed":
		got, err := d.s.Completed()
		if err != nil {
			return d.errString(err)
		}
		return fmt.Sprint(got)
	case "verify":
		return d.errString(d.s.Verify(id(args[0])))
	case "latest":
		var accept func(storage.Checkpoint) error
		if _, ok := a["check-files"]; ok {
			accept = func(c storage.Checkpoint) error { return d.s.CheckFiles(c, payloadHandles(c)...) }
		}
		c, skipped, err := d.s.LatestCompleted(accept)
		var b strings.Builder
		if err != nil {
			b.WriteString(d.errString(err))
		} else {
			fmt.Fprintf(&b, "checkpoint %d: %s shared=%v", c.ID, c.Metadata.Payload, c.Metadata.Shared)
		}
		for _, e := range skipped {
			b.WriteString("\nskipped " + d.errString(e))
		}
		return b.String()
	case "retain":
		n, err := strconv.Atoi(args[0])
		if err != nil {
			t.Fatalf("retain: %v", err)
		}
		cl, err := d.s.Retain(n, ids(a["keep"])...)
		return fmt.Sprintf("discarded %v, shared deleted %v: %s", cl.Discarded, cl.Shared, d.errString(err))
	case "discard":
		return d.errString(d.s.Discard(id(args[0])))
	case "discard-incomplete":
		got, err := d.s.DiscardIncomplete(id(args[0]))
		return fmt.Sprintf("discarded %v: %s", got, d.errString(err))
	case "restart":
		// A new coordinator process: nothing but what is on the filesystem.
		d.s = newStorage(t, d.tf)
		return "ok"
	case "tree":
		return strings.Join(tree(t, d.tf.fs, d.s.JobDir()), "\n")
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

func (d *ddStorage) corrupt(id int64, how string) error {
	p := path.Join(d.s.CheckpointDir(id), storage.MetadataFileName)
	data, err := fstest.ReadFile(d.tf.fs, p)
	if err != nil {
		return err
	}
	switch {
	case how == "truncate":
		data = data[:len(data)-5]
	case how == "flip":
		data[len(data)-1] ^= 0x40
	case how == "garbage":
		data = []byte("this is not checkpoint metadata at all")
	case how == "empty":
		data = nil
	case how == "trailing":
		data = append(data, "xyz"...)
	case strings.HasPrefix(how, "copy-of="):
		other := path.Join(d.s.CheckpointDir(mustAtoi(strings.TrimPrefix(how, "copy-of="))), storage.MetadataFileName)
		if data, err = fstest.ReadFile(d.tf.fs, other); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown corruption %q", how)
	}
	return replaceFile(d.tf.fs, p, data)
}

func mustAtoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}
