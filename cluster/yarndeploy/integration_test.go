//go:build integration

package yarndeploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/yarndeploy"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

// Integration tests against a real MiniYARNCluster and MiniDFSCluster (see
// integration/minicluster): real applications whose ApplicationMaster is
// testdata/testam (package yarnam with a test Host) and whose TaskManagers
// are testdata/testtm. Run with: go test -tags integration ./cluster/yarndeploy/

// bins are the test programs, built once by TestMain.
var bins struct{ am, tm, failingAM, realAM string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-yarndeploy-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bins.am, bins.tm = filepath.Join(dir, "appmaster"), filepath.Join(dir, "taskmanager")
		bins.realAM = filepath.Join(dir, "real", "appmaster")
		for _, b := range []struct{ out, pkg string }{
			{bins.am, "./testdata/testam"}, {bins.tm, "./testdata/testtm"}, {bins.realAM, "../../cmd/appmaster"},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		bins.failingAM = filepath.Join(dir, "failing-appmaster")
		if err := os.WriteFile(bins.failingAM, []byte("#!/bin/sh\necho 'the test ApplicationMaster fails on purpose' >&2\nexit 1\n"), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return minicluster.RunMain(m)
	}()
	os.Exit(code)
}

// lines collects progress lines and logs them.
type lines struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log("progress: " + strings.TrimSpace(string(p)))
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type rig struct {
	c      *minicluster.Cluster
	hadoop *hadoop.Configuration
	user   string
	fs     *hdfs.FileSystem
}

func newRig(t *testing.T) *rig {
	t.Helper()
	c := minicluster.Shared(t)
	h, err := hadoop.LoadFromEnvironment(func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: h, User: user}, "")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return &rig{c: c, hadoop: h, user: user, fs: fsys}
}

func (r *rig) deployer(t *testing.T, props map[string]string, am string, progress *lines, creds *hadoop.Credentials) *yarndeploy.Deployer {
	t.Helper()
	d, err := yarndeploy.New(yarndeploy.Options{
		Conf: conf.FromMap(props, conf.Source{Name: "test"}), Hadoop: r.hadoop, User: r.user,
		AppMaster: am, TaskManager: bins.tm, Credentials: creds, Progress: progress,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// waitGone polls until p does not exist on HDFS.
func waitGone(t *testing.T, fsys *hdfs.FileSystem, p string, within time.Duration) {
	t.Helper()
	testwait.Eventually(t, within, p+" to be gone from HDFS", func() bool {
		_, err := fsys.Stat(p)
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			t.Fatalf("stat %s: %v", p, err)
		}
		return err != nil
	})
}

// TestDeployRunsTaskManagers deploys an application whose ApplicationMaster
// asks its driver for 2 TaskManagers, makes the first exit (reported and
// replaced), keeps two running and ends SUCCEEDED; the staging directory is
// then deleted by the ApplicationMaster.
func TestDeployRunsTaskManagers(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The TaskManager binary comes pre-uploaded (yarn.provided.lib.dirs);
	// the ApplicationMaster binary is uploaded.
	provided := randomName("/tmp/sluice-provided-")
	if err := r.fs.MkdirAll(provided); err != nil {
		t.Fatal(err)
	}
	defer r.fs.RemoveAll(provided)
	tmBytes, err := os.ReadFile(bins.tm)
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.WriteFile(r.fs, path.Join(provided, "taskmanager"), tmBytes); err != nil {
		t.Fatal(err)
	}
	markers := randomName("/tmp/sluice-markers-")
	defer r.fs.RemoveAll(markers)
	tag := randomName("sluice-it-")

	var creds hadoop.Credentials
	creds.AddToken("sluice-test", &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: "SLUICE_TEST", Service: "svc:1"})
	progress := &lines{t: t}
	d := r.deployer(t, map[string]string{
		"yarn.application.name":                                "sluice-it-containers",
		"yarn.application.type":                                "SLUICE-IT",
		"yarn.application.queue":                               "default",
		"yarn.tags":                                            tag,
		"jobmanager.memory.process.size":                       "256m",
		"taskmanager.memory.process.size":                      "128m",
		"yarn.provided.lib.dirs":                               "hdfs://" + r.c.NameNode + provided,
		"containerized.taskmanager.env.SLUICE_TEST_MARKER_DIR": markers,
	}, bins.am, progress, &creds)

	began := time.Now()
	app, err := d.Deploy(ctx)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	deployed := time.Since(began)
	id := app.ID

	// The staging directory: private, holding the uploaded files only.
	fi, err := r.fs.Stat(app.StagingDir.Path)
	if err != nil {
		t.Fatalf("staging directory: %v", err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || path.Base(app.StagingDir.Path) != id.String() ||
		app.StagingDir.Path != "/user/"+r.user+"/.sluice/"+id.String() {
		t.Errorf("staging directory %s mode %v", app.StagingDir, fi.Mode())
	}
	infos, err := r.fs.ReadDir(app.StagingDir.Path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
		// The application's internal TLS files (on by default on YARN).
		if (strings.HasPrefix(fi.Name(), "internal-") || fi.Name() == yarndeploy.FileRESTToken) && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is staged with mode %v, want 0600", fi.Name(), fi.Mode().Perm())
		}
	}
	if want := []string{"appmaster", "config.yaml", "core-site.xml", "internal-keystore-jobmanager.pem",
		"internal-keystore-taskmanager.pem", "internal-truststore.pem", "rest-token"}; !slices.Equal(names, want) {
		t.Errorf("staged files %v, want %v (the TaskManager is pre-uploaded)", names, want)
	}

	rep := app.Report
	if rep.Name != "sluice-it-containers" || rep.Type != "SLUICE-IT" || !slices.Contains(rep.Tags, tag) ||
		(rep.Queue != "default" && rep.Queue != "root.default") || rep.User != r.user {
		t.Errorf("report %+v", rep)
	}
	if app.TrackingURL == "" || !strings.HasPrefix(app.RESTAddress, "http://") {
		t.Errorf("tracking URL %q, REST address %q", app.TrackingURL, app.RESTAddress)
	}
	out := progress.String()
	for _, want := range []string{"Uploading appmaster", "Using the pre-uploaded taskmanager", "ACCEPTED after", "RUNNING after", "REST endpoint: " + app.RESTAddress} {
		if !strings.Contains(out, want) {
			t.Errorf("progress does not say %q", want)
		}
	}

	final, err := d.YARN().WaitForState(ctx, id, 100*time.Millisecond, yarn.StateFinished)
	finished := time.Since(began)
	if err != nil {
		t.Fatalf("waiting for the application to finish: %v", err)
	}
	if final.FinalStatus != yarn.FinalSucceeded || !strings.Contains(final.Diagnostics, "test AM: ok") {
		t.Fatalf("final status %s: %s", final.FinalStatus, final.Diagnostics)
	}
	t.Logf("the ApplicationMaster reported: %s", final.Diagnostics)
	waitGone(t, r.fs, app.StagingDir.Path, 30*time.Second)

	// Every TaskManager wrote its marker as the submitting user: the one
	// that exited and the two that stayed.
	minfos, err := r.fs.ReadDir(markers)
	if err != nil {
		t.Fatalf("markers: %v", err)
	}
	if len(minfos) != 3 {
		t.Errorf("%d markers, want 3", len(minfos))
	}
	for _, fi := range minfos {
		b, err := fstest.ReadFile(r.fs, path.Join(markers, fi.Name()))
		if err != nil || !strings.Contains(string(b), "ran as "+r.user) || !strings.Contains(fi.Name(), id.String()[len("application_"):]) {
			t.Errorf("marker %s: %q, %v", fi.Name(), b, err)
		}
	}

	// The container logs are where YARN keeps them (harness clusters only).
	if work := r.c.Fields["work_dir"]; work != "" {
		checkLogs(t, work, id)
	} else {
		t.Log("external cluster: container logs not checked")
	}

	// Timings, for comparison with integration/scripts/distshell.sh.
	ms := func(key string) int64 {
		m := regexp.MustCompile(key + `=(\d+)`).FindStringSubmatch(final.Diagnostics)
		if m == nil {
			t.Fatalf("no %s in %q", key, final.Diagnostics)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	sub := app.Timings.Submitted
	since := func(unixMS int64) time.Duration { return time.UnixMilli(unixMS).Sub(sub).Round(time.Millisecond) }
	t.Logf("TIMINGS: Deploy call → submission (id, checks, staging) %v; from submission: ACCEPTED %v, AM process started %v, "+
		"RUNNING (AM registered) %v, Deploy returned %v, first TaskManager up %v, "+
		"2 TaskManagers up (the first told to exit, reported, replaced) %v, FINISHED seen %v",
		app.Timings.Staging.Round(time.Millisecond), app.Timings.ToAccepted.Round(time.Millisecond), since(ms("start_ms")),
		app.Timings.ToRunning.Round(time.Millisecond), (deployed - app.Timings.Staging).Round(time.Millisecond),
		since(ms("first_hello_ms")), since(ms("all_running_ms")), (finished - app.Timings.Staging).Round(time.Millisecond))
}

// checkLogs finds the application's container log directories under the
// harness's work dir: every TaskManager wrote taskmanager.out, the
// ApplicationMaster jobmanager.err.
func checkLogs(t *testing.T, work string, id yarn.ApplicationID) {
	t.Helper()
	var tmOut, amErr []string
	filepath.WalkDir(work, func(p string, de iofs.DirEntry, err error) error {
		if err != nil || !strings.Contains(p, id.String()) {
			return nil
		}
		switch de.Name() {
		case "taskmanager.out":
			tmOut = append(tmOut, p)
		case "jobmanager.err":
			amErr = append(amErr, p)
		}
		return nil
	})
	if len(tmOut) != 3 || len(amErr) != 1 {
		t.Fatalf("logs: taskmanager.out %v, jobmanager.err %v; want 3 and 1", tmOut, amErr)
	}
	for _, p := range tmOut {
		b, _ := os.ReadFile(p)
		if !strings.Contains(string(b), "taskmanager test: resource id "+filepath.Base(filepath.Dir(p))) || !strings.Contains(string(b), ", ok\n") {
			t.Errorf("%s: %q", p, b)
		}
	}
	b, _ := os.ReadFile(amErr[0])
	if !strings.Contains(string(b), "registered with the ResourceManager") || !strings.Contains(string(b), "deleted the staging directory") {
		t.Errorf("%s does not show registration and cleanup:\n%s", amErr[0], b)
	}
}

// stagingEntries lists the user's staging base, <home>/.sluice.
func (r *rig) stagingEntries(t *testing.T) []string {
	t.Helper()
	infos, err := r.fs.ReadDir("/user/" + r.user + "/.sluice")
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fi := range infos {
		out = append(out, fi.Name())
	}
	return out
}

func TestDeployRejectsOversizedContainers(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := r.stagingEntries(t)
	d := r.deployer(t, map[string]string{"taskmanager.memory.process.size": "64g", "yarn.appmaster.vcores": "99"}, bins.am, &lines{t: t}, nil)
	_, err := d.Deploy(ctx)
	var re *yarndeploy.ResourceError
	if !errors.As(err, &re) || !errors.Is(err, yarn.ErrExceedsMaximum) {
		t.Fatalf("err = %v, want a ResourceError", err)
	}
	if len(re.Problems) != 2 || !strings.Contains(err.Error(), "taskmanager.memory.process.size is 65536 MB") || !strings.Contains(err.Error(), "yarn.appmaster.vcores is 99") {
		t.Errorf("error: %v", err)
	}
	t.Logf("as the user sees it: %v", err)
	if after := r.stagingEntries(t); !slices.Equal(before, after) {
		t.Errorf("staging entries changed from %v to %v", before, after)
	}
}

func TestDeployUnknownQueue(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := r.stagingEntries(t)
	d := r.deployer(t, map[string]string{"yarn.application.queue": "no-such-queue", "jobmanager.memory.process.size": "256m"}, bins.am, &lines{t: t}, nil)
	if _, err := d.Deploy(ctx); !errors.Is(err, yarn.ErrUnknownQueue) {
		t.Fatalf("err = %v, want ErrUnknownQueue", err)
	}
	if after := r.stagingEntries(t); !slices.Equal(before, after) {
		t.Errorf("staging entries changed from %v to %v", before, after)
	}
}

// TestDeployFailingAppMaster: an ApplicationMaster that dies before
// registering fails the deployment with YARN's diagnostics, and the client
// deletes the staging directory.
func TestDeployFailingAppMaster(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	progress := &lines{t: t}
	d := r.deployer(t, map[string]string{"jobmanager.memory.process.size": "256m", "yarn.application-attempts": "1"}, bins.failingAM, progress, nil)
	_, err := d.Deploy(ctx)
	var ae *yarn.ApplicationError
	if !errors.As(err, &ae) || ae.State != yarn.StateFailed {
		t.Fatalf("err = %v, want the application FAILED", err)
	}
	if !strings.Contains(ae.Diagnostics, "exitCode: 1") && !strings.Contains(ae.Diagnostics, "exit code 1") {
		t.Errorf("diagnostics do not give the exit code: %s", ae.Diagnostics)
	}
	dir, err := d.StagingDir(ae.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, r.fs, dir.Path, 10*time.Second)
	if !strings.Contains(progress.String(), "Deleted the staging directory") {
		t.Errorf("progress does not report the cleanup:\n%s", progress)
	}
}

// TestKill deploys a session cluster whose ApplicationMaster idles, and
// kills it: the application ends KILLED and its staging directory is gone.
func TestKill(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := r.deployer(t, map[string]string{
		"jobmanager.memory.process.size":               "256m",
		"containerized.master.env.SLUICE_TEST_AM_MODE": "idle",
	}, bins.am, &lines{t: t}, nil)
	app, err := d.Deploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(app.Report.Name, "Sluice session cluster") {
		t.Errorf("name %q", app.Report.Name)
	}
	if _, err := r.fs.Stat(app.StagingDir.Path); err != nil {
		t.Fatalf("staging directory of the running application: %v", err)
	}
	if err := d.Kill(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := d.YARN().GetApplicationReport(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != yarn.StateKilled {
		t.Errorf("state %s after Kill", rep.State)
	}
	if _, err := r.fs.Stat(app.StagingDir.Path); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("staging directory after Kill: %v", err)
	}
	if _, err := url.Parse(app.TrackingURL); err != nil {
		t.Errorf("tracking URL %q: %v", app.TrackingURL, err)
	}
}

// TestAppMasterCommand: the real cmd/appmaster registers, hosts a session
// JobManager whose REST endpoint answers with the cluster's overview, and,
// killed, leaves no staging directory.
func TestAppMasterCommand(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := r.deployer(t, map[string]string{"jobmanager.memory.process.size": "256m"}, bins.realAM, &lines{t: t}, nil)
	app, err := d.Deploy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if app.RESTAddress == "" {
		t.Fatal("the ApplicationMaster registered no REST endpoint")
	}
	var body []byte
	testwait.EventuallyNil(t, 30*time.Second, "the session's REST endpoint "+app.RESTAddress+" to answer /overview", func() error {
		resp, err := http.Get(strings.TrimSuffix(app.RESTAddress, "/") + "/overview")
		if err != nil {
			return err
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s", resp.Status, body)
		}
		return nil
	})
	if !strings.Contains(string(body), `"slots-total"`) {
		t.Errorf("/overview: %s", body)
	}
	if err := d.Kill(ctx, app.ID); err != nil {
		t.Fatal(err)
	}
	dir, err := d.StagingDir(app.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, r.fs, dir.Path, 30*time.Second)
}

// TestAppMasterReportsBrokenEnvironment: an ApplicationMaster that cannot
// read its configuration still registers to end the application FAILED
// with the reason, so the user sees it in the report, and deletes the
// staging directory.
func TestAppMasterReportsBrokenEnvironment(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := r.deployer(t, map[string]string{
		"jobmanager.memory.process.size":           "256m",
		"containerized.master.env.SLUICE_CONF_DIR": "/nonexistent/sluice-conf",
	}, bins.am, &lines{t: t}, nil)
	app, err := d.Deploy(ctx)
	var id yarn.ApplicationID
	var ae *yarn.ApplicationError
	switch {
	case err == nil:
		id = app.ID
	case errors.As(err, &ae):
		id = ae.ID
	default:
		t.Fatal(err)
	}
	rep, err := d.YARN().WaitForState(ctx, id, 100*time.Millisecond, yarn.StateFinished)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FinalStatus != yarn.FinalFailed || !strings.Contains(rep.Diagnostics, "/nonexistent/sluice-conf/config.yaml") {
		t.Errorf("final status %s: %q", rep.FinalStatus, rep.Diagnostics)
	}
	t.Logf("as the user sees it: %s", rep.Diagnostics)
	dir, err := d.StagingDir(id)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, r.fs, dir.Path, 30*time.Second)
}
