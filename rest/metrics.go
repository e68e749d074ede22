package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsSnapshot is the state of the cluster's jobs at one moment, for
// GET /metrics. The Backend fills it from the metrics its JobMasters
// receive from workers.
type MetricsSnapshot struct {
	Jobs []JobMetrics
	// KerberosLogins are the Kerberos logins of the cluster's processes:
	// the JobManager's, each TaskManager's (from its heartbeats) and each
	// worker's (from its metrics reports). Empty on a cluster without
	// Kerberos.
	KerberosLogins []KerberosLoginMetrics
	// DelegationTokens is the state of the HDFS delegation tokens the
	// JobManager obtains for its containers (on YARN); nil when it obtains
	// none.
	DelegationTokens *DelegationTokenMetrics
	// TaskManagerTokens are the HDFS delegation tokens each running
	// TaskManager holds: those it was launched with (Component
	// ComponentTaskManager, TaskManagerID set; Obtained and Failures 0).
	// A TaskManager whose tokens' expiry is unknown (launched with the
	// client's tokens) is left out.
	TaskManagerTokens []DelegationTokenMetrics
}

// The processes of KerberosLoginMetrics.Component.
const (
	ComponentJobManager  = "jobmanager"
	ComponentTaskManager = "taskmanager"
	// ComponentWorker is a worker: the job binary a TaskManager runs,
	// which logs in itself for hdfs://.
	ComponentWorker = "worker"
)

// KerberosLoginMetrics are the state of one process's Kerberos login.
type KerberosLoginMetrics struct {
	// Component is the process: ComponentJobManager, ComponentTaskManager
	// or ComponentWorker.
	Component string
	// TaskManagerID is the TaskManager of a TaskManager or worker; Host the
	// process's host; JobID the job of a worker.
	TaskManagerID, Host, JobID string
	// Principal is the logged-in principal, name@REALM.
	Principal string
	// TGTExpiry and TGTRenewTill are Unix seconds; TGTRenewTill is 0 for a
	// TGT that is not renewable.
	TGTExpiry, TGTRenewTill int64
	// Relogins and ReloginFailures count the re-login loop's successful
	// and failed attempts since the process logged in.
	Relogins, ReloginFailures int64
}

// DelegationTokenMetrics are the state of a process's HDFS delegation
// tokens.
type DelegationTokenMetrics struct {
	// Component is the process that obtains them (ComponentJobManager) or
	// holds them (ComponentTaskManager).
	Component string
	// TaskManagerID is the TaskManager that holds them; empty for the
	// JobManager.
	TaskManagerID string
	// Expiry is the earliest expiry of the current tokens, Unix seconds; 0
	// before the first tokens are obtained.
	Expiry int64
	// Obtained and Failures count the successful and failed rounds of
	// obtaining tokens.
	Obtained, Failures int64
}

// JobMetrics are one job's metrics.
type JobMetrics struct {
	JobID   string
	JobName string
	// Restarts counts the job's restarts since it was submitted.
	Restarts int64
	// Checkpoints of the job; zero when it does not checkpoint.
	Checkpoints CheckpointMetrics
	// Subtasks are the metrics of the current attempt of each subtask.
	Subtasks []SubtaskMetrics
}

// CheckpointMetrics are a job's checkpoint counters.
type CheckpointMetrics struct {
	Completed, Failed, InProgress int64
	// LastDuration is the end-to-end duration of the last completed
	// checkpoint, ms.
	LastDuration int64
	// LastSize is the size the last completed checkpoint wrote (for an
	// incremental one, the new part), LastFullSize its full state size,
	// bytes.
	LastSize, LastFullSize int64
	// LastRestoreTimestamp is when the job last restored from a checkpoint
	// or savepoint, epoch ms; -1 when it never did.
	LastRestoreTimestamp int64
}

// SubtaskMetrics are one subtask's counters, accumulated since the subtask
// (its current attempt) started.
type SubtaskMetrics struct {
	VertexID   string
	VertexName string
	Subtask    int // 0-based index
	Attempt    int // 0 for the first attempt, +1 per restart
	// TaskManagerID and Host name where the subtask runs.
	TaskManagerID string
	Host          string

	RecordsIn, RecordsOut int64
	BytesIn, BytesOut     int64
	// Milliseconds the subtask was busy processing, back-pressured (waiting
	// for output buffers), idle (waiting for input).
	BusyMillis, BackpressuredMillis, IdleMillis int64
	// Watermark is the subtask's current input watermark, epoch ms;
	// math.MinInt64 before the first watermark (Flink reports the same).
	Watermark int64
}

// The metrics exported at GET /metrics. Names and labels of those Flink
// has are those of Flink's Prometheus reporter (flink_<scope>_<name>), so
// dashboards and alerts written for Flink work unchanged; Sluice's own are
// named sluice_<scope>_<name>. As in Flink's reporter, counters are
// exported as gauges: a subtask's counters start again from zero when it
// is restarted, which PromQL's rate() treats as a counter reset (so do a
// process's re-login and token counters).
//
// Cluster (labels: none):
//
//	flink_jobmanager_numRegisteredTaskManagers
//	flink_jobmanager_taskSlotsTotal
//	flink_jobmanager_taskSlotsAvailable
//	flink_jobmanager_numRunningJobs
//
// Job (labels: job_id, job_name):
//
//	flink_jobmanager_job_numRestarts
//	flink_jobmanager_job_numberOfCompletedCheckpoints
//	flink_jobmanager_job_numberOfFailedCheckpoints
//	flink_jobmanager_job_numberOfInProgressCheckpoints
//	flink_jobmanager_job_totalNumberOfCheckpoints
//	flink_jobmanager_job_lastCheckpointDuration        (ms)
//	flink_jobmanager_job_lastCheckpointSize            (bytes)
//	flink_jobmanager_job_lastCheckpointFullSize        (bytes)
//	flink_jobmanager_job_lastCheckpointRestoreTimestamp (epoch ms, -1: never)
//
// Subtask (labels: job_id, job_name, task_id, task_name, subtask_index,
// task_attempt_num, tm_id, host):
//
//	flink_taskmanager_job_task_numRecordsIn
//	flink_taskmanager_job_task_numRecordsOut
//	flink_taskmanager_job_task_numBytesIn
//	flink_taskmanager_job_task_numBytesOut
//	flink_taskmanager_job_task_accumulatedBusyTime          (ms)
//	flink_taskmanager_job_task_accumulatedBackpressuredTime (ms)
//	flink_taskmanager_job_task_accumulatedIdleTime          (ms)
//	flink_taskmanager_job_task_currentInputWatermark        (epoch ms)
//
// Kerberos login of each process of the cluster, so that an expiry can be
// alerted on before it comes (labels: component, tm_id, host, job_id,
// principal; component is jobmanager, taskmanager or worker, tm_id the
// TaskManager of a taskmanager or worker, job_id the job of a worker; a
// label that does not apply is empty). Nothing is exported of a process
// without a login, so nothing on a cluster without Kerberos:
//
//	sluice_kerberos_tgt_expiry_timestamp_seconds     (Unix s)
//	sluice_kerberos_tgt_renew_till_timestamp_seconds (Unix s; absent for a TGT that is not renewable)
//	sluice_kerberos_relogins_total
//	sluice_kerberos_relogin_failures_total
//
// HDFS delegation tokens that the JobManager obtains for its containers on
// a secure YARN cluster, and that each running TaskManager holds (those it
// was launched with; a running container's tokens are not replaced)
// (labels: component, tm_id; component is jobmanager or taskmanager):
//
//	sluice_delegation_token_expiry_timestamp_seconds (Unix s, the earliest; absent before the first tokens)
//	sluice_delegation_token_obtains_total        (jobmanager only)
//	sluice_delegation_token_obtain_failures_total (jobmanager only)
//
// Flink's per-second rates (numRecordsInPerSecond, busyTimeMsPerSecond, ...)
// are not exported: take rate() of the counters. The Go runtime and
// process metrics (go_*, process_*) of the JobManager process are exported
// too.
const (
	nsJobManager = "flink_jobmanager_"
	nsJob        = "flink_jobmanager_job_"
	nsTask       = "flink_taskmanager_job_task_"
	nsKerberos   = "sluice_kerberos_"
	nsDelegation = "sluice_delegation_token_"
)

var (
	jobLabels        = []string{"job_id", "job_name"}
	taskLabels       = []string{"job_id", "job_name", "task_id", "task_name", "subtask_index", "task_attempt_num", "tm_id", "host"}
	loginLabels      = []string{"component", "tm_id", "host", "job_id", "principal"}
	delegationLabels = []string{"component", "tm_id"}
)

// collector reads the Backend at each scrape.
type collector struct {
	backend Backend
	timeout time.Duration
	ctx     func() context.Context // the server's lifetime

	taskManagers, slotsTotal, slotsAvailable, runningJobs *prometheus.Desc

	restarts, cpCompleted, cpFailed, cpInProgress, cpTotal,
	cpLastDuration, cpLastSize, cpLastFullSize, cpLastRestore *prometheus.Desc

	recordsIn, recordsOut, bytesIn, bytesOut,
	busy, backpressured, idle, watermark *prometheus.Desc

	tgtExpiry, tgtRenewTill, relogins, reloginFailures *prometheus.Desc

	tokenExpiry, tokenObtains, tokenFailures *prometheus.Desc

	scrapeError *prometheus.Desc
}

func newCollector(b Backend, timeout time.Duration, ctx func() context.Context) *collector {
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		backend: b, timeout: timeout, ctx: ctx,

		taskManagers:   d(nsJobManager+"numRegisteredTaskManagers", "Number of registered TaskManagers.", nil),
		slotsTotal:     d(nsJobManager+"taskSlotsTotal", "Number of task slots of the registered TaskManagers.", nil),
		slotsAvailable: d(nsJobManager+"taskSlotsAvailable", "Number of free task slots.", nil),
		runningJobs:    d(nsJobManager+"numRunningJobs", "Number of jobs that have not ended.", nil),

		restarts:       d(nsJob+"numRestarts", "Restarts of the job since it was submitted.", jobLabels),
		cpCompleted:    d(nsJob+"numberOfCompletedCheckpoints", "Completed checkpoints.", jobLabels),
		cpFailed:       d(nsJob+"numberOfFailedCheckpoints", "Failed checkpoints.", jobLabels),
		cpInProgress:   d(nsJob+"numberOfInProgressCheckpoints", "Checkpoints in progress.", jobLabels),
		cpTotal:        d(nsJob+"totalNumberOfCheckpoints", "Checkpoints triggered (completed, failed and in progress).", jobLabels),
		cpLastDuration: d(nsJob+"lastCheckpointDuration", "End-to-end duration of the last completed checkpoint, ms.", jobLabels),
		cpLastSize:     d(nsJob+"lastCheckpointSize", "Bytes written by the last completed checkpoint (the new part of an incremental one).", jobLabels),
		cpLastFullSize: d(nsJob+"lastCheckpointFullSize", "Full state size of the last completed checkpoint, bytes.", jobLabels),
		cpLastRestore:  d(nsJob+"lastCheckpointRestoreTimestamp", "When the job last restored from a checkpoint or savepoint, epoch ms; -1 when never.", jobLabels),

		recordsIn:     d(nsTask+"numRecordsIn", "Records the subtask received.", taskLabels),
		recordsOut:    d(nsTask+"numRecordsOut", "Records the subtask emitted.", taskLabels),
		bytesIn:       d(nsTask+"numBytesIn", "Bytes the subtask received from other subtasks.", taskLabels),
		bytesOut:      d(nsTask+"numBytesOut", "Bytes the subtask sent to other subtasks.", taskLabels),
		busy:          d(nsTask+"accumulatedBusyTime", "Time the subtask spent processing, ms.", taskLabels),
		backpressured: d(nsTask+"accumulatedBackpressuredTime", "Time the subtask waited for output buffers (back-pressure), ms.", taskLabels),
		idle:          d(nsTask+"accumulatedIdleTime", "Time the subtask waited for input, ms.", taskLabels),
		watermark:     d(nsTask+"currentInputWatermark", "The subtask's current input watermark, epoch ms.", taskLabels),

		tgtExpiry:       d(nsKerberos+"tgt_expiry_timestamp_seconds", "When the process's Kerberos TGT expires, Unix seconds.", loginLabels),
		tgtRenewTill:    d(nsKerberos+"tgt_renew_till_timestamp_seconds", "Until when the process's Kerberos TGT can be renewed, Unix seconds.", loginLabels),
		relogins:        d(nsKerberos+"relogins_total", "Successful Kerberos re-logins and renewals of the process.", loginLabels),
		reloginFailures: d(nsKerberos+"relogin_failures_total", "Failed Kerberos re-login and renewal attempts of the process.", loginLabels),

		tokenExpiry:   d(nsDelegation+"expiry_timestamp_seconds", "The earliest expiry of the current HDFS delegation tokens, Unix seconds.", delegationLabels),
		tokenObtains:  d(nsDelegation+"obtains_total", "Rounds that obtained HDFS delegation tokens.", delegationLabels),
		tokenFailures: d(nsDelegation+"obtain_failures_total", "Rounds that failed to obtain HDFS delegation tokens.", delegationLabels),

		scrapeError: d("sluice_rest_metrics_scrape_error", "Reading the cluster's metrics failed.", nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.taskManagers, c.slotsTotal, c.slotsAvailable, c.runningJobs,
		c.restarts, c.cpCompleted, c.cpFailed, c.cpInProgress, c.cpTotal,
		c.cpLastDuration, c.cpLastSize, c.cpLastFullSize, c.cpLastRestore,
		c.recordsIn, c.recordsOut, c.bytesIn, c.bytesOut, c.busy, c.backpressured, c.idle, c.watermark,
		c.tgtExpiry, c.tgtRenewTill, c.relogins, c.reloginFailures,
		c.tokenExpiry, c.tokenObtains, c.tokenFailures,
		c.scrapeError,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	// The registry collects on goroutines of its own, out of reach of the
	// server's panic recovery.
	defer func() {
		if v := recover(); v != nil {
			ch <- prometheus.NewInvalidMetric(c.scrapeError, fmt.Errorf("panic reading the cluster's metrics: %v", v))
		}
	}()
	ctx, cancel := context.WithTimeout(c.ctx(), c.timeout)
	defer cancel()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...)
		if err != nil { // a label value that is not UTF-8
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	// The *_total series only grow (Prometheus counters); Flink's own
	// metrics above keep the gauge type Flink's Prometheus reporter gives
	// them.
	cnt := func(d *prometheus.Desc, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, prometheus.CounterValue, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	if tms, err := c.backend.TaskManagers(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(c.scrapeError, fmt.Errorf("listing TaskManagers: %w", err))
	} else {
		var total, free int
		for _, tm := range tms {
			total += tm.SlotsNumber
			free += tm.FreeSlots
		}
		g(c.taskManagers, float64(len(tms)))
		g(c.slotsTotal, float64(total))
		g(c.slotsAvailable, float64(free))
	}
	if jobs, err := c.backend.Jobs(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(c.scrapeError, fmt.Errorf("listing jobs: %w", err))
	} else {
		running := 0
		for _, j := range jobs {
			if !j.State.IsGloballyTerminal() {
				running++
			}
		}
		g(c.runningJobs, float64(running))
	}
	snap, err := c.backend.Metrics(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.scrapeError, fmt.Errorf("reading job metrics: %w", err))
		return
	}
	if snap == nil {
		return
	}
	for _, j := range snap.Jobs {
		jl := []string{j.JobID, j.JobName}
		cp := j.Checkpoints
		g(c.restarts, float64(j.Restarts), jl...)
		g(c.cpCompleted, float64(cp.Completed), jl...)
		g(c.cpFailed, float64(cp.Failed), jl...)
		g(c.cpInProgress, float64(cp.InProgress), jl...)
		g(c.cpTotal, float64(cp.Completed+cp.Failed+cp.InProgress), jl...)
		g(c.cpLastDuration, float64(cp.LastDuration), jl...)
		g(c.cpLastSize, float64(cp.LastSize), jl...)
		g(c.cpLastFullSize, float64(cp.LastFullSize), jl...)
		g(c.cpLastRestore, float64(cp.LastRestoreTimestamp), jl...)
		for _, s := range j.Subtasks {
			tl := []string{j.JobID, j.JobName, s.VertexID, s.VertexName,
				strconv.Itoa(s.Subtask), strconv.Itoa(s.Attempt), s.TaskManagerID, s.Host}
			g(c.recordsIn, float64(s.RecordsIn), tl...)
			g(c.recordsOut, float64(s.RecordsOut), tl...)
			g(c.bytesIn, float64(s.BytesIn), tl...)
			g(c.bytesOut, float64(s.BytesOut), tl...)
			g(c.busy, float64(s.BusyMillis), tl...)
			g(c.backpressured, float64(s.BackpressuredMillis), tl...)
			g(c.idle, float64(s.IdleMillis), tl...)
			g(c.watermark, float64(s.Watermark), tl...)
		}
	}
	for _, l := range snap.KerberosLogins {
		ll := []string{l.Component, l.TaskManagerID, l.Host, l.JobID, l.Principal}
		g(c.tgtExpiry, float64(l.TGTExpiry), ll...)
		if l.TGTRenewTill != 0 {
			g(c.tgtRenewTill, float64(l.TGTRenewTill), ll...)
		}
		cnt(c.relogins, float64(l.Relogins), ll...)
		cnt(c.reloginFailures, float64(l.ReloginFailures), ll...)
	}
	if t := snap.DelegationTokens; t != nil {
		if t.Expiry != 0 {
			g(c.tokenExpiry, float64(t.Expiry), t.Component, t.TaskManagerID)
		}
		cnt(c.tokenObtains, float64(t.Obtained), t.Component, t.TaskManagerID)
		cnt(c.tokenFailures, float64(t.Failures), t.Component, t.TaskManagerID)
	}
	for _, t := range snap.TaskManagerTokens {
		if t.Expiry != 0 {
			g(c.tokenExpiry, float64(t.Expiry), t.Component, t.TaskManagerID)
		}
	}
}

// metricsHandler serves the registry of the cluster's metrics, the Go
// runtime's and the process's. A scrape whose backend calls fail serves
// what it could collect, with the failure logged.
func metricsHandler(b Backend, timeout time.Duration, ctx func() context.Context, log *slog.Logger) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(b, timeout, ctx)) // descriptors are constants: cannot fail
	reg.MustRegister(collectors.NewGoCollector())
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slogPromLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

type slogPromLogger struct{ log *slog.Logger }

func (l slogPromLogger) Println(v ...any) { l.log.Warn("serving metrics", "error", fmt.Sprint(v...)) }
