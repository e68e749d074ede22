package rest_test

import (
	"bytes"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

const jobVertices = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

// vertexFixture is a running job whose vertex B reports two subtasks (one
// with a watermark), with its configuration, on a cluster of one
// TaskManager.
func vertexFixture(t *testing.T) (*resttest.Backend, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(start)
	b := resttest.New()
	b.Clock = clk
	sub := func(i int, in, out int64, busy float64, wm int64) restapi.SubtaskDetails {
		return restapi.SubtaskDetails{Subtask: i, Status: restapi.TaskRunning, Endpoint: "127.0.0.1:6122", StartTime: start - 50_000, EndTime: -1,
			Duration: 50_000, TaskManagerID: "tm-1", Watermark: wm, OutputWatermark: math.MinInt64,
			StatusDuration:  map[restapi.ExecutionState]int64{restapi.TaskDeploying: 1_000, restapi.TaskRunning: 49_000},
			StateTimestamps: map[restapi.ExecutionState]int64{restapi.TaskDeploying: start - 50_000, restapi.TaskRunning: start - 49_000},
			Metrics: restapi.IOMetrics{ReadRecords: in, WriteRecords: out, ReadRecordsComplete: true, WriteRecordsComplete: true,
				ReadBytesComplete: true, WriteBytesComplete: true, AccumulatedBusyTime: busy, AccumulatedIdleTime: 100}}
	}
	b.AddJob(resttest.Job{
		Overview: restapi.JobOverview{ID: jobVertices, Name: "vertices", State: restapi.JobRunning, StartTime: start - 60_000, EndTime: -1},
		Details: restapi.JobDetails{ID: jobVertices, Name: "vertices", State: restapi.JobRunning, JobType: "STREAMING",
			StartTime: start - 60_000, EndTime: -1, MaxParallelism: -1,
			Vertices: []restapi.Vertex{{ID: vertexB, Name: "Count -> Sink: print", MaxParallelism: 128, Parallelism: 2, Status: restapi.TaskRunning,
				Subtasks: []restapi.SubtaskDetails{sub(0, 100, 90, 1500, math.MinInt64), withRates(sub(1, 300, 290, 500, start-5_000))}}},
			ExecutionConfig: &restapi.ExecutionConfigInfo{RestartStrategy: "fixed-delay", Parallelism: 2},
			Config: map[string]string{"parallelism.default": "2", "s3.secret-key": "hunter2", "execution.checkpointing.interval": "10 s",
				"execution.checkpointing.dir": "hdfs:///ckpt", "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
	})
	b.SetTaskManagers([]restapi.TaskManagerInfo{{ID: "tm-1", Path: "127.0.0.1:6122", DataPort: -1, JMXPort: -1, SlotsNumber: 2, FreeSlots: 0}})
	b.SetMetrics(&rest.MetricsSnapshot{Jobs: []rest.JobMetrics{
		{JobID: jobVertices, JobName: "vertices", Restarts: 2, Checkpoints: rest.CheckpointMetrics{Completed: 7, Failed: 1, LastDuration: 120,
			LastSize: 4096, LastFullSize: 8192, LastRestoreTimestamp: start - 30_000}},
		{JobID: jobOther, JobName: "other", Restarts: 0, Checkpoints: rest.CheckpointMetrics{Completed: 3, LastRestoreTimestamp: -1}},
	}})
	return b, clk
}

const (
	jobOther   = "6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f"
	jobMissing = "7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a"
)

// withRates gives a subtask measured per-second figures and an output
// watermark (subtask 0 of the fixture has neither yet).
func withRates(s restapi.SubtaskDetails) restapi.SubtaskDetails {
	s.OutputWatermark = s.Watermark - 1000
	s.Rates = &restapi.SubtaskRates{RecordsInPerSecond: 250.5, RecordsOutPerSecond: 240, BytesInPerSecond: 8192, BytesOutPerSecond: 4096,
		BusyTimeMsPerSecond: 612, BackPressuredTimeMsPerSecond: 88, IdleTimeMsPerSecond: 300}
	// The gauges of a Kafka source reading partitions 3 and 5 of topic
	// "in", and of an exactly-once sink's pre-committed transaction.
	s.Gauges = map[string]float64{
		"KafkaSourceReader.topic.in.partition.3.currentOffset": 1200, "KafkaSourceReader.topic.in.partition.3.endOffset": 1250,
		"KafkaSourceReader.topic.in.partition.3.lag": 50, "KafkaSourceReader.topic.in.partition.5.lag": 7,
		"KafkaSink.transaction.out-1-0.openSince": float64(start - 2_500), "KafkaSink.transaction.out-1-0.precommitted": 1,
	}
	return s
}

// The dashboard's endpoints answer in Flink's shapes (golden files).
func TestVertexAndConfigEndpoints(t *testing.T) {
	b, clk := vertexFixture(t)
	s := serve(t, b, clk, nil)
	job := s.URL() + "/jobs/" + jobVertices
	for _, tc := range []struct{ name, url string }{
		{"job-config", job + "/config"},
		{"job-jobmanager-config", job + "/jobmanager/config"},
		{"vertex", job + "/vertices/" + vertexB},
		{"vertex-subtasks-metrics-list", job + "/vertices/" + vertexB + "/subtasks/metrics"},
		{"vertex-subtasks-metrics", job + "/vertices/" + vertexB + "/subtasks/metrics?get=numRecordsIn,accumulatedBusyTime,nope&agg=min,max,avg,sum,skew"},
		{"vertex-subtasks-metrics-subtask-1", job + "/vertices/" + vertexB + "/subtasks/metrics?get=numRecordsIn&agg=sum&subtasks=1"},
		{"vertex-subtasks-metrics-bad-agg", job + "/vertices/" + vertexB + "/subtasks/metrics?get=numRecordsIn&agg=median"},
		{"vertex-metrics", job + "/vertices/" + vertexB + "/metrics?get=0.numRecordsOut,1.currentInputWatermark"},
		{"vertex-watermarks", job + "/vertices/" + vertexB + "/watermarks"},
		{"vertex-subtasks-metrics-rates", job + "/vertices/" + vertexB + "/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,numRecordsInPerSecond,currentInputWatermark,currentOutputWatermark"},
		{"vertex-metrics-rates", job + "/vertices/" + vertexB + "/metrics?get=0.busyTimeMsPerSecond,1.busyTimeMsPerSecond,1.numRecordsOutPerSecond,0.currentOutputWatermark,1.currentOutputWatermark"},
		{"subtask-metrics-list", job + "/vertices/" + vertexB + "/subtasks/1/metrics"},
		{"subtask-metrics-list-unmeasured", job + "/vertices/" + vertexB + "/subtasks/0/metrics"},
		{"subtask-metrics", job + "/vertices/" + vertexB + "/subtasks/1/metrics?get=busyTimeMsPerSecond,idleTimeMsPerSecond,currentOutputWatermark,nope"},
		{"subtask-gauges", job + "/vertices/" + vertexB + "/subtasks/1/metrics?get=KafkaSourceReader.topic.in.partition.3.lag,KafkaSink.transaction.out-1-0.openSince,currentOutputWatermark,KafkaSourceReader.topic.in.partition.4.lag"},
		{"vertex-gauges", job + "/vertices/" + vertexB + "/metrics?get=1.KafkaSourceReader.topic.in.partition.5.lag,0.KafkaSourceReader.topic.in.partition.5.lag,1.numRecordsOut"},
		{"vertex-subtasks-gauges", job + "/vertices/" + vertexB + "/subtasks/metrics?get=KafkaSourceReader.topic.in.partition.3.lag&agg=sum,max"},
		{"subtask-metrics-unknown", job + "/vertices/" + vertexB + "/subtasks/7/metrics"},
		{"subtask-metrics-malformed", job + "/vertices/" + vertexB + "/subtasks/x/metrics"},
		{"job-metrics-list", job + "/metrics"},
		{"job-metrics", job + "/metrics?get=numRestarts,lastCheckpointDuration,numberOfCompletedCheckpoints,lastCheckpointRestoreTimestamp,nope"},
		{"job-metrics-unknown-job", s.URL() + "/jobs/" + jobMissing + "/metrics"},
		{"jobs-metrics-list", s.URL() + "/jobs/metrics"},
		{"jobs-metrics", s.URL() + "/jobs/metrics?get=numRestarts,numberOfCompletedCheckpoints&agg=min,max,sum,avg,skew"},
		{"jobs-metrics-one", s.URL() + "/jobs/metrics?get=numRestarts&agg=sum&jobs=" + jobOther},
		{"jobs-metrics-bad-job", s.URL() + "/jobs/metrics?get=numRestarts&jobs=nope"},
		{"jobmanager-metrics-list", s.URL() + "/jobmanager/metrics"},
		{"vertex-backpressure", job + "/vertices/" + vertexB + "/backpressure"},
		{"vertex-subtasktimes", job + "/vertices/" + vertexB + "/subtasktimes"},
		{"vertex-taskmanagers", job + "/vertices/" + vertexB + "/taskmanagers"},
		{"vertex-accumulators", job + "/vertices/" + vertexB + "/accumulators"},
		{"vertex-subtasks-accumulators", job + "/vertices/" + vertexB + "/subtasks/accumulators"},
		{"job-accumulators", job + "/accumulators"},
		{"jobmanager-metrics", s.URL() + "/jobmanager/metrics?get=numRegisteredTaskManagers,taskSlotsTotal,taskSlotsAvailable,numRunningJobs"},
		{"vertex-unknown", job + "/vertices/" + vertexA},
		{"vertex-malformed", job + "/vertices/xyz"},
		{"checkpoint-config", job + "/checkpoints/config"},
		{"taskmanager", s.URL() + "/taskmanagers/tm-1"},
		{"taskmanager-unknown", s.URL() + "/taskmanagers/tm-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "dashboard/"+tc.name, render(do(t, http.MethodGet, tc.url, "", nil)))
		})
	}
}

// The dashboard is served at / and /web/, as HTML, CSS and JavaScript, and
// every URL in it is relative (it works under YARN's /proxy/<app>/).
func TestDashboardIsServed(t *testing.T) {
	b, clk := vertexFixture(t)
	s := serve(t, b, clk, nil)
	for _, tc := range []struct{ path, contentType, contains string }{
		{"/", "text/html", `src="web/app.js"`},
		{"/v1/", "text/html", `href="web/style.css"`},
		{"/web/app.js", "text/javascript", `api("overview")`},
		{"/web/style.css", "text/css", ".graph"},
	} {
		r := do(t, http.MethodGet, s.URL()+tc.path, "", nil)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), tc.contentType) || !bytes.Contains(r.body, []byte(tc.contains)) {
			t.Errorf("GET %s: %d %s, want 200 %s containing %q", tc.path, r.status, r.header.Get("Content-Type"), tc.contentType, tc.contains)
		}
		// No root-relative or absolute URL: in attributes, fetches or
		// the REST calls.
		if m := regexp.MustCompile(`(?:src|href)="/[^/]|(?:api|post|fetch)\("/|url\(/`).Find(r.body); m != nil {
			t.Errorf("GET %s has a URL that is not relative to the page: %q", tc.path, m)
		}
	}
	if r := do(t, http.MethodPost, s.URL()+"/", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", r.status)
	}
	if r := do(t, http.MethodGet, s.URL()+"/web/nope.js", "", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /web/nope.js: %d, want 404", r.status)
	}
}
