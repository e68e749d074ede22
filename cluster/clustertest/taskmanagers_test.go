package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rawGet is a GET's status and body, whatever the status.
func rawGet(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// The TaskManager endpoints of a real standalone cluster answer what the
// TaskManager processes hold, asked over the JobManager's connection to
// them: each TaskManager's own log file (the lines its process wrote to
// stderr too), its goroutines (not the JobManager's), its Go runtime's
// metrics, one TaskManager's and aggregated; and refuse a file outside the
// log directory and an unknown TaskManager.
func TestTaskManagerEndpointsOfARealCluster(t *testing.T) {
	c := newCluster(t, 2)
	ids := taskManagerIDs(t, c)
	if len(ids) != 2 {
		t.Fatalf("TaskManagers %v", ids)
	}
	// A file of many gRPC chunks, in each TaskManager's log directory.
	big := bytes.Repeat([]byte("a line of a long worker log\n"), 20000) // 560 KB
	for i := range c.tms {
		if err := os.WriteFile(filepath.Join(c.dir, fmt.Sprintf("tm%d", i), "log", "big.out"), big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for id := range ids {
		base := c.rest() + "/taskmanagers/" + url.PathEscape(id)
		if status, b := rawGet(t, base+"/logs/big.out"); status != 200 || !bytes.Equal(b, big) {
			t.Errorf("GET %s/logs/big.out: %d, %d bytes, want the file's %d", id, status, len(b), len(big))
		}

		// Its log: the lines it logged, which its stderr (captured by the
		// test) holds as well, naming this TaskManager.
		status, log := rawGet(t, base+"/log")
		if status != 200 || !strings.Contains(string(log), "taskmanager="+id) || !strings.Contains(string(log), "level=INFO") {
			t.Errorf("GET %s/log: %d %.600s", id, status, log)
		}
		var stderr []byte
		for _, p := range c.tms {
			if b, _ := os.ReadFile(p.log); strings.Contains(string(b), "taskmanager="+id) {
				stderr = b
			}
		}
		if first, _, _ := strings.Cut(string(log), "\n"); first == "" || !strings.Contains(string(stderr), first) {
			t.Errorf("the first line of %s's log file is not in its stderr:\n%s", id, first)
		}

		var logs struct {
			Logs []struct {
				Name  string `json:"name"`
				Size  int64  `json:"size"`
				MTime int64  `json:"mtime"`
			} `json:"logs"`
		}
		status, b := rawGet(t, base+"/logs")
		if status != 200 || json.Unmarshal(b, &logs) != nil {
			t.Fatalf("GET %s/logs: %d %s", id, status, b)
		}
		i := slices.IndexFunc(logs.Logs, func(l struct {
			Name  string `json:"name"`
			Size  int64  `json:"size"`
			MTime int64  `json:"mtime"`
		}) bool {
			return l.Name == "taskmanager.log"
		})
		if i < 0 || logs.Logs[i].Size < int64(len(log)) || logs.Logs[i].MTime <= 0 {
			t.Errorf("GET %s/logs does not list taskmanager.log of at least %d bytes: %s", id, len(log), b)
		}
		if status, b := rawGet(t, base+"/logs/taskmanager.log"); status != 200 || !strings.HasPrefix(string(b), string(log[:min(len(log), 200)])) {
			t.Errorf("GET %s/logs/taskmanager.log: %d %.300s", id, status, b)
		}

		for _, tc := range []struct {
			path   string
			status int
			names  string
		}{
			{"/logs/..%2F..%2Finternal-secret", 400, "../../internal-secret"},
			{"/logs/nope.log", 404, "nope.log"},
			// A standalone TaskManager's stdout is its terminal's, not a file.
			{"/stdout", 404, "taskmanager.out"},
		} {
			status, b := rawGet(t, base+tc.path)
			var e struct{ Errors []string }
			if status != tc.status || json.Unmarshal(b, &e) != nil || len(e.Errors) == 0 || !strings.Contains(e.Errors[0], tc.names) {
				t.Errorf("GET %s%s: %d %s, want %d naming %s", id, tc.path, status, b, tc.status, tc.names)
			}
			if strings.Contains(string(b), readSecret(t, c)) {
				t.Errorf("GET %s%s served the cluster's secret", id, tc.path)
			}
		}

		var dump struct {
			ThreadInfos []struct {
				ThreadName            string `json:"threadName"`
				StringifiedThreadInfo string `json:"stringifiedThreadInfo"`
			} `json:"threadInfos"`
		}
		status, b = rawGet(t, base+"/thread-dump")
		if status != 200 || json.Unmarshal(b, &dump) != nil {
			t.Fatalf("GET %s/thread-dump: %d %.300s", id, status, b)
		}
		var all strings.Builder
		for _, ti := range dump.ThreadInfos {
			if !strings.HasPrefix(ti.ThreadName, "goroutine ") || !strings.HasPrefix(ti.StringifiedThreadInfo, ti.ThreadName) {
				t.Errorf("%s: goroutine %q: %.200q", id, ti.ThreadName, ti.StringifiedThreadInfo)
			}
			all.WriteString(ti.StringifiedThreadInfo)
		}
		if d := all.String(); len(dump.ThreadInfos) < 3 || !strings.Contains(d, "taskmanager.(*TaskManager).Run") ||
			!strings.Contains(d, "taskmanager.(*TaskManager).ThreadDump") || strings.Contains(d, "getJobManagerThreadDump") {
			t.Errorf("GET %s/thread-dump is not the TaskManager's goroutines (%d):\n%.3000s", id, len(dump.ThreadInfos), d)
		}

		var ms []struct{ ID, Value string }
		status, b = rawGet(t, base+"/metrics?get=Status.JVM.Threads.Count,Status.JVM.Memory.Heap.Used,Status.JVM.CPU.Time")
		if status != 200 || json.Unmarshal(b, &ms) != nil || len(ms) != 3 {
			t.Fatalf("GET %s/metrics: %d %s", id, status, b)
		}
		for _, m := range ms {
			if v, err := strconv.ParseFloat(m.Value, 64); err != nil || v <= 0 {
				t.Errorf("%s: %s = %q, want > 0", id, m.ID, m.Value)
			}
		}
	}

	var agg []struct {
		ID       string
		Max, Sum float64
	}
	status, b := rawGet(t, c.rest()+"/taskmanagers/metrics?get=Status.JVM.Memory.Heap.Used&agg=max,sum")
	if status != 200 || json.Unmarshal(b, &agg) != nil || len(agg) != 1 || agg[0].Max <= 0 || agg[0].Sum <= agg[0].Max {
		t.Errorf("GET /taskmanagers/metrics: %d %s, want the heap of 2 TaskManagers summed", status, b)
	}

	for _, p := range []string{"/log", "/logs", "/thread-dump", "/metrics"} {
		status, b := rawGet(t, c.rest()+"/taskmanagers/no-such-tm"+p)
		var e struct{ Errors []string }
		if status != 404 || json.Unmarshal(b, &e) != nil || len(e.Errors) == 0 || !strings.Contains(e.Errors[0], "no-such-tm") {
			t.Errorf("GET /taskmanagers/no-such-tm%s: %d %s, want 404 naming it", p, status, b)
		}
	}
}

func readSecret(t *testing.T, c *cluster) string {
	t.Helper()
	b, err := os.ReadFile(c.secretFile())
	if err != nil || len(b) == 0 {
		t.Fatalf("the cluster's secret: %v", err)
	}
	return strings.TrimSpace(string(b))
}
