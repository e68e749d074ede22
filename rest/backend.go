package rest

import (
	"context"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/flamegraph"
	"github.com/sluice/sluice/internal/runtime/graph"
)

// Backend is what the REST server serves: the JobManager's Dispatcher
// implements it. Methods are called concurrently from request goroutines;
// ctx ends when the client goes away or the server shuts down.
//
// Job IDs are 32 hexadecimal characters, as in Flink (NewID makes them):
// the server reads them in either case and passes them on in lower case,
// answers 400 to any other job ID before calling the Backend, and 404 for
// a job the Backend reports as ErrNotFound.
type Backend interface {
	// Jobs lists every job the cluster knows, running and ended. It serves
	// GET /jobs, /jobs/overview and the job counts of /overview, and the
	// server checks with it that a job exists (and has not ended) before
	// triggering a savepoint, stop or checkpoint.
	Jobs(ctx context.Context) ([]restapi.JobOverview, error)

	// Job returns a job's details (GET /jobs/:jobid and /jobs/:jobid/plan).
	// The server sets Now.
	Job(ctx context.Context, jobID string) (*restapi.JobDetails, error)

	// JobExceptions returns the job's failure history, newest first
	// (GET /jobs/:jobid/exceptions); the server applies maxExceptions and
	// derives Flink's deprecated members from the newest entry.
	JobExceptions(ctx context.Context, jobID string) ([]restapi.RootExceptionInfo, error)

	// JobCheckpoints returns the job's checkpoint statistics (GET
	// /jobs/:jobid/checkpoints), built with NewCheckpointingStatistics. A
	// job without checkpointing answers an error wrapping ErrNotFound that
	// says so.
	JobCheckpoints(ctx context.Context, jobID string) (*restapi.CheckpointingStatistics, error)

	// JobResult returns how the job ended, or nil while it has not ended
	// for good (GET /jobs/:jobid/execution-result).
	JobResult(ctx context.Context, jobID string) (*restapi.JobResult, error)

	// SubmitJob accepts a job and returns its ID (POST /jobs). It returns
	// once the job is accepted, not when it runs. s.BinaryPath is a file
	// the server received and deletes after SubmitJob returns: keep a copy
	// (e.g. in the blob store). A job the cluster cannot run (bad
	// configuration, unusable graph) is an error wrapping ErrBadRequest.
	SubmitJob(ctx context.Context, s *Submission) (jobID string, err error)

	// CancelJob starts cancelling the job and returns (PATCH
	// /jobs/:jobid?mode=cancel). A job that has ended is ErrConflict.
	CancelJob(ctx context.Context, jobID string) error

	// TriggerSavepoint takes a savepoint and returns its location, blocking
	// until it is complete or fails (POST /jobs/:jobid/savepoints). The
	// server calls it on a goroutine of its own and serves the outcome to
	// status polls; ctx ends when the server shuts down.
	TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (location string, err error)

	// StopWithSavepoint takes a savepoint, stops the job (after ending
	// event time if req.Drain) and returns the savepoint's location,
	// blocking like TriggerSavepoint (POST /jobs/:jobid/stop).
	StopWithSavepoint(ctx context.Context, jobID string, req SavepointRequest) (location string, err error)

	// TriggerCheckpoint takes a checkpoint and returns its ID, blocking
	// like TriggerSavepoint (POST /jobs/:jobid/checkpoints).
	TriggerCheckpoint(ctx context.Context, jobID string, req CheckpointRequest) (checkpointID int64, err error)

	// DisposeSavepoint deletes the savepoint at path (a directory or its
	// _metadata file, a URI of a file system the cluster knows) and
	// everything in it, blocking like TriggerSavepoint (POST
	// /savepoint-disposal). A path that holds no savepoint is refused and
	// nothing is deleted.
	DisposeSavepoint(ctx context.Context, path string) error

	// TaskManagers lists the registered TaskManagers (GET /taskmanagers and
	// the TaskManager and slot counts of /overview and /metrics).
	TaskManagers(ctx context.Context) ([]restapi.TaskManagerInfo, error)

	// TaskManagerLogs lists the files of a TaskManager's log directory
	// (GET /taskmanagers/:id/logs). Every TaskManager method answers an
	// error wrapping ErrNotFound for a TaskManager that is not registered,
	// and ErrUnavailable for one that cannot be reached.
	TaskManagerLogs(ctx context.Context, tmID string) ([]restapi.LogInfo, error)

	// TaskManagerLogFile opens a file of a TaskManager's log directory
	// (GET /taskmanagers/:id/log, stdout and logs/:name); the server closes
	// its Body. A file that is not there wraps ErrNotFound; the server
	// has checked that a named file's name is a plain file name.
	TaskManagerLogFile(ctx context.Context, tmID string, f TaskManagerFile) (*LogFile, error)

	// TaskManagerThreadDump returns the goroutines of a TaskManager's
	// process (GET /taskmanagers/:id/thread-dump).
	TaskManagerThreadDump(ctx context.Context, tmID string) ([]restapi.ThreadInfo, error)

	// TaskManagerMetrics returns the runtime metrics of a TaskManager's
	// process by Flink's names, Status.JVM.* (GET /taskmanagers/:id/metrics
	// and /taskmanagers/metrics).
	TaskManagerMetrics(ctx context.Context, tmID string) ([]ProcessMetric, error)

	// SampleVertex samples the goroutines of a running vertex's subtasks
	// (those of req.Subtasks, or all) where they run, as req says, and
	// returns their stacks (GET .../vertices/:vertexid/flamegraph, which
	// calls it on a goroutine of its own and caches the answer). It
	// blocks for the sampling's time. A vertex whose subtasks do not run
	// (yet) answers an error wrapping ErrConflict; one whose process
	// already runs a CPU profile, ErrUnavailable.
	SampleVertex(ctx context.Context, jobID, vertexID string, req SampleRequest) ([]flamegraph.Stack, error)

	// Metrics returns the current metrics of the jobs for GET /metrics.
	Metrics(ctx context.Context) (*MetricsSnapshot, error)

	// YARNApplication returns the YARN application the cluster runs in and
	// its containers (GET /jobmanager/yarn); Enabled false outside YARN.
	YARNApplication(ctx context.Context) (*restapi.YARNApplication, error)

	// ShutDownCluster starts shutting the cluster down (DELETE /cluster,
	// as Flink's yarn-session stop): the jobs that have not ended are
	// cancelled, then the JobManager ends (on YARN, the application ends
	// SUCCEEDED). It returns once the shutdown has begun. A cluster that
	// cannot be shut down this way answers an error wrapping
	// ErrBadRequest.
	ShutDownCluster(ctx context.Context) error
}

// Submission is a job received by POST /jobs.
type Submission struct {
	// Graph is the job graph, decoded and validated (graph.Validate).
	Graph *graph.JobGraph
	// GraphJSON is the job graph as received.
	GraphJSON []byte
	// BinaryPath is the received job binary; it exists only during
	// Backend.SubmitJob.
	BinaryPath string
	// BinarySHA256 is the hex SHA-256 of the binary.
	BinarySHA256 string
	// BinaryName is the file name the client gave the binary.
	BinaryName string
	// Args are the job program's arguments.
	Args []string
	// SavepointPath, AllowNonRestoredState: restore from this savepoint.
	SavepointPath         string
	AllowNonRestoredState bool
	// Configuration overrides Graph.Config, key to value.
	Configuration map[string]string
}

// CheckpointRequest says how to take a checkpoint.
type CheckpointRequest struct {
	// Type is CheckpointConfigured (as the job checkpoints: incremental if
	// so configured) or CheckpointFull (sharing no files with earlier
	// checkpoints), as the request's checkpointType.
	Type string
}

// SavepointRequest says how to take a savepoint.
type SavepointRequest struct {
	// TargetDirectory: "" means the job's configured savepoint directory.
	TargetDirectory string
	// CancelJob cancels the job after the savepoint (savepoints only).
	CancelJob bool
	// Drain ends event time before the savepoint (stop only).
	Drain bool
	// Format is FormatCanonical: the server refuses FormatNative, which
	// Sluice does not write.
	Format string
}
