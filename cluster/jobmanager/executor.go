package jobmanager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/runtime/task"
)

// ErrGraphMismatch is wrapped by the error of a deployment whose worker
// built a different job graph than the one submitted.
var ErrGraphMismatch = errors.New("jobmanager: the worker's program built a different job graph than the one submitted")

// remoteExecutor deploys a job's attempts to workers on TaskManagers.
type remoteExecutor struct {
	jm *jobMaster

	mu sync.Mutex
	// current is the latest attempt, from the start of its deployment;
	// nil before the first. It stays once the attempt is closed (the REST
	// API shows its tasks' states), but its TaskManagers are released
	// then, so that losing one fails nothing.
	current *remoteAttempt
}

// currentAttempt is the latest attempt, nil before the first.
func (x *remoteExecutor) currentAttempt() *remoteAttempt {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.current
}

func newRemoteExecutor(jm *jobMaster) *remoteExecutor {
	return &remoteExecutor{jm: jm}
}

// slotsNeeded is the number of slots an attempt takes: every chain shares
// the slots, subtask i of each chain in slot i (Flink's default slot
// sharing group).
func slotsNeeded(p *graph.Plan) int {
	n := 0
	for _, c := range p.Chains {
		n = max(n, c.Parallelism)
	}
	return n
}

// taskManagerLost fails the tasks the current attempt has on a lost
// TaskManager; it reports whether the attempt, deploying or running,
// had any there.
func (x *remoteExecutor) taskManagerLost(err *TaskManagerLostError) bool {
	a := x.currentAttempt()
	return a != nil && a.taskManagerLost(err)
}

// workerExited fails the deployment or the tasks of the worker that
// exited, if it is of the current attempt n; it reports whether it was.
func (x *remoteExecutor) workerExited(n int, err *WorkerExitedError) bool {
	a := x.currentAttempt()
	return a != nil && a.workerExited(n, err)
}

// setCurrent makes a the current attempt.
func (x *remoteExecutor) setCurrent(a *remoteAttempt) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.current = a
}

// attach hands a worker's session to the deployment waiting for it.
func (x *remoteExecutor) attach(s *session) error {
	if a := x.currentAttempt(); a != nil {
		return a.attach(s)
	}
	return fmt.Errorf("jobmanager: job %s expects no worker %q (attempt %d)", x.jm.id, s.hello.WorkerId, s.hello.Attempt)
}

// workerID names the worker of an attempt on a TaskManager: letters,
// digits, '.', '_' and '-' only.
func workerID(job string, attempt int, tm string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, tm)
	return fmt.Sprintf("%s-%d-%s", job, attempt, safe)
}

// Deploy implements jobmaster.Executor.
func (x *remoteExecutor) Deploy(ctx context.Context, d jobmaster.Deployment) (jobmaster.Attempt, error) {
	jm := x.jm
	plan := jm.plan
	need := slotsNeeded(plan)
	a := newRemoteAttempt(x, d.Attempt, d.Events, plan)
	// The job's context ends when the job is cancelled; the deployment's
	// also ends when a TaskManager of the attempt is lost, or a worker's
	// session ends, while the attempt deploys, with that failure.
	jobCtx := ctx
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(errDeployed)
	a.abortDeploy = abort
	// Current from the start: its tasks are SCHEDULED while it waits for
	// slots.
	x.setCurrent(a)
	ok := false
	defer func() {
		if !ok {
			a.abandon(jobCtx)
		}
	}()
	if err := jm.declareSlots(ctx, need); err != nil {
		return nil, err
	}
	timeout := jm.d.cfg.slotRequestTimeout
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var slots []slot
	for {
		s, changed, ok := jm.pool.take(need)
		if ok {
			slots = s
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-deadline.C:
			return nil, fmt.Errorf("jobmanager: job %s needs %d slots but got %d within slot.request.timeout (%s): start more TaskManagers or lower the parallelism",
				jm.id, need, jm.pool.size(), timeout)
		}
	}

	// Slot k runs subtask k of every chain; one worker per TaskManager.
	type workerPlan struct {
		id, tm, tmAddr, host string
		allocations          []string
		tasks                []checkpoint.TaskID
	}
	byTM := map[string]*workerPlan{}
	var workers []*workerPlan
	for k, s := range slots {
		w, ok := byTM[s.tm]
		if !ok {
			w = &workerPlan{id: workerID(jm.id, d.Attempt, s.tm), tm: s.tm, tmAddr: s.tmAddr, host: s.host}
			byTM[s.tm] = w
			workers = append(workers, w)
		}
		w.allocations = append(w.allocations, s.allocation)
		for _, c := range plan.Chains {
			if k < c.Parallelism {
				w.tasks = append(w.tasks, checkpoint.TaskID{Vertex: c.ID, Subtask: k})
			}
		}
	}
	for _, w := range workers {
		a.onTaskManager(w.tm, w.tmAddr)
	}
	// Start the workers.
	waits := map[string]chan *session{}
	tmOf := map[string]string{}
	for _, w := range workers {
		waits[w.id] = make(chan *session, 1)
		tmOf[w.id] = w.tm
	}
	a.expect(waits, tmOf)
	defer a.step(abDeployEnded{})
	for _, w := range workers {
		req := &clusterpb.SubmitTasksRequest{
			JobId: jm.id, Attempt: int32(d.Attempt), WorkerId: w.id,
			BinarySha256: jm.binary.sha256, BinarySize: jm.binary.size,
			JobMasterAddress: jm.d.cfg.rpcAddress, AllocationIds: w.allocations,
			Args: jm.args, Env: jm.env, Configuration: jm.dynamic,
		}
		for _, t := range w.tasks {
			a.states.place(t, w.tm, w.tmAddr)
			a.states.set(t, restapi.TaskDeploying, jm.now())
		}
		if err := jm.d.submitTasks(ctx, w.tmAddr, req); err != nil {
			if cause := context.Cause(ctx); cause != nil {
				// The deployment was ended (a TaskManager lost, a worker's
				// session ended, the job cancelled): this TaskManager is
				// not to blame.
				return nil, cause
			}
			// The TaskManager refused or could not be reached. Its slots
			// leave the job: dropped here, so that the next attempt does
			// not count on them, and freed there, so that the
			// ResourceManager, which counts them as the job's, offers the
			// job slots again (a TaskManager that does not answer keeps
			// them until the ResourceManager loses it).
			jm.pool.dropTaskManager(w.tm)
			fctx, cancel := context.WithTimeout(jobCtx, 10*time.Second)
			jm.freeSlots(fctx, w.tmAddr, w.allocations)
			cancel()
			err = fmt.Errorf("jobmanager: starting worker %s on TaskManager %s (%s): %w", w.id, w.tm, w.tmAddr, err)
			if refusedForGood(err) {
				err = &restart.Unrecoverable{Err: err}
			}
			return nil, err
		}
	}
	// Wait for every worker's Hello.
	helloTimeout := time.NewTimer(jm.d.cfg.workerStartTimeout)
	defer helloTimeout.Stop()
	sessions := map[string]*session{}
	for _, w := range workers {
		select {
		case s := <-waits[w.id]:
			sessions[w.id] = s
			a.connected(s, w.tm)
			if s.hello.Fingerprint != jm.graph.Fingerprint() {
				return nil, &restart.Unrecoverable{Err: fmt.Errorf("%w: worker %s has graph fingerprint %s, the job %s: the job program must build the same graph on every run (check that main does not depend on the time, randomness or its environment)",
					ErrGraphMismatch, w.id, s.hello.Fingerprint, jm.graph.Fingerprint())}
			}
		case <-helloTimeout.C:
			return nil, fmt.Errorf("jobmanager: worker %s on TaskManager %s did not connect within %s (see the TaskManager's log of the worker)", w.id, w.tm, jm.d.cfg.workerStartTimeout)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	// Place every task, and each chain's coordinator with its subtask 0.
	var placement []*clusterpb.TaskPlacement
	for _, w := range workers {
		s := sessions[w.id]
		for _, t := range w.tasks {
			a.where[t] = s
			placement = append(placement, &clusterpb.TaskPlacement{Task: key(t), WorkerId: w.id, DataAddress: s.hello.DataAddress})
		}
	}
	for _, c := range plan.Chains {
		if jobmaster.IsCoordinated(plan, c) {
			a.coordAt[c.ID] = a.where[checkpoint.TaskID{Vertex: c.ID}]
		}
	}
	a.mu.Lock()
	a.placed = true
	a.mu.Unlock()
	deployed := make(chan error, len(workers))
	for _, w := range workers {
		s := sessions[w.id]
		s.host, s.tmAddr = w.host, w.tmAddr
		dep := &clusterpb.Deployment{Placement: placement, RuntimeMode: jm.opts.Mode.String()}
		for _, t := range w.tasks {
			dep.Tasks = append(dep.Tasks, key(t))
		}
		for ch, cs := range a.coordAt {
			if cs == s {
				dep.Coordinators = append(dep.Coordinators, int32(ch))
			}
		}
		sort.Slice(dep.Coordinators, func(i, k int) bool { return dep.Coordinators[i] < dep.Coordinators[k] })
		if d.Restore != nil {
			// A URI: the workers resolve it with their own filesystems.
			dep.RestorePath = jm.d.cfg.FileSystems.URI(d.Restore.FileSystem(), d.Restore.Path())
			dep.AllowNonRestoredState = jm.opts.AllowNonRestoredState
		}
		if c := jm.opts.Checkpoints; c != nil {
			dep.CheckpointingMode = c.Coordinator.Mode.String()
			dep.Incremental = c.Incremental
		}
		s.setHandler(a.handler(s, deployed))
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Deploy{Deploy: dep}})
	}
	for range workers {
		select {
		case err := <-deployed:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	ok = true
	return a, nil
}

// refusedForGood reports whether a TaskManager's refusal to start a
// worker is one no restart can fix, so that the job fails at once rather
// than through its restart strategy: a request it finds malformed
// (codes.InvalidArgument), a job binary the JobMaster does not have
// (codes.NotFound, taskmanager.ErrNoBinary) or whose bytes do not match
// their digest (codes.DataLoss, taskmanager.ErrBinaryMismatch). Any other
// failure to start a worker (the TaskManager unreachable, lost or
// stopping, a slot it no longer holds) is a failover.
func refusedForGood(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.DataLoss:
		return true
	}
	return false
}

func key(t checkpoint.TaskID) *clusterpb.TaskKey {
	return &clusterpb.TaskKey{Chain: int32(t.Vertex), Subtask: int32(t.Subtask)}
}

func taskID(k *clusterpb.TaskKey) checkpoint.TaskID {
	return checkpoint.TaskID{Vertex: int(k.GetChain()), Subtask: int(k.GetSubtask())}
}

// attemptEvents is where an attempt reports: its job's jobmaster.Events.
type attemptEvents interface {
	TaskEnded(id checkpoint.TaskID, err error)
	TaskFinished(id checkpoint.TaskID)
	Acknowledged(id checkpoint.TaskID, cp int64, ack jobmaster.Ack)
	Declined(id checkpoint.TaskID, cp int64, err error)
	CoordinatorState(cp int64, s jobmaster.CoordinatorSnapshot)
}

// errDeployed ends the deployment's context once Deploy has returned.
var errDeployed = errors.New("jobmanager: the attempt was deployed")

// remoteAttempt is an attempt whose tasks run in workers.
type remoteAttempt struct {
	x        *remoteExecutor
	n        int
	events   attemptEvents
	order    []checkpoint.TaskID
	where    map[checkpoint.TaskID]*session
	coordAt  map[int]*session // by chain
	subtasks []jobmaster.SubtaskMetrics
	metrics  map[checkpoint.TaskID]*task.Metrics
	rates    map[checkpoint.TaskID]*jobmaster.Rates
	// abortDeploy ends the deployment with a failure; it does nothing once
	// Deploy has returned.
	abortDeploy context.CancelCauseFunc

	// states are the subtasks' execution states.
	states *taskStates

	mu sync.Mutex
	// book decides the deployment's bookkeeping (attemptbook.go). Its
	// sessions are appended while the attempt deploys, under mu, and read
	// without it once deployed.
	book *attemptBook
	// tms are the contexts of the TaskManagers the attempt runs on, by id.
	tms map[string]*attemptTM
	// waits are the deployment's channels for the workers' sessions, by
	// worker id (set by expect, under mu).
	waits map[string]chan *session
	// placed is set once every task has its session in where (which is
	// not written after): samplings read where only then.
	placed bool
	wg     sync.WaitGroup

	// samples are the samplings waiting for their workers' answers, by
	// request id (samples.go).
	samples struct {
		sync.Mutex
		next    int64
		waiting map[int64]chan *clusterpb.TaskSamples
	}
}

// attemptTM is a TaskManager an attempt runs a worker on.
type attemptTM struct {
	id, addr string
	// gone ends, with a *TaskManagerLostError, when the TaskManager is lost.
	gone context.Context
	lose context.CancelCauseFunc
}

func newRemoteAttempt(x *remoteExecutor, n int, events attemptEvents, plan *graph.Plan) *remoteAttempt {
	a := &remoteAttempt{x: x, n: n, events: events, where: map[checkpoint.TaskID]*session{},
		metrics: map[checkpoint.TaskID]*task.Metrics{}, rates: map[checkpoint.TaskID]*jobmaster.Rates{}, coordAt: map[int]*session{},
		book: newAttemptBook(x.jm.id, n), tms: map[string]*attemptTM{}, abortDeploy: func(error) {}}
	for _, c := range plan.Chains {
		for s := 0; s < c.Parallelism; s++ {
			id := checkpoint.TaskID{Vertex: c.ID, Subtask: s}
			a.order = append(a.order, id)
			m := &task.Metrics{}
			m.Watermark.Store(math.MinInt64) // until its worker reports one
			m.OutputWatermark.Store(math.MinInt64)
			r := &jobmaster.Rates{}
			a.metrics[id], a.rates[id] = m, r
			a.subtasks = append(a.subtasks, jobmaster.SubtaskMetrics{Vertex: c.Name, Subtask: s, Metrics: m, Rates: r})
		}
	}
	sort.Slice(a.order, func(i, k int) bool { return a.order[i].Compare(a.order[k]) < 0 })
	a.states = newTaskStates(a.order, x.jm.now())
	return a
}

// step steps the attempt's bookkeeping with e and carries out its
// effects after unlocking; it returns the answer.
func (a *remoteAttempt) step(e abEvent) abAnswer {
	a.mu.Lock()
	fx, ans := a.book.Step(e)
	var lose []*attemptTM
	for _, f := range fx {
		if f, ok := f.(afLoseTaskManager); ok {
			lose = append(lose, a.tms[f.tm])
		}
	}
	a.mu.Unlock()
	for _, f := range fx {
		switch f := f.(type) {
		case afLoseTaskManager:
			lose[0].lose(f.err)
			lose = lose[1:]
		case afAbortDeploy:
			a.abortDeploy(f.err)
		case afFailSession:
			f.s.fail(f.err)
		default:
			panic(fmt.Sprintf("jobmanager: unknown attempt effect %T", f))
		}
	}
	return ans
}

// onTaskManager records that the attempt runs a worker on TaskManager id.
func (a *remoteAttempt) onTaskManager(id, addr string) {
	a.mu.Lock()
	if _, ok := a.tms[id]; !ok {
		t := &attemptTM{id: id, addr: addr}
		t.gone, t.lose = context.WithCancelCause(context.Background())
		a.tms[id] = t
	}
	a.mu.Unlock()
	a.step(abTaskManager{tm: id, addr: addr})
}

// expect makes the deployment wait for the Hello of the workers of waits,
// whose TaskManagers are tmOf.
func (a *remoteAttempt) expect(waits map[string]chan *session, tmOf map[string]string) {
	a.mu.Lock()
	a.waits = waits
	a.mu.Unlock()
	a.step(abExpect{workers: tmOf})
}

// attach hands a worker's session to the deployment waiting for it.
func (a *remoteAttempt) attach(s *session) error {
	a.mu.Lock()
	_, ans := a.book.Step(abHello{worker: s.hello.WorkerId, attempt: int(s.hello.Attempt)})
	ch := a.waits[s.hello.WorkerId]
	a.mu.Unlock()
	if ans.err != nil {
		return ans.err
	}
	ch <- s
	return nil
}

// connected adds the session of the attempt's worker on TaskManager tm.
func (a *remoteAttempt) connected(s *session, tm string) {
	a.mu.Lock()
	s.tm = tm
	a.mu.Unlock()
	a.step(abConnected{tm: tm, s: s})
}

// sessions are the attempt's workers' (complete once it has deployed).
func (a *remoteAttempt) sessions() []*session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.book.sessions)
}

// taskManagerLost fails the tasks of the attempt's worker on the lost
// TaskManager: its session ends with err, which fails its tasks, and so
// the attempt, which the restart strategy then restarts from the latest
// checkpoint. A deployment under way ends with err. It reports whether
// the attempt ran on that TaskManager; the TaskManager is not asked to
// stop the worker (it is unreachable; it stops its workers itself when
// its session with the ResourceManager ends).
func (a *remoteAttempt) taskManagerLost(err *TaskManagerLostError) bool {
	return a.step(abTaskManagerLost{err}).ok
}

// workerExited fails the attempt's worker that exited: a deployment under
// way ends with err, and so does the worker's session if it connected,
// which fails its tasks. It reports whether the worker is of this attempt
// (n), on a TaskManager the attempt still holds (not released: the
// attempt is not closed).
func (a *remoteAttempt) workerExited(n int, err *WorkerExitedError) bool {
	return a.step(abWorkerExited{n: n, err: err}).ok
}

// handler processes one worker's messages, in order, on its session's
// receiving goroutine.
func (a *remoteAttempt) handler(s *session, deployed chan<- error) func(*clusterpb.WorkerMessage) {
	go func() {
		<-s.done
		a.x.jm.logins.ended(s)
		a.abortDeploy(lostError(s))
		a.lost(s)
	}()
	return func(m *clusterpb.WorkerMessage) {
		switch m := m.Msg.(type) {
		case *clusterpb.WorkerMessage_Deployed:
			var err error
			if e := m.Deployed.GetError(); e != "" {
				err = fmt.Errorf("jobmanager: %s could not deploy its tasks: %s", s, e)
				if m.Deployed.GetUnrecoverable() {
					err = &restart.Unrecoverable{Err: err}
				}
			}
			deployed <- err
		case *clusterpb.WorkerMessage_TaskEnded:
			te := m.TaskEnded
			t := taskID(te.Task)
			var err error
			switch {
			case te.GetCanceled():
				err = context.Canceled
			case te.GetError() != "":
				err = &remoteError{msg: te.GetError(), where: s.String()}
				if !te.GetRecoverable() {
					err = &restart.Unrecoverable{Err: err}
				}
				// A worker of an older Sluice does not name the type.
				err = a.failure(s, t, cmp.Or(te.GetErrorType(), clusterpb.ErrorClass(err)), err)
			}
			a.taskEnded(t, err)
		case *clusterpb.WorkerMessage_Ack:
			a.events.Acknowledged(taskID(m.Ack.Task), m.Ack.CheckpointId, jobmaster.Ack{Handle: m.Ack.Handle, Shared: m.Ack.Shared, Bytes: m.Ack.Bytes})
		case *clusterpb.WorkerMessage_Decline:
			a.events.Declined(taskID(m.Decline.Task), m.Decline.CheckpointId, errors.New(m.Decline.Reason))
		case *clusterpb.WorkerMessage_Finished:
			a.events.TaskFinished(taskID(m.Finished.Task))
		case *clusterpb.WorkerMessage_CoordinatorState:
			cs := m.CoordinatorState
			snap := jobmaster.CoordinatorSnapshot{Chain: int(cs.Chain), State: cs.State}
			if cs.Error != "" {
				snap.Err = errors.New(cs.Error)
			}
			a.events.CoordinatorState(cs.CheckpointId, snap)
		case *clusterpb.WorkerMessage_OperatorEvent:
			ev := m.OperatorEvent
			if to := a.coordAt[int(ev.Task.GetChain())]; to != nil {
				to.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_OperatorEvent{OperatorEvent: ev}})
			}
		case *clusterpb.WorkerMessage_CoordinatorEvent:
			ev := m.CoordinatorEvent
			if to := a.where[taskID(ev.Task)]; to != nil {
				to.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_CoordinatorEvent{CoordinatorEvent: ev}})
			}
		case *clusterpb.WorkerMessage_Trigger:
			a.forwardTrigger(m.Trigger)
		case *clusterpb.WorkerMessage_Samples:
			a.samplesAnswered(m.Samples)
		case *clusterpb.WorkerMessage_Metrics:
			a.x.jm.logins.report(s, m.Metrics.GetKerberos())
			now := a.x.jm.now()
			for _, sm := range m.Metrics.Subtasks {
				if tm := a.metrics[taskID(sm.Task)]; tm != nil {
					tm.RecordsIn.Store(sm.RecordsIn)
					tm.RecordsOut.Store(sm.RecordsOut)
					tm.BusyNanos.Store(sm.BusyMs * 1e6)
					tm.BackpressuredNanos.Store(sm.BackpressuredMs * 1e6)
					tm.IdleNanos.Store(sm.IdleMs * 1e6)
					tm.Watermark.Store(sm.Watermark)
					tm.OutputWatermark.Store(sm.OutputWatermark)
					tm.BytesIn.Store(sm.BytesIn)
					tm.BytesOut.Store(sm.BytesOut)
					tm.Gauges.Replace(sm.Gauges)
					a.rates[taskID(sm.Task)].Observe(jobmaster.SampleOf(now, tm))
				}
			}
		}
	}
}

// remoteError is a task failure reported by a worker.
type remoteError struct{ msg, where string }

func (e *remoteError) Error() string { return e.msg + " (in " + e.where + ")" }

// TaskFailure is the failure of one subtask on a cluster, with where it
// ran: the exception history of GET /jobs/:jobid/exceptions shows it as
// Flink shows a task's exception. Its text is its error's, and it unwraps
// to it (restart.Recoverable sees through it).
type TaskFailure struct {
	Task checkpoint.TaskID
	// TaskName is Flink's name of the subtask: its chain's name and
	// "(k/n)", k counted from 1.
	TaskName string
	// TaskManagerID and Endpoint (its RPC address, host:port) name the
	// TaskManager the subtask's worker ran on.
	TaskManagerID, Endpoint string
	// Class names the error's type (clusterpb.ErrorClass); for an error
	// in the worker, as the worker reported it.
	Class string
	// Millis is when the JobMaster learned of the failure, epoch ms.
	Millis int64
	Err    error
}

func (e *TaskFailure) Error() string { return e.Err.Error() }

// Unwrap returns the subtask's error.
func (e *TaskFailure) Unwrap() error { return e.Err }

// WorkerLostError fails the subtasks of a worker whose session with the
// JobMaster ended before they did: the worker or its TaskManager died, the
// connection broke, or the worker was silent for heartbeat.timeout (then
// it matches ErrHeartbeatTimeout). A TaskManager the ResourceManager lost
// fails its subtasks with a *TaskManagerLostError instead.
type WorkerLostError struct {
	// Worker and TaskManagerID name the worker and its TaskManager.
	Worker, TaskManagerID string
	// Err says why the session ended.
	Err error
}

// Error says the worker was lost and why; the cause's own package prefix
// is not repeated (and the text differs from the cause's, so that
// clusterpb.ErrorClass names this type).
func (e *WorkerLostError) Error() string {
	return "jobmanager: worker lost: " + strings.TrimPrefix(e.Err.Error(), "jobmanager: ")
}

// Unwrap returns why the session ended.
func (e *WorkerLostError) Unwrap() error { return e.Err }

// failure is the failure of subtask t of the worker of s with err, whose
// type is class.
func (a *remoteAttempt) failure(s *session, t checkpoint.TaskID, class string, err error) *TaskFailure {
	c := a.x.jm.plan.Chains[t.Vertex]
	return &TaskFailure{Task: t, TaskName: fmt.Sprintf("%s (%d/%d)", c.Name, t.Subtask+1, c.Parallelism),
		TaskManagerID: s.hello.GetTaskManagerId(), Endpoint: s.tmAddr, Class: class, Millis: a.x.jm.now(), Err: err}
}

// forwardTrigger sends a trigger to the workers of its tasks.
func (a *remoteAttempt) forwardTrigger(t *clusterpb.TriggerCheckpoint) {
	by := map[*session][]*clusterpb.TaskKey{}
	var order []*session
	for _, k := range t.Tasks {
		s := a.where[taskID(k)]
		if s == nil {
			continue
		}
		if _, ok := by[s]; !ok {
			order = append(order, s)
		}
		by[s] = append(by[s], k)
	}
	for _, s := range order {
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Trigger{Trigger: &clusterpb.TriggerCheckpoint{
			CheckpointId: t.CheckpointId, Kind: t.Kind, Timestamp: t.Timestamp, Tasks: by[s],
			Location: t.Location, LocationKind: t.LocationKind,
		}}})
	}
}

// taskEnded reports a task's end once, and keeps its failure.
func (a *remoteAttempt) taskEnded(t checkpoint.TaskID, err error) {
	if !a.step(abTaskEnded{t: t, err: err}).ok {
		return
	}
	st := restapi.TaskFinished
	switch {
	case errors.Is(err, context.Canceled):
		st = restapi.TaskCanceled
	case err != nil:
		st = restapi.TaskFailed
	}
	a.states.set(t, st, a.x.jm.now())
	a.events.TaskEnded(t, err)
}

// lost ends the tasks of a worker whose session ended, with its reason.
func (a *remoteAttempt) lost(s *session) {
	err := lostError(s)
	for _, t := range a.order {
		if a.where[t] == s {
			a.taskEnded(t, a.failure(s, t, clusterpb.ErrorClass(err), err))
		}
	}
}

// lostError is the failure of a worker whose session ended: a lost
// TaskManager's failure names it; any other end of the session is the
// worker's loss.
func lostError(s *session) error {
	if tmLost := (*TaskManagerLostError)(nil); errors.As(s.err, &tmLost) {
		return s.err
	}
	if exited := (*WorkerExitedError)(nil); errors.As(s.err, &exited) {
		return s.err
	}
	return &WorkerLostError{Worker: s.hello.GetWorkerId(), TaskManagerID: s.hello.GetTaskManagerId(), Err: s.err}
}

// taskFailures are the failures of the attempt's subtasks, in the order
// the JobMaster learned of them.
func (a *remoteAttempt) taskFailures() []*TaskFailure {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.book.failures)
}

// Tasks implements jobmaster.Attempt.
func (a *remoteAttempt) Tasks() []checkpoint.TaskID { return a.order }

// Metrics implements jobmaster.Attempt.
func (a *remoteAttempt) Metrics() []jobmaster.SubtaskMetrics { return a.subtasks }

// Start implements jobmaster.Attempt.
func (a *remoteAttempt) Start() {
	a.step(abStart{})
	a.states.setAll(restapi.TaskRunning, a.x.jm.now())
	sessions := a.sessions()
	for _, s := range sessions {
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Start{Start: &clusterpb.Start{}}})
	}
	// A worker lost before Start has not reported its tasks yet.
	for _, s := range sessions {
		select {
		case <-s.done:
			a.lost(s)
		default:
		}
	}
}

// TriggerCheckpoint implements jobmaster.Attempt: coordinated chains through
// the worker hosting their coordinator, the others to their workers.
func (a *remoteAttempt) TriggerCheckpoint(id int64, kind checkpoint.Kind, tasks []checkpoint.TaskID, loc *storage.Location) []jobmaster.CoordinatorSnapshot {
	base := &clusterpb.TriggerCheckpoint{CheckpointId: id, Kind: int32(kind), Location: a.x.jm.d.cfg.FileSystems.URI(loc.FileSystem(), loc.Dir()), LocationKind: int32(loc.Kind())}
	coordinated := map[*session]*clusterpb.CheckpointCoordinators{}
	plain := map[*session][]*clusterpb.TaskKey{}
	var order []*session
	for _, t := range tasks {
		if s := a.coordAt[t.Vertex]; s != nil {
			cc, ok := coordinated[s]
			if !ok {
				cc = &clusterpb.CheckpointCoordinators{Trigger: &clusterpb.TriggerCheckpoint{CheckpointId: id, Kind: base.Kind, Location: base.Location, LocationKind: base.LocationKind}}
				coordinated[s] = cc
			}
			if len(cc.Chains) == 0 || cc.Chains[len(cc.Chains)-1] != int32(t.Vertex) {
				cc.Chains = append(cc.Chains, int32(t.Vertex))
			}
			cc.Trigger.Tasks = append(cc.Trigger.Tasks, key(t))
			continue
		}
		s := a.where[t]
		if _, ok := plain[s]; !ok {
			order = append(order, s)
		}
		plain[s] = append(plain[s], key(t))
	}
	for _, s := range a.sessions() {
		if cc, ok := coordinated[s]; ok {
			s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_CheckpointCoordinators{CheckpointCoordinators: cc}})
		}
	}
	for _, s := range order {
		t := &clusterpb.TriggerCheckpoint{CheckpointId: id, Kind: base.Kind, Location: base.Location, LocationKind: base.LocationKind, Tasks: plain[s]}
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Trigger{Trigger: t}})
	}
	// Every other worker learns where the checkpoint goes, with no task to
	// trigger: its tasks downstream take their snapshots when the barrier
	// reaches them over the data exchange, and their uploads wait for the
	// location. A worker whose sources have all finished is triggered no
	// more, yet its other tasks still checkpoint.
	for _, s := range a.sessions() {
		if _, ok := coordinated[s]; ok {
			continue
		}
		if _, ok := plain[s]; ok {
			continue
		}
		t := &clusterpb.TriggerCheckpoint{CheckpointId: id, Kind: base.Kind, Location: base.Location, LocationKind: base.LocationKind}
		s.send(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Trigger{Trigger: t}})
	}
	return nil
}

func (a *remoteAttempt) broadcast(m *clusterpb.JobMasterMessage) {
	for _, s := range a.sessions() {
		s.send(m)
	}
}

// NotifyComplete implements jobmaster.Attempt.
func (a *remoteAttempt) NotifyComplete(id int64) {
	a.broadcast(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Complete{Complete: &clusterpb.CheckpointNotification{CheckpointId: id}}})
}

// Abort implements jobmaster.Attempt.
func (a *remoteAttempt) Abort(id int64) {
	a.broadcast(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Abort{Abort: &clusterpb.CheckpointNotification{CheckpointId: id}}})
}

// AllFinished implements jobmaster.Attempt.
func (a *remoteAttempt) AllFinished() {
	a.broadcast(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_AllFinished{AllFinished: &clusterpb.AllFinished{}}})
}

// Cancel implements jobmaster.Attempt: the workers cancel their tasks; the
// TaskManagers kill workers that have not ended within the grace period.
func (a *remoteAttempt) Cancel(cause error) {
	a.states.setAll(restapi.TaskCanceling, a.x.jm.now())
	a.broadcast(&clusterpb.JobMasterMessage{Msg: &clusterpb.JobMasterMessage_Cancel{Cancel: &clusterpb.Cancel{Reason: cause.Error()}}})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		t := time.NewTimer(a.x.jm.d.cfg.cancelGrace)
		defer t.Stop()
		for _, s := range a.sessions() {
			select {
			case <-s.done:
			case <-t.C:
				a.killWorkers()
				return
			}
		}
	}()
}

// killWorkers has the attempt's TaskManagers stop its workers, and waits
// (10 s at most) until they have: a worker that does not answer (hung,
// frozen) is killed before the next attempt starts. A lost TaskManager is
// not asked, or no longer waited for once it is lost while asked: it is
// unreachable, and stops its workers itself when its session with the
// ResourceManager ends.
func (a *remoteAttempt) killWorkers() {
	a.mu.Lock()
	var tms []*attemptTM
	for _, id := range a.book.heldTaskManagers() {
		tms = append(tms, a.tms[id])
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range tms {
		if t.gone.Err() != nil {
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.gone, 10*time.Second)
			defer cancel()
			err := a.x.jm.d.cancelJob(ctx, t.addr, a.x.jm.id, a.n)
			switch cause := context.Cause(t.gone); {
			case err == nil:
			case cause != nil:
				a.x.jm.log.Info("not waiting for a lost TaskManager to stop its workers", "taskmanager", t.id, "reason", cause)
			default:
				a.x.jm.log.Warn("stopping workers failed", "taskmanager", t.id, "address", t.addr, "err", err)
			}
		})
	}
	wg.Wait()
}

// release forgets the attempt's TaskManagers: losing one of them no
// longer fails anything.
func (a *remoteAttempt) release() { a.step(abRelease{}) }

// abandon stops the workers of an attempt that failed to deploy (jobCtx
// is the job's, which ends when the job is cancelled, not the
// deployment's, which a lost TaskManager also ends); its tasks end
// CANCELED if the job is cancelled, else FAILED.
func (a *remoteAttempt) abandon(jobCtx context.Context) {
	st := restapi.TaskFailed
	if jobCtx.Err() != nil {
		st = restapi.TaskCanceled
	}
	a.states.setAll(st, a.x.jm.now())
	for _, s := range a.sessions() {
		s.close()
	}
	a.killWorkers()
	a.release()
}

// Close implements jobmaster.Attempt: the sessions end (the workers exit) and
// stragglers are killed.
func (a *remoteAttempt) Close() {
	sessions := a.sessions()
	for _, s := range sessions {
		s.close()
	}
	a.wg.Wait()
	t := time.NewTimer(a.x.jm.d.cfg.cancelGrace)
	defer t.Stop()
	for _, s := range sessions {
		select {
		case <-s.done:
		case <-t.C:
		}
	}
	a.killWorkers()
	a.release()
}
