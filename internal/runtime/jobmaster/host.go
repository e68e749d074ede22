package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Reporter receives what a Host's tasks report. TaskEnded is reported
// exactly once per task; the others may be dropped once ctx of the host
// has ended.
type Reporter interface {
	TaskEnded(id checkpoint.TaskID, err error)
	TaskFinished(id checkpoint.TaskID)
	Acknowledged(id checkpoint.TaskID, checkpointID int64, ack Ack)
	Declined(id checkpoint.TaskID, checkpointID int64, err error)
}

// Remote reaches the tasks and coordinators of the attempt that run in
// other processes. A Host whose attempt runs entirely in this process has
// none.
type Remote interface {
	// TriggerCheckpoint starts a checkpoint at subtasks elsewhere; a
	// coordinator here calls it right after its snapshot.
	TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location)
	// CoordinatorEvent sends an event of a coordinator here to a subtask
	// elsewhere.
	CoordinatorEvent(to checkpoint.TaskID, ev []byte)
	// OperatorEvent sends an event of a subtask here to its chain's
	// coordinator elsewhere.
	OperatorEvent(from checkpoint.TaskID, ev []byte) error
}

// WireFunc returns the exchange endpoints of one task: its inbox (nil for
// sources) with its number of channels, and its senders per out-edge.
type WireFunc func(c *graph.Chain, subtask int) (inbox exchange.Inbox, channels int, outputs map[*graph.Edge][]exchange.Sender, err error)

// HostConfig configures a Host.
type HostConfig struct {
	// JobID is the job's ID, the value of every task goroutine's "job"
	// pprof label (see TaskLabels). Default: none.
	JobID string
	Plan  *graph.Plan
	// Tasks are the subtasks to run here.
	Tasks []checkpoint.TaskID
	// Coordinators are the chains whose coordinator runs here.
	Coordinators []int
	Wire         WireFunc
	Remote       Remote // nil when every task is here
	Reporter     Reporter
	Restore      *Restore // nil: empty state

	Mode                  task.RuntimeMode
	Clock                 clock.Clock
	Log                   *slog.Logger
	BatchSize             int
	BufferTimeout         time.Duration
	AutoWatermarkInterval int64
	StateBackend          state.Backend
	// Checkpointing is nil without checkpoints.
	Checkpointing *HostCheckpointing
	// Writer writes the tasks' snapshots (shared by the hosts of a process).
	Writer *SnapshotWriter
	// FileSystems resolves the URIs the job's operators read and write.
	FileSystems *fs.Resolver
}

// HostCheckpointing is the task side of checkpointing.
type HostCheckpointing struct {
	Mode        checkpoint.Mode
	Incremental bool
}

// Host runs some subtasks of one attempt of a job in this process: all of
// them for the embedded cluster, a worker's share in a cluster. It owns
// the tasks' goroutines, the uploader that writes their snapshots, and the
// coordinators of the chains it hosts.
type Host struct {
	cfg    HostConfig
	ctx    context.Context
	cancel context.CancelCauseFunc
	opIDs  map[graph.NodeID]string
	tasks  map[checkpoint.TaskID]*task.Task
	order  []checkpoint.TaskID
	coords map[int]task.Coordinator // by chain
	// finalCommit is closed once every task of the attempt has finished.
	finalCommit chan struct{}
	finalOnce   sync.Once
	metrics     []SubtaskMetrics

	uploads chan upload
	// locs passes checkpoint locations and ends to the uploader, never
	// blocking the caller (which may be the uploader itself, acknowledging
	// a snapshot that completes a checkpoint); wake tells it there are some.
	locs struct {
		sync.Mutex
		events []locEvent
	}
	wake chan struct{}
	wg   sync.WaitGroup // task and uploader goroutines
}

// locEvent is where checkpoint id is written, or (ended) that it ended.
type locEvent struct {
	id    int64
	loc   *storage.Location
	ended bool
}

type upload struct {
	task     checkpoint.TaskID
	snap     *task.Snapshot
	finished bool
}

// CoordinatorSnapshot is a coordinator's state taken for a checkpoint.
type CoordinatorSnapshot struct {
	Chain int
	State []byte
	Err   error
}

// NewHost builds the tasks (not started yet).
func NewHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	h := &Host{cfg: cfg, opIDs: cfg.Plan.Graph.OperatorIDs(), tasks: map[checkpoint.TaskID]*task.Task{},
		coords: map[int]task.Coordinator{}, finalCommit: make(chan struct{}), uploads: make(chan upload, 64), wake: make(chan struct{}, 1)}
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	ok := false
	defer func() {
		if !ok {
			h.closeCoordinators()
			h.cancel(errors.New("the host failed to start"))
		}
	}()
	plan, g := cfg.Plan, cfg.Plan.Graph
	if cfg.Writer != nil {
		cfg.Writer.Seed(cfg.Restore)
	}
	for _, ch := range cfg.Coordinators {
		c := plan.Chains[ch]
		head := g.Node(c.Nodes[0])
		cd, isCoord := head.Impl.(task.Coordinated)
		if !isCoord {
			return nil, fmt.Errorf("jobmaster: chain %d (%s) has no coordinator", ch, c.Name)
		}
		var restored []byte
		if cfg.Restore != nil {
			restored = cfg.Restore.CoordinatorState(h.opIDs[head.ID])
		}
		co, err := cd.NewCoordinator(coordinatorContext{h: h, chain: ch}, head.Parallelism, restored)
		if err != nil {
			return nil, fmt.Errorf("jobmaster: starting the coordinator of %s: %w", head.Label(), err)
		}
		h.coords[ch] = co
	}
	for _, id := range cfg.Tasks {
		c := plan.Chains[id.Vertex]
		inbox, nch, outputs, err := cfg.Wire(c, id.Subtask)
		if err != nil {
			return nil, err
		}
		spec := task.Spec{
			Job: g.Name, Plan: plan, Chain: c, Subtask: id.Subtask, Mode: cfg.Mode,
			Clock: cfg.Clock, Log: cfg.Log,
			Inbox: inbox, Channels: nch, Outputs: outputs,
			ToCoordinator: h.toCoordinator(c, id),
			BatchSize:     cfg.BatchSize, BufferTimeout: cfg.BufferTimeout, AutoWatermarkInterval: cfg.AutoWatermarkInterval,
			StateBackend: cfg.StateBackend, FileSystems: cfg.FileSystems,
		}
		if cfg.Restore != nil {
			r, err := cfg.Restore.ForTask(plan, c, id.Subtask)
			if err != nil {
				return nil, err
			}
			spec.Restore = r
		}
		if cfg.Checkpointing != nil {
			spec.Checkpointing = h.taskCheckpointing(id)
		}
		t, err := task.New(h.ctx, spec)
		if err != nil {
			return nil, err
		}
		h.tasks[id] = t
		h.order = append(h.order, id)
		h.metrics = append(h.metrics, SubtaskMetrics{Vertex: c.Name, Subtask: id.Subtask, Metrics: t.Metrics()})
	}
	ok = true
	return h, nil
}

// toCoordinator routes a task's operator events to its chain's coordinator.
func (h *Host) toCoordinator(c *graph.Chain, id checkpoint.TaskID) map[graph.NodeID]func([]byte) error {
	head := h.cfg.Plan.Graph.Node(c.Nodes[0])
	if _, ok := head.Impl.(task.Coordinated); !ok {
		return nil
	}
	send := func(ev []byte) error {
		if co, ok := h.coords[c.ID]; ok {
			return co.HandleOperatorEvent(id.Subtask, ev)
		}
		if h.cfg.Remote == nil {
			return fmt.Errorf("jobmaster: no coordinator for %s", head.Label())
		}
		return h.cfg.Remote.OperatorEvent(id, ev)
	}
	return map[graph.NodeID]func([]byte) error{head.ID: send}
}

type coordinatorContext struct {
	h     *Host
	chain int
}

// SendEvent implements task.CoordinatorContext.
func (c coordinatorContext) SendEvent(subtask int, ev []byte) {
	c.h.DeliverCoordinatorEvent(checkpoint.TaskID{Vertex: c.chain, Subtask: subtask}, ev)
}

// DeliverCoordinatorEvent hands a coordinator's event to subtask to (here
// or, through Remote, elsewhere).
func (h *Host) DeliverCoordinatorEvent(to checkpoint.TaskID, ev []byte) {
	if t, ok := h.tasks[to]; ok {
		t.DeliverCoordinatorEvent(h.cfg.Plan.Chains[to.Vertex].Nodes[0], ev)
		return
	}
	if h.cfg.Remote != nil {
		h.cfg.Remote.CoordinatorEvent(to, ev)
	}
}

// HandleOperatorEvent hands an event of subtask from to the coordinator of
// its chain, which runs here.
func (h *Host) HandleOperatorEvent(from checkpoint.TaskID, ev []byte) error {
	co, ok := h.coords[from.Vertex]
	if !ok {
		return fmt.Errorf("jobmaster: an operator event from %s, whose coordinator is not here", from)
	}
	return co.HandleOperatorEvent(from.Subtask, ev)
}

// taskCheckpointing connects a task to the host's uploader.
func (h *Host) taskCheckpointing(id checkpoint.TaskID) *task.Checkpointing {
	return &task.Checkpointing{
		Mode:        h.cfg.Checkpointing.Mode,
		Incremental: h.cfg.Checkpointing.Incremental,
		OnSnapshot: func(s *task.Snapshot) {
			select {
			case h.uploads <- upload{task: id, snap: s}:
			case <-h.ctx.Done():
				s.Discard() // the attempt is over: nobody will upload it
			}
		},
		OnDecline: func(cid int64, err error) { h.cfg.Reporter.Declined(id, cid, err) },
		OnFinished: func() {
			// Through the uploader, so the acknowledgements of snapshots
			// the task took before finishing are reported first.
			select {
			case h.uploads <- upload{task: id, finished: true}:
			case <-h.ctx.Done():
			}
		},
		FinalCommit: h.finalCommit,
	}
}

// Tasks are the host's subtasks in order.
func (h *Host) Tasks() []checkpoint.TaskID { return h.order }

// Metrics are the metrics of the host's subtasks.
func (h *Host) Metrics() []SubtaskMetrics { return h.metrics }

// Start runs every task on its own goroutine, and the uploader.
func (h *Host) Start() {
	if h.cfg.Checkpointing != nil {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.uploader()
		}()
	}
	for _, id := range h.order {
		t := h.tasks[id]
		labels := pprof.Labels(TaskLabels(h.cfg.JobID, id, h.cfg.Plan.Chains[id.Vertex].Name)...)
		h.wg.Add(1)
		go pprof.Do(h.ctx, labels, func(context.Context) {
			defer h.wg.Done()
			h.cfg.Reporter.TaskEnded(id, t.Run())
		})
	}
}

// The pprof labels of a task's goroutine, which every goroutine it starts
// (a source's reader, user code's own) inherits: CPU and goroutine
// profiles of the process tell a subtask's samples by them (flame graphs;
// `go tool pprof -tagfocus`).
const (
	LabelJob        = "job"         // the job's ID
	LabelVertex     = "vertex"      // the chain's index in the plan
	LabelVertexName = "vertex_name" // the chain's name
	LabelSubtask    = "subtask"     // the subtask's index
)

// TaskLabels are the pprof labels, as key-value pairs, of the goroutine
// of subtask id of job (a chain named name).
func TaskLabels(job string, id checkpoint.TaskID, name string) []string {
	return []string{LabelJob, job, LabelVertex, strconv.Itoa(id.Vertex), LabelVertexName, name, LabelSubtask, strconv.Itoa(id.Subtask)}
}

// uploader writes task snapshots (the asynchronous part of checkpoints),
// each once its checkpoint's location is known (see uploadQueue).
func (h *Host) uploader() {
	q := newUploadQueue()
	for {
		select {
		case <-h.ctx.Done():
			// Free what queued snapshots hold (pebble snapshots, files).
			for _, u := range q.drain() {
				u.snap.Discard()
			}
			for {
				select {
				case u := <-h.uploads:
					if u.snap != nil {
						u.snap.Discard()
					}
				default:
					return
				}
			}
		case u := <-h.uploads:
			h.do(q.arrived(u))
		case <-h.wake:
			h.locs.Lock()
			evs := h.locs.events
			h.locs.events = nil
			h.locs.Unlock()
			for _, ev := range evs {
				if ev.ended {
					h.do(q.endedCheckpoint(ev.id))
				} else {
					h.do(q.located(ev.id, ev.loc))
				}
			}
		}
	}
}

// do carries out the uploader's steps.
func (h *Host) do(steps []step) {
	for _, st := range steps {
		u := st.u
		switch {
		case u.finished:
			h.cfg.Reporter.TaskFinished(u.task)
		case st.loc == nil:
			u.snap.Discard()
			h.cfg.Reporter.Declined(u.task, u.snap.ID, fmt.Errorf("checkpoint %d is no longer in progress", u.snap.ID))
		default:
			ack, err := h.cfg.Writer.Write(st.loc, u.task, u.snap)
			if err != nil {
				h.cfg.Reporter.Declined(u.task, u.snap.ID, err)
				continue
			}
			h.cfg.Reporter.Acknowledged(u.task, u.snap.ID, ack)
		}
	}
}

func (h *Host) locEvent(ev locEvent) {
	h.locs.Lock()
	h.locs.events = append(h.locs.events, ev)
	h.locs.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // the uploader has a wake-up pending
	}
}

// TriggerCheckpoint starts checkpoint id at tasks, writing into loc. For
// the chains whose coordinator runs here it snapshots the coordinator,
// hands the snapshot to onState and then, atomically with the snapshot,
// triggers the chain's subtasks (here, or elsewhere through Remote). Other
// tasks not here are skipped.
func (h *Host) TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location, onState func(CoordinatorSnapshot)) {
	h.AddLocation(id, loc)
	byChain := map[int][]checkpoint.TaskID{}
	for _, t := range tasks {
		byChain[t.Vertex] = append(byChain[t.Vertex], t)
	}
	chains := make([]int, 0, len(byChain))
	for ch := range byChain {
		chains = append(chains, ch)
	}
	sort.Ints(chains)
	for _, ch := range chains {
		ts := byChain[ch]
		trigger := func() {
			var remote []checkpoint.TaskID
			for _, t := range ts {
				if tk, ok := h.tasks[t]; ok {
					tk.TriggerCheckpoint(id, kind)
				} else {
					remote = append(remote, t)
				}
			}
			if len(remote) > 0 && h.cfg.Remote != nil {
				h.cfg.Remote.TriggerCheckpoint(id, kind, remote, loc)
			}
		}
		co, ok := h.coords[ch]
		if !ok {
			trigger()
			continue
		}
		err := co.Checkpoint(id, func(state []byte) {
			onState(CoordinatorSnapshot{Chain: ch, State: state})
			trigger()
		})
		if err != nil {
			head := h.cfg.Plan.Graph.Node(h.cfg.Plan.Chains[ch].Nodes[0])
			onState(CoordinatorSnapshot{Chain: ch, Err: fmt.Errorf("checkpointing the coordinator of %s: %w", head.Label(), err)})
		}
	}
}

// AddLocation registers where checkpoint id is written, for tasks
// triggered through their coordinator elsewhere.
func (h *Host) AddLocation(id int64, loc *storage.Location) { h.locEvent(locEvent{id: id, loc: loc}) }

// NotifyComplete tells the tasks that checkpoint id is complete.
func (h *Host) NotifyComplete(id int64) {
	h.dropLocation(id)
	for _, t := range h.order {
		h.tasks[t].NotifyCheckpointComplete(id)
	}
}

// Abort tells the tasks that checkpoint id will not complete.
func (h *Host) Abort(id int64) {
	h.dropLocation(id)
	for _, t := range h.order {
		h.tasks[t].AbortCheckpoint(id)
	}
}

func (h *Host) dropLocation(id int64) { h.locEvent(locEvent{id: id, ended: true}) }

// AllFinished tells the tasks that every task of the attempt finished.
func (h *Host) AllFinished() { h.finalOnce.Do(func() { close(h.finalCommit) }) }

// Cancel stops every task; each then reports its end.
func (h *Host) Cancel(cause error) { h.cancel(cause) }

// Close waits for the tasks and the uploader, and closes the coordinators.
// Call it after Cancel or once every task has ended.
func (h *Host) Close() {
	h.cancel(errors.New("the host closed"))
	h.wg.Wait()
	h.closeCoordinators()
}

func (h *Host) closeCoordinators() {
	for _, c := range h.coords {
		c.Close()
	}
	h.coords = map[int]task.Coordinator{}
}
