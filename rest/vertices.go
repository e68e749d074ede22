package rest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

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

// SubtaskDetails is one subtask of a vertex (Flink's
// SubtaskExecutionAttemptDetailsInfo). The Backend fills Vertex.Subtasks
// with them; the server serves them at GET /jobs/:jobid/vertices/:vertexid.
type SubtaskDetails struct {
	Subtask int            `json:"subtask"`
	Status  ExecutionState `json:"status"`
	// Attempt counts the subtask's restarts (0 for the first attempt).
	Attempt int `json:"attempt"`
	// Endpoint is the host:port of the TaskManager the subtask runs on; ""
	// when the cluster does not know it.
	Endpoint  string `json:"endpoint"`
	StartTime int64  `json:"start-time"` // epoch ms, -1: not deployed
	// StartTimeDeprecated is Flink's deprecated duplicate of StartTime;
	// the server sets it.
	StartTimeDeprecated int64     `json:"start_time"`
	EndTime             int64     `json:"end-time"` // -1 while it runs
	Duration            int64     `json:"duration"`
	Metrics             IOMetrics `json:"metrics"`
	TaskManagerID       string    `json:"taskmanager-id"`
	// StatusDuration is how long the subtask spent in each state, ms
	// (CREATED, SCHEDULED, DEPLOYING, INITIALIZING, RUNNING; 0 for a state
	// it was not seen in).
	StatusDuration map[ExecutionState]int64 `json:"status-duration"`

	// Watermark is the subtask's current input watermark, epoch ms
	// (math.MinInt64 before the first), served by GET .../watermarks and
	// .../metrics as currentInputWatermark; not part of Flink's message.
	Watermark int64 `json:"-"`
	// OutputWatermark is the last watermark the subtask sent downstream
	// (math.MinInt64 before the first, and for a subtask that sends to
	// none), served as currentOutputWatermark.
	OutputWatermark int64 `json:"-"`
	// StateTimestamps are when the subtask entered each state, epoch ms,
	// as far as the cluster keeps them (GET .../subtasktimes; a state
	// missing is 0 there).
	StateTimestamps map[ExecutionState]int64 `json:"-"`
	// Rates are the subtask's per-second figures; nil until the cluster
	// has measured them (they are then left out of the metrics).
	Rates *SubtaskRates `json:"-"`
}

// SubtaskRates are a subtask's per-second figures, Flink's meters
// (numRecordsInPerSecond, ..., over the last minute) and timer gauges
// (busyTimeMsPerSecond, ..., 0 to 1000 ms per second, over the last 5 s).
type SubtaskRates struct {
	RecordsInPerSecond, RecordsOutPerSecond, BytesInPerSecond, BytesOutPerSecond float64
	BusyTimeMsPerSecond, BackPressuredTimeMsPerSecond, IdleTimeMsPerSecond       float64
}

// AggregatedTaskDetails is the "aggregated" of GET
// /jobs/:jobid/vertices/:vertexid: each I/O metric and state duration
// summarised over the subtasks.
type AggregatedTaskDetails struct {
	Metrics        map[string]map[string]int64 `json:"metrics"`
	StatusDuration map[string]map[string]int64 `json:"status-duration"`
}

// VertexDetails is the body of GET /jobs/:jobid/vertices/:vertexid
// (Flink's JobVertexDetailsInfo).
type VertexDetails struct {
	ID             string                `json:"id"`
	Name           string                `json:"name"`
	MaxParallelism int                   `json:"maxParallelism"`
	Parallelism    int                   `json:"parallelism"`
	Now            int64                 `json:"now"`
	Subtasks       []SubtaskDetails      `json:"subtasks"`
	Aggregated     AggregatedTaskDetails `json:"aggregated"`
}

// ExecutionConfigInfo is the "execution-config" of GET /jobs/:jobid/config.
type ExecutionConfigInfo struct {
	// RestartStrategy describes the job's restart strategy.
	RestartStrategy string `json:"restart-strategy"`
	Parallelism     int    `json:"job-parallelism"`
	// ObjectReuse is Flink's object reuse mode; Sluice hands every
	// operator its own records, so it is false.
	ObjectReuse bool `json:"object-reuse-mode"`
	// UserConfig is Flink's global job parameters; Sluice has none, {}.
	UserConfig map[string]string `json:"user-config"`
}

// JobConfigInfo is the body of GET /jobs/:jobid/config.
type JobConfigInfo struct {
	JobID           string               `json:"jid"`
	Name            string               `json:"name"`
	ExecutionConfig *ExecutionConfigInfo `json:"execution-config,omitempty"`
}

// Metric is one value of GET .../metrics?get=... ({"id", "value"}, the
// value as a string, as Flink writes it); without get, the names alone.
type Metric struct {
	ID    string  `json:"id"`
	Value *string `json:"value,omitempty"`
}

// AggregatedMetric is one metric of GET .../subtasks/metrics, aggregated
// over the subtasks; only the aggregations asked for (?agg=) are set.
type AggregatedMetric struct {
	ID   string   `json:"id"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	Avg  *float64 `json:"avg,omitempty"`
	Sum  *float64 `json:"sum,omitempty"`
	Skew *float64 `json:"skew,omitempty"`
}

// SlotInfo is an allocated slot of TaskManagerDetails.
type SlotInfo struct {
	JobID    string          `json:"jobId"`
	Resource ResourceProfile `json:"resource"`
}

// GarbageCollectorInfo is a collector of TaskManagerMetricsInfo.
type GarbageCollectorInfo struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Time  int64  `json:"time"`
}

// TaskManagerMetricsInfo are the JVM memory metrics of Flink's
// TaskManagerDetailsInfo, of a TaskManager's Go process: its heap and
// non-heap memory and its garbage collector ("Go") as its Status.JVM.*
// metrics give them (GET /taskmanagers/:id/metrics). It has no direct or
// mapped buffers or network memory segments: they are 0.
type TaskManagerMetricsInfo struct {
	HeapUsed                            int64                  `json:"heapUsed"`
	HeapCommitted                       int64                  `json:"heapCommitted"`
	HeapMax                             int64                  `json:"heapMax"`
	NonHeapUsed                         int64                  `json:"nonHeapUsed"`
	NonHeapCommitted                    int64                  `json:"nonHeapCommitted"`
	NonHeapMax                          int64                  `json:"nonHeapMax"`
	DirectCount                         int64                  `json:"directCount"`
	DirectUsed                          int64                  `json:"directUsed"`
	DirectMax                           int64                  `json:"directMax"`
	MappedCount                         int64                  `json:"mappedCount"`
	MappedUsed                          int64                  `json:"mappedUsed"`
	MappedMax                           int64                  `json:"mappedMax"`
	NettyShuffleMemorySegmentsAvailable int64                  `json:"nettyShuffleMemorySegmentsAvailable"`
	NettyShuffleMemorySegmentsUsed      int64                  `json:"nettyShuffleMemorySegmentsUsed"`
	NettyShuffleMemorySegmentsTotal     int64                  `json:"nettyShuffleMemorySegmentsTotal"`
	NettyShuffleMemoryAvailable         int64                  `json:"nettyShuffleMemoryAvailable"`
	NettyShuffleMemoryUsed              int64                  `json:"nettyShuffleMemoryUsed"`
	NettyShuffleMemoryTotal             int64                  `json:"nettyShuffleMemoryTotal"`
	GarbageCollectors                   []GarbageCollectorInfo `json:"garbageCollectors"`
}

// MemoryConfiguration is Flink's TaskExecutorMemoryConfiguration, bytes.
// Sluice sizes no JVM memory pools: every member is 0.
type MemoryConfiguration struct {
	FrameworkHeap      int64 `json:"frameworkHeap"`
	TaskHeap           int64 `json:"taskHeap"`
	FrameworkOffHeap   int64 `json:"frameworkOffHeap"`
	TaskOffHeap        int64 `json:"taskOffHeap"`
	NetworkMemory      int64 `json:"networkMemory"`
	ManagedMemory      int64 `json:"managedMemory"`
	JVMMetaspace       int64 `json:"jvmMetaspace"`
	JVMOverhead        int64 `json:"jvmOverhead"`
	TotalFlinkMemory   int64 `json:"totalFlinkMemory"`
	TotalProcessMemory int64 `json:"totalProcessMemory"`
}

// TaskManagerDetails is the body of GET /taskmanagers/:taskmanagerid
// (Flink's TaskManagerDetailsInfo).
type TaskManagerDetails struct {
	TaskManagerInfo
	// AllocatedSlots lists slots with the job they hold; Sluice's
	// ResourceManager reports counts only, so it is empty.
	AllocatedSlots []SlotInfo             `json:"allocatedSlots"`
	Metrics        TaskManagerMetricsInfo `json:"metrics"`
}

// ---------------------------------------------------------------------------

func (s *Server) getJobConfig(w http.ResponseWriter, r *http.Request) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return
	}
	out := JobConfigInfo{JobID: d.ID, Name: d.Name}
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
	entries := make([]ConfigEntry, 0, len(keys))
	for _, k := range keys {
		entries = append(entries, ConfigEntry{Key: k, Value: maskValue(k, d.Config[k])})
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
func (s *Server) vertex(w http.ResponseWriter, r *http.Request) (*JobDetails, *Vertex, bool) {
	d, ok := s.jobDetails(w, r)
	if !ok {
		return nil, nil, false
	}
	raw := r.PathValue("vertexid")
	id, ok := ParseID(raw)
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
func subtasksOf(v *Vertex) []SubtaskDetails {
	out := make([]SubtaskDetails, len(v.Subtasks))
	for i, st := range v.Subtasks {
		sd := make(map[ExecutionState]int64, 5)
		for _, k := range []ExecutionState{TaskCreated, TaskScheduled, TaskDeploying, TaskInitializing, TaskRunning} {
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
	out := VertexDetails{ID: v.ID, Name: v.Name, MaxParallelism: v.MaxParallelism, Parallelism: v.Parallelism,
		Now: s.cfg.Clock.NowMillis(), Subtasks: subs, Aggregated: aggregatedDetails(subs)}
	writeJSON(w, http.StatusOK, out)
}

// aggregatedDetails summarises the I/O metrics and state durations of
// subtasks (Flink's AggregatedTaskDetailsInfo).
func aggregatedDetails(subs []SubtaskDetails) AggregatedTaskDetails {
	out := AggregatedTaskDetails{Metrics: map[string]map[string]int64{}, StatusDuration: map[string]map[string]int64{}}
	ioMetrics := map[string]func(IOMetrics) int64{
		"read-bytes":                     func(m IOMetrics) int64 { return m.ReadBytes },
		"write-bytes":                    func(m IOMetrics) int64 { return m.WriteBytes },
		"read-records":                   func(m IOMetrics) int64 { return m.ReadRecords },
		"write-records":                  func(m IOMetrics) int64 { return m.WriteRecords },
		"accumulated-backpressured-time": func(m IOMetrics) int64 { return m.AccumulatedBackpressuredTime },
		"accumulated-idle-time":          func(m IOMetrics) int64 { return m.AccumulatedIdleTime },
		"accumulated-busy-time":          func(m IOMetrics) int64 { return int64(m.AccumulatedBusyTime) },
	}
	for name, f := range ioMetrics {
		vals := make([]int64, len(subs))
		for i, st := range subs {
			vals[i] = f(st.Metrics)
		}
		out.Metrics[name] = aggregate(vals)
	}
	for _, state := range []ExecutionState{TaskCreated, TaskScheduled, TaskDeploying, TaskInitializing, TaskRunning} {
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
	get  func(SubtaskDetails) (float64, bool)
}{
	{"numRecordsIn", func(s SubtaskDetails) (float64, bool) { return float64(s.Metrics.ReadRecords), true }},
	{"numRecordsOut", func(s SubtaskDetails) (float64, bool) { return float64(s.Metrics.WriteRecords), true }},
	{"numBytesIn", func(s SubtaskDetails) (float64, bool) { return float64(s.Metrics.ReadBytes), true }},
	{"numBytesOut", func(s SubtaskDetails) (float64, bool) { return float64(s.Metrics.WriteBytes), true }},
	{"accumulatedBusyTime", func(s SubtaskDetails) (float64, bool) { return s.Metrics.AccumulatedBusyTime, true }},
	{"accumulatedBackpressuredTime", func(s SubtaskDetails) (float64, bool) {
		return float64(s.Metrics.AccumulatedBackpressuredTime), true
	}},
	{"accumulatedIdleTime", func(s SubtaskDetails) (float64, bool) { return float64(s.Metrics.AccumulatedIdleTime), true }},
	{"currentInputWatermark", func(s SubtaskDetails) (float64, bool) { return float64(s.Watermark), true }},
	{"currentOutputWatermark", func(s SubtaskDetails) (float64, bool) { return float64(s.OutputWatermark), true }},
	{"numRecordsInPerSecond", rate(func(r *SubtaskRates) float64 { return r.RecordsInPerSecond })},
	{"numRecordsOutPerSecond", rate(func(r *SubtaskRates) float64 { return r.RecordsOutPerSecond })},
	{"numBytesInPerSecond", rate(func(r *SubtaskRates) float64 { return r.BytesInPerSecond })},
	{"numBytesOutPerSecond", rate(func(r *SubtaskRates) float64 { return r.BytesOutPerSecond })},
	{"busyTimeMsPerSecond", rate(func(r *SubtaskRates) float64 { return r.BusyTimeMsPerSecond })},
	{"backPressuredTimeMsPerSecond", rate(func(r *SubtaskRates) float64 { return r.BackPressuredTimeMsPerSecond })},
	{"idleTimeMsPerSecond", rate(func(r *SubtaskRates) float64 { return r.IdleTimeMsPerSecond })},
}

func rate(f func(*SubtaskRates) float64) func(SubtaskDetails) (float64, bool) {
	return func(s SubtaskDetails) (float64, bool) {
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

func taskMetric(name string) (func(SubtaskDetails) (float64, bool), bool) {
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
		var keep []SubtaskDetails
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
		out := make([]Metric, len(taskMetrics))
		for i, m := range taskMetrics {
			out[i] = Metric{ID: m.name}
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
			return nil
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
func aggregateMetrics(names []string, aggs map[string]bool, valuesOf func(string) []float64) []AggregatedMetric {
	out := []AggregatedMetric{}
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
		m := AggregatedMetric{ID: name}
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
func subtaskMetricValues(v *Vertex, want func(string) bool) []Metric {
	out := []Metric{}
	for _, st := range subtasksOf(v) {
		for _, m := range taskMetrics {
			id := strconv.Itoa(st.Subtask) + "." + m.name
			if want != nil && !want(id) {
				continue
			}
			if val, ok := metricValue(st, m.name, m.get); ok {
				out = append(out, Metric{ID: id, Value: &val})
			}
		}
	}
	return out
}

// metricValue is a task metric of a subtask as Flink writes it: a string,
// a watermark as an integer.
func metricValue(st SubtaskDetails, name string, get func(SubtaskDetails) (float64, bool)) (string, bool) {
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
	i := slices.IndexFunc(subs, func(st SubtaskDetails) bool { return st.Subtask == idx })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("vertex %s has no subtask %d (its parallelism is %d)", v.ID, idx, v.Parallelism))
		return
	}
	names := listParam(r, "get")
	out := []Metric{}
	for _, m := range taskMetrics {
		if len(names) > 0 && !slices.Contains(names, m.name) {
			continue
		}
		val, ok := metricValue(subs[i], m.name, m.get)
		if !ok {
			continue
		}
		if len(names) == 0 {
			out = append(out, Metric{ID: m.name})
		} else {
			out = append(out, Metric{ID: m.name, Value: &val})
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
	i := slices.IndexFunc(tms, func(tm TaskManagerInfo) bool { return tm.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("TaskManager %s is not registered (see GET /taskmanagers)", id))
		return
	}
	tm := tms[i]
	for _, rp := range []*ResourceProfile{&tm.TotalResource, &tm.FreeResource} {
		if rp.ExtendedResources == nil {
			rp.ExtendedResources = map[string]float64{}
		}
	}
	metrics := TaskManagerMetricsInfo{GarbageCollectors: []GarbageCollectorInfo{}}
	mctx, mcancel := context.WithTimeout(ctx, tmMetricsTimeout)
	defer mcancel()
	if ms, err := s.backend.TaskManagerMetrics(mctx, id); err == nil {
		metrics = taskManagerMetricsInfo(ms)
	} else {
		// The TaskManager's registration is still worth answering.
		s.log.Warn("TaskManager metrics for GET /taskmanagers/:id", "taskmanager", id, "error", err)
	}
	writeJSON(w, http.StatusOK, TaskManagerDetails{TaskManagerInfo: tm, AllocatedSlots: []SlotInfo{}, Metrics: metrics})
}

// taskManagerMetricsInfo fills the members of TaskManagerMetricsInfo a Go
// process has (heap, non-heap, the Go collector) from its Status.JVM.*
// metrics.
func taskManagerMetricsInfo(ms []ProcessMetric) TaskManagerMetricsInfo {
	out := TaskManagerMetricsInfo{GarbageCollectors: []GarbageCollectorInfo{}}
	gcs := map[string]*GarbageCollectorInfo{}
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
				gc = &GarbageCollectorInfo{Name: name}
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

// CheckpointConfigInfo is the body of GET /jobs/:jobid/checkpoints/config
// (Flink's CheckpointConfigInfo), read from the job's effective
// configuration. Sluice has no unaligned checkpoints and no changelog
// state: those members are Flink's values for them off.
type CheckpointConfigInfo struct {
	Mode                        string                    `json:"mode"`
	Interval                    int64                     `json:"interval"`
	Timeout                     int64                     `json:"timeout"`
	MinPause                    int64                     `json:"min_pause"`
	MaxConcurrent               int64                     `json:"max_concurrent"`
	Externalization             ExternalizedCheckpointCfg `json:"externalization"`
	StateBackend                string                    `json:"state_backend"`
	CheckpointStorage           string                    `json:"checkpoint_storage"`
	UnalignedCheckpoints        bool                      `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints  int                       `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout    int64                     `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish bool                      `json:"checkpoints_after_tasks_finish"`
	StateChangelogEnabled       bool                      `json:"state_changelog_enabled"`
	ChangelogMaterialization    int64                     `json:"changelog_periodic_materialization_interval"`
	ChangelogStorage            string                    `json:"changelog_storage"`
}

// ExternalizedCheckpointCfg is whether completed checkpoints outlive the
// job (Flink's ExternalizedCheckpointInfo).
type ExternalizedCheckpointCfg struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
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
	writeJSON(w, http.StatusOK, CheckpointConfigInfo{
		Mode:                       strings.ToLower(conf.Get(c, conf.CheckpointingMode)),
		Interval:                   conf.Get(c, conf.CheckpointingInterval).Milliseconds(),
		Timeout:                    conf.Get(c, conf.CheckpointingTimeout).Milliseconds(),
		MinPause:                   conf.Get(c, conf.CheckpointingMinPause).Milliseconds(),
		MaxConcurrent:              int64(conf.Get(c, conf.CheckpointingMaxConcurrent)),
		Externalization:            ExternalizedCheckpointCfg{Enabled: retention != conf.NoExternalizedCheckpoints, DeleteOnCancellation: retention == conf.DeleteOnCancellation},
		StateBackend:               backend,
		CheckpointStorage:          storage,
		TolerableFailedCheckpoints: conf.Get(c, conf.CheckpointingTolerableFailures),
		ChangelogStorage:           "memory",
	})
}
