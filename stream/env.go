// Package stream is Sluice's user API: a job is a Go program that builds a
// dataflow of typed streams from plain Go functions and calls Execute.
//
//	env := stream.NewEnvironment()
//	lines := stream.ReadTextFile(env, "input.txt")
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

	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/restart"
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
	graph       graph.JobGraph
	parallelism int
	// workerDep is set in a worker process (SLUICE_EXECUTION_TARGET=worker).
	workerDep      *deployment.WorkerDeployment
	maxParallelism int
	mode           RuntimeMode
	clock          clock.Clock
	log            *slog.Logger
	bufferTimeout  time.Duration
	autoWatermark  time.Duration
	batchSize      int
	config         *conf.Configuration
	presets        []func(*conf.Configuration) *conf.Configuration
	restart        restart.Strategy
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
// Tests pass a clock.Manual to drive processing time.
func WithClock(c clock.Clock) Option { return func(e *Environment) { e.clock = c } }

// WithLogger sets the logger (default: slog.Default()).
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
func WithRestartStrategy(s restart.Strategy) Option { return func(e *Environment) { e.restart = s } }

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
		e.log = slog.Default()
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
	if dyn, dep, err := dynamicProperties(); err != nil {
		e.fail(err)
	} else {
		e.workerDep = dep
		if dyn != nil {
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
	return e
}

// Configuration is the job's effective configuration.
func (e *Environment) Configuration() *conf.Configuration { return e.config }

// Parallelism is the environment's default parallelism.
func (e *Environment) Parallelism() int { return e.parallelism }

// addNode appends a node with the environment's defaults.
func (e *Environment) addNode(kind, name string, inputs int, impl task.Factory) *graph.Node {
	n := &graph.Node{
		ID:             graph.NodeID(len(e.graph.Nodes)),
		Kind:           kind,
		Name:           name,
		Parallelism:    e.parallelism,
		MaxParallelism: e.maxParallelism,
		Chaining:       graph.ChainAlways,
		Inputs:         inputs,
		Impl:           impl,
		OutType:        impl.OutType().TypeName(),
	}
	_, n.Coordinated = impl.(task.Coordinated)
	e.graph.Nodes = append(e.graph.Nodes, n)
	return n
}

func (e *Environment) addEdge(from *graph.Node, tag string, to *graph.Node, input int, p graph.Partitioning, partitioner any) {
	e.graph.Edges = append(e.graph.Edges, &graph.Edge{From: from.ID, To: to.ID, Input: input, SideOutput: tag, Partitioning: p, Partitioner: partitioner})
}

// fail records a construction error reported at Execute.
func (e *Environment) fail(err error) { e.errs = append(e.errs, err) }

// Graph returns the job graph built so far, with forward edges between
// operators of different parallelism turned into rebalancing ones.
func (e *Environment) Graph(name string) *graph.JobGraph {
	g := e.graph
	g.Name = name
	cfg := conf.With(e.config, conf.ParallelismDefault, e.parallelism)
	cfg = conf.With(cfg, conf.ExecutionRuntimeMode, string(e.mode))
	g.Config = cfg.ToMap()
	for _, ed := range g.Edges {
		if ed.Partitioning == graph.Forward && g.Node(ed.From).Parallelism != g.Node(ed.To).Parallelism {
			ed.Partitioning = graph.Rebalance
		}
	}
	return &g
}

// JobResult describes a finished job.
type JobResult struct {
	Name     string
	JobID    string
	Duration time.Duration
	// Subtasks are the metrics per subtask (of the last attempt).
	Subtasks []jobmaster.SubtaskMetrics
	// Restarts counts recoveries from failures.
	Restarts int
	// Checkpoints counts completed checkpoints.
	Checkpoints int
	// Savepoint is the savepoint a stop-with-savepoint wrote.
	Savepoint string
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
	name   string
	job    *jobmaster.Job
	remote *remoteJob // a job on a cluster
}

// ExecuteAsync starts the job and returns at once.
func (e *Environment) ExecuteAsync(ctx context.Context, name string) (*JobClient, error) {
	if len(e.errs) > 0 {
		return nil, joinBuildErrors(e.errs)
	}
	g := e.Graph(name)
	tgt, err := target()
	if err != nil {
		return nil, err
	}
	switch tgt {
	case targetPlan:
		if err := g.Validate(); err != nil {
			return nil, err
		}
		return nil, writePlan(g)
	case targetWorker:
		return nil, e.runWorker(ctx, g)
	case targetRemote:
		return e.submitRemote(ctx, g)
	}
	mode, err := e.resolveMode(g)
	if err != nil {
		return nil, err
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		return nil, err
	}
	opts, err := e.localOptions(mode)
	if err != nil {
		return nil, err
	}
	if opts.Checkpoints != nil || opts.RestoreFrom != "" {
		for _, n := range g.Nodes {
			if n.UID == "" && (n.Keyed || n.Inputs == 0) {
				e.log.Warn("stateful operator without a UID: its state is matched by a generated ID that changes when the job's shape changes; set one with UID(...) to restore savepoints across job versions",
					"operator", n.Name, "id", n.ID)
			}
		}
	}
	e.log.Info("executing job", "job", name, "mode", mode.String(), "chains", len(plan.Chains), "fingerprint", g.Fingerprint())
	j, err := jobmaster.Start(ctx, plan, opts)
	if err != nil {
		return nil, fmt.Errorf("stream: starting job %q: %w", name, err)
	}
	return &JobClient{name: name, job: j}, nil
}

// localOptions turns the configuration into the local runtime's options.
func (e *Environment) localOptions(mode task.RuntimeMode) (jobmaster.Options, error) {
	opts, err := jobmaster.OptionsFromConfig(e.config, mode, e.restart)
	opts.Clock, opts.Log, opts.BatchSize = e.clock, e.log, e.batchSize
	opts.BufferTimeout, opts.AutoWatermarkInterval = e.bufferTimeout, e.autoWatermark.Milliseconds()
	opts.FileSystems = e.fileSystems
	return opts, err
}

// Wait blocks until the job ends.
func (c *JobClient) Wait() (*JobResult, error) {
	if c.remote != nil {
		return c.remote.wait()
	}
	res, err := c.job.Wait()
	jr := &JobResult{Name: c.name, JobID: c.job.ID()}
	if res != nil {
		jr.Duration, jr.Subtasks, jr.Restarts, jr.Checkpoints, jr.Savepoint = res.Duration, res.Subtasks, res.Restarts, res.Checkpoints, res.Savepoint
	}
	if err != nil {
		return jr, fmt.Errorf("stream: job %q failed: %w", c.name, err)
	}
	return jr, nil
}

// JobID is the job's identifier.
func (c *JobClient) JobID() string {
	if c.remote != nil {
		return c.remote.id
	}
	return c.job.ID()
}

// Cancel stops the job.
func (c *JobClient) Cancel() {
	if c.remote != nil {
		c.remote.cancel()
		return
	}
	c.job.Cancel()
}

// TriggerSavepoint writes a savepoint into dir (empty: the configured
// execution.checkpointing.savepoint-dir) and returns its path.
func (c *JobClient) TriggerSavepoint(dir string) (string, error) {
	if c.remote != nil {
		return c.remote.savepoint(dir, false, false)
	}
	return c.job.TriggerSavepoint(dir)
}

// StopWithSavepoint writes a savepoint and stops the job. With drain, event
// time is ended first, so every window and timer fires (Flink's stop --drain).
func (c *JobClient) StopWithSavepoint(dir string, drain bool) (string, error) {
	if c.remote != nil {
		return c.remote.savepoint(dir, true, drain)
	}
	return c.job.StopWithSavepoint(dir, drain)
}

func (e *Environment) resolveMode(g *graph.JobGraph) (task.RuntimeMode, error) {
	mode := string(e.mode)
	if mode == "" {
		mode = conf.RuntimeModeStreaming
	}
	return jobmaster.ResolveMode(g, mode)
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
