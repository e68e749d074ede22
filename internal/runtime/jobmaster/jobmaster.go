// Package jobmaster is the JobMaster core: a Job is one owner goroutine per
// job that deploys its attempts through an Executor, runs the checkpoint
// coordinator, writes completed checkpoints to storage, applies
// the restart strategy when a task fails or an attempt fails to deploy
// (restoring every task from the latest completed checkpoint), and takes
// savepoints on request. A Host runs some subtasks of an attempt in one
// process. The default Executor is the embedded one, which runs every
// subtask of every chain in this process as a goroutine, with in-process
// credit-based channels between them (running a job binary directly); on a
// cluster, cluster/jobmanager supplies a remote Executor and each worker a
// Host with its share.
package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Options configure a local execution.
type Options struct {
	// JobID names the job in checkpoint paths (default: derived from the
	// plan's fingerprint and the start time).
	JobID string
	// Clock is the processing-time clock (default: the system clock).
	Clock clock.Clock
	// Log receives the runtime's logs (default: discarded).
	Log *slog.Logger
	// Mode is STREAMING or BATCH.
	Mode task.RuntimeMode
	// BatchSize is records per exchange buffer (default task.DefaultBatchSize).
	BatchSize int
	// Credits is buffers in flight per channel (default 4).
	Credits int
	// BufferTimeout flushes partly filled buffers (default 100 ms; Flink's
	// execution.buffer-timeout.interval); negative: only when full.
	BufferTimeout time.Duration
	// AutoWatermarkInterval is the periodic watermark interval in ms
	// (default 200; Flink's pipeline.auto-watermark-interval).
	AutoWatermarkInterval int64
	// Checkpoints configures checkpointing; nil takes none.
	Checkpoints *CheckpointOptions
	// Restart decides about restarts after failures (default: none).
	Restart restart.Strategy
	// RestoreFrom is a savepoint or retained checkpoint (its directory or
	// _metadata file) to start from.
	RestoreFrom string
	// AllowNonRestoredState lets a restore drop state of operators the job
	// no longer has (Flink's --allowNonRestoredState).
	AllowNonRestoredState bool
	// FileSystems resolves checkpoint, savepoint and restore URIs (default:
	// local paths and file://; register hdfs:// with hdfs.Register).
	FileSystems *fs.Resolver
	// StateBackend keeps keyed state (state.backend.type; default: in
	// memory).
	StateBackend state.Backend
	// Executor deploys the job's attempts (default: every task in this
	// process).
	Executor Executor
	// Recover starts the job from the latest completed checkpoint in its
	// checkpoint storage (a JobMaster taking over a job after a failover);
	// without one it starts from RestoreFrom.
	Recover bool
	// Listener hears of the job's status and checkpoints (default: none).
	Listener Listener
}

// Status is a job's status, named as in Flink.
type Status string

// Job statuses.
const (
	StatusCreated    Status = "CREATED"
	StatusRunning    Status = "RUNNING"
	StatusRestarting Status = "RESTARTING"
	StatusFinished   Status = "FINISHED"
	StatusFailed     Status = "FAILED"
	StatusCanceled   Status = "CANCELED"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool {
	return s == StatusFinished || s == StatusFailed || s == StatusCanceled
}

// CheckpointStats describes a checkpoint or savepoint that completed or
// failed.
type CheckpointStats struct {
	ID   int64
	Kind checkpoint.Kind
	// TriggerMillis and EndMillis are on the job's clock.
	TriggerMillis, EndMillis int64
	// Path is the completed checkpoint's directory.
	Path string
	// Bytes is what the checkpoint wrote (for an incremental one, only
	// its new files).
	Bytes int64
	// Err is why it failed.
	Err error
}

// RestoreStats describes the checkpoint or savepoint an attempt of a job
// restored.
type RestoreStats struct {
	ID   int64
	Kind checkpoint.Kind
	// Path is its directory, written as CheckpointStats.Path.
	Path string
	// Millis is when the attempt that restored it was deployed, on the
	// job's clock.
	Millis int64
}

// Listener hears of a job's progress, on the job's owner goroutine: it
// must not block or call back into the job.
type Listener interface {
	StatusChanged(s Status, atMillis int64, cause error)
	// CheckpointTriggered: a checkpoint or savepoint started (c has its
	// ID, Kind and TriggerMillis); it ends with CheckpointCompleted or
	// CheckpointFailed.
	CheckpointTriggered(c CheckpointStats)
	CheckpointCompleted(c CheckpointStats)
	// CheckpointFailed: a checkpoint or savepoint failed or was aborted;
	// c has its ID, Kind, TriggerMillis, EndMillis and Err.
	CheckpointFailed(c CheckpointStats)
	// Restored: an attempt was deployed with the state of a checkpoint or
	// savepoint (every restart from a checkpoint is one).
	Restored(r RestoreStats)
}

type noListener struct{}

func (noListener) StatusChanged(Status, int64, error)  {}
func (noListener) CheckpointTriggered(CheckpointStats) {}
func (noListener) CheckpointCompleted(CheckpointStats) {}
func (noListener) CheckpointFailed(CheckpointStats)    {}
func (noListener) Restored(RestoreStats)               {}

// CheckpointOptions configure checkpoints.
type CheckpointOptions struct {
	Coordinator checkpoint.Options
	// Dir is execution.checkpointing.dir (a path or file:// URI). Empty:
	// a temporary directory removed when the job ends.
	Dir string
	// SavepointDir is the default savepoint directory.
	SavepointDir string
	// NumRetained is execution.checkpointing.num-retained (default 1).
	NumRetained int
	// RetainOnCancellation keeps the checkpoints of a cancelled job.
	RetainOnCancellation bool
	// Incremental takes incremental checkpoints where the state backend
	// can (execution.checkpointing.incremental).
	Incremental bool
}

// SubtaskMetrics are the final metrics of one subtask.
type SubtaskMetrics struct {
	Vertex  string
	Subtask int
	*task.Metrics
	// Rates are the subtask's per-second figures, where the executor
	// samples its counters over time (a cluster's JobMaster, at each
	// report of its worker); nil where none does.
	Rates *Rates
}

// Result describes a finished execution.
type Result struct {
	JobID    string
	Duration time.Duration
	// Subtasks are the metrics of the last attempt.
	Subtasks []SubtaskMetrics
	// Restarts is the number of times the job was restarted.
	Restarts int
	// Checkpoints is the number of completed checkpoints.
	Checkpoints int
	// Savepoint is the path of the stop-with-savepoint savepoint, if any.
	Savepoint string
}

// Execute runs the plan until all tasks end, it fails for good, or ctx
// ends.
func Execute(ctx context.Context, plan *graph.Plan, opts Options) (*Result, error) {
	j, err := Start(ctx, plan, opts)
	if err != nil {
		return nil, err
	}
	return j.Wait()
}

// Defaults fills in the defaults of unset options.
func (o *Options) Defaults() { o.defaults() }

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Credits <= 0 {
		o.Credits = 4
	}
	if o.BufferTimeout == 0 {
		o.BufferTimeout = 100 * time.Millisecond
	}
	if o.AutoWatermarkInterval <= 0 {
		o.AutoWatermarkInterval = 200
	}
	if o.FileSystems == nil {
		o.FileSystems = fs.NewResolver()
	}
	if o.Restart == nil {
		o.Restart = restart.NoRestart{}
	}
	if o.Listener == nil {
		o.Listener = noListener{}
	}
}

// errCancelled ends a job cancelled by its user.
var errCancelled = errors.New("jobmaster: job cancelled")

// ErrNotCheckpointing is returned for savepoint requests to a job without
// checkpointing configured.
var ErrNotCheckpointing = errors.New("this job takes no savepoints: it was started without checkpointing; start it with execution.checkpointing.interval (and execution.checkpointing.dir) set, and a savepoint directory given with the request or by execution.checkpointing.savepoint-dir")

func jobError(err error) error {
	var oe *task.OperatorError
	if errors.As(err, &oe) {
		return err
	}
	return fmt.Errorf("jobmaster: %w", err)
}

// OptionsFromConfig turns a job's configuration (Flink's keys) into
// options: restore, state backend, checkpointing and the restart strategy
// (unless custom is given). Every problem is reported at once.
func OptionsFromConfig(c *conf.Configuration, mode task.RuntimeMode, custom restart.Strategy) (Options, error) {
	opts := Options{
		Mode:                  mode,
		RestoreFrom:           conf.Get(c, conf.StateRecoveryPath),
		AllowNonRestoredState: conf.Get(c, conf.StateRecoveryIgnoreUnclaimedState),
	}
	if conf.Get(c, conf.StateBackendType) == conf.StateBackendPebble {
		opts.StateBackend = &state.PebbleBackend{
			Dir:          conf.Get(c, conf.StatePebbleLocalDir),
			CacheSize:    int64(conf.Get(c, conf.StatePebbleBlockCacheSize).Bytes()),
			MemTableSize: uint64(conf.Get(c, conf.StatePebbleWriteBufferSize).Bytes()),
		}
	}
	var problems []error
	if mode == task.StreamingMode && conf.Get(c, conf.CheckpointingInterval) > 0 || conf.IsSet(c, conf.CheckpointingDir) {
		co, err := checkpoint.OptionsFromConfig(c)
		if err != nil {
			problems = append(problems, err)
		}
		opts.Checkpoints = &CheckpointOptions{
			Incremental:          conf.Get(c, conf.CheckpointingIncremental),
			Coordinator:          co,
			Dir:                  conf.Get(c, conf.CheckpointingDir),
			SavepointDir:         conf.Get(c, conf.CheckpointingSavepointDir),
			NumRetained:          conf.Get(c, conf.CheckpointingNumRetained),
			RetainOnCancellation: conf.Get(c, conf.CheckpointingExternalizedRetention) == conf.RetainOnCancellation,
		}
	}
	opts.Restart = custom
	if custom == nil {
		s, err := restart.FromConfig(c)
		if err != nil {
			problems = append(problems, err)
		}
		opts.Restart = s
	}
	return opts, errors.Join(problems...)
}

// ResolveMode turns execution.runtime-mode (STREAMING, BATCH or
// AUTOMATIC) into the mode g runs in: AUTOMATIC is BATCH when every source
// is bounded.
func ResolveMode(g *graph.JobGraph, mode string) (task.RuntimeMode, error) {
	allBounded := true
	var unbounded []*graph.Node
	for _, n := range g.Nodes {
		if n.Inputs == 0 && !n.Bounded {
			allBounded = false
			unbounded = append(unbounded, n)
		}
	}
	switch mode {
	case conf.RuntimeModeBatch:
		if !allBounded {
			return 0, fmt.Errorf("%w:\n  - operator %s: BATCH execution needs bounded sources; this source is unbounded (use STREAMING or AUTOMATIC)", graph.ErrInvalidGraph, unbounded[0].Label())
		}
		return task.BatchMode, nil
	case conf.RuntimeModeAutomatic:
		if allBounded {
			return task.BatchMode, nil
		}
		return task.StreamingMode, nil
	case conf.RuntimeModeStreaming:
		return task.StreamingMode, nil
	}
	return 0, fmt.Errorf("unknown runtime mode %q (want STREAMING, BATCH or AUTOMATIC)", mode)
}
