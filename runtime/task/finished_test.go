package task

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
)

type emptySource struct{}

func (emptySource) Open() error                     { return nil }
func (emptySource) ProcessWatermark(int64) error    { return nil }
func (emptySource) Finish() error                   { return nil }
func (emptySource) Close() error                    { return nil }
func (emptySource) EmitNext() (SourceStatus, error) { return EndOfInput, nil }
func (emptySource) Available() <-chan struct{}      { return nil }

type emptySourceFactory struct{}

func (emptySourceFactory) OutType() TypeOps                { return TypeOf[int]() }
func (emptySourceFactory) SideOutputs() map[string]TypeOps { return nil }
func (emptySourceFactory) Create(*Context, any, map[string]any) (Operator, []any, error) {
	return emptySource{}, nil, nil
}

// recordingSender keeps what a task sends; sending after the end of the
// partition is an error, as on a network channel.
type recordingSender struct {
	mu     sync.Mutex
	events []exchange.EventKind
}

func (s *recordingSender) Send(_ context.Context, b exchange.Buffer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.events); n > 0 && s.events[n-1] == exchange.EndOfPartition {
		return exchange.ErrClosed
	}
	if b.Data == nil {
		s.events = append(s.events, b.Event.Kind)
	}
	return nil
}

func (s *recordingSender) TrySend(b exchange.Buffer) bool {
	return s.Send(context.Background(), b) == nil
}

// A source that has finished and waits for the job's final commit ignores
// a checkpoint triggered meanwhile: its outputs have ended, and the
// coordinator counts it as finished.
func TestFinishedSourceIgnoresLateCheckpointTrigger(t *testing.T) {
	g := &graph.JobGraph{Name: "job",
		Nodes: []*graph.Node{
			{ID: 0, Kind: "source", Name: "src", Parallelism: 1, Impl: emptySourceFactory{}},
			{ID: 1, Kind: "sink", Name: "sink", Parallelism: 1, Inputs: 1, Impl: sinkFactory{&countingSink{}}},
		},
		Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Rebalance}},
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	out := &recordingSender{}
	final := make(chan struct{})
	finished := make(chan struct{})
	tk, err := New(context.Background(), Spec{Job: "job", Plan: plan, Chain: plan.Chains[plan.ChainOf[0]], Clock: clock.NewManual(0),
		Outputs: map[*graph.Edge][]exchange.Sender{g.Edges[0]: {out}},
		Checkpointing: &Checkpointing{Mode: checkpoint.ExactlyOnce, FinalCommit: final,
			OnSnapshot: func(s *Snapshot) { t.Errorf("a finished task took snapshot %d", s.ID) },
			OnDecline:  func(id int64, err error) { t.Errorf("a finished task declined checkpoint %d: %v", id, err) },
			OnFinished: func() { close(finished) }}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tk.Run() }()
	<-finished
	tk.TriggerCheckpoint(7, checkpoint.Checkpoint)
	close(final)
	if err := <-done; err != nil {
		t.Fatalf("the task failed: %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if n := len(out.events); n == 0 || out.events[n-1] != exchange.EndOfPartition {
		t.Fatalf("events sent: %v; want the end of the partition last", out.events)
	}
	for _, e := range out.events {
		if e == exchange.Barrier {
			t.Fatalf("a barrier was sent: %v", out.events)
		}
	}
}
