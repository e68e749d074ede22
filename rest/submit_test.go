package rest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest"
)

// testGraph is a valid two-operator job graph.
func testGraph(t testing.TB) []byte {
	t.Helper()
	g := &graph.JobGraph{
		Name: "tiny",
		Nodes: []*graph.Node{
			{ID: 0, Kind: "source", Name: "numbers", Parallelism: 1, Chaining: graph.ChainAlways, Bounded: true, OutType: "int"},
			{ID: 1, Kind: "sink", Name: "print", Parallelism: 2, Chaining: graph.ChainAlways, Inputs: 1, OutType: "int"},
		},
		Edges:  []*graph.Edge{{From: 0, To: 1, Partitioning: graph.Rebalance}},
		Config: map[string]string{"parallelism.default": "2"},
	}
	b, err := g.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type part struct {
	field, file, content string
}

func multipartBody(t testing.TB, parts ...part) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w interface{ Write([]byte) (int, error) }
		var err error
		if p.file == "" {
			w, err = mw.CreateFormField(p.field)
		} else {
			w, err = mw.CreateFormFile(p.field, p.file)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(p.content))
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

func TestSubmit(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, nil)
	binary := "\x7fELF pretend this is a job binary"
	req := `{"jobGraphFileName":"job.json","jobJarFileNames":["wordcount"],"args":["--input","x.txt"],` +
		`"savepointPath":"file:/sp/savepoint-1","allowNonRestoredState":true,"configuration":{"parallelism.default":"3"}}`
	// The request part may come after the files.
	ct, body := multipartBody(t, part{"file_0", "job.json", string(testGraph(t))}, part{"file_1", "wordcount", binary}, part{"request", "", req})
	r := do(t, "POST", s.URL()+"/jobs", ct, body)
	if r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	var resp restapi.SubmitResponse
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	got := b.Received()
	if len(got) != 1 {
		t.Fatalf("the backend received %d submissions", len(got))
	}
	if resp.JobURL != "/jobs/"+got[0].JobID || !restapi.ValidID(got[0].JobID) {
		t.Fatalf("jobUrl %q for job %q", resp.JobURL, got[0].JobID)
	}
	sum := sha256.Sum256([]byte(binary))
	sub := got[0].Submission
	if string(got[0].Binary) != binary || sub.BinarySHA256 != hex.EncodeToString(sum[:]) || sub.BinaryName != "wordcount" {
		t.Errorf("binary %q sha %s name %q", got[0].Binary, sub.BinarySHA256, sub.BinaryName)
	}
	if sub.Graph == nil || sub.Graph.Name != "tiny" || len(sub.Graph.Nodes) != 2 || !bytes.Equal(sub.GraphJSON, testGraph(t)) {
		t.Errorf("graph %+v", sub.Graph)
	}
	if !reflect.DeepEqual(sub.Args, []string{"--input", "x.txt"}) || sub.SavepointPath != "file:/sp/savepoint-1" ||
		!sub.AllowNonRestoredState || !reflect.DeepEqual(sub.Configuration, map[string]string{"parallelism.default": "3"}) {
		t.Errorf("settings %+v", sub)
	}
	// The submitted job is served like any other.
	if r := do(t, "GET", s.URL()+resp.JobURL, "", nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"tiny"`) {
		t.Errorf("GET %s: %d %s", resp.JobURL, r.status, r.body)
	}
}

func TestSubmitMalformed(t *testing.T) {
	b, clk := fixture(t)
	s := serve(t, b, clk, func(c *rest.Config) { c.MaxContentLength = 64 << 10 })
	g := string(testGraph(t))
	req := `{"jobGraphFileName":"job.json","jobJarFileNames":["bin"]}`
	for _, tc := range []struct {
		name   string
		parts  []part
		status int
		want   string // in the error message
	}{
		{"no request", []part{{"f", "job.json", g}, {"f2", "bin", "x"}}, 400, `no "request" part`},
		{"two requests", []part{{"request", "", req}, {"request", "", req}}, 400, `two "request" parts`},
		{"request not JSON", []part{{"request", "", "{"}, {"f", "job.json", g}, {"f2", "bin", "x"}}, 400, `"request" part is not valid`},
		{"request unknown member", []part{{"request", "", `{"jobGraphFileName":"job.json","jobJarFileNames":["bin"],"entryClass":"Main"}`}, {"f", "job.json", g}, {"f2", "bin", "x"}}, 400, `unknown field "entryClass"`},
		{"no graph name", []part{{"request", "", `{"jobJarFileNames":["bin"]}`}, {"f2", "bin", "x"}}, 400, "no jobGraphFileName"},
		{"no binary name", []part{{"request", "", `{"jobGraphFileName":"job.json"}`}, {"f", "job.json", g}}, 400, "name exactly one"},
		{"two binaries", []part{{"request", "", `{"jobGraphFileName":"job.json","jobJarFileNames":["a","b"]}`}, {"f", "job.json", g}}, 400, "names 2 files"},
		{"graph part missing", []part{{"request", "", req}, {"f2", "bin", "x"}}, 400, `"job.json" names no file part`},
		{"binary part missing", []part{{"request", "", req}, {"f", "job.json", g}}, 400, `"bin", which is no file part`},
		{"same part", []part{{"request", "", `{"jobGraphFileName":"job.json","jobJarFileNames":["job.json"]}`}, {"f", "job.json", g}}, 400, "same file part"},
		{"extra part", []part{{"request", "", req}, {"f", "job.json", g}, {"f2", "bin", "x"}, {"f3", "notes.txt", "hi"}}, 400, `"notes.txt" is named neither`},
		{"duplicate file", []part{{"request", "", req}, {"f", "job.json", g}, {"f2", "job.json", g}}, 400, `two file parts are named "job.json"`},
		{"form field", []part{{"request", "", req}, {"parallelism", "", "4"}}, 400, `unexpected form field "parallelism"`},
		{"graph not JSON", []part{{"request", "", req}, {"f", "job.json", "nodes: []"}, {"f2", "bin", "x"}}, 400, "not a Sluice job graph"},
		{"graph invalid", []part{{"request", "", req}, {"f", "job.json", `{"name":"empty","nodes":[],"edges":[]}`}, {"f2", "bin", "x"}}, 400, "the job has no operators"},
		{"empty config key", []part{{"request", "", `{"jobGraphFileName":"job.json","jobJarFileNames":["bin"],"configuration":{" ":"x"}}`}, {"f", "job.json", g}, {"f2", "bin", "x"}}, 400, "empty key"},
		{"too large", []part{{"request", "", req}, {"f", "job.json", g}, {"f2", "bin", strings.Repeat("x", 100<<10)}}, 413, "rest.server.max-content-length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := multipartBody(t, tc.parts...)
			r := do(t, "POST", s.URL()+"/jobs", ct, body)
			var e restapi.ErrorResponse
			if err := json.Unmarshal(r.body, &e); err != nil || len(e.Errors) == 0 {
				t.Fatalf("answer is not {\"errors\": [...]}: %s", r.body)
			}
			if r.status != tc.status || !strings.Contains(e.Errors[0], tc.want) {
				t.Errorf("%d %q, want %d and a message containing %q", r.status, e.Errors[0], tc.status, tc.want)
			}
		})
	}
	// A file name that is a path (net/http's writer would not send one).
	body := "--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"../../etc/passwd\"\r\n\r\nx\r\n--B--\r\n"
	r := do(t, "POST", s.URL()+"/jobs", "multipart/form-data; boundary=B", []byte(body))
	if r.status != 400 {
		t.Errorf("a path as file name: %d %s", r.status, r.body)
	}
	// A broken body.
	r = do(t, "POST", s.URL()+"/jobs", "multipart/form-data; boundary=B", []byte("--B\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{"))
	if r.status != 400 || !strings.Contains(string(r.body), "malformed") {
		t.Errorf("a truncated body: %d %s", r.status, r.body)
	}
	if len(b.Received()) != 0 {
		t.Errorf("the backend received %d submissions from malformed requests", len(b.Received()))
	}
}
