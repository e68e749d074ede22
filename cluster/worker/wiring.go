package worker

import (
	"context"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/netexchange"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/runtime/task"
)

// credits is the number of buffers in flight per channel.
const credits = 4

// channelOf is the index of the channel from upstream subtask u over edge
// e at the gate of subtask s of chain c: the gate's channels are ordered
// by the head's in-edges, then by upstream subtask (one channel for a
// forward edge), the order internal/runtime/jobmaster wires in too.
func channelOf(plan *graph.Plan, c *graph.Chain, s int, e *graph.Edge, u int) int {
	i := 0
	for _, in := range plan.Graph.InEdges(c.Nodes[0]) {
		up := plan.Chains[plan.ChainOf[in.From]]
		if in.Partitioning == graph.Forward {
			if in == e {
				return i
			}
			i++
			continue
		}
		if in == e {
			return i + u
		}
		i += up.Parallelism
	}
	panic(fmt.Sprintf("worker: edge %d→%d does not enter chain %d", e.From, e.To, c.ID)) // caller bug
}

// wiring builds the gates of the tasks here and the senders from them to
// every downstream subtask: in-process channels between tasks of this
// worker, network channels to the others. It returns the WireFunc of the
// tasks here and what to close when the attempt ends, and keeps the
// network gates and senders of the tasks here (w.netIn, w.netOut).
func (w *worker) wiring(ctx context.Context, peers map[checkpoint.TaskID]string) (jobmaster.WireFunc, []func(), error) {
	plan, g := w.plan, w.plan.Graph
	scope := fmt.Sprintf("%s/%d", w.dep.JobID, w.dep.Attempt)
	w.netIn, w.netOut = map[checkpoint.TaskID]*netexchange.Gate{}, map[checkpoint.TaskID][]*netexchange.Sender{}
	var closers []func()
	gateKey := func(t checkpoint.TaskID) netexchange.GateKey {
		return netexchange.GateKey{Scope: scope, Chain: t.Vertex, Subtask: t.Subtask}
	}
	codecs := map[*graph.Edge]task.BatchCodec{}
	codecOf := func(e *graph.Edge) (task.BatchCodec, error) {
		if c, ok := codecs[e]; ok {
			return c, nil
		}
		c, err := task.EdgeType(g, e).BatchCodec()
		if err != nil {
			return nil, &restart.Unrecoverable{Err: fmt.Errorf("worker: the records from %s to %s cannot cross the network: %w",
				g.Node(e.From).Label(), g.Node(e.To).Label(), err)}
		}
		codecs[e] = c
		return c, nil
	}
	upstreams := func(c *graph.Chain, s int, e *graph.Edge) []int {
		if e.Partitioning == graph.Forward {
			return []int{s}
		}
		up := plan.Chains[plan.ChainOf[e.From]]
		out := make([]int, up.Parallelism)
		for u := range out {
			out[u] = u
		}
		return out
	}
	type outKey struct {
		t checkpoint.TaskID
		e *graph.Edge
	}
	inboxes := map[checkpoint.TaskID]exchange.Inbox{}
	nchans := map[checkpoint.TaskID]int{}
	outputs := map[checkpoint.TaskID]map[*graph.Edge][]exchange.Sender{}
	setSender := func(from checkpoint.TaskID, e *graph.Edge, downstream, to int, s exchange.Sender) {
		m := outputs[from]
		if m == nil {
			m = map[*graph.Edge][]exchange.Sender{}
			outputs[from] = m
		}
		if e.Partitioning == graph.Forward {
			m[e] = []exchange.Sender{s}
			return
		}
		if m[e] == nil {
			m[e] = make([]exchange.Sender, downstream)
		}
		m[e][to] = s
	}
	for _, c := range plan.Chains {
		in := g.InEdges(c.Nodes[0])
		for s := 0; s < c.Parallelism; s++ {
			to := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
			if len(in) == 0 {
				continue
			}
			if w.here[to] {
				// This worker receives: local channels from tasks here,
				// remote ones from the others.
				b := w.ep.NewGate(gateKey(to), credits)
				type localFrom struct {
					from checkpoint.TaskID
					e    *graph.Edge
					ch   int
				}
				var locals []localFrom
				for _, e := range in {
					for _, u := range upstreams(c, s, e) {
						from := checkpoint.TaskID{Vertex: plan.ChainOf[e.From], Subtask: u}
						if w.here[from] {
							locals = append(locals, localFrom{from, e, b.AddLocal(e.Input)})
							continue
						}
						cd, err := codecOf(e)
						if err != nil {
							return nil, closers, err
						}
						b.AddRemote(e.Input, cd)
					}
				}
				gate, senders, err := b.Build()
				if err != nil {
					return nil, closers, fmt.Errorf("worker: building the input of task %s: %w", to, err)
				}
				closers = append(closers, gate.Close)
				inboxes[to] = gate
				w.netIn[to] = gate
				nchans[to] = channelCount(plan, c)
				for _, l := range locals {
					setSender(l.from, l.e, c.Parallelism, s, senders[l.ch])
				}
				continue
			}
			// Another worker receives: senders from the tasks here.
			for _, e := range in {
				for _, u := range upstreams(c, s, e) {
					from := checkpoint.TaskID{Vertex: plan.ChainOf[e.From], Subtask: u}
					if !w.here[from] {
						continue
					}
					peer, ok := peers[to]
					if !ok {
						return nil, closers, fmt.Errorf("worker: the deployment does not place task %s", to)
					}
					cd, err := codecOf(e)
					if err != nil {
						return nil, closers, err
					}
					snd, err := w.ep.Sender(ctx, peer, gateKey(to), channelOf(plan, c, s, e, u), cd)
					if err != nil {
						return nil, closers, fmt.Errorf("worker: connecting task %s to task %s at %s: %w", from, to, peer, err)
					}
					closers = append(closers, snd.Close)
					setSender(from, e, c.Parallelism, s, snd)
					w.netOut[from] = append(w.netOut[from], snd)
				}
			}
		}
	}
	return func(c *graph.Chain, s int) (exchange.Inbox, int, map[*graph.Edge][]exchange.Sender, error) {
		t := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
		return inboxes[t], nchans[t], outputs[t], nil
	}, closers, nil
}

// channelCount is the number of channels into a subtask of chain c.
func channelCount(plan *graph.Plan, c *graph.Chain) int {
	n := 0
	for _, e := range plan.Graph.InEdges(c.Nodes[0]) {
		if e.Partitioning == graph.Forward {
			n++
		} else {
			n += plan.Chains[plan.ChainOf[e.From]].Parallelism
		}
	}
	return n
}
