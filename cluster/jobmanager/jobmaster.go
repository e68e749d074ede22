package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// jobMaster is the JobMaster of one job: internal/runtime/jobmaster's owner loop with
// an executor whose tasks run in workers, and what the REST API shows of
// the job.
type jobMaster struct {
	d         *Dispatcher
	id        string
	name      string
	graph     *graph.JobGraph
	plan      *graph.Plan
	graphJSON []byte
	binary    blob
	args      []string
	env       map[string]string
	// dynamic are the configuration overrides the job was submitted with,
	// passed on to its workers.
	dynamic map[string]string
	cfg     *conf.Configuration
	opts    jobmaster.Options
	log     *slog.Logger
	pool    *slotPool
	exec    *remoteExecutor
	job     *jobmaster.Job
	done    chan struct{}
	// logins are the Kerberos logins its workers report.
	logins workerLogins

	// stats are what REST shows of the job's lifecycle, as the
	// Dispatcher's loop last published them (nil: none yet).
	stats atomic.Pointer[jobStats]
}

// jobStats is what the REST API reports of a job.
type jobStats struct {
	status     jobmaster.Status
	timestamps map[jobmaster.Status]int64
	start, end int64
	exceptions []JobException
	ckpt       CheckpointCounts
	history    []jobmaster.CheckpointStats // newest last, bounded
	latest     *jobmaster.CheckpointStats
	latestSave *jobmaster.CheckpointStats
	latestFail *jobmaster.CheckpointStats
	// inProgress are the checkpoints and savepoints triggered and not
	// ended, by ID.
	inProgress map[int64]jobmaster.CheckpointStats
	// restored is the latest snapshot an attempt restored; restores
	// counts them.
	restored *jobmaster.RestoreStats
	restores int
	err      error
	restarts int
	stopSave string
}

// JobException is a failure of the job, with the time it happened.
type JobException struct {
	Millis  int64
	Message string
	// Class names the error's type (clusterpb.ErrorClass).
	Class string
	// TaskName, TaskManagerID and Endpoint say which subtask failed and on
	// which TaskManager (its RPC address); empty for a failure of the
	// whole job.
	TaskName, TaskManagerID, Endpoint string
	// Concurrent are the failures of other subtasks of the same attempt,
	// in the order the JobMaster learned of them (root failures only).
	Concurrent []JobException
}

// jobException describes a failure: a subtask's, with where it ran, or
// the job's.
func jobException(err error, at int64) JobException {
	var tf *TaskFailure
	if errors.As(err, &tf) {
		return JobException{Millis: tf.Millis, Message: err.Error(), Class: tf.Class, TaskName: tf.TaskName,
			TaskManagerID: tf.TaskManagerID, Endpoint: tf.Endpoint}
	}
	e := JobException{Millis: at, Message: err.Error(), Class: clusterpb.ErrorClass(err)}
	// A failure of no subtask (the attempt failed to deploy) may still
	// name its TaskManager.
	var tmLost *TaskManagerLostError
	var workerLost *WorkerLostError
	var workerExited *WorkerExitedError
	switch {
	case errors.As(err, &workerExited):
		e.TaskManagerID = workerExited.TaskManager
	case errors.As(err, &tmLost):
		e.TaskManagerID = tmLost.TaskManager
	case errors.As(err, &workerLost):
		e.TaskManagerID = workerLost.TaskManagerID
	}
	return e
}

// rootException describes the failure that failed an attempt (or the
// job), with the other subtasks' failures of that attempt.
func rootException(cause error, at int64, failures []*TaskFailure) JobException {
	e := jobException(cause, at)
	var root *TaskFailure
	if !errors.As(cause, &root) || !slices.Contains(failures, root) {
		return e
	}
	for _, f := range failures {
		if f != root {
			e.Concurrent = append(e.Concurrent, jobException(f, at))
		}
	}
	return e
}

// now is the time on the job's clock (the Dispatcher's), epoch ms.
func (jm *jobMaster) now() int64 { return jm.d.now() }

// CheckpointCounts count a job's checkpoints.
type CheckpointCounts struct {
	Completed, Failed int
}

const maxHistory = 10

// report hands what the job's owner loop reported to the job's lifecycle,
// on the Dispatcher's loop, and returns once its effects are carried out.
func (jm *jobMaster) report(e lcEvent) { jm.d.call(dReport{id: jm.id, e: e}) }

func (jm *jobMaster) StatusChanged(s jobmaster.Status, at int64, cause error) {
	// Every task of the attempt has ended by now: its failures are all in.
	var failures []*TaskFailure
	if jm.exec != nil {
		if a := jm.exec.currentAttempt(); a != nil {
			failures = a.taskFailures()
		}
	}
	jm.report(lcStatus{status: s, at: at, cause: cause, cancelled: cause != nil && jobmaster.IsCancelled(cause), failures: failures})
}

func (jm *jobMaster) CheckpointTriggered(c jobmaster.CheckpointStats) {
	jm.report(lcCheckpointTriggered{c})
}

func (jm *jobMaster) Restored(r jobmaster.RestoreStats) { jm.report(lcRestored{r}) }

func (jm *jobMaster) CheckpointCompleted(c jobmaster.CheckpointStats) {
	jm.report(lcCheckpointCompleted{c})
}

func (jm *jobMaster) CheckpointFailed(c jobmaster.CheckpointStats) { jm.report(lcCheckpointFailed{c}) }

func appendBounded(h []jobmaster.CheckpointStats, c jobmaster.CheckpointStats) []jobmaster.CheckpointStats {
	h = append(h, c)
	if len(h) > maxHistory {
		h = h[1:]
	}
	return h
}

// start runs the job.
func (jm *jobMaster) start(ctx context.Context, recover bool) error {
	jm.opts.Executor = jm.exec
	jm.opts.Listener = jm
	jm.opts.JobID = jm.id
	jm.opts.Recover = recover
	jm.opts.Log = jm.d.log // the JobMaster core adds job=ID itself
	jm.opts.FileSystems = jm.d.cfg.FileSystems
	jm.d.call(dStart{id: jm.id, recover: recover})
	j, err := jobmaster.Start(ctx, jm.plan, jm.opts)
	if err != nil {
		return err
	}
	jm.job = j
	go func() {
		_, err := j.Wait()
		jm.finish(err)
	}()
	return nil
}

// finish releases the job's slots once it has ended.
func (jm *jobMaster) finish(err error) {
	slots := jm.pool.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if derr := jm.declareSlots(ctx, 0); derr != nil {
		jm.log.Debug("ending the slot demand failed", "err", derr)
	}
	byTM := map[string][]string{}
	for _, s := range slots {
		byTM[s.tmAddr] = append(byTM[s.tmAddr], s.allocation)
	}
	for addr, ids := range byTM {
		jm.freeSlots(ctx, addr, ids)
	}
	jm.d.jobEnded(jm, err)
	close(jm.done)
}

// freeSlots asks the TaskManager at addr to free the job's slots ids,
// which it then reports free to the ResourceManager; a TaskManager that
// does not answer keeps them until the ResourceManager loses it.
func (jm *jobMaster) freeSlots(ctx context.Context, addr string, ids []string) {
	c, err := jm.d.taskManager(addr)
	if err == nil {
		_, err = c.FreeSlots(ctx, &clusterpb.FreeSlotsRequest{JobId: jm.id, AllocationIds: ids})
	}
	if err != nil {
		jm.log.Debug("freeing slots failed", "taskmanager", addr, "err", err)
	}
}

// declareSlots tells the ResourceManager how many slots the job needs.
func (jm *jobMaster) declareSlots(ctx context.Context, n int) error {
	if jm.d.cfg.ResourceManager == nil {
		return errors.New("jobmanager: no ResourceManager")
	}
	_, err := jm.d.cfg.ResourceManager.DeclareSlots(ctx, &clusterpb.SlotDemand{JobId: jm.id, JobMasterAddress: jm.d.cfg.RPCAddress, Slots: int32(n)})
	if err != nil {
		return fmt.Errorf("jobmanager: declaring %d slots for job %s: %w", n, jm.id, err)
	}
	return nil
}

// Info is a snapshot of a job for the REST API.
type Info struct {
	ID, Name   string
	Status     jobmaster.Status
	Timestamps map[jobmaster.Status]int64
	// StartMillis and EndMillis (0 while running) are wall-clock times.
	StartMillis, EndMillis int64
	Plan                   *graph.Plan
	Graph                  *graph.JobGraph
	Exceptions             []JobException
	Checkpoints            CheckpointCounts
	History                []jobmaster.CheckpointStats
	LatestCheckpoint       *jobmaster.CheckpointStats
	LatestSavepoint        *jobmaster.CheckpointStats
	LatestFailed           *jobmaster.CheckpointStats
	// InProgress are the checkpoints and savepoints in progress, by ID.
	InProgress []jobmaster.CheckpointStats
	// Restored is the checkpoint or savepoint an attempt restored last
	// (nil: none); Restores counts the attempts that restored one.
	Restored *jobmaster.RestoreStats
	Restores int
	// Subtasks are the metrics of the current attempt.
	Subtasks []jobmaster.SubtaskMetrics
	// Tasks are the execution states of the latest attempt's subtasks
	// (from the start of its deployment), in task order; nil before the
	// first attempt.
	Tasks []TaskState
	Err   error
	// Checkpointing says whether the job takes checkpoints, every
	// CheckpointInterval (0: only on request).
	Checkpointing      bool
	CheckpointInterval time.Duration
	// Restarts counts the job's restarts; StopSavepoint is the savepoint
	// of a stop-with-savepoint.
	Restarts      int
	StopSavepoint string
	// WorkerLogins are the Kerberos logins of the job's running workers,
	// sorted by TaskManager id; empty without Kerberos.
	WorkerLogins []WorkerLogin
}

func (jm *jobMaster) info() Info {
	var tasks []TaskState
	if jm.exec != nil {
		if a := jm.exec.currentAttempt(); a != nil {
			tasks = a.states.list()
		}
	}
	st := jm.stats.Load()
	if st == nil {
		st = &jobStats{}
	}
	in := Info{ID: jm.id, Name: jm.name, Status: st.status, Timestamps: map[jobmaster.Status]int64{},
		StartMillis: st.start, EndMillis: st.end, Plan: jm.plan, Graph: jm.graph,
		Exceptions: append([]JobException(nil), st.exceptions...), Checkpoints: st.ckpt,
		History: append([]jobmaster.CheckpointStats(nil), st.history...), LatestCheckpoint: st.latest,
		LatestSavepoint: st.latestSave, LatestFailed: st.latestFail, Err: st.err, Restarts: st.restarts, StopSavepoint: st.stopSave,
		Restored: st.restored, Restores: st.restores, Tasks: tasks}
	for _, id := range slices.Sorted(maps.Keys(st.inProgress)) {
		in.InProgress = append(in.InProgress, st.inProgress[id])
	}
	for k, v := range st.timestamps {
		in.Timestamps[k] = v
	}
	if c := jm.opts.Checkpoints; c != nil {
		in.Checkpointing, in.CheckpointInterval = true, c.Coordinator.Interval
	}
	if jm.job != nil {
		in.Subtasks = jm.job.Metrics()
	}
	in.WorkerLogins = jm.logins.list()
	return in
}
