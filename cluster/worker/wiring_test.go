package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/netexchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// recs is the factory of a test node emitting records of type T; the
// wiring only asks it for its type.
type recs[T any] struct{}

func (recs[T]) OutType() task.TypeOps                { return task.TypeOf[T]() }
func (recs[T]) SideOutputs() map[string]task.TypeOps { return nil }
func (recs[T]) Create(*task.Context, any, map[string]any) (task.Operator, []any, error) {
	return nil, nil, errors.New("test node: not run")
}

// graphBuilder builds test graphs node by node.
type graphBuilder struct{ g *graph.JobGraph }

func newGraph() *graphBuilder { return &graphBuilder{g: &graph.JobGraph{Name: "wiring"}} }

// node adds a node with the given parallelism and inputs emitting T. Every
// node heads its own chain, so each edge is an exchange.
func node[T any](b *graphBuilder, name string, parallelism, inputs int) graph.NodeID {
	id := graph.NodeID(len(b.g.Nodes))
	b.g.Nodes = append(b.g.Nodes, &graph.Node{ID: id, Kind: "test", Name: name, Parallelism: parallelism,
		Chaining: graph.ChainHead, OutType: fmt.Sprintf("%T", *new(T)), Inputs: inputs, Impl: recs[T]{}})
	return id
}

func (b *graphBuilder) edge(from, to graph.NodeID, input int, p graph.Partitioning) *graphBuilder {
	b.g.Edges = append(b.g.Edges, &graph.Edge{From: from, To: to, Input: input, Partitioning: p})
	return b
}

func (b *graphBuilder) plan(t *testing.T) *graph.Plan {
	t.Helper()
	p, err := graph.BuildPlan(b.g)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Test graphs: each exchange pattern, unions of several inputs with
// upstreams of other parallelisms, and a two-input operator whose second
// input is declared first (the gate orders channels by input).
func hashGraph() *graphBuilder {
	b := newGraph()
	src := node[int64](b, "src", 2, 0)
	return b.edge(src, node[int64](b, "agg", 3, 1), 0, graph.Hash)
}

func forwardRebalanceGraph() *graphBuilder {
	b := newGraph()
	src := node[int64](b, "src", 3, 0)
	m := node[int64](b, "map", 3, 1)
	return b.edge(src, m, 0, graph.Forward).edge(m, node[int64](b, "sink", 2, 1), 0, graph.Rebalance)
}

func unionGraph() *graphBuilder {
	b := newGraph()
	a := node[int64](b, "a", 3, 0)
	r := node[int64](b, "b", 2, 0)
	c := node[int64](b, "c", 3, 0)
	d := node[int64](b, "d", 2, 0)
	u := node[int64](b, "union", 3, 1)
	return b.edge(a, u, 0, graph.Forward).edge(r, u, 0, graph.Rebalance).edge(c, u, 0, graph.Broadcast).edge(d, u, 0, graph.Global)
}

func twoInputGraph() *graphBuilder {
	b := newGraph()
	rules := node[string](b, "rules", 2, 0)
	events := node[int64](b, "events", 3, 0)
	co := node[int64](b, "co", 3, 2)
	return b.edge(rules, co, 1, graph.Broadcast).edge(events, co, 0, graph.Hash)
}

func TestChannelOf(t *testing.T) {
	type want struct {
		to, edge, upstream int // downstream subtask, index in g.Edges, upstream subtask
		channel            int
	}
	for _, tc := range []struct {
		name     string
		graph    func() *graphBuilder
		chain    int // the receiving chain
		channels int // its channels
		want     []want
	}{
		{"hash: one channel per upstream subtask", hashGraph, 1, 2, []want{
			{0, 0, 0, 0}, {0, 0, 1, 1}, {2, 0, 0, 0}, {2, 0, 1, 1},
		}},
		{"forward: one channel", forwardRebalanceGraph, 1, 1, []want{
			{0, 0, 0, 0}, {2, 0, 2, 0},
		}},
		{"rebalance from 3 into 2", forwardRebalanceGraph, 2, 3, []want{
			{0, 1, 0, 0}, {0, 1, 2, 2}, {1, 1, 1, 1},
		}},
		// Union subtask s: a's forward channel, then b's 2, c's 3, d's 2.
		{"union of forward, rebalance, broadcast and global", unionGraph, 4, 8, []want{
			{1, 0, 1, 0},
			{1, 1, 0, 1}, {1, 1, 1, 2},
			{1, 2, 0, 3}, {1, 2, 1, 4}, {1, 2, 2, 5},
			{1, 3, 0, 6}, {1, 3, 1, 7},
			{0, 0, 0, 0}, {2, 3, 1, 7},
		}},
		// Input 0 (events, hash from 3) comes first though declared last.
		{"two inputs ordered by input", twoInputGraph, 2, 5, []want{
			{0, 1, 0, 0}, {0, 1, 2, 2},
			{0, 0, 0, 3}, {2, 0, 1, 4},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.graph().plan(t)
			c := p.Chains[tc.chain]
			for _, w := range tc.want {
				e := p.Graph.Edges[w.edge]
				if got := channelOf(p, c, w.to, e, w.upstream); got != w.channel {
					t.Errorf("channel of %s subtask %d → %s subtask %d: %d, want %d",
						p.Graph.Node(e.From).Name, w.upstream, c.Name, w.to, got, w.channel)
				}
			}
			if n := channelCount(p, c); n != tc.channels {
				t.Errorf("%s has %d channels, want %d", c.Name, n, tc.channels)
			}
		})
	}
}

// route is one (upstream subtask, edge, downstream subtask) pair, which
// the wiring must give exactly one channel.
type route struct {
	from checkpoint.TaskID
	edge int // index in g.Edges
	to   int
}

// arrival is where a route's buffers arrived.
type arrival struct {
	at      checkpoint.TaskID
	channel int
	input   int
}

// deliveries sends, on every sender the wiring gave every task, one batch
// naming its route and an end of partition, then reads every inbox until
// all its channels ended, and returns where each route arrived.
func deliveries(t *testing.T, ctx context.Context, p *graph.Plan, wire func(checkpoint.TaskID) jobmaster.WireFunc) map[route]arrival {
	t.Helper()
	g := p.Graph
	var routes []route
	for _, c := range p.Chains {
		for s := range c.Parallelism {
			from := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
			_, _, outputs, err := wire(from)(c, s)
			if err != nil {
				t.Fatal(err)
			}
			for ei, e := range g.Edges {
				if p.ChainOf[e.From] != c.ID {
					continue
				}
				senders := outputs[e]
				down := p.Chains[p.ChainOf[e.To]].Parallelism
				if e.Partitioning == graph.Forward {
					down = 1
				}
				if len(senders) != down {
					t.Fatalf("task %s has %d senders on its edge to %s, want %d", from, len(senders), g.Node(e.To).Name, down)
				}
				for i, snd := range senders {
					to := i
					if e.Partitioning == graph.Forward {
						to = s
					}
					if snd == nil {
						t.Fatalf("task %s has no sender to subtask %d of %s", from, to, g.Node(e.To).Name)
					}
					id := len(routes)
					routes = append(routes, route{from, ei, to})
					var data any
					if _, ok := g.Node(e.From).Impl.(recs[string]); ok {
						data = &task.Batch[string]{Values: []string{strconv.Itoa(id)}, Ts: []int64{0}}
					} else {
						data = &task.Batch[int64]{Values: []int64{int64(id)}, Ts: []int64{0}}
					}
					for _, b := range []exchange.Buffer{{Data: data}, {Event: exchange.Event{Kind: exchange.EndOfPartition}}} {
						if err := snd.Send(ctx, b); err != nil {
							t.Fatalf("task %s sending to subtask %d of %s: %v", from, to, g.Node(e.To).Name, err)
						}
					}
				}
			}
		}
	}
	got := map[route]arrival{}
	for _, c := range p.Chains {
		for s := range c.Parallelism {
			at := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
			inbox, nchans, _, err := wire(at)(c, s)
			if err != nil {
				t.Fatal(err)
			}
			if inbox == nil {
				continue
			}
			ended := map[int]bool{}
			for len(ended) < nchans {
				var b exchange.Buffer
				select {
				case b = <-inbox.C():
				case <-ctx.Done():
					t.Fatalf("task %s: %d of %d channels ended", at, len(ended), nchans)
				}
				if b.Err != nil {
					t.Fatalf("task %s: %v", at, b.Err)
				}
				if b.Channel < 0 || b.Channel >= nchans {
					t.Fatalf("task %s got a buffer on channel %d of %d", at, b.Channel, nchans)
				}
				var id int
				switch d := b.Data.(type) {
				case nil:
					if ended[b.Channel] {
						t.Fatalf("task %s: channel %d ended twice", at, b.Channel)
					}
					ended[b.Channel] = true
				case *task.Batch[int64]:
					id = int(d.Values[0])
				case *task.Batch[string]:
					id, _ = strconv.Atoi(d.Values[0])
				default:
					t.Fatalf("task %s got %T", at, b.Data)
				}
				if b.Data != nil {
					r := routes[id]
					if prev, dup := got[r]; dup {
						t.Fatalf("route %+v arrived twice: %+v and channel %d of %s", r, prev, b.Channel, at)
					}
					got[r] = arrival{at, b.Channel, b.Input}
				}
				b.Release()
			}
		}
	}
	if len(got) != len(routes) {
		t.Fatalf("%d of %d routes arrived", len(got), len(routes))
	}
	return got
}

// TestWiringMatchesLocalWiring: however the tasks are spread over
// workers, every route from an upstream subtask to a downstream one
// arrives at the channel and input that internal/runtime/jobmaster's all-in-process
// wiring gives it, through local channels within a worker and network
// channels between workers.
func TestWiringMatchesLocalWiring(t *testing.T) {
	placements := []struct {
		name    string
		workers int
		place   func(checkpoint.TaskID) int
	}{
		{"one worker", 1, func(checkpoint.TaskID) int { return 0 }},
		// Slot sharing, as a cluster deploys: subtask k of every chain in
		// slot k.
		{"a worker per slot", 3, func(t checkpoint.TaskID) int { return t.Subtask }},
		{"a worker per chain", 5, func(t checkpoint.TaskID) int { return t.Vertex }},
		{"scattered", 3, func(t checkpoint.TaskID) int { return (2*t.Vertex + t.Subtask) % 3 }},
	}
	for _, gc := range []struct {
		name  string
		graph func() *graphBuilder
	}{
		{"hash", hashGraph},
		{"forward and rebalance", forwardRebalanceGraph},
		{"union", unionGraph},
		{"two inputs", twoInputGraph},
	} {
		for _, pc := range placements {
			t.Run(gc.name+"/"+pc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				p := gc.graph().plan(t)
				inProcess := jobmaster.LocalWiring(p, credits)
				want := deliveries(t, ctx, p, func(checkpoint.TaskID) jobmaster.WireFunc { return inProcess })

				log := slog.New(slog.NewTextHandler(tWriter{t}, nil))
				workers := make([]*worker, pc.workers)
				peers := map[checkpoint.TaskID]string{}
				for i := range workers {
					ep, err := netexchange.Listen(netexchange.Config{Log: log})
					if err != nil {
						t.Fatal(err)
					}
					defer ep.Close()
					workers[i] = &worker{plan: p, dep: &deployment.WorkerDeployment{JobID: "job", Attempt: 1}, ep: ep, here: map[checkpoint.TaskID]bool{}}
				}
				for _, c := range p.Chains {
					for s := range c.Parallelism {
						id := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
						w := workers[pc.place(id)%pc.workers]
						w.here[id] = true
						peers[id] = w.ep.Addr()
					}
				}
				wires := make([]jobmaster.WireFunc, len(workers))
				for i, w := range workers {
					wire, closers, err := w.wiring(ctx, peers)
					for _, c := range slices.Backward(closers) {
						defer c()
					}
					if err != nil {
						t.Fatalf("worker %d: %v", i, err)
					}
					wires[i] = wire
				}
				got := deliveries(t, ctx, p, func(id checkpoint.TaskID) jobmaster.WireFunc { return wires[pc.place(id)%pc.workers] })
				for _, r := range slices.SortedFunc(maps.Keys(want), cmpRoute) {
					if got[r] != want[r] {
						e := p.Graph.Edges[r.edge]
						t.Errorf("%s subtask %d → %s subtask %d (%s): arrived at %+v, want %+v", p.Graph.Node(e.From).Name, r.from.Subtask,
							p.Graph.Node(e.To).Name, r.to, e.Partitioning, got[r], want[r])
					}
				}
			})
		}
	}
}

func cmpRoute(a, b route) int {
	for _, d := range []int{a.edge - b.edge, a.from.Subtask - b.from.Subtask, a.to - b.to} {
		if d != 0 {
			return d
		}
	}
	return 0
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
