package local

import (
	"context"
	"fmt"

	"github.com/sluice/sluice/runtime/checkpoint"
	"github.com/sluice/sluice/runtime/exchange"
	"github.com/sluice/sluice/runtime/graph"
	"github.com/sluice/sluice/runtime/task"
)

// attempt is one execution of the plan: its tasks, exchanges and source
// coordinators. A restart builds a new attempt.
type attempt struct {
	n      int
	ctx    context.Context
	cancel context.CancelFunc
	tasks  map[checkpoint.TaskID]*task.Task
	order  []checkpoint.TaskID
	// sources are the tasks whose chain starts with a source.
	sources []checkpoint.TaskID
	coords  map[graph.NodeID]task.Coordinator
	// finalCommit is closed once every task has finished.
	finalCommit chan struct{}
	finished    map[checkpoint.TaskID]bool
	alive       int
	metrics     []SubtaskMetrics
	coordinator *checkpoint.Coordinator
}

// build wires the plan into tasks. restore may be nil.
func (j *Job) build(n int, restore *restoreState) (*attempt, error) {
	plan, g, opts := j.plan, j.plan.Graph, j.opts
	ctx, cancel := context.WithCancel(j.ctx)
	a := &attempt{n: n, ctx: ctx, cancel: cancel, tasks: map[checkpoint.TaskID]*task.Task{},
		coords: map[graph.NodeID]task.Coordinator{}, finalCommit: make(chan struct{}), finished: map[checkpoint.TaskID]bool{}}
	ok := false
	defer func() {
		if !ok {
			a.close()
			cancel()
		}
	}()
	for _, nd := range g.Nodes {
		c, isCoord := nd.Impl.(task.Coordinated)
		if !isCoord {
			continue
		}
		var state []byte
		if restore != nil {
			state = restore.coordinators[j.opIDs[nd.ID]]
		}
		co, err := c.NewCoordinator(nd.Parallelism, state)
		if err != nil {
			return nil, fmt.Errorf("local: starting the coordinator of %s: %w", nd.Label(), err)
		}
		a.coords[nd.ID] = co
	}

	// Wire the inboxes: one per (chain, subtask), channels ordered by the
	// head's in-edges, then by upstream subtask.
	type key struct{ chain, subtask int }
	inboxes := map[key]exchange.Inbox{}
	nchans := map[key]int{}
	outputs := map[key]map[*graph.Edge][]exchange.Sender{}
	for _, c := range plan.Chains {
		for s := 0; s < c.Parallelism; s++ {
			outputs[key{c.ID, s}] = map[*graph.Edge][]exchange.Sender{}
		}
	}
	for _, c := range plan.Chains {
		in := g.InEdges(c.Nodes[0])
		for s := 0; s < c.Parallelism; s++ {
			gate := exchange.NewLocalGate(opts.Credits)
			type from struct {
				e       *graph.Edge
				subtask int
				ch      int
			}
			var froms []from
			for _, e := range in {
				up := plan.Chains[plan.ChainOf[e.From]]
				if e.Partitioning == graph.Forward {
					froms = append(froms, from{e, s, gate.AddChannel(e.Input)})
					continue
				}
				for u := 0; u < up.Parallelism; u++ {
					froms = append(froms, from{e, u, gate.AddChannel(e.Input)})
				}
			}
			inbox, chans := gate.Build()
			inboxes[key{c.ID, s}] = inbox
			nchans[key{c.ID, s}] = len(chans)
			for _, f := range froms {
				upKey := key{plan.ChainOf[f.e.From], f.subtask}
				senders := outputs[upKey][f.e]
				if f.e.Partitioning == graph.Forward {
					senders = []exchange.Sender{chans[f.ch]}
				} else {
					if senders == nil {
						senders = make([]exchange.Sender, c.Parallelism)
					}
					senders[s] = chans[f.ch]
				}
				outputs[upKey][f.e] = senders
			}
		}
	}

	for _, c := range plan.Chains {
		isSource := g.Node(c.Nodes[0]).Inputs == 0
		for s := 0; s < c.Parallelism; s++ {
			k := key{c.ID, s}
			id := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
			spec := task.Spec{
				Job: g.Name, Plan: plan, Chain: c, Subtask: s, Mode: opts.Mode,
				Clock: opts.Clock, Log: opts.Log,
				Inbox: inboxes[k], Channels: nchans[k], Outputs: outputs[k],
				Coordinators: a.coords, BatchSize: opts.BatchSize,
				BufferTimeout: opts.BufferTimeout, AutoWatermarkInterval: opts.AutoWatermarkInterval,
				StateBackend: opts.StateBackend,
			}
			if restore != nil {
				spec.Restore = restore.forTask(j, c, s)
			}
			if j.ckpt != nil {
				spec.Checkpointing = j.taskCheckpointing(a, id)
			}
			t, err := task.New(ctx, spec)
			if err != nil {
				return nil, err
			}
			a.tasks[id] = t
			a.order = append(a.order, id)
			if isSource {
				a.sources = append(a.sources, id)
			}
			a.metrics = append(a.metrics, SubtaskMetrics{Vertex: c.Name, Subtask: s, Metrics: t.Metrics()})
		}
	}
	if restore != nil && restore.err != nil {
		return nil, restore.err
	}
	ok = true
	return a, nil
}

// taskCheckpointing connects a task to the job's coordinator loop.
func (j *Job) taskCheckpointing(a *attempt, id checkpoint.TaskID) *task.Checkpointing {
	return &task.Checkpointing{
		Mode:        j.ckpt.opts.Coordinator.Mode,
		Incremental: j.ckpt.opts.Incremental,
		OnSnapshot: func(s *task.Snapshot) {
			select {
			case j.uploads <- uploadReq{attempt: a.n, task: id, snap: s}:
			case <-a.ctx.Done():
				s.Discard() // the attempt is over: nobody will upload it
			}
		},
		OnDecline: func(cid int64, err error) {
			j.send(a.ctx, declined{attempt: a.n, task: id, id: checkpoint.ID(cid), err: err})
		},
		OnFinished: func() {
			// Through the uploader, so the acknowledgements of snapshots
			// the task took before finishing are counted first.
			j.send(a.ctx, uploadReq{attempt: a.n, task: id, finished: true})
		},
		FinalCommit: a.finalCommit,
	}
}

// start runs every task on its own goroutine.
func (j *Job) start(a *attempt) {
	for _, id := range a.order {
		t := a.tasks[id]
		a.alive++
		go func() {
			err := t.Run()
			// Never lost: the owner loop drains events until every task
			// of the attempt has ended.
			j.events <- taskEnded{attempt: a.n, task: id, err: err}
		}()
	}
}

func (a *attempt) close() {
	for _, c := range a.coords {
		c.Close()
	}
}
