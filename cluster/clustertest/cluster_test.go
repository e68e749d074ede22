package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
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
	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/testwait"
)

// Binaries built once for the package's tests.
var sluiceBin, jobBin, kafkaJobBin, sqlTableJobBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-clustertest-")
	if err != nil {
		panic(err)
	}
	sluiceBin, jobBin, kafkaJobBin = filepath.Join(dir, "sluice"), filepath.Join(dir, "clusterjob"), filepath.Join(dir, "kafkajob")
	sqlTableJobBin = filepath.Join(dir, "sqltablejob")
	for bin, pkg := range map[string]string{sluiceBin: "../../cmd/client", jobBin: "../testdata/clusterjob", kafkaJobBin: "../testdata/kafkajob",
		sqlTableJobBin: "../testdata/sqltablejob"} {
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	// RunMain stops the Kafka broker kafkabroker.Shared may start.
	code := kafkabroker.RunMain(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process of the cluster, logging to a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// exitCode waits up to d for the process to end (failing the test with
// late if it does not) and returns its exit status.
func (p *proc) exitCode(t testing.TB, d time.Duration, late string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatal(late)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

// cluster is a JobManager and TaskManagers.
type cluster struct {
	t        testing.TB
	dir      string
	rpcPort  int
	restPort int
	jmProps  []string
	props    []string // -D options of every process (JobManager and TaskManagers)
	// restScheme and restClient reach the REST endpoint (the test's own
	// requests; the CLI is configured by the test): http and
	// http.DefaultClient unless the cluster serves HTTPS.
	restScheme string
	restClient *http.Client
	mu         sync.Mutex
	ctx        context.Context // ends when the test ends: stops CLIs still running
	stopCLIs   context.CancelFunc
	jm         *proc
	tms        []*proc
}

// secretFile is the cluster's own secret for its internal RPCs (the first
// of its processes to start creates it).
func (c *cluster) secretFile() string { return filepath.Join(c.dir, "internal-secret") }

func (c *cluster) rest() string { return "127.0.0.1:" + strconv.Itoa(c.restPort) }

func (c *cluster) start(name string, args ...string) *proc {
	c.t.Helper()
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

func newCluster(t testing.TB, taskManagers int, jmProps ...string) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t), jmProps: jmProps}
	c.boot(taskManagers)
	return c
}

// get is GET path of the REST endpoint, refused unless 200 OK.
func (c *cluster) get(path string) ([]byte, error) {
	if c.restClient == nil {
		return httpGet(c.rest() + path)
	}
	resp, err := c.restClient.Get(c.restScheme + "://" + c.rest() + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// boot starts the JobManager and taskManagers TaskManagers of c and waits
// for them to register; the processes stop when the test ends.
func (c *cluster) boot(taskManagers int) {
	t := c.t
	c.startJobManager()
	for i := 0; i < taskManagers; i++ {
		c.startTaskManager()
	}
	t.Cleanup(func() {
		for _, tm := range c.tms {
			tm.stop()
		}
		c.jm.stop()
		// A race in any process of the cluster fails the test.
		filepath.Walk(c.dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".log") || strings.HasSuffix(p, ".err")) {
				b, _ := os.ReadFile(p)
				if bytes.Contains(b, []byte("WARNING: DATA RACE")) {
					t.Errorf("a data race in %s:\n%s", p, raceReport(string(b)))
				}
				// A logger scoped twice with the same identifier says it
				// twice ("restoring job" once had job= twice).
				for _, line := range strings.Split(string(b), "\n") {
					if k := repeatedLogKey(line); k != "" {
						t.Errorf("a line of %s has %s= twice: %s", p, k, line)
						break
					}
				}
			}
			return nil
		})
		if t.Failed() {
			for _, p := range append([]*proc{c.jm}, c.tms...) {
				b, _ := os.ReadFile(p.log)
				t.Logf("---- %s (%s), last lines:\n%s", p.name, p.log, tail(string(b), 40))
			}
		}
	})
	c.waitTaskManagers(taskManagers)
}

// repeatedLogKey returns a key that occurs twice among the key=value
// attributes of a slog text line, or "".
func repeatedLogKey(line string) string {
	seen := map[string]bool{}
	for _, m := range logKeyRE.FindAllStringSubmatch(line, -1) {
		if seen[m[1]] {
			return m[1]
		}
		seen[m[1]] = true
	}
	return ""
}

// logKeyRE matches the key of a slog text attribute (after a space, before
// '='), not inside a quoted value.
var logKeyRE = regexp.MustCompile(`(?:^| )([a-z_.]+)=(?:"(?:[^"\\]|\\.)*"|\S*)`)

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *cluster) startJobManager() {
	args := []string{"jobmanager", "-D", "jobmanager.rpc.address=127.0.0.1", "-D", "jobmanager.rpc.port=" + strconv.Itoa(c.rpcPort),
		"-D", "rest.address=127.0.0.1", "-D", "rest.bind-address=127.0.0.1", "-D", "rest.port=" + strconv.Itoa(c.restPort),
		"-D", "security.internal.secret-file=" + c.secretFile()}
	for _, p := range append(slices.Clone(c.props), c.jmProps...) {
		args = append(args, "-D", p)
	}
	c.jm = c.start("jobmanager", args...)
}

func (c *cluster) startTaskManager() *proc {
	n := len(c.tms)
	args := []string{"taskmanager", "-D", "jobmanager.rpc.address=127.0.0.1",
		"-D", "jobmanager.rpc.port=" + strconv.Itoa(c.rpcPort), "-D", "taskmanager.numberOfTaskSlots=1",
		"-D", "taskmanager.host=127.0.0.1", "-D", "process.taskmanager.working-dir=" + filepath.Join(c.dir, fmt.Sprintf("tm%d", n)),
		"-D", "security.internal.secret-file=" + c.secretFile()}
	for _, p := range c.props {
		args = append(args, "-D", p)
	}
	tm := c.start(fmt.Sprintf("taskmanager-%d", n), args...)
	c.tms = append(c.tms, tm)
	return tm
}

// sluice runs the CLI and returns its output. A CLI still running when
// the test ends (a failed test's attached run) is killed with its job
// program.
func (c *cluster) sluice(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.mu.Lock()
	if c.ctx == nil {
		c.ctx, c.stopCLIs = context.WithCancel(context.Background())
		c.t.Cleanup(c.stopCLIs)
	}
	c.mu.Unlock()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cluster) mustSluice(args ...string) string {
	c.t.Helper()
	out, err := c.sluice(args...)
	if err != nil {
		c.t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// waitTaskManagers waits until n TaskManagers are registered.
func (c *cluster) waitTaskManagers(n int) {
	c.t.Helper()
	re := regexp.MustCompile(`"taskmanagers":(\d+)`)
	testwait.Eventually(c.t, 30*time.Second, fmt.Sprintf("%d TaskManagers to register", n), func() bool {
		if b, err := c.get("/overview"); err == nil {
			if m := re.FindSubmatch(b); m != nil {
				if got, _ := strconv.Atoi(string(m[1])); got == n {
					return true
				}
			}
		}
		return false
	})
}

// live are the TaskManagers that run.
func (c *cluster) live() []*proc {
	var out []*proc
	for _, tm := range c.tms {
		select {
		case <-tm.done:
		default:
			out = append(out, tm)
		}
	}
	return out
}

// workerTaskManagers are the TaskManagers running a worker now.
func (c *cluster) workerTaskManagers() []*proc {
	var out []*proc
	for _, tm := range c.tms {
		select {
		case <-tm.done:
			continue
		default:
		}
		if hasChildren(tm.cmd.Process.Pid) {
			out = append(out, tm)
		}
	}
	return out
}

// hasChildren reports whether a process has a child (a TaskManager's
// worker).
func hasChildren(pid int) bool { return len(childrenOf(pid)) > 0 }

// childrenOf returns the pids of a process's children (a TaskManager's
// workers) that have not exited, from the parent pids in /proc/*/stat.
func childrenOf(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; it ends at the
		// last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			out = append(out, child)
		}
	}
	return out
}

// checkExactlyOnce checks the committed output of clusterjob: each key's
// counts 1..n/keys exactly once.
func checkExactlyOnce(t *testing.T, dir string, n, keys int) {
	t.Helper()
	seen := map[string]int{}
	total := 0
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		fh, err := os.Open(f)
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

// readSorted reads clusterjob's committed output, sorted. A line for which
// bySubtask holds is prefixed with "<subtask>> ", the subtask that wrote it
// (from its part file's name, part-<uuid>-<subtask>-<counter>).
func readSorted(t *testing.T, dir string, bySubtask func(line string) bool) []string {
	t.Helper()
	var out []string
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Split(filepath.Base(f), "-")
		if len(name) < 3 {
			t.Fatalf("part file %s is not named part-<uuid>-<subtask>-<counter>", f)
		}
		subtask := name[len(name)-2]
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if bySubtask(l) {
				l = subtask + "> " + l
			}
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// subtasksOf are the subtasks that wrote clusterjob's committed output.
func subtasksOf(dir string) map[string]bool {
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		if name := strings.Split(filepath.Base(f), "-"); len(name) >= 3 {
			out[name[len(name)-2]] = true
		}
	}
	return out
}

var checkpointed = []string{"-D", "execution.checkpointing.interval=300ms", "-D", "restart-strategy.type=fixed-delay",
	"-D", "restart-strategy.fixed-delay.attempts=10", "-D", "restart-strategy.fixed-delay.delay=100ms"}

// TestJobSpanningTaskManagersMatchesLocalMode runs clusterjob's exchange
// shapes at parallelism 3 on three TaskManagers of one slot each (so every
// exchange but a forward one crosses processes) and locally, and compares
// the committed output. Where the subtask that receives a record is fixed
// by the exchange (by key group; every subtask for a broadcast), the
// output is compared per subtask; where it depends on which source subtask
// took which split first (rebalance, a union's forward and rebalanced
// inputs), as a whole.
func TestJobSpanningTaskManagersMatchesLocalMode(t *testing.T) {
	const n, p = 3000, 3
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	c := newCluster(t, p)
	for _, tc := range []struct {
		shape     string
		lines     int
		bySubtask func(line string) bool
	}{
		{"hash", n, all},
		{"rebalance", n, none},
		{"broadcast", p * n, all},
		// Tag 2 is the broadcast input.
		{"union", 2*n + p*n, func(l string) bool { return strings.HasPrefix(l, "2 ") }},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			args := []string{jobBin, "-shape", tc.shape, "-n", strconv.Itoa(n), "-keys", "7"}
			out := filepath.Join(c.dir, tc.shape+"-cluster-out")
			res := c.mustSluice(append([]string{"run", "-m", c.rest(), "-p", strconv.Itoa(p)}, append(args, "-out", out)...)...)
			if !strings.Contains(res, "done: 0 restarts") {
				t.Fatalf("unexpected output of sluice run:\n%s", res)
			}
			localOut := filepath.Join(c.dir, tc.shape+"-local-out")
			c.mustSluice(append([]string{"run", "--target", "local", "-p", strconv.Itoa(p)}, append(args, "-out", localOut)...)...)
			got, want := readSorted(t, out, tc.bySubtask), readSorted(t, localOut, tc.bySubtask)
			if len(want) != tc.lines {
				t.Fatalf("local mode wrote %d lines, want %d", len(want), tc.lines)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("the cluster wrote %d lines, local mode %d; they differ", len(got), len(want))
			}
			if tc.shape != "hash" {
				if s := subtasksOf(out); len(s) != p {
					t.Errorf("the cluster's output came from subtasks %v, want all %d", s, p)
				}
			}
		})
	}
	// The job's subtasks ran in workers on three TaskManagers.
	started := 0
	for _, tm := range c.tms {
		b, _ := os.ReadFile(tm.log)
		if strings.Contains(string(b), "worker started") {
			started++
		}
	}
	if started != p {
		t.Errorf("workers ran on %d TaskManagers, want %d", started, p)
	}
	list := c.mustSluice("list", "-a", "-m", c.rest())
	if got := strings.Count(list, "FINISHED"); got < 4 {
		t.Errorf("sluice list -a shows %d finished jobs, want 4:\n%s", got, list)
	}
}

// recoveryJob is clusterjob (n records over keys at 3000/s, checkpointing
// to the cluster's ckpt directory) run by sluice run -m in the background,
// for the tests that make a cluster fail under it.
type recoveryJob struct {
	out     string
	n, keys int
	done    chan jobResult
}

type jobResult struct {
	out string
	err error
}

func (c *cluster) startRecoveryJob(n, keys int, jobArgs ...string) *recoveryJob {
	j := &recoveryJob{out: filepath.Join(c.dir, "out"), n: n, keys: keys, done: make(chan jobResult, 1)}
	args := append([]string{"run", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	args = append(args, jobBin, "-out", j.out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "3000")
	args = append(args, jobArgs...)
	go func() {
		o, err := c.sluice(args...)
		j.done <- jobResult{o, err}
	}()
	return j
}

// waitCheckpoint waits for the job's first completed checkpoint.
func (c *cluster) waitCheckpoint(t *testing.T) {
	t.Helper()
	testwait.Eventually(t, 30*time.Second, "a completed checkpoint", func() bool {
		m, _ := filepath.Glob(filepath.Join(c.dir, "ckpt", "*", "chk-*", "_metadata"))
		return len(m) > 0
	})
}

// end waits for sluice run to end and checks that it succeeded, after at
// least one restart when restarted is set, with exactly-once output; it
// returns sluice run's output.
func (j *recoveryJob) end(t *testing.T, restarted bool) string {
	t.Helper()
	r := <-j.done
	if r.err != nil {
		t.Fatalf("sluice run: %v\n%s", r.err, r.out)
	}
	if restarted && !regexp.MustCompile(`done: [1-9]\d* restarts`).MatchString(r.out) {
		t.Errorf("the job did not restart:\n%s", r.out)
	}
	checkExactlyOnce(t, j.out, j.n, j.keys)
	return r.out
}

func TestKillTaskManagerRecoversExactlyOnce(t *testing.T) {
	c := newCluster(t, 3)
	j := c.startRecoveryJob(12000, 6)
	// Wait for the first checkpoints, then kill a TaskManager running a
	// worker.
	c.waitCheckpoint(t)
	victims := c.workerTaskManagers()
	if len(victims) == 0 {
		t.Fatal("no TaskManager runs a worker")
	}
	victims[0].kill()
	j.end(t, true)
}

// TestKillTaskManagerWhileTheAttemptDeploys kills a TaskManager whose
// worker has started but not yet connected to its JobMaster (clusterjob's
// workers wait 3 s first): the deployment fails with the TaskManager's
// loss, which is a failover as a task's failure is. The job restarts
// through its restart strategy on the TaskManagers left, finishes exactly
// once, and its exception history names the lost TaskManager.
func TestKillTaskManagerWhileTheAttemptDeploys(t *testing.T) {
	c := newCluster(t, 3)
	j := c.startRecoveryJob(6000, 6, "-worker-delay", "3s")
	var victims []*proc
	testwait.Eventually(t, 60*time.Second, "a TaskManager to start a worker", func() bool {
		victims = c.workerTaskManagers()
		return len(victims) > 0
	})
	before := taskManagerIDs(t, c)
	if job := c.onlyJob(t); job.State != "CREATED" {
		t.Fatalf("the job is %s while its workers start; want CREATED (deploying)", job.State)
	}
	victims[0].kill()
	var killed string
	testwait.Eventually(t, 30*time.Second, "the killed TaskManager to be lost", func() bool {
		after := taskManagerIDs(t, c)
		for id := range before {
			if !after[id] {
				killed = id
			}
		}
		return killed != ""
	})
	j.end(t, true)
	b, err := httpGet(c.rest() + "/jobs/" + c.onlyJob(t).ID + "/exceptions")
	if err != nil {
		t.Fatal(err)
	}
	var history struct {
		ExceptionHistory struct {
			Entries []struct {
				ExceptionName string `json:"exceptionName"`
				TaskManagerID string `json:"taskManagerId"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	if err := json.Unmarshal(b, &history); err != nil {
		t.Fatalf("GET /jobs/:jobid/exceptions: %v: %s", err, b)
	}
	found := false
	for _, e := range history.ExceptionHistory.Entries {
		found = found || e.ExceptionName == "*jobmanager.TaskManagerLostError" && e.TaskManagerID == killed
	}
	if !found {
		t.Errorf("the exception history does not name the loss of TaskManager %s: %s", killed, b)
	}
	if b, _ := os.ReadFile(c.jm.log); !strings.Contains(string(b), "deploying the job failed; restarting") {
		t.Errorf("the JobManager's log does not say the failed deployment restarted the job")
	}
}

// jobOverview is a job as GET /jobs/overview lists it.
type jobOverview struct {
	ID    string `json:"jid"`
	State string `json:"state"`
}

// onlyJob is the cluster's one job.
func (c *cluster) onlyJob(t *testing.T) jobOverview {
	t.Helper()
	var jobs struct {
		Jobs []jobOverview `json:"jobs"`
	}
	var b []byte
	testwait.Eventually(t, 30*time.Second, "the job in GET /jobs/overview", func() bool {
		var err error
		b, err = c.get("/jobs/overview")
		return err == nil && json.Unmarshal(b, &jobs) == nil && len(jobs.Jobs) > 0
	})
	if len(jobs.Jobs) != 1 {
		t.Fatalf("GET /jobs/overview: want one job: %s", b)
	}
	return jobs.Jobs[0]
}

// TestFrozenTaskManagerRecoversExactlyOnce freezes (SIGSTOP) a TaskManager
// and its worker, or the worker alone, mid-job: their connections stay
// open, so only heartbeats can tell. Within heartbeat.timeout the
// ResourceManager loses the TaskManager or the JobMaster the worker; the
// job restarts from its latest checkpoint. The frozen processes are then
// resumed while the new attempt runs: the old worker is fenced (its
// session is gone, its TaskManager stops it, it stops itself) and the
// output stays exactly once.
func TestFrozenTaskManagerRecoversExactlyOnce(t *testing.T) {
	const timeout = 3 * time.Second
	for _, tc := range []struct {
		name string
		// taskManager: the TaskManager freezes with its worker.
		taskManager bool
	}{
		{"the TaskManager and its worker", true},
		{"a worker alone", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3, "heartbeat.interval=500ms", "heartbeat.timeout=3s")
			j := c.startRecoveryJob(24000, 6)
			c.waitCheckpoint(t)
			victims := c.workerTaskManagers()
			if len(victims) == 0 {
				t.Fatal("no TaskManager runs a worker")
			}
			tm := victims[0]
			workers := childrenOf(tm.cmd.Process.Pid)
			if len(workers) == 0 {
				t.Fatal("the TaskManager's worker is gone")
			}
			frozen := slices.Clone(workers)
			if tc.taskManager {
				frozen = append(frozen, tm.cmd.Process.Pid)
			}
			t.Cleanup(func() {
				for _, pid := range frozen {
					syscall.Kill(pid, syscall.SIGCONT)
				}
			})
			for _, pid := range frozen {
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatalf("SIGSTOP %d: %v", pid, err)
				}
			}
			frozenAt := time.Now()
			testwait.Eventually(t, 30*time.Second, "the job to restart", func() bool { return c.restarts() > 0 })
			noticed := time.Since(frozenAt)
			t.Logf("the job restarted %v after the freeze (heartbeat.timeout %v)", noticed.Round(time.Millisecond), timeout)
			// Noticed within heartbeat.timeout, plus the failover itself, on a
			// loaded machine.
			if noticed > timeout+5*time.Second {
				t.Errorf("the job restarted %v after the freeze; want about heartbeat.timeout (%v)", noticed, timeout)
			}
			// The frozen processes come back while the new attempt runs.
			for _, pid := range frozen {
				syscall.Kill(pid, syscall.SIGCONT)
			}
			j.end(t, true)
			if b, _ := os.ReadFile(c.jm.log); !strings.Contains(string(b), "heartbeat timeout") {
				t.Errorf("the JobManager's log does not name the heartbeat timeout as the cause of the restart")
			}
			// The old worker is gone: it ran tasks of an attempt that failed.
			// Its TaskManager stops it, asked by the JobMaster or (frozen too)
			// for its own lost session, unless it found its silence and
			// stopped first.
			testwait.Eventually(t, 30*time.Second, "the old worker to exit", func() bool {
				for _, w := range childrenOf(tm.cmd.Process.Pid) {
					if slices.Contains(workers, w) {
						return false
					}
				}
				return true
			})
		})
	}
}

func TestJobManagerRestartRecoversTheJob(t *testing.T) {
	c := newCluster(t, 2, "high-availability.type=FILESYSTEM", "high-availability.storageDir=file://"+filepath.Join(t.TempDir(), "ha"))
	j := c.startRecoveryJob(12000, 4)
	c.waitCheckpoint(t)
	c.jm.kill()
	c.startJobManager()
	j.end(t, false)
	b, _ := os.ReadFile(c.jm.log)
	if !strings.Contains(string(b), "recovering job") {
		t.Errorf("the new JobManager did not recover the job")
	}
}

func TestInfoPrintsThePlan(t *testing.T) {
	out, err := exec.Command(sluiceBin, "info", "-p", "3", jobBin, "-out", t.TempDir()).Output()
	if err != nil {
		t.Fatalf("sluice info: %v", err)
	}
	for _, want := range []string{`"DataGen Source"`, `"parallelism": 3`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the plan lacks %s:\n%s", want, out)
		}
	}
}

// TestFullCheckpoint takes a full checkpoint of a running job with
// incremental pebble checkpoints (sluice checkpoint --full): its kind
// crosses the control plane to the workers, whose uploaders upload every
// SST again, so the checkpoint references none of the shared files of the
// checkpoints before it.
func TestFullCheckpoint(t *testing.T) {
	c := newCluster(t, 2)
	ckpt := filepath.Join(c.dir, "ckpt")
	args := append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + ckpt,
		"-D", "state.backend.type=pebble", "-D", "execution.checkpointing.incremental=true",
		"-D", "execution.checkpointing.num-retained=100"}, checkpointed...)
	args = append(args, jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "1000000", "-keys", "50", "-rate", "2000")
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(c.mustSluice(args...))
	if m == nil {
		t.Fatal("no job id in the output of sluice run -d")
	}
	job := m[1]
	defer c.sluice("cancel", "-m", c.rest(), job)
	jobDir := filepath.Join(ckpt, job)
	shared := func(id int) []string {
		md, err := storage.ReadMetadata(fs.Local{}, filepath.Join(jobDir, fmt.Sprintf("chk-%d", id), storage.MetadataFileName))
		if err != nil {
			return nil
		}
		return md.Shared
	}
	// Incremental checkpoints with shared SSTs first.
	testwait.Eventually(t, 60*time.Second, "an incremental checkpoint referencing shared files", func() bool {
		ms, _ := filepath.Glob(filepath.Join(jobDir, "chk-*", storage.MetadataFileName))
		for _, p := range ms {
			id, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "chk-"))
			if len(shared(id)) > 0 {
				return true
			}
		}
		return false
	})
	out := c.mustSluice("checkpoint", "--full", "-m", c.rest(), job)
	m = regexp.MustCompile(`Checkpoint (\d+) for job`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sluice checkpoint --full did not name the checkpoint:\n%s", out)
	}
	full, _ := strconv.Atoi(m[1])
	hs := shared(full)
	if len(hs) == 0 {
		t.Fatalf("full checkpoint %d references no shared files", full)
	}
	for _, h := range hs {
		if !strings.HasPrefix(h, fmt.Sprintf("../shared/full-%d-", full)) {
			t.Errorf("full checkpoint %d references %s, not a file it uploaded", full, h)
		}
	}
	earlier := 0
	for id := 1; id < full; id++ {
		for _, h := range shared(id) {
			earlier++
			if slices.Contains(hs, h) {
				t.Errorf("full checkpoint %d references %s of checkpoint %d", full, h, id)
			}
		}
	}
	if earlier == 0 {
		t.Errorf("no checkpoint before full checkpoint %d referenced shared files", full)
	}
}

func TestCLILifecycle(t *testing.T) {
	c := newCluster(t, 2, "execution.checkpointing.savepoint-dir=file://"+filepath.Join(t.TempDir(), "savepoints"))
	out := filepath.Join(c.dir, "out")
	const n, keys = 40000, 4
	common := append([]string{"-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)
	run := func(extra ...string) string {
		args := append(append([]string{"run", "-d"}, common...), extra...)
		args = append(args, jobBin, "-out", out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000")
		o := c.mustSluice(args...)
		m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
		if m == nil {
			t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
		}
		return m[1]
	}
	// A savepoint that is not there is refused at submission, not
	// reported as a submitted job that then fails.
	bad := append(append([]string{"run", "-d"}, common...), "-s", "/nonexistent/savepoint-1", jobBin, "-out", out, "-n", "1")
	o, err := c.sluice(bad...)
	if err == nil || !strings.Contains(o, "/nonexistent/savepoint-1") || strings.Contains(o, "has been submitted") {
		t.Errorf("sluice run -d -s /nonexistent/savepoint-1: err %v, output:\n%s", err, o)
	}
	job := run()
	testwait.Eventually(t, 30*time.Second, "the job to run", func() bool {
		o, _ := c.sluice("list", "-r", "-m", c.rest())
		return strings.Contains(o, job) && strings.Contains(o, "RUNNING")
	})
	// The JobManager exports the job's metrics for Prometheus: per subtask
	// from the workers' reports, and its checkpoints.
	testwait.Eventually(t, 30*time.Second, "metrics of the running job", func() bool {
		b, err := httpGet(c.rest() + "/metrics")
		if err != nil {
			return false
		}
		sum := func(metric string) float64 {
			total := 0.0
			for _, m := range regexp.MustCompile(metric+`\{[^}]*job_id="`+job+`"[^}]*\} ([0-9.e+]+)`).FindAllSubmatch(b, -1) {
				v, _ := strconv.ParseFloat(string(m[1]), 64)
				total += v
			}
			return total
		}
		r, z := sum("flink_taskmanager_job_task_numRecordsOut"), sum("flink_jobmanager_job_lastCheckpointSize")
		// Without Kerberos no process has a login to export.
		if bytes.Contains(b, []byte("sluice_kerberos_")) || bytes.Contains(b, []byte("sluice_delegation_token_")) {
			t.Errorf("a cluster without Kerberos exports login or token metrics:\n%s", b)
		}
		return r > 0 && z > 0
	})
	ck := c.mustSluice("checkpoint", "-m", c.rest(), job)
	if !regexp.MustCompile(`(?i)checkpoint\D*\d+`).MatchString(ck) {
		t.Errorf("sluice checkpoint did not name the checkpoint:\n%s", ck)
	}
	// The job's arguments (its output path) reached the workers without
	// being on any command line: once sluice run -d has returned, no
	// process's command line holds them.
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(out)) {
			t.Errorf("%s holds the job's arguments: %q", f, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	sp := c.mustSluice("savepoint", "-m", c.rest(), job)
	if !strings.Contains(sp, "savepoint-") {
		t.Fatalf("sluice savepoint did not name a savepoint:\n%s", sp)
	}
	stop := c.mustSluice("stop", "-m", c.rest(), "--savepointPath", filepath.Join(c.dir, "stopped"), job)
	m := regexp.MustCompile(`(/\S*savepoint-[0-9a-f-]+)`).FindStringSubmatch(stop)
	if m == nil {
		t.Fatalf("sluice stop did not name its savepoint:\n%s", stop)
	}
	testwait.Eventually(t, 30*time.Second, "the stopped job to end", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return regexp.MustCompile(job + `.*FINISHED|FINISHED.*` + job).MatchString(o)
	})
	// Resume from the stop's savepoint and let it finish: the output is
	// exactly once over both runs.
	job2 := run("-s", m[1])
	testwait.Eventually(t, 60*time.Second, "the resumed job to finish", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return regexp.MustCompile(job2 + `.*FINISHED|FINISHED.*` + job2).MatchString(o)
	})
	checkExactlyOnce(t, out, n, keys)

	// Cancel.
	job3 := run()
	testwait.Eventually(t, 30*time.Second, "the third job to run", func() bool {
		o, _ := c.sluice("list", "-r", "-m", c.rest())
		return strings.Contains(o, job3)
	})
	c.mustSluice("cancel", "-m", c.rest(), job3)
	testwait.Eventually(t, 30*time.Second, "the job to be cancelled", func() bool {
		o, _ := c.sluice("list", "-a", "-m", c.rest())
		return regexp.MustCompile(job3 + `.*CANCELED|CANCELED.*` + job3).MatchString(o)
	})
	if o, err := c.sluice("cancel", "-m", c.rest(), job3); err == nil {
		t.Errorf("cancelling a cancelled job succeeded:\n%s", o)
	}
}

// restarts is the job restarts the JobManager exports (the cluster runs one
// job).
func (c *cluster) restarts() float64 {
	b, err := httpGet(c.rest() + "/metrics")
	if err != nil {
		return 0
	}
	total := 0.0
	for _, m := range regexp.MustCompile(`flink_jobmanager_job_numRestarts\{[^}]*\} ([0-9.e+]+)`).FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		total += v
	}
	return total
}

// rssKB is a process's resident set size.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// workerPids are the pids of the TaskManagers' workers.
func (c *cluster) workerPids() []int {
	tms := map[string]bool{}
	for _, tm := range c.tms {
		tms[strconv.Itoa(tm.cmd.Process.Pid)] = true
	}
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && tms[f[1]] {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			out = append(out, pid)
		}
	}
	return out
}

func TestBackpressureAcrossTheNetworkBoundsMemory(t *testing.T) {
	c := newCluster(t, 2)
	// An unthrottled source (millions of records a second) feeding, over
	// the network, a sink side that takes 1 ms a record: without
	// credit-based flow control the senders would queue hundreds of MB a
	// second.
	o := c.mustSluice("run", "-d", "-m", c.rest(), "-p", "2", jobBin, "-out", filepath.Join(c.dir, "out"),
		"-n", "100000000", "-keys", "1000", "-slow", "1ms")
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	testwait.Eventually(t, 30*time.Second, "two workers", func() bool { return len(c.workerPids()) == 2 })
	// Let the job run into backpressure (its subtasks report seconds spent
	// waiting for output buffers), then watch memory for 3 s.
	testwait.Eventually(t, 30*time.Second, "the job to run into backpressure (2 s back-pressured reported)", func() bool {
		ms, _ := jobMetric(c, "flink_taskmanager_job_task_accumulatedBackpressuredTime", m[1])
		return ms >= 2000
	})
	var peak int64
	// Sampling RSS every 100 ms over 3 s is the measurement itself.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, pid := range c.workerPids() {
			peak = max(peak, rssKB(pid))
		}
	}
	c.mustSluice("cancel", "-m", c.rest(), m[1])
	limit := int64(150 << 10)
	if raceEnabled {
		limit *= 4 // the race detector's shadow memory
	}
	t.Logf("peak worker RSS under backpressure: %d MB", peak>>10)
	if peak == 0 || peak > limit {
		t.Fatalf("peak worker RSS %d MB, want at most %d MB", peak>>10, limit>>10)
	}
	// The job was backpressured: the source emitted a small part of what it
	// could have (it makes millions a second unthrottled).
	b, err := httpGet(c.rest() + "/jobs/" + m[1])
	if err != nil {
		t.Fatal(err)
	}
	var details struct {
		Vertices []struct {
			Name    string
			Metrics struct {
				WriteRecords int64 `json:"write-records"`
			}
		}
	}
	if err := json.Unmarshal(b, &details); err != nil || len(details.Vertices) == 0 {
		t.Fatalf("job details %s: %v", b, err)
	}
	src := details.Vertices[0]
	t.Logf("records the source %q emitted in about 5 s: %d", src.Name, src.Metrics.WriteRecords)
	if src.Metrics.WriteRecords <= 0 || src.Metrics.WriteRecords > 1_000_000 {
		t.Fatalf("the source emitted %d records; backpressure should hold it well below 1 000 000", src.Metrics.WriteRecords)
	}
}

// TestApplicationModeRunsTheProgramOnTheJobManager: sluice jobmanager
// BINARY ARGS runs the program, which submits its job to this JobManager;
// a secret among the arguments (which the program ignores: the flag
// package stops at it) never reaches the JobManager's log.
func TestApplicationModeRunsTheProgramOnTheJobManager(t *testing.T) {
	const secretArg = "kafka.sasl.password=hunter2-Zq8x"
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t)}
	out := filepath.Join(c.dir, "out")
	c.jm = c.start("jobmanager", "jobmanager", "-D", "jobmanager.rpc.address=127.0.0.1", "-D", "jobmanager.rpc.port="+strconv.Itoa(c.rpcPort),
		"-D", "rest.address=127.0.0.1", "-D", "rest.bind-address=127.0.0.1", "-D", "rest.port="+strconv.Itoa(c.restPort),
		"-D", "parallelism.default=2", "-D", "security.internal.secret-file="+c.secretFile(),
		jobBin, "-out", out, "-n", "3000", "-keys", "3", secretArg)
	c.startTaskManager()
	c.startTaskManager()
	t.Cleanup(func() {
		for _, tm := range c.tms {
			tm.stop()
		}
		c.jm.stop()
		if t.Failed() {
			b, _ := os.ReadFile(c.jm.log)
			t.Logf("---- jobmanager:\n%s", tail(string(b), 40))
		}
	})
	if code := c.jm.exitCode(t, 90*time.Second, "the application-mode JobManager did not end with its program"); code != 0 {
		t.Fatalf("the JobManager exited with status %d", code)
	}
	b, _ := os.ReadFile(c.jm.log)
	if !strings.Contains(string(b), "done: 0 restarts") {
		t.Errorf("the program's output is not in the JobManager's log")
	}
	// The program's arguments are counted in the log, not written: they
	// can hold secrets.
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("the JobManager's log holds the program's argument %q:\n%s", secretArg, tail(string(b), 40))
	}
	if !strings.Contains(string(b), "binary="+jobBin+" args=7") {
		t.Errorf("the JobManager's log does not name the program and count its 7 arguments:\n%s", tail(string(b), 40))
	}
	checkExactlyOnce(t, out, 3000, 3)
}

// TestWorkerBuildingAnotherGraphIsRejected: a worker whose program builds
// another graph fails the deployment unrecoverably, so the job fails at
// once, though its restart strategy would restart it.
func TestWorkerBuildingAnotherGraphIsRejected(t *testing.T) {
	c := newCluster(t, 1)
	o, err := c.sluice("run", "-m", c.rest(), "-p", "1", "-D", "restart-strategy.type=fixed-delay",
		"-D", "restart-strategy.fixed-delay.attempts=10", "-D", "restart-strategy.fixed-delay.delay=100ms",
		jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "100", "-vary")
	if err == nil {
		t.Fatalf("a job whose workers build another graph ran:\n%s", o)
	}
	if r := c.restarts(); r != 0 {
		t.Errorf("the job restarted %v times; want it failed at once", r)
	}
	for _, want := range []string{"different job graph than the one submitted", "fingerprint", "must build the same graph on every run"} {
		if !strings.Contains(o, want) {
			t.Errorf("the error does not say %q:\n%s", want, o)
		}
	}
}

// TestWorkerCrashFailsTheDeploymentAtOnce: a job binary that panics in
// worker mode, before its worker connects, fails the deployment as soon as
// the TaskManager reports the worker's exit (not after the worker start
// timeout), and the failure carries the panic from the worker's stderr.
func TestWorkerCrashFailsTheDeploymentAtOnce(t *testing.T) {
	c := newCluster(t, 1)
	start := time.Now()
	o, err := c.sluice("run", "-m", c.rest(), "-p", "1", "-D", "restart-strategy.type=none",
		jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "100", "-crash-worker")
	if err == nil {
		t.Fatalf("a job whose workers crash ran:\n%s", o)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the job failed after %s; want it failed as soon as the worker exited", d)
	}
	for _, want := range []string{"exited", "exit status 2", "clusterjob: deliberate crash in worker mode"} {
		if !strings.Contains(o, want) {
			t.Errorf("the error does not say %q:\n%s", want, o)
		}
	}
}

// TestShutDownOverREST: DELETE /cluster on a standalone JobManager (as
// Flink's REST API offers) cancels its running job and ends the process
// with status 0; the TaskManager stays up, waiting for a JobManager.
func TestShutDownOverREST(t *testing.T) {
	c := newCluster(t, 1)
	o := c.mustSluice(append([]string{"run", "-d", "-m", c.rest(), "-p", "1"}, append(checkpointed, "-D",
		"execution.checkpointing.dir=file://"+filepath.Join(c.dir, "ckpt"), jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "100000", "-rate", "1000")...)...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	testwait.Eventually(t, 30*time.Second, "the job to run", func() bool {
		o, _ := c.sluice("list", "-r", "-m", c.rest())
		return strings.Contains(o, m[1]) && strings.Contains(o, "RUNNING")
	})
	req, err := http.NewRequest(http.MethodDelete, "http://"+c.rest()+"/cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /cluster: %s", resp.Status)
	}
	if code := c.jm.exitCode(t, 45*time.Second, "the JobManager still runs 45 s after DELETE /cluster"); code != 0 {
		t.Errorf("the JobManager exited with status %d, want 0", code)
	}
	b, _ := os.ReadFile(c.jm.log)
	if !strings.Contains(string(b), "job ended at shutdown") || !strings.Contains(string(b), "status=CANCELED") {
		t.Errorf("the JobManager's log does not show the job cancelled at the shutdown:\n%s", tail(string(b), 20))
	}
	select {
	case <-c.tms[0].done:
		t.Error("the TaskManager ended with the JobManager")
	default:
	}
}

// raceReport is the first race report of a process's log, whole (both
// goroutines' stacks), or its last lines when there is none.
func raceReport(log string) string {
	i := strings.Index(log, "WARNING: DATA RACE")
	if i < 0 {
		return tail(log, 60)
	}
	r := log[i:]
	if j := strings.Index(r, "=================="); j >= 0 {
		r = r[:j]
	}
	return r
}

// TestSavepointWithoutDirectoryNamesTheKey: on a cluster without
// execution.checkpointing.savepoint-dir, sluice savepoint JOB_ID without a
// directory fails naming the key to set, for a checkpointed job and for
// one without checkpointing, and says nothing of a local executor.
func TestSavepointWithoutDirectoryNamesTheKey(t *testing.T) {
	c := newCluster(t, 2)
	for _, tc := range []struct {
		name string
		conf []string
	}{
		{"checkpointed", append([]string{"-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")}, checkpointed...)},
		{"not checkpointed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "-d", "-m", c.rest(), "-p", "1"}, tc.conf...),
				jobBin, "-out", filepath.Join(c.dir, strings.ReplaceAll(tc.name, " ", "-")), "-n", "1000000", "-keys", "2", "-rate", "100")
			o := c.mustSluice(args...)
			m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
			if m == nil {
				t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
			}
			job := m[1]
			defer c.sluice("cancel", "-m", c.rest(), job)
			testwait.Eventually(t, 30*time.Second, "the job to run", func() bool {
				o, _ := c.sluice("list", "-r", "-m", c.rest())
				return strings.Contains(o, job) && strings.Contains(o, "RUNNING")
			})
			o, err := c.sluice("savepoint", "-m", c.rest(), job)
			if err == nil || !strings.Contains(o, "execution.checkpointing.savepoint-dir") || strings.Contains(o, "local:") {
				t.Errorf("sluice savepoint %s without a directory: err %v, output:\n%s", job, err, o)
			}
		})
	}
}

func TestRepeatedLogKey(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`time=t level=INFO msg="restoring job" process=jobmanager job=a job=a from=/x`, "job"},
		{`time=t level=INFO msg="restoring job" process=jobmanager job=a from=/x`, ""},
		{`time=t level=WARN msg="x" err="job=a failed; job=a again" job=a`, ""},
		{`time=t level=WARN msg="x" err="say \"job=a\"" job=a`, ""},
		{`Job has been submitted with JobID 0123 job=a`, ""},
	} {
		if got := repeatedLogKey(tc.line); got != tc.want {
			t.Errorf("repeatedLogKey(%s) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
