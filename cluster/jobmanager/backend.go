package jobmanager

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/security/kerberos"
)

// TaskManagerLister lists the registered TaskManagers for the REST API
// (the ResourceManager).
type TaskManagerLister interface {
	TaskManagerInfos(ctx context.Context) ([]restapi.TaskManagerInfo, error)
	// TaskManagerLogins returns the Kerberos logins the TaskManagers
	// reported in their latest heartbeats (ComponentTaskManager), sorted
	// by TaskManager id.
	TaskManagerLogins(ctx context.Context) ([]rest.KerberosLoginMetrics, error)
}

// Backend serves the REST API from the Dispatcher.
type Backend struct {
	D   *Dispatcher
	TMs TaskManagerLister
	// Host is the JobManager's host, the host label of its own login.
	Host string
	// Kerberos and DelegationTokens report the JobManager process's own
	// credentials at GET /metrics (Options.Kerberos and
	// Options.DelegationTokens); nil when it has none.
	Kerberos         func() kerberos.Status
	DelegationTokens func() DelegationTokenStatus
	// ShutDown asks the JobManager process to shut down (DELETE
	// /cluster); nil when it cannot be asked.
	ShutDown func()
	// YARN reports the YARN application (Options.YARN); nil outside YARN.
	YARN func() restapi.YARNApplication
}

// YARNApplication implements rest.Backend.
func (b Backend) YARNApplication(context.Context) (*restapi.YARNApplication, error) {
	if b.YARN == nil {
		return &restapi.YARNApplication{}, nil
	}
	app := b.YARN()
	app.Enabled = true
	return &app, nil
}

// DelegationTokenStatus is the state of the HDFS delegation tokens a
// process obtains for its containers (on YARN, the ApplicationMaster's
// delegation token manager).
type DelegationTokenStatus struct {
	// Expiry is the earliest expiry of the current tokens, Unix seconds; 0
	// before the first tokens are obtained.
	Expiry int64
	// Obtained and Failures count the successful and failed rounds of
	// obtaining tokens.
	Obtained, Failures int64
	// TaskManagers maps each running TaskManager (resource id) to the
	// earliest expiry of the tokens it was launched with, Unix seconds;
	// TaskManagers launched with tokens of unknown expiry are left out.
	TaskManagers map[string]int64
}

// loginMetrics is a process's login for GET /metrics.
func loginMetrics(component, tmID, host, jobID string, s kerberos.Status) rest.KerberosLoginMetrics {
	return rest.KerberosLoginMetrics{Component: component, TaskManagerID: tmID, Host: host, JobID: jobID, Principal: s.Principal,
		TGTExpiry: s.TGTExpiry, TGTRenewTill: s.TGTRenewTill, Relogins: s.Relogins, ReloginFailures: s.ReloginFailures}
}

var _ rest.Backend = Backend{}

func restErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoJob):
		return fmt.Errorf("%w: %w", restapi.ErrNotFound, err)
	case errors.Is(err, ErrJobEnded):
		return fmt.Errorf("%w: %w", restapi.ErrConflict, err)
	case errors.Is(err, ErrBadSubmission):
		return fmt.Errorf("%w: %w", restapi.ErrBadRequest, err)
	}
	return err
}

func jobState(s jobmaster.Status) restapi.JobState { return restapi.JobState(s) }

func taskState(s jobmaster.Status) restapi.ExecutionState {
	switch s {
	case jobmaster.StatusRunning:
		return restapi.TaskRunning
	case jobmaster.StatusFinished:
		return restapi.TaskFinished
	case jobmaster.StatusCanceled:
		return restapi.TaskCanceled
	case jobmaster.StatusFailed:
		return restapi.TaskFailed
	case jobmaster.StatusRestarting:
		return restapi.TaskCanceling
	}
	return restapi.TaskCreated
}

func endTime(in Info) int64 {
	if in.EndMillis == 0 {
		return -1
	}
	return in.EndMillis
}

// duration is how long the job has run, until now (epoch ms) if it has
// not ended.
func duration(in Info, now int64) int64 {
	end := in.EndMillis
	if end == 0 {
		end = now
	}
	return end - in.StartMillis
}

func lastModification(in Info) int64 {
	var m int64
	for _, t := range in.Timestamps {
		m = max(m, t)
	}
	return m
}

// vertexTasks describes the subtasks of chain c as Flink's GET
// /jobs/:jobid does a vertex's: their states counted (Tasks), the vertex's
// state (Flink's aggregate of its subtasks'), when the first was deployed
// and the last ended (-1: not yet) and the duration in between (until now
// while some have not ended). The other members are left to the caller.
//
// The states are those the JobMaster follows for the latest attempt's
// subtasks (scheduled, deploying, running, then as their workers reported
// their ends). Before the first attempt is deployed, and for a job that
// ended before it was, the JobMaster has none: the job's status then stands
// for every subtask's, and the vertex's times are the job's.
func vertexTasks(in Info, c *graph.Chain, now int64) restapi.Vertex {
	var states []TaskState
	for _, t := range in.Tasks {
		if t.Task.Vertex == c.ID {
			states = append(states, t)
		}
	}
	var v restapi.Vertex
	if len(states) == 0 {
		v.Status = taskState(in.Status)
		v.Tasks.Add(v.Status, c.Parallelism)
		v.StartTime, v.EndTime = in.StartMillis, endTime(in)
		if v.EndTime < 0 {
			v.Duration = now - in.StartMillis
		} else {
			v.Duration = v.EndTime - in.StartMillis
		}
		return v
	}
	start, end := int64(math.MaxInt64), int64(0)
	allEnded := true
	for _, t := range states {
		v.Tasks.Add(t.State, 1)
		if t.Deploying > 0 {
			start = min(start, t.Deploying)
		}
		allEnded = allEnded && terminal(t.State)
		end = max(end, t.Since)
	}
	v.Status = vertexState(v.Tasks, len(states))
	switch {
	case start == math.MaxInt64:
		v.StartTime, v.EndTime, v.Duration = -1, -1, -1
	case allEnded:
		v.StartTime, v.EndTime, v.Duration = start, end, end-start
	default:
		v.StartTime, v.EndTime, v.Duration = start, -1, now-start
	}
	return v
}

// vertexState is the state of a vertex whose subtasks' states are counted
// in c (Flink's ExecutionJobVertex.getAggregateJobVertexState): a failure
// shows first, then cancellation; running while any subtask runs or some
// have finished; scheduled and deploying subtasks show as CREATED.
func vertexState(c restapi.StateCounts, parallelism int) restapi.ExecutionState {
	switch {
	case c.Failed > 0:
		return restapi.TaskFailed
	case c.Canceling > 0:
		return restapi.TaskCanceling
	case c.Canceled > 0:
		return restapi.TaskCanceled
	case c.Initializing > 0:
		return restapi.TaskInitializing
	case c.Running > 0:
		return restapi.TaskRunning
	case c.Finished > 0 && c.Finished == parallelism:
		return restapi.TaskFinished
	case c.Finished > 0:
		return restapi.TaskRunning
	}
	return restapi.TaskCreated
}

func overview(in Info, now int64) restapi.JobOverview {
	var sc restapi.StateCounts
	for _, c := range in.Plan.Chains {
		sc.Merge(vertexTasks(in, c, now).Tasks)
	}
	return restapi.JobOverview{ID: in.ID, Name: in.Name, State: jobState(in.Status), JobType: jobType(in), StartTime: in.StartMillis,
		EndTime: endTime(in), Duration: duration(in, now), LastModification: lastModification(in), Tasks: sc.Overview()}
}

// Jobs implements rest.Backend.
func (b Backend) Jobs(ctx context.Context) ([]restapi.JobOverview, error) {
	var out []restapi.JobOverview
	for _, in := range b.D.Jobs() {
		out = append(out, overview(in, b.D.now()))
	}
	return out, nil
}

func vertexID(jobID string) func(c *graph.Chain) string {
	return func(c *graph.Chain) string { return restapi.DeriveID(jobID, strconv.Itoa(c.ID)) }
}

func jobType(in Info) string {
	if conf.Get(conf.FromMap(in.Graph.Config, conf.Source{}), conf.ExecutionRuntimeMode) == conf.RuntimeModeBatch {
		return "BATCH"
	}
	return "STREAMING"
}

// Job implements rest.Backend.
func (b Backend) Job(ctx context.Context, jobID string) (*restapi.JobDetails, error) {
	in, err := b.D.Job(jobID)
	if err != nil {
		return nil, restErr(err)
	}
	now := b.D.now()
	d := &restapi.JobDetails{ID: in.ID, Name: in.Name, IsStoppable: false, State: jobState(in.Status), JobType: jobType(in),
		StartTime: in.StartMillis, EndTime: endTime(in), Duration: duration(in, now), MaxParallelism: -1,
		Timestamps: map[restapi.JobState]int64{}, Plan: rest.NewJobPlan(in.ID, jobType(in), in.Plan, vertexID(in.ID))}
	for _, s := range []restapi.JobState{restapi.JobInitializing, restapi.JobCreated, restapi.JobRunning, restapi.JobFailing, restapi.JobFailed,
		restapi.JobCancelling, restapi.JobCanceled, restapi.JobFinished, restapi.JobRestarting, restapi.JobSuspended, restapi.JobReconciling} {
		d.Timestamps[s] = in.Timestamps[jobmaster.Status(s)]
	}
	byVertex := map[string][]jobmaster.SubtaskMetrics{}
	for _, m := range in.Subtasks {
		byVertex[m.Vertex] = append(byVertex[m.Vertex], m)
	}
	maxPar := -1
	for _, c := range in.Plan.Chains {
		mp := in.Plan.Graph.Node(c.Nodes[0]).EffectiveMaxParallelism()
		if maxPar == -1 {
			maxPar = mp
		} else if maxPar != mp {
			maxPar = -2
		}
		v := vertexTasks(in, c, now)
		v.ID, v.Name, v.MaxParallelism, v.Parallelism = vertexID(in.ID)(c), c.Name, mp, c.Parallelism
		d.StatusCounts.Merge(v.Tasks)
		ms := byVertex[c.Name]
		v.Subtasks = subtaskDetails(in, c, ms, now)
		complete := len(ms) == c.Parallelism
		v.Metrics = restapi.IOMetrics{ReadRecordsComplete: complete, WriteRecordsComplete: complete,
			ReadBytesComplete: complete, WriteBytesComplete: complete}
		for _, m := range ms {
			v.Metrics.ReadRecords += m.RecordsIn.Load()
			v.Metrics.WriteRecords += m.RecordsOut.Load()
			v.Metrics.ReadBytes += m.BytesIn.Load()
			v.Metrics.WriteBytes += m.BytesOut.Load()
			v.Metrics.AccumulatedBusyTime = math.Max(v.Metrics.AccumulatedBusyTime, float64(m.BusyNanos.Load()/1e6))
			v.Metrics.AccumulatedBackpressuredTime = max(v.Metrics.AccumulatedBackpressuredTime, m.BackpressuredNanos.Load()/1e6)
			v.Metrics.AccumulatedIdleTime = max(v.Metrics.AccumulatedIdleTime, m.IdleNanos.Load()/1e6)
		}
		d.Vertices = append(d.Vertices, v)
	}
	if maxPar >= 0 {
		d.MaxParallelism = int64(maxPar)
	}
	d.IsStoppable = in.Status == jobmaster.StatusRunning && in.CheckpointInterval >= 0 && in.Checkpointing
	d.Config = maps.Clone(in.Graph.Config)
	cfg := conf.FromMap(in.Graph.Config, conf.Source{})
	restart := "Cluster level default restart strategy" // Flink's words for a job that sets none
	if v, ok := in.Graph.Config[conf.RestartStrategyType.Key()]; ok && v != "" {
		restart = v
	}
	d.ExecutionConfig = &restapi.ExecutionConfigInfo{RestartStrategy: restart, Parallelism: conf.Get(cfg, conf.ParallelismDefault),
		UserConfig: map[string]string{}}
	return d, nil
}

// subtaskDetails describes the subtasks of chain c of the latest attempt
// (GET /jobs/:jobid/vertices/:vertexid): their states as the JobMaster
// follows them, with the TaskManager each was deployed to, and the metrics
// their workers reported (ms). A subtask with neither is not listed.
func subtaskDetails(in Info, c *graph.Chain, ms []jobmaster.SubtaskMetrics, now int64) []restapi.SubtaskDetails {
	bySubtask := map[int]jobmaster.SubtaskMetrics{}
	for _, m := range ms {
		bySubtask[m.Subtask] = m
	}
	var out []restapi.SubtaskDetails
	seen := map[int]bool{}
	for _, t := range in.Tasks {
		if t.Task.Vertex != c.ID {
			continue
		}
		seen[t.Task.Subtask] = true
		sd := restapi.SubtaskDetails{Subtask: t.Task.Subtask, Status: t.State, Attempt: in.Restarts, StartTime: -1, EndTime: -1, Duration: -1,
			TaskManagerID: t.TaskManagerID, Endpoint: t.Endpoint, StatusDuration: map[restapi.ExecutionState]int64{}, Watermark: math.MinInt64, OutputWatermark: math.MinInt64}
		// When the subtask entered its state, and when it was deployed:
		// the times the JobMaster keeps.
		sd.StateTimestamps = map[restapi.ExecutionState]int64{t.State: t.Since}
		if t.Deploying > 0 {
			sd.StateTimestamps[restapi.TaskDeploying] = t.Deploying
			sd.StartTime = t.Deploying
			sd.Duration = now - t.Deploying
			if terminal(t.State) {
				sd.EndTime, sd.Duration = t.Since, t.Since-t.Deploying
			}
		}
		switch {
		case t.State == restapi.TaskRunning:
			sd.StatusDuration[restapi.TaskRunning] = now - t.Since
			if t.Deploying > 0 {
				sd.StatusDuration[restapi.TaskDeploying] = t.Since - t.Deploying
			}
		case t.State == restapi.TaskDeploying && t.Deploying > 0:
			sd.StatusDuration[restapi.TaskDeploying] = now - t.Deploying
		}
		if m, ok := bySubtask[t.Task.Subtask]; ok {
			sd.Metrics, sd.Watermark, sd.OutputWatermark, sd.Rates = subtaskIO(m), m.Watermark.Load(), m.OutputWatermark.Load(), subtaskRates(m)
			sd.Gauges = m.Gauges.Snapshot()
		}
		out = append(out, sd)
	}
	for _, m := range ms { // reported by a worker, not (or no longer) followed
		if seen[m.Subtask] {
			continue
		}
		out = append(out, restapi.SubtaskDetails{Subtask: m.Subtask, Status: taskState(in.Status), Attempt: in.Restarts,
			StartTime: -1, EndTime: -1, Duration: -1, StatusDuration: map[restapi.ExecutionState]int64{},
			Metrics: subtaskIO(m), Watermark: m.Watermark.Load(), OutputWatermark: m.OutputWatermark.Load(), Rates: subtaskRates(m),
			Gauges: m.Gauges.Snapshot()})
	}
	slices.SortFunc(out, func(a, b restapi.SubtaskDetails) int { return a.Subtask - b.Subtask })
	return out
}

// subtaskRates are one subtask's per-second figures; nil until the
// JobMaster has sampled its counters twice.
func subtaskRates(m jobmaster.SubtaskMetrics) *restapi.SubtaskRates {
	r, ok := m.Rates.PerSecond()
	if !ok {
		return nil
	}
	return &restapi.SubtaskRates{RecordsInPerSecond: r.RecordsIn, RecordsOutPerSecond: r.RecordsOut,
		BytesInPerSecond: r.BytesIn, BytesOutPerSecond: r.BytesOut, BusyTimeMsPerSecond: r.BusyTimeMs,
		BackPressuredTimeMsPerSecond: r.BackPressuredTimeMs, IdleTimeMsPerSecond: r.IdleTimeMs}
}

// subtaskIO is one subtask's counters in Flink's form.
func subtaskIO(m jobmaster.SubtaskMetrics) restapi.IOMetrics {
	return restapi.IOMetrics{ReadRecords: m.RecordsIn.Load(), WriteRecords: m.RecordsOut.Load(), ReadBytes: m.BytesIn.Load(), WriteBytes: m.BytesOut.Load(),
		ReadRecordsComplete: true, WriteRecordsComplete: true, ReadBytesComplete: true, WriteBytesComplete: true,
		AccumulatedBusyTime: float64(m.BusyNanos.Load() / 1e6), AccumulatedBackpressuredTime: m.BackpressuredNanos.Load() / 1e6,
		AccumulatedIdleTime: m.IdleNanos.Load() / 1e6}
}

// JobExceptions implements rest.Backend.
func (b Backend) JobExceptions(ctx context.Context, jobID string) ([]restapi.RootExceptionInfo, error) {
	in, err := b.D.Job(jobID)
	if err != nil {
		return nil, restErr(err)
	}
	var out []restapi.RootExceptionInfo
	for i := len(in.Exceptions) - 1; i >= 0; i-- {
		e := in.Exceptions[i]
		r := restapi.RootExceptionInfo{ExceptionInfo: exceptionInfo(e), ConcurrentExceptions: []restapi.ExceptionInfo{}}
		for _, c := range e.Concurrent {
			r.ConcurrentExceptions = append(r.ConcurrentExceptions, exceptionInfo(c))
		}
		out = append(out, r)
	}
	return out, nil
}

// exceptionInfo is a failure in Flink's form: the error's type where Flink
// names the exception's class, and the failed subtask with its
// TaskManager.
func exceptionInfo(e JobException) restapi.ExceptionInfo {
	return restapi.ExceptionInfo{ExceptionName: e.Class, Stacktrace: e.Message, Timestamp: e.Millis, TaskName: e.TaskName,
		Endpoint: e.Endpoint, TaskManagerID: e.TaskManagerID, FailureLabels: map[string]string{}}
}

func checkpointStats(c jobmaster.CheckpointStats) restapi.CheckpointStatistics {
	s := restapi.CheckpointStatistics{ID: c.ID, Status: restapi.CheckpointCompleted, IsSavepoint: c.Kind.IsSavepoint(),
		TriggerTimestamp: c.TriggerMillis, LatestAckTimestamp: c.EndMillis, EndToEndDuration: c.EndMillis - c.TriggerMillis,
		CheckpointType: restapi.TypeCheckpoint, ExternalPath: restapi.ExternalPath(c.Path), CheckpointedSize: c.Bytes, StateSize: c.Bytes}
	switch {
	case c.Kind.IsStop():
		s.CheckpointType = restapi.TypeSyncSavepoint
	case c.Kind.IsSavepoint():
		s.CheckpointType = restapi.TypeSavepoint
	}
	if s.IsSavepoint {
		s.SavepointFormat = "CANONICAL"
	}
	if c.Err != nil {
		s.Status, s.FailureTimestamp, s.FailureMessage = restapi.CheckpointFailed, c.EndMillis, c.Err.Error()
		s.EndToEndDuration = 0
	}
	return s
}

// JobCheckpoints implements rest.Backend.
func (b Backend) JobCheckpoints(ctx context.Context, jobID string) (*restapi.CheckpointingStatistics, error) {
	in, err := b.D.Job(jobID)
	if err != nil {
		return nil, restErr(err)
	}
	if !in.Checkpointing {
		return nil, fmt.Errorf("%w: job %s does not take checkpoints (set execution.checkpointing.interval)", restapi.ErrNotFound, jobID)
	}
	// The history, newest first as in Flink: the checkpoints in progress
	// (newer than any that ended), then the ended ones.
	var hist []restapi.CheckpointStatistics
	for i := len(in.InProgress) - 1; i >= 0; i-- {
		hist = append(hist, withTasks(in, inProgressStats(in.InProgress[i])))
	}
	for i := len(in.History) - 1; i >= 0; i-- {
		hist = append(hist, withTasks(in, checkpointStats(in.History[i])))
	}
	// Flink's total counts every checkpoint triggered, those in progress
	// too; restored counts the restores (every restart from a checkpoint).
	counts := restapi.CheckpointCounts{Completed: int64(in.Checkpoints.Completed), Failed: int64(in.Checkpoints.Failed),
		InProgress: len(in.InProgress), Restored: int64(in.Restores),
		Total: int64(in.Checkpoints.Completed + in.Checkpoints.Failed + len(in.InProgress))}
	var restored *restapi.RestoredCheckpoint
	if r := in.Restored; r != nil {
		restored = &restapi.RestoredCheckpoint{ID: r.ID, RestoreTimestamp: r.Millis, IsSavepoint: r.Kind.IsSavepoint(), ExternalPath: restapi.ExternalPath(r.Path)}
	}
	return rest.NewCheckpointingStatistics(counts, hist, restored), nil
}

// withTasks sets a checkpoint's subtask counts and its progress at each
// vertex ("tasks"). A completed checkpoint was acknowledged by every
// subtask of the job; of one in progress or failed the JobMaster keeps no
// count of acknowledgements, so they are 0 there. The per-vertex sizes are
// not kept either (0); the times are the checkpoint's.
func withTasks(in Info, s restapi.CheckpointStatistics) restapi.CheckpointStatistics {
	s.Tasks = map[string]restapi.TaskCheckpointStatistics{}
	s.NumSubtasks, s.NumAcknowledgedSubtasks = 0, 0
	for _, c := range in.Plan.Chains {
		ts := restapi.TaskCheckpointStatistics{ID: s.ID, Status: s.Status, NumSubtasks: c.Parallelism}
		if s.Status == restapi.CheckpointCompleted {
			ts.NumAcknowledgedSubtasks = c.Parallelism
			ts.LatestAckTimestamp, ts.EndToEndDuration = s.LatestAckTimestamp, s.EndToEndDuration
		}
		s.NumSubtasks += ts.NumSubtasks
		s.NumAcknowledgedSubtasks += ts.NumAcknowledgedSubtasks
		s.Tasks[vertexID(in.ID)(c)] = ts
	}
	return s
}

// inProgressStats is a checkpoint or savepoint in progress.
func inProgressStats(c jobmaster.CheckpointStats) restapi.CheckpointStatistics {
	s := checkpointStats(c)
	s.Status, s.LatestAckTimestamp, s.EndToEndDuration = restapi.CheckpointInProgress, 0, 0
	return s
}

// JobResult implements rest.Backend.
func (b Backend) JobResult(ctx context.Context, jobID string) (*restapi.JobResult, error) {
	in, err := b.D.Job(jobID)
	if err != nil {
		return nil, restErr(err)
	}
	if !in.Status.Terminal() {
		return nil, nil
	}
	r := &restapi.JobResult{ID: in.ID, Name: in.Name, NetRuntime: duration(in, b.D.now()), StartTime: in.StartMillis, EndTime: in.EndMillis,
		AccumulatorResults: restapi.Accumulators{"restarts": int64(in.Restarts), "checkpoints": int64(in.Checkpoints.Completed)}}
	if in.StopSavepoint != "" {
		r.AccumulatorResults["savepoint"] = in.StopSavepoint
	}
	switch in.Status {
	case jobmaster.StatusFinished:
		r.ApplicationStatus = restapi.AppSucceeded
	case jobmaster.StatusCanceled:
		r.ApplicationStatus = restapi.AppCanceled
	default:
		r.ApplicationStatus = restapi.AppFailed
		r.FailureCause = restapi.ThrowableOf(in.Err)
	}
	return r, nil
}

// SubmitJob implements rest.Backend.
func (b Backend) SubmitJob(ctx context.Context, s *rest.Submission) (string, error) {
	dyn := map[string]string{}
	for k, v := range s.Configuration {
		dyn[k] = v
	}
	if s.SavepointPath != "" {
		dyn[conf.StateRecoveryPath.Key()] = s.SavepointPath
	}
	if s.AllowNonRestoredState {
		dyn[conf.StateRecoveryIgnoreUnclaimedState.Key()] = "true"
	}
	id, err := b.D.Submit(Submission{GraphJSON: s.GraphJSON, BinaryPath: s.BinaryPath, Args: s.Args, Dynamic: dyn})
	return id, restErr(err)
}

// ShutDownCluster implements rest.Backend.
func (b Backend) ShutDownCluster(context.Context) error {
	if b.ShutDown == nil {
		return fmt.Errorf("%w: this JobManager cannot be shut down over REST", restapi.ErrBadRequest)
	}
	b.ShutDown()
	return nil
}

// CancelJob implements rest.Backend.
func (b Backend) CancelJob(ctx context.Context, jobID string) error {
	return restErr(b.D.Cancel(jobID))
}

// TriggerSavepoint implements rest.Backend.
func (b Backend) TriggerSavepoint(ctx context.Context, jobID string, req rest.SavepointRequest) (string, error) {
	if err := canonical(req.Format); err != nil {
		return "", err
	}
	if req.CancelJob {
		p, err := b.D.CancelWithSavepoint(ctx, jobID, req.TargetDirectory)
		return p, restErr(err)
	}
	p, err := b.D.Savepoint(ctx, jobID, req.TargetDirectory, false, false)
	return p, restErr(err)
}

// StopWithSavepoint implements rest.Backend.
func (b Backend) StopWithSavepoint(ctx context.Context, jobID string, req rest.SavepointRequest) (string, error) {
	if err := canonical(req.Format); err != nil {
		return "", err
	}
	p, err := b.D.Savepoint(ctx, jobID, req.TargetDirectory, true, req.Drain)
	return p, restErr(err)
}

// DisposeSavepoint implements rest.Backend: it deletes the savepoint
// through the cluster's file systems (those it writes checkpoints and
// savepoints with: file://, hdfs:// on YARN), refusing a path that holds
// no savepoint.
func (b Backend) DisposeSavepoint(ctx context.Context, path string) error {
	fsys, p, err := b.D.cfg.FileSystems.For(path)
	if err != nil {
		return fmt.Errorf("%w: disposing of savepoint %q: %w", restapi.ErrBadRequest, path, err)
	}
	err = storage.DisposeSavepoint(fsys, p)
	switch {
	case err == nil:
		b.D.log.Info("savepoint disposed of", "path", path)
		return nil
	case errors.Is(err, storage.ErrNotSavepoint), errors.Is(err, storage.ErrBadName):
		return fmt.Errorf("%w: %w; nothing was deleted: only savepoints are disposed of", restapi.ErrBadRequest, err)
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%w: %w", restapi.ErrNotFound, err)
	}
	return err
}

// canonical refuses a savepoint format other than CANONICAL, the only one
// the JobMasters write.
func canonical(format string) error {
	if format != "" && format != restapi.FormatCanonical {
		return fmt.Errorf("%w: savepoint format %q: only %s savepoints are written", restapi.ErrBadRequest, format, restapi.FormatCanonical)
	}
	return nil
}

// TriggerCheckpoint implements rest.Backend: a CONFIGURED checkpoint is
// one as the job takes them (incremental if so configured), a FULL one
// shares no files with earlier checkpoints.
func (b Backend) TriggerCheckpoint(ctx context.Context, jobID string, req rest.CheckpointRequest) (int64, error) {
	kind, err := checkpointKind(req.Type)
	if err != nil {
		return 0, err
	}
	id, err := b.D.Checkpoint(ctx, jobID, kind)
	return id, restErr(err)
}

// checkpointKind is the kind of checkpoint of a REST checkpoint type.
func checkpointKind(typ string) (checkpoint.Kind, error) {
	switch typ {
	case "", restapi.CheckpointConfigured:
		return checkpoint.Checkpoint, nil
	case restapi.CheckpointFull:
		return checkpoint.FullCheckpoint, nil
	}
	return 0, fmt.Errorf("%w: checkpoint type %q: use %s or %s", restapi.ErrBadRequest, typ, restapi.CheckpointConfigured, restapi.CheckpointFull)
}

// TaskManagers implements rest.Backend.
func (b Backend) TaskManagers(ctx context.Context) ([]restapi.TaskManagerInfo, error) {
	if b.TMs == nil {
		return nil, nil
	}
	return b.TMs.TaskManagerInfos(ctx)
}

// Metrics implements rest.Backend: the jobs' metrics, and the Kerberos
// logins of the JobManager, the TaskManagers and the jobs' workers with
// the JobManager's delegation tokens.
func (b Backend) Metrics(ctx context.Context) (*rest.MetricsSnapshot, error) {
	s := &rest.MetricsSnapshot{}
	if b.Kerberos != nil {
		s.KerberosLogins = append(s.KerberosLogins, loginMetrics(rest.ComponentJobManager, "", b.Host, "", b.Kerberos()))
	}
	if b.DelegationTokens != nil {
		t := b.DelegationTokens()
		s.DelegationTokens = &rest.DelegationTokenMetrics{Component: rest.ComponentJobManager, Expiry: t.Expiry, Obtained: t.Obtained, Failures: t.Failures}
		for _, id := range slices.Sorted(maps.Keys(t.TaskManagers)) {
			s.TaskManagerTokens = append(s.TaskManagerTokens, rest.DelegationTokenMetrics{
				Component: rest.ComponentTaskManager, TaskManagerID: id, Expiry: t.TaskManagers[id]})
		}
	}
	if b.TMs != nil {
		tms, err := b.TMs.TaskManagerLogins(ctx)
		if err != nil {
			return nil, err
		}
		s.KerberosLogins = append(s.KerberosLogins, tms...)
	}
	for _, in := range b.D.Jobs() {
		for _, w := range in.WorkerLogins {
			s.KerberosLogins = append(s.KerberosLogins, loginMetrics(rest.ComponentWorker, w.TaskManagerID, w.Host, in.ID, w.Status))
		}
		jm := rest.JobMetrics{JobID: in.ID, JobName: in.Name, Restarts: int64(in.Restarts)}
		jm.Checkpoints = rest.CheckpointMetrics{Completed: int64(in.Checkpoints.Completed), Failed: int64(in.Checkpoints.Failed), LastRestoreTimestamp: -1}
		if c := in.LatestCheckpoint; c != nil {
			jm.Checkpoints.LastDuration = c.EndMillis - c.TriggerMillis
			jm.Checkpoints.LastSize, jm.Checkpoints.LastFullSize = c.Bytes, c.Bytes
		}
		ids := map[string]string{}
		for _, c := range in.Plan.Chains {
			ids[c.Name] = vertexID(in.ID)(c)
		}
		for _, m := range in.Subtasks {
			jm.Subtasks = append(jm.Subtasks, rest.SubtaskMetrics{VertexID: ids[m.Vertex], VertexName: m.Vertex, Subtask: m.Subtask,
				Attempt: in.Restarts, RecordsIn: m.RecordsIn.Load(), RecordsOut: m.RecordsOut.Load(),
				BytesIn: m.BytesIn.Load(), BytesOut: m.BytesOut.Load(),
				BusyMillis: m.BusyNanos.Load() / 1e6, BackpressuredMillis: m.BackpressuredNanos.Load() / 1e6, IdleMillis: m.IdleNanos.Load() / 1e6,
				Watermark: m.Watermark.Load()})
		}
		s.Jobs = append(s.Jobs, jm)
	}
	slices.SortFunc(s.Jobs, func(a, b rest.JobMetrics) int {
		if a.JobID < b.JobID {
			return -1
		}
		return 1
	})
	return s, nil
}
