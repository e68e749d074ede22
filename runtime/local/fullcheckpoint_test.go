package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

const stepKeys = 200

// stepSource is a source subtask with keyed state on the job's backend.
// Open reports what it restored on restored; each step n received on
// steps writes keys [(n-1)*stepKeys, n*stepKeys) with values key+1, and is
// acknowledged on wrote (kick wakes the task up to look). It never ends:
// the test cancels its job.
type stepSource struct {
	ctx      *task.Context
	steps    chan int
	kick     chan struct{}
	wrote    chan struct{}
	restored chan map[int]int
	keyed    *state.Keyed[int]
	tab      *state.ValueTable[int, state.Void, int]
}

func newStepSource() *stepSource {
	return &stepSource{steps: make(chan int, 1), kick: make(chan struct{}, 1), wrote: make(chan struct{}), restored: make(chan map[int]int, 1)}
}

// step has the source write step and waits until it has.
func (s *stepSource) step(step int) {
	s.steps <- step
	select {
	case s.kick <- struct{}{}:
	default: // a wake-up is pending
	}
	<-s.wrote
}

func (s *stepSource) Open() error {
	k, err := state.NewKeyedWithBackend[int](s.ctx.MaxParallelism, s.ctx.KeyGroups, s.ctx.Clock, s.ctx.StateBackend)
	if err != nil {
		return err
	}
	if err := s.ctx.RegisterKeyedState(k); err != nil {
		return err
	}
	s.keyed = k
	if s.tab, err = state.NewValueTable[int, state.Void, int](k, "v", state.TTL{}); err != nil {
		return err
	}
	got := map[int]int{}
	err = s.tab.Entries(func(key int, _ state.Void, v int) error { got[key] = v; return nil })
	s.restored <- got
	return err
}

func (s *stepSource) EmitNext() (task.SourceStatus, error) {
	select {
	case step := <-s.steps:
		for k := (step - 1) * stepKeys; k < step*stepKeys; k++ {
			s.keyed.SetCurrentKey(k)
			if err := s.tab.Put(state.Void{}, k+1); err != nil {
				return task.EndOfInput, err
			}
		}
		s.keyed.ClearCurrentKey()
		s.wrote <- struct{}{}
	default:
	}
	return task.NothingAvailable, nil
}

func (s *stepSource) Available() <-chan struct{}   { return s.kick }
func (s *stepSource) ProcessWatermark(int64) error { return nil }
func (s *stepSource) Finish() error                { return nil }
func (s *stepSource) Close() error                 { return nil }

type stepSourceFactory struct{ src *stepSource }

func (f stepSourceFactory) OutType() task.TypeOps                { return task.TypeOf[int]() }
func (f stepSourceFactory) SideOutputs() map[string]task.TypeOps { return nil }
func (f stepSourceFactory) Create(ctx *task.Context, _ any, _ map[string]any) (task.Operator, []any, error) {
	f.src.ctx = ctx
	return f.src, nil, nil
}

func stepPlan(t *testing.T, src *stepSource) *graph.Plan {
	t.Helper()
	g := &graph.JobGraph{Name: "steps", Nodes: []*graph.Node{{ID: 0, Kind: "source", Name: "steps", UID: "steps", Parallelism: 1, Impl: stepSourceFactory{src}}}}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestFullCheckpoints takes checkpoints of the given kinds, each after a
// step of the source, and checks which shared files each references:
// with incremental pebble checkpoints a full one uploads all its SSTs again
// and references none of the files of the checkpoints before it, the
// checkpoints after it reference its copies, and once the older
// checkpoints are discarded (num-retained 1) their files are gone. The
// last checkpoint restores, into either backend.
func TestFullCheckpoints(t *testing.T) {
	C, F := checkpoint.Checkpoint, checkpoint.FullCheckpoint
	for _, tc := range []struct {
		name        string
		pebble      bool
		incremental bool
		kinds       []checkpoint.Kind
	}{
		{"pebble incremental, full after incremental ones", true, true, []checkpoint.Kind{C, C, F}},
		{"pebble incremental, incremental after a full one", true, true, []checkpoint.Kind{C, C, F, C}},
		{"pebble incremental, full ones in a row", true, true, []checkpoint.Kind{C, F, F, C}},
		{"pebble incremental, full first", true, true, []checkpoint.Kind{F, C}},
		{"pebble, not incremental", true, false, []checkpoint.Kind{C, F, C}},
		{"hashmap, incremental configured", false, true, []checkpoint.Kind{C, F, C}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			backend := func() state.Backend {
				if tc.pebble {
					return &state.PebbleBackend{Dir: filepath.Join(dir, "pebble")}
				}
				return nil
			}
			ckDir := filepath.Join(dir, "chk")
			src := newStepSource()
			j, err := jobmaster.Start(context.Background(), stepPlan(t, src), jobmaster.Options{
				JobID: "full", StateBackend: backend(),
				Checkpoints: &jobmaster.CheckpointOptions{Dir: ckDir, NumRetained: 1, RetainOnCancellation: true, Incremental: tc.incremental},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { j.Cancel(); j.Wait() }()
			if got := <-src.restored; len(got) != 0 {
				t.Fatalf("a new job restored %d entries", len(got))
			}
			shared := map[int][]string{} // by checkpoint ID
			var last string
			for i, kind := range tc.kinds {
				id := i + 1
				src.step(id)
				p, err := j.TriggerCheckpoint(kind)
				if err != nil {
					t.Fatalf("checkpoint %d (%s): %v", id, kind, err)
				}
				if want := filepath.Join(ckDir, "full", fmt.Sprintf("chk-%d", id)); p != want {
					t.Fatalf("checkpoint %d at %s, want %s", id, p, want)
				}
				md, err := storage.ReadMetadata(fs.Local{}, filepath.Join(p, storage.MetadataFileName))
				if err != nil {
					t.Fatal(err)
				}
				shared[id], last = md.Shared, p
				checkShared(t, tc.pebble && tc.incremental, tc.kinds[:id], shared)
			}
			j.Cancel()
			if _, err := j.Wait(); !jobmaster.IsCancelled(err) {
				t.Fatalf("cancelled job: %v", err)
			}
			// Only the files of the retained (last) checkpoint are left
			// (retention runs after the trigger returned, before the job
			// ended).
			left, _ := filepath.Glob(filepath.Join(ckDir, "full", storage.SharedDirName, "*"))
			var want []string
			for _, h := range shared[len(tc.kinds)] {
				want = append(want, filepath.Join(ckDir, "full", strings.TrimPrefix(h, "../")))
			}
			slices.Sort(left)
			if !slices.Equal(left, want) {
				t.Errorf("shared files left: %q, want those of the retained checkpoint: %q", left, want)
			}

			// The last checkpoint restores, into either backend.
			for _, b := range []state.Backend{backend(), nil} {
				src := newStepSource()
				r, err := jobmaster.Start(context.Background(), stepPlan(t, src), jobmaster.Options{StateBackend: b, RestoreFrom: last})
				if err != nil {
					t.Fatal(err)
				}
				got := <-src.restored
				r.Cancel()
				r.Wait()
				want := len(tc.kinds) * stepKeys
				bad := 0
				for k, v := range got {
					if k < 0 || k >= want || v != k+1 {
						bad++
					}
				}
				if len(got) != want || bad > 0 {
					t.Errorf("restoring %s into %T: %d entries (%d wrong), want %d", last, b, len(got), bad, want)
				}
			}
		})
	}
}

// checkShared checks the shared files of the last of the checkpoints of
// kinds (IDs from 1), given those of all of them.
func checkShared(t *testing.T, incremental bool, kinds []checkpoint.Kind, shared map[int][]string) {
	t.Helper()
	id := len(kinds)
	hs := shared[id]
	if !incremental {
		if len(hs) != 0 {
			t.Errorf("checkpoint %d of a job without incremental checkpoints references shared files %q", id, hs)
		}
		return
	}
	if len(hs) == 0 {
		t.Fatalf("incremental checkpoint %d references no shared files", id)
	}
	// The checkpoints before the last full one (itself included, if it
	// is the last) share nothing with this one.
	full := 0
	for i := len(kinds) - 1; i >= 0; i-- {
		if kinds[i] == checkpoint.FullCheckpoint {
			full = i + 1
			break
		}
	}
	for before := 1; before < full; before++ {
		if common := intersect(hs, shared[before]); len(common) > 0 {
			t.Errorf("checkpoint %d (%s) references %q of checkpoint %d, before full checkpoint %d", id, kinds[id-1], common, before, full)
		}
	}
	// Whether an incremental checkpoint shares files with the one before
	// it depends on Pebble's compactions; TestSnapshotWriterSharing checks
	// the rule.
	if kinds[id-1] == checkpoint.FullCheckpoint {
		for _, h := range hs {
			if !strings.HasPrefix(h, fmt.Sprintf("../shared/full-%d-", id)) {
				t.Errorf("full checkpoint %d references %q, not a file it uploaded", id, h)
			}
		}
	}
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestResumeFromAnotherJobsCheckpoint resumes a job from a retained
// incremental checkpoint of another job (sluice run -s): its own
// checkpoints must not reference the other job's shared files, whose
// owner may discard them, but upload them into its own storage; a third
// job restores from them.
func TestResumeFromAnotherJobsCheckpoint(t *testing.T) {
	for _, kind := range []checkpoint.Kind{checkpoint.Checkpoint, checkpoint.FullCheckpoint} {
		t.Run(kind.String(), func(t *testing.T) {
			dir := t.TempDir()
			backend := &state.PebbleBackend{Dir: filepath.Join(dir, "pebble")}
			// run runs job id from restore, takes a checkpoint of kind
			// at once (the restored files are live: no step was
			// compacted with them) and one after each of steps, and
			// returns the last one's path.
			run := func(id, restore string, steps []int, wantRestored int) string {
				t.Helper()
				src := newStepSource()
				j, err := jobmaster.Start(context.Background(), stepPlan(t, src), jobmaster.Options{JobID: id, StateBackend: backend, RestoreFrom: restore,
					Checkpoints: &jobmaster.CheckpointOptions{Dir: filepath.Join(dir, "chk-"+id), NumRetained: 1, RetainOnCancellation: true, Incremental: true}})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { _, err := j.Wait(); done <- err }()
				select {
				case got := <-src.restored:
					if len(got) != wantRestored {
						t.Errorf("job %s restored %d entries from %s, want %d", id, len(got), restore, wantRestored)
					}
				case err := <-done:
					t.Fatalf("job %s ended: %v", id, err)
				}
				p, err := j.TriggerCheckpoint(kind)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range steps {
					src.step(s)
					if p, err = j.TriggerCheckpoint(kind); err != nil {
						t.Fatal(err)
					}
				}
				j.Cancel()
				<-done
				return p
			}
			a := run("a", "", []int{1, 2}, 0)
			b := run("b", a, nil, 2*stepKeys)
			md, err := storage.ReadMetadata(fs.Local{}, filepath.Join(b, storage.MetadataFileName))
			if err != nil {
				t.Fatal(err)
			}
			if len(md.Shared) == 0 {
				t.Fatalf("job b's checkpoint references no shared files")
			}
			if err := storage.CheckFiles(fs.Local{}, filepath.Join(b, storage.MetadataFileName), md.Shared); err != nil {
				t.Errorf("job b's checkpoint references files it does not have: %v", err)
			}
			// Job a's checkpoints go: b's must not need them.
			if err := os.RemoveAll(filepath.Join(dir, "chk-a")); err != nil {
				t.Fatal(err)
			}
			run("c", b, nil, 2*stepKeys)
		})
	}
}
