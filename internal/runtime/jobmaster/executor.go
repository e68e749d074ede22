package jobmaster

import (
	"context"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// Executor deploys the attempts of a job. The default runs every task in
// this process; a cluster's JobMaster runs them in workers on TaskManagers.
type Executor interface {
	Deploy(ctx context.Context, d Deployment) (Attempt, error)
}

// Deployment is one attempt to deploy.
type Deployment struct {
	// Attempt numbers the attempts of the job from 0.
	Attempt int
	// Restore is what the tasks start from (nil: empty state).
	Restore *Restore
	// Events receives the attempt's reports.
	Events Events
}

// Attempt is a deployed attempt of the job, run by its Job's owner loop.
type Attempt interface {
	// Tasks are all subtasks of the attempt, in order.
	Tasks() []checkpoint.TaskID
	// Start starts every task. Each task then ends with exactly one
	// Events.TaskEnded.
	Start()
	// TriggerCheckpoint starts checkpoint id at tasks, writing into loc.
	// Coordinator snapshots taken synchronously are returned; an attempt
	// whose coordinators run elsewhere reports them with
	// Events.CoordinatorState before any acknowledgement of their chains.
	TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location) []CoordinatorSnapshot
	// NotifyComplete and Abort tell the tasks about checkpoint id.
	NotifyComplete(id int64)
	Abort(id int64)
	// AllFinished tells the tasks that every task has finished.
	AllFinished()
	// Cancel stops every task.
	Cancel(cause error)
	// Close releases what the attempt holds, once every task has ended.
	Close()
	// Metrics are the subtasks' metrics.
	Metrics() []SubtaskMetrics
}

// Events is how an attempt reports to its job. It implements Reporter.
type Events struct {
	j       *Job
	attempt int
}

// TaskEnded reports a task's end (err nil: finished). It is never lost.
func (e Events) TaskEnded(id checkpoint.TaskID, err error) {
	e.j.events <- taskEnded{attempt: e.attempt, task: id, err: err}
}

// TaskFinished reports that a task finished its input.
func (e Events) TaskFinished(id checkpoint.TaskID) {
	e.j.send(taskFinished{attempt: e.attempt, task: id})
}

// Acknowledged reports a task's snapshot written for checkpoint cp.
func (e Events) Acknowledged(id checkpoint.TaskID, cp int64, ack Ack) {
	e.j.send(uploaded{attempt: e.attempt, task: id, id: checkpoint.ID(cp), ack: ack})
}

// Declined reports a checkpoint a task could not take.
func (e Events) Declined(id checkpoint.TaskID, cp int64, err error) {
	e.j.send(declined{attempt: e.attempt, task: id, id: checkpoint.ID(cp), err: err})
}

// CoordinatorState reports a coordinator snapshot taken elsewhere.
func (e Events) CoordinatorState(cp int64, s CoordinatorSnapshot) {
	e.j.send(coordState{attempt: e.attempt, id: checkpoint.ID(cp), snap: s})
}

// inProcess is the default executor: every task on a goroutine of this
// process, exchanges through in-process channels.
type inProcess struct {
	j      *Job
	writer *SnapshotWriter
}

func (x *inProcess) Deploy(ctx context.Context, d Deployment) (Attempt, error) {
	plan, opts := x.j.plan, x.j.opts
	var all []checkpoint.TaskID
	var coords []int
	for _, c := range plan.Chains {
		for s := 0; s < c.Parallelism; s++ {
			all = append(all, checkpoint.TaskID{Vertex: c.ID, Subtask: s})
		}
		if IsCoordinated(plan, c) {
			coords = append(coords, c.ID)
		}
	}
	cfg := HostConfig{
		JobID: x.j.ID(), Plan: plan, Tasks: all, Coordinators: coords, Wire: LocalWiring(plan, opts.Credits),
		Reporter: d.Events, Restore: d.Restore,
		Mode: opts.Mode, Clock: opts.Clock, Log: opts.Log, BatchSize: opts.BatchSize,
		BufferTimeout: opts.BufferTimeout, AutoWatermarkInterval: opts.AutoWatermarkInterval,
		StateBackend: opts.StateBackend, Writer: x.writer, FileSystems: opts.FileSystems,
	}
	if c := opts.Checkpoints; c != nil {
		cfg.Checkpointing = &HostCheckpointing{Mode: c.Coordinator.Mode, Incremental: c.Incremental}
	}
	h, err := NewHost(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return hostAttempt{h}, nil
}

type hostAttempt struct{ *Host }

func (a hostAttempt) TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location) []CoordinatorSnapshot {
	var out []CoordinatorSnapshot
	a.Host.TriggerCheckpoint(id, kind, tasks, loc, func(s CoordinatorSnapshot) { out = append(out, s) })
	return out
}

func (a hostAttempt) Close() {
	a.Host.Close()
	if a.cfg.Restore != nil {
		a.cfg.Restore.Close() // restored state was copied or linked into the tasks' stores
	}
}

// IsCoordinated says whether chain c's head has a coordinator.
func IsCoordinated(plan *graph.Plan, c *graph.Chain) bool {
	return plan.Graph.Node(c.Nodes[0]).Coordinated
}

// LocalWiring wires every task of plan through in-process channels with
// the given credits each: one inbox per (chain, subtask), its channels
// ordered by the head's in-edges, then by upstream subtask.
func LocalWiring(plan *graph.Plan, credits int) WireFunc {
	g := plan.Graph
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
			gate := exchange.NewLocalGate(credits)
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
	return func(c *graph.Chain, s int) (exchange.Inbox, int, map[*graph.Edge][]exchange.Sender, error) {
		k := key{c.ID, s}
		return inboxes[k], nchans[k], outputs[k], nil
	}
}
