package rest

import (
	"bytes"
	"mime/multipart"
	"os"
	"testing"
)

const fuzzGraph = `{"name":"g","nodes":[{"id":0,"kind":"source","name":"s","parallelism":1,"chaining":"ALWAYS","inputs":0,"bounded":true},` +
	`{"id":1,"kind":"sink","name":"k","parallelism":1,"chaining":"ALWAYS","inputs":1}],"edges":[{"from":0,"to":1,"input":0,"partitioning":"FORWARD"}]}`

// FuzzParseSubmission feeds arbitrary multipart bodies to the submission
// parser: it must answer a submission or an error, never panic, and a
// submission it accepts must be complete.
func FuzzParseSubmission(f *testing.F) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.SetBoundary("BOUNDARY")
	w, _ := mw.CreateFormField("request")
	w.Write([]byte(`{"jobGraphFileName":"g.json","jobJarFileNames":["bin"],"args":["a"],"configuration":{"k":"v"}}`))
	w, _ = mw.CreateFormFile("file_0", "g.json")
	w.Write([]byte(fuzzGraph))
	w, _ = mw.CreateFormFile("file_1", "bin")
	w.Write([]byte("binary"))
	mw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("--BOUNDARY\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{}\r\n--BOUNDARY--\r\n"))
	f.Add([]byte("--BOUNDARY--\r\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, body []byte) {
		dir := t.TempDir()
		sub, err := parseSubmission(multipart.NewReader(bytes.NewReader(body), "BOUNDARY"), dir)
		if err != nil {
			return
		}
		if sub.Graph == nil || sub.Graph.Validate() != nil || sub.BinarySHA256 == "" || sub.BinaryName == "" {
			t.Fatalf("accepted an incomplete submission: %+v", sub)
		}
		if _, err := os.Stat(sub.BinaryPath); err != nil {
			t.Fatalf("accepted binary is not staged: %v", err)
		}
	})
}
