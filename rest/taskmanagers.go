package rest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"
)

// A TaskManager's own endpoints, in Flink's shapes; the JobManager asks
// the TaskManager (Backend.TaskManagerLogs and the others):
//
//	GET /taskmanagers/:id/logs           {"logs": [{name, size, mtime}]}: the files of its log directory
//	GET /taskmanagers/:id/logs/:name     one of them, as text
//	GET /taskmanagers/:id/log            its log file (taskmanager.log), as text
//	GET /taskmanagers/:id/stdout         its standard output (taskmanager.out), as text
//	GET /taskmanagers/:id/thread-dump    {"threadInfos": [...]}: its goroutines
//	GET /taskmanagers/:id/metrics[?get=] [{id[, value]}]: its process's Status.JVM.* metrics
//	GET /taskmanagers/metrics[?get=&agg=&taskmanagers=]  [{id, min, max, avg, sum, skew}] over the TaskManagers
//
// An unknown TaskManager is 404. A file longer than the TaskManager's limit
// (64 MiB by default) is answered from the limit's distance to its end,
// the newest lines; the header Sluice-Log-Offset then says where the answer
// begins in the file.

// tmMetricsTimeout bounds the question for a TaskManager's metrics where
// they are a part of a larger answer (GET /taskmanagers/:id, the
// aggregation over TaskManagers): a TaskManager that does not answer in
// time is left out rather than holding up the rest.
const tmMetricsTimeout = 5 * time.Second

// LogOffsetHeader names the byte of the file an answer of a log file
// begins at, when it is not the first.
const LogOffsetHeader = "Sluice-Log-Offset"

// TaskManagerFileKind chooses a file of a TaskManager's log directory.
type TaskManagerFileKind int

const (
	// TaskManagerNamedFile is the file TaskManagerFile.Name names.
	TaskManagerNamedFile TaskManagerFileKind = iota
	// TaskManagerMainLog is the TaskManager's own log (taskmanager.log).
	TaskManagerMainLog
	// TaskManagerStdout is its standard output (taskmanager.out).
	TaskManagerStdout
)

// TaskManagerFile is a file of a TaskManager's log directory.
type TaskManagerFile struct {
	Kind TaskManagerFileKind
	// Name is the file's name, for TaskManagerNamedFile.
	Name string
}

// LogFile is an open log file, served from Offset to Size.
type LogFile struct {
	Name string
	// Size is the file's size when it was opened; Offset the first byte
	// Body gives (0 unless the file is longer than the limit).
	Size, Offset int64
	ModTime      time.Time
	Body         io.ReadCloser
}

// ProcessMetric is one metric of a TaskManager's process.
type ProcessMetric struct {
	Name  string
	Value float64
}

// validLogName reports whether name is a plain file name.
func validLogName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

func (s *Server) getTaskManagerLogs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	logs, err := s.backend.TaskManagerLogs(ctx, r.PathValue("taskmanagerid"))
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	if logs == nil {
		logs = []restapi.LogInfo{}
	}
	writeJSON(w, http.StatusOK, restapi.LogList{Logs: logs})
}

func (s *Server) serveTaskManagerFile(w http.ResponseWriter, r *http.Request, f TaskManagerFile) {
	if f.Kind == TaskManagerNamedFile && !validLogName(f.Name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not the name of a log file (see GET /taskmanagers/%s/logs)", f.Name, r.PathValue("taskmanagerid")))
		return
	}
	// The answer streams for as long as the file takes, not
	// BackendTimeout: the request's context bounds it.
	lf, err := s.backend.TaskManagerLogFile(r.Context(), r.PathValue("taskmanagerid"), f)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	defer lf.Body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.FormatInt(lf.Size-lf.Offset, 10))
	if lf.Offset > 0 {
		w.Header().Set(LogOffsetHeader, strconv.FormatInt(lf.Offset, 10))
	}
	if !lf.ModTime.IsZero() {
		w.Header().Set("Last-Modified", lf.ModTime.UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.CopyN(w, lf.Body, lf.Size-lf.Offset); err != nil {
		// The status is sent: the client sees a short body.
		s.log.Warn("serving a TaskManager's log file", "path", r.URL.Path, "error", err)
	}
}

func (s *Server) getTaskManagerLogFile(w http.ResponseWriter, r *http.Request) {
	s.serveTaskManagerFile(w, r, TaskManagerFile{Kind: TaskManagerNamedFile, Name: r.PathValue("filename")})
}

func (s *Server) getTaskManagerLog(w http.ResponseWriter, r *http.Request) {
	s.serveTaskManagerFile(w, r, TaskManagerFile{Kind: TaskManagerMainLog})
}

func (s *Server) getTaskManagerStdout(w http.ResponseWriter, r *http.Request) {
	s.serveTaskManagerFile(w, r, TaskManagerFile{Kind: TaskManagerStdout})
}

func (s *Server) getTaskManagerThreadDump(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	infos, err := s.backend.TaskManagerThreadDump(ctx, r.PathValue("taskmanagerid"))
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	if infos == nil {
		infos = []restapi.ThreadInfo{}
	}
	writeJSON(w, http.StatusOK, restapi.ThreadDump{ThreadInfos: infos})
}

// formatMetric writes a metric's value as Flink does a gauge's: integers
// without a fraction.
func formatMetric(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (s *Server) getTaskManagerMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	ms, err := s.backend.TaskManagerMetrics(ctx, r.PathValue("taskmanagerid"))
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	writeJSON(w, http.StatusOK, namedMetrics(r, names, func(i int) string { return formatMetric(ms[i].Value) }))
}

// getTaskManagersMetrics aggregates the metrics over the TaskManagers of
// ?taskmanagers= (those registered; default all). A TaskManager that
// cannot be asked is left out of the aggregation, as Flink's metric store
// has nothing of a TaskManager it cannot reach.
func (s *Server) getTaskManagersMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.backendCtx(r)
	defer cancel()
	tms, err := s.backend.TaskManagers(ctx)
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	ids := make([]string, 0, len(tms))
	for _, tm := range tms {
		ids = append(ids, tm.ID)
	}
	if sel := listParam(r, "taskmanagers"); len(sel) > 0 {
		ids = slices.DeleteFunc(ids, func(id string) bool { return !slices.Contains(sel, id) })
	}
	per := make([][]ProcessMetric, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, tmMetricsTimeout)
			defer cancel()
			ms, err := s.backend.TaskManagerMetrics(ctx, id)
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					s.log.Warn("TaskManager metrics for GET /taskmanagers/metrics", "taskmanager", id, "error", err)
				}
				return
			}
			per[i] = ms
		}()
	}
	wg.Wait()
	names := listParam(r, "get")
	if len(names) == 0 {
		out, seen := []restapi.Metric{}, map[string]bool{}
		for _, ms := range per {
			for _, m := range ms {
				if !seen[m.Name] {
					seen[m.Name] = true
					out = append(out, restapi.Metric{ID: m.Name})
				}
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
		var vals []float64
		for _, ms := range per {
			if i := slices.IndexFunc(ms, func(m ProcessMetric) bool { return m.Name == name }); i >= 0 {
				vals = append(vals, ms[i].Value)
			}
		}
		return vals
	}))
}
