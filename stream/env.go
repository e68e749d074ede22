// Package stream is Sluice's user API: a job is a Go program that builds a
// dataflow of typed streams from plain Go functions and calls Execute.
//
//	env := stream.NewEnvironment()
//	lines := file.ReadTextFile(env, "input.txt")
//	words := stream.FlatMap(lines, func(line string, out stream.Collector[string]) {
//		for _, w := range strings.Fields(line) {
//			out.Collect(w)
//		}
//	})
//	counts := stream.Reduce(stream.KeyBy(stream.Map(words, ...), ...), ...)
//	stream.Print(counts)
//	env.Execute("word count")
//
// Transformations are package-level generic functions (Go methods cannot
// introduce type parameters); configuration of the operator just created is
// done with methods on the returned stream (Name, UID, SetParallelism, ...).
package stream

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/launch"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
)

// RuntimeMode selects streaming or batch execution (Flink's execution.runtime-mode).
type RuntimeMode string

// Runtime modes.
const (
	// Streaming processes records as they come and emits incremental results.
	Streaming RuntimeMode = "STREAMING"
	// Batch requires bounded sources and emits only final results.
	Batch RuntimeMode = "BATCH"
	// Automatic is Batch when every source is bounded, Streaming otherwise.
	Automatic RuntimeMode = "AUTOMATIC"
)

// Environment collects the dataflow of one job and executes it.
type Environment struct {
	jobs        *core.Builder
	parallelism int
	// process is where this process runs its jobs (SLUICE_EXECUTION_TARGET).
	process        *launch.Process
	maxParallelism int
	mode           RuntimeMode
	clock          clock.Clock
	log            *slog.Logger
	bufferTimeout  time.Duration
	autoWatermark  time.Duration
	batchSize      int
	config         *conf.Configuration
	presets        []func(*conf.Configuration) *conf.Configuration
	fileSystems    *fs.Resolver
	errs           []error
}

// Option configures an Environment. Options win over the configuration.
type Option func(*Environment)

// WithConfiguration sets the job's configuration (Flink's keys:
// parallelism.default, pipeline.max-parallelism, execution.runtime-mode,
// execution.buffer-timeout.interval, pipeline.auto-watermark-interval, ...).
// Without it, the environment loads $SLUICE_CONF_DIR/config.yaml when
// SLUICE_CONF_DIR is set.
func WithConfiguration(c *conf.Configuration) Option {
	return func(e *Environment) { e.config = c }
}

// WithParallelism sets the default parallelism (default: the number of CPUs;
// Flink's parallelism.default).
func WithParallelism(p int) Option { return func(e *Environment) { e.parallelism = p } }

// WithMaxParallelism sets the default max parallelism, the number of key
// groups (default: derived from the parallelism, at least 128; Flink's
// pipeline.max-parallelism).
func WithMaxParallelism(p int) Option { return func(e *Environment) { e.maxParallelism = p } }

// WithRuntimeMode sets STREAMING (default), BATCH or AUTOMATIC.
func WithRuntimeMode(m RuntimeMode) Option { return func(e *Environment) { e.mode = m } }

// WithClock sets the processing-time clock (default: the system clock).
// Tests pass a ManualClock to drive processing time.
func WithClock(c Clock) Option { return func(e *Environment) { e.clock = c } }

// WithLogger sets the logger (default: text lines on standard error at
// level INFO).
func WithLogger(l *slog.Logger) Option { return func(e *Environment) { e.log = l } }

// WithBufferTimeout sets how long a partly filled exchange buffer may wait
// (default 100 ms; Flink's execution.buffer-timeout.interval); a negative
// value flushes buffers only when full or at an event.
func WithBufferTimeout(d time.Duration) Option { return func(e *Environment) { e.bufferTimeout = d } }

// WithAutoWatermarkInterval sets the period of periodic watermark
// generation (default 200 ms; Flink's pipeline.auto-watermark-interval).
func WithAutoWatermarkInterval(d time.Duration) Option {
	return func(e *Environment) { e.autoWatermark = d }
}

// WithCheckpointing takes a checkpoint every interval (Flink's
// execution.checkpointing.interval), written under dir (empty: a temporary
// directory for this run).
func WithCheckpointing(interval time.Duration, dir string) Option {
	return func(e *Environment) {
		e.presets = append(e.presets, func(c *conf.Configuration) *conf.Configuration {
			c = conf.With(c, conf.CheckpointingInterval, interval)
			if dir != "" {
				c = conf.With(c, conf.CheckpointingDir, dir)
			}
			return c
		})
	}
}

// WithRestartStrategy sets how the job recovers from failures (default:
// from restart-strategy.*; with checkpointing and no setting,
// exponential-delay, as in Flink).
func WithRestartStrategy(s RestartStrategy) Option {
	return func(e *Environment) { e.presets = append(e.presets, s.apply) }
}

// WithSavepoint starts the job from a savepoint or retained checkpoint
// (execution.state-recovery.path); allowNonRestored drops state of
// operators the job no longer has instead of failing.
func WithSavepoint(path string, allowNonRestored bool) Option {
	return func(e *Environment) {
		e.presets = append(e.presets, func(c *conf.Configuration) *conf.Configuration {
			c = conf.With(c, conf.StateRecoveryPath, path)
			return conf.With(c, conf.StateRecoveryIgnoreUnclaimedState, allowNonRestored)
		})
	}
}

// WithFileSystems sets the resolver of checkpoint and savepoint URIs
// (default: local paths and file://). Register hdfs:// on it with
// hdfs.Register to checkpoint to HDFS.
func WithFileSystems(r *fs.Resolver) Option { return func(e *Environment) { e.fileSystems = r } }

// WithBatchSize sets the records per exchange buffer (default 512).
func WithBatchSize(n int) Option { return func(e *Environment) { e.batchSize = n } }

// NewEnvironment returns an environment for building a job. Settings come
// from the options, then the configuration, then the defaults; in the
// embedded local cluster the default parallelism is the number of CPUs.
func NewEnvironment(opts ...Option) *Environment {
	e := &Environment{clock: clock.System{}}
	for _, o := range opts {
		o(e)
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if e.config == nil {
		c, warnings, err := conf.Load(conf.Sources{ConfDir: os.Getenv(conf.EnvConfDir)})
		for _, w := range warnings {
			e.log.Warn("configuration", "warning", w.String())
		}
		if err != nil {
			e.fail(fmt.Errorf("loading the configuration: %w", err))
			c = conf.New()
		}
		e.config = c
	} else {
		warnings, err := e.config.Validate()
		for _, w := range warnings {
			e.log.Warn("configuration", "warning", w.String())
		}
		if err != nil {
			e.fail(err)
		}
	}
	if p, err := launch.FromEnvironment(); err != nil {
		e.fail(err)
		e.process = launch.Local()
	} else {
		e.process = p
		if dyn := p.Overrides(); dyn != nil {
			e.config = e.config.Merge(dyn)
			if _, err := e.config.Validate(); err != nil {
				e.fail(err)
			}
		}
	}
	for _, p := range e.presets {
		e.config = p(e.config)
	}
	c := e.config
	if e.parallelism == 0 {
		e.parallelism = runtime.NumCPU()
		if conf.IsSet(c, conf.ParallelismDefault) {
			e.parallelism = conf.Get(c, conf.ParallelismDefault)
		}
	}
	if e.maxParallelism == 0 && conf.IsSet(c, conf.PipelineMaxParallelism) {
		e.maxParallelism = conf.Get(c, conf.PipelineMaxParallelism)
	}
	if e.mode == "" {
		e.mode = RuntimeMode(conf.Get(c, conf.ExecutionRuntimeMode))
	}
	if e.bufferTimeout == 0 {
		e.bufferTimeout = conf.Get(c, conf.ExecutionBufferTimeout)
		if !conf.Get(c, conf.ExecutionBufferTimeoutEnabled) {
			e.bufferTimeout = -1
		}
	}
	if e.autoWatermark == 0 {
		e.autoWatermark = conf.Get(c, conf.PipelineAutoWatermarkInterval)
	}
	e.jobs = core.NewBuilder(e.parallelism, e.maxParallelism)
	return e
}

// Configuration is the job's effective configuration.
func (e *Environment) Configuration() *conf.Configuration { return e.config }

// Parallelism is the environment's default parallelism.
func (e *Environment) Parallelism() int { return e.parallelism }

// addNode appends a node with the environment's defaults: the typed API
// compiles to the core job API, as every front end does.
func (e *Environment) addNode(kind, name string, inputs int, impl task.Factory) *graph.Node {
	return e.jobs.AddNode(kind, name, inputs, impl)
}

func (e *Environment) addEdge(from *graph.Node, tag string, to *graph.Node, input int, p graph.Partitioning, partitioner any) {
	e.jobs.AddEdge(from, tag, to, input, p, partitioner)
}

// fail records a construction error reported at Execute.
func (e *Environment) fail(err error) { e.errs = append(e.errs, err) }

// ExecutionPlan is the job graph built so far as JSON (Flink's
// getExecutionPlan): its operators with their names, UIDs and parallelism,
// and the edges between them with their partitioning. It is what sluice info
// prints.
func (e *Environment) ExecutionPlan(name string) (string, error) {
	b, err := e.graph(name).Marshal()
	return string(b), err
}

// graph returns the job graph built so far, with forward edges between
// operators of different parallelism turned into rebalancing ones.
func (e *Environment) graph(name string) *graph.JobGraph {
	cfg := conf.With(e.config, conf.ParallelismDefault, e.parallelism)
	cfg = conf.With(cfg, conf.ExecutionRuntimeMode, string(e.mode))
	return e.jobs.Graph(name, cfg.ToMap())
}

// JobResult describes a finished job.
type JobResult struct {
	Name     string
	JobID    string
	Duration time.Duration
	// Subtasks are the metrics per subtask of the last attempt (jobs run
	// in this process).
	Subtasks []SubtaskMetrics
	// Restarts counts recoveries from failures.
	Restarts int
	// Checkpoints counts completed checkpoints.
	Checkpoints int
	// Savepoint is the savepoint a stop-with-savepoint wrote.
	Savepoint string
}

// SubtaskMetrics are one subtask's counts at the end of a job.
type SubtaskMetrics struct {
	// Vertex is the name of the subtask's operator chain.
	Vertex string
	// Subtask is its index, from 0.
	Subtask int
	// RecordsIn and RecordsOut count records into and out of the chain.
	RecordsIn, RecordsOut int64
	// Busy, Idle and Backpressured are the time the subtask spent working,
	// waiting for input, and waiting for its outputs.
	Busy, Idle, Backpressured time.Duration
}

func subtaskMetrics(ms []launch.SubtaskMetrics) []SubtaskMetrics {
	out := make([]SubtaskMetrics, len(ms))
	for i, m := range ms {
		out[i] = SubtaskMetrics(m)
	}
	return out
}

// Execute validates the dataflow and runs it on the embedded local cluster
// until its bounded sources end (an unbounded job runs until it fails or
// is cancelled).
func (e *Environment) Execute(name string) (*JobResult, error) {
	return e.ExecuteContext(context.Background(), name)
}

// ExecuteContext is Execute with a context that cancels the job.
func (e *Environment) ExecuteContext(ctx context.Context, name string) (*JobResult, error) {
	c, err := e.ExecuteAsync(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.Wait()
}

// JobClient controls a job started with ExecuteAsync.
type JobClient struct {
	name string
	h    *launch.Handle
}

// ExecuteAsync starts the job and returns at once. Where the process runs
// it comes from how the program was started (sluice run sets it): in this
// process by default, submitted to a cluster, or as a worker's share of it.
// A program started for its plan or as a worker ends in Execute.
func (e *Environment) ExecuteAsync(ctx context.Context, name string) (*JobClient, error) {
	if len(e.errs) > 0 {
		return nil, joinBuildErrors(e.errs)
	}
	g := e.graph(name)
	h, err := e.process.Launch(ctx, launch.Job{Graph: g, Config: e.config, Mode: string(e.mode), Log: e.log, Local: launch.LocalSettings{
		Clock: e.clock, BatchSize: e.batchSize, BufferTimeout: e.bufferTimeout, AutoWatermarkInterval: e.autoWatermark,
		FileSystems: e.fileSystems,
	}})
	if err != nil {
		return nil, err
	}
	return &JobClient{name: name, h: h}, nil
}

// Wait blocks until the job ends.
func (c *JobClient) Wait() (*JobResult, error) {
	res, err := c.h.Wait()
	jr := &JobResult{Name: c.name, JobID: c.h.JobID()}
	if res != nil {
		jr.Duration, jr.Restarts, jr.Checkpoints, jr.Savepoint = res.Duration, res.Restarts, res.Checkpoints, res.Savepoint
		jr.Subtasks = subtaskMetrics(res.Subtasks)
	}
	if err != nil {
		return jr, fmt.Errorf("stream: job %q failed: %w", c.name, err)
	}
	return jr, nil
}

// JobID is the job's identifier.
func (c *JobClient) JobID() string { return c.h.JobID() }

// Cancel stops the job.
func (c *JobClient) Cancel() { c.h.Cancel() }

// TriggerSavepoint writes a savepoint into dir (empty: the configured
// execution.checkpointing.savepoint-dir) and returns its path.
func (c *JobClient) TriggerSavepoint(dir string) (string, error) { return c.h.TriggerSavepoint(dir) }

// StopWithSavepoint writes a savepoint and stops the job. With drain, event
// time is ended first, so every window and timer fires (Flink's stop --drain).
func (c *JobClient) StopWithSavepoint(dir string, drain bool) (string, error) {
	return c.h.StopWithSavepoint(dir, drain)
}

func joinBuildErrors(errs []error) error {
	msg := "stream: the job is invalid:"
	for _, err := range errs {
		msg += "\n  - " + err.Error()
	}
	return &BuildError{Errs: errs, msg: msg}
}

// BuildError lists the mistakes found while the dataflow was declared.
type BuildError struct {
	Errs []error
	msg  string
}

func (e *BuildError) Error() string { return e.msg }

// Unwrap returns the individual errors.
func (e *BuildError) Unwrap() []error { return e.Errs }

// DisposeSavepoint deletes the savepoint at path (Flink's savepoint
// --dispose). It refuses paths that are not savepoints. fileSystems may be
// nil (local paths and file:// only).
func DisposeSavepoint(path string, fileSystems *fs.Resolver) error {
	if fileSystems == nil {
		fileSystems = fs.NewResolver()
	}
	fsys, p, err := fileSystems.For(path)
	if err != nil {
		return fmt.Errorf("stream: disposing savepoint %q: %w", path, err)
	}
	return storage.DisposeSavepoint(fsys, p)
}
