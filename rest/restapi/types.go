package restapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The messages of the REST API. Their JSON encodings are Apache Flink's
// (field names, nesting, units: times are epoch milliseconds, durations
// milliseconds, sizes bytes), so tools written for Flink's REST API read
// them unchanged. Fields Flink has and Sluice cannot fill are kept with
// Flink's "unknown" values (-1, 0, false) rather than dropped.

// JobState is a job's status (Flink's JobStatus).
type JobState string

// Job states.
const (
	JobInitializing JobState = "INITIALIZING"
	JobCreated      JobState = "CREATED"
	JobRunning      JobState = "RUNNING"
	JobFailing      JobState = "FAILING"
	JobFailed       JobState = "FAILED"
	JobCancelling   JobState = "CANCELLING"
	JobCanceled     JobState = "CANCELED"
	JobFinished     JobState = "FINISHED"
	JobRestarting   JobState = "RESTARTING"
	JobSuspended    JobState = "SUSPENDED"
	JobReconciling  JobState = "RECONCILING"
)

// IsGloballyTerminal reports whether the job has ended for good: FINISHED,
// CANCELED or FAILED.
func (s JobState) IsGloballyTerminal() bool {
	return s == JobFinished || s == JobCanceled || s == JobFailed
}

// ExecutionState is the state of one subtask (Flink's ExecutionState).
type ExecutionState string

// Execution states.
const (
	TaskCreated      ExecutionState = "CREATED"
	TaskScheduled    ExecutionState = "SCHEDULED"
	TaskDeploying    ExecutionState = "DEPLOYING"
	TaskRunning      ExecutionState = "RUNNING"
	TaskFinished     ExecutionState = "FINISHED"
	TaskCanceling    ExecutionState = "CANCELING"
	TaskCanceled     ExecutionState = "CANCELED"
	TaskFailed       ExecutionState = "FAILED"
	TaskReconciling  ExecutionState = "RECONCILING"
	TaskInitializing ExecutionState = "INITIALIZING"
)

// StateCounts counts subtasks per execution state; it is the "tasks" of a
// vertex and the "status-counts" of a job in GET /jobs/:jobid, where Flink
// writes every state, zeros included.
type StateCounts struct {
	Created      int `json:"CREATED"`
	Scheduled    int `json:"SCHEDULED"`
	Deploying    int `json:"DEPLOYING"`
	Running      int `json:"RUNNING"`
	Finished     int `json:"FINISHED"`
	Canceling    int `json:"CANCELING"`
	Canceled     int `json:"CANCELED"`
	Failed       int `json:"FAILED"`
	Reconciling  int `json:"RECONCILING"`
	Initializing int `json:"INITIALIZING"`
}

// Add counts n more subtasks in state s. An unknown state is ignored.
func (c *StateCounts) Add(s ExecutionState, n int) {
	switch s {
	case TaskCreated:
		c.Created += n
	case TaskScheduled:
		c.Scheduled += n
	case TaskDeploying:
		c.Deploying += n
	case TaskRunning:
		c.Running += n
	case TaskFinished:
		c.Finished += n
	case TaskCanceling:
		c.Canceling += n
	case TaskCanceled:
		c.Canceled += n
	case TaskFailed:
		c.Failed += n
	case TaskReconciling:
		c.Reconciling += n
	case TaskInitializing:
		c.Initializing += n
	}
}

// Merge adds the counts of o.
func (c *StateCounts) Merge(o StateCounts) {
	c.Created += o.Created
	c.Scheduled += o.Scheduled
	c.Deploying += o.Deploying
	c.Running += o.Running
	c.Finished += o.Finished
	c.Canceling += o.Canceling
	c.Canceled += o.Canceled
	c.Failed += o.Failed
	c.Reconciling += o.Reconciling
	c.Initializing += o.Initializing
}

// Total is the number of subtasks counted.
func (c StateCounts) Total() int {
	return c.Created + c.Scheduled + c.Deploying + c.Running + c.Finished + c.Canceling +
		c.Canceled + c.Failed + c.Reconciling + c.Initializing
}

// Overview returns the counts in the form of GET /jobs/overview.
func (c StateCounts) Overview() TaskCounts {
	return TaskCounts{
		Total: c.Total(), Created: c.Created, Scheduled: c.Scheduled, Deploying: c.Deploying,
		Running: c.Running, Finished: c.Finished, Canceling: c.Canceling, Canceled: c.Canceled,
		Failed: c.Failed, Reconciling: c.Reconciling, Initializing: c.Initializing,
	}
}

// TaskCounts counts a job's subtasks per execution state in the lower-case
// form of GET /jobs/overview, with the total.
type TaskCounts struct {
	Total        int `json:"total"`
	Created      int `json:"created"`
	Scheduled    int `json:"scheduled"`
	Deploying    int `json:"deploying"`
	Running      int `json:"running"`
	Finished     int `json:"finished"`
	Canceling    int `json:"canceling"`
	Canceled     int `json:"canceled"`
	Failed       int `json:"failed"`
	Reconciling  int `json:"reconciling"`
	Initializing int `json:"initializing"`
}

// JobOverview is one job of GET /jobs/overview (Flink's JobDetails). The
// Backend's list of them also serves GET /jobs and the job counts of
// GET /overview.
type JobOverview struct {
	ID    string   `json:"jid"`
	Name  string   `json:"name"`
	State JobState `json:"state"`
	// StartTime is when the job was submitted, epoch ms.
	StartTime int64 `json:"start-time"`
	// EndTime is when it ended, epoch ms; -1 while it has not.
	EndTime int64 `json:"end-time"`
	// Duration is EndTime (or now) minus StartTime, ms.
	Duration int64 `json:"duration"`
	// LastModification is when the state last changed, epoch ms.
	LastModification int64      `json:"last-modification"`
	Tasks            TaskCounts `json:"tasks"`
	// PendingOperators are operators not yet in the job graph (Flink's
	// adaptive graph generation); a Sluice job's graph is whole: 0.
	PendingOperators int `json:"pending-operators"`
	// JobType is STREAMING or BATCH; omitted where the Backend does not
	// know it.
	JobType string `json:"jobType,omitempty"`
	// SchedulerType is Flink's scheduler of the job; the server sets
	// SchedulerDefault.
	SchedulerType string `json:"schedulerType"`
}

// JobIDWithStatus is one job of GET /jobs.
type JobIDWithStatus struct {
	ID     string   `json:"id"`
	Status JobState `json:"status"`
}

// JobIDsWithStatus is the body of GET /jobs.
type JobIDsWithStatus struct {
	Jobs []JobIDWithStatus `json:"jobs"`
}

// MultipleJobsDetails is the body of GET /jobs/overview.
type MultipleJobsDetails struct {
	Jobs []JobOverview `json:"jobs"`
}

// SchedulerDefault is Flink's SchedulerType of its default scheduler,
// which deploys every subtask of a streaming job at once at a fixed
// parallelism, as Sluice schedules every job (Flink's others are Adaptive
// and AdaptiveBatch, which rescale).
const SchedulerDefault = "Default"

// JobDetails is the body of GET /jobs/:jobid (Flink's JobDetailsInfo).
type JobDetails struct {
	ID          string   `json:"jid"`
	Name        string   `json:"name"`
	IsStoppable bool     `json:"isStoppable"`
	State       JobState `json:"state"`
	// JobType is STREAMING or BATCH.
	JobType string `json:"job-type"`
	// SchedulerType is Flink's scheduler of the job; the server sets
	// SchedulerDefault.
	SchedulerType string `json:"schedulerType"`
	StartTime     int64  `json:"start-time"`
	EndTime       int64  `json:"end-time"` // -1 while running
	Duration      int64  `json:"duration"`
	// MaxParallelism is the job's max parallelism, -1 when operators differ.
	MaxParallelism int64 `json:"maxParallelism"`
	// Now is the server's time of the response; the server sets it.
	Now int64 `json:"now"`
	// Timestamps holds when the job entered each state, epoch ms; Flink
	// lists every JobState, 0 for those not reached.
	Timestamps   map[JobState]int64 `json:"timestamps"`
	Vertices     []Vertex           `json:"vertices"`
	StatusCounts StateCounts        `json:"status-counts"`
	Plan         JobPlan            `json:"plan"`
	// PendingOperators: as in JobOverview, 0.
	PendingOperators int `json:"pending-operators"`

	// ExecutionConfig is served by GET /jobs/:jobid/config (nil: none);
	// Config, the job's effective configuration (key → value), by GET
	// /jobs/:jobid/jobmanager/config. Neither is part of this message.
	ExecutionConfig *ExecutionConfigInfo `json:"-"`
	Config          map[string]string    `json:"-"`
}

// Vertex is one vertex (an operator chain) of GET /jobs/:jobid.
type Vertex struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	MaxParallelism int            `json:"maxParallelism"`
	Parallelism    int            `json:"parallelism"`
	Status         ExecutionState `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          StateCounts    `json:"tasks"`
	Metrics        IOMetrics      `json:"metrics"`
	// SlotSharingGroupID is the vertex's slot sharing group (32 hex
	// digits): every vertex of a Sluice job shares one, as Flink's default
	// group. The server derives it from the job ID when it is empty.
	SlotSharingGroupID string `json:"slotSharingGroupId"`

	// Subtasks are the vertex's subtasks, in subtask order, served by GET
	// /jobs/:jobid/vertices/:vertexid and its metrics and watermarks; not
	// part of this message.
	Subtasks []SubtaskDetails `json:"-"`
}

// IOMetrics are a vertex's I/O counters summed over its subtasks (Flink's
// IOMetricsInfo). The *-complete flags say whether every subtask reported.
type IOMetrics struct {
	ReadBytes            int64 `json:"read-bytes"`
	ReadBytesComplete    bool  `json:"read-bytes-complete"`
	WriteBytes           int64 `json:"write-bytes"`
	WriteBytesComplete   bool  `json:"write-bytes-complete"`
	ReadRecords          int64 `json:"read-records"`
	ReadRecordsComplete  bool  `json:"read-records-complete"`
	WriteRecords         int64 `json:"write-records"`
	WriteRecordsComplete bool  `json:"write-records-complete"`
	// Accumulated times of the subtasks, ms (the maximum over subtasks, as
	// in Flink).
	AccumulatedBackpressuredTime int64   `json:"accumulated-backpressured-time"`
	AccumulatedIdleTime          int64   `json:"accumulated-idle-time"`
	AccumulatedBusyTime          float64 `json:"accumulated-busy-time"`
}

// JobPlan is a job's dataflow plan in Flink's JSON form: one node per
// vertex with its inputs. Build it with NewJobPlan.
type JobPlan struct {
	JobID string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"` // STREAMING or BATCH
	Nodes []PlanNode `json:"nodes"`
}

// PlanNode is one vertex of a JobPlan.
type PlanNode struct {
	ID                  string         `json:"id"`
	Parallelism         int            `json:"parallelism"`
	Operator            string         `json:"operator"`
	OperatorStrategy    string         `json:"operator_strategy"`
	Description         string         `json:"description"`
	Inputs              []PlanInput    `json:"inputs,omitempty"`
	OptimizerProperties map[string]any `json:"optimizer_properties"`
}

// PlanInput is an input of a PlanNode: the upstream vertex and how records
// are distributed (FORWARD, HASH, REBALANCE, BROADCAST, GLOBAL).
type PlanInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// JobPlanInfo is the body of GET /jobs/:jobid/plan.
type JobPlanInfo struct {
	Plan JobPlan `json:"plan"`
}

// ExceptionInfo is one failure of a job (Flink's ExceptionInfo).
type ExceptionInfo struct {
	// ExceptionName is the error's type, e.g. "*fmt.wrapError" or the
	// class of a Java failure.
	ExceptionName string `json:"exceptionName"`
	// Stacktrace is the error's text (and a stack where there is one).
	Stacktrace string `json:"stacktrace"`
	Timestamp  int64  `json:"timestamp"`
	// TaskName names the failed subtask, e.g. "Map (2/4)"; "" for a
	// global failure.
	TaskName string `json:"taskName,omitempty"`
	// Endpoint is the host:port of the TaskManager the subtask ran on.
	Endpoint string `json:"endpoint,omitempty"`
	// TaskManagerID is the resource ID of that TaskManager.
	TaskManagerID string `json:"taskManagerId,omitempty"`
	// FailureLabels classify the failure; Flink writes {} when none.
	FailureLabels map[string]string `json:"failureLabels"`
}

// RootExceptionInfo is a failure that caused a restart or the end of the
// job, with the failures that happened with it.
type RootExceptionInfo struct {
	ExceptionInfo
	ConcurrentExceptions []ExceptionInfo `json:"concurrentExceptions"`
}

// JobExceptionHistory is the "exceptionHistory" of GET /jobs/:jobid/exceptions.
type JobExceptionHistory struct {
	Entries   []RootExceptionInfo `json:"entries"`
	Truncated bool                `json:"truncated"`
}

// JobExceptions is the body of GET /jobs/:jobid/exceptions (Flink 2.x's
// JobExceptionsInfoWithHistory): the history only; Flink 2.x no longer
// knows 1.x's root-exception, timestamp, all-exceptions and truncated.
type JobExceptions struct {
	ExceptionHistory JobExceptionHistory `json:"exceptionHistory"`
}

// CheckpointCounts are the "counts" of GET /jobs/:jobid/checkpoints.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int   `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// StatsSummary summarises a quantity over the completed checkpoints.
type StatsSummary struct {
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	Avg  int64   `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// CheckpointSummary is the "summary" of GET /jobs/:jobid/checkpoints.
type CheckpointSummary struct {
	CheckpointedSize  StatsSummary `json:"checkpointed_size"`
	StateSize         StatsSummary `json:"state_size"`
	EndToEndDuration  StatsSummary `json:"end_to_end_duration"`
	AlignmentBuffered StatsSummary `json:"alignment_buffered"`
	ProcessedData     StatsSummary `json:"processed_data"`
	PersistedData     StatsSummary `json:"persisted_data"`
}

// Checkpoint statuses.
const (
	CheckpointInProgress = "IN_PROGRESS"
	CheckpointCompleted  = "COMPLETED"
	CheckpointFailed     = "FAILED"
)

// Checkpoint kinds of CheckpointStatistics.CheckpointType.
const (
	TypeCheckpoint    = "CHECKPOINT"
	TypeSavepoint     = "SAVEPOINT"
	TypeSyncSavepoint = "SYNC_SAVEPOINT" // the savepoint of stop-with-savepoint
)

// CheckpointStatistics is one checkpoint of the history (Flink's
// CheckpointStatistics). ClassName is Flink's type discriminator:
// "completed", "failed" or "in_progress"; NewCheckpointingStatistics sets
// it from Status.
type CheckpointStatistics struct {
	ClassName               string                              `json:"className"`
	ID                      int64                               `json:"id"`
	Status                  string                              `json:"status"`
	IsSavepoint             bool                                `json:"is_savepoint"`
	SavepointFormat         string                              `json:"savepointFormat,omitempty"`
	TriggerTimestamp        int64                               `json:"trigger_timestamp"`
	LatestAckTimestamp      int64                               `json:"latest_ack_timestamp"`
	CheckpointedSize        int64                               `json:"checkpointed_size"`
	StateSize               int64                               `json:"state_size"`
	EndToEndDuration        int64                               `json:"end_to_end_duration"`
	AlignmentBuffered       int64                               `json:"alignment_buffered"`
	ProcessedData           int64                               `json:"processed_data"`
	PersistedData           int64                               `json:"persisted_data"`
	NumSubtasks             int                                 `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                                 `json:"num_acknowledged_subtasks"`
	CheckpointType          string                              `json:"checkpoint_type"`
	Tasks                   map[string]TaskCheckpointStatistics `json:"tasks"`
	// Completed checkpoints only:
	ExternalPath string `json:"external_path,omitempty"`
	Discarded    *bool  `json:"discarded,omitempty"`
	// Failed checkpoints only:
	FailureTimestamp int64  `json:"failure_timestamp,omitempty"`
	FailureMessage   string `json:"failure_message,omitempty"`
}

// TaskCheckpointStatistics is a checkpoint's progress at one vertex.
type TaskCheckpointStatistics struct {
	ID                      int64  `json:"id"`
	Status                  string `json:"status"`
	LatestAckTimestamp      int64  `json:"latest_ack_timestamp"`
	CheckpointedSize        int64  `json:"checkpointed_size"`
	StateSize               int64  `json:"state_size"`
	EndToEndDuration        int64  `json:"end_to_end_duration"`
	AlignmentBuffered       int64  `json:"alignment_buffered"`
	ProcessedData           int64  `json:"processed_data"`
	PersistedData           int64  `json:"persisted_data"`
	NumSubtasks             int    `json:"num_subtasks"`
	NumAcknowledgedSubtasks int    `json:"num_acknowledged_subtasks"`
}

// RestoredCheckpoint is the checkpoint or savepoint the job last restored.
type RestoredCheckpoint struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// LatestCheckpoints is the "latest" of GET /jobs/:jobid/checkpoints; a
// member is null when there is none.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// CheckpointingStatistics is the body of GET /jobs/:jobid/checkpoints.
// Build it with NewCheckpointingStatistics.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Summary CheckpointSummary      `json:"summary"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"`
}

// ResourceProfile is an amount of resources (Flink's ResourceProfileInfo);
// memory in MiB.
type ResourceProfile struct {
	CPUCores          float64            `json:"cpuCores"`
	TaskHeapMemory    int                `json:"taskHeapMemory"`
	TaskOffHeapMemory int                `json:"taskOffHeapMemory"`
	ManagedMemory     int                `json:"managedMemory"`
	NetworkMemory     int                `json:"networkMemory"`
	ExtendedResources map[string]float64 `json:"extendedResources"`
}

// Hardware describes a TaskManager's machine; memory in bytes, 0 when
// unknown.
type Hardware struct {
	// CPUCores is the number of CPUs the TaskManager may use.
	CPUCores       int   `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"`
	// FreeMemory is, where Flink reports its JVM's heap size, the memory
	// the machine had available at the TaskManager's last heartbeat (a Go
	// process has no fixed heap).
	FreeMemory int64 `json:"freeMemory"`
	// ManagedMemory is Flink's managed memory; Sluice manages none.
	ManagedMemory int64 `json:"managedMemory"`
}

// TaskManagerInfo is one TaskManager of GET /taskmanagers.
type TaskManagerInfo struct {
	// ID is the TaskManager's resource ID (its YARN container ID on YARN).
	ID string `json:"id"`
	// Path is the TaskManager's RPC address.
	Path     string `json:"path"`
	DataPort int    `json:"dataPort"`
	JMXPort  int    `json:"jmxPort"` // -1: none
	// TimeSinceLastHeartbeat is, despite Flink's name, the epoch ms of the
	// last heartbeat, as in Flink.
	TimeSinceLastHeartbeat int64           `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int             `json:"slotsNumber"`
	FreeSlots              int             `json:"freeSlots"`
	TotalResource          ResourceProfile `json:"totalResource"`
	FreeResource           ResourceProfile `json:"freeResource"`
	Hardware               Hardware        `json:"hardware"`
	// MemoryConfiguration: Sluice sizes no JVM memory pools (all 0).
	MemoryConfiguration MemoryConfiguration `json:"memoryConfiguration"`
	// AssignedTasks is the number of tasks deployed on the TaskManager;
	// 0 where the backend does not report it.
	AssignedTasks int `json:"assignedTasks"`
}

// TaskManagersInfo is the body of GET /taskmanagers.
type TaskManagersInfo struct {
	TaskManagers []TaskManagerInfo `json:"taskmanagers"`
}

// ClusterOverview is the body of GET /overview.
type ClusterOverview struct {
	TaskManagers   int    `json:"taskmanagers"`
	SlotsTotal     int    `json:"slots-total"`
	SlotsAvailable int    `json:"slots-available"`
	JobsRunning    int    `json:"jobs-running"`
	JobsFinished   int    `json:"jobs-finished"`
	JobsCancelled  int    `json:"jobs-cancelled"`
	JobsFailed     int    `json:"jobs-failed"`
	FlinkVersion   string `json:"flink-version"`
	FlinkCommit    string `json:"flink-commit"`
}

// DashboardConfiguration is the body of GET /config.
type DashboardConfiguration struct {
	RefreshInterval int64             `json:"refresh-interval"`
	TimezoneName    string            `json:"timezone-name"`
	TimezoneOffset  int               `json:"timezone-offset"`
	FlinkVersion    string            `json:"flink-version"`
	FlinkRevision   string            `json:"flink-revision"`
	Features        DashboardFeatures `json:"features"`
}

// DashboardFeatures are the web UI features the cluster offers.
type DashboardFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// ConfigEntry is one entry of GET /jobmanager/config.
type ConfigEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// SerializedThrowable is an error in an API answer, in Flink's form: the
// error's type in Class, its text in StackTrace, and for Flink's client
// the Java serialization of the org.apache.flink.util.SerializedThrowable
// that stands for it, which MarshalJSON writes as "serialized-throwable"
// (Flink's client deserializes it and fails without it).
type SerializedThrowable struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
}

// MarshalJSON writes the throwable as Flink's SerializedThrowableSerializer
// does.
func (t SerializedThrowable) MarshalJSON() ([]byte, error) {
	msg, _, _ := strings.Cut(t.StackTrace, "\n")
	return json.Marshal(struct {
		Serialized []byte `json:"serialized-throwable"`
		Class      string `json:"class"`
		StackTrace string `json:"stack-trace"`
	}{javaSerializedThrowable(t.Class, msg, t.StackTrace), t.Class, t.StackTrace})
}

// ThrowableOf describes err for an API answer; nil for nil.
func ThrowableOf(err error) *SerializedThrowable {
	if err == nil {
		return nil
	}
	// The outermost type says little ("*fmt.wrapError"); name the innermost.
	inner := err
	for {
		next := errors.Unwrap(inner)
		if next == nil {
			break
		}
		inner = next
	}
	return &SerializedThrowable{Class: fmt.Sprintf("%T", inner), StackTrace: err.Error()}
}

func (t *SerializedThrowable) String() string {
	if t == nil {
		return ""
	}
	return strings.TrimSpace(t.StackTrace)
}

// Application statuses of JobResult.
const (
	AppSucceeded = "SUCCEEDED"
	AppFailed    = "FAILED"
	AppCanceled  = "CANCELED"
	AppUnknown   = "UNKNOWN"
)

// JobResult is how a job ended: the "job-execution-result" of
// GET /jobs/:jobid/execution-result (Flink's JobResult).
type JobResult struct {
	ID                string `json:"id"`
	Name              string `json:"name,omitempty"`
	ApplicationStatus string `json:"application-status"`
	// AccumulatorResults are named results of the job; Sluice reports its
	// own: "restarts" and "checkpoints" (int64), "savepoint" (string).
	AccumulatorResults Accumulators `json:"accumulator-results"`
	// NetRuntime is how long the job ran, ms.
	NetRuntime int64 `json:"net-runtime"`
	// StartTime and EndTime are when the job was submitted and ended,
	// epoch ms; 0 (not sent) when unknown, which Flink reads as -1.
	StartTime    int64                `json:"start-time,omitempty"`
	EndTime      int64                `json:"end-time,omitempty"`
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// Accumulators are the named results of a job: int64 or string values. On
// the wire each is Flink's form, the base64 of the Java serialization of
// an org.apache.flink.util.OptionalFailure holding a java.lang.Long or a
// java.lang.String, so Flink's client reads them as accumulator results.
type Accumulators map[string]any

// MarshalJSON writes each value as Flink's client reads it.
func (a Accumulators) MarshalJSON() ([]byte, error) {
	out := make(map[string][]byte, len(a))
	for k, v := range a {
		b, err := javaAccumulator(v)
		if err != nil {
			return nil, fmt.Errorf("accumulator %q: %w", k, err)
		}
		out[k] = b
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes; a value of another form
// (another server's Java objects) is kept as its serialized bytes.
func (a *Accumulators) UnmarshalJSON(data []byte) error {
	var raw map[string][]byte
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Accumulators, len(raw))
	for k, b := range raw {
		v, err := readJavaAccumulator(b)
		if err != nil {
			out[k] = b
			continue
		}
		out[k] = v
	}
	*a = out
	return nil
}

// Int returns the int64 accumulator name.
func (a Accumulators) Int(name string) (int64, bool) {
	v, ok := a[name].(int64)
	return v, ok
}

// String returns the string accumulator name.
func (a Accumulators) String(name string) (string, bool) {
	v, ok := a[name].(string)
	return v, ok
}

// Err returns nil for a job that succeeded, an error matching ErrJobFailed
// (with the failure cause) for one that failed, ErrJobCanceled for one that
// was cancelled and ErrJobUnknown otherwise.
func (r *JobResult) Err() error {
	switch r.ApplicationStatus {
	case AppSucceeded:
		return nil
	case AppFailed:
		if r.FailureCause != nil {
			return fmt.Errorf("%w: job %s: %s", ErrJobFailed, r.ID, r.FailureCause)
		}
		return fmt.Errorf("%w: job %s", ErrJobFailed, r.ID)
	case AppCanceled:
		return fmt.Errorf("%w: job %s", ErrJobCanceled, r.ID)
	default:
		return fmt.Errorf("%w: job %s ended with status %q", ErrJobUnknown, r.ID, r.ApplicationStatus)
	}
}

// Queue statuses of asynchronous operations.
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
)

// QueueStatus says whether an asynchronous operation has completed.
type QueueStatus struct {
	ID string `json:"id"`
}

// JobExecutionResult is the body of GET /jobs/:jobid/execution-result.
type JobExecutionResult struct {
	Status QueueStatus `json:"status"`
	Result *JobResult  `json:"job-execution-result,omitempty"`
}

// TriggerResponse answers the start of an asynchronous operation.
type TriggerResponse struct {
	RequestID string `json:"request-id"`
}

// Savepoint format types. Sluice writes CANONICAL savepoints only (the
// same encoding from either state backend, so they restore into both); a
// request for NATIVE is answered 400.
const (
	FormatCanonical = "CANONICAL"
	FormatNative    = "NATIVE"
)

// SavepointTriggerRequest is the body of POST /jobs/:jobid/savepoints.
// Every member is optional.
type SavepointTriggerRequest struct {
	// TargetDirectory is where the savepoint is written; empty: the job's
	// execution.checkpointing.savepoint-dir.
	TargetDirectory string `json:"target-directory,omitempty"`
	// CancelJob cancels the job once the savepoint is complete.
	CancelJob bool `json:"cancel-job,omitempty"`
	// FormatType is CANONICAL (the default, and the only format Sluice
	// writes; NATIVE is refused).
	FormatType string `json:"formatType,omitempty"`
	// TriggerID makes the request idempotent: a repeated request with the
	// same ID returns the same operation instead of a second savepoint.
	TriggerID string `json:"triggerId,omitempty"`
}

// StopRequest is the body of POST /jobs/:jobid/stop.
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory,omitempty"`
	// Drain ends event time before the savepoint, so every window and
	// timer fires (MAX_WATERMARK).
	Drain      bool   `json:"drain,omitempty"`
	FormatType string `json:"formatType,omitempty"`
	TriggerID  string `json:"triggerId,omitempty"`
}

// Checkpoint types of CheckpointTriggerRequest.
const (
	CheckpointConfigured = "CONFIGURED" // as the job checkpoints (incremental if configured)
	CheckpointFull       = "FULL"
)

// CheckpointTriggerRequest is the body of POST /jobs/:jobid/checkpoints.
type CheckpointTriggerRequest struct {
	// CheckpointType is CONFIGURED (default) or FULL.
	CheckpointType string `json:"checkpointType,omitempty"`
	TriggerID      string `json:"triggerId,omitempty"`
}

// SavepointInfo is the outcome of a savepoint or stop operation.
type SavepointInfo struct {
	Location     string               `json:"location,omitempty"`
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// SavepointStatus is the body of GET /jobs/:jobid/savepoints/:triggerid;
// Operation is set once Status is COMPLETED.
type SavepointStatus struct {
	Status    QueueStatus    `json:"status"`
	Operation *SavepointInfo `json:"operation,omitempty"`
}

// CheckpointInfo is the outcome of a checkpoint operation.
type CheckpointInfo struct {
	CheckpointID int64                `json:"checkpointId,omitempty"`
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// CheckpointStatus is the body of GET /jobs/:jobid/checkpoints/:triggerid.
type CheckpointStatus struct {
	Status    QueueStatus     `json:"status"`
	Operation *CheckpointInfo `json:"operation,omitempty"`
}

// SavepointDisposalRequest is the body of POST /savepoint-disposal.
type SavepointDisposalRequest struct {
	// SavepointPath is the savepoint to delete: its directory or its
	// _metadata file.
	SavepointPath string `json:"savepoint-path"`
	// TriggerID makes the request idempotent, as for a savepoint.
	TriggerID string `json:"triggerId,omitempty"`
}

// AsynchronousOperationInfo is the outcome of an operation that returns
// nothing but its failure (Flink's AsynchronousOperationInfo): {} once it
// succeeded.
type AsynchronousOperationInfo struct {
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// DisposalStatus is the body of GET /savepoint-disposal/:triggerid.
type DisposalStatus struct {
	Status    QueueStatus                `json:"status"`
	Operation *AsynchronousOperationInfo `json:"operation,omitempty"`
}

// SubmitRequest is the "request" part of the multipart POST /jobs, after
// Flink's JobSubmitRequestBody: it names the parts that hold the job graph
// and the job binary, and carries Sluice's own submission settings.
type SubmitRequest struct {
	// JobGraphFileName is the file name of the part holding the job graph
	// (internal/runtime/graph JSON).
	JobGraphFileName string `json:"jobGraphFileName"`
	// JobJarFileNames names the part holding the job binary; exactly one
	// (the name is Flink's).
	JobJarFileNames []string `json:"jobJarFileNames"`
	// Args are the job program's arguments, passed to its workers.
	Args []string `json:"args,omitempty"`
	// SavepointPath restores the job from this savepoint or retained
	// checkpoint (execution.state-recovery.path).
	SavepointPath string `json:"savepointPath,omitempty"`
	// AllowNonRestoredState skips state of operators the job no longer has
	// (execution.state-recovery.ignore-unclaimed-state).
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
	// Configuration overrides the job graph's configuration, key to value.
	Configuration map[string]string `json:"configuration,omitempty"`
}

// SubmitResponse is the body answering POST /jobs.
type SubmitResponse struct {
	JobURL string `json:"jobUrl"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Errors []string `json:"errors"`
}
