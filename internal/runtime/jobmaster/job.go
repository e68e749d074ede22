package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/restart"
)

// Job is a running local job and its JobMaster.
type Job struct {
	plan   *graph.Plan
	opts   Options
	id     string
	opIDs  map[graph.NodeID]string
	ctx    context.Context
	cancel context.CancelFunc
	// cancelled: Cancel was called (not only the parent context ended).
	cancelled atomic.Bool

	events   chan any
	requests chan savepointReq
	ckpt     *checkpoints // nil without checkpointing
	exec     Executor

	done   chan struct{}
	result *Result
	err    error
	// metrics of the current attempt's subtasks.
	metrics atomic.Pointer[[]SubtaskMetrics]
}

// Events of the owner loop.
type (
	taskEnded struct {
		attempt int
		task    checkpoint.TaskID
		err     error
	}
	taskFinished struct {
		attempt int
		task    checkpoint.TaskID
	}
	declined struct {
		attempt int
		task    checkpoint.TaskID
		id      checkpoint.ID
		err     error
	}
	uploaded struct {
		attempt int
		task    checkpoint.TaskID
		id      checkpoint.ID
		ack     Ack
	}
	coordState struct {
		attempt int
		id      checkpoint.ID
		snap    CoordinatorSnapshot
	}
	savepointReq struct {
		kind  checkpoint.Kind
		dir   string
		reply chan savepointReply
	}
	savepointReply struct {
		path string
		err  error
	}
)

// Start starts the job; Wait returns its outcome.
func Start(ctx context.Context, plan *graph.Plan, opts Options) (*Job, error) {
	opts.defaults()
	j := &Job{
		plan:     plan,
		opts:     opts,
		id:       opts.JobID,
		opIDs:    plan.Graph.OperatorIDs(),
		events:   make(chan any, 256),
		requests: make(chan savepointReq),
		done:     make(chan struct{}),
	}
	if j.id == "" {
		j.id = fmt.Sprintf("%s-%x", plan.Graph.Fingerprint()[:12], time.Now().UnixNano()&0xffffff)
	}
	// Every line the JobMaster logs names its job, once.
	j.opts.Log = j.opts.Log.With("job", j.id)
	if opts.Checkpoints != nil {
		c, err := newCheckpoints(j, opts.Checkpoints)
		if err != nil {
			return nil, err
		}
		j.ckpt = c
	}
	j.exec = opts.Executor
	if j.exec == nil {
		j.exec = &inProcess{j: j, writer: NewSnapshotWriter(plan.Graph)}
	}
	j.ctx, j.cancel = context.WithCancel(ctx)
	go j.run()
	return j, nil
}

// Metrics are the metrics of the current attempt's subtasks.
func (j *Job) Metrics() []SubtaskMetrics {
	if m := j.metrics.Load(); m != nil {
		return *m
	}
	return nil
}

// ID is the job's identifier.
func (j *Job) ID() string { return j.id }

// Wait blocks until the job has ended.
func (j *Job) Wait() (*Result, error) {
	<-j.done
	return j.result, j.err
}

// Cancel stops the job; Wait then reports it cancelled. Its checkpoints
// are discarded unless execution.checkpointing.externalized-checkpoint-retention
// retains them on cancellation.
func (j *Job) Cancel() {
	j.cancelled.Store(true)
	j.cancel()
}

// TriggerCheckpoint takes a checkpoint of kind checkpoint.Checkpoint (as
// the job checkpoints: incremental if configured) or
// checkpoint.FullCheckpoint (sharing no files with earlier checkpoints) now
// and returns its path.
func (j *Job) TriggerCheckpoint(kind checkpoint.Kind) (string, error) {
	if !kind.IsCheckpoint() {
		return "", fmt.Errorf("jobmaster: %w: %v", checkpoint.ErrNotCheckpoint, kind)
	}
	return j.savepoint(kind, "")
}

// TriggerSavepoint takes a savepoint into dir (default: the configured
// savepoint directory) and returns its path; the job keeps running.
func (j *Job) TriggerSavepoint(dir string) (string, error) {
	return j.savepoint(checkpoint.Savepoint, dir)
}

// StopWithSavepoint takes a savepoint and stops the job (Flink's stop);
// with drain, event time is ended first so every window and timer fires
// (stop --drain).
func (j *Job) StopWithSavepoint(dir string, drain bool) (string, error) {
	kind := checkpoint.SavepointSuspend
	if drain {
		kind = checkpoint.SavepointTerminate
	}
	return j.savepoint(kind, dir)
}

func (j *Job) savepoint(kind checkpoint.Kind, dir string) (string, error) {
	if j.ckpt == nil {
		return "", ErrNotCheckpointing
	}
	req := savepointReq{kind: kind, dir: dir, reply: make(chan savepointReply, 1)}
	select {
	case j.requests <- req:
	case <-j.done:
		return "", fmt.Errorf("jobmaster: job %s has ended", j.id)
	}
	select {
	case r := <-req.reply:
		return r.path, r.err
	case <-j.done:
		return "", fmt.Errorf("jobmaster: job %s ended before the savepoint completed", j.id)
	}
}

// send delivers an event to the owner loop, unless the job has ended.
func (j *Job) send(ev any) {
	select {
	case j.events <- ev:
	case <-j.done:
	}
}

// run is the owner loop of the job. It deploys attempts and runs them
// until one finishes. An attempt that fails, or fails to deploy (a
// TaskManager lost or a worker that dies while it deploys, no slots in
// time), is a failover as in Flink: the restart strategy decides whether
// the job restarts from the latest checkpoint, and either counts as a
// restart; an unrecoverable failure (restart.Recoverable) fails the job
// at once.
func (j *Job) run() {
	start := time.Now()
	res := &Result{JobID: j.id}
	defer close(j.done)
	var restore *Restore
	var err error
	if j.opts.Recover {
		restore, err = j.recoveryRestore()
	} else {
		restore, err = j.initialRestore()
	}
	if err != nil {
		j.result, j.err = res, err
		j.opts.Listener.StatusChanged(StatusFailed, j.opts.Clock.NowMillis(), err)
		return
	}
	for n := 0; ; n++ {
		actx, cancel := context.WithCancelCause(j.ctx)
		a, err := j.exec.Deploy(actx, Deployment{Attempt: n, Restore: restore, Events: Events{j: j, attempt: n}})
		deployed := err == nil
		if !deployed {
			cancel(err)
			restore.Close()
			res.Duration = time.Since(start)
		} else {
			if restore != nil {
				j.opts.Listener.Restored(RestoreStats{ID: restore.ID(), Kind: restore.kind, Path: restore.dir, Millis: j.opts.Clock.NowMillis()})
			}
			j.opts.Listener.StatusChanged(StatusRunning, j.opts.Clock.NowMillis(), nil)
			// Readers (REST) load the published slice header while a later
			// attempt assigns res.Subtasks: each attempt publishes its own.
			subtasks := a.Metrics()
			res.Subtasks = subtasks
			j.metrics.Store(&subtasks)
			err = j.runAttempt(n, a, res)
			a.Close()
			cancel(errors.New("the attempt ended"))
			res.Duration = time.Since(start)
			if err == nil {
				j.result = res
				j.cleanup(true)
				j.ended(nil)
				return
			}
		}
		if j.ctx.Err() != nil {
			j.result, j.err = res, fmt.Errorf("%w: %w", errCancelled, context.Cause(j.ctx))
			j.cleanup(false)
			j.ended(j.err)
			return
		}
		now := j.opts.Clock.NowMillis()
		d := j.opts.Restart.OnFailure(now, err)
		if !restart.Recoverable(err) || !d.Restart {
			if deployed {
				err = jobError(err)
			}
			j.result, j.err = res, err
			j.cleanup(false)
			j.ended(j.err)
			return
		}
		j.opts.Listener.StatusChanged(StatusRestarting, now, err)
		if deployed {
			j.opts.Log.Warn("job failed; restarting", "attempt", n+1, "delay", d.Delay, "err", err)
		} else {
			j.opts.Log.Warn("deploying the job failed; restarting", "attempt", n+1, "delay", d.Delay, "err", err)
		}
		if d.Delay > 0 {
			ch, stop := j.opts.Clock.AfterMillis(now + d.Delay.Milliseconds())
			select {
			case <-ch:
			case <-j.ctx.Done():
			}
			stop()
			if j.ctx.Err() != nil {
				j.result, j.err = res, fmt.Errorf("%w: %w", errCancelled, context.Cause(j.ctx))
				j.cleanup(false)
				j.ended(j.err)
				return
			}
		}
		res.Restarts++
		if restore, err = j.recoveryRestore(); err != nil {
			j.result, j.err = res, err
			j.cleanup(false)
			j.ended(err)
			return
		}
	}
}

// running is the owner loop's view of the attempt it runs.
type running struct {
	n        int
	a        Attempt
	tasks    []checkpoint.TaskID
	finished map[checkpoint.TaskID]bool
	alive    int
}

// runAttempt runs one attempt to its end: nil when every task finished.
func (j *Job) runAttempt(n int, a Attempt, res *Result) error {
	r := &running{n: n, a: a, tasks: a.Tasks(), finished: map[checkpoint.TaskID]bool{}}
	var coord *checkpoint.Coordinator
	if j.ckpt != nil {
		coord = j.ckpt.newCoordinator(r)
		defer j.ckpt.abortAll(coord)
	}
	a.Start()
	r.alive = len(r.tasks)
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
			a.Cancel(err)
		}
	}
	for r.alive > 0 {
		var tick <-chan struct{}
		var stopTick func()
		if coord != nil && failure == nil {
			if at, ok := coord.Deadline(); ok {
				tick, stopTick = j.opts.Clock.AfterMillis(at)
			}
		}
		var reqs chan savepointReq
		if failure == nil {
			reqs = j.requests
		}
		select {
		case ev := <-j.events:
			switch ev := ev.(type) {
			case taskEnded:
				if ev.attempt != n {
					break
				}
				r.alive--
				if ev.err != nil && !(failure != nil && errors.Is(ev.err, context.Canceled)) {
					fail(ev.err)
				}
			case taskFinished:
				if ev.attempt != n || failure != nil {
					break
				}
				r.finished[ev.task] = true
				if coord != nil {
					j.ckpt.apply(r, coord, coord.TaskFinished(ev.task), res, fail)
				}
				if len(r.finished) == len(r.tasks) {
					a.AllFinished()
				}
			case declined:
				if ev.attempt == n && coord != nil && failure == nil {
					j.ckpt.apply(r, coord, coord.Decline(j.opts.Clock.NowMillis(), ev.id, ev.task, ev.err), res, fail)
				}
			case coordState:
				if ev.attempt == n && coord != nil && failure == nil {
					j.ckpt.apply(r, coord, j.ckpt.coordinatorSnapshot(coord, ev.id, ev.snap), res, fail)
				}
			case uploaded:
				if ev.attempt != n || coord == nil || failure != nil {
					break
				}
				j.ckpt.acked(ev.id, ev.ack)
				j.ckpt.apply(r, coord, coord.Ack(j.opts.Clock.NowMillis(), ev.id, ev.task, ev.ack.Handle), res, fail)
			}
		case req := <-reqs:
			if coord == nil {
				req.reply <- savepointReply{err: ErrNotCheckpointing}
				break
			}
			var id checkpoint.ID
			var actions []checkpoint.Action
			var err error
			if req.kind.IsCheckpoint() {
				id, actions, err = coord.TriggerCheckpoint(j.opts.Clock.NowMillis(), req.kind)
			} else {
				id, actions, err = coord.TriggerSavepoint(j.opts.Clock.NowMillis(), req.kind)
			}
			if err != nil {
				req.reply <- savepointReply{err: err}
				break
			}
			if req.kind.IsCheckpoint() {
				j.ckpt.savepoint[id] = req
			} else if err := j.ckpt.startSavepoint(id, req); err != nil {
				// No barrier for a savepoint with nowhere to go: it fails
				// now, and its failure is in the history.
				req.reply <- savepointReply{err: err}
				actions = j.ckpt.triggerFailed(coord, actions[0].(checkpoint.TriggerBarrier), err)
			}
			j.ckpt.apply(r, coord, actions, res, fail)
		case <-tick:
			j.ckpt.apply(r, coord, coord.Tick(j.opts.Clock.NowMillis()), res, fail)
		case <-j.ctx.Done():
			fail(context.Cause(j.ctx))
		}
		if stopTick != nil {
			stopTick()
		}
	}
	return failure
}

// ended reports the job's final status.
func (j *Job) ended(err error) {
	st := StatusFinished
	switch {
	case err != nil && errors.Is(err, errCancelled):
		st = StatusCanceled
	case err != nil:
		st = StatusFailed
	}
	j.opts.Listener.StatusChanged(st, j.opts.Clock.NowMillis(), err)
}

// IsCancelled reports whether err is the error of a cancelled job.
func IsCancelled(err error) bool { return errors.Is(err, errCancelled) }

// cleanup removes what the job's end makes obsolete.
func (j *Job) cleanup(finished bool) {
	if j.ckpt != nil {
		// Only a cancel discards: a job whose context ended (its JobManager
		// shutting down, an ApplicationMaster killed through YARN) is
		// suspended, and its checkpoints are what resuming it needs.
		j.ckpt.jobEnded(finished, j.cancelled.Load())
	}
}
