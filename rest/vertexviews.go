package rest

import (
	"net/http"
	"slices"

	"github.com/sluice/sluice/rest/restapi"
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

func (s *Server) getVertexBackPressure(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := restapi.VertexBackPressure{Status: BackPressureStatusDeprecated}
	worst := 0.0
	for _, st := range subtasksOf(v) {
		if st.Rates == nil {
			continue
		}
		ratio := st.Rates.BackPressuredTimeMsPerSecond / 1000
		lvl := backPressureLevel(ratio)
		out.Subtasks = append(out.Subtasks, restapi.SubtaskBackPressure{Subtask: st.Subtask, AttemptNumber: st.Attempt, Level: lvl, LevelOld: lvl,
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
var allExecutionStates = []restapi.ExecutionState{restapi.TaskCreated, restapi.TaskScheduled, restapi.TaskDeploying, restapi.TaskRunning, restapi.TaskFinished,
	restapi.TaskCanceling, restapi.TaskCanceled, restapi.TaskFailed, restapi.TaskReconciling, restapi.TaskInitializing}

func (s *Server) getSubtaskTimes(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := restapi.SubtasksTimes{ID: v.ID, Name: v.Name, Now: s.cfg.Clock.NowMillis(), Subtasks: []restapi.SubtaskTimes{}}
	for _, st := range subtasksOf(v) {
		ts := make(map[restapi.ExecutionState]int64, len(allExecutionStates))
		for _, state := range allExecutionStates {
			ts[state] = st.StateTimestamps[state]
		}
		out.Subtasks = append(out.Subtasks, restapi.SubtaskTimes{Subtask: st.Subtask, Endpoint: st.Endpoint, Duration: st.Duration, Timestamps: ts})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getVertexTaskManagers(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	now := s.cfg.Clock.NowMillis()
	byTM := map[string][]restapi.SubtaskDetails{}
	var order []string
	for _, st := range subtasksOf(v) {
		if _, seen := byTM[st.TaskManagerID]; !seen {
			order = append(order, st.TaskManagerID)
		}
		byTM[st.TaskManagerID] = append(byTM[st.TaskManagerID], st)
	}
	slices.Sort(order)
	out := restapi.VertexTaskManagers{ID: v.ID, Name: v.Name, Now: now, TaskManagers: []restapi.VertexTaskManager{}}
	for _, id := range order {
		subs := byTM[id]
		tm := restapi.VertexTaskManager{Endpoint: subs[0].Endpoint, TaskManagerID: id, StartTime: -1, EndTime: -1, Duration: -1,
			StatusCounts: map[restapi.ExecutionState]int{}, Aggregated: aggregatedDetails(subs)}
		for _, state := range allExecutionStates {
			tm.StatusCounts[state] = 0
		}
		var counts restapi.StateCounts
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
func aggregateState(c restapi.StateCounts, n int) restapi.ExecutionState {
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
	case c.Finished > 0 && c.Finished == n:
		return restapi.TaskFinished
	case c.Finished > 0:
		return restapi.TaskRunning
	case c.Deploying > 0:
		return restapi.TaskDeploying
	case c.Scheduled > 0:
		return restapi.TaskScheduled
	}
	return restapi.TaskCreated
}

func (s *Server) getVertexAccumulators(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, restapi.VertexAccumulators{ID: v.ID, UserAccumulators: []restapi.UserAccumulator{}})
}

func (s *Server) getSubtasksAccumulators(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	out := restapi.SubtasksAccumulators{ID: v.ID, Parallelism: v.Parallelism, Subtasks: []restapi.SubtaskAccumulators{}}
	for _, st := range subtasksOf(v) {
		out.Subtasks = append(out.Subtasks, restapi.SubtaskAccumulators{Subtask: st.Subtask, Attempt: st.Attempt, Endpoint: st.Endpoint,
			UserAccumulators: []restapi.UserAccumulator{}})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getJobAccumulators(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.jobDetails(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, restapi.JobAccumulators{JobAccumulators: []restapi.UserAccumulator{}, UserTaskAccumulators: []restapi.UserAccumulator{},
		SerializedUserAccumulators: map[string]string{}})
}
