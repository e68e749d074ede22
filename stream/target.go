package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sluice/sluice/cluster/worker"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/runtime/graph"
)

// The environment of a job binary started by the CLI or a TaskManager:
// where Execute runs the job (the client's --target, or a worker), and the
// dynamic properties (-D) that override the configuration.
const (
	// EnvExecutionTarget is local (default), plan, remote or worker.
	EnvExecutionTarget = "SLUICE_EXECUTION_TARGET"
	// EnvPlanOut is the file the plan target writes the job graph to.
	EnvPlanOut = "SLUICE_PLAN_OUT"
	// EnvJobManager is the REST address (host:port) of the remote target.
	EnvJobManager = "SLUICE_JOBMANAGER"
	// EnvDynamicProperties holds key=value lines.
	EnvDynamicProperties = "SLUICE_DYNAMIC_PROPERTIES"
	// EnvWorkerDeployment is the deployment file of a worker.
	EnvWorkerDeployment = "SLUICE_WORKER_DEPLOYMENT"
)

// Execution targets.
const (
	targetLocal  = "local"
	targetPlan   = "plan"
	targetRemote = "remote"
	targetWorker = "worker"
)

// ErrPlanWritten ends Execute in a program run for its plan (sluice info):
// the job graph was written and the job does not run.
var ErrPlanWritten = errors.New("stream: the job graph was written for the client; the job does not run in this process")

// dynamicProperties are the configuration overrides the process was
// started with: the CLI's -D, or a worker's deployment.
func dynamicProperties() (*conf.Configuration, *worker.Deployment, error) {
	var props []string
	if s := os.Getenv(EnvDynamicProperties); s != "" {
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				props = append(props, l)
			}
		}
	}
	var dep *worker.Deployment
	if os.Getenv(EnvExecutionTarget) == targetWorker {
		d, err := worker.ReadDeployment(os.Getenv(EnvWorkerDeployment))
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
	switch t := os.Getenv(EnvExecutionTarget); t {
	case "", targetLocal:
		return targetLocal, nil
	case targetPlan, targetRemote, targetWorker:
		return t, nil
	default:
		return "", fmt.Errorf("stream: %s=%q: want local, plan, remote or worker", EnvExecutionTarget, t)
	}
}

// writePlan writes the job graph for the client.
func writePlan(g *graph.JobGraph) error {
	out := os.Getenv(EnvPlanOut)
	if out == "" {
		return fmt.Errorf("stream: %s=plan needs %s, the file to write the job graph to", EnvExecutionTarget, EnvPlanOut)
	}
	b, err := g.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("stream: writing the job graph: %w", err)
	}
	return ErrPlanWritten
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

// submitRemote submits the job to a JobManager (SLUICE_JOBMANAGER).
func (e *Environment) submitRemote(ctx context.Context, g *graph.JobGraph) (*JobClient, error) {
	return nil, errors.New("stream: remote submission is being wired to the REST client")
}
