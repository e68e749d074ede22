package rest_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/rest"
)

// TestTokenGuardsWhatChangesState: with a REST token, every request that
// changes the cluster needs it (Authorization: Bearer), reading stays
// open, and the GET forms of cancel and stop that YARN's web proxy
// forwards are served without it from a trusted proxy only. The refused
// job is still running.
func TestTokenGuardsWhatChangesState(t *testing.T) {
	const token = "s3cret-token"
	proxy := net.ParseIP("10.0.0.9")
	for _, tc := range []struct {
		name, method, path, auth, remote string
		want                             int
	}{
		{"read without token", "GET", "/jobs/overview", "", "10.0.0.1:5000", 200},
		{"read a job without token", "GET", "/jobs/" + jobRunning, "", "10.0.0.1:5000", 200},
		{"versioned read", "GET", "/v1/overview", "", "10.0.0.1:5000", 200},
		{"cancel without token", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "", "10.0.0.1:5000", 401},
		{"versioned cancel without token", "PATCH", "/v1/jobs/" + jobToCancel + "?mode=cancel", "", "10.0.0.1:5000", 401},
		{"cancel with a wrong token", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "Bearer nope", "10.0.0.1:5000", 401},
		{"cancel with another scheme", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "Basic " + token, "10.0.0.1:5000", 401},
		{"submit without token", "POST", "/jobs", "", "10.0.0.1:5000", 401},
		{"shut down without token", "DELETE", "/cluster", "", "10.0.0.1:5000", 401},
		{"savepoint without token", "POST", "/jobs/" + jobRunning + "/savepoints", "", "10.0.0.1:5000", 401},
		{"yarn-cancel without token", "GET", "/jobs/" + jobToCancel + "/yarn-cancel", "", "10.0.0.1:5000", 401},
		{"yarn-stop without token", "GET", "/jobs/" + jobToCancel + "/yarn-stop", "", "10.0.0.1:5000", 401},
		{"POST through the proxy still needs it", "POST", "/jobs", "", "10.0.0.9:5000", 401},
		{"yarn-cancel through the proxy", "GET", "/jobs/" + jobToCancel + "/yarn-cancel", "", "10.0.0.9:5000", 202},
		{"cancel with the token", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "Bearer " + token, "10.0.0.1:5000", 202},
		{"scheme is case-insensitive", "PATCH", "/jobs/" + jobToCancel + "?mode=cancel", "bearer " + token, "10.0.0.1:5000", 202},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := fixture(t)
			h, stop := rest.NewHandler(rest.Config{Clock: clk, UploadDir: t.TempDir(), Token: []byte(token),
				TrustedProxy: func(ip net.IP) bool { return ip.Equal(proxy) }}, b)
			defer stop()
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
			req.RemoteAddr = tc.remote
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%s %s from %s: %d %s, want %d", tc.method, tc.path, tc.remote, rec.Code, rec.Body, tc.want)
			}
			if tc.want == http.StatusUnauthorized {
				if body := rec.Body.String(); !strings.Contains(body, `"errors"`) || !strings.Contains(body, conf.RESTTokenFile.Key()) {
					t.Errorf("401 body %s: want Flink's error shape naming %s", body, conf.RESTTokenFile.Key())
				}
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				if strings.Contains(rec.Body.String(), token) {
					t.Error("the answer shows the token")
				}
			}
		})
	}
}

// TestNoTokenServesEverything: without a token (a standalone cluster's
// default, as Flink) requests that change state are served.
func TestNoTokenServesEverything(t *testing.T) {
	b, clk := fixture(t)
	h, stop := rest.NewHandler(rest.Config{Clock: clk, UploadDir: t.TempDir()}, b)
	defer stop()
	req := httptest.NewRequest("PATCH", "/jobs/"+jobToCancel+"?mode=cancel", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("cancel without a configured token: %d %s", rec.Code, rec.Body)
	}
}

func TestTokenFromConf(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, []byte("  abc123\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, tc := range []struct {
		name, file, want, wantErr string
	}{
		{name: "unset"},
		{name: "trimmed", file: good, want: "abc123"},
		{name: "empty", file: empty, wantErr: "is empty"},
		{name: "missing", file: filepath.Join(dir, "nope"), wantErr: "security.rest.token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := conf.New()
			if tc.file != "" {
				c = c.Set(conf.RESTTokenFile.Key(), tc.file)
			}
			got, err := restapi.TokenFromConf(c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
