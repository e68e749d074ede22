package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

// scrape reads /metrics and parses it as Prometheus would.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	r := do(t, "GET", url+"/metrics", "", nil)
	if r.status != 200 {
		t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, r.body)
	}
	return fams
}

// sample returns the value of the series of family name with the given
// labels (a subset of the series' labels).
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	var found []float64
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m.GetGauge().GetValue())
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series match", name, labels, len(found))
	}
	return found[0]
}

func TestMetrics(t *testing.T) {
	b, clk := fixture(t)
	b.SetMetrics(&rest.MetricsSnapshot{Jobs: []rest.JobMetrics{{
		JobID: jobRunning, JobName: "word count", Restarts: 2,
		Checkpoints: rest.CheckpointMetrics{Completed: 7, Failed: 1, InProgress: 1, LastDuration: 350, LastSize: 4096, LastFullSize: 65536, LastRestoreTimestamp: -1},
		Subtasks: []rest.SubtaskMetrics{
			{VertexID: vertexA, VertexName: "Source: lines -> Flat Map", Subtask: 0, Attempt: 2, TaskManagerID: "tm-1", Host: "127.0.0.1",
				RecordsIn: 0, RecordsOut: 1000, BytesOut: 8192, BusyMillis: 1500, BackpressuredMillis: 250, IdleMillis: 10, Watermark: math.MinInt64},
			{VertexID: vertexB, VertexName: "Count -> Sink: print", Subtask: 1, Attempt: 2, TaskManagerID: "tm-2", Host: "127.0.0.1",
				RecordsIn: 480, RecordsOut: 12, BytesIn: 4000, BusyMillis: 90, IdleMillis: 3000, Watermark: 1_700_000_000_123},
		},
	}}})
	s := serve(t, b, clk, nil)
	fams := scrape(t, s.URL())
	job := map[string]string{"job_id": jobRunning, "job_name": "word count"}
	src := map[string]string{"job_id": jobRunning, "job_name": "word count", "task_id": vertexA, "task_name": "Source: lines -> Flat Map",
		"subtask_index": "0", "task_attempt_num": "2", "tm_id": "tm-1", "host": "127.0.0.1"}
	sink := map[string]string{"task_id": vertexB, "subtask_index": "1", "tm_id": "tm-2"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"flink_jobmanager_numRegisteredTaskManagers", nil, 2},
		{"flink_jobmanager_taskSlotsTotal", nil, 4},
		{"flink_jobmanager_taskSlotsAvailable", nil, 1},
		{"flink_jobmanager_numRunningJobs", nil, 2},
		{"flink_jobmanager_job_numRestarts", job, 2},
		{"flink_jobmanager_job_numberOfCompletedCheckpoints", job, 7},
		{"flink_jobmanager_job_numberOfFailedCheckpoints", job, 1},
		{"flink_jobmanager_job_numberOfInProgressCheckpoints", job, 1},
		{"flink_jobmanager_job_totalNumberOfCheckpoints", job, 9},
		{"flink_jobmanager_job_lastCheckpointDuration", job, 350},
		{"flink_jobmanager_job_lastCheckpointSize", job, 4096},
		{"flink_jobmanager_job_lastCheckpointFullSize", job, 65536},
		{"flink_jobmanager_job_lastCheckpointRestoreTimestamp", job, -1},
		{"flink_taskmanager_job_task_numRecordsIn", src, 0},
		{"flink_taskmanager_job_task_numRecordsOut", src, 1000},
		{"flink_taskmanager_job_task_numBytesOut", src, 8192},
		{"flink_taskmanager_job_task_accumulatedBusyTime", src, 1500},
		{"flink_taskmanager_job_task_accumulatedBackpressuredTime", src, 250},
		{"flink_taskmanager_job_task_accumulatedIdleTime", src, 10},
		{"flink_taskmanager_job_task_currentInputWatermark", src, math.MinInt64},
		{"flink_taskmanager_job_task_numRecordsIn", sink, 480},
		{"flink_taskmanager_job_task_numBytesIn", sink, 4000},
		{"flink_taskmanager_job_task_currentInputWatermark", sink, 1_700_000_000_123},
	} {
		if got := sample(t, fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_open_fds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("runtime metric %s missing", name)
		}
	}
	if f := fams["flink_taskmanager_job_task_numRecordsIn"]; f.GetType() != dto.MetricType_GAUGE {
		t.Errorf("type %v, want gauge as in Flink's reporter", f.GetType())
	}
	// The label names are Flink's, in full.
	var names []string
	for _, l := range fams["flink_taskmanager_job_task_numRecordsOut"].Metric[0].Label {
		names = append(names, l.GetName())
	}
	sort.Strings(names)
	if got, want := strings.Join(names, ","), "host,job_id,job_name,subtask_index,task_attempt_num,task_id,task_name,tm_id"; got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
}

// A failing backend still serves what it can: the runtime's metrics.
func TestMetricsBackendFailure(t *testing.T) {
	b, clk := fixture(t)
	b.Err = restapi.ErrUnavailable
	s := serve(t, b, clk, nil)
	fams := scrape(t, s.URL())
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("runtime metrics missing")
	}
	if _, ok := fams["flink_jobmanager_numRunningJobs"]; ok {
		t.Error("a cluster metric was served from a failing backend")
	}
}

// A label value that is not UTF-8 drops that series only; a panicking
// backend drops the cluster's metrics only.
func TestMetricsBadInput(t *testing.T) {
	b, clk := fixture(t)
	b.SetMetrics(&rest.MetricsSnapshot{Jobs: []rest.JobMetrics{
		{JobID: jobRunning, JobName: "bad \xff name", Restarts: 1},
		{JobID: jobFinished, JobName: "good", Restarts: 3},
	}})
	s := serve(t, b, clk, nil)
	fams := scrape(t, s.URL())
	if got := sample(t, fams, "flink_jobmanager_job_numRestarts", map[string]string{"job_id": jobFinished}); got != 3 {
		t.Errorf("numRestarts of the good job = %v", got)
	}
	s2 := serve(t, metricsPanic{b}, clk, nil)
	if fams := scrape(t, s2.URL()); fams["go_goroutines"] == nil {
		t.Error("runtime metrics missing after a backend panic")
	}
}

type metricsPanic struct{ *resttest.Backend }

func (metricsPanic) Metrics(context.Context) (*rest.MetricsSnapshot, error) { panic("metrics boom") }

// The logins of the cluster's processes and the JobManager's delegation
// tokens are exported under sluice_kerberos_* and sluice_delegation_token_*;
// a cluster without Kerberos exports none of them.
func TestMetricsCredentials(t *testing.T) {
	const (
		amPrincipal = "sluice/am.example.com@EXAMPLE.COM"
		tmPrincipal = "sluice@EXAMPLE.COM"
	)
	jm := rest.KerberosLoginMetrics{Component: rest.ComponentJobManager, Host: "am.example.com", Principal: amPrincipal,
		TGTExpiry: 1_772_370_000, TGTRenewTill: 1_772_956_800, Relogins: 4, ReloginFailures: 1}
	tm := rest.KerberosLoginMetrics{Component: rest.ComponentTaskManager, TaskManagerID: "tm-1", Host: "nm1.example.com", Principal: tmPrincipal,
		TGTExpiry: 1_772_373_600} // not renewable
	worker := rest.KerberosLoginMetrics{Component: rest.ComponentWorker, TaskManagerID: "tm-1", Host: "nm1.example.com", JobID: jobRunning,
		Principal: tmPrincipal, TGTExpiry: 1_772_377_200, TGTRenewTill: 1_772_460_000, Relogins: 1}
	jobs := []rest.JobMetrics{{JobID: jobRunning, JobName: "word count"}}
	for _, tc := range []struct {
		name string
		snap *rest.MetricsSnapshot
		want []string // every sluice_kerberos_* and sluice_delegation_token_* series, sorted
	}{
		{"no Kerberos", &rest.MetricsSnapshot{Jobs: jobs}, nil},
		{"every process logged in, tokens obtained", &rest.MetricsSnapshot{Jobs: jobs,
			KerberosLogins:   []rest.KerberosLoginMetrics{jm, tm, worker},
			DelegationTokens: &rest.DelegationTokenMetrics{Component: rest.ComponentJobManager, Expiry: 1_772_400_000, Obtained: 3, Failures: 1},
			TaskManagerTokens: []rest.DelegationTokenMetrics{
				{Component: rest.ComponentTaskManager, TaskManagerID: "tm-1", Expiry: 1_772_300_000},
				{Component: rest.ComponentTaskManager, TaskManagerID: "tm-2", Expiry: 1_772_400_000},
			}},
			[]string{
				`sluice_delegation_token_expiry_timestamp_seconds{component="jobmanager"} 1.7724e+09`,
				`sluice_delegation_token_expiry_timestamp_seconds{component="taskmanager",tm_id="tm-1"} 1.7723e+09`,
				`sluice_delegation_token_expiry_timestamp_seconds{component="taskmanager",tm_id="tm-2"} 1.7724e+09`,
				`sluice_delegation_token_obtain_failures_total{component="jobmanager"} 1`,
				`sluice_delegation_token_obtains_total{component="jobmanager"} 3`,
				`sluice_kerberos_relogin_failures_total{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1`,
				`sluice_kerberos_relogin_failures_total{component="taskmanager",host="nm1.example.com",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 0`,
				`sluice_kerberos_relogin_failures_total{component="worker",host="nm1.example.com",job_id="` + jobRunning + `",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 0`,
				`sluice_kerberos_relogins_total{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 4`,
				`sluice_kerberos_relogins_total{component="taskmanager",host="nm1.example.com",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 0`,
				`sluice_kerberos_relogins_total{component="worker",host="nm1.example.com",job_id="` + jobRunning + `",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 1`,
				`sluice_kerberos_tgt_expiry_timestamp_seconds{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1.77237e+09`,
				`sluice_kerberos_tgt_expiry_timestamp_seconds{component="taskmanager",host="nm1.example.com",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 1.7723736e+09`,
				`sluice_kerberos_tgt_expiry_timestamp_seconds{component="worker",host="nm1.example.com",job_id="` + jobRunning + `",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 1.7723772e+09`,
				// The TaskManager's TGT is not renewable: no renew-till.
				`sluice_kerberos_tgt_renew_till_timestamp_seconds{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1.7729568e+09`,
				`sluice_kerberos_tgt_renew_till_timestamp_seconds{component="worker",host="nm1.example.com",job_id="` + jobRunning + `",principal="sluice@EXAMPLE.COM",tm_id="tm-1"} 1.77246e+09`,
			}},
		{"tokens not obtained yet", &rest.MetricsSnapshot{
			KerberosLogins:   []rest.KerberosLoginMetrics{jm},
			DelegationTokens: &rest.DelegationTokenMetrics{Component: rest.ComponentJobManager, Failures: 2}},
			[]string{
				`sluice_delegation_token_obtain_failures_total{component="jobmanager"} 2`,
				`sluice_delegation_token_obtains_total{component="jobmanager"} 0`,
				`sluice_kerberos_relogin_failures_total{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1`,
				`sluice_kerberos_relogins_total{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 4`,
				`sluice_kerberos_tgt_expiry_timestamp_seconds{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1.77237e+09`,
				`sluice_kerberos_tgt_renew_till_timestamp_seconds{component="jobmanager",host="am.example.com",principal="sluice/am.example.com@EXAMPLE.COM"} 1.7729568e+09`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := fixture(t)
			b.SetMetrics(tc.snap)
			fams := scrape(t, serve(t, b, clk, nil).URL())
			var got []string
			for name, f := range fams {
				if !strings.HasPrefix(name, "sluice_kerberos_") && !strings.HasPrefix(name, "sluice_delegation_token_") {
					continue
				}
				// What only grows is a counter (*_total); timestamps are gauges.
				want := dto.MetricType_GAUGE
				if strings.HasSuffix(name, "_total") {
					want = dto.MetricType_COUNTER
				}
				if f.GetType() != want {
					t.Errorf("%s is a %v, want a %v", name, f.GetType(), want)
				}
				for _, m := range f.Metric {
					var labels []string
					for _, l := range m.Label {
						if l.GetValue() != "" {
							labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
						}
					}
					sort.Strings(labels)
					got = append(got, fmt.Sprintf("%s{%s} %v", name, strings.Join(labels, ","), m.GetGauge().GetValue()+m.GetCounter().GetValue()))
				}
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("exported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if _, ok := fams["flink_jobmanager_numRunningJobs"]; !ok {
				t.Error("the cluster's metrics are missing")
			}
		})
	}
}
