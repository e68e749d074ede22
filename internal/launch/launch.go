// Package launch is the start-up of a job binary: it reads where the
// process was told to run its job (SLUICE_EXECUTION_TARGET and the variables
// that go with it) and runs the job there:
//
//   - local: the whole job in this process, on the JobMaster core's embedded
//     executor;
//   - plan: the job graph written to a file for the CLI (sluice info, or a
//     client building the graph), and the process ends;
//   - remote: the graph and this binary submitted to a JobManager's REST
//     endpoint, then followed to the end unless detached;
//   - worker: this process's share of an attempt on a cluster (cluster/worker),
//     and the process ends when the JobMaster ends the session.
//
// It is the only importer of cluster/worker, so the front ends (stream, and
// the Beam runner and SQL planner to come) share one start-up and none of
// them knows the processes of a cluster. Everything it takes from the
// process (environment, arguments, stdout, the exit) comes in a Process, so
// tests run it without touching their own process.
package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/cluster/worker"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/tlsconf"
)

// Targets of a job binary (conf.EnvExecutionTarget).
const (
	TargetLocal  = conf.TargetLocal
	TargetPlan   = conf.BinaryModePlan
	TargetRemote = conf.TargetRemote
	TargetWorker = conf.BinaryModeWorker
)

// Process is what the start-up takes from the process it runs in.
type Process struct {
	// Target is local (the default), plan, remote or worker.
	Target string
	// PlanOut is the file a plan is written to (SLUICE_PLAN_OUT).
	PlanOut string
	// JobManager is the REST address a remote job is submitted to
	// (SLUICE_JOBMANAGER).
	JobManager string
	// RESTToken is the token a remote submission carries
	// (SLUICE_REST_TOKEN, else security.rest.token-file of the job's
	// configuration); empty for none.
	RESTToken string
	// DynamicProperties are the configuration overrides the process was
	// started with: the CLI's -D, then a worker's deployment.
	DynamicProperties []string
	// Worker is a worker's deployment (worker target only).
	Worker *deployment.WorkerDeployment
	// Executable is this job binary, submitted with a remote job.
	Executable string
	// Args are the program's arguments, submitted with a remote job.
	Args []string
	// Stdout receives what the job binary tells its user ("Job has been
	// submitted with JobID ...", as Flink's client prints).
	Stdout io.Writer
	// SubmittedOut, when set, is the file the ID of each job started or
	// submitted is appended to (conf.EnvSubmittedOut).
	SubmittedOut string
	// Exit ends the process. A job binary run for its plan, or as a
	// worker, never continues past Execute: its program's main must not run
	// on after the job (as Flink's client ends a program's main once it has
	// its plan). It is called only for those two targets.
	Exit func(code int)
}

// workerStart is the deployment a worker read from its standard input as
// it started (see init); zero in every other process.
var workerStart struct {
	d   *deployment.WorkerDeployment
	err error
}

// argsErr is why init could not put back the program arguments a
// JobManager handed over; FromEnvironment returns it, so Execute fails
// with it.
var argsErr error

// init gives a worker its program arguments before the program's main
// runs, and is the only start-up that happens before FromEnvironment: a
// TaskManager starts a worker with nothing on its command line (which
// every local user can list) and hands it the arguments, with the rest of
// its deployment, on standard input.
func init() {
	if args, ok, err := programArgs(os.Getenv, os.Args); ok {
		os.Unsetenv(conf.EnvProgramArgs)
		if err != nil {
			argsErr = err
			return
		}
		os.Args = args
	}
	if os.Getenv(conf.EnvExecutionTarget) != TargetWorker || os.Getenv(conf.EnvWorkerDeployment) != deployment.Stdin {
		return
	}
	workerStart.d, workerStart.err = deployment.ReadWorkerDeployment(deployment.Stdin)
	if workerStart.d != nil {
		os.Args = append(os.Args[:1:1], workerStart.d.Args...)
	}
}

// programArgs is the program's command line with the arguments a
// JobManager handed it in EnvProgramArgs (application mode, which starts
// the program with nothing on its command line); ok is false when there
// are none to put back.
func programArgs(getenv func(string) string, args []string) (_ []string, ok bool, _ error) {
	raw := getenv(conf.EnvProgramArgs)
	if raw == "" || getenv(conf.EnvExecutionTarget) != TargetRemote {
		return args, false, nil
	}
	var handed []string
	if err := json.Unmarshal([]byte(raw), &handed); err != nil {
		return args, true, fmt.Errorf("launch: %s is not a JSON array of strings: %w", conf.EnvProgramArgs, err)
	}
	if len(args) > 1 {
		return args, true, fmt.Errorf("launch: the program has arguments both on its command line (%d) and in %s", len(args)-1, conf.EnvProgramArgs)
	}
	return append(args[:1:1], handed...), true, nil
}

// FromEnvironment reads the Process from this process's environment. It is
// the one place start-up reads the environment (but for a worker's
// arguments, which init reads).
func FromEnvironment() (*Process, error) {
	if argsErr != nil {
		return nil, argsErr
	}
	return FromGetenv(os.Getenv, os.Args[1:], os.Stdout, os.Exit, os.Executable)
}

// FromGetenv is FromEnvironment with the process's parts given.
func FromGetenv(getenv func(string) string, args []string, stdout io.Writer, exit func(int), executable func() (string, error)) (*Process, error) {
	p := &Process{
		PlanOut:           getenv(conf.EnvPlanOut),
		SubmittedOut:      getenv(conf.EnvSubmittedOut),
		JobManager:        getenv(conf.EnvJobManager),
		RESTToken:         getenv(conf.EnvRESTToken),
		DynamicProperties: conf.SplitDynamicProperties(getenv(conf.EnvDynamicProperties)),
		Args:              args,
		Stdout:            stdout,
		Exit:              exit,
	}
	switch t := getenv(conf.EnvExecutionTarget); t {
	case "", TargetLocal:
		p.Target = TargetLocal
	case TargetPlan, TargetRemote, TargetWorker:
		p.Target = t
	default:
		return nil, fmt.Errorf("launch: %s=%q: want local, plan, remote or worker", conf.EnvExecutionTarget, t)
	}
	if p.Target == TargetWorker {
		var d *deployment.WorkerDeployment
		var err error
		if path := getenv(conf.EnvWorkerDeployment); path == deployment.Stdin && (workerStart.d != nil || workerStart.err != nil) {
			d, err = workerStart.d, workerStart.err // read by init
		} else {
			d, err = deployment.ReadWorkerDeployment(path)
		}
		if err != nil {
			return nil, err
		}
		p.Worker = d
		for k, v := range d.Configuration {
			p.DynamicProperties = append(p.DynamicProperties, k+"="+v)
		}
	}
	if p.Target == TargetRemote {
		self, err := executable()
		if err != nil {
			return nil, fmt.Errorf("launch: finding this job binary to submit: %w", err)
		}
		p.Executable = self
	}
	return p, nil
}

// Local is a Process that runs its jobs in itself: the default of tests and
// of programs that never go through the CLI.
func Local() *Process {
	return &Process{Target: TargetLocal, Stdout: io.Discard, Exit: func(int) {}}
}

// Overrides are the process's dynamic properties as a configuration, or nil
// when there are none.
func (p *Process) Overrides() *conf.Configuration {
	if len(p.DynamicProperties) == 0 {
		return nil
	}
	return conf.FromDynamicProperties(p.DynamicProperties)
}

// Job is what a front end hands to Launch.
type Job struct {
	// Graph is the job graph, with the job's configuration in Graph.Config.
	Graph *graph.JobGraph
	// Config is the job's effective configuration.
	Config *conf.Configuration
	// Mode is the configured runtime mode (STREAMING, BATCH or AUTOMATIC;
	// empty: STREAMING).
	Mode string
	// Local is what the front end sets of a job that runs in this process
	// (the local target, and a worker's share of a job), beyond what the
	// configuration says.
	Local LocalSettings
	// Log receives the start-up's logs, and the job's when it runs in
	// this process.
	Log *slog.Logger
}

// LocalSettings are how a job runs in this process, beyond its
// configuration. Zero
// fields take the JobMaster core's defaults.
type LocalSettings struct {
	// Clock is the processing-time clock (default: the system clock).
	Clock clock.Clock
	// BatchSize is records per exchange buffer (default: the engine's).
	BatchSize int
	// BufferTimeout flushes partly filled buffers (default 100 ms; < 0:
	// after every record).
	BufferTimeout time.Duration
	// AutoWatermarkInterval is the periodic watermark interval (default
	// 200 ms).
	AutoWatermarkInterval time.Duration
	// FileSystems resolves checkpoint, savepoint and restore URIs
	// (default: local paths and file:// only).
	FileSystems *fs.Resolver
}

// options are the JobMaster core's options for a job in the resolved mode:
// its configuration's (restore, state backend, checkpointing, restart
// strategy), with j.Local's settings.
func (j Job) options(mode task.RuntimeMode) (jobmaster.Options, error) {
	opts, err := jobmaster.OptionsFromConfig(j.Config, mode, nil)
	opts.Clock, opts.Log, opts.BatchSize = j.Local.Clock, j.Log, j.Local.BatchSize
	opts.BufferTimeout, opts.AutoWatermarkInterval = j.Local.BufferTimeout, j.Local.AutoWatermarkInterval.Milliseconds()
	opts.FileSystems = j.Local.FileSystems
	return opts, err
}

// ErrEnded is returned by Launch for the plan and worker targets when Exit
// returns (only a test's Exit does): the job ran in this process as far as
// the target goes, and there is no job to follow.
var ErrEnded = errors.New("launch: the process's part of the job has ended")

// Launch runs the job where the process says. For local and remote it
// returns a Handle on the running job; for plan and worker it ends the
// process through Exit once its part is done.
func (p *Process) Launch(ctx context.Context, j Job) (*Handle, error) {
	if j.Log == nil {
		j.Log = slog.New(slog.DiscardHandler)
	}
	switch p.Target {
	case TargetPlan:
		if err := j.Graph.Validate(); err != nil {
			return nil, err
		}
		if err := p.writePlan(j.Graph); err != nil {
			return nil, err
		}
		p.Exit(0)
		return nil, ErrEnded
	case TargetWorker:
		err := p.runWorker(ctx, j)
		if err != nil {
			j.Log.Error("worker failed", "err", err)
			p.Exit(1)
			return nil, err
		}
		p.Exit(0)
		return nil, ErrEnded
	case TargetRemote:
		return p.submitted(p.submitRemote(ctx, j))
	}
	return p.submitted(startLocal(ctx, j))
}

// submitted records a started or submitted job for the CLI.
func (p *Process) submitted(h *Handle, err error) (*Handle, error) {
	if err != nil || p.SubmittedOut == "" {
		return h, err
	}
	f, ferr := os.OpenFile(p.SubmittedOut, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if ferr == nil {
		_, ferr = fmt.Fprintln(f, h.JobID())
		ferr = errors.Join(ferr, f.Close())
	}
	if ferr != nil {
		return h, fmt.Errorf("launch: recording the submitted job for the CLI in %s=%s: %w", conf.EnvSubmittedOut, p.SubmittedOut, ferr)
	}
	return h, nil
}

func startLocal(ctx context.Context, j Job) (*Handle, error) {
	g := j.Graph
	mode, err := ResolveMode(g, j.Mode)
	if err != nil {
		return nil, err
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		return nil, err
	}
	opts, err := j.options(mode)
	if err != nil {
		return nil, err
	}
	if opts.Checkpoints != nil || opts.RestoreFrom != "" {
		for _, n := range g.Nodes {
			if n.UID == "" && (n.Keyed || n.Inputs == 0) {
				j.Log.Warn("stateful operator without a UID: its state is matched by a generated ID that changes when the job's shape changes; set one with UID(...) to restore savepoints across job versions",
					"operator", n.Name, "id", n.ID)
			}
		}
	}
	j.Log.Info("executing job", "job", g.Name, "mode", mode.String(), "chains", len(plan.Chains), "fingerprint", g.Fingerprint())
	job, err := jobmaster.Start(ctx, plan, opts)
	if err != nil {
		return nil, fmt.Errorf("launch: starting job %q: %w", g.Name, err)
	}
	return &Handle{name: g.Name, local: job}, nil
}

// ResolveMode turns the configured runtime mode into the one the job runs
// in (AUTOMATIC: BATCH when every source is bounded).
func ResolveMode(g *graph.JobGraph, mode string) (task.RuntimeMode, error) {
	if mode == "" {
		mode = conf.RuntimeModeStreaming
	}
	return jobmaster.ResolveMode(g, mode)
}

// writePlan writes the job graph for the client.
func (p *Process) writePlan(g *graph.JobGraph) error {
	if p.PlanOut == "" {
		return fmt.Errorf("launch: %s=plan needs %s, the file to write the job graph to", conf.EnvExecutionTarget, conf.EnvPlanOut)
	}
	b, err := g.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.PlanOut, b, 0o644); err != nil {
		return fmt.Errorf("launch: writing the job graph: %w", err)
	}
	return nil
}

// runWorker runs this process's share of a job deployed on a cluster until
// the JobMaster ends the session.
func (p *Process) runWorker(ctx context.Context, j Job) error {
	plan, err := graph.BuildPlan(j.Graph)
	if err != nil {
		return err
	}
	mode, err := ResolveMode(j.Graph, j.Mode)
	if err != nil {
		return err
	}
	opts, err := j.options(mode)
	if err != nil {
		return err
	}
	return worker.Run(ctx, plan, opts, p.Worker)
}

// submitRemote submits the job and this binary to the JobManager; unless
// execution.attached is false, the Handle then follows the job to its end.
func (p *Process) submitRemote(ctx context.Context, j Job) (*Handle, error) {
	g := j.Graph
	if p.JobManager == "" {
		return nil, fmt.Errorf("launch: %s=remote needs %s, the JobManager's REST address (host:port)", conf.EnvExecutionTarget, conf.EnvJobManager)
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	tc, err := tlsconf.RESTClient(j.Config)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	token := []byte(p.RESTToken)
	if len(token) == 0 {
		if token, err = restapi.TokenFromConf(j.Config); err != nil {
			return nil, fmt.Errorf("launch: %w", err)
		}
	}
	c, err := restclient.New(p.JobManager, restclient.WithTLS(tc), restclient.WithToken(token))
	if err != nil {
		return nil, fmt.Errorf("launch: JobManager %q: %w", p.JobManager, err)
	}
	b, err := g.Marshal()
	if err != nil {
		return nil, err
	}
	overrides := map[string]string{}
	for _, prop := range p.DynamicProperties {
		if k, v, err := conf.ParseDynamicProperty(prop); err == nil {
			overrides[k] = v
		}
	}
	id, err := c.Submit(ctx, restclient.Submission{Graph: b, BinaryPath: p.Executable, Args: p.Args,
		SavepointPath: conf.Get(j.Config, conf.StateRecoveryPath), AllowNonRestoredState: conf.Get(j.Config, conf.StateRecoveryIgnoreUnclaimedState),
		Configuration: overrides})
	if err != nil {
		return nil, fmt.Errorf("launch: submitting job %q to %s: %w", g.Name, p.JobManager, err)
	}
	fmt.Fprintf(p.Stdout, "Job has been submitted with JobID %s\n", id)
	rj := &remoteJob{c: c, id: id, name: g.Name, ctx: ctx, log: j.Log, detached: !conf.Get(j.Config, conf.ExecutionAttached)}
	return &Handle{name: g.Name, remote: rj}, nil
}

// Result describes a finished job.
type Result struct {
	JobID    string
	Duration time.Duration
	// Subtasks are the metrics per subtask of the last attempt (local jobs).
	Subtasks []SubtaskMetrics
	// Restarts counts recoveries from failures.
	Restarts int
	// Checkpoints counts completed checkpoints.
	Checkpoints int
	// Savepoint is the savepoint a stop-with-savepoint wrote.
	Savepoint string
}

// Handle is a launched job: in this process, or on a cluster.
type Handle struct {
	name   string
	local  *jobmaster.Job
	remote *remoteJob
}

// Wait blocks until the job ends (at once for a detached remote job).
func (h *Handle) Wait() (*Result, error) {
	if h.remote != nil {
		return h.remote.wait()
	}
	res, err := h.local.Wait()
	r := &Result{JobID: h.local.ID()}
	if res != nil {
		r.Duration, r.Restarts, r.Checkpoints, r.Savepoint = res.Duration, res.Restarts, res.Checkpoints, res.Savepoint
		r.Subtasks = subtaskMetrics(res.Subtasks)
	}
	return r, err
}

// SubtaskMetrics are one subtask's metrics at the end of a local job.
type SubtaskMetrics struct {
	Vertex                    string
	Subtask                   int
	RecordsIn, RecordsOut     int64
	Busy, Idle, Backpressured time.Duration
}

func subtaskMetrics(ms []jobmaster.SubtaskMetrics) []SubtaskMetrics {
	if ms == nil {
		return nil
	}
	out := make([]SubtaskMetrics, len(ms))
	for i, m := range ms {
		out[i] = SubtaskMetrics{Vertex: m.Vertex, Subtask: m.Subtask,
			RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(),
			Busy: time.Duration(m.BusyNanos.Load()), Idle: time.Duration(m.IdleNanos.Load()),
			Backpressured: time.Duration(m.BackpressuredNanos.Load())}
	}
	return out
}

// JobID is the job's identifier.
func (h *Handle) JobID() string {
	if h.remote != nil {
		return h.remote.id
	}
	return h.local.ID()
}

// Cancel stops the job.
func (h *Handle) Cancel() {
	if h.remote != nil {
		h.remote.cancel()
		return
	}
	h.local.Cancel()
}

// TriggerSavepoint writes a savepoint into dir (empty: the configured
// execution.checkpointing.savepoint-dir) and returns its path.
func (h *Handle) TriggerSavepoint(dir string) (string, error) {
	if h.remote != nil {
		return h.remote.c.Savepoint(h.remote.ctx, h.remote.id, restapi.SavepointTriggerRequest{TargetDirectory: dir})
	}
	return h.local.TriggerSavepoint(dir)
}

// StopWithSavepoint writes a savepoint and stops the job; with drain, event
// time is ended first.
func (h *Handle) StopWithSavepoint(dir string, drain bool) (string, error) {
	if h.remote != nil {
		return h.remote.c.StopWithSavepoint(h.remote.ctx, h.remote.id, restapi.StopRequest{TargetDirectory: dir, Drain: drain})
	}
	return h.local.StopWithSavepoint(dir, drain)
}

// remoteJob is a job running on a cluster, followed through its REST API.
type remoteJob struct {
	c        *restclient.Client
	ctx      context.Context
	log      *slog.Logger
	id, name string
	detached bool
}

func (r *remoteJob) wait() (*Result, error) {
	res := &Result{JobID: r.id}
	if r.detached {
		return res, nil
	}
	er, err := r.c.WaitForResult(r.ctx, r.id)
	if err != nil {
		return res, fmt.Errorf("launch: following job %q (%s): %w", r.name, r.id, err)
	}
	res.Duration = time.Duration(er.NetRuntime) * time.Millisecond
	if n, ok := er.AccumulatorResults.Int("restarts"); ok {
		res.Restarts = int(n)
	}
	if n, ok := er.AccumulatorResults.Int("checkpoints"); ok {
		res.Checkpoints = int(n)
	}
	res.Savepoint, _ = er.AccumulatorResults.String("savepoint")
	return res, er.Err()
}

func (r *remoteJob) cancel() {
	// The cancel goes out even when the context that follows the job has
	// ended (a client interrupted with Ctrl-C cancels its job).
	ctx, stop := context.WithTimeout(context.WithoutCancel(r.ctx), 30*time.Second)
	defer stop()
	if err := r.c.Cancel(ctx, r.id); err != nil {
		r.log.Warn("cancelling the job failed", "job", r.id, "err", err)
	}
}
