package jobmanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
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
		{"not a savepoint", "file://" + notSavepoint, restapi.ErrBadRequest},
		{"relative", "precious", restapi.ErrBadRequest},
		{"unknown scheme", "nope://x/y", restapi.ErrBadRequest},
		{"missing", "file://" + filepath.Join(dir, "savepoint-012345-000000000000"), restapi.ErrNotFound},
		{"a savepoint", "file://" + sp, nil},
		{"disposed of already", sp, restapi.ErrNotFound},
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

// A completed checkpoint was acknowledged by every subtask, at every
// vertex; of one in progress the counts of acknowledgements are unknown.
func TestCheckpointTasks(t *testing.T) {
	in := Info{ID: "0123456789abcdef0123456789abcdef", Plan: &graph.Plan{Chains: []*graph.Chain{{ID: 0, Parallelism: 2}, {ID: 1, Parallelism: 3}}}}
	done := withTasks(in, restapi.CheckpointStatistics{ID: 4, Status: restapi.CheckpointCompleted, LatestAckTimestamp: 900, EndToEndDuration: 40})
	if done.NumSubtasks != 5 || done.NumAcknowledgedSubtasks != 5 || len(done.Tasks) != 2 {
		t.Fatalf("completed: %d of %d subtasks, tasks %v; want 5 of 5 at 2 vertices", done.NumAcknowledgedSubtasks, done.NumSubtasks, done.Tasks)
	}
	v1 := done.Tasks[vertexID(in.ID)(in.Plan.Chains[1])]
	if v1 != (restapi.TaskCheckpointStatistics{ID: 4, Status: restapi.CheckpointCompleted, NumSubtasks: 3, NumAcknowledgedSubtasks: 3, LatestAckTimestamp: 900, EndToEndDuration: 40}) {
		t.Errorf("vertex 1 of the completed checkpoint: %+v", v1)
	}
	running := withTasks(in, restapi.CheckpointStatistics{ID: 5, Status: restapi.CheckpointInProgress})
	if running.NumSubtasks != 5 || running.NumAcknowledgedSubtasks != 0 {
		t.Errorf("in progress: %d of %d subtasks, want 0 of 5", running.NumAcknowledgedSubtasks, running.NumSubtasks)
	}
}
