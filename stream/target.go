package stream

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/restclient"

	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/cluster/worker"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// Execution targets of a job binary (conf.conf.EnvExecutionTarget).
const (
	targetLocal  = conf.TargetLocal
	targetPlan   = conf.BinaryModePlan
	targetRemote = conf.TargetRemote
	targetWorker = conf.BinaryModeWorker
)

// dynamicProperties are the configuration overrides the process was
// started with: the CLI's -D, or a worker's deployment.
func dynamicProperties() (*conf.Configuration, *deployment.WorkerDeployment, error) {
	var props []string
	props = conf.SplitDynamicProperties(os.Getenv(conf.EnvDynamicProperties))
	var dep *deployment.WorkerDeployment
	if os.Getenv(conf.EnvExecutionTarget) == targetWorker {
		d, err := deployment.ReadWorkerDeployment(os.Getenv(conf.EnvWorkerDeployment))
		if err != nil {
			return nil, nil, err
		}
		dep = d
		for k, v := range d.Configuration {
			props = append(props, k+"="+v)
		}
	}
	if len(props) == 0 {
		return nil, dep, nil
	}
	return conf.FromDynamicProperties(props), dep, nil
}

// target is where this process runs its jobs.
func target() (string, error) {
	switch t := os.Getenv(conf.EnvExecutionTarget); t {
	case "", targetLocal:
		return targetLocal, nil
	case targetPlan, targetRemote, targetWorker:
		return t, nil
	default:
		return "", fmt.Errorf("stream: %s=%q: want local, plan, remote or worker", conf.EnvExecutionTarget, t)
	}
}

// writePlan writes the job graph for the client (sluice info, or a
// client building the graph) and ends the process: a program run for its
// plan never continues past Execute.
func writePlan(g *graph.JobGraph) error {
	out := os.Getenv(conf.EnvPlanOut)
	if out == "" {
		return fmt.Errorf("stream: %s=plan needs %s, the file to write the job graph to", conf.EnvExecutionTarget, conf.EnvPlanOut)
	}
	b, err := g.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("stream: writing the job graph: %w", err)
	}
	os.Exit(0)
	return nil
}

// runWorker runs this process's share of a job deployed on a cluster, and
// exits the process when the JobMaster ends the session: a worker's program
// never continues past Execute.
func (e *Environment) runWorker(ctx context.Context, g *graph.JobGraph) error {
	plan, err := graph.BuildPlan(g)
	if err != nil {
		return err
	}
	mode, err := e.resolveMode(g)
	if err != nil {
		return err
	}
	opts, err := e.localOptions(mode)
	if err != nil {
		return err
	}
	err = worker.Run(ctx, plan, opts, e.workerDep)
	if err != nil {
		e.log.Error("worker failed", "err", err)
		os.Exit(1)
	}
	os.Exit(0)
	return nil
}

// submitRemote submits the job and this binary to the JobManager at
// SLUICE_JOBMANAGER; unless execution.attached is false, Wait then follows
// the job to its end.
func (e *Environment) submitRemote(ctx context.Context, g *graph.JobGraph) (*JobClient, error) {
	addr := os.Getenv(conf.EnvJobManager)
	if addr == "" {
		return nil, fmt.Errorf("stream: %s=remote needs %s, the JobManager's REST address (host:port)", conf.EnvExecutionTarget, conf.EnvJobManager)
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	c, err := restclient.New(addr)
	if err != nil {
		return nil, fmt.Errorf("stream: JobManager %q: %w", addr, err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("stream: finding this job binary to submit: %w", err)
	}
	b, err := g.Marshal()
	if err != nil {
		return nil, err
	}
	overrides := map[string]string{}
	for _, p := range conf.SplitDynamicProperties(os.Getenv(conf.EnvDynamicProperties)) {
		if k, v, err := conf.ParseDynamicProperty(p); err == nil {
			overrides[k] = v
		}
	}
	id, err := c.Submit(ctx, restclient.Submission{Graph: b, BinaryPath: self, Args: os.Args[1:],
		SavepointPath: conf.Get(e.config, conf.StateRecoveryPath), AllowNonRestoredState: conf.Get(e.config, conf.StateRecoveryIgnoreUnclaimedState),
		Configuration: overrides})
	if err != nil {
		return nil, fmt.Errorf("stream: submitting job %q to %s: %w", g.Name, addr, err)
	}
	fmt.Fprintf(os.Stdout, "Job has been submitted with JobID %s\n", id)
	rj := &remoteJob{c: c, id: id, name: g.Name, ctx: ctx, detached: !conf.Get(e.config, conf.ExecutionAttached)}
	return &JobClient{name: g.Name, remote: rj}, nil
}

// remoteJob is a job running on a cluster, followed through its REST API.
type remoteJob struct {
	c        *restclient.Client
	ctx      context.Context
	id, name string
	detached bool
}

func (r *remoteJob) wait() (*JobResult, error) {
	jr := &JobResult{Name: r.name, JobID: r.id}
	if r.detached {
		return jr, nil
	}
	res, err := r.c.WaitForResult(r.ctx, r.id)
	if err != nil {
		return jr, fmt.Errorf("stream: following job %q (%s): %w", r.name, r.id, err)
	}
	jr.Duration = time.Duration(res.NetRuntime) * time.Millisecond
	if n, err := strconv.Atoi(res.AccumulatorResults["restarts"]); err == nil {
		jr.Restarts = n
	}
	if n, err := strconv.Atoi(res.AccumulatorResults["checkpoints"]); err == nil {
		jr.Checkpoints = n
	}
	jr.Savepoint = res.AccumulatorResults["savepoint"]
	if err := res.Err(); err != nil {
		return jr, fmt.Errorf("stream: job %q failed: %w", r.name, err)
	}
	return jr, nil
}

func (r *remoteJob) cancel() {
	if err := r.c.Cancel(r.ctx, r.id); err != nil {
		slog.Default().Warn("cancelling the job failed", "job", r.id, "err", err)
	}
}

func (r *remoteJob) savepoint(dir string, stop, drain bool) (string, error) {
	if stop {
		return r.c.StopWithSavepoint(r.ctx, r.id, rest.StopRequest{TargetDirectory: dir, Drain: drain})
	}
	return r.c.Savepoint(r.ctx, r.id, rest.SavepointTriggerRequest{TargetDirectory: dir})
}
