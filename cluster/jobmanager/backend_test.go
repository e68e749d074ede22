package jobmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
)

// restAPI is the real REST server serving a Backend on loopback.
type restAPI struct {
	t    *testing.T
	base string
}

func serveREST(t *testing.T, b Backend) restAPI {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rest.Serve(rest.Config{}, b, ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return restAPI{t: t, base: "http://" + ln.Addr().String()}
}

// get GETs path and decodes its JSON answer (numbers kept as written).
func (r restAPI) get(path string) any {
	r.t.Helper()
	return r.do(http.MethodGet, path, "")
}

// post POSTs the JSON body to path and decodes the answer.
func (r restAPI) post(path, body string) any {
	r.t.Helper()
	return r.do(http.MethodPost, path, body)
}

func (r restAPI) do(method, path, body string) any {
	r.t.Helper()
	req, err := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		r.t.Fatalf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		r.t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return doc
}

// member returns the JSON of the member of doc at path ("a/0/b": member b
// of the first element of member a), or "(absent)".
func member(doc any, path string) string {
	cur := doc
	for _, p := range strings.Split(path, "/") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return "(absent)"
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return "(absent)"
			}
			cur = c[i]
		default:
			return "(absent)"
		}
	}
	b, _ := json.Marshal(cur)
	return string(b)
}

// checkMembers compares members of doc with want (path to JSON).
func checkMembers(t *testing.T, doc any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		if got := member(doc, path); got != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
}

// fakeRM stands in for the ResourceManager's snapshot of its TaskManagers.
type fakeRM []resourcemanager.TaskManagerInfo

func (f fakeRM) TaskManagers(context.Context) ([]resourcemanager.TaskManagerInfo, error) {
	return f, nil
}

// GET /taskmanagers shows what the ResourceManager knows of each
// TaskManager in Flink's form: the time of its last heartbeat (epoch ms,
// despite Flink's name), its data port and its hardware.
func TestBackendTaskManagers(t *testing.T) {
	d, err := NewDispatcher(Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	slot := resourcemanager.Resources{CPUCores: 1, MemoryBytes: 512 << 20}
	tms := fakeRM{
		{ID: "tm-1", Address: "127.0.0.1:40001", SlotsTotal: 2, SlotsFree: 1, SlotResources: slot,
			Resources: resourcemanager.Resources{CPUCores: 2, MemoryBytes: 1 << 30}, DataPort: 6121,
			Hardware:      resourcemanager.Hardware{CPUCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 9 << 30},
			LastHeartbeat: time.UnixMilli(1_700_000_000_123)},
		{ID: "tm-2", Address: "127.0.0.1:40002", SlotsTotal: 1, SlotsFree: 0, SlotResources: slot, Resources: slot,
			LastHeartbeat: time.UnixMilli(1_700_000_001_000)},
	}
	doc := serveREST(t, Backend{D: d, TMs: rmLister{tms}}).get("/taskmanagers")
	for _, tc := range []struct {
		name string
		want map[string]string
	}{
		{"a TaskManager with a data port", map[string]string{
			"taskmanagers/0/id": `"tm-1"`, "taskmanagers/0/path": `"127.0.0.1:40001"`,
			"taskmanagers/0/dataPort": "6121", "taskmanagers/0/jmxPort": "-1",
			"taskmanagers/0/timeSinceLastHeartbeat": "1700000000123",
			"taskmanagers/0/slotsNumber":            "2", "taskmanagers/0/freeSlots": "1",
			"taskmanagers/0/totalResource/cpuCores": "2", "taskmanagers/0/totalResource/taskHeapMemory": "1024",
			"taskmanagers/0/freeResource/cpuCores": "1", "taskmanagers/0/freeResource/taskHeapMemory": "512",
			"taskmanagers/0/hardware/cpuCores": "8", "taskmanagers/0/hardware/physicalMemory": "17179869184",
			"taskmanagers/0/hardware/freeMemory": "9663676416", "taskmanagers/0/hardware/managedMemory": "0",
		}},
		{"a TaskManager whose workers take free data ports, that reported no hardware", map[string]string{
			"taskmanagers/1/id": `"tm-2"`, "taskmanagers/1/dataPort": "-1",
			"taskmanagers/1/timeSinceLastHeartbeat": "1700000001000",
			"taskmanagers/1/hardware":               `{"cpuCores":0,"freeMemory":0,"managedMemory":0,"physicalMemory":0}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkMembers(t, doc, tc.want) })
	}
}

// eventually polls cond until it holds, failing after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, 30*time.Second, what, cond)
}

// membersEventually polls GET path until its members are want.
func membersEventually(t *testing.T, api restAPI, path string, want map[string]string) any {
	t.Helper()
	var doc any
	if err := testwait.Poll(30*time.Second, func() bool {
		doc = api.get(path)
		ok := true
		for p, w := range want {
			ok = ok && member(doc, p) == w
		}
		return ok
	}); err != nil {
		checkMembers(t, doc, want)
		t.Fatalf("GET %s did not answer the members above within 30 s (%v)", path, err)
	}
	return doc
}

// The REST answers of the real Backend as a job runs on a cluster whose
// TaskManagers and workers the test plays (fakeCluster): the job's
// vertices follow their subtasks' states, the workers' byte counts are
// reported, a checkpoint shows in progress then completed, restores are
// counted with the latest one, a task's failure, a worker's loss and a
// TaskManager's loss are in the exception history with their type,
// subtask and TaskManager, and
// a savepoint with cancel-job cancels the job.
func TestBackendFollowsAJobOnACluster(t *testing.T) {
	const t0 = 1_700_000_000_000
	fc := newFakeCluster(t, t0)
	api := serveREST(t, Backend{D: fc.d})
	ckptDir, spDir := t.TempDir(), t.TempDir()
	id := fc.submit(ckptDir)
	job, ckpts, excs := "/jobs/"+id, "/jobs/"+id+"/checkpoints", "/jobs/"+id+"/exceptions"
	src, sink := checkpoint.TaskID{Vertex: 0}, checkpoint.TaskID{Vertex: 1}
	at := func(t checkpoint.TaskID, k int) checkpoint.TaskID { t.Subtask = k; return t }

	type step struct {
		name string
		do   func(t *testing.T)
		// path → members of its answer (path to JSON), polled until they
		// hold.
		want map[string]map[string]string
	}
	running := func(attempt int, deployed int64) map[string]string {
		return map[string]string{
			"state":                 `"RUNNING"`,
			"vertices/0/name":       `"numbers"`,
			"vertices/0/status":     `"RUNNING"`,
			"vertices/0/tasks":      `{"CANCELED":0,"CANCELING":0,"CREATED":0,"DEPLOYING":0,"FAILED":0,"FINISHED":0,"INITIALIZING":0,"RECONCILING":0,"RUNNING":2,"SCHEDULED":0}`,
			"vertices/0/start-time": fmt.Sprint(deployed), "vertices/0/end-time": "-1",
			"vertices/1/name": `"print"`, "vertices/1/status": `"RUNNING"`, "vertices/1/tasks/RUNNING": "2",
			"vertices/1/start-time": fmt.Sprint(deployed), "vertices/1/end-time": "-1",
			"status-counts/RUNNING": "4", "status-counts/CANCELED": "0",
		}
	}
	for _, s := range []step{
		{name: "running", do: func(t *testing.T) {
			fc.worker(0, "tm-1")
			fc.worker(0, "tm-2")
		}, want: map[string]map[string]string{
			job:              running(0, t0),
			"/jobs/overview": {"jobs/0/tasks/running": "4", "jobs/0/tasks/total": "4"},
			ckpts:            {"counts": `{"completed":0,"failed":0,"in_progress":0,"restored":0,"total":0}`, "latest/restored": "null"},
		}},
		{name: "the workers report bytes", do: func(t *testing.T) {
			for k, tm := range taskManagerIDs {
				fc.worker(0, tm).send(&clusterpb.WorkerMessage{Msg: &clusterpb.WorkerMessage_Metrics{Metrics: &clusterpb.MetricsReport{Subtasks: []*clusterpb.SubtaskMetrics{
					{Task: key(at(src, k)), RecordsOut: 100, BytesOut: 4000 + int64(k)},
					{Task: key(at(sink, k)), RecordsIn: 100, BytesIn: 3000 + int64(k)},
				}}}})
			}
		}, want: map[string]map[string]string{job: {
			"vertices/0/metrics/write-bytes": "8001", "vertices/0/metrics/write-bytes-complete": "true",
			"vertices/0/metrics/read-bytes": "0", "vertices/0/metrics/write-records": "200",
			"vertices/1/metrics/read-bytes": "6001", "vertices/1/metrics/read-bytes-complete": "true",
			"vertices/1/metrics/write-bytes": "0", "vertices/1/metrics/read-records": "200",
		},
			// The dashboard's view of a vertex: each subtask with its
			// state, TaskManager and counters.
			job + "/vertices/" + restapi.DeriveID(id, "1"): {
				"name": `"print"`, "subtasks/0/subtask": "0", "subtasks/1/subtask": "1",
				"subtasks/1/status": `"RUNNING"`, "subtasks/1/taskmanager-id": fmt.Sprintf("%q", taskManagerIDs[1]),
				"subtasks/1/metrics/read-bytes": "3001", "subtasks/1/metrics/read-records": "100",
				"subtasks/1/start-time": fmt.Sprint(t0), "subtasks/1/end-time": "-1",
			},
			job + "/vertices/" + restapi.DeriveID(id, "1") + "/subtasks/metrics?get=numBytesIn&agg=sum": {"0/id": `"numBytesIn"`, "0/sum": "6001"},
			job + "/config": {"execution-config/restart-strategy": `"fixed-delay"`, "execution-config/user-config": "{}", "name": `"numbers"`},
		}},
		{name: "a checkpoint in progress", do: func(t *testing.T) {
			fc.hold()
			go fc.d.Checkpoint(context.Background(), id, checkpoint.Checkpoint)
		}, want: map[string]map[string]string{ckpts: {
			"counts":       `{"completed":0,"failed":0,"in_progress":1,"restored":0,"total":1}`,
			"history/0/id": "1", "history/0/status": `"IN_PROGRESS"`, "history/0/className": `"in_progress"`,
			"history/0/trigger_timestamp": fmt.Sprint(t0), "history/0/checkpoint_type": `"CHECKPOINT"`,
		}}},
		{name: "the checkpoint completed", do: func(t *testing.T) { fc.release() }, want: map[string]map[string]string{ckpts: {
			"counts":              `{"completed":1,"failed":0,"in_progress":0,"restored":0,"total":1}`,
			"latest/completed/id": "1", "latest/completed/external_path": fmt.Sprintf("%q", "file:"+filepath.Join(ckptDir, id, "chk-1")),
			"latest/restored": "null", "history/0/status": `"COMPLETED"`,
		}}},
		{name: "a task fails and the job restarts from the checkpoint", do: func(t *testing.T) {
			fc.clock.Advance(1000)
			fc.worker(0, "tm-2").taskEnded(at(sink, 1), "*task.OperatorError", "operator print (subtask 1): disk full")
			fc.worker(1, "tm-1")
			fc.worker(1, "tm-2")
		}, want: map[string]map[string]string{
			job: running(1, t0+1000),
			excs: {
				"exceptionHistory/entries/0/exceptionName":        `"*task.OperatorError"`,
				"exceptionHistory/entries/0/stacktrace":           fmt.Sprintf("%q", "operator print (subtask 1): disk full (in worker "+id+"-0-tm-2 (TaskManager tm-2, pid 0))"),
				"exceptionHistory/entries/0/timestamp":            fmt.Sprint(t0 + 1000),
				"exceptionHistory/entries/0/taskName":             `"print (2/2)"`,
				"exceptionHistory/entries/0/endpoint":             fmt.Sprintf("%q", fc.addr),
				"exceptionHistory/entries/0/taskManagerId":        `"tm-2"`,
				"exceptionHistory/entries/0/concurrentExceptions": "[]",
			},
			ckpts: {
				"counts/restored": "1", "latest/restored/id": "1", "latest/restored/is_savepoint": "false",
				"latest/restored/restore_timestamp": fmt.Sprint(t0 + 1000),
				"latest/restored/external_path":     fmt.Sprintf("%q", "file:"+filepath.Join(ckptDir, id, "chk-1")),
			},
		}},
		{name: "a worker is lost", do: func(t *testing.T) {
			fc.clock.Advance(1000)
			fc.worker(1, "tm-1").kill()
			fc.worker(2, "tm-1")
			fc.worker(2, "tm-2")
		}, want: map[string]map[string]string{
			job: running(2, t0+2000),
			excs: {
				"exceptionHistory/entries/0/exceptionName":                        `"*jobmanager.WorkerLostError"`,
				"exceptionHistory/entries/0/taskName":                             `"numbers (1/2)"`,
				"exceptionHistory/entries/0/taskManagerId":                        `"tm-1"`,
				"exceptionHistory/entries/0/endpoint":                             fmt.Sprintf("%q", fc.addr),
				"exceptionHistory/entries/0/timestamp":                            fmt.Sprint(t0 + 2000),
				"exceptionHistory/entries/0/concurrentExceptions/0/exceptionName": `"*jobmanager.WorkerLostError"`,
				"exceptionHistory/entries/0/concurrentExceptions/0/taskName":      `"print (1/2)"`,
				"exceptionHistory/entries/0/concurrentExceptions/0/taskManagerId": `"tm-1"`,
				"exceptionHistory/entries/0/concurrentExceptions/1":               "(absent)",
				"exceptionHistory/entries/1/taskName":                             `"print (2/2)"`,
			},
			ckpts: {"counts/restored": "2", "latest/restored/id": "1", "latest/restored/restore_timestamp": fmt.Sprint(t0 + 2000)},
		}},
		{name: "a TaskManager is lost", do: func(t *testing.T) {
			fc.clock.Advance(1000)
			fc.d.TaskManagerLost(resourcemanager.LostTaskManager{ID: "tm-2", Reason: "no heartbeat for 50s (heartbeat.timeout)", HeartbeatTimeout: true})
			fc.worker(3, "tm-1")
			fc.worker(3, "tm-2")
		}, want: map[string]map[string]string{
			job: running(3, t0+3000),
			excs: {
				"exceptionHistory/entries/0/exceptionName":                        `"*jobmanager.TaskManagerLostError"`,
				"exceptionHistory/entries/0/stacktrace":                           `"jobmanager: TaskManager tm-2 lost: heartbeat timeout: no heartbeat for 50s (heartbeat.timeout)"`,
				"exceptionHistory/entries/0/taskName":                             `"numbers (2/2)"`,
				"exceptionHistory/entries/0/taskManagerId":                        `"tm-2"`,
				"exceptionHistory/entries/0/endpoint":                             fmt.Sprintf("%q", fc.addr),
				"exceptionHistory/entries/0/timestamp":                            fmt.Sprint(t0 + 3000),
				"exceptionHistory/entries/0/concurrentExceptions/0/exceptionName": `"*jobmanager.TaskManagerLostError"`,
				"exceptionHistory/entries/0/concurrentExceptions/0/taskName":      `"print (2/2)"`,
				"exceptionHistory/entries/0/concurrentExceptions/0/taskManagerId": `"tm-2"`,
				"exceptionHistory/entries/0/concurrentExceptions/1":               "(absent)",
				"exceptionHistory/entries/1/exceptionName":                        `"*jobmanager.WorkerLostError"`,
			},
			ckpts: {"counts/restored": "3", "latest/restored/id": "1", "latest/restored/restore_timestamp": fmt.Sprint(t0 + 3000)},
		}},
	} {
		t.Run(s.name, func(t *testing.T) {
			s.do(t)
			for path, want := range s.want {
				membersEventually(t, api, path, want)
			}
		})
		if t.Failed() {
			return
		}
	}

	// A savepoint with cancel-job (Flink's cancel-with-savepoint) cancels
	// the job once the savepoint is taken: it ends CANCELED, not FINISHED
	// as a stop would.
	fc.clock.Advance(1000)
	trigger := member(api.post("/jobs/"+id+"/savepoints", fmt.Sprintf(`{"target-directory": %q, "cancel-job": true}`, spDir)), "request-id")
	var location string
	eventually(t, "the savepoint", func() bool {
		st := api.get("/jobs/" + id + "/savepoints/" + strings.Trim(trigger, `"`))
		location = member(st, "operation/location")
		return member(st, "status/id") == `"COMPLETED"`
	})
	if !strings.HasPrefix(location, `"file:`+spDir) { // a local path as Flink reports one
		t.Fatalf("the savepoint is at %s, not in %s", location, spDir)
	}
	membersEventually(t, api, job, map[string]string{
		"state":                     `"CANCELED"`,
		"vertices/0/status":         `"CANCELED"`,
		"vertices/0/tasks/CANCELED": "2", "vertices/1/status": `"CANCELED"`, "vertices/1/tasks/CANCELED": "2",
		"vertices/0/start-time": fmt.Sprint(t0 + 3000), "vertices/0/end-time": fmt.Sprint(t0 + 4000),
		"vertices/0/duration": "1000", "status-counts/CANCELED": "4",
	})
	checkMembers(t, api.get("/jobs/"+id+"/execution-result"), map[string]string{"job-execution-result/application-status": `"CANCELED"`})
	checkMembers(t, api.get(ckpts), map[string]string{
		"latest/savepoint/checkpoint_type": `"SAVEPOINT"`, "latest/savepoint/is_savepoint": "true",
		"latest/savepoint/external_path": location, "counts/in_progress": "0",
	})
}

// A vertex's state aggregates its subtasks' as Flink's does.
func TestVertexState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts restapi.StateCounts
		want   restapi.ExecutionState
	}{
		{"scheduled", restapi.StateCounts{Scheduled: 2}, restapi.TaskCreated},
		{"deploying", restapi.StateCounts{Scheduled: 1, Deploying: 1}, restapi.TaskCreated},
		{"running", restapi.StateCounts{Running: 2}, restapi.TaskRunning},
		{"one finished, one running", restapi.StateCounts{Running: 1, Finished: 1}, restapi.TaskRunning},
		{"one finished, one deploying", restapi.StateCounts{Deploying: 1, Finished: 1}, restapi.TaskRunning},
		{"all finished", restapi.StateCounts{Finished: 2}, restapi.TaskFinished},
		{"canceling", restapi.StateCounts{Running: 1, Canceling: 1}, restapi.TaskCanceling},
		{"canceled and canceling", restapi.StateCounts{Canceled: 1, Canceling: 1}, restapi.TaskCanceling},
		{"canceled", restapi.StateCounts{Canceled: 1, Finished: 1}, restapi.TaskCanceled},
		{"a failure shows first", restapi.StateCounts{Failed: 1, Canceling: 1}, restapi.TaskFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vertexState(tc.counts, tc.counts.Total()); got != tc.want {
				t.Errorf("vertexState(%+v) = %s, want %s", tc.counts, got, tc.want)
			}
		})
	}
}

// A subtask's state moves forward with the times given and stays once it
// has ended; its deployment time is kept.
func TestTaskStates(t *testing.T) {
	a, b := checkpoint.TaskID{Vertex: 0}, checkpoint.TaskID{Vertex: 1}
	ts := newTaskStates([]checkpoint.TaskID{a, b}, 100)
	for _, step := range []struct {
		name string
		do   func()
		want []TaskState
	}{
		{"scheduled", func() {}, []TaskState{{Task: a, State: restapi.TaskScheduled, Since: 100}, {Task: b, State: restapi.TaskScheduled, Since: 100}}},
		{"deploying", func() {
			ts.place(a, "tm-a", "h:1")
			ts.set(a, restapi.TaskDeploying, 110)
			ts.place(b, "tm-b", "h:2")
			ts.set(b, restapi.TaskDeploying, 120)
		},
			[]TaskState{{Task: a, State: restapi.TaskDeploying, Deploying: 110, Since: 110, TaskManagerID: "tm-a", Endpoint: "h:1"},
				{Task: b, State: restapi.TaskDeploying, Deploying: 120, Since: 120, TaskManagerID: "tm-b", Endpoint: "h:2"}}},
		{"running", func() { ts.setAll(restapi.TaskRunning, 130) },
			[]TaskState{{Task: a, State: restapi.TaskRunning, Deploying: 110, Since: 130, TaskManagerID: "tm-a", Endpoint: "h:1"},
				{Task: b, State: restapi.TaskRunning, Deploying: 120, Since: 130, TaskManagerID: "tm-b", Endpoint: "h:2"}}},
		{"one failed", func() { ts.set(b, restapi.TaskFailed, 140) },
			[]TaskState{{Task: a, State: restapi.TaskRunning, Deploying: 110, Since: 130, TaskManagerID: "tm-a", Endpoint: "h:1"},
				{Task: b, State: restapi.TaskFailed, Deploying: 120, Since: 140, TaskManagerID: "tm-b", Endpoint: "h:2"}}},
		{"the others are cancelled", func() { ts.setAll(restapi.TaskCanceling, 150); ts.set(a, restapi.TaskCanceled, 160) },
			[]TaskState{{Task: a, State: restapi.TaskCanceled, Deploying: 110, Since: 160, TaskManagerID: "tm-a", Endpoint: "h:1"},
				{Task: b, State: restapi.TaskFailed, Deploying: 120, Since: 140, TaskManagerID: "tm-b", Endpoint: "h:2"}}},
		{"ended states stay", func() { ts.setAll(restapi.TaskRunning, 170); ts.set(b, restapi.TaskFinished, 180) },
			[]TaskState{{Task: a, State: restapi.TaskCanceled, Deploying: 110, Since: 160, TaskManagerID: "tm-a", Endpoint: "h:1"},
				{Task: b, State: restapi.TaskFailed, Deploying: 120, Since: 140, TaskManagerID: "tm-b", Endpoint: "h:2"}}},
	} {
		step.do()
		if got := ts.list(); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: %+v, want %+v", step.name, got, step.want)
		}
	}
}
