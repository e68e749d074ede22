package rest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/rest"
)

// FuzzRequests sends arbitrary methods, paths, queries and bodies to the
// handler: every answer is JSON (or the metrics text), errors are
// {"errors": [...]} with a 4xx status, and nothing is a server error.
func FuzzRequests(f *testing.F) {
	const job = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	for _, seed := range []struct{ method, path, body string }{
		{"GET", "/jobs", ""},
		{"GET", "/jobs/" + job, ""},
		{"PATCH", "/jobs/" + job + "?mode=cancel", ""},
		{"GET", "/jobs/" + job + "/exceptions?maxExceptions=3", ""},
		{"POST", "/jobs/" + job + "/savepoints", `{"target-directory":"/sp"}`},
		{"POST", "/jobs/" + job + "/stop", `{"drain":true}`},
		{"POST", "/jobs/" + job + "/checkpoints", `{"checkpointType":"FULL"}`},
		{"GET", "/jobs/" + job + "/savepoints/" + job, ""},
		{"GET", "/v1/jobs/" + job + "/checkpoints/details/1", ""},
		{"POST", "/jobs", "--x--"},
		{"DELETE", "/overview", ""},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	backend, _ := fixture(f)
	h, stop := rest.NewHandler(rest.Config{Clock: clock.NewManual(0), UploadDir: f.TempDir()}, backend)
	f.Cleanup(stop)
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		req.Header.Set("Content-Type", "application/json")
		if strings.HasPrefix(body, "--") {
			req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
		if req.URL.Path == "/metrics" || req.URL.Path == "/v1/metrics" || rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect || rec.Code == http.StatusPermanentRedirect {
			return
		}
		if method == http.MethodHead {
			return
		}
		if rec.Code >= 400 {
			var e restapi.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e.Errors) == 0 {
				t.Fatalf("%s %s: %d answered %q, not {\"errors\": [...]}", method, path, rec.Code, rec.Body)
			}
			return
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: %d answered %q, not JSON", method, path, rec.Code, rec.Body)
		}
	})
}
