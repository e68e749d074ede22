package task

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
)

type countingSink struct{ n int }

func (s *countingSink) ProcessElement(int, int64) error { s.n++; return nil }
func (s *countingSink) Open() error                     { return nil }
func (s *countingSink) ProcessWatermark(int64) error    { return nil }
func (s *countingSink) Finish() error                   { return nil }
func (s *countingSink) Close() error                    { return nil }

type sinkFactory struct{ s *countingSink }

func (f sinkFactory) OutType() TypeOps                { return TypeOf[int]() }
func (f sinkFactory) SideOutputs() map[string]TypeOps { return nil }
func (f sinkFactory) Create(*Context, any, map[string]any) (Operator, []any, error) {
	return f.s, []any{Input[int](f.s)}, nil
}

// A buffer carrying an exchange failure (a remote channel's connection
// broke) fails the receiving task with that error, after the buffers
// delivered before it.
func TestFailedExchangeFailsTheTask(t *testing.T) {
	sink := &countingSink{}
	g := &graph.JobGraph{Name: "job",
		Nodes: []*graph.Node{
			{ID: 0, Kind: "source", Name: "src", Parallelism: 1, Impl: sinkFactory{&countingSink{}}}, // only its type is used
			{ID: 1, Kind: "sink", Name: "sink", Parallelism: 1, Inputs: 1, Impl: sinkFactory{sink}},
		},
		Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Rebalance}},
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	gate := exchange.NewLocalGate(2)
	gate.AddChannel(0)
	inbox, chans := gate.Build()
	tk, err := New(context.Background(), Spec{Job: "job", Plan: plan, Chain: plan.Chains[plan.ChainOf[1]],
		Clock: clock.NewManual(0), Inbox: inbox, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	broken := errors.New("connection lost")
	if !chans[0].TrySend(exchange.Buffer{Data: &Batch[int]{Values: []int{1, 2}, Ts: []int64{0, 0}}}) ||
		!chans[0].TrySend(exchange.Buffer{Err: broken}) {
		t.Fatal("no credit")
	}
	if err := tk.Run(); !errors.Is(err, broken) {
		t.Fatalf("task ended with %v, want the exchange's failure", err)
	}
	if sink.n != 2 {
		t.Fatalf("the sink got %d records before the failure, want 2", sink.n)
	}
}
