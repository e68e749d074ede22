package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sluice/sluice/internal/testwait"
)

// chromium finds the Chromium binary: $SLUICE_CHROMIUM (which `make
// integration` sets from integration/scripts/chromium.sh), else chromium
// on PATH. A missing one fails the test under -tags integration and skips
// it otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SLUICE_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium: set SLUICE_CHROMIUM or run integration/scripts/chromium.sh (apt-get install chromium)"
	if chromiumRequired {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// screenshotDir is where the test writes its screenshots:
// $SLUICE_DASHBOARD_SCREENSHOTS, else a new temporary directory that is
// kept (and logged) as the test's artefact.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_DASHBOARD_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "sluice-dashboard-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshots in %s", dir)
	return dir
}

// yarnProxy serves the cluster's REST endpoint under
// /proxy/<application>/, as YARN's ResourceManager web proxy serves an
// ApplicationMaster's tracking URL: a page that asks for anything outside
// the prefix (an absolute URL) gets 404, which the test reports.
func yarnProxy(t *testing.T, restAddr, prefix string) string {
	t.Helper()
	target, _ := url.Parse("http://" + restAddr)
	rp := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.Handle(prefix, http.StripPrefix(strings.TrimSuffix(prefix, "/"), rp))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + prefix
}

// browserLog collects what the page reports that a user would see as a
// problem: console errors, uncaught exceptions, failed requests and
// answers with an error status.
type browserLog struct {
	mu       sync.Mutex
	problems []string
	requests int
	schemes  map[string]int // requests by their URL's scheme
}

func (l *browserLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// take returns the problems since the last call.
func (l *browserLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.problems
	l.problems = nil
	return p
}

func (l *browserLog) listen(ctx context.Context) error {
	urls := sync.Map{}
	return chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				l.add("console.%s: %s", e.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			l.add("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				l.add("browser log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			urls.Store(e.RequestID, e.Request.Method+" "+e.Request.URL)
			l.mu.Lock()
			l.requests++
			if l.schemes == nil {
				l.schemes = map[string]int{}
			}
			if u, err := url.Parse(e.Request.URL); err == nil {
				l.schemes[u.Scheme]++
			}
			l.mu.Unlock()
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				l.add("HTTP %d for %s", e.Response.Status, e.Response.URL)
			}
		case *network.EventLoadingFailed:
			u, _ := urls.Load(e.RequestID)
			if !e.Canceled {
				l.add("request failed: %v: %s", u, e.ErrorText)
			}
		}
	})
}

// restJSON reads a REST answer of the cluster into v.
func restJSON(t *testing.T, c *cluster, path string, v any) {
	t.Helper()
	b, err := c.get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

// TestDashboard drives the web dashboard in a real headless Chromium
// against a live standalone cluster (a JobManager and two TaskManagers as
// processes) running a checkpointing job, through a reverse proxy that
// mounts the REST endpoint under /proxy/<application>/ as YARN's web proxy
// does. Every page loads with no console error, no uncaught exception and
// no failed or refused request; the job graph has one SVG node per vertex;
// the per-vertex rates, the subtask plots and the checkpoint history fill
// in from the live job; and the job is cancelled from its page (button,
// then the confirmation), which the REST API then reports CANCELED. Each
// page is kept as a PNG.
func TestDashboard(t *testing.T) {
	bin := chromium(t)
	shots := screenshotDir(t)
	c := newCluster(t, 2, "execution.checkpointing.savepoint-dir=file://"+filepath.Join(t.TempDir(), "savepoints"),
		"rest.flamegraph.enabled=true", "rest.flamegraph.num-samples=20", "env.log.dir="+filepath.Join(t.TempDir(), "jmlog"))
	args := append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	args = append(args, jobBin, "-shape", "union", "-out", filepath.Join(c.dir, "out"), "-n", "100000000", "-rate", "400", "-spin", "100000")
	o := c.mustSluice(args...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
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

	base := yarnProxy(t, c.rest(), "/proxy/application_1700000000000_0001/") + "?refresh=500"
	b := newBrowser(t, bin, shots)
	ctx, blog, page := b.ctx, b.log, b.page(base)

	nodes := len(details.Vertices)
	page("01-overview", "#/overview",
		`document.querySelector('#c-tms .value')?.textContent === '2' && document.querySelector('#c-slots .value')?.textContent === '2' && document.querySelectorAll('#running tr.link').length === 1 && document.querySelector('#security') !== null && document.querySelector('#security').textContent.includes('not reported by this cluster')`)
	page("02-running-jobs", "#/jobs/running", `document.querySelectorAll('#list tr.link').length === 1`)
	page("03-job-graph", "#/job/"+job,
		fmt.Sprintf(`document.querySelectorAll('#job-graph g.node').length === %d && [...document.querySelectorAll('#job-graph g.node')].some(n => /Out [0-9.]+( k| M)?\/s/.test(n.textContent)) && document.querySelectorAll('#vertex-table tbody tr').length === %d && document.querySelector('#btn-cancel') !== null`, nodes, nodes))
	svgNodes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#job-graph g.node').length`))
	if err != nil || svgNodes != nodes {
		t.Errorf("the job graph has %d SVG nodes (err %v); the job has %d vertices", svgNodes, err, nodes)
	}
	page("04-vertex", "#/job/"+job+"/vertex/"+details.Vertices[0].ID,
		`document.querySelectorAll('#subtask-table tbody tr').length >= 1 && document.querySelector('#subtask-table a[href^="#/taskmanager/"]') !== null && document.querySelector('#subtask-table td.bp-level span[class^="bp-"]') !== null && [...document.querySelectorAll('#plots polyline')].some(p => p.getAttribute('points').split(' ').length >= 4)`)
	// The flame graph of the vertex whose Map spins (clusterjob -spin): On-CPU
	// first (the page's default), whose frames, SVG bars, show the job's
	// user function; then the goroutine samples of every kind (Mixed,
	// Flink's FULL); a click on a frame zooms into it.
	flame := details.Vertices[len(details.Vertices)-1].ID
	page("04b-vertex-flamegraph-on-cpu", "#/job/"+job+"/vertex/"+flame+"/flamegraph",
		`document.querySelector('#tab-flamegraph.active') !== null && /[0-9]+ samples, taken/.test(document.querySelector('#fg-status')?.textContent ?? '') && `+
			`[...document.querySelectorAll('#flamegraph g.frame title')].some(t => t.textContent.startsWith('main.spinWork ('))`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#fg-type-FULL"))); err != nil {
		t.Fatalf("choosing the mixed flame graph: %v", err)
	}
	page("04c-vertex-flamegraph-full", "#/job/"+job+"/vertex/"+flame+"/flamegraph",
		`document.querySelector('#fg-type-FULL')?.checked && document.querySelectorAll('#flamegraph svg.flamegraph g.frame').length > 5 && `+
			`[...document.querySelectorAll('#flamegraph g.frame title')].some(t => t.textContent.includes('task.(*Task).Run'))`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#flamegraph g.frame:nth-of-type(3)"))); err != nil {
		t.Fatalf("clicking a frame of the flame graph: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.querySelector('#fg-reset').hidden && document.querySelectorAll('#flamegraph g.frame.dim').length >= 1`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("a click on a frame does not zoom the flame graph: %v", err)
	}
	shot(t, ctx, filepath.Join(shots, "04d-vertex-flamegraph-zoomed.png"))
	for _, p := range blog.take() {
		t.Errorf("flame graph: %s", p)
	}
	page("05-checkpoints", "#/job/"+job+"/checkpoints",
		`[...document.querySelectorAll('#cp-history tbody tr')].some(r => r.textContent.includes('COMPLETED')) && document.querySelectorAll('.plot polyline, .plot circle').length >= 1`)
	page("06-exceptions", "#/job/"+job+"/exceptions", `document.querySelector('#tab .panel') !== null`)
	page("07-job-configuration", "#/job/"+job+"/configuration",
		`document.querySelector('#exec-config') !== null && document.querySelector('#job-config')?.textContent.includes('execution.checkpointing.interval')`)
	page("08-taskmanagers", "#/taskmanagers", `document.querySelectorAll('#tm-table tr.link').length === 2`)
	var tms struct {
		TaskManagers []struct {
			ID string `json:"id"`
		} `json:"taskmanagers"`
	}
	restJSON(t, c, "/taskmanagers", &tms)
	tmHash := "#/taskmanager/" + url.PathEscape(tms.TaskManagers[0].ID)
	page("09-taskmanager", tmHash, `document.querySelector('#tm-details') !== null && document.querySelector('#tm-log-table')?.textContent.includes('taskmanager.log') && `+
		`/Goroutines[0-9]+/.test(document.querySelector('#tm-memory')?.textContent ?? '')`)
	page("09b-taskmanager-log", tmHash+"/log", `document.querySelector('#tm-file pre')?.textContent.includes('msg="TaskManager started"')`)
	page("09c-taskmanager-goroutines", tmHash+"/goroutines",
		`document.querySelectorAll('#tm-file pre').length >= 3 && document.querySelector('#tm-file')?.textContent.includes('(*TaskManager).Run')`)
	page("10-jobmanager", "#/jobmanager", `document.querySelector('#jm-config-table')?.textContent.includes('rest.port') && document.querySelector('#jm-logs a[href="#/jobmanager/goroutines"]') !== null && `+
		`document.querySelector('#jm-log-table')?.textContent.includes('jobmanager.log')`)
	page("10a-jobmanager-log", "#/jobmanager/log", `document.querySelector('#tm-file pre')?.textContent.includes('msg="JobManager running"')`)
	page("10b-jobmanager-goroutines", "#/jobmanager/goroutines",
		`document.querySelectorAll('#tm-file pre').length >= 3 && document.querySelector('#tm-file')?.textContent.includes('net/http.(*Server).Serve')`)

	// A savepoint from the job's page: the button, the dialog (the
	// cluster's savepoint directory), then the outcome it reports.
	page("11-job-before-savepoint", "#/job/"+job, `document.querySelector('#btn-savepoint') !== null`)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#btn-savepoint")),
		chromedp.WaitVisible(chromedp.CSS("#modal-ok")),
		chromedp.Click(chromedp.CSS("#modal-ok")),
	); err != nil {
		t.Fatalf("triggering a savepoint from the page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#toast')?.textContent.startsWith('Savepoint completed: ')`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		toast, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#toast')?.textContent ?? ''`))
		t.Errorf("the page does not report the savepoint complete: %v; it says %q", err, toast)
	}
	shot(t, ctx, filepath.Join(shots, "12-savepoint-completed.png"))
	var cps struct {
		Latest struct {
			Savepoint *struct {
				Path string `json:"external_path"`
			} `json:"savepoint"`
		} `json:"latest"`
	}
	restJSON(t, c, "/jobs/"+job+"/checkpoints", &cps)
	if cps.Latest.Savepoint == nil || !strings.Contains(cps.Latest.Savepoint.Path, "savepoint-") {
		t.Errorf("after the page's savepoint, GET /jobs/:id/checkpoints has no latest savepoint: %+v", cps.Latest)
	}
	for _, p := range blog.take() {
		t.Errorf("savepoint: %s", p)
	}

	// Cancel from the job's page: the button, then the confirmation.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#btn-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#modal-ok")),
	); err != nil {
		t.Fatalf("clicking Cancel job: %v", err)
	}
	shot(t, ctx, filepath.Join(shots, "13-cancel-confirmation.png"))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#modal-ok"))); err != nil {
		t.Fatalf("confirming the cancellation: %v", err)
	}
	testwait.Eventually(t, 60*time.Second, "the job cancelled from the dashboard to be CANCELED", func() bool {
		restJSON(t, c, "/jobs/"+job, &details)
		return details.State == "CANCELED"
	})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#head .badge')?.textContent === 'CANCELED' && document.querySelector('#btn-cancel') === null`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("the job's page does not show it CANCELED: %v", err)
	}
	shot(t, ctx, filepath.Join(shots, "14-job-cancelled.png"))
	for _, p := range blog.take() {
		t.Errorf("cancelling: %s", p)
	}
	// Submit the job binary from the page (Flink's jar upload and run):
	// upload it, run it with arguments at parallelism 1; the page opens
	// the new job, which runs to its end.
	page("15-submit", "#/submit", `document.querySelector('#jar-file') !== null && document.querySelector('#jars')?.textContent.includes('No job binary is uploaded.')`)
	if err := chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.CSS("#jar-file"), []string{jobBin}),
		chromedp.Click(chromedp.CSS("#jar-upload")),
	); err != nil {
		t.Fatalf("uploading the job binary from the page: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('#jar-table tbody tr').length === 1 && document.querySelector('#jar-table td.mono')?.textContent === 'clusterjob'`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the uploaded binary is not listed: %v", err)
	}
	submittedOut := filepath.Join(c.dir, "out-submitted")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#jar-table .jar-args"), "-out "+submittedOut+" -n 2000 -keys 4"),
		chromedp.SendKeys(chromedp.CSS("#jar-table .jar-par"), "1"),
	); err != nil {
		t.Fatalf("filling in the run's arguments: %v", err)
	}
	shot(t, ctx, filepath.Join(shots, "15b-jar-uploaded.png"))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#jar-table .jar-run"))); err != nil {
		t.Fatalf("clicking Run: %v", err)
	}
	submitted, err := chromedp.Run(ctx, chromedp.Poll[string](`(location.hash.match(/^#\/job\/([0-9a-f]{32})$/) || [])[1]`,
		chromedp.WithPollingTimeout(2*time.Minute)))
	if err != nil {
		toast, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#toast')?.textContent ?? ''`))
		t.Fatalf("the page does not open the submitted job: %v; it says %q", err, toast)
	}
	testwait.Eventually(t, 2*time.Minute, "the job submitted from the page to finish", func() bool {
		restJSON(t, c, "/jobs/"+submitted, &details)
		return details.State == "FINISHED"
	})
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('#head .badge')?.textContent === 'FINISHED'`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("the submitted job's page does not show it FINISHED: %v", err)
	}
	// The finished job's vertices keep their counts: 2000 records out of
	// the source, into the reduce (the job ran for well under a second,
	// the workers' period of reports).
	var ended struct {
		Vertices []struct {
			Name    string `json:"name"`
			Metrics struct {
				Read  int64 `json:"read-records"`
				Write int64 `json:"write-records"`
			} `json:"metrics"`
		} `json:"vertices"`
	}
	restJSON(t, c, "/jobs/"+submitted, &ended)
	if len(ended.Vertices) != 2 || ended.Vertices[0].Metrics.Write != 2000 || ended.Vertices[1].Metrics.Read != 2000 {
		t.Errorf("the finished job's vertices report %+v; want 2000 records written by the first, read by the second", ended.Vertices)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll('#vertex-table tbody tr')].map(r => r.cells[3].textContent + '/' + r.cells[4].textContent).join(',') === '0/2000,2000/0'`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		rows, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#vertex-table tbody tr')].map(r => r.cells[3].textContent + '/' + r.cells[4].textContent).join(',')`))
		t.Errorf("the finished job's page shows records in/out %q, want 0/2000,2000/0: %v", rows, err)
	}
	shot(t, ctx, filepath.Join(shots, "15c-submitted-job-finished.png"))
	for _, p := range blog.take() {
		t.Errorf("submitting: %s", p)
	}
	page("16-completed-jobs", "#/jobs/completed", `[...document.querySelectorAll('#list tr.link')].some(r => r.textContent.includes('CANCELED')) && [...document.querySelectorAll('#list tr.link')].some(r => r.textContent.includes('FINISHED'))`)
	blog.mu.Lock()
	t.Logf("the browser made %d requests", blog.requests)
	blog.mu.Unlock()
}

// browser is a headless Chromium driven by chromedp, with what its pages
// report collected.
type browser struct {
	t     *testing.T
	ctx   context.Context
	log   *browserLog
	shots string
}

// newBrowser starts Chromium (bin) for the test, with extra options
// (environment, flags), and opens its tab; it is stopped when the test
// ends.
func newBrowser(t *testing.T, bin, shots string, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 960),
	}, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	t.Cleanup(cancel)
	// The first action starts the browser and opens its tab (with the
	// runtime, log and network domains enabled).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium (%s): %v", bin, err)
	}
	b := &browser{t: t, ctx: ctx, log: &browserLog{}, shots: shots}
	if err := b.log.listen(ctx); err != nil {
		t.Fatalf("listening to Chromium's events: %v", err)
	}
	return b
}

// page returns a function that opens the dashboard at base+fragment,
// waits until ready (a JS expression) holds, keeps a screenshot, and
// fails the test with what the browser reported.
func (b *browser) page(base string) func(name, fragment, ready string) {
	t, ctx := b.t, b.ctx
	return func(name, fragment, ready string) {
		t.Helper()
		err := chromedp.Do(ctx, chromedp.Navigate(base+fragment))
		if err == nil {
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
		}
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
			t.Errorf("page %s (%s): waiting for %s: %v; the page shows:\n%s", name, fragment, ready, err, text)
		}
		shot(t, ctx, filepath.Join(b.shots, name+".png"))
		for _, p := range b.log.take() {
			t.Errorf("page %s: %s", name, p)
		}
	}
}

// shot writes a screenshot of the whole page.
func shot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", path, err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Error(err)
	}
}
