package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/ownerloop"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
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

// run is the owner loop of the job: an ownerloop stepping the job's
// lifecycle (the decisions: restores, deployments, restarts, the end),
// whose effects the applier carries out. Deploying and running an attempt
// block the loop; the attempt's own events (tasks ending, checkpoints,
// savepoint requests) are runAttempt's, and a cancellation reaches them
// through the job's context.
func (j *Job) run() {
	defer close(j.done)
	ap := &applier{j: j, res: &Result{JobID: j.id}}
	ap.loop = ownerloop.New(ownerloop.Config[lcEvent, lcEffect, struct{}]{
		Machine: &lifecycle{restart: j.opts.Restart, recover: j.opts.Recover},
		Apply:   ap.apply,
		Tick:    lcEvent{kind: evTick},
		Clock:   j.opts.Clock,
	})
	stop := context.AfterFunc(j.ctx, func() { ap.loop.Post(lcEvent{kind: evCancelled, cause: context.Cause(j.ctx)}) })
	defer stop()
	ap.loop.Post(lcEvent{kind: evStart})
	_ = ap.loop.Run(context.Background()) // only fxEnd stops it, with nil
}

// applier carries out the lifecycle's effects on the owner goroutine.
type applier struct {
	j    *Job
	loop *ownerloop.Loop[lcEvent, lcEffect, struct{}]
	res  *Result
	// restore is what the next or current attempt restores (nil: nothing).
	restore *Restore
	// attempt and cancel are the deployed attempt and the end of its
	// context.
	attempt Attempt
	cancel  context.CancelCauseFunc
}

// done is the part of an event that says whether the job's context has
// ended.
func (ap *applier) done(e lcEvent) lcEvent {
	if ap.j.ctx.Err() != nil {
		e.ctxDone, e.cause = true, context.Cause(ap.j.ctx)
	}
	return e
}

func (ap *applier) apply(effects []lcEffect) []lcEvent {
	j := ap.j
	var next []lcEvent
	for _, f := range effects {
		switch f.kind {
		case fxLoadRestore:
			if f.attempt > 0 && j.ctx.Err() != nil {
				// Cancelled while the job waited to restart: no restore
				// to load.
				next = append(next, ap.done(lcEvent{kind: evRestored}))
				break
			}
			var err error
			if f.recover {
				ap.restore, err = j.recoveryRestore()
			} else {
				ap.restore, err = j.initialRestore()
			}
			next = append(next, ap.done(lcEvent{kind: evRestored, err: err, restored: ap.restore != nil}))
			if err == nil && j.ctx.Err() != nil {
				ap.restore.Close() // the lifecycle ends the job
			}
		case fxDeploy:
			var actx context.Context
			actx, ap.cancel = context.WithCancelCause(j.ctx)
			a, err := j.exec.Deploy(actx, Deployment{Attempt: f.attempt, Restore: ap.restore, Events: Events{j: j, attempt: f.attempt}})
			if err != nil {
				ap.cancel(err)
				ap.restore.Close()
			}
			ap.attempt = a
			next = append(next, ap.done(lcEvent{kind: evDeployed, err: err}))
		case fxReportRestore:
			r := ap.restore
			j.opts.Listener.Restored(RestoreStats{ID: r.ID(), Kind: r.kind, Path: r.dir, Millis: f.at})
		case fxStatus:
			j.opts.Listener.StatusChanged(f.status, f.at, f.err)
		case fxRun:
			a := ap.attempt
			// Readers (REST) load the published slice header while a later
			// attempt assigns res.Subtasks: each attempt publishes its own.
			subtasks := a.Metrics()
			ap.res.Subtasks = subtasks
			j.metrics.Store(&subtasks)
			err := j.runAttempt(f.attempt, a, ap.res)
			a.Close()
			ap.cancel(errors.New("the attempt ended"))
			ap.attempt = nil
			e := lcEvent{kind: evAttemptEnded, err: err}
			if err != nil {
				e = ap.done(e)
			}
			next = append(next, e)
		case fxLogRestart:
			msg := "deploying the job failed; restarting"
			if f.deployed {
				msg = "job failed; restarting"
			}
			j.opts.Log.Warn(msg, "attempt", f.attempt, "delay", f.delay, "err", f.err)
		case fxCleanup:
			j.cleanup(f.finished)
		case fxEnd:
			ap.res.Restarts, ap.res.Duration = f.restarts, f.duration
			j.result, j.err = ap.res, f.err
			ap.loop.Stop(nil)
		}
	}
	return next
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
