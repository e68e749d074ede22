package jobmanager

import (
	"fmt"
	"log/slog"

	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// This file is a job's lifecycle as the JobManager records it: a state
// machine without I/O that takes what the job's owner loop
// (internal/runtime/jobmaster) reports through its Listener and what the Dispatcher asks
// (cancel, the job's end) and returns what to log, write to the HA store
// and ask of the job (lcEffect). Its stats are what the REST API shows.
// The Dispatcher's job table (jobtable.go) holds every job's lifecycle and
// steps it on the Dispatcher's owner loop, which carries out the effects
// and publishes the stats for REST. lifecycle_trace_test.go drives it
// directly.

// jobPhase is where a job is in its lifecycle. Created, running,
// restarting, finished, failed and canceled follow the job's status;
// the others are the JobManager's own.
type jobPhase int

const (
	phaseSubmitted  jobPhase = iota // accepted, not started
	phaseRecovering                 // started from the HA store, no attempt running yet
	phaseCreated
	phaseRunning
	phaseRestarting
	phaseCancelling // cancel requested, not ended yet
	phaseFinished
	phaseFailed
	phaseCanceled
	// phaseSuspended: cancelled because the JobManager shut down; the HA
	// store keeps the job for the next JobManager to recover.
	phaseSuspended
)

var jobPhaseNames = [...]string{"submitted", "recovering", "created", "running", "restarting", "cancelling",
	"finished", "failed", "canceled", "suspended"}

func (p jobPhase) String() string { return jobPhaseNames[p] }

// lcEvent is an input of a job's lifecycle.
type lcEvent interface{ isLcEvent() }

// lcStart: the job's owner loop starts at at; recover says it resumes a
// job of the HA store.
type lcStart struct {
	at      int64
	recover bool
}

// lcStatus: the job's status changed at at (Listener.StatusChanged).
// cancelled says cause is the job's cancellation (jobmaster.IsCancelled);
// failures are the subtask failures of the attempt that ended.
type lcStatus struct {
	status    jobmaster.Status
	at        int64
	cause     error
	cancelled bool
	failures  []*TaskFailure
}

type lcCheckpointTriggered struct{ c jobmaster.CheckpointStats }
type lcCheckpointCompleted struct{ c jobmaster.CheckpointStats }
type lcCheckpointFailed struct{ c jobmaster.CheckpointStats }
type lcRestored struct{ r jobmaster.RestoreStats }

// lcCancel: a user cancels the job. The answer is ErrJobEnded for a job
// that has ended.
type lcCancel struct{}

// lcEnded: the job's owner loop has returned and its slots are released.
// cancelled says it was cancelled; shuttingDown that the Dispatcher is
// closing.
type lcEnded struct{ cancelled, shuttingDown bool }

func (lcStart) isLcEvent()               {}
func (lcStatus) isLcEvent()              {}
func (lcCheckpointTriggered) isLcEvent() {}
func (lcCheckpointCompleted) isLcEvent() {}
func (lcCheckpointFailed) isLcEvent()    {}
func (lcRestored) isLcEvent()            {}
func (lcCancel) isLcEvent()              {}
func (lcEnded) isLcEvent()               {}

// lcEffect is an output of a job's lifecycle.
type lcEffect interface{ isLcEffect() }

// lfLog: log msg with args.
type lfLog struct {
	level slog.Level
	msg   string
	args  []any
}

// lfCheckpointInHA: record the completed checkpoint at path in the HA
// store, for a new JobManager to recover the job from.
type lfCheckpointInHA struct{ path string }

// lfCancelJob: cancel the job's owner loop.
type lfCancelJob struct{}

// lfRemoveFromHA: the job has ended for good; drop it from the HA store.
type lfRemoveFromHA struct{}

func (lfLog) isLcEffect()            {}
func (lfCheckpointInHA) isLcEffect() {}
func (lfCancelJob) isLcEffect()      {}
func (lfRemoveFromHA) isLcEffect()   {}

// jobLifecycle is the lifecycle of one job; its zero value is a submitted
// job. Not safe for concurrent use.
type jobLifecycle struct {
	phase jobPhase
	stats jobStats
	fx    []lcEffect // of the current step
}

// Step applies e and returns the effects and, for lcCancel, the answer.
func (l *jobLifecycle) Step(e lcEvent) ([]lcEffect, error) {
	var err error
	st := &l.stats
	switch e := e.(type) {
	case lcStart:
		st.status = jobmaster.StatusCreated
		st.timestamps = map[jobmaster.Status]int64{jobmaster.StatusCreated: e.at}
		st.start = e.at
		l.phase = phaseCreated
		if e.recover {
			l.phase = phaseRecovering
		}
	case lcStatus:
		l.status(e)
	case lcCheckpointTriggered:
		if st.inProgress == nil {
			st.inProgress = map[int64]jobmaster.CheckpointStats{}
		}
		st.inProgress[e.c.ID] = e.c
	case lcCheckpointCompleted:
		c := e.c
		delete(st.inProgress, c.ID)
		st.ckpt.Completed++
		st.history = appendBounded(st.history, c)
		if c.Kind.IsStop() {
			st.stopSave = c.Path
		}
		if c.Kind.IsSavepoint() {
			st.latestSave = &c
		} else {
			st.latest = &c
			l.emit(lfCheckpointInHA{c.Path})
		}
	case lcCheckpointFailed:
		c := e.c
		delete(st.inProgress, c.ID)
		st.ckpt.Failed++
		st.history = appendBounded(st.history, c)
		st.latestFail = &c
	case lcRestored:
		r := e.r
		st.restored = &r
		st.restores++
	case lcCancel:
		switch {
		case st.status.Terminal():
			err = ErrJobEnded
		default:
			l.phase = phaseCancelling
			l.emit(lfCancelJob{})
		}
	case lcEnded:
		if e.shuttingDown && e.cancelled {
			l.phase = phaseSuspended // a new JobManager recovers the job
			break
		}
		l.emit(lfRemoveFromHA{})
	default:
		panic(fmt.Sprintf("jobmanager: unknown lifecycle event %T", e))
	}
	fx := l.fx
	l.fx = nil
	return fx, err
}

func (l *jobLifecycle) emit(f lcEffect) { l.fx = append(l.fx, f) }

func (l *jobLifecycle) status(e lcStatus) {
	st := &l.stats
	st.status = e.status
	if st.timestamps == nil {
		st.timestamps = map[jobmaster.Status]int64{}
	}
	st.timestamps[e.status] = e.at
	if e.status == jobmaster.StatusRestarting {
		st.restarts++
	}
	if e.cause != nil && !e.cancelled {
		st.exceptions = append(st.exceptions, rootException(e.cause, e.at, e.failures))
		if len(st.exceptions) > maxHistory {
			st.exceptions = st.exceptions[1:]
		}
	}
	if e.status.Terminal() {
		st.end = e.at
		st.err = e.cause
	}
	// A cancel requested stays requested until the job ends.
	if l.phase != phaseCancelling || e.status.Terminal() {
		l.phase = phaseOf(e.status)
	}
	l.emit(lfLog{level: slog.LevelInfo, msg: "job status", args: []any{"status", string(e.status)}})
}

func phaseOf(s jobmaster.Status) jobPhase {
	switch s {
	case jobmaster.StatusCreated:
		return phaseCreated
	case jobmaster.StatusRunning:
		return phaseRunning
	case jobmaster.StatusRestarting:
		return phaseRestarting
	case jobmaster.StatusFinished:
		return phaseFinished
	case jobmaster.StatusFailed:
		return phaseFailed
	case jobmaster.StatusCanceled:
		return phaseCanceled
	default:
		panic(fmt.Sprintf("jobmanager: unknown job status %q", s))
	}
}
