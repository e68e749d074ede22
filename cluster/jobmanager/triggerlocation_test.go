package jobmanager

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/testwait"
)

// TestTriggerTellsEveryWorkerWhereTheCheckpointGoes: a checkpoint is
// triggered at the sources still running, and every worker of the attempt
// learns its location, also one whose sources have all finished: its
// tasks downstream take the checkpoint when the barrier reaches them, and
// their snapshots wait for the location (a worker left without it held
// its snapshot, and the end of its tasks behind it, for ever).
func TestTriggerTellsEveryWorkerWhereTheCheckpointGoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks []checkpoint.TaskID
		// want are the tasks each TaskManager's trigger names.
		want map[string][]string
	}{
		{name: "every source running",
			tasks: []checkpoint.TaskID{{Vertex: 0, Subtask: 0}, {Vertex: 0, Subtask: 1}},
			want:  map[string][]string{"tm-a": {"0.0"}, "tm-b": {"0.1"}}},
		{name: "tm-a's source finished",
			tasks: []checkpoint.TaskID{{Vertex: 0, Subtask: 1}},
			want:  map[string][]string{"tm-a": nil, "tm-b": {"0.1"}}},
		{name: "tm-b's source finished",
			tasks: []checkpoint.TaskID{{Vertex: 0, Subtask: 0}},
			want:  map[string][]string{"tm-a": {"0.0"}, "tm-b": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newTestJob(t, func(tm string) string { return "127.0.0.1:1" })
			dir := t.TempDir()
			loc, err := storage.OpenLocation(fs.Local{}, storage.KindCheckpoint, 7, dir+"/chk-7")
			if err != nil {
				t.Fatal(err)
			}
			j.a.TriggerCheckpoint(7, checkpoint.Checkpoint, tc.tasks, loc)
			for tm, want := range tc.want {
				tr := awaitTrigger(t, j.sessions[tm], 7)
				if tr.Location == "" || tr.LocationKind != int32(storage.KindCheckpoint) {
					t.Errorf("%s: trigger of checkpoint 7 has location %q (kind %d), want the checkpoint's", tm, tr.Location, tr.LocationKind)
				}
				var got []string
				for _, k := range tr.Tasks {
					got = append(got, taskID(k).String())
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: trigger of checkpoint 7 names tasks %v, want %v", tm, got, want)
				}
			}
		})
	}
}

// awaitTrigger waits for the session to have sent the trigger of
// checkpoint id, and returns it.
func awaitTrigger(t *testing.T, r *runningSession, id int64) *clusterpb.TriggerCheckpoint {
	t.Helper()
	var tr *clusterpb.TriggerCheckpoint
	testwait.Eventually(t, 10*time.Second, fmt.Sprintf("the session of %s to send the trigger of checkpoint %d", r.s, id), func() bool {
		r.stream.mu.Lock()
		defer r.stream.mu.Unlock()
		for _, m := range r.stream.out {
			if got := m.GetTrigger(); got != nil && got.CheckpointId == id {
				tr = got
				return true
			}
		}
		return false
	})
	return tr
}
