//go:build integration

package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// Flink's own tools against a live Sluice cluster: every REST answer below
// parses with Flink 2.3's message classes and its strict object mapper
// (unknown or missing members fail), and Flink's CLI lists, checkpoints,
// savepoints, stops and cancels Sluice jobs. The classes come from Maven
// Central (integration/scripts/flinkrest.sh, SLUICE_FLINK_CLASSPATH).
func TestFlinkToolsAgainstSluice(t *testing.T) {
	cp := os.Getenv("SLUICE_FLINK_CLASSPATH")
	if cp == "" {
		t.Fatal("SLUICE_FLINK_CLASSPATH is not set: run the integration tests through make integration (integration/scripts/flinkrest.sh)")
	}
	c := newCluster(t, 2, "execution.checkpointing.savepoint-dir=file://"+filepath.Join(t.TempDir(), "savepoints"),
		"rest.flamegraph.enabled=true", "rest.flamegraph.num-samples=10")
	run := func(extra ...string) string { // extra: the job program's arguments
		t.Helper()
		args := append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
		args = append(append(args, jobBin, "-out", filepath.Join(c.dir, "out-"+time.Now().Format("150405.000")), "-keys", "4", "-rate", "2000"), extra...)
		m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(c.mustSluice(args...))
		if m == nil {
			t.Fatal("no job id in the output of sluice run -d")
		}
		return m[1]
	}
	running := run("-n", "100000000")
	testwait.Eventually(t, 30*time.Second, "the job to run and checkpoint", func() bool {
		b, err := httpGet(c.rest() + "/jobs/" + running + "/checkpoints")
		return err == nil && regexp.MustCompile(`"completed":[1-9]`).Match(b)
	})

	// The latest completed checkpoint was acknowledged by all 4 subtasks
	// (2 vertices of parallelism 2), at each vertex.
	var cps struct {
		Latest struct {
			Completed struct {
				ID          int64                     `json:"id"`
				NumSubtasks int                       `json:"num_subtasks"`
				NumAcked    int                       `json:"num_acknowledged_subtasks"`
				Tasks       map[string]map[string]any `json:"tasks"`
			} `json:"completed"`
		} `json:"latest"`
	}
	if b, err := httpGet(c.rest() + "/jobs/" + running + "/checkpoints"); err != nil || json.Unmarshal(b, &cps) != nil {
		t.Fatalf("GET checkpoints: %v %s", err, b)
	}
	if lc := cps.Latest.Completed; lc.NumSubtasks != 4 || lc.NumAcked != 4 || len(lc.Tasks) != 2 {
		t.Errorf("the latest checkpoint was acknowledged by %d of %d subtasks at %d vertices, want 4 of 4 at 2", lc.NumAcked, lc.NumSubtasks, len(lc.Tasks))
	}

	var job struct {
		Vertices []struct{ ID string } `json:"vertices"`
	}
	var tms struct {
		TaskManagers []struct{ ID string } `json:"taskmanagers"`
	}
	for path, v := range map[string]any{"/jobs/" + running: &job, "/taskmanagers": &tms} {
		b, err := httpGet(c.rest() + path)
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	if len(job.Vertices) == 0 || len(tms.TaskManagers) == 0 {
		t.Fatalf("no vertices (%v) or TaskManagers (%v)", job.Vertices, tms.TaskManagers)
	}
	// The per-second figures of the source vertex's subtasks (2000
	// records/s over the job), once the JobMaster has sampled them.
	v0 := "/jobs/" + running + "/vertices/" + job.Vertices[0].ID
	var agg []struct {
		ID  string   `json:"id"`
		Sum *float64 `json:"sum"`
		Max *float64 `json:"max"`
	}
	testwait.Eventually(t, 30*time.Second, "the source's per-second metrics", func() bool {
		b, err := httpGet(c.rest() + v0 + "/subtasks/metrics?get=numRecordsOutPerSecond,busyTimeMsPerSecond,backPressuredTimeMsPerSecond,currentOutputWatermark&agg=sum,max")
		return err == nil && json.Unmarshal(b, &agg) == nil && len(agg) == 4
	})
	for _, a := range agg {
		switch {
		case a.Sum == nil || a.Max == nil:
			t.Errorf("%s: no sum or max: %+v", a.ID, a)
		case a.ID == "numRecordsOutPerSecond" && (*a.Sum < 200 || *a.Sum > 20000):
			t.Errorf("the source emits %.0f records/s; it is limited to 2000/s", *a.Sum)
		case (a.ID == "busyTimeMsPerSecond" || a.ID == "backPressuredTimeMsPerSecond") && (*a.Max < 0 || *a.Max > 1000):
			t.Errorf("%s %.0f is not between 0 and 1000 ms/s", a.ID, *a.Max)
		}
	}

	const m = "org.apache.flink.runtime.rest.messages."
	j, v := "/jobs/"+running, "/jobs/"+running+"/vertices/"+job.Vertices[0].ID
	// A sampled flame graph (not the waiting marker) for Flink's class.
	testwait.Eventually(t, 60*time.Second, "the source's flame graph", func() bool {
		b, err := httpGet(c.rest() + v + "/flamegraph?type=FULL")
		return err == nil && bytes.Contains(b, []byte(`"data":{"name":"root"`))
	})
	tm := "/taskmanagers/" + url.PathEscape(tms.TaskManagers[0].ID)
	checks := []string{
		"/overview=org.apache.flink.runtime.rest.handler.legacy.messages.ClusterOverviewWithVersion",
		"/config=" + m + "DashboardConfiguration",
		"/jobs=org.apache.flink.runtime.messages.webmonitor.JobIdsWithStatusOverview",
		"/jobs/overview=org.apache.flink.runtime.messages.webmonitor.MultipleJobsDetails",
		j + "=" + m + "job.JobDetailsInfo",
		j + "/config=" + m + "JobConfigInfo",
		j + "/plan=" + m + "JobPlanInfo",
		j + "/exceptions=" + m + "JobExceptionsInfoWithHistory",
		j + "/checkpoints=" + m + "checkpoints.CheckpointingStatistics",
		j + "/checkpoints/config=" + m + "checkpoints.CheckpointConfigInfo",
		v + "=" + m + "JobVertexDetailsInfo",
		v + "/watermarks=" + m + "job.metrics.MetricCollectionResponseBody",
		v + "/subtasks/metrics=" + m + "job.metrics.AggregatedMetricsResponseBody",
		"/taskmanagers=" + m + "taskmanager.TaskManagersInfo",
		"/taskmanagers/" + tms.TaskManagers[0].ID + "=" + m + "taskmanager.TaskManagerDetailsInfo",
		"/jobmanager/config=" + m + "ConfigurationInfo",
		v + "/metrics=" + m + "job.metrics.MetricCollectionResponseBody",
		v + "/metrics?get=0.busyTimeMsPerSecond,0.numRecordsInPerSecond,0.currentOutputWatermark=" + m + "job.metrics.MetricCollectionResponseBody",
		v + "/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,numRecordsInPerSecond,currentInputWatermark&agg=min,max,avg,sum,skew=" +
			m + "job.metrics.AggregatedMetricsResponseBody",
		v + "/subtasks/0/metrics=" + m + "job.metrics.MetricCollectionResponseBody",
		v + "/subtasks/0/metrics?get=busyTimeMsPerSecond,idleTimeMsPerSecond=" + m + "job.metrics.MetricCollectionResponseBody",
		j + "/metrics=" + m + "job.metrics.MetricCollectionResponseBody",
		j + "/metrics?get=numRestarts,numberOfCompletedCheckpoints,lastCheckpointDuration=" + m + "job.metrics.MetricCollectionResponseBody",
		"/jobs/metrics?get=numRestarts&agg=sum=" + m + "job.metrics.AggregatedMetricsResponseBody",
		"/jobmanager/metrics?get=numRegisteredTaskManagers,taskSlotsTotal=" + m + "job.metrics.MetricCollectionResponseBody",
		"/jobmanager/thread-dump=" + m + "ThreadDumpInfo",
		"/jobmanager/environment=" + m + "EnvironmentInfo",
		"/jobmanager/logs=" + m + "LogListInfo",
		"/applications/overview=org.apache.flink.runtime.messages.webmonitor.MultipleApplicationsDetails",
		v + "/backpressure=" + m + "JobVertexBackPressureInfo",
		v + "/flamegraph?type=FULL=org.apache.flink.runtime.webmonitor.threadinfo.VertexFlameGraph",
		v + "/flamegraph?type=ON_CPU&subtaskindex=1=org.apache.flink.runtime.webmonitor.threadinfo.VertexFlameGraph",
		v + "/subtasktimes=" + m + "SubtasksTimesInfo",
		v + "/taskmanagers=" + m + "JobVertexTaskManagersInfo",
		v + "/accumulators=" + m + "JobVertexAccumulatorsInfo",
		v + "/subtasks/accumulators=" + m + "job.SubtasksAllAccumulatorsInfo",
		j + "/accumulators=" + m + "JobAccumulatorsInfo",
		tm + "/logs=" + m + "LogListInfo",
		tm + "/thread-dump=" + m + "ThreadDumpInfo",
		tm + "/metrics=" + m + "job.metrics.MetricCollectionResponseBody",
		tm + "/metrics?get=Status.JVM.Memory.Heap.Used,Status.JVM.Threads.Count,Status.JVM.GarbageCollector.Go.Count=" + m + "job.metrics.MetricCollectionResponseBody",
		"/taskmanagers/metrics=" + m + "job.metrics.MetricCollectionResponseBody",
		"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used,Status.JVM.Threads.Count&agg=min,max,avg,sum,skew=" + m + "job.metrics.AggregatedMetricsResponseBody",
		"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used&agg=sum&taskmanagers=" + url.QueryEscape(tms.TaskManagers[0].ID) + "=" + m + "job.metrics.AggregatedMetricsResponseBody",
	}
	java := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", cp}, args...)...)
		conf := t.TempDir()
		if err := os.WriteFile(filepath.Join(conf, "config.yaml"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "FLINK_CONF_DIR="+conf)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := java(append([]string{"io.github.sluice.flinkrest.Check", "http://" + c.rest()}, checks...)...); err != nil {
		t.Errorf("Flink's strict REST mapper refused answers (%v):\n%s", err, out)
	}

	// The running job's workers write their stdout and stderr into their
	// TaskManagers' log directories: listed by the TaskManagers, and
	// served.
	var workerFiles []string
	for _, tmi := range tms.TaskManagers {
		var logs struct {
			Logs []struct{ Name string } `json:"logs"`
		}
		base := c.rest() + "/taskmanagers/" + url.PathEscape(tmi.ID)
		if b, err := httpGet(base + "/logs"); err != nil || json.Unmarshal(b, &logs) != nil {
			t.Fatalf("GET /taskmanagers/%s/logs: %v %s", tmi.ID, err, b)
		}
		for _, l := range logs.Logs {
			if strings.HasPrefix(l.Name, running+"-") && strings.HasSuffix(l.Name, ".err") {
				workerFiles = append(workerFiles, l.Name)
				if _, err := httpGet(base + "/logs/" + url.PathEscape(l.Name)); err != nil {
					t.Errorf("GET /taskmanagers/%s/logs/%s: %v", tmi.ID, l.Name, err)
				}
			}
		}
	}
	if len(workerFiles) == 0 {
		t.Errorf("no TaskManager lists a worker's stderr file of job %s", running)
	}

	flink := func(args ...string) string {
		t.Helper()
		out, err := java(append([]string{"org.apache.flink.client.cli.CliFrontend"}, append(args, "-m", c.rest())...)...)
		if err != nil {
			t.Fatalf("flink %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out := flink("list"); !strings.Contains(out, running+" : cluster test (RUNNING)") {
		t.Errorf("flink list does not show the running job:\n%s", out)
	}
	if out := flink("checkpoint", running); !regexp.MustCompile(`Checkpoint \d+ for job ` + running + ` completed`).MatchString(out) {
		t.Errorf("flink checkpoint:\n%s", out)
	}
	out := flink("savepoint", running, "file://"+filepath.Join(c.dir, "sp"))
	sp := regexp.MustCompile(`Savepoint completed\. Path: (\S+)`).FindStringSubmatch(out)
	if sp == nil {
		t.Fatalf("flink savepoint:\n%s", out)
	}
	// savepoint -dispose deletes it through the JobManager
	// (/savepoint-disposal), and refuses a directory that is no savepoint.
	spDir := strings.TrimPrefix(strings.TrimPrefix(sp[1], "file://"), "file:")
	if _, err := os.Stat(filepath.Join(spDir, "_metadata")); err != nil {
		t.Fatalf("the savepoint flink savepoint made: %v", err)
	}
	if out := flink("savepoint", "-d", sp[1]); !strings.Contains(out, "Savepoint '"+sp[1]+"' disposed") {
		t.Errorf("flink savepoint -d:\n%s", out)
	}
	if _, err := os.Stat(spDir); !os.IsNotExist(err) {
		t.Errorf("the savepoint %s is still there after flink savepoint -d: %v", spDir, err)
	}
	precious := filepath.Join(c.dir, "precious")
	if err := os.MkdirAll(precious, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(precious, "data"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := java(append([]string{"org.apache.flink.client.cli.CliFrontend"}, "savepoint", "-d", "file://"+precious, "-m", c.rest())...); err == nil ||
		!strings.Contains(out, "no savepoint") && !strings.Contains(out, "not a savepoint") && !strings.Contains(out, "only savepoints") {
		t.Errorf("flink savepoint -d of a directory that is no savepoint: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(precious, "data")); err != nil {
		t.Errorf("flink savepoint -d of a directory that is no savepoint deleted it: %v", err)
	}
	if out := flink("stop", "--savepointPath", "file://"+filepath.Join(c.dir, "stop"), running); !strings.Contains(out, "Savepoint completed. Path:") {
		t.Errorf("flink stop:\n%s", out)
	}
	// A checkpoint of the history of the stopped job (which no longer
	// changes), in detail.
	if b, err := httpGet(c.rest() + "/jobs/" + running + "/checkpoints"); err != nil || json.Unmarshal(b, &cps) != nil {
		t.Fatalf("GET checkpoints: %v %s", err, b)
	}
	if out, err := java("io.github.sluice.flinkrest.Check", "http://"+c.rest(),
		"/jobs/"+running+"/checkpoints/details/"+strconv.FormatInt(cps.Latest.Completed.ID, 10)+"="+m+"checkpoints.CheckpointStatistics"); err != nil {
		t.Errorf("Flink's strict REST mapper refused the checkpoint's details (%v):\n%s", err, out)
	}
	second := run("-n", "100000000")
	testwait.Eventually(t, 30*time.Second, "the second job to run", func() bool {
		o, _ := c.sluice("list", "-r", "-m", c.rest())
		return strings.Contains(o, second)
	})
	if out := flink("cancel", second); !strings.Contains(out, "Cancelled job "+second) {
		t.Errorf("flink cancel:\n%s", out)
	}
	testwait.Eventually(t, 30*time.Second, "flink list -a to show both jobs ended", func() bool {
		out := flink("list", "-a")
		return strings.Contains(out, running+" : cluster test (FINISHED)") && strings.Contains(out, second+" : cluster test (CANCELED)")
	})

	// The results of ended jobs, as Flink's REST client reads them: its
	// JobResult turned into a JobExecutionResult, every accumulator and
	// the failure cause deserialized with Java serialization.
	jobResult := func(id string) string {
		t.Helper()
		out, err := java("io.github.sluice.flinkrest.Check", "--job-result", "http://"+c.rest(), "/jobs/"+id+"/execution-result")
		if err != nil {
			t.Errorf("Flink's client could not read the result of job %s (%v):\n%s", id, err, out)
		}
		return out
	}
	if out := jobResult(running); !regexp.MustCompile(`accumulator checkpoints=[1-9]\d* \(java.lang.Long\)`).MatchString(out) ||
		!strings.Contains(out, "accumulator restarts=0 (java.lang.Long)") ||
		!regexp.MustCompile(`accumulator savepoint=\S+/stop/savepoint-\S+ \(java.lang.String\)`).MatchString(out) ||
		!strings.Contains(out, "succeeded net-runtime=") {
		t.Errorf("the stopped job's result, as Flink reads it:\n%s", out)
	}
	if out := jobResult(second); !regexp.MustCompile(`(?m)^cancelled$`).MatchString(out) {
		t.Errorf("the cancelled job's result, as Flink reads it:\n%s", out)
	}
	o := c.mustSluice("run", "-d", "-m", c.rest(), "-p", "1", "-D", "restart-strategy.type=none",
		jobBin, "-out", filepath.Join(c.dir, "out-crash"), "-n", "100", "-crash-worker")
	crashed := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if crashed == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	testwait.Eventually(t, 60*time.Second, "the crashing job to fail", func() bool {
		return strings.Contains(flink("list", "-a"), crashed[1]+" : cluster test (FAILED)")
	})
	if out := jobResult(crashed[1]); !regexp.MustCompile(`(?m)^failed \S+: .*clusterjob: deliberate crash in worker mode`).MatchString(out) {
		t.Errorf("the failed job's result, as Flink reads it, does not carry the failure cause:\n%s", out)
	}

	// The job binary as Flink's jar: uploaded, listed, planned and run by
	// the JobManager.
	bin, err := os.ReadFile(jobBin)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("jarfile", "clusterjob")
	fw.Write(bin)
	mw.Close()
	res, err := http.Post("http://"+c.rest()+"/jars/upload", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var jars struct {
		Files []struct{ ID string } `json:"files"`
	}
	if b, err := httpGet(c.rest() + "/jars"); err != nil || json.Unmarshal(b, &jars) != nil || len(jars.Files) != 1 {
		t.Fatalf("GET /jars after an upload (%d): %v %s", res.StatusCode, err, b)
	}
	jarOut := filepath.Join(c.dir, "out-jar")
	progArgs := "programArg=-out," + jarOut + ",-n,2000,-keys,4"
	if out, err := java("io.github.sluice.flinkrest.Check", "http://"+c.rest(),
		"/jars=org.apache.flink.runtime.webmonitor.handlers.JarListInfo",
		"/jars/"+jars.Files[0].ID+"/plan?"+progArgs+"="+m+"JobPlanInfo"); err != nil {
		t.Errorf("Flink's strict REST mapper refused the jar answers (%v):\n%s", err, out)
	}
	res, err = http.Post("http://"+c.rest()+"/jars/"+jars.Files[0].ID+"/run?parallelism=1&"+progArgs, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var ran struct {
		JobID string `json:"jobid"`
	}
	err = json.NewDecoder(res.Body).Decode(&ran)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || ran.JobID == "" {
		t.Fatalf("POST /jars/:jarid/run: %d %v", res.StatusCode, err)
	}
	testwait.Eventually(t, 60*time.Second, "the job run from the jar to finish", func() bool {
		return strings.Contains(flink("list", "-a"), ran.JobID+" : cluster test (FINISHED)")
	})

	// sluice list prints what flink list prints, line for line, of the
	// same cluster (every job has ended: the answers cannot differ).
	// Flink's CLI also says "Waiting for response..." before its listing
	// (and SLF4J's warnings before that): its listing follows.
	listing := func(out string) string {
		_, after, ok := strings.Cut(out, "Waiting for response...\n")
		if !ok {
			t.Errorf("flink list printed no \"Waiting for response...\":\n%s", out)
		}
		return after
	}
	for _, flags := range [][]string{{"list"}, {"list", "-a"}, {"list", "-r"}, {"list", "-s"}} {
		want := listing(flink(flags...))
		got := c.mustSluice(append(flags, "-m", c.rest())...)
		if got != want {
			t.Errorf("sluice %s prints\n%s\nflink %[1]s prints\n%[3]s", strings.Join(flags, " "), got, want)
		}
	}
}
