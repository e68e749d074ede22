package sql

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/launch"
	"github.com/sluice/sluice/internal/sql/parser"
)

// Cluster is where a session submits its jobs instead of running them in
// this process: a JobManager's REST endpoint (a standalone cluster, a
// YARN session, or an application's own JobManager).
//
// SQL has no user code, so a cluster runs every SQL job with one job
// program, Program: a binary whose main calls RunJobProgram with the
// arguments it was given after Program's own (the sluice binary's hidden
// "sql-job" command). Each job is submitted with that binary and, as its
// program arguments, the job's number and the session's whole script (every
// script the session ran before, then this one); a worker runs the program
// again, plans the same script and builds that one job, whose graph is the
// client's (the same plan, so the same operator UIDs: a savepoint restores
// into it).
type Cluster struct {
	// JobManager is the REST endpoint, host:port.
	JobManager string
	// Token is the REST token of requests that change state ("": none, or
	// security.rest.token-file of the configuration).
	Token string
	// Program is the job program's binary and the arguments before the
	// job's own (for sluice: its executable, "sql-job").
	Program []string
	// ResultHost is the address of this client that the cluster's
	// TaskManagers reach, where a SELECT's job sends its result (see
	// collect.go); "": a SELECT is refused.
	ResultHost string
}

// DMLSyncKey is Flink's table.dml-sync: when 'true', a session whose jobs
// run on a cluster follows each INSERT's job to its end (Job.Wait waits);
// by default (false) the jobs are submitted detached, as Flink's SQL
// client submits them, and Wait returns at once. A local job always runs
// in the client, which waits for it.
const DMLSyncKey = "table.dml-sync"

// jobArgs are the program arguments of the session's job number k.
func jobArgs(prefix []string, k int, script string) []string {
	return append(append([]string(nil), prefix...), strconv.Itoa(k), script)
}

// allJobs is the job argument of a program that submits every job of its
// script (application mode).
const allJobs = "all"

// ProgramArgs are the arguments after the job program's own (Cluster.Program)
// with which a cluster's JobManager runs the whole script in application
// mode, submitting each of its jobs.
func ProgramArgs(script string) []string { return []string{allJobs, script} }

// RunJobProgram is the main of the SQL job program (see Cluster), run by
// a cluster where the process's environment says (internal/launch's job
// binary contract): args are the job's number (or "all") and the script,
// prefix the program's arguments before them. A worker plans the script,
// builds its job and runs its share, and the process ends there; in
// application mode (the JobManager runs the program with "all") every
// job is submitted to that JobManager, with its own number. o.Config is
// the base configuration, under the process's dynamic properties.
func RunJobProgram(ctx context.Context, o Options, prefix, args []string) ([]*Job, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("sql: a SQL job program takes 2 arguments (the job's number or %q, and the script), got %d", allJobs, len(args))
	}
	only := -1
	if args[0] != allJobs {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("sql: the SQL job program's job number %q is not a number or %q", args[0], allJobs)
		}
		only = n
	}
	p, err := launch.FromEnvironment()
	if err != nil {
		return nil, err
	}
	if only < 0 && (p.Target == launch.TargetWorker || p.Target == launch.TargetPlan) {
		return nil, fmt.Errorf("sql: a SQL job program run as %s builds one job: give its number, not %q", p.Target, allJobs)
	}
	base := conf.FromMap(o.Config, conf.Source{Name: "sql job program"})
	if dyn := p.Overrides(); dyn != nil {
		base = base.Merge(dyn)
	}
	o.Config = base.ToMap()
	s := NewSession(o)
	s.proc, s.prefix, s.only = p, prefix, only
	return s.ExecuteScript(ctx, args[1])
}

// onCluster reports whether the session's jobs run elsewhere than in this
// process.
func (s *Session) onCluster() bool { return s.proc != nil && s.proc.Target != launch.TargetLocal }

// process is where job number k of script (the session's whole script)
// runs: on the embedded engine, or as the session's process says, with
// the job's own program arguments.
func (s *Session) process(k int, script string) *launch.Process {
	if s.proc == nil {
		return launch.Local()
	}
	p := *s.proc
	p.Args = jobArgs(s.prefix, k, script)
	p.Stdout = io.Discard // the session prints the job id as Flink's SQL client does
	return &p
}

// clusterProcess is the launch process of a session whose Options name a
// Cluster.
func clusterProcess(c *Cluster) (*launch.Process, []string) {
	var exe string
	var prefix []string
	if len(c.Program) > 0 {
		exe, prefix = c.Program[0], c.Program[1:]
	}
	return &launch.Process{Target: launch.TargetRemote, JobManager: c.JobManager, RESTToken: c.Token,
		Executable: exe, Exit: func(int) {}}, prefix
}

// canCollect reports whether a SELECT's result can reach its client:
// on the embedded engine, from a client that listens for it, and in the
// job program that builds one job (its sink sends to the client).
func (s *Session) canCollect() bool {
	return !s.onCluster() || s.only >= 0 || (s.o.Cluster != nil && s.o.Cluster.ResultHost != "")
}

// refuseQuery is the error of a SELECT in a session whose jobs cannot send
// their result back, at the statement.
func refuseQuery(script string, st parser.Stmt) error {
	return parser.ErrorAt(script, st.Position(), ErrInvalid,
		"a SELECT's result is shown by the targets local, remote and yarn-session: "+
			"in yarn-application mode the script runs in the cluster, with no client to show it to; "+
			"use one of those targets, or INSERT INTO a table")
}

// joinScripts appends script to the session's earlier scripts, each
// ended by a ';' so that their statements stay apart.
func joinScripts(history, script string) string {
	if strings.TrimSpace(script) == "" {
		return history
	}
	return history + script + "\n;\n"
}
