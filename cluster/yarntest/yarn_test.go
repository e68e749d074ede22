//go:build integration

package yarntest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/kerberos"
)

// bins are the binaries, built once by TestMain: the CLI with the
// ApplicationMaster and TaskManager beside it (where it looks for them),
// and the job.
var bins struct{ dir, sluice, job, kafkaJob, wordcount string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-yarntest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bins.dir = dir
		bins.sluice, bins.job, bins.kafkaJob = filepath.Join(dir, "sluice"), filepath.Join(dir, "clusterjob"), filepath.Join(dir, "kafkajob")
		bins.wordcount = filepath.Join(dir, "wordcount")
		for _, b := range []struct{ out, pkg string }{
			{bins.sluice, "../../cmd/client"}, {filepath.Join(dir, "appmaster"), "../../cmd/appmaster"},
			{filepath.Join(dir, "taskmanager"), "../../cmd/taskmanager"}, {bins.job, "../testdata/clusterjob"},
			{bins.kafkaJob, "../testdata/kafkajob"}, {bins.wordcount, "../../examples/wordcount"},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		return minicluster.RunMain(m)
	}()
	os.Exit(code)
}

// small keeps the containers small enough for the mini cluster's
// NodeManagers.
var small = []string{"-Djobmanager.memory.process.size=512m", "-Dtaskmanager.memory.process.size=512m"}

// checkpointed makes the job checkpoint every 300 ms and restart on
// failure.
var checkpointed = []string{"-Dexecution.checkpointing.interval=300ms", "-Drestart-strategy.type=fixed-delay",
	"-Drestart-strategy.fixed-delay.attempts=10", "-Drestart-strategy.fixed-delay.delay=100ms"}

type rig struct {
	c    *minicluster.Cluster
	fs   *hdfs.FileSystem
	work string // local directory of the job's output
	hdfs string // HDFS directory of the test (checkpoints)
	// login is the client principal's on the secure cluster, nil on the
	// other.
	login *kerberos.Login
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigOn(t, minicluster.Shared(t))
}

// newRigOn is newRig on the Hadoop cluster c.
func newRigOn(t testing.TB, c *minicluster.Cluster) *rig {
	t.Helper()
	h, err := hadoop.LoadFromEnvironment(func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: h, Getenv: os.Getenv}, "")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	dir := "/tmp/sluice-yarntest-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		fsys.RemoveAll(dir)
		fsys.Close()
	})
	return &rig{c: c, fs: fsys, work: t.TempDir(), hdfs: dir}
}

// buffer is an output buffer safe for concurrent use.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// run is a sluice command in progress.
type run struct {
	out  buffer
	done chan struct{}
	err  error
}

// start runs the sluice CLI with the mini cluster's Hadoop configuration.
func (r *rig) start(ctx context.Context, args ...string) *run {
	cmd := exec.CommandContext(ctx, bins.sluice, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_CONF_DIR=") && !strings.HasPrefix(kv, "HADOOP_CONF_DIR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "HADOOP_CONF_DIR="+r.c.ConfDir)
	p := &run{done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	go func() {
		p.err = cmd.Run()
		close(p.done)
	}()
	return p
}

// wait waits for the command to end and returns its output.
func (p *run) wait() (string, error) {
	<-p.done
	return p.out.String(), p.err
}

func (r *rig) sluice(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	p := r.start(ctx, args...)
	<-p.done
	t.Logf("sluice %s:\n%s", strings.Join(args, " "), p.out.String())
	return p.out.String(), p.err
}

var (
	reAppID = regexp.MustCompile(`Application id: (application_\d+_\d+)`)
	reREST  = regexp.MustCompile(`REST endpoint: http://(\S+)`)
)

// match polls a running command's output for re until it matches.
func match(t testing.TB, p *run, re *regexp.Regexp, within time.Duration) string {
	t.Helper()
	var m []string
	if err := testwait.Poll(within, func() bool {
		if m = re.FindStringSubmatch(p.out.String()); m != nil {
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("sluice ended (%v) without printing %v:\n%s", p.err, re, p.out.String())
		default:
		}
		return false
	}); err != nil {
		t.Fatalf("no %v within %v (%v):\n%s", re, within, err, p.out.String())
	}
	return m[1]
}

// runningJob polls the REST endpoint until a job runs and returns its id.
func runningJob(t testing.TB, ctx context.Context, rc *restclient.Client, within time.Duration) string {
	t.Helper()
	var id string
	testwait.Eventually(t, within, "a RUNNING job", func() bool {
		jobs, err := rc.Jobs(ctx)
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if string(j.Status) == "RUNNING" {
				id = j.ID
				return true
			}
		}
		return false
	})
	return id
}

// deploy starts sluice run --target yarn-application with args and waits
// for the application id, the REST endpoint and a RUNNING job.
func (r *rig) deploy(t *testing.T, ctx context.Context, args ...string) (p *run, appID, addr string, rc *restclient.Client, job string) {
	t.Helper()
	p = r.start(ctx, args...)
	appID = match(t, p, reAppID, 2*time.Minute)
	addr = match(t, p, reREST, time.Second)
	rc, err := restclient.New(addr, restclient.WithToken(r.restToken(t, match(t, p, reStaging, time.Second))))
	if err != nil {
		t.Fatal(err)
	}
	return p, appID, addr, rc, runningJob(t, ctx, rc, 2*time.Minute)
}

// reStaging is the client's line naming the application's staging directory.
var reStaging = regexp.MustCompile(`Staging directory (\S+) \(mode`)

// restToken reads the application's REST token from its staging directory
// (an hdfs:// URI, as the client printed it), as the sluice commands do
// (the test runs as the application's owner).
func (r *rig) restToken(t *testing.T, staging string) []byte {
	t.Helper()
	u, err := url.Parse(staging)
	if err != nil {
		t.Fatalf("staging directory %q: %v", staging, err)
	}
	f, err := r.fs.Open(path.Join(u.Path, "rest-token"))
	if err != nil {
		t.Fatalf("the REST token in %s: %v", staging, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("the REST token in %s: %v", staging, err)
	}
	return bytes.TrimSpace(b)
}

// killTaskManager kills the TaskManager process pid (kill -9) and waits
// for a replacement container to register as a TaskManager not in before;
// it returns when it killed.
func killTaskManager(t *testing.T, ctx context.Context, rc *restclient.Client, pid int, before map[string]bool) time.Time {
	t.Helper()
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 2*time.Minute, "a replacement TaskManager", func() bool {
		tms, err := rc.TaskManagers(ctx)
		if err != nil {
			return false
		}
		for _, tm := range tms {
			if !before[tm.ID] {
				t.Logf("replacement TaskManager %s registered %v after the kill", tm.ID, time.Since(killed).Round(time.Millisecond))
				return true
			}
		}
		return false
	})
	return killed
}

// succeeded waits for a sluice run --target yarn-application to end and
// checks that it succeeded and reported the application's success.
func succeeded(t *testing.T, p *run, appID string) {
	t.Helper()
	<-p.done
	t.Logf("sluice run:\n%s", p.out.String())
	if p.err != nil {
		t.Fatalf("sluice run --target yarn-application: %v", p.err)
	}
	if !strings.Contains(p.out.String(), appID+" ended FINISHED, final status SUCCEEDED") {
		t.Errorf("the CLI did not report the application's success")
	}
}

// checkExactlyOnce checks the committed output of clusterjob in dir of
// fsys (HDFS, or fs.Local{} for a standalone cluster's local output):
// each key's counts 1..n/keys exactly once.
func checkExactlyOnce(t *testing.T, fsys fs.FileSystem, dir string, n, keys int) {
	t.Helper()
	seen := map[string]int{}
	total := 0
	infos, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the job's output directory %s: %v", dir, err)
	}
	for _, fi := range infos {
		if fi.IsDir() || !strings.HasPrefix(fi.Name(), "part-") {
			continue
		}
		fh, err := fsys.Open(path.Join(dir, fi.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			seen[sc.Text()]++
			total++
		}
		fh.Close()
	}
	var dups []string
	for l, k := range seen {
		if k > 1 {
			dups = append(dups, fmt.Sprintf("%q ×%d", l, k))
		}
	}
	sort.Strings(dups)
	if len(dups) > 0 {
		t.Errorf("duplicated output lines (%d), e.g. %v", len(dups), dups[:min(5, len(dups))])
	}
	var missing []string
	for k := 0; k < keys; k++ {
		for v := 1; v <= n/keys; v++ {
			if l := fmt.Sprintf("%d %d", k, v); seen[l] == 0 {
				missing = append(missing, l)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("missing output lines (%d), e.g. %q", len(missing), missing[:min(5, len(missing))])
	}
	if total != n {
		t.Errorf("%d output lines, want %d", total, n)
	}
}

// stagingGone checks the application's staging directory was deleted.
func (r *rig) stagingGone(t *testing.T, appID string) {
	t.Helper()
	user, err := hadoop.CurrentUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	dir := path.Join("/user", user, ".sluice", appID)
	testwait.Eventually(t, 30*time.Second, "the staging directory "+dir+" to be deleted", func() bool {
		_, err := r.fs.Stat(dir)
		return errors.Is(err, iofs.ErrNotExist)
	})
}

// hasCompletedCheckpoint reports whether the job completed a checkpoint.
func hasCompletedCheckpoint(ctx context.Context, rc *restclient.Client, job string) bool {
	st, err := rc.JobCheckpoints(ctx, job)
	return err == nil && st.Counts.Completed > 0
}

// TestApplicationModeExactlyOnce: sluice run --target yarn-application
// deploys the job program; the ApplicationMaster runs its main, the job
// runs with parallelism 2 in TaskManager containers, checkpointing to
// HDFS (the chk-N directories are there while it runs); the
// ResourceManager reports the application's type, name, queue and tags as
// configured; the committed output is exactly once, the application ends
// SUCCEEDED, no container of it is left, its staging directory is deleted,
// and the container log directories hold each TaskManager's
// taskmanager.log and its workers' output.
func TestApplicationModeExactlyOnce(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	const n, keys = 6000, 6
	args := append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-application",
		"-Dyarn.application.type=SluiceTest", "-Dyarn.application.queue=default", "-Dyarn.tags=yarntest,exactly-once"}, small...)
	args = append(args, checkpointed...)
	// A secret among the program's arguments (which the program ignores:
	// the flag package stops at it) never reaches a log of the
	// application.
	const secretArg = "kafka.sasl.password=hunter2-yarn-Zq8x"
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000", secretArg)

	began := time.Now()
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	toJobRunning := time.Since(began)
	testwait.Eventually(t, time.Minute, "a completed checkpoint on HDFS", func() bool { return hasCompletedCheckpoint(ctx, rc, job) })
	if chk := r.hdfsCheckpoints(r.hdfs + "/ckpt"); len(chk) == 0 {
		t.Errorf("the job completed a checkpoint but hdfs://%s/ckpt holds no chk-N directory", r.hdfs)
	} else {
		t.Logf("checkpoints on HDFS while the job runs: %q", chk)
	}
	checkIdentity(t, report(t, ctx, yc, appID), "SluiceTest", "yarntest-application", "default", []string{"yarntest", "exactly-once"})
	checkJobManagerLogs(t, ctx, rc.URL())
	checkRESTNeedsItsToken(t, ctx, rc, job, false)
	<-p.done
	toFinished := time.Since(began)
	t.Logf("sluice run:\n%s", p.out.String())
	if p.err != nil {
		t.Fatalf("sluice run --target yarn-application: %v", p.err)
	}
	if !strings.Contains(p.out.String(), appID+" ended FINISHED, final status SUCCEEDED") {
		t.Errorf("the CLI did not report the application's success")
	}
	checkExactlyOnce(t, r.fs, out, n, keys)
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
	checkFinalTrackingURL(t, ctx, r, appID)
	checkAggregatedLogs(t, ctx, r, appID)
	t.Logf("%d TaskManager containers", r.checkTaskManagerLogs(t, appID))
	r.checkNoSecretInLogs(t, appID, "hunter2-yarn")
	t.Logf("TIMING yarn-application: submit → job RUNNING %v, submit → application FINISHED %v (job of %d records at 2000/s)",
		toJobRunning.Round(time.Millisecond), toFinished.Round(time.Millisecond), n)
}

// checkJobManagerLogs: the ApplicationMaster's REST serves its container's
// log directory as Flink's does on YARN: GET /jobmanager/logs lists
// jobmanager.log, .out and .err, and GET /jobmanager/log is its log.
func checkJobManagerLogs(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	get := func(path string) []byte {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, b)
		}
		return b
	}
	var list struct{ Logs []struct{ Name string } }
	if err := json.Unmarshal(get("/jobmanager/logs"), &list); err != nil {
		t.Fatalf("GET /jobmanager/logs: %v", err)
	}
	var names []string
	for _, l := range list.Logs {
		names = append(names, l.Name)
	}
	for _, want := range []string{"jobmanager.log", "jobmanager.out", "jobmanager.err"} {
		if !slices.Contains(names, want) {
			t.Errorf("GET /jobmanager/logs lists %v, want %s among them", names, want)
		}
	}
	if b := get("/jobmanager/log"); !bytes.Contains(b, []byte("registered with the ResourceManager")) {
		t.Errorf("GET /jobmanager/log is not the ApplicationMaster's log:\n%s", lastLines(string(b), 10))
	}
}

// checkRESTNeedsItsToken: on YARN the application's REST endpoint refuses
// requests that change state from whoever lacks its token (generated by
// the client, in the staging directory only its owner reads): a cancel, a
// shutdown, a submission are refused with 401 and the job runs on; reading
// stays open.
//
// notProxy says the test does not run on the web proxy's host (on the mini
// cluster it does: everything is on loopback), so that the GET form of
// cancel YARN's proxy forwards is refused too.
func checkRESTNeedsItsToken(t *testing.T, ctx context.Context, rc *restclient.Client, job string, notProxy bool) {
	t.Helper()
	reqs := []struct{ method, path, body string }{
		{http.MethodPatch, "/jobs/" + job + "?mode=cancel", ""},
		{http.MethodDelete, "/cluster", ""},
		{http.MethodPost, "/jobs", "{}"},
	}
	if notProxy {
		reqs = append(reqs, struct{ method, path, body string }{http.MethodGet, "/jobs/" + job + "/yarn-cancel", ""})
	}
	for _, req := range reqs {
		r, err := http.NewRequestWithContext(ctx, req.method, rc.URL()+req.path, strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", req.method, req.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(b, []byte("security.rest.token-file")) {
			t.Errorf("%s %s without the REST token: %s %s, want 401 naming security.rest.token-file", req.method, req.path, resp.Status, b)
		}
	}
	if st, err := rc.Job(ctx, job); err != nil || string(st.State) != "RUNNING" {
		t.Errorf("after the refused requests the job is %v (%v), want RUNNING", st, err)
	}
}

// TestSessionLifecycle: sluice yarn-session starts a session cluster; a
// job runs on it with --target yarn-session -Dyarn.application.id
// (exactly once), list shows it, an unknown application id is a clear
// error, and --stop ends the session.
func TestSessionLifecycle(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	o, err := r.sluice(t, ctx, append([]string{"yarn-session", "-Dyarn.application.name=yarntest-session"}, small...)...)
	if err != nil {
		t.Fatalf("sluice yarn-session: %v", err)
	}
	m := reAppID.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("no application id printed")
	}
	appID := m[1]
	t.Logf("TIMING yarn-session: submit → session RUNNING %v", time.Since(began).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			r.sluice(t, context.Background(), "yarn-session", "--stop", "-Dyarn.application.id="+appID)
		}
	}()
	session := "-Dyarn.application.id=" + appID
	checkDashboardThroughProxy(t, r, ctx, appID)

	out := r.hdfs + "/out"
	const n, keys = 3000, 3
	args := append([]string{"run", "--target", "yarn-session", session, "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt"}, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000")
	runBegan := time.Now()
	if _, err := r.sluice(t, ctx, args...); err != nil {
		t.Fatalf("sluice run --target yarn-session: %v", err)
	}
	t.Logf("TIMING yarn-session: run → job FINISHED %v (TaskManager containers started for the job)", time.Since(runBegan).Round(time.Millisecond))
	checkExactlyOnce(t, r.fs, out, n, keys)
	// Its TaskManager containers stay registered while idle
	// (resourcemanager.taskmanager-timeout, 30 s).
	checkTaskManagerEndpointsThroughProxy(t, r, ctx, appID)

	o, err = r.sluice(t, ctx, "list", "--all", "--target", "yarn-session", session)
	if err != nil || !strings.Contains(o, "cluster test") || !strings.Contains(o, "FINISHED") {
		t.Errorf("list on the session: %v", err)
	}
	o, err = r.sluice(t, ctx, "list", "--target", "yarn-session", "-Dyarn.application.id=application_1_9999")
	if err == nil || !strings.Contains(o, "no application application_1_9999") {
		t.Errorf("list on an unknown application: %v, want an error naming it", err)
	}
	o, err = r.sluice(t, ctx, "list", "--target", "yarn-session")
	if err == nil || !strings.Contains(o, "yarn.application.id") {
		t.Errorf("list without an application id: %v, want an error naming yarn.application.id", err)
	}

	if _, err := r.sluice(t, ctx, "yarn-session", "--stop", session); err != nil {
		t.Fatalf("sluice yarn-session --stop: %v", err)
	}
	stopped = true
	r.stagingGone(t, appID)
	o, err = r.sluice(t, ctx, "list", "--target", "yarn-session", session)
	if err == nil || !strings.Contains(o, "not running") {
		t.Errorf("list on a stopped session: %v, want an error saying it is not running", err)
	}
}

// taskManagers are the pids of the TaskManager processes of an
// application (their working directory is a container's, under the
// application's directory) that run a worker.
func taskManagersWithWorkers(appID string) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range stats {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join(d, "exe"))
		if err != nil || filepath.Base(exe) != "taskmanager" {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(d, "cwd"))
		if err != nil || !strings.Contains(cwd, appID) {
			continue
		}
		if hasChildren(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// hasChildren reports whether a process has a child, from the parent pids
// in /proc/*/stat.
func hasChildren(pid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// TestTaskManagerContainerKilled: kill -9 of a TaskManager container's
// process mid-job; YARN reports the container completed, the driver asks
// for a replacement, and the job recovers from its latest checkpoint on
// HDFS with exactly-once output; no container of it is left, the
// replacement included.
func TestTaskManagerContainerKilled(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	const n, keys = 12000, 6
	args := append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-kill"}, small...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000")
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	testwait.Eventually(t, time.Minute, "a completed checkpoint on HDFS", func() bool { return hasCompletedCheckpoint(ctx, rc, job) })
	before := map[string]bool{}
	tms, err := rc.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tms {
		before[tm.ID] = true
	}
	var victims []int
	testwait.Eventually(t, 30*time.Second, "a TaskManager container running a worker", func() bool {
		victims = taskManagersWithWorkers(appID)
		return len(victims) > 0
	})
	t.Logf("killing TaskManager pid %d of %s", victims[0], appID)
	killTaskManager(t, ctx, rc, victims[0], before)
	succeeded(t, p, appID)
	checkExactlyOnce(t, r.fs, out, n, keys)
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, r.yarnClient(t), appID)
}
