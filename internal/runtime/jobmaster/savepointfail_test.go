package jobmaster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/testwait"
)

// history records the checkpoint events a job reports, as the REST
// checkpoint history sees them.
type history struct {
	mu  sync.Mutex
	got []string
}

func (h *history) add(what string, st jobmaster.CheckpointStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, fmt.Sprintf("%s %d %s", what, st.ID, st.Kind))
}

func (h *history) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func (*history) StatusChanged(jobmaster.Status, int64, error)       {}
func (h *history) CheckpointTriggered(st jobmaster.CheckpointStats) { h.add("triggered", st) }
func (h *history) CheckpointCompleted(st jobmaster.CheckpointStats) { h.add("completed", st) }
func (h *history) CheckpointFailed(st jobmaster.CheckpointStats)    { h.add("failed", st) }
func (*history) Restored(jobmaster.RestoreStats)                    {}

// A savepoint whose target cannot hold it (below a regular file, an
// unknown scheme) fails before its barrier: the caller gets the cause, the
// history records it as a failed savepoint (never completed), nothing is
// written, and the next savepoint and checkpoint complete.
func TestSavepointWithNowhereToGoIsRecordedAsFailed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, wantErr string
	}{
		{"a target below a regular file", filepath.Join(file, "savepoints"), "not a directory"},
		{"an unknown scheme", "s3://bucket/savepoints", "s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history{}
			src := newStepSource()
			j, err := jobmaster.Start(context.Background(), stepPlan(t, src), jobmaster.Options{
				JobID: "sp", Listener: h,
				Checkpoints: &jobmaster.CheckpointOptions{Dir: filepath.Join(dir, "chk"), NumRetained: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { j.Cancel(); j.Wait() }()
			<-src.restored
			src.step(1)

			if p, err := j.TriggerSavepoint(tc.target); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("savepoint into %s: path %q, error %v; want an error naming %q", tc.target, p, err, tc.wantErr)
			}
			good := filepath.Join(dir, "savepoints-"+strings.ReplaceAll(tc.name, " ", "-"))
			p, err := j.TriggerSavepoint(good)
			if err != nil {
				t.Fatalf("savepoint after the failed one: %v", err)
			}
			if !strings.HasPrefix(p, good) {
				t.Fatalf("savepoint at %s, want it under %s", p, good)
			}
			if _, err := j.TriggerCheckpoint(checkpoint.Checkpoint); err != nil {
				t.Fatalf("checkpoint after the failed savepoint: %v", err)
			}
			want := []string{
				"triggered 1 savepoint", "failed 1 savepoint",
				"triggered 2 savepoint", "completed 2 savepoint",
				"triggered 3 checkpoint", "completed 3 checkpoint",
			}
			testwait.Eventually(t, 10*time.Second, "the history of the three", func() bool { return len(h.events()) >= len(want) })
			if got := h.events(); !slices.Equal(got, want) {
				t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A savepoint of a job without checkpointing, or without a directory,
// fails naming the keys that would have made it possible.
func TestSavepointErrorsNameTheirKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts jobmaster.Options
		want []string
	}{
		{"no checkpointing", jobmaster.Options{JobID: "sp"}, []string{"execution.checkpointing.interval", "execution.checkpointing.savepoint-dir"}},
		{"no directory", jobmaster.Options{JobID: "sp", Checkpoints: &jobmaster.CheckpointOptions{Dir: t.TempDir(), NumRetained: 1}},
			[]string{"no savepoint directory", "execution.checkpointing.savepoint-dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newStepSource()
			j, err := jobmaster.Start(context.Background(), stepPlan(t, src), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { j.Cancel(); j.Wait() }()
			<-src.restored
			_, err = j.TriggerSavepoint("")
			if err == nil {
				t.Fatal("savepoint succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "local:") || strings.Contains(err.Error(), "jobmaster: jobmaster:") {
				t.Errorf("%q: engine prefixes", err)
			}
		})
	}
}

// A job whose context ends (its JobManager shutting down, an
// ApplicationMaster killed through YARN) is suspended: its checkpoints stay
// for it to resume from. Only Cancel discards them (without retention).
func TestSuspendedJobKeepsItsCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancel   bool
		wantKept bool
	}{
		{"context ended: suspended", false, true},
		{"cancelled", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "chk")
			src := newStepSource()
			ctx, end := context.WithCancel(context.Background())
			defer end()
			j, err := jobmaster.Start(ctx, stepPlan(t, src), jobmaster.Options{JobID: "sus",
				Checkpoints: &jobmaster.CheckpointOptions{Dir: dir, NumRetained: 1}})
			if err != nil {
				t.Fatal(err)
			}
			<-src.restored
			src.step(1)
			p, err := j.TriggerCheckpoint(checkpoint.Checkpoint)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cancel {
				j.Cancel()
			} else {
				end()
			}
			j.Wait()
			_, statErr := os.Stat(p)
			if kept := statErr == nil; kept != tc.wantKept {
				t.Errorf("checkpoint %s kept: %v (%v), want %v", p, kept, statErr, tc.wantKept)
			}
		})
	}
}
