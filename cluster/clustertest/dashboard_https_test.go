package clustertest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice/sluice/internal/testwait"
)

// trustingHome is a home directory whose NSS database (~/.pki/nssdb, which
// Chromium on Linux reads) trusts the CA certificate in caPEM to identify
// servers, made with NSS's certutil: Chromium then verifies the dashboard's
// certificate as a user's browser does, with no
// --ignore-certificate-errors. A missing certutil (Debian's libnss3-tools,
// which integration/scripts/chromium.sh installs) fails the test under
// -tags integration and skips it otherwise, as a missing Chromium does.
func trustingHome(t *testing.T, caPEM string) string {
	t.Helper()
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		const msg = "no certutil to make Chromium trust the test's CA: run integration/scripts/chromium.sh (apt-get install libnss3-tools)"
		if chromiumRequired {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", "sql:" + db, "--empty-password"},
		{"-A", "-d", "sql:" + db, "-t", "C,,", "-n", "sluice test CA", "-i", caPEM},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return home
}

// TestDashboardOverHTTPS drives the web dashboard in a real headless
// Chromium against a standalone cluster serving REST over HTTPS
// (security.ssl.rest.enabled, a certificate for 127.0.0.1 signed by the
// test's CA, which Chromium trusts through its NSS database). The address
// bar is https, the page's connection is secure with the cluster's
// certificate, and every page loads with no console error, uncaught
// exception or failed request (a request over http, or a certificate
// Chromium refused, would be one). Each page is kept as a PNG.
func TestDashboardOverHTTPS(t *testing.T) {
	bin := chromium(t)
	pkiDir := t.TempDir()
	p := newTestPKI(t, filepath.Join(pkiDir, "rest"), "the dashboard's CA", "rest")
	home := trustingHome(t, p.ca)
	shots := filepath.Join(screenshotDir(t), "https")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	trusted, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(trusted)
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t),
		jmProps:    []string{"security.ssl.rest.enabled=true", "security.ssl.rest.keystore=" + p.kss["rest"]},
		restScheme: "https",
		restClient: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
	}
	c.boot(2)
	cliConf := writeClientConf(t, "security.ssl.rest.enabled", "true", "security.ssl.rest.truststore", p.ca)
	args := append([]string{"run", "--configDir", cliConf, "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	args = append(args, jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "100000000", "-rate", "400")
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(c.mustSluice(args...))
	if m == nil {
		t.Fatal("no job id in the output of sluice run -d")
	}
	job := m[1]
	var details struct {
		State    string `json:"state"`
		Vertices []struct {
			ID string `json:"id"`
		} `json:"vertices"`
	}
	testwait.Eventually(t, 60*time.Second, "the job to run", func() bool {
		restJSON(t, c, "/jobs/"+job, &details)
		return details.State == "RUNNING"
	})
	c.waitCheckpoint(t)

	b := newBrowser(t, bin, shots, chromedp.Env("HOME="+home))
	base := "https://" + c.rest() + "/?refresh=500"
	page := b.page(base)
	page("01-overview", "#/overview",
		`document.querySelector('#c-tms .value')?.textContent === '2' && document.querySelectorAll('#running tr.link').length === 1`)
	// The page came over https, and Chromium judged the connection
	// secure (not merely tolerated): the certificate is the cluster's.
	loc, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.protocol + '//' + location.host`))
	if err != nil || loc != "https://"+c.rest() {
		t.Errorf("the dashboard's location is %q (%v), want https://%s", loc, err, c.rest())
	}
	if sc, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.isSecureContext`)); err != nil || !sc {
		t.Errorf("the dashboard is not a secure context (%v)", err)
	}
	nodes := len(details.Vertices)
	page("02-running-jobs", "#/jobs/running", `document.querySelectorAll('#list tr.link').length === 1`)
	page("03-job-graph", "#/job/"+job,
		fmt.Sprintf(`document.querySelectorAll('#job-graph g.node').length === %d && document.querySelectorAll('#vertex-table tbody tr').length === %d`, nodes, nodes))
	page("04-vertex", "#/job/"+job+"/vertex/"+details.Vertices[0].ID, `document.querySelectorAll('#subtask-table tbody tr').length >= 1`)
	page("05-checkpoints", "#/job/"+job+"/checkpoints", `[...document.querySelectorAll('#cp-history tbody tr')].some(r => r.textContent.includes('COMPLETED'))`)
	page("06-exceptions", "#/job/"+job+"/exceptions", `document.querySelector('#tab .panel') !== null`)
	page("07-job-configuration", "#/job/"+job+"/configuration", `document.querySelector('#job-config')?.textContent.includes('execution.checkpointing.interval')`)
	page("08-taskmanagers", "#/taskmanagers", `document.querySelectorAll('#tm-table tr.link').length === 2`)
	var tms struct {
		TaskManagers []struct {
			ID string `json:"id"`
		} `json:"taskmanagers"`
	}
	restJSON(t, c, "/taskmanagers", &tms)
	tmHash := "#/taskmanager/" + url.PathEscape(tms.TaskManagers[0].ID)
	page("09-taskmanager", tmHash, `document.querySelector('#tm-details') !== null`)
	page("09b-taskmanager-log", tmHash+"/log", `document.querySelector('#tm-file pre')?.textContent.includes('msg="TaskManager started"')`)
	page("10-jobmanager", "#/jobmanager", `document.querySelector('#jm-config-table')?.textContent.includes('security.ssl.rest.enabled')`)
	b.log.mu.Lock()
	requests, schemes := b.log.requests, maps.Clone(b.log.schemes)
	b.log.mu.Unlock()
	t.Logf("the browser made %d requests, by scheme %v", requests, schemes)
	if schemes["https"] < 10 {
		t.Errorf("the browser made %d requests over https; the dashboard did not load over it", schemes["https"])
	}
	for scheme, n := range schemes {
		if scheme != "https" && scheme != "data" && scheme != "about" {
			t.Errorf("the browser made %d requests over %s from the dashboard served over https", n, scheme)
		}
	}
	c.mustSluice("cancel", "--configDir", cliConf, "-m", c.rest(), job)
}
