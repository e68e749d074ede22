package clustertest

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// The attacks of issue 18 on the REST endpoint of a standalone cluster
// protected by a REST token (security.rest.token-file on the JobManager,
// Sluice's own, without TLS): a submission of a shell script as the job
// binary (POST /jobs), a shutdown (DELETE /cluster) and a cancel, without
// the token or with a wrong one, are refused with 401 naming the key; the
// cluster and its job run on and the script never runs. Reading stays
// open. The CLI given the same file runs a job detached, lists and
// cancels it; without it, cancel fails naming the key.
func TestRESTTokenOnAStandaloneCluster(t *testing.T) {
	const token = "t0ken-of-this-standalone-cluster"
	tokenFile := filepath.Join(t.TempDir(), "rest-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1, "security.rest.token-file="+tokenFile)
	withToken := []string{"-D", "security.rest.token-file=" + tokenFile}

	o := c.mustSluice(append(append(append([]string{"run", "-d", "-m", c.rest(), "-p", "1",
		"-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, withToken...), checkpointed...), jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "100000000", "-keys", "2", "-rate", "100")...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d with the token:\n%s", o)
	}
	job := m[1]
	if got := c.runningJob(t); got.ID != job {
		t.Fatalf("the running job is %s, want %s", got.ID, job)
	}

	shell := []byte("#!/bin/sh\ntouch " + filepath.Join(c.dir, "pwned") + "\n")
	for _, auth := range []struct{ name, header string }{{"no token", ""}, {"a wrong token", "Bearer not-the-token"}} {
		for _, r := range []struct {
			method, path string
			body         []byte
		}{
			{http.MethodPost, "/jobs", shell},
			{http.MethodDelete, "/cluster", nil},
			{http.MethodPatch, "/jobs/" + job + "?mode=cancel", nil},
		} {
			req, err := http.NewRequest(r.method, "http://"+c.rest()+r.path, bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if auth.header != "" {
				req.Header.Set("Authorization", auth.header)
			}
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				t.Fatalf("%s %s with %s: %v", r.method, r.path, auth.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(b, []byte("security.rest.token-file")) {
				t.Errorf("%s %s with %s: %s %s, want 401 naming security.rest.token-file", r.method, r.path, auth.name, resp.Status, b)
			}
		}
	}
	select {
	case <-c.jm.done:
		t.Fatal("the JobManager ended after the refused DELETE /cluster")
	default:
	}
	if got := c.runningJob(t); got.ID != job {
		t.Errorf("after the refused requests the running job is %s, want %s", got.ID, job)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "pwned")); err == nil {
		t.Error("the attacker's script ran")
	}

	// Reading needs no token; changing does.
	if o := c.mustSluice("list", "-r", "-m", c.rest()); !strings.Contains(o, job) {
		t.Errorf("sluice list without the token does not show %s:\n%s", job, o)
	}
	if o, err := c.sluice("cancel", "-m", c.rest(), job); err == nil || !strings.Contains(o, "security.rest.token-file") {
		t.Errorf("sluice cancel without the token: %v, want a refusal naming security.rest.token-file:\n%s", err, o)
	}
	c.mustSluice(append(append([]string{"cancel", "-m", c.rest()}, withToken...), job)...)
	testwait.Eventually(t, 30*time.Second, "the job to be cancelled", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return regexp.MustCompile(job + `.*CANCELED|CANCELED.*` + job).MatchString(o)
	})
}
