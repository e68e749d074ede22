//go:build integration

package yarntest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"
)

// checkDashboardThroughProxy fetches the JobManager's dashboard and the
// REST calls its pages make through the application's tracking URL, that
// is through the ResourceManager's web proxy (/proxy/<application>/), as
// a user following the link in YARN's web UI does.
func checkDashboardThroughProxy(t *testing.T, r *rig, ctx context.Context, appID string) {
	t.Helper()
	u := report(t, ctx, r.yarnClient(t), appID).TrackingURL
	if !strings.Contains(u, "/proxy/"+appID) {
		t.Errorf("the tracking URL %q is not the ResourceManager's proxy of %s", u, appID)
		return
	}
	if !strings.HasPrefix(u, "http") {
		u = "http://" + u
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Errorf("the tracking URL %q: %v", u, err)
		return
	}
	u = strings.TrimSuffix(pu.String(), "/") + "/"
	client := &http.Client{Timeout: 30 * time.Second}
	for _, tc := range []struct{ path, contentType, contains string }{
		{"", "text/html", `src="web/app.js"`},
		{"web/app.js", "text/javascript", `api("overview")`},
		{"web/style.css", "text/css", ".graph"},
		{"overview", "application/json", `"taskmanagers"`},
		{"jobs/overview", "application/json", `"jobs"`},
		{"metrics", "text/plain", "flink_jobmanager_numRegisteredTaskManagers"},
		// The dashboard's flame-graph tab: Flink's answer of a JobManager
		// whose rest.flamegraph.enabled is false (the default).
		{"jobs/00000000000000000000000000000000/vertices/00000000000000000000000000000000/flamegraph?type=ON_CPU", "application/json", `{"endTimestamp":-2}`},
	} {
		res, err := client.Get(u + tc.path)
		if err != nil {
			t.Errorf("GET %s through the proxy: %v", u+tc.path, err)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.contentType) || !strings.Contains(string(b), tc.contains) {
			t.Errorf("GET %s through the proxy: %s %s, want 200 %s containing %q:\n%.600s", u+tc.path, res.Status, res.Header.Get("Content-Type"), tc.contentType, tc.contains, b)
		}
	}
	// The proxy forwards GET only: the dashboard cancels through it with
	// Flink's GET /jobs/:jobid/yarn-cancel (here of a job that does not
	// exist, answered by the JobManager, not the proxy).
	res, err := client.Get(u + "jobs/00000000000000000000000000000000/yarn-cancel")
	if err != nil {
		t.Errorf("GET yarn-cancel through the proxy: %v", err)
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"errors"`) {
			t.Errorf("GET yarn-cancel of an unknown job through the proxy: %s %.300s, want the JobManager's 404", res.Status, b)
		}
	}
	// What the proxy does with the other buttons' methods (logged; YARN
	// 3.4 answers PATCH 501 and POST 405).
	for _, m := range []string{http.MethodPatch, http.MethodPost} {
		path := "jobs/00000000000000000000000000000000?mode=cancel"
		if m == http.MethodPost {
			path = "jobs/00000000000000000000000000000000/savepoints"
		}
		req, _ := http.NewRequestWithContext(ctx, m, u+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Logf("%s %s through the proxy: %v", m, path, err)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Logf("%s %s through the proxy: %s %.300s", m, path, res.Status, b)
	}
}

// checkFinalTrackingURL: once the application has ended its tracking URL
// (through the ResourceManager's proxy) still leads somewhere: the
// ResourceManager's page of the application, not the JobManager's dead port.
func checkFinalTrackingURL(t *testing.T, ctx context.Context, r *rig, appID string) {
	t.Helper()
	u := report(t, ctx, r.yarnClient(t), appID).TrackingURL
	if !strings.HasPrefix(u, "http") {
		u = "http://" + u
	}
	res, err := (&http.Client{Timeout: 30 * time.Second}).Get(u)
	if err != nil {
		t.Errorf("GET the final tracking URL %s: %v", u, err)
		return
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), appID) {
		t.Errorf("GET the final tracking URL %s (ended at %s): %s, want 200 and a page naming %s:\n%.800s", u, res.Request.URL, res.Status, appID, b)
	} else {
		t.Logf("the final tracking URL %s leads to %s", u, res.Request.URL)
	}
}

// checkTaskManagerEndpointsThroughProxy checks, through the
// ResourceManager's proxy, that the session's TaskManager containers
// (registered still, idle after a job) answer for their own files: the
// log the container's TaskManager wrote (its start, naming its container),
// the stdout file YARN's launch command redirects, the listing of its
// container log directory, and its goroutines.
func checkTaskManagerEndpointsThroughProxy(t *testing.T, r *rig, ctx context.Context, appID string) {
	t.Helper()
	u := report(t, ctx, r.yarnClient(t), appID).TrackingURL
	if !strings.HasPrefix(u, "http") {
		u = "http://" + u
	}
	u = strings.TrimSuffix(u, "/") + "/"
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, string) {
		res, err := client.Get(u + path)
		if err != nil {
			t.Errorf("GET %s through the proxy: %v", path, err)
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, body := get("taskmanagers")
	var tms struct {
		TaskManagers []struct{ ID string } `json:"taskmanagers"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &tms) != nil || len(tms.TaskManagers) == 0 {
		t.Errorf("GET taskmanagers through the proxy: %d %.300s, want the session's TaskManagers", status, body)
		return
	}
	// The application's containers (the dashboard's JobManager page): the
	// ApplicationMaster's and every registered TaskManager's, RUNNING on a
	// node with their resource.
	status, body = get("jobmanager/yarn")
	var app restapi.YARNApplication
	if status != 200 || json.Unmarshal([]byte(body), &app) != nil {
		t.Errorf("GET jobmanager/yarn through the proxy: %d %.300s", status, body)
	} else {
		ams, tmsRunning := 0, 0
		for _, c := range app.Containers {
			switch {
			case c.Role == "jobmanager" && c.State == "RUNNING" && c.Node != "":
				ams++
			case c.Role == "taskmanager" && c.State == "RUNNING":
				tmsRunning++
				if c.Node == "" || c.MemoryMB <= 0 || c.VCores <= 0 || !strings.HasPrefix(c.ID, "container_") {
					t.Errorf("GET jobmanager/yarn: TaskManager container %+v, want its node, memory and vCores", c)
				}
			}
		}
		if !app.Enabled || app.ApplicationID != appID || ams != 1 || tmsRunning != len(tms.TaskManagers) {
			t.Errorf("GET jobmanager/yarn: %s, want application %s with its ApplicationMaster's container and the %d TaskManagers' RUNNING",
				body, appID, len(tms.TaskManagers))
		}
	}
	for _, tm := range tms.TaskManagers {
		base := "taskmanagers/" + url.PathEscape(tm.ID)
		if status, log := get(base + "/log"); status != 200 || !strings.Contains(log, `msg="TaskManager started"`) || !strings.Contains(log, "container_") {
			t.Errorf("GET %s/log: %d %.600s, want the container's taskmanager.log", tm.ID, status, log)
		}
		if status, b := get(base + "/stdout"); status != 200 {
			t.Errorf("GET %s/stdout: %d %.300s, want the container's taskmanager.out", tm.ID, status, b)
		}
		status, b := get(base + "/logs")
		for _, f := range []string{`"taskmanager.log"`, `"taskmanager.out"`, `"taskmanager.err"`} {
			if status != 200 || !strings.Contains(b, f) {
				t.Errorf("GET %s/logs: %d %.600s, want %s listed", tm.ID, status, b, f)
			}
		}
		if status, b := get(base + "/thread-dump"); status != 200 || !strings.Contains(b, "(*TaskManager).Run") {
			t.Errorf("GET %s/thread-dump: %d %.300s, want the TaskManager's goroutines", tm.ID, status, b)
		}
	}
}
