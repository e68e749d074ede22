package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice/sluice/conf"
)

// ID identifies a checkpoint or savepoint of a job. IDs grow by one per
// trigger and are never reused, also across restarts of the job: a new
// Coordinator starts at the NextID of the previous one.
type ID int64

// TaskID names one subtask of the execution plan.
type TaskID struct {
	Vertex  int // chain id in the plan (graph.Chain.ID)
	Subtask int
}

// String writes t as "vertex.subtask".
func (t TaskID) String() string { return fmt.Sprintf("%d.%d", t.Vertex, t.Subtask) }

// Compare orders task ids by vertex, then subtask.
func (t TaskID) Compare(u TaskID) int {
	return cmp.Or(cmp.Compare(t.Vertex, u.Vertex), cmp.Compare(t.Subtask, u.Subtask))
}

func sortTasks(ts []TaskID) []TaskID {
	slices.SortFunc(ts, TaskID.Compare)
	return ts
}

// Kind says what a snapshot is for.
type Kind int

const (
	// Checkpoint is a periodic checkpoint, owned by Sluice: used for
	// recovery and subsumed by newer ones.
	Checkpoint Kind = iota
	// Savepoint is a snapshot triggered by the user, owned by the user; the
	// job keeps running.
	Savepoint
	// SavepointSuspend is stop-with-savepoint: the job stops after the
	// savepoint completes (flink stop).
	SavepointSuspend
	// SavepointTerminate is stop-with-savepoint with drain: sources end
	// and event time is advanced to the end before the savepoint, so all
	// timers fire (flink stop --drain).
	SavepointTerminate
	// FullCheckpoint is a checkpoint that shares no files with the
	// checkpoints before it, also when the job checkpoints incrementally
	// (Flink's CheckpointType FULL, sluice checkpoint --full). It is a
	// checkpoint in every other respect. Only state backends with
	// incremental checkpoints (pebble) take it differently.
	FullCheckpoint
)

// The values of Kind travel as numbers (barriers, the cluster protocol,
// checkpoint metadata): new kinds are added at the end.
var kindNames = [...]string{"checkpoint", "savepoint", "savepoint-suspend", "savepoint-terminate", "full-checkpoint"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// IsCheckpoint reports whether k is a checkpoint (Checkpoint or
// FullCheckpoint): owned by Sluice, retained, subsumed by newer ones.
func (k Kind) IsCheckpoint() bool { return k == Checkpoint || k == FullCheckpoint }

// IsSavepoint reports whether k is one of the savepoint kinds.
func (k Kind) IsSavepoint() bool {
	return k == Savepoint || k == SavepointSuspend || k == SavepointTerminate
}

// IsStop reports whether k is a stop-with-savepoint.
func (k Kind) IsStop() bool { return k == SavepointSuspend || k == SavepointTerminate }

// Mode is the checkpointing guarantee (execution.checkpointing.mode).
type Mode int

const (
	// ExactlyOnce aligns barriers: a task holds back the data of channels
	// that delivered the barrier until all have. The default.
	ExactlyOnce Mode = iota
	// AtLeastOnce does not hold back data; after recovery, records that
	// arrived between the first and the last barrier are processed again.
	AtLeastOnce
)

func (m Mode) String() string {
	switch m {
	case ExactlyOnce:
		return conf.ExactlyOnce
	case AtLeastOnce:
		return conf.AtLeastOnce
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode written as Flink writes it: EXACTLY_ONCE or
// AT_LEAST_ONCE (case-insensitive).
func ParseMode(s string) (Mode, error) {
	switch {
	case strings.EqualFold(s, conf.ExactlyOnce):
		return ExactlyOnce, nil
	case strings.EqualFold(s, conf.AtLeastOnce):
		return AtLeastOnce, nil
	}
	return 0, fmt.Errorf("checkpoint: unknown mode %q: want %s or %s", s, conf.ExactlyOnce, conf.AtLeastOnce)
}

// Errors. Abort and FailJob reasons match these with errors.Is.
var (
	// ErrExpired: the checkpoint took longer than the timeout (see ExpiredError).
	ErrExpired = errors.New("checkpoint: expired before completing")
	// ErrSubsumed: a newer checkpoint completed (coordinator), or a newer
	// barrier overtook this one (task). A task declining with ErrSubsumed
	// does not count as a checkpoint failure.
	ErrSubsumed = errors.New("checkpoint: subsumed by a newer checkpoint")
	// ErrTaskNotReady: a task cannot take part in a checkpoint now (not yet
	// running, closing, input ended). A task declining with it does not
	// count as a checkpoint failure.
	ErrTaskNotReady = errors.New("checkpoint: task not ready for a checkpoint")
	// ErrStopInProgress: a stop-with-savepoint is already in progress.
	ErrStopInProgress = errors.New("checkpoint: a stop-with-savepoint is in progress")
	// ErrStopped: the coordinator was shut down, failed the job or
	// completed a stop-with-savepoint; it triggers nothing more.
	ErrStopped = errors.New("checkpoint: coordinator stopped")
	// ErrSourcesFinished: every source has finished, so there is nowhere
	// to inject a barrier.
	ErrSourcesFinished = errors.New("checkpoint: all sources have finished")
	// ErrNotSavepoint: TriggerSavepoint was given a kind that is not a savepoint.
	ErrNotSavepoint = errors.New("checkpoint: not a savepoint kind")
	// ErrNotCheckpoint: TriggerCheckpoint was given a kind that is not a
	// checkpoint.
	ErrNotCheckpoint = errors.New("checkpoint: not a checkpoint kind")
	// ErrTooManyFailures: consecutive checkpoint failures exceeded
	// execution.checkpointing.tolerable-failed-checkpoints (see FailuresError).
	ErrTooManyFailures = errors.New("checkpoint: exceeded the tolerable failed checkpoints")
)

// ExpiredError is the reason of a checkpoint aborted by its timeout. It
// matches ErrExpired.
type ExpiredError struct {
	ID      ID
	Kind    Kind
	Timeout time.Duration
	// Waiting lists the running tasks that had not acknowledged, sorted.
	Waiting []TaskID
}

func (e *ExpiredError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint: %s %d expired after %s; not acknowledged by ", e.Kind, e.ID, e.Timeout)
	const show = 5
	for i, t := range e.Waiting {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(e.Waiting)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// Is reports whether target is ErrExpired.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired }

// DeclinedError is the reason of a checkpoint a task declined. It wraps the
// task's reason.
type DeclinedError struct {
	ID   ID
	Task TaskID
	Err  error
}

func (e *DeclinedError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("checkpoint: checkpoint %d declined by task %s", e.ID, e.Task)
	}
	return fmt.Sprintf("checkpoint: checkpoint %d declined by task %s: %v", e.ID, e.Task, e.Err)
}

// Unwrap returns the task's reason.
func (e *DeclinedError) Unwrap() error { return e.Err }

// FailuresError is the reason of FailJob: more consecutive checkpoints
// failed than tolerated. It matches ErrTooManyFailures and wraps the last
// failure.
type FailuresError struct {
	Failures  int // consecutive failures counted
	Tolerable int // execution.checkpointing.tolerable-failed-checkpoints
	Last      error
}

func (e *FailuresError) Error() string {
	return fmt.Sprintf("checkpoint: %d consecutive checkpoints failed, %d tolerated (%s); last failure: %v",
		e.Failures, e.Tolerable, conf.CheckpointingTolerableFailures.Key(), e.Last)
}

// Is reports whether target is ErrTooManyFailures.
func (e *FailuresError) Is(target error) bool { return target == ErrTooManyFailures }

// Unwrap returns the last failure.
func (e *FailuresError) Unwrap() error { return e.Last }
