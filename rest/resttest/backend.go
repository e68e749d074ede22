// Package resttest provides an in-memory rest.Backend for tests of the REST
// server, its client and the CLI: a working fake cluster whose jobs are
// records that tests add, submit, and move between states.
package resttest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest"
)

// Job is one job of the fake cluster.
type Job struct {
	Overview    restapi.JobOverview
	Details     restapi.JobDetails
	Exceptions  []restapi.RootExceptionInfo
	Checkpoints *restapi.CheckpointingStatistics // nil: checkpointing not enabled
	Result      *restapi.JobResult               // nil while the job runs
}

// Received is a submission as the fake received it.
type Received struct {
	JobID      string
	Submission rest.Submission
	// Binary is the content of the binary; BinaryPath is gone after
	// SubmitJob returned.
	Binary []byte
}

// Backend is an in-memory rest.Backend. The zero value is not usable; call
// New. Set the hook fields before serving requests.
type Backend struct {
	// Clock gives start and end times. Default: a manual clock at 1 000 000.
	Clock clock.Clock
	// Savepoint, Stop and Checkpoint run the operations when set. By
	// default a savepoint completes at once at
	// <target>/savepoint-<job prefix>-<n> ("" target: an ErrBadRequest
	// error), a stop also ends the job FINISHED, and a checkpoint completes
	// with the next checkpoint ID.
	Savepoint  func(ctx context.Context, jobID string, req rest.SavepointRequest) (string, error)
	Stop       func(ctx context.Context, jobID string, req rest.SavepointRequest) (string, error)
	Checkpoint func(ctx context.Context, jobID string, req rest.CheckpointRequest) (int64, error)
	// Dispose decides a savepoint disposal when set; by default only the
	// savepoints the fake took can be disposed of (once).
	Dispose func(ctx context.Context, path string) error
	// Sample answers SampleVertex when set; by default a vertex of a job
	// the fake knows answers no stacks.
	Sample func(ctx context.Context, jobID, vertexID string, req rest.SampleRequest) ([]flamegraph.Stack, error)
	// AutoFinish, when set, ends every submitted job at once with this
	// application status (SUCCEEDED, FAILED or CANCELED).
	AutoFinish string
	// Err, when set, is returned by every call (e.g. restapi.ErrUnavailable).
	Err error
	// YARN is the YARN application GET /jobmanager/yarn reports; nil: not
	// on YARN.
	YARN *restapi.YARNApplication

	mu struct {
		sync.Mutex
		jobs        map[string]*Job
		order       []string
		tms         []restapi.TaskManagerInfo
		processes   map[string]TaskManagerProcess
		metrics     *rest.MetricsSnapshot
		received    []Received
		savepoints  int
		taken       map[string]bool // savepoints taken and not disposed of
		disposed    []string
		checkpoints int64
		shutDowns   int
	}
}

var _ rest.Backend = (*Backend)(nil)

// New returns an empty fake cluster.
func New() *Backend {
	b := &Backend{Clock: clock.NewManual(1_000_000)}
	b.mu.jobs = map[string]*Job{}
	return b
}

// AddJob adds a job (its Overview.ID must be set).
func (b *Backend) AddJob(j Job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.mu.jobs[j.Overview.ID]; !ok {
		b.mu.order = append(b.mu.order, j.Overview.ID)
	}
	jj := j
	b.mu.jobs[j.Overview.ID] = &jj
}

// SetState moves a job to state s.
func (b *Backend) SetState(id string, s restapi.JobState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if j, ok := b.mu.jobs[id]; ok {
		b.setStateLocked(j, s)
	}
}

// REQUIRES: b.mu held.
func (b *Backend) setStateLocked(j *Job, s restapi.JobState) {
	now := b.Clock.NowMillis()
	j.Overview.State, j.Details.State = s, s
	j.Overview.LastModification = now
	if j.Details.Timestamps == nil {
		j.Details.Timestamps = map[restapi.JobState]int64{}
	}
	j.Details.Timestamps[s] = now
	if s.IsGloballyTerminal() {
		j.Overview.EndTime, j.Details.EndTime = now, now
		j.Overview.Duration = now - j.Overview.StartTime
		j.Details.Duration = j.Overview.Duration
		if j.Result == nil {
			status := map[restapi.JobState]string{restapi.JobFinished: restapi.AppSucceeded, restapi.JobFailed: restapi.AppFailed, restapi.JobCanceled: restapi.AppCanceled}[s]
			j.Result = &restapi.JobResult{ID: j.Overview.ID, ApplicationStatus: status, NetRuntime: j.Overview.Duration}
		}
	}
}

// Finish ends a job with result r (its state follows r.ApplicationStatus).
func (b *Backend) Finish(id string, r restapi.JobResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, ok := b.mu.jobs[id]
	if !ok {
		return
	}
	r.ID = id
	j.Result = &r
	switch r.ApplicationStatus {
	case restapi.AppSucceeded:
		b.setStateLocked(j, restapi.JobFinished)
	case restapi.AppCanceled:
		b.setStateLocked(j, restapi.JobCanceled)
	default:
		b.setStateLocked(j, restapi.JobFailed)
	}
}

// SetTaskManagers sets the registered TaskManagers.
func (b *Backend) SetTaskManagers(tms []restapi.TaskManagerInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.tms = slices.Clone(tms)
}

// SetMetrics sets what Metrics returns.
func (b *Backend) SetMetrics(m *rest.MetricsSnapshot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.metrics = m
}

// Received returns the submissions received so far.
func (b *Backend) Received() []Received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.mu.received)
}

// State returns a job's state.
func (b *Backend) State(id string) (restapi.JobState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, ok := b.mu.jobs[id]
	if !ok {
		return "", false
	}
	return j.Overview.State, true
}

func (b *Backend) job(id string) (*Job, error) {
	if b.Err != nil {
		return nil, b.Err
	}
	j, ok := b.mu.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: job %s", restapi.ErrNotFound, id)
	}
	return j, nil
}

// Jobs implements rest.Backend.
func (b *Backend) Jobs(context.Context) ([]restapi.JobOverview, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Err != nil {
		return nil, b.Err
	}
	out := make([]restapi.JobOverview, 0, len(b.mu.order))
	for _, id := range b.mu.order {
		out = append(out, b.mu.jobs[id].Overview)
	}
	return out, nil
}

// Job implements rest.Backend.
func (b *Backend) Job(_ context.Context, id string) (*restapi.JobDetails, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, err := b.job(id)
	if err != nil {
		return nil, err
	}
	d := j.Details
	return &d, nil
}

// JobExceptions implements rest.Backend.
func (b *Backend) JobExceptions(_ context.Context, id string) ([]restapi.RootExceptionInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, err := b.job(id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(j.Exceptions), nil
}

// JobCheckpoints implements rest.Backend.
func (b *Backend) JobCheckpoints(_ context.Context, id string) (*restapi.CheckpointingStatistics, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, err := b.job(id)
	if err != nil {
		return nil, err
	}
	if j.Checkpoints == nil {
		return nil, fmt.Errorf("%w: checkpointing is not enabled for job %s", restapi.ErrNotFound, id)
	}
	c := *j.Checkpoints
	return &c, nil
}

// JobResult implements rest.Backend.
func (b *Backend) JobResult(_ context.Context, id string) (*restapi.JobResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, err := b.job(id)
	if err != nil {
		return nil, err
	}
	if j.Result == nil {
		return nil, nil
	}
	r := *j.Result
	return &r, nil
}

// SubmitJob implements rest.Backend: the job starts RUNNING with one vertex
// per chain of its graph.
func (b *Backend) SubmitJob(_ context.Context, s *rest.Submission) (string, error) {
	if b.Err != nil {
		return "", b.Err
	}
	bin, err := os.ReadFile(s.BinaryPath)
	if err != nil {
		return "", fmt.Errorf("resttest: reading the received binary: %w", err)
	}
	plan, err := graph.BuildPlan(s.Graph)
	if err != nil {
		return "", fmt.Errorf("%w: %v", restapi.ErrBadRequest, err)
	}
	id := restapi.NewID()
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.Clock.NowMillis()
	vid := func(c *graph.Chain) string { return restapi.DeriveID(id, strconv.Itoa(c.ID)) }
	j := &Job{
		Overview: restapi.JobOverview{ID: id, Name: s.Graph.Name, StartTime: now, EndTime: -1, LastModification: now},
		Details: restapi.JobDetails{ID: id, Name: s.Graph.Name, JobType: "STREAMING", StartTime: now, EndTime: -1,
			MaxParallelism: -1, Plan: rest.NewJobPlan(id, "STREAMING", plan, vid)},
	}
	var counts restapi.StateCounts
	for _, c := range plan.Chains {
		var tasks restapi.StateCounts
		tasks.Add(restapi.TaskRunning, c.Parallelism)
		counts.Add(restapi.TaskRunning, c.Parallelism)
		j.Details.Vertices = append(j.Details.Vertices, restapi.Vertex{
			ID: vid(c), Name: c.Name, Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism,
			Status: restapi.TaskRunning, StartTime: now, EndTime: -1, Tasks: tasks,
		})
	}
	j.Details.StatusCounts = counts
	j.Overview.Tasks = counts.Overview()
	b.mu.jobs[id] = j
	b.mu.order = append(b.mu.order, id)
	b.setStateLocked(j, restapi.JobRunning)
	sub := *s
	sub.BinaryPath = ""
	b.mu.received = append(b.mu.received, Received{JobID: id, Submission: sub, Binary: bin})
	if b.AutoFinish != "" {
		j.Result = &restapi.JobResult{ID: id, ApplicationStatus: b.AutoFinish}
		switch b.AutoFinish {
		case restapi.AppSucceeded:
			b.setStateLocked(j, restapi.JobFinished)
		case restapi.AppCanceled:
			b.setStateLocked(j, restapi.JobCanceled)
		default:
			j.Result.FailureCause = &restapi.SerializedThrowable{Class: "resttest.failure", StackTrace: "the job failed as the test asked"}
			b.setStateLocked(j, restapi.JobFailed)
		}
	}
	return id, nil
}

// ShutDownCluster implements rest.Backend: it cancels the jobs that have
// not ended and counts the request (ShutDowns).
func (b *Backend) ShutDownCluster(context.Context) error {
	if b.Err != nil {
		return b.Err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.shutDowns++
	for _, j := range b.mu.jobs {
		if !j.Overview.State.IsGloballyTerminal() {
			b.setStateLocked(j, restapi.JobCanceled)
		}
	}
	return nil
}

// ShutDowns counts the ShutDownCluster calls.
func (b *Backend) ShutDowns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.shutDowns
}

// CancelJob implements rest.Backend.
func (b *Backend) CancelJob(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	j, err := b.job(id)
	if err != nil {
		return err
	}
	if j.Overview.State.IsGloballyTerminal() {
		return fmt.Errorf("%w: job %s has already ended (%s)", restapi.ErrConflict, id, j.Overview.State)
	}
	b.setStateLocked(j, restapi.JobCanceled)
	return nil
}

// TriggerSavepoint implements rest.Backend.
func (b *Backend) TriggerSavepoint(ctx context.Context, id string, req rest.SavepointRequest) (string, error) {
	if b.Savepoint != nil {
		return b.Savepoint(ctx, id, req)
	}
	loc, err := b.savepoint(id, req)
	if err == nil && req.CancelJob {
		b.SetState(id, restapi.JobCanceled)
	}
	return loc, err
}

func (b *Backend) savepoint(id string, req rest.SavepointRequest) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.job(id); err != nil {
		return "", err
	}
	if req.TargetDirectory == "" {
		return "", fmt.Errorf("%w: no target directory given and execution.checkpointing.savepoint-dir is not set", restapi.ErrBadRequest)
	}
	b.mu.savepoints++
	loc := path.Join(req.TargetDirectory, fmt.Sprintf("savepoint-%s-%d", id[:6], b.mu.savepoints))
	if b.mu.taken == nil {
		b.mu.taken = map[string]bool{}
	}
	b.mu.taken[loc] = true
	return loc, nil
}

// DisposeSavepoint implements rest.Backend: it disposes of a savepoint the
// fake took (or of one Dispose accepts), and fails for any other path.
func (b *Backend) DisposeSavepoint(ctx context.Context, p string) error {
	if b.Dispose != nil {
		if err := b.Dispose(ctx, p); err != nil {
			return err
		}
	} else {
		b.mu.Lock()
		known := b.mu.taken[p]
		b.mu.Unlock()
		if !known {
			return fmt.Errorf("%w: no savepoint at %s", restapi.ErrNotFound, p)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.mu.taken, p)
	b.mu.disposed = append(b.mu.disposed, p)
	return nil
}

// Disposed lists the savepoints disposed of, in order.
func (b *Backend) Disposed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.mu.disposed)
}

// StopWithSavepoint implements rest.Backend.
func (b *Backend) StopWithSavepoint(ctx context.Context, id string, req rest.SavepointRequest) (string, error) {
	if b.Stop != nil {
		return b.Stop(ctx, id, req)
	}
	loc, err := b.savepoint(id, req)
	if err == nil {
		b.SetState(id, restapi.JobFinished)
	}
	return loc, err
}

// TriggerCheckpoint implements rest.Backend.
func (b *Backend) TriggerCheckpoint(ctx context.Context, id string, req rest.CheckpointRequest) (int64, error) {
	if b.Checkpoint != nil {
		return b.Checkpoint(ctx, id, req)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.job(id); err != nil {
		return 0, err
	}
	b.mu.checkpoints++
	return b.mu.checkpoints, nil
}

// TaskManagers implements rest.Backend.
func (b *Backend) TaskManagers(context.Context) ([]restapi.TaskManagerInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Err != nil {
		return nil, b.Err
	}
	return slices.Clone(b.mu.tms), nil
}

// TaskManagerProcess is what a registered TaskManager of the fake holds
// (SetTaskManagerProcess): the files of its log directory, its goroutines
// and its process's metrics.
type TaskManagerProcess struct {
	// Files maps a file name of the log directory to its content; its
	// log and standard output are "taskmanager.log" and "taskmanager.out".
	Files      map[string]string
	Goroutines []restapi.ThreadInfo
	Metrics    []rest.ProcessMetric
	// ModTime is every file's modification time.
	ModTime time.Time
}

// SetTaskManagerProcess sets what the TaskManager id holds; it answers only
// while id is among SetTaskManagers'.
func (b *Backend) SetTaskManagerProcess(id string, p TaskManagerProcess) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.processes == nil {
		b.mu.processes = map[string]TaskManagerProcess{}
	}
	b.mu.processes[id] = p
}

// process is the registered TaskManager id's.
func (b *Backend) process(id string) (TaskManagerProcess, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Err != nil {
		return TaskManagerProcess{}, b.Err
	}
	if !slices.ContainsFunc(b.mu.tms, func(tm restapi.TaskManagerInfo) bool { return tm.ID == id }) {
		return TaskManagerProcess{}, fmt.Errorf("%w: TaskManager %s is not registered (see GET /taskmanagers)", restapi.ErrNotFound, id)
	}
	return b.mu.processes[id], nil
}

// TaskManagerLogs implements rest.Backend.
func (b *Backend) TaskManagerLogs(_ context.Context, id string) ([]restapi.LogInfo, error) {
	p, err := b.process(id)
	if err != nil {
		return nil, err
	}
	out := []restapi.LogInfo{}
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		out = append(out, restapi.LogInfo{Name: name, Size: int64(len(p.Files[name])), MTime: p.ModTime.UnixMilli()})
	}
	return out, nil
}

// TaskManagerLogFile implements rest.Backend.
func (b *Backend) TaskManagerLogFile(_ context.Context, id string, f rest.TaskManagerFile) (*rest.LogFile, error) {
	p, err := b.process(id)
	if err != nil {
		return nil, err
	}
	name := f.Name
	switch f.Kind {
	case rest.TaskManagerMainLog:
		name = "taskmanager.log"
	case rest.TaskManagerStdout:
		name = "taskmanager.out"
	}
	content, ok := p.Files[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not in the log directory of TaskManager %s", restapi.ErrNotFound, name, id)
	}
	return &rest.LogFile{Name: name, Size: int64(len(content)), ModTime: p.ModTime, Body: io.NopCloser(strings.NewReader(content))}, nil
}

// TaskManagerThreadDump implements rest.Backend.
func (b *Backend) TaskManagerThreadDump(_ context.Context, id string) ([]restapi.ThreadInfo, error) {
	p, err := b.process(id)
	return slices.Clone(p.Goroutines), err
}

// TaskManagerMetrics implements rest.Backend.
func (b *Backend) TaskManagerMetrics(_ context.Context, id string) ([]rest.ProcessMetric, error) {
	p, err := b.process(id)
	return slices.Clone(p.Metrics), err
}

// SampleVertex implements rest.Backend with the Sample hook.
func (b *Backend) SampleVertex(ctx context.Context, jobID, vertexID string, req rest.SampleRequest) ([]flamegraph.Stack, error) {
	if _, err := b.Job(ctx, jobID); err != nil {
		return nil, err
	}
	if b.Sample != nil {
		return b.Sample(ctx, jobID, vertexID, req)
	}
	return nil, nil
}

// Metrics implements rest.Backend.
func (b *Backend) Metrics(context.Context) (*rest.MetricsSnapshot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Err != nil {
		return nil, b.Err
	}
	if b.mu.metrics == nil {
		return &rest.MetricsSnapshot{}, nil
	}
	m := *b.mu.metrics
	return &m, nil
}

// YARNApplication implements rest.Backend: Backend.YARN, or not on YARN.
func (b *Backend) YARNApplication(context.Context) (*restapi.YARNApplication, error) {
	if b.Err != nil {
		return nil, b.Err
	}
	if b.YARN == nil {
		return &restapi.YARNApplication{}, nil
	}
	app := *b.YARN
	return &app, nil
}
