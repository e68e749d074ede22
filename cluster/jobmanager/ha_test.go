package jobmanager

import (
	"errors"
	"log/slog"
	"testing"

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
