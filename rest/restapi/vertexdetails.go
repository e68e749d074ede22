package restapi

// SubtaskDetails is one subtask of a vertex (Flink's
// SubtaskExecutionAttemptDetailsInfo). The Backend fills Vertex.Subtasks
// with them; the server serves them at GET /jobs/:jobid/vertices/:vertexid.
type SubtaskDetails struct {
	Subtask int            `json:"subtask"`
	Status  ExecutionState `json:"status"`
	// Attempt counts the subtask's restarts (0 for the first attempt).
	Attempt int `json:"attempt"`
	// Endpoint is the host:port of the TaskManager the subtask runs on; ""
	// when the cluster does not know it.
	Endpoint  string `json:"endpoint"`
	StartTime int64  `json:"start-time"` // epoch ms, -1: not deployed
	// StartTimeDeprecated is Flink's deprecated duplicate of StartTime;
	// the server sets it.
	StartTimeDeprecated int64     `json:"start_time"`
	EndTime             int64     `json:"end-time"` // -1 while it runs
	Duration            int64     `json:"duration"`
	Metrics             IOMetrics `json:"metrics"`
	TaskManagerID       string    `json:"taskmanager-id"`
	// StatusDuration is how long the subtask spent in each state, ms
	// (CREATED, SCHEDULED, DEPLOYING, INITIALIZING, RUNNING; 0 for a state
	// it was not seen in).
	StatusDuration map[ExecutionState]int64 `json:"status-duration"`

	// Watermark is the subtask's current input watermark, epoch ms
	// (math.MinInt64 before the first), served by GET .../watermarks and
	// .../metrics as currentInputWatermark; not part of Flink's message.
	Watermark int64 `json:"-"`
	// OutputWatermark is the last watermark the subtask sent downstream
	// (math.MinInt64 before the first, and for a subtask that sends to
	// none), served as currentOutputWatermark.
	OutputWatermark int64 `json:"-"`
	// StateTimestamps are when the subtask entered each state, epoch ms,
	// as far as the cluster keeps them (GET .../subtasktimes; a state
	// missing is 0 there).
	StateTimestamps map[ExecutionState]int64 `json:"-"`
	// Rates are the subtask's per-second figures; nil until the cluster
	// has measured them (they are then left out of the metrics).
	Rates *SubtaskRates `json:"-"`
	// Gauges are the metrics the subtask's operators publish of their own
	// (stream.MetricGroup: a Kafka source's
	// KafkaSourceReader.topic.<t>.partition.<p>.lag, ...), by name, served
	// with the task metrics by GET .../metrics; nil when there are none.
	Gauges map[string]float64 `json:"-"`
}

// SubtaskRates are a subtask's per-second figures, Flink's meters
// (numRecordsInPerSecond, ..., over the last minute) and timer gauges
// (busyTimeMsPerSecond, ..., 0 to 1000 ms per second, over the last 5 s).
type SubtaskRates struct {
	RecordsInPerSecond, RecordsOutPerSecond, BytesInPerSecond, BytesOutPerSecond float64
	BusyTimeMsPerSecond, BackPressuredTimeMsPerSecond, IdleTimeMsPerSecond       float64
}

// AggregatedTaskDetails is the "aggregated" of GET
// /jobs/:jobid/vertices/:vertexid: each I/O metric and state duration
// summarised over the subtasks.
type AggregatedTaskDetails struct {
	Metrics        map[string]map[string]int64 `json:"metrics"`
	StatusDuration map[string]map[string]int64 `json:"status-duration"`
}

// VertexDetails is the body of GET /jobs/:jobid/vertices/:vertexid
// (Flink's JobVertexDetailsInfo).
type VertexDetails struct {
	ID             string                `json:"id"`
	Name           string                `json:"name"`
	MaxParallelism int                   `json:"maxParallelism"`
	Parallelism    int                   `json:"parallelism"`
	Now            int64                 `json:"now"`
	Subtasks       []SubtaskDetails      `json:"subtasks"`
	Aggregated     AggregatedTaskDetails `json:"aggregated"`
}

// ExecutionConfigInfo is the "execution-config" of GET /jobs/:jobid/config.
type ExecutionConfigInfo struct {
	// RestartStrategy describes the job's restart strategy.
	RestartStrategy string `json:"restart-strategy"`
	Parallelism     int    `json:"job-parallelism"`
	// ObjectReuse is Flink's object reuse mode; Sluice hands every
	// operator its own records, so it is false.
	ObjectReuse bool `json:"object-reuse-mode"`
	// UserConfig is Flink's global job parameters; Sluice has none, {}.
	UserConfig map[string]string `json:"user-config"`
}

// JobConfigInfo is the body of GET /jobs/:jobid/config.
type JobConfigInfo struct {
	JobID           string               `json:"jid"`
	Name            string               `json:"name"`
	ExecutionConfig *ExecutionConfigInfo `json:"execution-config,omitempty"`
}

// Metric is one value of GET .../metrics?get=... ({"id", "value"}, the
// value as a string, as Flink writes it); without get, the names alone.
type Metric struct {
	ID    string  `json:"id"`
	Value *string `json:"value,omitempty"`
}

// AggregatedMetric is one metric of GET .../subtasks/metrics, aggregated
// over the subtasks; only the aggregations asked for (?agg=) are set.
type AggregatedMetric struct {
	ID   string   `json:"id"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	Avg  *float64 `json:"avg,omitempty"`
	Sum  *float64 `json:"sum,omitempty"`
	Skew *float64 `json:"skew,omitempty"`
}

// SlotInfo is an allocated slot of TaskManagerDetails.
type SlotInfo struct {
	JobID    string          `json:"jobId"`
	Resource ResourceProfile `json:"resource"`
}

// GarbageCollectorInfo is a collector of TaskManagerMetricsInfo.
type GarbageCollectorInfo struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Time  int64  `json:"time"`
}

// TaskManagerMetricsInfo are the JVM memory metrics of Flink's
// TaskManagerDetailsInfo, of a TaskManager's Go process: its heap and
// non-heap memory and its garbage collector ("Go") as its Status.JVM.*
// metrics give them (GET /taskmanagers/:id/metrics). It has no direct or
// mapped buffers or network memory segments: they are 0.
type TaskManagerMetricsInfo struct {
	HeapUsed                            int64                  `json:"heapUsed"`
	HeapCommitted                       int64                  `json:"heapCommitted"`
	HeapMax                             int64                  `json:"heapMax"`
	NonHeapUsed                         int64                  `json:"nonHeapUsed"`
	NonHeapCommitted                    int64                  `json:"nonHeapCommitted"`
	NonHeapMax                          int64                  `json:"nonHeapMax"`
	DirectCount                         int64                  `json:"directCount"`
	DirectUsed                          int64                  `json:"directUsed"`
	DirectMax                           int64                  `json:"directMax"`
	MappedCount                         int64                  `json:"mappedCount"`
	MappedUsed                          int64                  `json:"mappedUsed"`
	MappedMax                           int64                  `json:"mappedMax"`
	NettyShuffleMemorySegmentsAvailable int64                  `json:"nettyShuffleMemorySegmentsAvailable"`
	NettyShuffleMemorySegmentsUsed      int64                  `json:"nettyShuffleMemorySegmentsUsed"`
	NettyShuffleMemorySegmentsTotal     int64                  `json:"nettyShuffleMemorySegmentsTotal"`
	NettyShuffleMemoryAvailable         int64                  `json:"nettyShuffleMemoryAvailable"`
	NettyShuffleMemoryUsed              int64                  `json:"nettyShuffleMemoryUsed"`
	NettyShuffleMemoryTotal             int64                  `json:"nettyShuffleMemoryTotal"`
	GarbageCollectors                   []GarbageCollectorInfo `json:"garbageCollectors"`
}

// MemoryConfiguration is Flink's TaskExecutorMemoryConfiguration, bytes.
// Sluice sizes no JVM memory pools: every member is 0.
type MemoryConfiguration struct {
	FrameworkHeap      int64 `json:"frameworkHeap"`
	TaskHeap           int64 `json:"taskHeap"`
	FrameworkOffHeap   int64 `json:"frameworkOffHeap"`
	TaskOffHeap        int64 `json:"taskOffHeap"`
	NetworkMemory      int64 `json:"networkMemory"`
	ManagedMemory      int64 `json:"managedMemory"`
	JVMMetaspace       int64 `json:"jvmMetaspace"`
	JVMOverhead        int64 `json:"jvmOverhead"`
	TotalFlinkMemory   int64 `json:"totalFlinkMemory"`
	TotalProcessMemory int64 `json:"totalProcessMemory"`
}

// TaskManagerDetails is the body of GET /taskmanagers/:taskmanagerid
// (Flink's TaskManagerDetailsInfo).
type TaskManagerDetails struct {
	TaskManagerInfo
	// AllocatedSlots lists slots with the job they hold; Sluice's
	// ResourceManager reports counts only, so it is empty.
	AllocatedSlots []SlotInfo             `json:"allocatedSlots"`
	Metrics        TaskManagerMetricsInfo `json:"metrics"`
}

// CheckpointConfigInfo is the body of GET /jobs/:jobid/checkpoints/config
// (Flink's CheckpointConfigInfo), read from the job's effective
// configuration. Sluice has no unaligned checkpoints and no changelog
// state: those members are Flink's values for them off.
type CheckpointConfigInfo struct {
	Mode                        string                    `json:"mode"`
	Interval                    int64                     `json:"interval"`
	Timeout                     int64                     `json:"timeout"`
	MinPause                    int64                     `json:"min_pause"`
	MaxConcurrent               int64                     `json:"max_concurrent"`
	Externalization             ExternalizedCheckpointCfg `json:"externalization"`
	StateBackend                string                    `json:"state_backend"`
	CheckpointStorage           string                    `json:"checkpoint_storage"`
	UnalignedCheckpoints        bool                      `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints  int                       `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout    int64                     `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish bool                      `json:"checkpoints_after_tasks_finish"`
	StateChangelogEnabled       bool                      `json:"state_changelog_enabled"`
	ChangelogMaterialization    int64                     `json:"changelog_periodic_materialization_interval"`
	ChangelogStorage            string                    `json:"changelog_storage"`
}

// ExternalizedCheckpointCfg is whether completed checkpoints outlive the
// job (Flink's ExternalizedCheckpointInfo).
type ExternalizedCheckpointCfg struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
}
