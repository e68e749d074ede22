package rest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

// A TaskManager's endpoints, over the Backend's answers: its log directory,
// its goroutines and its process's metrics, one TaskManager's and
// aggregated over them; an unknown TaskManager is 404 in Flink's error
// shape, a file name with a directory part 400.
func TestTaskManagerEndpoints(t *testing.T) {
	b := resttest.New()
	b.SetTaskManagers([]restapi.TaskManagerInfo{{ID: "tm-1", SlotsNumber: 1}, {ID: "tm-2", SlotsNumber: 1}, {ID: "tm-3", SlotsNumber: 1}})
	mtime := time.UnixMilli(start)
	b.SetTaskManagerProcess("tm-1", resttest.TaskManagerProcess{
		Files:      map[string]string{"taskmanager.log": "a log line\n", "taskmanager.out": "printed\n", "job-a.err": "oops\n"},
		Goroutines: []restapi.ThreadInfo{{ThreadName: "goroutine 1 [running]", StringifiedThreadInfo: "goroutine 1 [running]:\nmain.main()\n"}},
		Metrics: []rest.ProcessMetric{{Name: "Status.JVM.Memory.Heap.Used", Value: 1000}, {Name: "Status.JVM.Threads.Count", Value: 10},
			{Name: "Status.JVM.GarbageCollector.Go.Count", Value: 4}, {Name: "Status.JVM.GarbageCollector.Go.Time", Value: 2}},
		ModTime: mtime,
	})
	b.SetTaskManagerProcess("tm-2", resttest.TaskManagerProcess{
		Metrics: []rest.ProcessMetric{{Name: "Status.JVM.Memory.Heap.Used", Value: 3000}, {Name: "Status.JVM.Threads.Count", Value: 30}},
	})
	// tm-3 keeps nothing: no log files, no metrics.
	s := serve(t, b, clock.NewManual(start), nil)

	for _, tc := range []struct {
		path   string
		status int
		body   string // the whole answer, or for an error a text its message holds
	}{
		{"/taskmanagers/tm-1/logs", 200, `{"logs":[{"name":"job-a.err","size":5,"mtime":1700000000000},{"name":"taskmanager.log","size":11,"mtime":1700000000000},{"name":"taskmanager.out","size":8,"mtime":1700000000000}]}`},
		{"/taskmanagers/tm-3/logs", 200, `{"logs":[]}`},
		{"/taskmanagers/tm-1/log", 200, "a log line\n"},
		{"/v1/taskmanagers/tm-1/stdout", 200, "printed\n"},
		{"/taskmanagers/tm-1/logs/job-a.err", 200, "oops\n"},
		{"/taskmanagers/tm-1/logs/nope.log", 404, "nope.log"},
		{"/taskmanagers/tm-3/log", 404, "taskmanager.log"},
		{"/taskmanagers/tm-1/logs/..%2F..%2Fetc%2Fpasswd", 400, "../../etc/passwd"},
		{"/taskmanagers/tm-1/logs/a%5Cb", 400, `a\\b`},
		{"/taskmanagers/tm-9/logs", 404, "TaskManager tm-9 is not registered"},
		{"/taskmanagers/tm-9/log", 404, "tm-9"},
		{"/taskmanagers/tm-9/stdout", 404, "tm-9"},
		{"/taskmanagers/tm-9/thread-dump", 404, "tm-9"},
		{"/taskmanagers/tm-9/metrics", 404, "tm-9"},
		{"/taskmanagers/tm-1/thread-dump", 200, `{"threadInfos":[{"threadName":"goroutine 1 [running]","stringifiedThreadInfo":"goroutine 1 [running]:\nmain.main()\n"}]}`},
		{"/taskmanagers/tm-3/thread-dump", 200, `{"threadInfos":[]}`},
		{"/taskmanagers/tm-1/metrics", 200, `[{"id":"Status.JVM.Memory.Heap.Used"},{"id":"Status.JVM.Threads.Count"},{"id":"Status.JVM.GarbageCollector.Go.Count"},{"id":"Status.JVM.GarbageCollector.Go.Time"}]`},
		{"/taskmanagers/tm-1/metrics?get=Status.JVM.Threads.Count,Status.JVM.Memory.Heap.Used,nope", 200, `[{"id":"Status.JVM.Memory.Heap.Used","value":"1000"},{"id":"Status.JVM.Threads.Count","value":"10"}]`},
		{"/taskmanagers/tm-3/metrics", 200, `[]`},
		{"/taskmanagers/metrics", 200, `[{"id":"Status.JVM.Memory.Heap.Used"},{"id":"Status.JVM.Threads.Count"},{"id":"Status.JVM.GarbageCollector.Go.Count"},{"id":"Status.JVM.GarbageCollector.Go.Time"}]`},
		{"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used,Status.JVM.Threads.Count&agg=min,max,sum,avg", 200,
			`[{"id":"Status.JVM.Memory.Heap.Used","min":1000,"max":3000,"avg":2000,"sum":4000},{"id":"Status.JVM.Threads.Count","min":10,"max":30,"avg":20,"sum":40}]`},
		{"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used&agg=sum&taskmanagers=tm-2,tm-9", 200, `[{"id":"Status.JVM.Memory.Heap.Used","sum":3000}]`},
		{"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used&agg=median", 400, "median"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := do(t, http.MethodGet, s.URL()+tc.path, "", nil)
			if r.status != tc.status {
				t.Fatalf("status %d (%s), want %d", r.status, r.body, tc.status)
			}
			if tc.status != 200 {
				var e restapi.ErrorResponse
				if err := json.Unmarshal(r.body, &e); err != nil || len(e.Errors) == 0 || !strings.Contains(strings.Join(e.Errors, " "), tc.body) {
					t.Errorf("error answer %s does not name %s", r.body, tc.body)
				}
				return
			}
			if string(r.body) != tc.body {
				t.Errorf("answer\n %s\nwant\n %s", r.body, tc.body)
			}
			if strings.HasPrefix(tc.body, "{") || strings.HasPrefix(tc.body, "[") {
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type %q", ct)
				}
			} else if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}

	// GET /taskmanagers/:id shows the process's heap, non-heap and
	// collector figures.
	var d restapi.TaskManagerDetails
	if r := do(t, http.MethodGet, s.URL()+"/taskmanagers/tm-1", "", nil); r.status != 200 || json.Unmarshal(r.body, &d) != nil {
		t.Fatalf("GET /taskmanagers/tm-1: %d %s", r.status, r.body)
	}
	if d.Metrics.HeapUsed != 1000 || len(d.Metrics.GarbageCollectors) != 1 || d.Metrics.GarbageCollectors[0] != (restapi.GarbageCollectorInfo{Name: "Go", Count: 4, Time: 2}) {
		t.Errorf("TaskManager details' metrics: %+v", d.Metrics)
	}
}
