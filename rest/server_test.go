package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/golden")

// Job IDs of the fixture.
const (
	jobRunning  = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	jobFinished = "1111aaaa2222bbbb3333cccc4444dddd"
	jobToCancel = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
	jobUnknown  = "ffffffffffffffffffffffffffffffff"
	trigger1    = "0123456789abcdef0123456789abcdef"
	vertexA     = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	vertexB     = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// start is the fixture's clock at the beginning, epoch ms.
const start = 1_700_000_000_000

// testLogger routes the server's log to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fixture is a fake cluster with a running job, a finished one with
// failures and checkpoints, a job to cancel and two TaskManagers.
func fixture(t testing.TB) (*resttest.Backend, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(start)
	b := resttest.New()
	b.Clock = clk
	var running restapi.StateCounts
	running.Add(restapi.TaskRunning, 3)
	b.AddJob(resttest.Job{
		Overview: restapi.JobOverview{ID: jobRunning, Name: "word count", State: restapi.JobRunning, StartTime: start - 60_000,
			EndTime: -1, Duration: 60_000, LastModification: start - 59_000, Tasks: running.Overview()},
		Details: restapi.JobDetails{
			ID: jobRunning, Name: "word count", IsStoppable: false, State: restapi.JobRunning, JobType: "STREAMING",
			StartTime: start - 60_000, EndTime: -1, Duration: 60_000, MaxParallelism: -1,
			Timestamps: map[restapi.JobState]int64{restapi.JobInitializing: start - 60_000, restapi.JobCreated: start - 60_000, restapi.JobRunning: start - 59_000},
			Vertices: []restapi.Vertex{
				{ID: vertexA, Name: "Source: lines -> Flat Map", MaxParallelism: 128, Parallelism: 1, Status: restapi.TaskRunning,
					StartTime: start - 59_000, EndTime: -1, Duration: 59_000, Tasks: restapi.StateCounts{Running: 1},
					Metrics: restapi.IOMetrics{WriteBytes: 4096, WriteBytesComplete: true, ReadRecordsComplete: true, WriteRecords: 100, WriteRecordsComplete: true, ReadBytesComplete: true,
						AccumulatedBusyTime: 1500, AccumulatedIdleTime: 200, AccumulatedBackpressuredTime: 30}},
				{ID: vertexB, Name: "Count -> Sink: print", MaxParallelism: 128, Parallelism: 2, Status: restapi.TaskRunning,
					StartTime: start - 59_000, EndTime: -1, Duration: 59_000, Tasks: restapi.StateCounts{Running: 2},
					Metrics: restapi.IOMetrics{ReadBytes: 4096, ReadBytesComplete: true, ReadRecords: 100, ReadRecordsComplete: true, WriteRecordsComplete: true, WriteBytesComplete: true}},
			},
			StatusCounts: running,
			Plan: restapi.JobPlan{JobID: jobRunning, Name: "word count", Type: "STREAMING", Nodes: []restapi.PlanNode{
				{ID: vertexA, Parallelism: 1, Description: "Source: lines -> Flat Map", OptimizerProperties: map[string]any{}},
				{ID: vertexB, Parallelism: 2, Description: "Count -> Sink: print", OptimizerProperties: map[string]any{},
					Inputs: []restapi.PlanInput{{Num: 0, ID: vertexA, ShipStrategy: "HASH", Exchange: "pipelined_bounded"}}},
			}},
		},
	})
	var finished restapi.StateCounts
	finished.Add(restapi.TaskFinished, 2)
	b.AddJob(resttest.Job{
		Overview: restapi.JobOverview{ID: jobFinished, Name: "fraud detection", State: restapi.JobFinished, StartTime: start - 600_000,
			EndTime: start - 300_000, Duration: 300_000, LastModification: start - 300_000, Tasks: finished.Overview()},
		Details: restapi.JobDetails{ID: jobFinished, Name: "fraud detection", State: restapi.JobFinished, JobType: "STREAMING",
			StartTime: start - 600_000, EndTime: start - 300_000, Duration: 300_000, MaxParallelism: 128,
			Timestamps: map[restapi.JobState]int64{restapi.JobRunning: start - 599_000, restapi.JobFinished: start - 300_000}},
		Exceptions: []restapi.RootExceptionInfo{
			{ExceptionInfo: restapi.ExceptionInfo{ExceptionName: "*task.UserPanic", Stacktrace: "operator \"score\": panic: index out of range",
				Timestamp: start - 400_000, TaskName: "score (2/2)", Endpoint: "127.0.0.1:40001", TaskManagerID: "tm-1"},
				ConcurrentExceptions: []restapi.ExceptionInfo{{ExceptionName: "*errors.errorString", Stacktrace: "cancelled", Timestamp: start - 400_000, TaskName: "score (1/2)"}}},
			{ExceptionInfo: restapi.ExceptionInfo{ExceptionName: "*resourcemanager.LostError", Stacktrace: "TaskManager tm-2 lost", Timestamp: start - 500_000}},
		},
		Checkpoints: rest.NewCheckpointingStatistics(
			restapi.CheckpointCounts{Restored: 1, Total: 4, InProgress: 0, Completed: 3, Failed: 1},
			[]restapi.CheckpointStatistics{
				{ID: 4, Status: restapi.CheckpointCompleted, IsSavepoint: true, SavepointFormat: "CANONICAL", CheckpointType: restapi.TypeSyncSavepoint,
					TriggerTimestamp: start - 301_000, LatestAckTimestamp: start - 300_500, CheckpointedSize: 3000, StateSize: 3000, EndToEndDuration: 500,
					NumSubtasks: 2, NumAcknowledgedSubtasks: 2, ExternalPath: "file:/sp/savepoint-1111aa-1"},
				{ID: 3, Status: restapi.CheckpointFailed, CheckpointType: restapi.TypeCheckpoint, TriggerTimestamp: start - 350_000,
					NumSubtasks: 2, NumAcknowledgedSubtasks: 1, FailureTimestamp: start - 340_000, FailureMessage: "checkpoint expired before completing"},
				{ID: 2, Status: restapi.CheckpointCompleted, CheckpointType: restapi.TypeCheckpoint, TriggerTimestamp: start - 400_000,
					LatestAckTimestamp: start - 399_800, CheckpointedSize: 1000, StateSize: 2000, EndToEndDuration: 200,
					NumSubtasks: 2, NumAcknowledgedSubtasks: 2, ExternalPath: "file:/cp/job/chk-2"},
				{ID: 1, Status: restapi.CheckpointCompleted, CheckpointType: restapi.TypeCheckpoint, TriggerTimestamp: start - 450_000,
					LatestAckTimestamp: start - 449_900, CheckpointedSize: 1500, StateSize: 1500, EndToEndDuration: 100,
					NumSubtasks: 2, NumAcknowledgedSubtasks: 2, ExternalPath: "file:/cp/job/chk-1", Discarded: ptrTrue()},
			},
			&restapi.RestoredCheckpoint{ID: 1, RestoreTimestamp: start - 420_000, ExternalPath: "file:/cp/job/chk-1"}),
	})
	b.Finish(jobFinished, restapi.JobResult{ApplicationStatus: restapi.AppSucceeded, NetRuntime: 300_000,
		AccumulatorResults: restapi.Accumulators{"restarts": int64(1)}})
	b.AddJob(resttest.Job{
		Overview: restapi.JobOverview{ID: jobToCancel, Name: "to cancel", State: restapi.JobRunning, StartTime: start - 1000, EndTime: -1},
		Details:  restapi.JobDetails{ID: jobToCancel, Name: "to cancel", State: restapi.JobRunning, StartTime: start - 1000, EndTime: -1},
	})
	b.SetTaskManagers([]restapi.TaskManagerInfo{
		{ID: "tm-1", Path: "127.0.0.1:40001", DataPort: 40101, JMXPort: -1, TimeSinceLastHeartbeat: start - 1000,
			SlotsNumber: 2, FreeSlots: 0, TotalResource: restapi.ResourceProfile{CPUCores: 2, TaskHeapMemory: 512},
			Hardware: restapi.Hardware{CPUCores: 2, PhysicalMemory: 8 << 30}},
		{ID: "tm-2", Path: "127.0.0.1:40002", DataPort: 40102, JMXPort: -1, TimeSinceLastHeartbeat: start - 2000,
			SlotsNumber: 2, FreeSlots: 1, TotalResource: restapi.ResourceProfile{CPUCores: 2, TaskHeapMemory: 512},
			FreeResource: restapi.ResourceProfile{CPUCores: 1, TaskHeapMemory: 256}, Hardware: restapi.Hardware{CPUCores: 2, PhysicalMemory: 8 << 30}},
	})
	return b, clk
}

// serve starts a server on loopback for b.
func serve(t *testing.T, b rest.Backend, clk clock.Clock, mod func(*rest.Config)) *rest.Server {
	t.Helper()
	cluster := conf.New().Set("parallelism.default", "4").Set("security.ssl.rest.keystore-password", "hunter2")
	cfg := rest.Config{BindAddress: "127.0.0.1", Port: 0, Version: "0.1.0", Revision: "abc123", Cluster: cluster,
		UploadDir: t.TempDir(), Clock: clk, Log: testLogger(t)}
	if mod != nil {
		mod(&cfg)
	}
	s, err := rest.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
	return s
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t testing.TB, method, url, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// golden compares got with testdata/golden/<name>.txt (or rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("answer differs from %s (run with -rewrite and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// render is a golden file's form of an answer: the status line and the
// body indented.
func render(r response) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d %s\n", r.status, http.StatusText(r.status))
	if allow := r.header.Get("Allow"); allow != "" {
		fmt.Fprintf(&b, "Allow: %s\n", allow)
	}
	if err := json.Indent(&b, r.body, "", "  "); err != nil {
		fmt.Fprintf(&b, "NOT JSON: %q", r.body)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// TestEndpoints checks the status and exact body of every endpoint's
// answers, including malformed requests, against golden files.
func TestEndpoints(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, nil)
	jsonCT := "application/json"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"config", "GET", "/config", "", 200},
		{"overview", "GET", "/overview", "", 200},
		{"jobmanager-config", "GET", "/jobmanager/config", "", 200},
		{"taskmanagers", "GET", "/taskmanagers", "", 200},
		{"jobs", "GET", "/jobs", "", 200},
		{"jobs-overview", "GET", "/jobs/overview", "", 200},
		{"job", "GET", "/jobs/" + jobRunning, "", 200},
		{"job", "GET", "/v1/jobs/" + jobRunning, "", 200}, // same answer under the version prefix
		{"job-finished", "GET", "/jobs/" + jobFinished, "", 200},
		{"job-plan", "GET", "/jobs/" + jobRunning + "/plan", "", 200},
		{"job-unknown", "GET", "/jobs/" + jobUnknown, "", 404},
		{"job-malformed-id", "GET", "/jobs/word-count", "", 400},
		{"job", "GET", "/jobs/" + strings.ToUpper(jobRunning), "", 200}, // IDs are read in either case
		{"exceptions", "GET", "/jobs/" + jobFinished + "/exceptions", "", 200},
		{"exceptions-max1", "GET", "/jobs/" + jobFinished + "/exceptions?maxExceptions=1", "", 200},
		{"exceptions-none", "GET", "/jobs/" + jobRunning + "/exceptions", "", 200},
		{"exceptions-max-negative", "GET", "/jobs/" + jobFinished + "/exceptions?maxExceptions=-1", "", 400},
		{"exceptions-max-word", "GET", "/jobs/" + jobFinished + "/exceptions?maxExceptions=all", "", 400},
		{"exceptions-unknown", "GET", "/jobs/" + jobUnknown + "/exceptions", "", 404},
		{"result-running", "GET", "/jobs/" + jobRunning + "/execution-result", "", 200},
		{"result-finished", "GET", "/jobs/" + jobFinished + "/execution-result", "", 200},
		{"result-unknown", "GET", "/jobs/" + jobUnknown + "/execution-result", "", 404},
		{"checkpoints", "GET", "/jobs/" + jobFinished + "/checkpoints", "", 200},
		{"checkpoints-disabled", "GET", "/jobs/" + jobRunning + "/checkpoints", "", 404},
		{"checkpoint-details", "GET", "/jobs/" + jobFinished + "/checkpoints/details/2", "", 200},
		{"checkpoint-details-unknown", "GET", "/jobs/" + jobFinished + "/checkpoints/details/99", "", 404},
		{"checkpoint-details-malformed", "GET", "/jobs/" + jobFinished + "/checkpoints/details/latest", "", 400},
		{"cancel-mode-stop", "PATCH", "/jobs/" + jobToCancel + "?mode=stop", "", 400},
		{"cancel-mode-bogus", "PATCH", "/jobs/" + jobToCancel + "?mode=kill", "", 400},
		{"cancel", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "", 202},
		{"cancel-again", "PATCH", "/jobs/" + jobToCancel, "", 409},
		{"cancel-unknown", "PATCH", "/jobs/" + jobUnknown + "?mode=cancel", "", 404},
		{"yarn-cancel-again", "GET", "/jobs/" + jobToCancel + "/yarn-cancel", "", 409}, // Flink's GET for YARN's proxy
		{"yarn-cancel-unknown", "GET", "/jobs/" + jobUnknown + "/yarn-cancel", "", 404},
		{"method-jobs", "DELETE", "/jobs", "", 405},
		{"method-job", "PUT", "/jobs/" + jobRunning, "", 405},
		{"method-savepoints", "GET", "/jobs/" + jobRunning + "/savepoints", "", 405},
		{"unknown-path", "GET", "/jobs/" + jobRunning + "/vertices/" + vertexA + "/nonesuch", "", 404},
		{"unknown-path-root", "GET", "/nothing-here", "", 404},
		{"savepoint", "POST", "/jobs/" + jobRunning + "/savepoints", `{"target-directory":"/sp","cancel-job":false,"triggerId":"` + trigger1 + `"}`, 202},
		{"savepoint-unknown-member", "POST", "/jobs/" + jobRunning + "/savepoints", `{"targetDirectory":"/sp"}`, 400},
		{"savepoint-malformed-json", "POST", "/jobs/" + jobRunning + "/savepoints", `{"target-directory":`, 400},
		{"savepoint-wrong-type", "POST", "/jobs/" + jobRunning + "/savepoints", `{"cancel-job":"yes"}`, 400},
		{"savepoint-trailing-data", "POST", "/jobs/" + jobRunning + "/savepoints", `{} {}`, 400},
		{"savepoint-bad-format", "POST", "/jobs/" + jobRunning + "/savepoints", `{"formatType":"ZIP"}`, 400},
		{"savepoint-native-format", "POST", "/jobs/" + jobRunning + "/savepoints", `{"formatType":"NATIVE"}`, 400},
		{"stop-native-format", "POST", "/jobs/" + jobRunning + "/stop", `{"formatType":"native"}`, 400},
		{"savepoint-bad-trigger", "POST", "/jobs/" + jobRunning + "/savepoints", `{"triggerId":"x"}`, 400},
		{"savepoint-unknown-job", "POST", "/jobs/" + jobUnknown + "/savepoints", `{"target-directory":"/sp"}`, 404},
		{"savepoint-finished-job", "POST", "/jobs/" + jobFinished + "/savepoints", `{"target-directory":"/sp"}`, 409},
		{"savepoint-status-unknown", "GET", "/jobs/" + jobRunning + "/savepoints/" + jobUnknown, "", 404},
		{"savepoint-status-malformed", "GET", "/jobs/" + jobRunning + "/savepoints/42", "", 400},
		{"stop-bad-body", "POST", "/jobs/" + jobRunning + "/stop", `{"drain":1}`, 400},
		{"stop-finished-job", "POST", "/jobs/" + jobFinished + "/stop", `{}`, 409},
		{"checkpoint-incremental", "POST", "/jobs/" + jobRunning + "/checkpoints", `{"checkpointType":"INCREMENTAL"}`, 400},
		{"checkpoint-bogus-type", "POST", "/jobs/" + jobRunning + "/checkpoints", `{"checkpointType":"SNAPSHOT"}`, 400},
		{"checkpoint-status-unknown", "GET", "/jobs/" + jobRunning + "/checkpoints/" + jobUnknown, "", 404},
		{"submit-not-multipart", "POST", "/jobs", `{"jobGraphFileName":"g.json"}`, 400},
	} {
		t.Run(tc.name+"/"+tc.method+" "+tc.path, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = jsonCT
			}
			r := do(t, tc.method, s.URL()+tc.path, ct, []byte(tc.body))
			if r.status != tc.status {
				t.Errorf("status %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if got := r.header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
				t.Errorf("Content-Type %q, want application/json", got)
			}
			golden(t, tc.name, render(r))
		})
	}
}

// flinkMembers are the members Flink's REST API documents for the answers
// (Flink 2.x's rest_v1_dispatcher.yml); every one must be present, so that a client
// written for Flink finds it.
var flinkMembers = map[string][]string{
	"/config":              {"refresh-interval", "timezone-name", "timezone-offset", "flink-version", "flink-revision", "features"},
	"/overview":            {"taskmanagers", "slots-total", "slots-available", "jobs-running", "jobs-finished", "jobs-cancelled", "jobs-failed", "flink-version", "flink-commit"},
	"/jobs":                {"jobs"},
	"/jobs[]":              {"id", "status"},
	"/jobs/overview[]":     {"jid", "name", "state", "start-time", "end-time", "duration", "last-modification", "tasks", "pending-operators"},
	"/jobs/overview.tasks": {"total", "created", "scheduled", "deploying", "running", "finished", "canceling", "canceled", "failed", "reconciling", "initializing"},
	"/jobs/:id":            {"jid", "name", "isStoppable", "state", "start-time", "end-time", "duration", "maxParallelism", "now", "timestamps", "vertices", "status-counts", "plan", "pending-operators"},
	"/jobs/:id.vertices[]": {"id", "name", "maxParallelism", "parallelism", "status", "start-time", "end-time", "duration", "tasks", "metrics", "slotSharingGroupId"},
	"/jobs/:id.vertices[].metrics": {"read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete", "read-records",
		"read-records-complete", "write-records", "write-records-complete", "accumulated-backpressured-time", "accumulated-idle-time", "accumulated-busy-time"},
	"/jobs/:id/exceptions":           {"exceptionHistory"}, // Flink 2.x: 1.x's root-exception, timestamp, all-exceptions and truncated are gone
	"/jobs/:id/exceptions.entries[]": {"exceptionName", "stacktrace", "timestamp", "taskName", "concurrentExceptions"},
	"/jobs/:id/checkpoints":          {"counts", "summary", "latest", "history"},
	"/jobs/:id/checkpoints.counts":   {"restored", "total", "in_progress", "completed", "failed"},
	"/jobs/:id/checkpoints.latest":   {"completed", "savepoint", "failed", "restored"},
	"/jobs/:id/checkpoints.summary":  {"state_size", "end_to_end_duration", "checkpointed_size"},
	"/jobs/:id/checkpoints.history[]": {"className", "id", "status", "is_savepoint", "trigger_timestamp", "latest_ack_timestamp", "state_size",
		"end_to_end_duration", "num_subtasks", "num_acknowledged_subtasks", "checkpoint_type", "tasks"},
	"/jobs/:id/execution-result":        {"status", "job-execution-result"},
	"/jobs/:id/execution-result.result": {"id", "application-status", "accumulator-results", "net-runtime"},
	"/taskmanagers[]":                   {"id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber", "freeSlots", "totalResource", "freeResource", "hardware", "memoryConfiguration", "assignedTasks"},
}

// TestFlinkMembers checks the answers against Flink's documented members,
// independently of the golden files.
func TestFlinkMembers(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, nil)
	get := func(path string) map[string]any {
		t.Helper()
		r := do(t, "GET", s.URL()+path, "", nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := func(v any) map[string]any { return v.([]any)[0].(map[string]any) }
	obj := func(v any) map[string]any { return v.(map[string]any) }
	overview := first(get("/jobs/overview")["jobs"])
	job := get("/jobs/" + jobRunning)
	vertex := first(job["vertices"])
	exc := get("/jobs/" + jobFinished + "/exceptions")
	cps := get("/jobs/" + jobFinished + "/checkpoints")
	res := get("/jobs/" + jobFinished + "/execution-result")
	answers := map[string]map[string]any{
		"/config":                           get("/config"),
		"/overview":                         get("/overview"),
		"/jobs":                             get("/jobs"),
		"/jobs[]":                           first(get("/jobs")["jobs"]),
		"/jobs/overview[]":                  overview,
		"/jobs/overview.tasks":              obj(overview["tasks"]),
		"/jobs/:id":                         job,
		"/jobs/:id.vertices[]":              vertex,
		"/jobs/:id.vertices[].metrics":      obj(vertex["metrics"]),
		"/jobs/:id/exceptions":              exc,
		"/jobs/:id/exceptions.entries[]":    first(obj(exc["exceptionHistory"])["entries"]),
		"/jobs/:id/checkpoints":             cps,
		"/jobs/:id/checkpoints.counts":      obj(cps["counts"]),
		"/jobs/:id/checkpoints.latest":      obj(cps["latest"]),
		"/jobs/:id/checkpoints.summary":     obj(cps["summary"]),
		"/jobs/:id/checkpoints.history[]":   first(cps["history"]),
		"/jobs/:id/execution-result":        res,
		"/jobs/:id/execution-result.result": obj(res["job-execution-result"]),
		"/taskmanagers[]":                   first(get("/taskmanagers")["taskmanagers"]),
	}
	for key, members := range flinkMembers {
		m, ok := answers[key]
		if !ok {
			t.Errorf("%s is not checked", key)
		}
		for _, member := range members {
			if _, ok := m[member]; !ok {
				t.Errorf("%s: member %q missing; have %v", key, member, slices.Sorted(mapsKeys(m)))
			}
		}
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestAsyncOperations follows savepoints, stops and checkpoints from their
// trigger through IN_PROGRESS to their outcome, and their expiry.
func TestAsyncOperations(t *testing.T) {
	b, clk := fixture(t)
	release := make(chan struct{})
	var calls atomic.Int32
	b.Savepoint = func(ctx context.Context, id string, req rest.SavepointRequest) (string, error) {
		calls.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if req.TargetDirectory == "/fail" {
			return "", fmt.Errorf("%w: writing the savepoint: disk full", errors.ErrUnsupported)
		}
		return req.TargetDirectory + "/savepoint-1", nil
	}
	s := serve(t, b, clk, func(c *rest.Config) { c.AsyncStoreDuration = time.Minute })
	url := s.URL() + "/jobs/" + jobRunning
	trigger := func(path, body string) string {
		t.Helper()
		r := do(t, "POST", url+path, "application/json", []byte(body))
		if r.status != 202 {
			t.Fatalf("POST %s: %d %s", path, r.status, r.body)
		}
		var tr restapi.TriggerResponse
		if err := json.Unmarshal(r.body, &tr); err != nil || !restapi.ValidID(tr.RequestID) {
			t.Fatalf("POST %s answered %s (%v)", path, r.body, err)
		}
		return tr.RequestID
	}
	status := func(path string) string {
		t.Helper()
		r := do(t, "GET", url+path, "", nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return string(r.body)
	}
	// poll asks until the answer is no longer IN_PROGRESS.
	poll := func(path string) string {
		t.Helper()
		var body string
		testwait.Eventually(t, 10*time.Second, "GET "+path+" to be no longer IN_PROGRESS", func() bool {
			body = status(path)
			return !strings.Contains(body, `"IN_PROGRESS"`)
		})
		return body
	}

	ok := trigger("/savepoints", `{"target-directory":"/sp","triggerId":"`+trigger1+`"}`)
	if ok != trigger1 {
		t.Fatalf("request-id %s, want the triggerId sent, %s", ok, trigger1)
	}
	if again := trigger("/savepoints", `{"target-directory":"/sp","triggerId":"`+trigger1+`"}`); again != trigger1 {
		t.Fatalf("a repeated trigger answered %s", again)
	}
	failing := trigger("/savepoints", `{"target-directory":"/fail"}`)
	if got, want := status("/savepoints/"+ok), `{"status":{"id":"IN_PROGRESS"}}`; got != want {
		t.Fatalf("in progress: %s, want %s", got, want)
	}
	close(release)
	if got, want := poll("/savepoints/"+ok), `{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/savepoint-1"}}`; got != want {
		t.Errorf("completed: %s, want %s", got, want)
	}
	// The failure cause as Flink writes it: its class and text, and the
	// Java serialization of the SerializedThrowable (checked byte for byte
	// against Java in TestJavaSerialization).
	var failed struct {
		Status    struct{ ID string }
		Operation struct {
			FailureCause struct {
				Serialized []byte `json:"serialized-throwable"`
				Class      string `json:"class"`
				StackTrace string `json:"stack-trace"`
			} `json:"failure-cause"`
		}
	}
	if got := poll("/savepoints/" + failing); json.Unmarshal([]byte(got), &failed) != nil {
		t.Errorf("failed: %s is not JSON", got)
	} else if fc := failed.Operation.FailureCause; failed.Status.ID != "COMPLETED" || fc.Class != "*errors.errorString" ||
		fc.StackTrace != "unsupported operation: writing the savepoint: disk full" ||
		!bytes.HasPrefix(fc.Serialized, []byte{0xac, 0xed, 0, 5}) || !bytes.Contains(fc.Serialized, []byte("org.apache.flink.util.SerializedThrowable")) {
		t.Errorf("failed: %s, want the failure cause with its class, text and serialized SerializedThrowable", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the backend took %d savepoints, want 2 (a repeated triggerId must not start another)", n)
	}

	// Checkpoints are polled at their own path; the default fake completes them at once.
	cp := trigger("/checkpoints", `{"checkpointType":"FULL"}`)
	if got, want := poll("/checkpoints/"+cp), `{"status":{"id":"COMPLETED"},"operation":{"checkpointId":1}}`; got != want {
		t.Errorf("checkpoint: %s, want %s", got, want)
	}
	if r := do(t, "GET", url+"/savepoints/"+cp, "", nil); r.status != 404 {
		t.Errorf("a checkpoint's trigger ID answered %d at /savepoints, want 404", r.status)
	}

	// Stop is polled at /savepoints; the default fake finishes the job.
	b.Savepoint = nil
	stop := trigger("/stop", `{"targetDirectory":"/sp","drain":true}`)
	if got := poll("/savepoints/" + stop); !strings.Contains(got, `"location":"file:/sp/savepoint-`) {
		t.Errorf("stop: %s", got)
	}
	if st, _ := b.State(jobRunning); st != restapi.JobFinished {
		t.Errorf("after stop the job is %s, want FINISHED", st)
	}
	if r := do(t, "POST", url+"/savepoints", "application/json", []byte(`{"target-directory":"/sp"}`)); r.status != 409 {
		t.Errorf("savepoint of a stopped job: %d %s, want 409", r.status, r.body)
	}

	// Outcomes expire after the store duration.
	clk.Advance(59 * time.Second.Milliseconds())
	status("/savepoints/" + ok)
	clk.Advance(time.Second.Milliseconds())
	if r := do(t, "GET", url+"/savepoints/"+ok, "", nil); r.status != 404 {
		t.Errorf("an expired outcome answered %d %s, want 404", r.status, r.body)
	}
}

// TestShutdownCancelsOperations checks that closing the server cancels a
// running operation and waits for it.
func TestShutdownCancelsOperations(t *testing.T) {
	b, clk := fixture(t)
	started := make(chan struct{})
	var ended atomic.Bool
	b.Checkpoint = func(ctx context.Context, id string, _ rest.CheckpointRequest) (int64, error) {
		close(started)
		<-ctx.Done()
		ended.Store(true)
		return 0, ctx.Err()
	}
	cfg := rest.Config{BindAddress: "127.0.0.1", Clock: clk, Log: testLogger(t)}
	s, err := rest.New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, "POST", s.URL()+"/jobs/"+jobRunning+"/checkpoints", "", nil); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !ended.Load() {
		t.Fatal("Shutdown returned before the operation ended")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second close: %v", err)
	}
}

// panicky panics in Jobs.
type panicky struct{ *resttest.Backend }

func (panicky) Jobs(context.Context) ([]restapi.JobOverview, error) { panic("boom") }

func TestBackendFailures(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, panicky{b}, clk, nil)
	for i := 0; i < 2; i++ { // the server survives
		r := do(t, "GET", s.URL()+"/jobs", "", nil)
		if r.status != 500 || string(r.body) != `{"errors":["Internal server error.","panic: boom"]}` {
			t.Fatalf("a panicking backend: %d %s", r.status, r.body)
		}
	}
	if r := do(t, "GET", s.URL()+"/taskmanagers", "", nil); r.status != 200 {
		t.Fatalf("after a panic: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		err    error
		status int
		body   string
	}{
		{restapi.ErrUnavailable, 503, `{"errors":["rest: service unavailable"]}`},
		{fmt.Errorf("%w: not the leader", restapi.ErrUnavailable), 503, `{"errors":["rest: service unavailable: not the leader"]}`},
		{errors.New("disk on fire"), 500, `{"errors":["Internal server error.","disk on fire"]}`},
		{context.DeadlineExceeded, 504, `{"errors":["context deadline exceeded"]}`},
	} {
		b2, clk2 := fixture(t)
		b2.Err = tc.err
		s2 := serve(t, b2, clk2, nil)
		for _, path := range []string{"/jobs", "/jobs/overview", "/overview", "/taskmanagers", "/jobs/" + jobRunning, "/jobs/" + jobRunning + "/exceptions"} {
			r := do(t, "GET", s2.URL()+path, "", nil)
			if r.status != tc.status || string(r.body) != tc.body {
				t.Errorf("%v: GET %s: %d %s, want %d %s", tc.err, path, r.status, r.body, tc.status, tc.body)
			}
		}
	}
}

func TestListenFailureNamesAddress(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, nil)
	_, port, _ := strings.Cut(s.Addr().String(), ":")
	var p int
	fmt.Sscan(port, &p)
	_, err := rest.New(rest.Config{BindAddress: "127.0.0.1", Port: p}, b)
	if err == nil || !strings.Contains(err.Error(), s.Addr().String()) || !strings.Contains(err.Error(), "rest.port") {
		t.Fatalf("listening on a used port: %v", err)
	}
}

func TestConfigFrom(t *testing.T) {
	c, _, err := conf.Load(conf.Sources{Dynamic: []string{"rest.port=9091", "rest.bind-address=127.0.0.1",
		"rest.server.max-content-length=10 mb", "rest.async.store-duration=1 min", "rest.flamegraph.enabled=true",
		"rest.flamegraph.num-samples=20", "rest.flamegraph.delay-between-samples=10 ms", "rest.flamegraph.refresh-interval=30 s"}})
	if err != nil {
		t.Fatal(err)
	}
	got := rest.ConfigFrom(c)
	want := rest.Config{BindAddress: "127.0.0.1", Port: 9091, MaxContentLength: 10 << 20, AsyncStoreDuration: time.Minute, Cluster: c,
		FlameGraph: rest.FlameGraphConfig{Enabled: true, CleanupInterval: 10 * time.Minute, RefreshInterval: 30 * time.Second,
			NumSamples: 20, Delay: 10 * time.Millisecond, StackDepth: 100}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ConfigFrom = %+v, want %+v", got, want)
	}
	if d := rest.ConfigFrom(conf.New()); d.Port != 8081 || d.MaxContentLength != 256<<20 || d.AsyncStoreDuration != 5*time.Minute {
		t.Fatalf("defaults: %+v", d)
	}
}

// TestShutDownCluster: DELETE /cluster asks the backend to shut the
// cluster down (200, an empty object, as Flink's shutdown handler); other
// methods on /cluster are 405; a backend that fails answers its error.
func TestShutDownCluster(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, nil)
	if r := do(t, "GET", s.URL()+"/cluster", "", nil); r.status != 405 || r.header.Get("Allow") != "DELETE" {
		t.Errorf("GET /cluster: %d, Allow %q; want 405, DELETE", r.status, r.header.Get("Allow"))
	}
	if b.ShutDowns() != 0 {
		t.Fatal("a GET shut the cluster down")
	}
	r := do(t, "DELETE", s.URL()+"/v1/cluster", "", nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != "{}" {
		t.Errorf("DELETE /cluster: %d %s; want 200 {}", r.status, r.body)
	}
	if b.ShutDowns() != 1 {
		t.Errorf("%d shutdowns, want 1", b.ShutDowns())
	}
	if st, _ := b.State(jobRunning); st != restapi.JobCanceled {
		t.Errorf("the running job is %s after the shutdown, want CANCELED", st)
	}

	failing, clk2 := fixture(t)
	failing.Err = fmt.Errorf("%w: this JobManager cannot be shut down over REST", restapi.ErrBadRequest)
	r = do(t, "DELETE", serve(t, failing, clk2, nil).URL()+"/cluster", "", nil)
	if r.status != 400 || !strings.Contains(string(r.body), "cannot be shut down") {
		t.Errorf("DELETE /cluster on a backend that refuses: %d %s", r.status, r.body)
	}
}

func ptrTrue() *bool { b := true; return &b }
