package jobmanager

import (
	"sync"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
)

// TaskState is the execution state of one subtask of an attempt as its
// JobMaster sees it (Flink's ExecutionState): SCHEDULED while the attempt
// waits for slots, DEPLOYING once its worker is being started, RUNNING
// once the attempt started, CANCELING once the attempt is being cancelled,
// and FINISHED, CANCELED or FAILED as the worker reported its end.
type TaskState struct {
	Task  checkpoint.TaskID
	State restapi.ExecutionState
	// Deploying is when its deployment began (epoch ms); 0 if it has not.
	Deploying int64
	// Since is when it entered State (epoch ms).
	Since int64
	// TaskManagerID and Endpoint (its RPC address, host:port) name the
	// TaskManager it was deployed to; "" before its deployment.
	TaskManagerID, Endpoint string
}

// taskStates follows the states of an attempt's subtasks. Its methods take
// the time; a state ended (FINISHED, CANCELED, FAILED) does not change.
// It is safe for concurrent use.
type taskStates struct {
	mu    sync.Mutex
	order []checkpoint.TaskID
	by    map[checkpoint.TaskID]*TaskState
}

func newTaskStates(tasks []checkpoint.TaskID, now int64) *taskStates {
	ts := &taskStates{order: tasks, by: make(map[checkpoint.TaskID]*TaskState, len(tasks))}
	for _, t := range tasks {
		ts.by[t] = &TaskState{Task: t, State: restapi.TaskScheduled, Since: now}
	}
	return ts
}

func terminal(s restapi.ExecutionState) bool {
	return s == restapi.TaskFinished || s == restapi.TaskCanceled || s == restapi.TaskFailed
}

// set moves task t to state s, unless it has ended.
func (ts *taskStates) set(t checkpoint.TaskID, s restapi.ExecutionState, now int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.setLocked(t, s, now)
}

// REQUIRES: ts.mu held.
func (ts *taskStates) setLocked(t checkpoint.TaskID, s restapi.ExecutionState, now int64) {
	cur := ts.by[t]
	if cur == nil || terminal(cur.State) || cur.State == s {
		return
	}
	cur.State, cur.Since = s, now
	if s == restapi.TaskDeploying && cur.Deploying == 0 {
		cur.Deploying = now
	}
}

// place records the TaskManager that task t is deployed to.
func (ts *taskStates) place(t checkpoint.TaskID, tm, endpoint string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if cur := ts.by[t]; cur != nil {
		cur.TaskManagerID, cur.Endpoint = tm, endpoint
	}
}

// setAll moves every task that has not ended to state s.
func (ts *taskStates) setAll(s restapi.ExecutionState, now int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.order {
		ts.setLocked(t, s, now)
	}
}

// list returns the states in task order.
func (ts *taskStates) list() []TaskState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]TaskState, len(ts.order))
	for i, t := range ts.order {
		out[i] = *ts.by[t]
	}
	return out
}
