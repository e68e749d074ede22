package jobmanager

import (
	"errors"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/memfs"
)

func newHAStore(m *memfs.FS) *haStore {
	return &haStore{fs: m, dir: "/ha/default", log: slog.New(slog.DiscardHandler), records: map[string]*jobRecord{}}
}

// TestHAStoreSurvivesDeathAtAnyRename: a JobManager that dies while it
// moves a job's checkpoint pointer (after removing the old file, before
// renaming the new one into place: HDFS's rename does not replace) leaves
// a store from which its successor still recovers the job; the pointer of
// a later checkpoint is read back.
func TestHAStoreSurvivesDeathAtAnyRename(t *testing.T) {
	m := memfs.New()
	h := newHAStore(m)
	rec := &jobRecord{ID: "0123456789abcdef0123456789abcdef", Name: "job", BinarySHA256: "ab", Args: []string{"-n", "1"}}
	if err := h.put(rec, []byte(`{"nodes":[]}`)); err != nil {
		t.Fatal(err)
	}
	h.checkpointCompleted(rec.ID, "/ckpt/j/chk-1")
	m.SetFault(func(c memfs.Call) error {
		if c.Op == memfs.OpRename {
			return errors.New("the JobManager died")
		}
		return nil
	})
	h.checkpointCompleted(rec.ID, "/ckpt/j/chk-2")
	m.SetFault(nil)

	for _, tc := range []struct {
		name    string
		advance func(h *haStore)
		want    string
	}{
		{"after a death mid-rename", func(*haStore) {}, ""},
		{"after a later checkpoint", func(h *haStore) { h.checkpointCompleted(rec.ID, "/ckpt/j/chk-3") }, "/ckpt/j/chk-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A successor JobManager loads the store and goes on.
			next := newHAStore(m)
			if _, _, err := next.load(); err != nil {
				t.Fatal(err)
			}
			tc.advance(next)
			recs, graphs, err := newHAStore(m).load()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].ID != rec.ID || recs[0].Name != "job" || len(recs[0].Args) != 2 || string(graphs[rec.ID]) != `{"nodes":[]}` {
				t.Fatalf("recovered %+v, graphs %q; want the job back", recs, graphs)
			}
			if recs[0].LatestCheckpoint != tc.want {
				t.Errorf("checkpoint pointer %q, want %q", recs[0].LatestCheckpoint, tc.want)
			}
		})
	}
	h.remove(rec.ID)
	if recs, _, err := newHAStore(m).load(); err != nil || len(recs) != 0 {
		t.Errorf("after remove: %d jobs, %v", len(recs), err)
	}
}

// TestHAStoreIsPrivate: the HA store holds -D values and program arguments
// (credentials, often), and the job binaries: on the local filesystem and
// on memfs, every directory the store and the blob store make below the
// cluster's directory is 0700 and every file 0600, and a cluster directory
// an earlier version left 0755 is narrowed.
func TestHAStoreIsPrivate(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "job")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fsys fs.FileSystem
		root string
	}{
		{"local", fs.Local{}, t.TempDir()},
		{"memfs", memfs.New(), "/ha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := path.Join(tc.root, "default")
			if err := tc.fsys.MkdirAll(dir); err != nil { // as an earlier version made it
				t.Fatal(err)
			}
			h := &haStore{fs: tc.fsys, dir: dir, log: slog.New(slog.DiscardHandler), records: map[string]*jobRecord{}}
			rec := &jobRecord{ID: "0123456789abcdef0123456789abcdef", Name: "job", Args: []string{"--password", "s3cret"},
				Dynamic: map[string]string{"properties.sasl.jaas.config": "password=s3cret"}}
			if err := h.put(rec, []byte(`{"nodes":[]}`)); err != nil {
				t.Fatal(err)
			}
			h.checkpointCompleted(rec.ID, "/ckpt/chk-1")
			b := &blobStore{fs: tc.fsys, dir: dir + "/blobs"}
			if _, err := b.put(bin); err != nil {
				t.Fatal(err)
			}
			var walk func(p string)
			seen := map[string]bool{}
			walk = func(p string) {
				fi, err := tc.fsys.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				want := fs.PrivateFileMode
				if fi.IsDir() {
					want = fs.PrivateDirMode
				}
				seen[fi.Name()] = true
				if fi.Mode().Perm() != want {
					t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
				}
				if !fi.IsDir() {
					return
				}
				entries, err := tc.fsys.ReadDir(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					walk(path.Join(p, e.Name()))
				}
			}
			walk(dir)
			for _, n := range []string{"jobs", rec.ID, "job.json", "graph.json", checkpointFile, "blobs"} {
				if !seen[n] {
					t.Errorf("the store holds no %s", n)
				}
			}
		})
	}
}
