package rest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/sluice/sluice/rest/restapi"
)

// The metrics of jobs and of the JobManager, by Flink's names, as Flink's
// metric handlers serve them:
//
//	GET /jobs/:jobid/metrics[?get=]             [{id[, value]}] of the job
//	GET /jobs/metrics[?get=&agg=&jobs=]         [{id, min, max, avg, sum, skew}] over the jobs (all, or those of ?jobs=)
//	GET /jobmanager/metrics[?get=]              [{id[, value]}] of the JobManager
//
// Without ?get= the answer lists the metrics' names; with it, the values
// of those asked for that exist. The values are those of GET /metrics.

// jobMetricDefs are a job's metrics.
var jobMetricDefs = []struct {
	name string
	get  func(JobMetrics) int64
}{
	{"numRestarts", func(j JobMetrics) int64 { return j.Restarts }},
	{"numberOfCompletedCheckpoints", func(j JobMetrics) int64 { return j.Checkpoints.Completed }},
	{"numberOfFailedCheckpoints", func(j JobMetrics) int64 { return j.Checkpoints.Failed }},
	{"numberOfInProgressCheckpoints", func(j JobMetrics) int64 { return j.Checkpoints.InProgress }},
	{"totalNumberOfCheckpoints", func(j JobMetrics) int64 {
		return j.Checkpoints.Completed + j.Checkpoints.Failed + j.Checkpoints.InProgress
	}},
	{"lastCheckpointDuration", func(j JobMetrics) int64 { return j.Checkpoints.LastDuration }},
	{"lastCheckpointSize", func(j JobMetrics) int64 { return j.Checkpoints.LastSize }},
	{"lastCheckpointFullSize", func(j JobMetrics) int64 { return j.Checkpoints.LastFullSize }},
	{"lastCheckpointRestoreTimestamp", func(j JobMetrics) int64 { return j.Checkpoints.LastRestoreTimestamp }},
}

// namedMetrics answers ?get= over metrics listed in order: their names
// without it, the values of those asked for with it.
func namedMetrics(r *http.Request, names []string, value func(i int) string) []restapi.Metric {
	want := listParam(r, "get")
	out := []restapi.Metric{}
	for i, n := range names {
		switch {
		case len(want) == 0:
			out = append(out, restapi.Metric{ID: n})
		case slices.Contains(want, n):
			v := value(i)
			out = append(out, restapi.Metric{ID: n, Value: &v})
		}
	}
	return out
}

func jobMetricNames() []string {
	out := make([]string, len(jobMetricDefs))
	for i, d := range jobMetricDefs {
		out[i] = d.name
	}
	return out
}

// jobsMetrics reads the jobs' metrics; on failure it has answered.
func (s *Server) jobsMetrics(w http.ResponseWriter, r *http.Request) ([]JobMetrics, bool) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	snap, err := s.backend.Metrics(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return nil, false
	}
	if snap == nil {
		return nil, true
	}
	return snap.Jobs, true
}

func (s *Server) getJobMetrics(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	jobs, ok := s.jobsMetrics(w, r)
	if !ok {
		return
	}
	i := slices.IndexFunc(jobs, func(j JobMetrics) bool { return j.JobID == id })
	if i < 0 {
		// A job the cluster knows without metrics (not yet deployed)
		// has none, as in Flink; an unknown job is 404.
		ctx, cancel := s.backendCtx(r)
		defer cancel()
		if _, err := s.backend.Job(ctx, id); err != nil {
			s.writeBackendError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, []restapi.Metric{})
		return
	}
	j := jobs[i]
	writeJSON(w, http.StatusOK, namedMetrics(r, jobMetricNames(), func(k int) string {
		return strconv.FormatInt(jobMetricDefs[k].get(j), 10)
	}))
}

func (s *Server) getJobsMetrics(w http.ResponseWriter, r *http.Request) {
	var ids []string
	for _, raw := range listParam(r, "jobs") {
		id, ok := restapi.ParseID(raw)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("jobs: job ID %q is malformed: a job ID is 32 hexadecimal characters", raw))
			return
		}
		ids = append(ids, id)
	}
	jobs, ok := s.jobsMetrics(w, r)
	if !ok {
		return
	}
	if len(ids) > 0 {
		jobs = slices.DeleteFunc(slices.Clone(jobs), func(j JobMetrics) bool { return !slices.Contains(ids, j.JobID) })
	}
	names := listParam(r, "get")
	if len(names) == 0 {
		out := []restapi.Metric{}
		if len(jobs) > 0 {
			for _, n := range jobMetricNames() {
				out = append(out, restapi.Metric{ID: n})
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	aggs, ok := aggregations(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, aggregateMetrics(names, aggs, func(name string) []float64 {
		k := slices.IndexFunc(jobMetricDefs, func(d struct {
			name string
			get  func(JobMetrics) int64
		}) bool {
			return d.name == name
		})
		if k < 0 {
			return nil
		}
		vals := make([]float64, len(jobs))
		for i, j := range jobs {
			vals[i] = float64(jobMetricDefs[k].get(j))
		}
		return vals
	}))
}

func (s *Server) getJobManagerMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	tms, err := s.backend.TaskManagers(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	jobs, err := s.backend.Jobs(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	var total, free, running int
	for _, tm := range tms {
		total += tm.SlotsNumber
		free += tm.FreeSlots
	}
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			running++
		}
	}
	vals := []int{len(tms), total, free, running}
	writeJSON(w, http.StatusOK, namedMetrics(r, []string{"numRegisteredTaskManagers", "taskSlotsTotal", "taskSlotsAvailable", "numRunningJobs"},
		func(i int) string { return strconv.Itoa(vals[i]) }))
}
