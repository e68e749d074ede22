package rest

import (
	"net/http"
	"slices"
)

// More views of a vertex's subtasks, served from what the Backend's Job
// answers (Vertex.Subtasks), in Flink's shapes:
//
//	GET /jobs/:jobid/vertices/:vertexid/backpressure           JobVertexBackPressureInfo, from backPressuredTimeMsPerSecond
//	GET /jobs/:jobid/vertices/:vertexid/subtasktimes           SubtasksTimesInfo: when each subtask entered each state
//	GET /jobs/:jobid/vertices/:vertexid/taskmanagers           JobVertexTaskManagersInfo: the subtasks grouped by TaskManager
//	GET /jobs/:jobid/vertices/:vertexid/accumulators           JobVertexAccumulatorsInfo
//	GET /jobs/:jobid/vertices/:vertexid/subtasks/accumulators  SubtasksAllAccumulatorsInfo
//	GET /jobs/:jobid/accumulators                              JobAccumulatorsInfo
//
// Sluice has no user accumulators (Flink's RuntimeContext#addAccumulator):
// their lists are empty, Flink's answer for a job that registers none. Its
// own results (restarts, checkpoints, the stop savepoint) are the
// accumulator-results of GET /jobs/:jobid/execution-result.

// Back-pressure levels and statuses (Flink's VertexBackPressureLevel and
// VertexBackPressureStatus).
const (
	BackPressureOK   = "ok"
	BackPressureLow  = "low"
	BackPressureHigh = "high"

	BackPressureStatusOK         = "ok"
	BackPressureStatusDeprecated = "deprecated" // no figures (yet)
)

// backPressureLevel is Flink's level of a back-pressured ratio (0 to 1):
// below 10 % OK, below 50 % LOW, else HIGH.
func backPressureLevel(ratio float64) string {
	switch {
	case ratio < 0.10:
		return BackPressureOK
	case ratio < 0.5:
		return BackPressureLow
	}
	return BackPressureHigh
}

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

func (s *Server) getVertexBackPressure(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := VertexBackPressure{Status: BackPressureStatusDeprecated}
	worst := 0.0
	for _, st := range subtasksOf(v) {
		if st.Rates == nil {
			continue
		}
		ratio := st.Rates.BackPressuredTimeMsPerSecond / 1000
		lvl := backPressureLevel(ratio)
		out.Subtasks = append(out.Subtasks, SubtaskBackPressure{Subtask: st.Subtask, AttemptNumber: st.Attempt, Level: lvl, LevelOld: lvl,
			Ratio: ratio, IdleRatio: st.Rates.IdleTimeMsPerSecond / 1000, BusyRatio: st.Rates.BusyTimeMsPerSecond / 1000})
		worst = max(worst, ratio)
	}
	if len(out.Subtasks) > 0 {
		lvl := backPressureLevel(worst)
		out.Status, out.Level, out.LevelOld, out.EndTimestamp = BackPressureStatusOK, lvl, lvl, s.cfg.Clock.NowMillis()
	}
	writeJSON(w, http.StatusOK, out)
}

// allExecutionStates are Flink's ExecutionStates, in its order.
var allExecutionStates = []ExecutionState{TaskCreated, TaskScheduled, TaskDeploying, TaskRunning, TaskFinished,
	TaskCanceling, TaskCanceled, TaskFailed, TaskReconciling, TaskInitializing}

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

func (s *Server) getSubtaskTimes(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := SubtasksTimes{ID: v.ID, Name: v.Name, Now: s.cfg.Clock.NowMillis(), Subtasks: []SubtaskTimes{}}
	for _, st := range subtasksOf(v) {
		ts := make(map[ExecutionState]int64, len(allExecutionStates))
		for _, state := range allExecutionStates {
			ts[state] = st.StateTimestamps[state]
		}
		out.Subtasks = append(out.Subtasks, SubtaskTimes{Subtask: st.Subtask, Endpoint: st.Endpoint, Duration: st.Duration, Timestamps: ts})
	}
	writeJSON(w, http.StatusOK, out)
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

func (s *Server) getVertexTaskManagers(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	now := s.cfg.Clock.NowMillis()
	byTM := map[string][]SubtaskDetails{}
	var order []string
	for _, st := range subtasksOf(v) {
		if _, seen := byTM[st.TaskManagerID]; !seen {
			order = append(order, st.TaskManagerID)
		}
		byTM[st.TaskManagerID] = append(byTM[st.TaskManagerID], st)
	}
	slices.Sort(order)
	out := VertexTaskManagers{ID: v.ID, Name: v.Name, Now: now, TaskManagers: []VertexTaskManager{}}
	for _, id := range order {
		subs := byTM[id]
		tm := VertexTaskManager{Endpoint: subs[0].Endpoint, TaskManagerID: id, StartTime: -1, EndTime: -1, Duration: -1,
			StatusCounts: map[ExecutionState]int{}, Aggregated: aggregatedDetails(subs)}
		for _, state := range allExecutionStates {
			tm.StatusCounts[state] = 0
		}
		var counts StateCounts
		allEnded := true
		for _, st := range subs {
			tm.StatusCounts[st.Status]++
			counts.Add(st.Status, 1)
			if st.StartTime > 0 && (tm.StartTime < 0 || st.StartTime < tm.StartTime) {
				tm.StartTime = st.StartTime
			}
			if st.EndTime > 0 {
				tm.EndTime = max(tm.EndTime, st.EndTime)
			} else {
				allEnded = false
			}
			m := st.Metrics
			tm.Metrics.ReadBytes += m.ReadBytes
			tm.Metrics.WriteBytes += m.WriteBytes
			tm.Metrics.ReadRecords += m.ReadRecords
			tm.Metrics.WriteRecords += m.WriteRecords
			tm.Metrics.AccumulatedBackpressuredTime = max(tm.Metrics.AccumulatedBackpressuredTime, m.AccumulatedBackpressuredTime)
			tm.Metrics.AccumulatedIdleTime = max(tm.Metrics.AccumulatedIdleTime, m.AccumulatedIdleTime)
			tm.Metrics.AccumulatedBusyTime = max(tm.Metrics.AccumulatedBusyTime, m.AccumulatedBusyTime)
		}
		tm.Metrics.ReadBytesComplete, tm.Metrics.WriteBytesComplete = true, true
		tm.Metrics.ReadRecordsComplete, tm.Metrics.WriteRecordsComplete = true, true
		if !allEnded {
			tm.EndTime = -1
		}
		switch {
		case tm.StartTime < 0:
		case tm.EndTime >= 0:
			tm.Duration = tm.EndTime - tm.StartTime
		default:
			tm.Duration = now - tm.StartTime
		}
		tm.Status = aggregateState(counts, len(subs))
		out.TaskManagers = append(out.TaskManagers, tm)
	}
	writeJSON(w, http.StatusOK, out)
}

// aggregateState is the state of a group of n subtasks (Flink's
// ExecutionJobVertex.getAggregateJobVertexState): a failure shows first,
// then cancellation; running while any runs or some have finished.
func aggregateState(c StateCounts, n int) ExecutionState {
	switch {
	case c.Failed > 0:
		return TaskFailed
	case c.Canceling > 0:
		return TaskCanceling
	case c.Canceled > 0:
		return TaskCanceled
	case c.Initializing > 0:
		return TaskInitializing
	case c.Running > 0:
		return TaskRunning
	case c.Finished > 0 && c.Finished == n:
		return TaskFinished
	case c.Finished > 0:
		return TaskRunning
	case c.Deploying > 0:
		return TaskDeploying
	case c.Scheduled > 0:
		return TaskScheduled
	}
	return TaskCreated
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

func (s *Server) getVertexAccumulators(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, VertexAccumulators{ID: v.ID, UserAccumulators: []UserAccumulator{}})
}

func (s *Server) getSubtasksAccumulators(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := SubtasksAccumulators{ID: v.ID, Parallelism: v.Parallelism, Subtasks: []SubtaskAccumulators{}}
	for _, st := range subtasksOf(v) {
		out.Subtasks = append(out.Subtasks, SubtaskAccumulators{Subtask: st.Subtask, Attempt: st.Attempt, Endpoint: st.Endpoint,
			UserAccumulators: []UserAccumulator{}})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getJobAccumulators(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.jobDetails(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, JobAccumulators{JobAccumulators: []UserAccumulator{}, UserTaskAccumulators: []UserAccumulator{},
		SerializedUserAccumulators: map[string]string{}})
}
