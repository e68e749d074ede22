package rest_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

func TestParseGoroutineDump(t *testing.T) {
	dump := "goroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\n\ngoroutine 7 [chan receive, 3 minutes]:\nmain.worker()\n\t/x/w.go:9 +0x2a\ncreated by main.main in goroutine 1\n\t/x/main.go:4 +0x19\n"
	got := rest.ParseGoroutineDump([]byte(dump))
	want := []restapi.ThreadInfo{
		{ThreadName: "goroutine 1 [running]", StringifiedThreadInfo: "goroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\n"},
		{ThreadName: "goroutine 7 [chan receive, 3 minutes]", StringifiedThreadInfo: "goroutine 7 [chan receive, 3 minutes]:\nmain.worker()\n\t/x/w.go:9 +0x2a\ncreated by main.main in goroutine 1\n\t/x/main.go:4 +0x19\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseGoroutineDump = %q, want %q", got, want)
	}
	if got := rest.ParseGoroutineDump(nil); got == nil || len(got) != 0 {
		t.Errorf("an empty dump: %v, want []", got)
	}
}

// The JobManager's own endpoints: its goroutines, its runtime, its log
// directory, and Flink 2.3's (empty) applications.
func TestJobManagerEndpoints(t *testing.T) {
	logDir := t.TempDir()
	for name, content := range map[string]string{"jobmanager.log": "a log line\n", "jobmanager.out": "printed\n", "jobmanager.err": ""} {
		if err := os.WriteFile(filepath.Join(logDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(logDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(filepath.Dir(logDir), "secret")
	if err := os.WriteFile(secret, []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(start)
	s := serve(t, resttest.New(), clk, func(c *rest.Config) { c.LogDir = logDir })
	get := func(path string, v any) response {
		t.Helper()
		r := do(t, http.MethodGet, s.URL()+path, "", nil)
		if v != nil && (r.status != http.StatusOK || json.Unmarshal(r.body, v) != nil) {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return r
	}

	var dump restapi.ThreadDump
	get("/jobmanager/thread-dump", &dump)
	found := false
	for _, ti := range dump.ThreadInfos {
		if !strings.HasPrefix(ti.ThreadName, "goroutine ") || !strings.HasPrefix(ti.StringifiedThreadInfo, ti.ThreadName) {
			t.Errorf("thread %q: %q", ti.ThreadName, ti.StringifiedThreadInfo)
		}
		found = found || strings.Contains(ti.StringifiedThreadInfo, "getJobManagerThreadDump")
	}
	if len(dump.ThreadInfos) < 2 || !found {
		t.Errorf("the dump has %d goroutines, none of them serving it", len(dump.ThreadInfos))
	}

	var env restapi.EnvironmentInfo
	get("/jobmanager/environment", &env)
	if env.JVM.Version != runtime.Version() || env.JVM.Arch != runtime.GOOS+"/"+runtime.GOARCH || env.Classpath == nil || env.JVM.Options == nil {
		t.Errorf("environment %+v", env)
	}

	var logs restapi.LogList
	get("/jobmanager/logs", &logs)
	var names []string
	for _, l := range logs.Logs {
		names = append(names, l.Name)
		if l.MTime < time.Now().Add(-time.Hour).UnixMilli() {
			t.Errorf("log %s mtime %d", l.Name, l.MTime)
		}
	}
	if !reflect.DeepEqual(names, []string{"jobmanager.err", "jobmanager.log", "jobmanager.out"}) || logs.Logs[1].Size != int64(len("a log line\n")) {
		t.Errorf("logs %+v", logs.Logs)
	}
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/jobmanager/log", 200, "a log line\n"},
		{"/jobmanager/stdout", 200, "printed\n"},
		{"/jobmanager/logs/jobmanager.out", 200, "printed\n"},
		{"/jobmanager/logs/nope.log", 404, ""},
		{"/jobmanager/logs/sub", 404, ""},
		{"/jobmanager/logs/..%2Fsecret", 400, ""},
		{"/jobmanager/logs/..", 404, ""}, // the client cleans it to /jobmanager
	} {
		r := get(tc.path, nil)
		if r.status != tc.status || (tc.body != "" && string(r.body) != tc.body) {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, r.status, r.body, tc.status, tc.body)
		}
		if string(r.body) == "no" {
			t.Errorf("GET %s served a file outside the log directory", tc.path)
		}
	}

	var apps map[string][]any
	get("/applications/overview", &apps)
	if a, ok := apps["applications"]; !ok || len(a) != 0 {
		t.Errorf("applications %v, want []", apps)
	}

	// Without a log directory there are no logs.
	s2 := serve(t, resttest.New(), clk, nil)
	if r := do(t, http.MethodGet, s2.URL()+"/jobmanager/logs", "", nil); r.status != 200 || string(r.body) != `{"logs":[]}` {
		t.Errorf("logs without a log directory: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodGet, s2.URL()+"/jobmanager/log", "", nil); r.status != 404 {
		t.Errorf("log without a log directory: %d %s", r.status, r.body)
	}
}

// GET /jobmanager/yarn: the YARN application and its containers as the
// backend reports them, and "not on YARN" outside it.
func TestYARNApplication(t *testing.T) {
	clk := clock.NewManual(start)
	b := resttest.New()
	s := serve(t, b, clk, nil)
	if r := do(t, http.MethodGet, s.URL()+"/jobmanager/yarn", "", nil); r.status != http.StatusOK || string(r.body) != `{"enabled":false,"containers":[]}` {
		t.Errorf("outside YARN: %d %s", r.status, r.body)
	}
	exit := int32(143)
	b.YARN = &restapi.YARNApplication{Enabled: true, ApplicationID: "application_1_0001", AttemptID: "appattempt_1_0001_000001",
		Containers: []restapi.YARNContainer{
			{ID: "container_1_0001_01_000001", Role: "jobmanager", Node: "nm1:4545", NodeHTTPAddress: "nm1:8042", State: "RUNNING", Since: 1000},
			{ID: "container_1_0001_01_000002", Role: "taskmanager", Node: "nm2:4545", State: "COMPLETE", ExitStatus: &exit,
				Diagnostics: "killed", MemoryMB: 1024, VCores: 1, Since: 2000},
		}}
	want := `{"enabled":true,"applicationId":"application_1_0001","attemptId":"appattempt_1_0001_000001","containers":[` +
		`{"id":"container_1_0001_01_000001","role":"jobmanager","node":"nm1:4545","nodeHttpAddress":"nm1:8042","state":"RUNNING","memoryMB":0,"vcores":0,"since":1000},` +
		`{"id":"container_1_0001_01_000002","role":"taskmanager","node":"nm2:4545","state":"COMPLETE","exitStatus":143,"diagnostics":"killed","memoryMB":1024,"vcores":1,"since":2000}]}`
	if r := do(t, http.MethodGet, s.URL()+"/jobmanager/yarn", "", nil); r.status != http.StatusOK || string(r.body) != want {
		t.Errorf("on YARN: %d\n%s\nwant\n%s", r.status, r.body, want)
	}
}
