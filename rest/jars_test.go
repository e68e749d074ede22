package rest_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/rest/resttest"
)

// buildFakeJob builds the CLI's fake job binary, which writes a job graph
// named by its first argument in plan mode.
func buildFakeJob(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakejob")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/client/testdata/fakejob").CombinedOutput(); err != nil {
		t.Fatalf("building the fake job: %v\n%s", err, out)
	}
	return bin
}

// Job binaries as Flink's jars: upload, list, plan, run (the JobManager
// runs the binary in plan mode and submits its graph), delete.
func TestJars(t *testing.T) {
	bin := buildFakeJob(t)
	content, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b := resttest.New()
	s := serve(t, b, clock.NewManual(start), nil)
	upload := func(field, name string, data []byte) response {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile(field, name)
		w.Write(data)
		mw.Close()
		return do(t, http.MethodPost, s.URL()+"/jars/upload", mw.FormDataContentType(), buf.Bytes())
	}
	r := upload("jarfile", "fakejob", content)
	var up restapi.JarUploadResponse
	if r.status != http.StatusOK || json.Unmarshal(r.body, &up) != nil || up.Status != "success" {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var list restapi.JarList
	if r := do(t, http.MethodGet, s.URL()+"/jars", "", nil); r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Files) != 1 {
		t.Fatalf("GET /jars: %d %s", r.status, r.body)
	}
	jar := list.Files[0]
	if jar.Name != "fakejob" || !strings.HasSuffix(jar.ID, "_fakejob") || filepath.Base(up.Filename) != jar.ID || jar.Uploaded != start || jar.Entry == nil {
		t.Errorf("listed %+v after uploading %s", jar, up.Filename)
	}

	var plan restapi.JobPlanInfo
	if r := do(t, http.MethodGet, s.URL()+"/jars/"+jar.ID+"/plan?programArg=planned,--x&parallelism=3", "", nil); r.status != 200 || json.Unmarshal(r.body, &plan) != nil {
		t.Fatalf("plan: %d %s", r.status, r.body)
	} else if plan.Plan.Name != "planned" || len(plan.Plan.Nodes) == 0 {
		t.Errorf("plan %+v, want the job the binary builds, named by its first argument", plan.Plan)
	}

	r = do(t, http.MethodPost, s.URL()+"/jars/"+jar.ID+"/run", "application/json",
		[]byte(`{"programArgsList":["run by REST"],"parallelism":2,"savepointPath":"/sp/savepoint-1","allowNonRestoredState":true,"flinkConfiguration":{"pipeline.name":"x"}}`))
	var run restapi.JarRunResponse
	if r.status != http.StatusOK || json.Unmarshal(r.body, &run) != nil || !restapi.ValidID(run.JobID) {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	got := b.Received()
	if len(got) != 1 || got[0].JobID != run.JobID || got[0].Submission.Graph.Name != "run by REST" || !bytes.Equal(got[0].Binary, content) ||
		got[0].Submission.SavepointPath != "/sp/savepoint-1" || !got[0].Submission.AllowNonRestoredState ||
		got[0].Submission.Configuration["parallelism.default"] != "2" || got[0].Submission.Configuration["pipeline.name"] != "x" ||
		len(got[0].Submission.Args) != 1 || got[0].Submission.BinaryName != "fakejob" {
		t.Fatalf("submitted %+v", got)
	}

	for _, tc := range []struct {
		method, path, body string
		want               int
		says               string
	}{
		{http.MethodPost, "/jars/" + jar.ID + "/run", `{"entryClass":"com.example.Main"}`, 400, "entry classes"},
		{http.MethodPost, "/jars/" + jar.ID + "/run", `{"jobId":"0123456789abcdef0123456789abcdef"}`, 400, "jobId"},
		{http.MethodPost, "/jars/" + jar.ID + "/run", `{"programArgsList":["x","--no-plan"]}`, 400, "without writing its job graph"},
		{http.MethodPost, "/jars/" + jar.ID + "/run", `{"bogus":1}`, 400, "bogus"},
		{http.MethodPost, "/jars/nope/run", `{}`, 404, "no uploaded job binary"},
		{http.MethodGet, "/jars/nope/plan", ``, 404, "no uploaded job binary"},
	} {
		r := do(t, tc.method, s.URL()+tc.path, "application/json", []byte(tc.body))
		if r.status != tc.want || !strings.Contains(string(r.body), tc.says) {
			t.Errorf("%s %s %s: %d %s, want %d saying %q", tc.method, tc.path, tc.body, r.status, r.body, tc.want, tc.says)
		}
	}
	if r := upload("other", "x", []byte("x")); r.status != 400 {
		t.Errorf("an upload without a jarfile part: %d %s", r.status, r.body)
	}
	if r := upload("jarfile", "../evil", []byte("x")); r.status != 200 {
		t.Errorf("an upload named ../evil: %d %s (its base name is kept)", r.status, r.body)
	} else if json.Unmarshal(r.body, &up) == nil && filepath.Dir(up.Filename) != filepath.Dir(filepath.Join(filepath.Dir(up.Filename), jar.ID)) {
		t.Errorf("stored at %s", up.Filename)
	}

	if r := do(t, http.MethodDelete, s.URL()+"/jars/"+jar.ID, "", nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(up.Filename), jar.ID)); !os.IsNotExist(err) {
		t.Errorf("the deleted binary is still stored: %v", err)
	}
	if r := do(t, http.MethodDelete, s.URL()+"/jars/"+jar.ID, "", nil); r.status != 404 {
		t.Errorf("deleting again: %d", r.status)
	}
}
