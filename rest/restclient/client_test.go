package restclient_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/rest/resttest"
)

const (
	jobA    = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	unknown = "ffffffffffffffffffffffffffffffff"
)

func serve(t *testing.T, b rest.Backend) *restclient.Client {
	t.Helper()
	s, err := rest.New(rest.Config{BindAddress: "127.0.0.1", UploadDir: t.TempDir(), Clock: clock.NewManual(1_700_000_000_000),
		Log: slog.New(slog.DiscardHandler)}, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := restclient.New(s.Addr().String(), restclient.WithPollInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func backend() *resttest.Backend {
	b := resttest.New()
	var tasks restapi.StateCounts
	tasks.Add(restapi.TaskRunning, 2)
	b.AddJob(resttest.Job{
		Overview: restapi.JobOverview{ID: jobA, Name: "a", State: restapi.JobRunning, StartTime: 5, EndTime: -1, Tasks: tasks.Overview()},
		Details:  restapi.JobDetails{ID: jobA, Name: "a", State: restapi.JobRunning, StartTime: 5, EndTime: -1, StatusCounts: tasks},
		Exceptions: []restapi.RootExceptionInfo{{ExceptionInfo: restapi.ExceptionInfo{ExceptionName: "E", Stacktrace: "boom", Timestamp: 7}},
			{ExceptionInfo: restapi.ExceptionInfo{ExceptionName: "E", Stacktrace: "older", Timestamp: 6}}},
		Checkpoints: rest.NewCheckpointingStatistics(restapi.CheckpointCounts{Total: 1, Completed: 1},
			[]restapi.CheckpointStatistics{{ID: 1, Status: restapi.CheckpointCompleted, StateSize: 10, ExternalPath: "file:/cp/chk-1"}}, nil),
	})
	b.SetTaskManagers([]restapi.TaskManagerInfo{{ID: "tm-1", SlotsNumber: 2, FreeSlots: 1}})
	return b
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		addr, url, err string
	}{
		{"localhost:8081", "http://localhost:8081", ""},
		{" 127.0.0.1:9 ", "http://127.0.0.1:9", ""},
		{"http://jm.example:8081/", "http://jm.example:8081", ""},
		{"https://jm.example:443/proxy/flink/", "https://jm.example:443/proxy/flink", ""},
		{"", "", "no JobManager address"},
		{"localhost", "", "has no port"},
		{"ftp://jm:21", "", "scheme must be http"},
		{"http://[::1", "", "is not host:port or a URL"},
	} {
		c, err := restclient.New(tc.addr)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("New(%q): %v", tc.addr, err)
		case tc.err == "" && c.URL() != tc.url:
			t.Errorf("New(%q).URL() = %q, want %q", tc.addr, c.URL(), tc.url)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("New(%q) = %v, want an error containing %q", tc.addr, err, tc.err)
		}
	}
}

func TestQueries(t *testing.T) {
	b := backend()
	c := serve(t, b)
	jobs, err := c.Jobs(ctx(t))
	if err != nil || !reflect.DeepEqual(jobs, []restapi.JobIDWithStatus{{ID: jobA, Status: restapi.JobRunning}}) {
		t.Errorf("Jobs = %+v, %v", jobs, err)
	}
	want, _ := b.Jobs(ctx(t))
	for i := range want {
		want[i].SchedulerType = restapi.SchedulerDefault // the server's
	}
	if ov, err := c.JobsOverview(ctx(t)); err != nil || !reflect.DeepEqual(ov, want) {
		t.Errorf("JobsOverview = %+v, %v; want %+v", ov, err, want)
	}
	if d, err := c.Job(ctx(t), jobA); err != nil || d.Name != "a" || d.StatusCounts.Running != 2 || d.Now != 1_700_000_000_000 {
		t.Errorf("Job = %+v, %v", d, err)
	}
	if o, err := c.Overview(ctx(t)); err != nil || o.TaskManagers != 1 || o.SlotsAvailable != 1 || o.JobsRunning != 1 {
		t.Errorf("Overview = %+v, %v", o, err)
	}
	if tms, err := c.TaskManagers(ctx(t)); err != nil || len(tms) != 1 || tms[0].ID != "tm-1" {
		t.Errorf("TaskManagers = %+v, %v", tms, err)
	}
	if e, err := c.JobExceptions(ctx(t), jobA, 1); err != nil || len(e.ExceptionHistory.Entries) != 1 || !e.ExceptionHistory.Truncated || e.ExceptionHistory.Entries[0].Stacktrace != "boom" {
		t.Errorf("JobExceptions = %+v, %v", e, err)
	}
	if cp, err := c.JobCheckpoints(ctx(t), jobA); err != nil || cp.Latest.Completed == nil || cp.Latest.Completed.ExternalPath != "file:/cp/chk-1" {
		t.Errorf("JobCheckpoints = %+v, %v", cp, err)
	}
	// Unset in the server's Config, the version is the test binary's
	// build's (BuildVersion).
	version, _ := restapi.BuildVersion()
	if cfg, err := c.Config(ctx(t)); err != nil || cfg.FlinkVersion != version {
		t.Errorf("Config = %+v, %v; want flink-version %q", cfg, err, version)
	}
}

func TestErrors(t *testing.T) {
	b := backend()
	c := serve(t, b)
	_, err := c.Job(ctx(t), unknown)
	var e *restclient.Error
	if !errors.As(err, &e) || e.StatusCode != 404 || !errors.Is(err, restapi.ErrNotFound) || errors.Is(err, restapi.ErrConflict) {
		t.Fatalf("unknown job: %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, c.URL()+"/jobs/"+unknown) || !strings.Contains(msg, "404") || !strings.Contains(msg, "job "+unknown) {
		t.Errorf("the message names neither URL, status nor the server's text: %s", msg)
	}
	// A malformed ID is refused before asking.
	if _, err := c.Job(ctx(t), "wordcount"); !errors.Is(err, restapi.ErrBadRequest) || !strings.Contains(err.Error(), "sluice list") {
		t.Errorf("malformed ID: %v", err)
	}
	if err := c.Cancel(ctx(t), jobA); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx(t), jobA); !errors.Is(err, restapi.ErrConflict) {
		t.Errorf("cancelling a cancelled job: %v", err)
	}
	if _, err := c.TriggerSavepoint(ctx(t), jobA, restapi.SavepointTriggerRequest{TargetDirectory: "/sp"}); !errors.Is(err, restapi.ErrConflict) {
		t.Errorf("savepoint of a cancelled job: %v", err)
	}
	if _, err := c.TriggerSavepoint(ctx(t), unknown, restapi.SavepointTriggerRequest{FormatType: "ZIP"}); !errors.Is(err, restapi.ErrBadRequest) || !strings.Contains(err.Error(), "use CANONICAL") {
		t.Errorf("bad format: %v", err)
	}
	if _, err := c.TriggerSavepoint(ctx(t), unknown, restapi.SavepointTriggerRequest{FormatType: restapi.FormatNative}); !errors.Is(err, restapi.ErrBadRequest) || !strings.Contains(err.Error(), "NATIVE is not supported") {
		t.Errorf("native format: %v", err)
	}

	// Nothing listens on this port.
	dead, err := restclient.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Jobs(ctx(t))
	if !errors.As(err, &e) || e.StatusCode != 0 || !errors.Is(err, restapi.ErrUnavailable) || !strings.Contains(err.Error(), "is the JobManager running there?") {
		t.Errorf("unreachable: %v", err)
	}
}

func writeBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "myjob")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func graphJSON(t *testing.T, name string) []byte {
	t.Helper()
	g := &graph.JobGraph{Name: name, Nodes: []*graph.Node{
		{ID: 0, Kind: "source", Name: "src", Parallelism: 1, Chaining: graph.ChainAlways, Bounded: true},
		{ID: 1, Kind: "sink", Name: "out", Parallelism: 1, Chaining: graph.ChainAlways, Inputs: 1},
	}, Edges: []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Forward}}}
	b, err := g.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubmitAndWait(t *testing.T) {
	b := backend()
	c := serve(t, b)
	content := strings.Repeat("binary!", 200_000) // 1.4 MB, streamed
	id, err := c.Submit(ctx(t), restclient.Submission{
		Graph: graphJSON(t, "submitted"), BinaryPath: writeBinary(t, content), Args: []string{"-n", "3"},
		SavepointPath: "/sp/savepoint-x", AllowNonRestoredState: true, Configuration: map[string]string{"parallelism.default": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := b.Received()
	if len(got) != 1 || got[0].JobID != id || string(got[0].Binary) != content || got[0].Submission.BinaryName != "myjob" ||
		got[0].Submission.Graph.Name != "submitted" || !reflect.DeepEqual(got[0].Submission.Args, []string{"-n", "3"}) ||
		got[0].Submission.SavepointPath != "/sp/savepoint-x" || !got[0].Submission.AllowNonRestoredState ||
		got[0].Submission.Configuration["parallelism.default"] != "2" {
		t.Fatalf("received %+v", got)
	}

	// The result is polled until the job ends.
	if res, err := c.JobResult(ctx(t), id); err != nil || res != nil {
		t.Fatalf("a running job's result: %+v, %v", res, err)
	}
	done := make(chan *restapi.JobResult)
	go func() {
		res, err := c.WaitForResult(ctx(t), id)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	b.Finish(id, restapi.JobResult{ApplicationStatus: restapi.AppFailed, FailureCause: &restapi.SerializedThrowable{Class: "X", StackTrace: "it broke"},
		AccumulatorResults: restapi.Accumulators{"restarts": int64(2), "savepoint": "file:/sp/savepoint-1"}})
	res := <-done
	if res == nil || res.ApplicationStatus != restapi.AppFailed || !errors.Is(res.Err(), restapi.ErrJobFailed) || !strings.Contains(res.Err().Error(), "it broke") {
		t.Fatalf("result %+v", res)
	}
	// Accumulators cross the wire Java-serialized, as Flink's client reads
	// them, and come back typed.
	if n, ok := res.AccumulatorResults.Int("restarts"); !ok || n != 2 {
		t.Errorf("restarts accumulator %v (%T), want int64 2", res.AccumulatorResults["restarts"], res.AccumulatorResults["restarts"])
	}
	if sp, ok := res.AccumulatorResults.String("savepoint"); !ok || sp != "file:/sp/savepoint-1" {
		t.Errorf("savepoint accumulator %v, want file:/sp/savepoint-1", res.AccumulatorResults["savepoint"])
	}

	// A job that does not end within the context.
	id2, err := c.Submit(ctx(t), restclient.Submission{Graph: graphJSON(t, "forever"), BinaryPath: writeBinary(t, "x")})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.WaitForResult(short, id2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting past the deadline: %v", err)
	}
}

func TestSubmitRejected(t *testing.T) {
	c := serve(t, backend())
	_, err := c.Submit(ctx(t), restclient.Submission{Graph: []byte(`{"name":"empty","nodes":[]}`), BinaryPath: writeBinary(t, "x")})
	if !errors.Is(err, restapi.ErrBadRequest) || !strings.Contains(err.Error(), "the job has no operators") {
		t.Fatalf("an invalid graph: %v", err)
	}
	_, err = c.Submit(ctx(t), restclient.Submission{Graph: graphJSON(t, "g"), BinaryPath: filepath.Join(t.TempDir(), "missing")})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing binary: %v", err)
	}
}

func TestOperations(t *testing.T) {
	b := backend()
	c := serve(t, b)
	loc, err := c.Savepoint(ctx(t), jobA, restapi.SavepointTriggerRequest{TargetDirectory: "/sp"})
	if err != nil || loc != "file:/sp/savepoint-0a1b2c-1" {
		t.Fatalf("Savepoint = %q, %v", loc, err)
	}
	_, err = c.Savepoint(ctx(t), jobA, restapi.SavepointTriggerRequest{})
	var oe *restclient.OperationError
	if !errors.As(err, &oe) || oe.Operation != "savepoint" || !strings.Contains(err.Error(), "savepoint-dir is not set") {
		t.Fatalf("a savepoint without directory: %v", err)
	}
	if id, err := c.Checkpoint(ctx(t), jobA, restapi.CheckpointTriggerRequest{CheckpointType: restapi.CheckpointFull}); err != nil || id != 1 {
		t.Fatalf("Checkpoint = %d, %v", id, err)
	}
	loc, err = c.StopWithSavepoint(ctx(t), jobA, restapi.StopRequest{TargetDirectory: "/sp", Drain: true})
	if err != nil || loc != "file:/sp/savepoint-0a1b2c-2" {
		t.Fatalf("StopWithSavepoint = %q, %v", loc, err)
	}
	if st, _ := b.State(jobA); st != restapi.JobFinished {
		t.Fatalf("after stop: %s", st)
	}
	// A savepoint that does not complete within the context.
	b2 := backend()
	b2.Savepoint = func(ctx context.Context, _ string, _ rest.SavepointRequest) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	c2 := serve(t, b2)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c2.Savepoint(short, jobA, restapi.SavepointTriggerRequest{TargetDirectory: "/sp"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a savepoint past the deadline: %v", err)
	}
}

// flaky answers 503 to its first calls of Jobs.
type flaky struct {
	*resttest.Backend
	failures atomic.Int32
}

func (f *flaky) Jobs(ctx context.Context) ([]restapi.JobOverview, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, fmt.Errorf("%w: electing a leader", restapi.ErrUnavailable)
	}
	return f.Backend.Jobs(ctx)
}

func TestTriggerRetriedWhileUnavailable(t *testing.T) {
	f := &flaky{Backend: backend()}
	f.failures.Store(3)
	c := serve(t, f)
	if loc, err := c.Savepoint(ctx(t), jobA, restapi.SavepointTriggerRequest{TargetDirectory: "/sp"}); err != nil || loc == "" {
		t.Fatalf("Savepoint through 503s = %q, %v", loc, err)
	}
	if n := f.failures.Load(); n >= 0 {
		t.Fatalf("the server was asked %d times fewer than expected", n+1)
	}
}
