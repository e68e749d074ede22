package restapi

// SubtaskBackPressure is one subtask of VertexBackPressure.
type SubtaskBackPressure struct {
	Subtask       int     `json:"subtask"`
	AttemptNumber int     `json:"attempt-number"`
	Level         string  `json:"backpressureLevel"`
	LevelOld      string  `json:"backpressure-level"` // Flink's deprecated name, the same
	Ratio         float64 `json:"ratio"`
	IdleRatio     float64 `json:"idleRatio"`
	BusyRatio     float64 `json:"busyRatio"`
}

// VertexBackPressure is the body of GET .../vertices/:vertexid/backpressure.
// While no subtask has figures it is {"status": "deprecated"}, Flink's
// answer when it has no statistics.
type VertexBackPressure struct {
	Status       string                `json:"status"`
	Level        string                `json:"backpressureLevel,omitempty"`
	LevelOld     string                `json:"backpressure-level,omitempty"`
	EndTimestamp int64                 `json:"end-timestamp,omitempty"`
	Subtasks     []SubtaskBackPressure `json:"subtasks,omitempty"`
}

// SubtaskTimes is one subtask of SubtasksTimes.
type SubtaskTimes struct {
	Subtask  int    `json:"subtask"`
	Endpoint string `json:"endpoint"`
	Duration int64  `json:"duration"`
	// Timestamps are when the subtask entered each state, epoch ms; 0 for
	// a state it has not entered or whose time the cluster does not keep.
	Timestamps map[ExecutionState]int64 `json:"timestamps"`
}

// SubtasksTimes is the body of GET .../vertices/:vertexid/subtasktimes.
type SubtasksTimes struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Now      int64          `json:"now"`
	Subtasks []SubtaskTimes `json:"subtasks"`
}

// VertexTaskManager is one TaskManager of VertexTaskManagers: the
// vertex's subtasks on it.
type VertexTaskManager struct {
	Endpoint      string                 `json:"endpoint"`
	Status        ExecutionState         `json:"status"`
	StartTime     int64                  `json:"start-time"`
	EndTime       int64                  `json:"end-time"`
	Duration      int64                  `json:"duration"`
	Metrics       IOMetrics              `json:"metrics"`
	StatusCounts  map[ExecutionState]int `json:"status-counts"`
	TaskManagerID string                 `json:"taskmanager-id"`
	Aggregated    AggregatedTaskDetails  `json:"aggregated"`
}

// VertexTaskManagers is the body of GET .../vertices/:vertexid/taskmanagers.
type VertexTaskManagers struct {
	ID           string              `json:"id"`
	Name         string              `json:"name"`
	Now          int64               `json:"now"`
	TaskManagers []VertexTaskManager `json:"taskmanagers"`
}

// UserAccumulator is a user accumulator of Flink's (name, type, value);
// Sluice has none.
type UserAccumulator struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// VertexAccumulators is the body of GET .../vertices/:vertexid/accumulators.
type VertexAccumulators struct {
	ID               string            `json:"id"`
	UserAccumulators []UserAccumulator `json:"user-accumulators"`
}

// SubtaskAccumulators is one subtask of SubtasksAccumulators.
type SubtaskAccumulators struct {
	Subtask          int               `json:"subtask"`
	Attempt          int               `json:"attempt"`
	Endpoint         string            `json:"endpoint"`
	UserAccumulators []UserAccumulator `json:"user-accumulators"`
}

// SubtasksAccumulators is the body of GET
// .../vertices/:vertexid/subtasks/accumulators.
type SubtasksAccumulators struct {
	ID          string                `json:"id"`
	Parallelism int                   `json:"parallelism"`
	Subtasks    []SubtaskAccumulators `json:"subtasks"`
}

// JobAccumulators is the body of GET /jobs/:jobid/accumulators.
type JobAccumulators struct {
	JobAccumulators            []UserAccumulator `json:"job-accumulators"`
	UserTaskAccumulators       []UserAccumulator `json:"user-task-accumulators"`
	SerializedUserAccumulators map[string]string `json:"serialized-user-task-accumulators"`
}
