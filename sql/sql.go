// Package sql runs Flink SQL scripts on Sluice: CREATE TABLE over Kafka
// topics, SET, and INSERT INTO ... SELECT queries (projections, filters,
// window TVF aggregations) that run as streaming jobs on the engine, as
// Flink's SQL client runs them.
//
//	s := sql.NewSession(sql.Options{})
//	jobs, err := s.ExecuteScript(ctx, script)
//	// jobs[0].ID() is the job of the script's first INSERT
//
// Each INSERT runs as a job of its own; EXECUTE STATEMENT SET BEGIN ...
// END runs its INSERTs as one job. Mistakes are reported before anything
// runs, at their line and column with a caret (see Error).
package sql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/launch"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/exec"
	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/planner"
)

// Errors of scripts, tested with errors.Is.
var (
	// ErrSyntax: the script does not parse.
	ErrSyntax = parser.ErrSyntax
	// ErrUnknown: a table, column or function that does not exist.
	ErrUnknown = planner.ErrUnknown
	// ErrInvalid: a statement that parses but is wrong (types, options).
	ErrInvalid = planner.ErrInvalid
)

// Error is a mistake at a place in a script: Line and Column (1-based),
// and a message that shows the line with a caret.
type Error = parser.Error

// Options configure a session.
type Options struct {
	// Config is the base configuration of the session's jobs (the keys of
	// config.yaml: parallelism.default, execution.checkpointing.*, ...);
	// SET statements override it. Nil: the defaults.
	Config map[string]string
	// Stdout receives what the client prints (the job ids) and the rows of
	// 'print' tables. Nil: discarded.
	Stdout io.Writer
	// Log receives the jobs' logs. Nil: discarded.
	Log *slog.Logger
	// Terminal says that Stdout is a terminal: a SELECT's result is then
	// shown as a table of its changes, unless ResultModeKey says otherwise
	// (see there).
	Terminal bool
	// FileSystems resolves the URIs of filesystem tables' paths and of
	// checkpoints (register hdfs:// on it with hdfs.Register). Nil: local
	// paths and file:// only.
	FileSystems *fs.Resolver
	// Cluster, when set, is the JobManager the session's jobs are
	// submitted to instead of running in this process (see Cluster); a
	// SELECT's result comes back from it when Cluster.ResultHost is set,
	// else the SELECT is refused. Nil: the embedded engine.
	Cluster *Cluster
}

// Session is a SQL client session: its catalog of tables and its settings.
type Session struct {
	o  Options
	pl *planner.Session
	// proc is where the jobs run (nil: the embedded engine) and prefix
	// the job program's arguments before a job's own (see Cluster); only,
	// when not -1, is the one job this process builds (a worker's).
	proc   *launch.Process
	prefix []string
	only   int
	// history is every script the session ran, and jobs how many jobs
	// they started: a cluster's job program replays them (see Cluster).
	history string
	jobs    int
}

// NewSession starts a session.
func NewSession(o Options) *Session {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	// The client's messages and the print tables' rows share the writer.
	o.Stdout = &lockedWriter{w: o.Stdout}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Session{o: o, pl: planner.NewSession(nil), only: -1}
	if o.Cluster != nil {
		s.proc, s.prefix = clusterProcess(o.Cluster)
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Job is a running SQL job.
type Job struct {
	h        *launch.Handle
	restarts int
	name     string
	metrics  *exec.Metrics
	// view shows a SELECT's result (nil: printed as a changelog, or no
	// SELECT); finished once, by the first Wait.
	view      resultView
	finish    sync.Once
	cancelled atomic.Bool
	query     bool
	// collect receives a SELECT's result from a cluster (nil: none).
	collect *collector
}

// Query reports whether the job is a SELECT's, whose result the client
// shows (rather than an INSERT's).
func (j *Job) Query() bool { return j.query }

// ID is the job's identifier.
func (j *Job) ID() string { return j.h.JobID() }

// Name is the job's name (insert-into_<sink table>).
func (j *Job) Name() string { return j.name }

// Wait blocks until the job ends and returns why it failed.
func (j *Job) Wait() error {
	res, err := j.h.Wait()
	if res != nil {
		j.restarts = res.Restarts
	}
	if j.collect != nil {
		// The sink's process ends with the job, which ends its connection.
		err = errors.Join(err, j.collect.close(30*time.Second))
	}
	if j.view != nil {
		j.finish.Do(func() { j.view.finish(j.cancelled.Load()) })
	}
	if err != nil {
		return fmt.Errorf("sql: job %s (%s) failed: %w", j.name, j.ID(), err)
	}
	return nil
}

// Cancel stops the job.
func (j *Job) Cancel() {
	j.cancelled.Store(true)
	j.h.Cancel()
}

// StopWithSavepoint writes a savepoint into dir (empty: the configured
// execution.checkpointing.savepoint-dir) and stops the job; a script run
// again with SET 'execution.state-recovery.path' = '<the path>' continues
// from it (every operator of a statement has a UID from its place in the
// script).
func (j *Job) StopWithSavepoint(dir string) (string, error) { return j.h.StopWithSavepoint(dir, false) }

// Restarts is how often the job restarted, once Wait returned.
func (j *Job) Restarts() int { return j.restarts }

// Metrics are the job's counters.
type Metrics struct {
	// SkippedRecords counts malformed source records skipped
	// ('json.ignore-parse-errors' = 'true').
	SkippedRecords int64
	// NulledFields counts source fields read as NULL because they could
	// not be converted ('json.ignore-parse-errors' = 'true').
	NulledFields int64
	// LateRecordsDropped counts rows dropped as late: by window
	// aggregations, SESSION window functions, window Top-N and window
	// deduplication, and deduplications keeping the first row by rowtime.
	LateRecordsDropped int64
}

// Metrics returns the job's counters now.
func (j *Job) Metrics() Metrics {
	return Metrics{
		SkippedRecords:     j.metrics.SkippedRecords.Load(),
		NulledFields:       j.metrics.NulledFields.Load(),
		LateRecordsDropped: j.metrics.LateRecordsDropped.Load(),
	}
}

// Validate parses and plans the whole script without running anything
// (in a session of its own), reporting its first mistake.
func Validate(script string) error { return ValidateWith(Options{}, script) }

// ValidateWith is Validate in a session with the options o (a Cluster
// without a ResultHost refuses a SELECT); no job is started or submitted.
func ValidateWith(o Options, script string) error {
	s := NewSession(o)
	_, err := s.run(context.Background(), script, false)
	return err
}

// ExecuteScript runs the statements of script in order: DDL and SET
// change the session; EXPLAIN, SHOW TABLES and DESCRIBE print; each
// INSERT (or statement set) starts a job, whose id is printed as Flink's
// client prints it. The whole script is planned before the first job
// starts, so a mistake anywhere starts nothing.
func (s *Session) ExecuteScript(ctx context.Context, script string) ([]*Job, error) {
	// Plan everything first in a scratch copy of the session, then for real.
	scratch := &Session{o: s.o, pl: planner.NewSession(s.pl.Catalog().Clone()), proc: s.proc, only: s.only}
	if _, err := scratch.run(ctx, script, false); err != nil {
		return nil, err
	}
	jobs, err := s.run(ctx, script, true)
	if err == nil {
		s.history = joinScripts(s.history, script)
	}
	return jobs, err
}

func (s *Session) run(ctx context.Context, script string, start bool) ([]*Job, error) {
	stmts, err := parser.Parse(script)
	if err != nil {
		return nil, err
	}
	var jobs []*Job
	whole := joinScripts(s.history, script) // what a cluster's job program replays
	n := s.jobs
	for _, st := range stmts {
		res, err := s.pl.Execute(script, st)
		if err != nil {
			for _, j := range jobs {
				j.Cancel()
			}
			return nil, err
		}
		if res.Text != "" && start {
			fmt.Fprintln(s.o.Stdout, res.Text)
		}
		if len(res.Sinks) == 0 {
			if _, isSet := st.(*parser.Set); isSet && start {
				fmt.Fprintln(s.o.Stdout, "[INFO] Execute statement succeeded.")
			}
			continue
		}
		k := n
		n++
		if !s.canCollect() && len(res.Sinks) == 1 && res.Sinks[0].Table.Name == planner.SelectTable {
			return nil, refuseQuery(script, st)
		}
		if !start || (s.only >= 0 && k != s.only) {
			continue // a worker builds its own job only
		}
		j, err := s.startJob(ctx, res.Sinks, s.process(k, whole))
		if err != nil {
			for _, j := range jobs {
				j.Cancel()
			}
			return nil, err
		}
		if j.view == nil {
			// A SELECT shown as a table prints the table alone, as in Flink.
			fmt.Fprintf(s.o.Stdout, "[INFO] Submitting SQL update statement to the cluster...\n[INFO] SQL update statement has been successfully submitted to the cluster:\nJob ID: %s\n", j.ID())
		}
		jobs = append(jobs, j)
	}
	if start {
		s.jobs = n
	}
	return jobs, nil
}

// config is the session's configuration: the base and every SET.
func (s *Session) config() *conf.Configuration {
	c := conf.FromMap(s.o.Config, conf.Source{Name: "sql session"})
	for k, v := range s.pl.Catalog().Settings {
		c = c.Set(k, v)
	}
	return c
}

func (s *Session) startJob(ctx context.Context, sinks []*planner.Sink, proc *launch.Process) (*Job, error) {
	cfg := s.config()
	par := 1
	if v, ok := cfg.Raw("parallelism.default"); ok {
		if _, err := fmt.Sscan(v.Value, &par); err != nil || par < 1 {
			return nil, fmt.Errorf("%w: 'parallelism.default' = '%s' is not a positive number", ErrInvalid, v.Value)
		}
	}
	b := core.NewBuilder(par, 0)
	m := &exec.Metrics{}
	var view resultView
	query := len(sinks) == 1 && sinks[0].Table.Name == planner.SelectTable
	if query {
		mode := ResultChangelog
		if s.o.Terminal {
			mode = ResultTableau
		}
		if v, ok := cfg.Raw(ResultModeKey); ok {
			mode = v.Value
		}
		if mode != ResultChangelog {
			var err error
			if view, err = newResultView(mode, sinks[0].Input.Fields(), s.o.Stdout, s.o.Terminal); err != nil {
				return nil, err
			}
		}
	}
	eo := exec.Options{Config: cfg, Log: s.o.Log, Stdout: s.o.Stdout, Metrics: m}
	if view != nil {
		eo.Results = view.row
	}
	var col *collector
	if query && s.onCluster() {
		// The result comes back from the cluster (collect.go); the client and
		// the job program build the same collect sink.
		if s.only >= 0 {
			addr, ok1 := cfg.Raw(collectAddressKey)
			token, ok2 := cfg.Raw(collectTokenKey)
			if !ok1 || !ok2 {
				return nil, errNoResultTarget
			}
			eo.Results = (&collectSender{addr: addr.Value, token: token.Value}).send
		} else {
			rows := changelogPrinter(s.o.Stdout)
			if view != nil {
				rows = view.row
			}
			var err error
			if col, err = listenCollect(s.o.Cluster.ResultHost, rows); err != nil {
				return nil, err
			}
			cfg = cfg.Set(collectAddressKey, col.addr()).Set(collectTokenKey, col.token)
			eo.Config = cfg
			eo.Results = func(core.RowKind, []string) error { return errNoResultTarget } // runs on the cluster
		}
	}
	if err := exec.Compile(b, sinks, eo); err != nil {
		if col != nil {
			col.close(0)
		}
		return nil, err
	}
	var names []string
	for _, sk := range sinks {
		names = append(names, sk.Table.Path())
	}
	name := "insert-into_" + strings.Join(names, ",")
	if v, ok := cfg.Raw("pipeline.name"); ok {
		name = v.Value
	}
	g, err := b.Build(name, cfg.ToMap())
	if err != nil {
		if col != nil {
			col.close(0)
		}
		return nil, err
	}
	log := s.o.Log
	jcfg := cfg
	if s.onCluster() {
		// Detached unless table.dml-sync says to follow the job (Flink's
		// SQL client submits INSERTs detached); a SELECT's client follows
		// its job to show the result.
		jcfg = cfg.Set(conf.ExecutionAttached.Key(), strconv.FormatBool(query || isTrue(cfg, DMLSyncKey)))
	}
	h, err := proc.Launch(ctx, launch.Job{
		Graph: g, Config: jcfg, Log: log, Local: launch.LocalSettings{FileSystems: s.o.FileSystems},
	})
	if err != nil {
		if col != nil {
			col.close(0)
		}
		return nil, err
	}
	return &Job{h: h, name: name, metrics: m, view: view, query: query, collect: col}, nil
}

// IsScriptError reports whether err is a mistake in the script (syntax,
// unknown name, invalid statement) rather than a failure to run it.
func IsScriptError(err error) bool {
	return errors.Is(err, ErrSyntax) || errors.Is(err, ErrUnknown) || errors.Is(err, ErrInvalid)
}

// isTrue reports whether key is set to true in c.
func isTrue(c *conf.Configuration, key string) bool {
	v, ok := c.Raw(key)
	return ok && strings.EqualFold(strings.TrimSpace(v.Value), "true")
}
