package jobmaster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/task"
)

// TestUploadQueue: a snapshot is written once its checkpoint's location is
// known, whichever of the two came first; a snapshot of a checkpoint that
// ended is declined; a task's end is reported after its snapshots.
//
// Events: "snap T ID" (task T's snapshot of checkpoint ID arrives), "fin T"
// (task T finished), "loc ID" (the location of ID), "end ID" (ID completed
// or was aborted). Each line of want is the steps that event released:
// "write T ID", "decline T ID", "finished T", or "-" for none.
func TestUploadQueue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   []string
	}{
		{"location first", []string{"loc 1", "snap 0 1"}, []string{"-", "write 0 1"}},
		{"barrier before the trigger", []string{"snap 1 1", "snap 2 1", "loc 1"}, []string{"-", "-", "write 1 1, write 2 1"}},
		{"a second trigger keeps the first location", []string{"loc 1", "loc 1", "snap 0 1"}, []string{"-", "-", "write 0 1"}},
		{"ended while waiting", []string{"snap 1 3", "end 3"}, []string{"-", "decline 1 3"}},
		{"arrives after its end", []string{"loc 2", "end 2", "snap 1 2"}, []string{"-", "-", "decline 1 2"}},
		{"a trigger after the end writes nothing", []string{"end 2", "loc 2", "snap 1 2"}, []string{"-", "-", "decline 1 2"}},
		{"finished waits behind its snapshot", []string{"snap 1 1", "fin 1", "fin 2", "loc 1"},
			[]string{"-", "-", "finished 2", "write 1 1, finished 1"}},
		{"finished waits for every snapshot of its task", []string{"snap 1 1", "snap 1 2", "fin 1", "loc 2", "end 1"},
			[]string{"-", "-", "-", "write 1 2", "decline 1 1, finished 1"}},
		{"other checkpoints are not held up", []string{"snap 1 5", "loc 6", "snap 1 6", "loc 5"},
			[]string{"-", "-", "write 1 6", "write 1 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newUploadQueue()
			locs := map[int64]*storage.Location{}
			for i, ev := range tc.events {
				var a, b int64
				var steps []step
				switch f := strings.Fields(ev); f[0] {
				case "snap":
					fmt.Sscan(f[1]+" "+f[2], &a, &b)
					steps = q.arrived(upload{task: checkpoint.TaskID{Vertex: 0, Subtask: int(a)}, snap: &task.Snapshot{ID: b}})
				case "fin":
					fmt.Sscan(f[1], &a)
					steps = q.arrived(upload{task: checkpoint.TaskID{Vertex: 0, Subtask: int(a)}, finished: true})
				case "loc":
					fmt.Sscan(f[1], &a)
					if locs[a] == nil {
						locs[a] = &storage.Location{}
					}
					steps = q.located(a, locs[a])
				case "end":
					fmt.Sscan(f[1], &a)
					steps = q.endedCheckpoint(a)
				}
				var got []string
				for _, st := range steps {
					switch {
					case st.u.finished:
						got = append(got, fmt.Sprintf("finished %d", st.u.task.Subtask))
					case st.loc == nil:
						got = append(got, fmt.Sprintf("decline %d %d", st.u.task.Subtask, st.u.snap.ID))
					default:
						if st.loc != locs[st.u.snap.ID] {
							t.Errorf("event %d %q: snapshot of %d written to another checkpoint's location", i, ev, st.u.snap.ID)
						}
						got = append(got, fmt.Sprintf("write %d %d", st.u.task.Subtask, st.u.snap.ID))
					}
				}
				g := strings.Join(got, ", ")
				if g == "" {
					g = "-"
				}
				if g != tc.want[i] {
					t.Errorf("event %d %q: got %q, want %q", i, ev, g, tc.want[i])
				}
			}
		})
	}
}

// TestUploadQueueRemembersBoundedEnds: the ended checkpoints remembered
// stay bounded, the newest kept.
func TestUploadQueueRemembersBoundedEnds(t *testing.T) {
	q := newUploadQueue()
	for id := int64(1); id <= 3*maxEnded; id++ {
		q.endedCheckpoint(id)
	}
	if len(q.ended) != maxEnded || !q.ended[3*maxEnded] || q.ended[2*maxEnded] {
		t.Fatalf("remembered %d ends (newest %v, %d %v)", len(q.ended), q.ended[3*maxEnded], 2*maxEnded, q.ended[2*maxEnded])
	}
	if steps := q.arrived(upload{snap: &task.Snapshot{ID: 3 * maxEnded}}); len(steps) != 1 || steps[0].loc != nil {
		t.Fatalf("a snapshot of a remembered end: %+v, want declined", steps)
	}
	if steps := q.arrived(upload{snap: &task.Snapshot{ID: 1}}); len(steps) != 0 || len(q.drain()) != 1 {
		t.Fatalf("a snapshot of a forgotten end: %+v, want it parked until the host ends", steps)
	}
}
