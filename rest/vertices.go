package rest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
)

// The endpoints of a job's vertices and configuration and of one
// TaskManager, served from what the Backend's Job and TaskManagers answer:
//
//	GET /jobs/:jobid/config                               JobConfigInfo
//	GET /jobs/:jobid/jobmanager/config                    the job's configuration [{key, value}], secrets masked
//	GET /jobs/:jobid/vertices/:vertexid                   VertexDetails: its subtasks
//	GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics  [{id, min, max, avg, sum, skew}] (?get=, ?agg=, ?subtasks=)
//	GET /jobs/:jobid/vertices/:vertexid/metrics           [{id, value}] per subtask, "<subtask>.<metric>" (?get=)
//	GET /jobs/:jobid/vertices/:vertexid/watermarks        [{id: "<subtask>.currentInputWatermark", value}]
//	GET /taskmanagers/:taskmanagerid                      TaskManagerDetails

// ---------------------------------------------------------------------------

func (s *Server) getJobConfig(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	out := restapi.JobConfigInfo{JobID: d.ID, Name: d.Name}
	if ec := d.ExecutionConfig; ec != nil {
		c := *ec
		if c.UserConfig == nil {
			c.UserConfig = map[string]string{}
		}
		out.ExecutionConfig = &c
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getJobJobManagerConfig(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	keys := make([]string, 0, len(d.Config))
	for k := range d.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	entries := make([]restapi.ConfigEntry, 0, len(keys))
	for _, k := range keys {
		entries = append(entries, restapi.ConfigEntry{Key: k, Value: maskValue(k, d.Config[k])})
	}
	writeJSON(w, http.StatusOK, entries)
}

// maskValue hides the value of a sensitive key, as Flink does.
func maskValue(key, value string) string {
	lk := strings.ToLower(key)
	for _, p := range sensitiveKeyParts {
		if strings.Contains(lk, p) {
			return maskedValue
		}
	}
	return value
}

// vertex reads the job and its {vertexid}; on failure it has answered.
func (s *Server) vertex(w http.ResponseWriter, r *http.Request) (*restapi.JobDetails, *restapi.Vertex, bool) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return nil, nil, false
	}
	raw := r.PathValue("vertexid")
	id, ok := restapi.ParseID(raw)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("vertex ID %q is malformed: a vertex ID is 32 hexadecimal characters (see the vertices of GET /jobs/:jobid)", raw))
		return nil, nil, false
	}
	for i := range d.Vertices {
		if d.Vertices[i].ID == id {
			return d, &d.Vertices[i], true
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("job %s has no vertex %s", d.ID, id))
	return nil, nil, false
}

// subtasksOf returns the vertex's subtasks as served: every state a key of
// status-duration, the deprecated start time set.
func subtasksOf(v *restapi.Vertex) []restapi.SubtaskDetails {
	out := make([]restapi.SubtaskDetails, len(v.Subtasks))
	for i, st := range v.Subtasks {
		sd := make(map[restapi.ExecutionState]int64, 5)
		for _, k := range []restapi.ExecutionState{restapi.TaskCreated, restapi.TaskScheduled, restapi.TaskDeploying, restapi.TaskInitializing, restapi.TaskRunning} {
			sd[k] = st.StatusDuration[k]
		}
		st.StatusDuration = sd
		st.StartTimeDeprecated = st.StartTime
		out[i] = st
	}
	return out
}

func (s *Server) getVertex(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	subs := subtasksOf(v)
	out := restapi.VertexDetails{ID: v.ID, Name: v.Name, MaxParallelism: v.MaxParallelism, Parallelism: v.Parallelism,
		Now: s.cfg.Clock.NowMillis(), Subtasks: subs, Aggregated: aggregatedDetails(subs)}
	writeJSON(w, http.StatusOK, out)
}

// aggregatedDetails summarises the I/O metrics and state durations of
// subtasks (Flink's AggregatedTaskDetailsInfo).
func aggregatedDetails(subs []restapi.SubtaskDetails) restapi.AggregatedTaskDetails {
	out := restapi.AggregatedTaskDetails{Metrics: map[string]map[string]int64{}, StatusDuration: map[string]map[string]int64{}}
	ioMetrics := map[string]func(restapi.IOMetrics) int64{
		"read-bytes":                     func(m restapi.IOMetrics) int64 { return m.ReadBytes },
		"write-bytes":                    func(m restapi.IOMetrics) int64 { return m.WriteBytes },
		"read-records":                   func(m restapi.IOMetrics) int64 { return m.ReadRecords },
		"write-records":                  func(m restapi.IOMetrics) int64 { return m.WriteRecords },
		"accumulated-backpressured-time": func(m restapi.IOMetrics) int64 { return m.AccumulatedBackpressuredTime },
		"accumulated-idle-time":          func(m restapi.IOMetrics) int64 { return m.AccumulatedIdleTime },
		"accumulated-busy-time":          func(m restapi.IOMetrics) int64 { return int64(m.AccumulatedBusyTime) },
	}
	for name, f := range ioMetrics {
		vals := make([]int64, len(subs))
		for i, st := range subs {
			vals[i] = f(st.Metrics)
		}
		out.Metrics[name] = aggregate(vals)
	}
	for _, state := range []restapi.ExecutionState{restapi.TaskCreated, restapi.TaskScheduled, restapi.TaskDeploying, restapi.TaskInitializing, restapi.TaskRunning} {
		vals := make([]int64, len(subs))
		for i, st := range subs {
			vals[i] = st.StatusDuration[state]
		}
		out.StatusDuration[string(state)] = aggregate(vals)
	}
	return out
}

// aggregate is Flink's summary of a quantity over subtasks: min, max, avg,
// sum and percentiles.
func aggregate(vals []int64) map[string]int64 {
	s := Summarize(vals)
	var sum int64
	for _, v := range vals {
		sum += v
	}
	q := func(p float64) int64 {
		if len(vals) == 0 {
			return 0
		}
		v := slices.Clone(vals)
		slices.Sort(v)
		return v[int(math.Round(p*float64(len(v)-1)))]
	}
	return map[string]int64{"min": s.Min, "max": s.Max, "avg": s.Avg, "sum": sum,
		"median": q(0.5), "p25": q(0.25), "p75": q(0.75), "p95": q(0.95)}
}

// Task metrics by their Flink names, read from a subtask; a metric the
// subtask does not have (yet) is left out.
var taskMetrics = []struct {
	name string
	get  func(restapi.SubtaskDetails) (float64, bool)
}{
	{"numRecordsIn", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Metrics.ReadRecords), true }},
	{"numRecordsOut", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Metrics.WriteRecords), true }},
	{"numBytesIn", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Metrics.ReadBytes), true }},
	{"numBytesOut", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Metrics.WriteBytes), true }},
	{"accumulatedBusyTime", func(s restapi.SubtaskDetails) (float64, bool) { return s.Metrics.AccumulatedBusyTime, true }},
	{"accumulatedBackpressuredTime", func(s restapi.SubtaskDetails) (float64, bool) {
		return float64(s.Metrics.AccumulatedBackpressuredTime), true
	}},
	{"accumulatedIdleTime", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Metrics.AccumulatedIdleTime), true }},
	{"currentInputWatermark", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.Watermark), true }},
	{"currentOutputWatermark", func(s restapi.SubtaskDetails) (float64, bool) { return float64(s.OutputWatermark), true }},
	{"numRecordsInPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.RecordsInPerSecond })},
	{"numRecordsOutPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.RecordsOutPerSecond })},
	{"numBytesInPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.BytesInPerSecond })},
	{"numBytesOutPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.BytesOutPerSecond })},
	{"busyTimeMsPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.BusyTimeMsPerSecond })},
	{"backPressuredTimeMsPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.BackPressuredTimeMsPerSecond })},
	{"idleTimeMsPerSecond", rate(func(r *restapi.SubtaskRates) float64 { return r.IdleTimeMsPerSecond })},
}

func rate(f func(*restapi.SubtaskRates) float64) func(restapi.SubtaskDetails) (float64, bool) {
	return func(s restapi.SubtaskDetails) (float64, bool) {
		if s.Rates == nil {
			return 0, false
		}
		return f(s.Rates), true
	}
}

// isWatermark reports whether a task metric is an epoch-ms watermark,
// written as an integer.
func isWatermark(name string) bool {
	return name == "currentInputWatermark" || name == "currentOutputWatermark"
}

func taskMetric(name string) (func(restapi.SubtaskDetails) (float64, bool), bool) {
	for _, m := range taskMetrics {
		if m.name == name {
			return m.get, true
		}
	}
	return nil, false
}

// listParam splits a comma-separated query parameter.
func listParam(r *http.Request, name string) []string {
	var out []string
	for _, v := range r.URL.Query()[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *Server) getSubtaskMetrics(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	subs := subtasksOf(v)
	if sel := listParam(r, "subtasks"); len(sel) > 0 {
		var keep []restapi.SubtaskDetails
		for _, p := range sel {
			lo, hi, isRange := strings.Cut(p, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b < a {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("subtasks %q is not a subtask index or range (e.g. 0,2-3)", p))
				return
			}
			for _, st := range subs {
				if st.Subtask >= a && st.Subtask <= b {
					keep = append(keep, st)
				}
			}
		}
		subs = keep
	}
	names := listParam(r, "get")
	if len(names) == 0 {
		out := make([]restapi.Metric, len(taskMetrics))
		for i, m := range taskMetrics {
			out[i] = restapi.Metric{ID: m.name}
		}
		var gauges []string
		for _, st := range subs {
			for name := range st.Gauges {
				if !slices.Contains(gauges, name) {
					gauges = append(gauges, name)
				}
			}
		}
		slices.Sort(gauges)
		for _, name := range gauges {
			out = append(out, restapi.Metric{ID: name})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	aggs, ok := aggregations(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, aggregateMetrics(names, aggs, func(name string) []float64 {
		get, ok := taskMetric(name)
		if !ok {
			get = func(st restapi.SubtaskDetails) (float64, bool) { x, ok := st.Gauges[name]; return x, ok }
		}
		var vals []float64
		for _, st := range subs {
			if x, ok := get(st); ok {
				vals = append(vals, x)
			}
		}
		return vals
	}))
}

// aggregations reads ?agg= (default: all of Flink's); on failure it has
// answered 400.
func aggregations(w http.ResponseWriter, r *http.Request) (map[string]bool, bool) {
	aggs := map[string]bool{}
	for _, a := range listParam(r, "agg") {
		switch a = strings.ToLower(a); a {
		case "min", "max", "avg", "sum", "skew":
			aggs[a] = true
		default:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("agg %q is not an aggregation: use min, max, avg, sum or skew", a))
			return nil, false
		}
	}
	if len(aggs) == 0 {
		aggs = map[string]bool{"min": true, "max": true, "avg": true, "sum": true, "skew": true}
	}
	return aggs, true
}

// aggregateMetrics is Flink's answer to ?get=...&agg=...: each metric
// asked for aggregated over the values valuesOf gives it, in the order
// asked; a metric without values is left out, as Flink leaves it.
func aggregateMetrics(names []string, aggs map[string]bool, valuesOf func(string) []float64) []restapi.AggregatedMetric {
	out := []restapi.AggregatedMetric{}
	for _, name := range names {
		vals := valuesOf(name)
		if len(vals) == 0 {
			continue
		}
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, x := range vals {
			lo, hi, sum = math.Min(lo, x), math.Max(hi, x), sum+x
		}
		avg := sum / float64(len(vals))
		// Flink's skew: how far the largest value lies above the mean,
		// as a percentage of the largest (0 when all are equal).
		skew := 0.0
		if hi > 0 && hi != avg {
			skew = (hi - avg) / hi * 100
		}
		m := restapi.AggregatedMetric{ID: name}
		set := func(p **float64, on bool, x float64) {
			if on {
				*p = &x
			}
		}
		set(&m.Min, aggs["min"], lo)
		set(&m.Max, aggs["max"], hi)
		set(&m.Avg, aggs["avg"], avg)
		set(&m.Sum, aggs["sum"], sum)
		set(&m.Skew, aggs["skew"], skew)
		out = append(out, m)
	}
	return out
}

// subtaskMetricValues lists "<subtask>.<metric>" of every subtask, in
// subtask order, limited to want (nil: all).
func subtaskMetricValues(v *restapi.Vertex, want func(string) bool) []restapi.Metric {
	out := []restapi.Metric{}
	for _, st := range subtasksOf(v) {
		for _, m := range taskMetrics {
			id := strconv.Itoa(st.Subtask) + "." + m.name
			if want != nil && !want(id) {
				continue
			}
			if val, ok := metricValue(st, m.name, m.get); ok {
				out = append(out, restapi.Metric{ID: id, Value: &val})
			}
		}
		for _, name := range slices.Sorted(maps.Keys(st.Gauges)) {
			id := strconv.Itoa(st.Subtask) + "." + name
			if want != nil && !want(id) {
				continue
			}
			val := gaugeValue(st.Gauges[name])
			out = append(out, restapi.Metric{ID: id, Value: &val})
		}
	}
	return out
}

// gaugeValue writes an operator's gauge as Flink writes a metric's value.
func gaugeValue(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// metricValue is a task metric of a subtask as Flink writes it: a string,
// a watermark as an integer.
func metricValue(st restapi.SubtaskDetails, name string, get func(restapi.SubtaskDetails) (float64, bool)) (string, bool) {
	x, ok := get(st)
	switch {
	case !ok:
		return "", false
	case name == "currentInputWatermark":
		return strconv.FormatInt(st.Watermark, 10), true
	case name == "currentOutputWatermark":
		return strconv.FormatInt(st.OutputWatermark, 10), true
	}
	return strconv.FormatFloat(x, 'f', -1, 64), true
}

// getSubtaskIndexMetrics serves GET
// /jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics: the
// subtask's task metrics by name, their values with ?get=.
func (s *Server) getSubtaskIndexMetrics(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	raw := r.PathValue("subtaskindex")
	idx, err := strconv.Atoi(raw)
	if err != nil || idx < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("subtask index %q is not a subtask number (0 or more)", raw))
		return
	}
	subs := subtasksOf(v)
	i := slices.IndexFunc(subs, func(st restapi.SubtaskDetails) bool { return st.Subtask == idx })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("vertex %s has no subtask %d (its parallelism is %d)", v.ID, idx, v.Parallelism))
		return
	}
	names := listParam(r, "get")
	out := []restapi.Metric{}
	for _, m := range taskMetrics {
		if len(names) > 0 && !slices.Contains(names, m.name) {
			continue
		}
		val, ok := metricValue(subs[i], m.name, m.get)
		if !ok {
			continue
		}
		if len(names) == 0 {
			out = append(out, restapi.Metric{ID: m.name})
		} else {
			out = append(out, restapi.Metric{ID: m.name, Value: &val})
		}
	}
	st := subs[i]
	for _, name := range slices.Sorted(maps.Keys(st.Gauges)) {
		switch {
		case len(names) == 0:
			out = append(out, restapi.Metric{ID: name})
		case slices.Contains(names, name):
			val := gaugeValue(st.Gauges[name])
			out = append(out, restapi.Metric{ID: name, Value: &val})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getVertexMetrics(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	names := listParam(r, "get")
	if len(names) == 0 {
		all := subtaskMetricValues(v, nil)
		for i := range all {
			all[i].Value = nil
		}
		writeJSON(w, http.StatusOK, all)
		return
	}
	writeJSON(w, http.StatusOK, subtaskMetricValues(v, func(id string) bool { return slices.Contains(names, id) }))
}

func (s *Server) getVertexWatermarks(w http.ResponseWriter, r *http.Request) {
	_, v, ok := s.vertex(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, subtaskMetricValues(v, func(id string) bool { return strings.HasSuffix(id, ".currentInputWatermark") }))
}

func (s *Server) getTaskManager(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskmanagerid")
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	tms, err := s.backend.TaskManagers(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	i := slices.IndexFunc(tms, func(tm restapi.TaskManagerInfo) bool { return tm.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("TaskManager %s is not registered (see GET /taskmanagers)", id))
		return
	}
	tm := tms[i]
	for _, rp := range []*restapi.ResourceProfile{&tm.TotalResource, &tm.FreeResource} {
		if rp.ExtendedResources == nil {
			rp.ExtendedResources = map[string]float64{}
		}
	}
	metrics := restapi.TaskManagerMetricsInfo{GarbageCollectors: []restapi.GarbageCollectorInfo{}}
	mctx, mcancel := context.WithTimeout(ctx, tmMetricsTimeout)
	defer mcancel()
	if ms, err := s.backend.TaskManagerMetrics(mctx, id); err == nil {
		metrics = taskManagerMetricsInfo(ms)
	} else {
		// The TaskManager's registration is still worth answering.
		s.log.Warn("TaskManager metrics for GET /taskmanagers/:id", "taskmanager", id, "error", err)
	}
	writeJSON(w, http.StatusOK, restapi.TaskManagerDetails{TaskManagerInfo: tm, AllocatedSlots: []restapi.SlotInfo{}, Metrics: metrics})
}

// taskManagerMetricsInfo fills the members of TaskManagerMetricsInfo a Go
// process has (heap, non-heap, the Go collector) from its Status.JVM.*
// metrics.
func taskManagerMetricsInfo(ms []ProcessMetric) restapi.TaskManagerMetricsInfo {
	out := restapi.TaskManagerMetricsInfo{GarbageCollectors: []restapi.GarbageCollectorInfo{}}
	gcs := map[string]*restapi.GarbageCollectorInfo{}
	var gcNames []string
	for _, m := range ms {
		v := int64(m.Value)
		switch m.Name {
		case "Status.JVM.Memory.Heap.Used":
			out.HeapUsed = v
		case "Status.JVM.Memory.Heap.Committed":
			out.HeapCommitted = v
		case "Status.JVM.Memory.Heap.Max":
			out.HeapMax = v
		case "Status.JVM.Memory.NonHeap.Used":
			out.NonHeapUsed = v
		case "Status.JVM.Memory.NonHeap.Committed":
			out.NonHeapCommitted = v
		case "Status.JVM.Memory.NonHeap.Max":
			out.NonHeapMax = v
		default:
			gcMetric, ok := strings.CutPrefix(m.Name, "Status.JVM.GarbageCollector.")
			if !ok {
				continue
			}
			i := strings.LastIndexByte(gcMetric, '.')
			if i <= 0 {
				continue
			}
			name, what := gcMetric[:i], gcMetric[i+1:]
			gc := gcs[name]
			if gc == nil {
				gc = &restapi.GarbageCollectorInfo{Name: name}
				gcs[name] = gc
				gcNames = append(gcNames, name)
			}
			switch what {
			case "Count":
				gc.Count = v
			case "Time":
				gc.Time = v
			}
		}
	}
	for _, n := range gcNames {
		out.GarbageCollectors = append(out.GarbageCollectors, *gcs[n])
	}
	return out
}

func (s *Server) getCheckpointConfig(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	c := conf.FromMap(d.Config, conf.Source{Name: "job " + d.ID})
	if conf.Get(c, conf.CheckpointingInterval) <= 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %s does not checkpoint (execution.checkpointing.interval is not set)", d.ID))
		return
	}
	retention := conf.Get(c, conf.CheckpointingExternalizedRetention)
	storage := "JobManagerCheckpointStorage"
	if conf.Get(c, conf.CheckpointingDir) != "" {
		storage = "FileSystemCheckpointStorage"
	}
	backend := "HashMapStateBackend"
	if conf.Get(c, conf.StateBackendType) == conf.StateBackendPebble {
		backend = "PebbleStateBackend"
	}
	writeJSON(w, http.StatusOK, restapi.CheckpointConfigInfo{
		Mode:                       strings.ToLower(conf.Get(c, conf.CheckpointingMode)),
		Interval:                   conf.Get(c, conf.CheckpointingInterval).Milliseconds(),
		Timeout:                    conf.Get(c, conf.CheckpointingTimeout).Milliseconds(),
		MinPause:                   conf.Get(c, conf.CheckpointingMinPause).Milliseconds(),
		MaxConcurrent:              int64(conf.Get(c, conf.CheckpointingMaxConcurrent)),
		Externalization:            restapi.ExternalizedCheckpointCfg{Enabled: retention != conf.NoExternalizedCheckpoints, DeleteOnCancellation: retention == conf.DeleteOnCancellation},
		StateBackend:               backend,
		CheckpointStorage:          storage,
		TolerableFailedCheckpoints: conf.Get(c, conf.CheckpointingTolerableFailures),
		ChangelogStorage:           "memory",
	})
}
