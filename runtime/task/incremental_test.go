package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/state"
)

// keyedSource is a source subtask with keyed state: Open registers it (and
// reports what it restored), the first EmitNext writes n keys, then it
// waits until end is closed.
type keyedSource struct {
	ctx      *Context
	n        int
	end      chan struct{}
	restored chan map[int]string
	keyed    *state.Keyed[int]
	wrote    bool
	// written is closed once the state is written: checkpoints triggered
	// earlier would find it empty.
	written chan struct{}
}

func (s *keyedSource) Open() error {
	k, err := state.NewKeyedWithBackend[int](s.ctx.MaxParallelism, s.ctx.KeyGroups, s.ctx.Clock, s.ctx.StateBackend)
	if err != nil {
		return err
	}
	if err := s.ctx.RegisterKeyedState(k); err != nil {
		return err
	}
	s.keyed = k
	tab, err := state.NewValueTable[int, state.Void, string](k, "v", state.TTL{})
	if err != nil {
		return err
	}
	got := map[int]string{}
	err = tab.Entries(func(key int, _ state.Void, v string) error { got[key] = v; return nil })
	s.restored <- got
	return err
}

func (s *keyedSource) EmitNext() (SourceStatus, error) {
	if !s.wrote {
		s.wrote = true
		tab, err := state.NewValueTable[int, state.Void, string](s.keyed, "v", state.TTL{})
		if err != nil {
			return EndOfInput, err
		}
		for i := 0; i < s.n; i++ {
			s.keyed.SetCurrentKey(i)
			if err := tab.Put(state.Void{}, fmt.Sprint("value-", i)); err != nil {
				return EndOfInput, err
			}
		}
		s.keyed.ClearCurrentKey()
		close(s.written)
	}
	select {
	case <-s.end:
		return EndOfInput, nil
	default:
		return NothingAvailable, nil
	}
}

func (s *keyedSource) Available() <-chan struct{}   { return s.end }
func (s *keyedSource) ProcessWatermark(int64) error { return nil }
func (s *keyedSource) Finish() error                { return nil }
func (s *keyedSource) Close() error                 { return nil }

type keyedSourceFactory struct{ src *keyedSource }

func (f keyedSourceFactory) OutType() TypeOps                { return TypeOf[int]() }
func (f keyedSourceFactory) SideOutputs() map[string]TypeOps { return nil }
func (f keyedSourceFactory) Create(ctx *Context, _ any, _ map[string]any) (Operator, []any, error) {
	f.src.ctx = ctx
	return f.src, nil, nil
}

// runKeyedSource runs a task of one keyedSource writing n keys, triggers
// the checkpoints of kinds, hands each snapshot to onSnapshot on the task
// goroutine (the uploader's side), and returns what Open restored.
func runKeyedSource(t *testing.T, backend state.Backend, n int, restore *Restore, kinds []checkpoint.Kind, onSnapshot func(*Snapshot)) map[int]string {
	t.Helper()
	src := &keyedSource{n: n, end: make(chan struct{}), restored: make(chan map[int]string, 1), written: make(chan struct{})}
	g := &graph.JobGraph{Name: "job", Nodes: []*graph.Node{{ID: 0, Kind: "source", Name: "src", Parallelism: 1, Impl: keyedSourceFactory{src}}}}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	snapped := make(chan error, 1)
	tk, err := New(context.Background(), Spec{
		Job: "job", Plan: plan, Chain: plan.Chains[0], Clock: clock.NewManual(0),
		StateBackend: backend, Restore: restore,
		Checkpointing: &Checkpointing{
			Incremental: true,
			OnSnapshot:  func(s *Snapshot) { onSnapshot(s); snapped <- nil },
			OnDecline:   func(id int64, err error) { snapped <- fmt.Errorf("checkpoint %d declined: %w", id, err) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tk.Run() }()
	got := <-src.restored
	<-src.written
	for i, kind := range kinds {
		tk.TriggerCheckpoint(int64(i+1), kind)
		if err := <-snapped; err != nil {
			t.Fatal(err)
		}
	}
	close(src.end)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return got
}

func TestIncrementalKeyedSnapshotsThroughTheTask(t *testing.T) {
	dir, copies := t.TempDir(), t.TempDir()
	backend := &state.PebbleBackend{Dir: dir}
	files := map[string]string{}
	var manifests [][]byte
	var savepoint map[int][]byte
	runKeyedSource(t, backend, 500, nil, []checkpoint.Kind{checkpoint.Checkpoint, checkpoint.Savepoint}, func(s *Snapshot) {
		op := s.Operators[0]
		if op != nil {
			// The uploader's part: encode what the task froze.
			if err := op.ResolveKeyGroups(); err != nil {
				t.Error(err)
				return
			}
		}
		if s.Kind == checkpoint.Savepoint {
			if op == nil || op.Manifests != nil || len(op.KeyGroups) == 0 {
				t.Errorf("savepoint: want canonical key groups, got %+v", op)
				return
			}
			savepoint = op.KeyGroups
			return
		}
		if op == nil || len(op.Manifests) != 1 || len(op.Files) == 0 || op.KeyGroups != nil || op.ReleaseFiles == nil {
			t.Errorf("checkpoint: want files and a manifest, got %+v", op)
			return
		}
		// The uploader's side: copy the files, then release them.
		for _, f := range op.Files {
			data, err := os.ReadFile(f.Path)
			if err != nil {
				t.Error(err)
			}
			p := filepath.Join(copies, f.Name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Error(err)
			}
			files[f.Name] = p
		}
		manifests = op.Manifests
		op.ReleaseFiles()
		for _, f := range op.Files {
			if _, err := os.Stat(f.Path); !os.IsNotExist(err) {
				t.Errorf("released file %s: %v", f.Path, err)
			}
		}
	})
	// The task closed the keyed state with its operator.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("working directory left after the task ended: %s", entries[0].Name())
	}
	for _, c := range []struct {
		name    string
		restore *OperatorRestore
	}{
		{"incremental checkpoint", &OperatorRestore{Manifests: manifests, Files: files}},
		{"savepoint", &OperatorRestore{KeyGroups: savepoint}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, b := range []state.Backend{backend, nil} {
				got := runKeyedSource(t, b, 0, &Restore{Operators: map[graph.NodeID]*OperatorRestore{0: c.restore}}, nil, nil)
				if len(got) != 500 || got[0] != "value-0" || got[499] != "value-499" {
					t.Errorf("backend %v: restored %d entries", b, len(got))
				}
			}
		})
	}
}
