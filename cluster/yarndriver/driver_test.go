package yarndriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/yarn"
)

// TestShellCommand runs the command the way a NodeManager's launch script
// does (exec /bin/bash -c "<command>", <LOG_DIR> replaced first) and checks
// that the program receives every argument unchanged.
func TestShellCommand(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to check the container command line:", err)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\necho to-stderr >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"plain", "-Djobmanager.rpc.address=host.example.com", "two words", `quote"double`, "quote'single",
		"dollar $HOME and ${PATH}", "back`tick`", `back\slash`, "semi;colon && true", "", "new\nline", "glob *", "<angle>",
	}
	cmd := ShellCommand(append([]string{prog}, args...), LogDirExpansion+"/p.out", LogDirExpansion+"/p.err")
	script := "exec /bin/bash -c \"" + strings.ReplaceAll(cmd, LogDirExpansion, logDir) + "\"\n"
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\nscript: %s", err, out, script)
	}
	got, err := os.ReadFile(filepath.Join(logDir, "p.out"))
	if err != nil {
		t.Fatal(err)
	}
	gotArgs := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00")
	if !slices.Equal(gotArgs, args) {
		t.Errorf("program got\n %q\nwant\n %q\ncommand: %s", gotArgs, args, cmd)
	}
	if e, _ := os.ReadFile(filepath.Join(logDir, "p.err")); string(e) != "to-stderr\n" {
		t.Errorf("stderr file holds %q", e)
	}
}

func TestTaskManagerCommand(t *testing.T) {
	l := TaskManagerLaunch{
		Args:              []string{"run"},
		DynamicProperties: map[string]string{"jobmanager.rpc.port": "6123", "jobmanager.rpc.address": "am-host"},
	}
	got := l.command("container_1_0001_01_000002")
	want := "./taskmanager run -Djobmanager.rpc.address=am-host -Djobmanager.rpc.port=6123 " +
		"-Dtaskmanager.resource-id=container_1_0001_01_000002 1>'<LOG_DIR>/taskmanager.out' 2>'<LOG_DIR>/taskmanager.err'"
	if got != want {
		t.Errorf("command\n got  %s\n want %s", got, want)
	}
}

func TestTaskManagerTokensDropAMRMToken(t *testing.T) {
	var c hadoop.Credentials
	c.AddToken("amrm", &hadoop.Token{Identifier: []byte("a"), Password: []byte("p"), Kind: hadoop.KindAMRMToken, Service: "rm:8030"})
	c.AddToken("hdfs", &hadoop.Token{Identifier: []byte("h"), Password: []byte("q"), Kind: hadoop.KindHDFSDelegation, Service: "nn:8020"})
	c.AddSecret("s", []byte("secret"))
	b, err := taskManagerTokens(&c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hadoop.ParseCredentials(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumTokens() != 1 {
		t.Fatalf("tokens %v, want only the HDFS one", got.TokenAliases())
	}
	if tok, ok := got.Token("hdfs"); !ok || tok.Kind != hadoop.KindHDFSDelegation {
		t.Errorf("hdfs token %v", tok)
	}
	if s, ok := got.Secret("s"); !ok || string(s) != "secret" {
		t.Errorf("secret %q", s)
	}
	if _, ok := c.Token("amrm"); !ok {
		t.Error("the AM's own credentials lost their AMRMToken")
	}
	var only hadoop.Credentials
	only.AddToken("amrm", &hadoop.Token{Identifier: []byte("a"), Kind: hadoop.KindAMRMToken})
	if b, err := taskManagerTokens(&only); err != nil || b != nil {
		t.Errorf("only an AMRMToken: %q, %v; want no document", b, err)
	}
}

func TestDescribeCompletion(t *testing.T) {
	id := yarn.ContainerID{Attempt: yarn.ApplicationAttemptID{Application: yarn.ApplicationID{ClusterTimestamp: 17, ID: 3}, Attempt: 1}, ID: 5}
	node := yarn.NodeID{Host: "nm1", Port: 4545}
	tests := []struct {
		name   string
		st     yarn.ContainerStatus
		node   yarn.NodeID
		ns     yarn.NodeState
		wanted []string
	}{
		{"process exit", yarn.ContainerStatus{ID: id, ExitStatus: 3, Diagnostics: "Exception from container-launch"}, node, 0,
			[]string{"container_17_0003_01_000005 on nm1:4545 exited with code 3: Exception from container-launch"}},
		{"preempted", yarn.ContainerStatus{ID: id, ExitStatus: yarn.ExitPreempted, Diagnostics: "Container preempted by scheduler"}, node, 0,
			[]string{"was preempted by the YARN scheduler", "[exit status -102 PREEMPTED]", "Container preempted by scheduler"}},
		{"lost node", yarn.ContainerStatus{ID: id, ExitStatus: yarn.ExitAborted, Diagnostics: "Container released on a *lost* node"}, node, yarn.NodeLost,
			[]string{"was lost with its node (node LOST)", "ABORTED", "*lost* node"}},
		{"aborted", yarn.ContainerStatus{ID: id, ExitStatus: yarn.ExitAborted}, node, 0,
			[]string{"aborted by YARN"}},
		{"memory", yarn.ContainerStatus{ID: id, ExitStatus: yarn.ExitKilledExceededPMem}, yarn.NodeID{}, 0,
			[]string{"container_17_0003_01_000005 was killed by YARN for exceeding its physical memory limit (raise taskmanager.memory.process.size)"}},
		{"other YARN status", yarn.ContainerStatus{ID: id, ExitStatus: yarn.ExitKilledByResourceManager}, node, 0,
			[]string{"was ended by YARN (KILLED_BY_RESOURCEMANAGER)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeCompletion(tt.st, tt.node, tt.ns)
			for _, w := range tt.wanted {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not contain %q", got, w)
				}
			}
		})
	}
}

// fakeScheduler is a ResourceManager's scheduler of our own for the
// driver's loop: absolute asks, allocation of everything outstanding (plus
// `extra` surplus containers once), completion on release, and scripted
// completions and commands.
type fakeScheduler struct {
	mu          sync.Mutex
	outstanding map[yarn.Priority]int
	asks        []yarn.ResourceRequest // every ask received, in order
	seq         int64
	live        map[yarn.ContainerID]yarn.Container
	released    []yarn.ContainerID
	askedAt     []time.Time            // when each of asks came
	pending     []yarn.ContainerStatus // completions to report
	nodes       []yarn.NodeReport      // node updates to report
	preempt     []yarn.ContainerID     // preemption notices to report
	extra       int
	shutdown    bool
	calls       int
}

func newFakeScheduler() *fakeScheduler {
	return &fakeScheduler{outstanding: map[yarn.Priority]int{}, live: map[yarn.ContainerID]yarn.Container{}}
}

var testAttempt = yarn.ApplicationAttemptID{Application: yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 7}, Attempt: 1}

func (f *fakeScheduler) Allocate(ctx context.Context, r yarn.AllocateRequest) (*yarn.AllocateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	resp := &yarn.AllocateResponse{}
	if f.shutdown {
		resp.Command = yarn.AMCommandShutdown
		return resp, nil
	}
	for _, a := range r.Asks {
		if a.ResourceName != yarn.AnyResource || a.Capability != (yarn.Resource{MemoryMB: 256, VCores: 1}) {
			return nil, fmt.Errorf("fake: unexpected ask %+v", a)
		}
		f.asks = append(f.asks, a)
		f.askedAt = append(f.askedAt, time.Now())
		f.outstanding[a.Priority] = int(a.NumContainers)
	}
	for _, id := range r.Releases {
		if _, ok := f.live[id]; ok {
			delete(f.live, id)
			f.released = append(f.released, id)
			f.pending = append(f.pending, yarn.ContainerStatus{ID: id, State: yarn.ContainerComplete, ExitStatus: yarn.ExitAborted, Diagnostics: "Container released by application"})
		}
	}
	resp.Completed, f.pending = f.pending, nil
	resp.UpdatedNodes, f.nodes = f.nodes, nil
	resp.PreemptContainers, f.preempt = f.preempt, nil
	for p, n := range f.outstanding {
		if n > 0 {
			n += f.extra
			f.extra = 0
		}
		for range n {
			f.seq++
			c := yarn.Container{
				ID: yarn.ContainerID{Attempt: testAttempt, ID: f.seq}, Node: yarn.NodeID{Host: "nm", Port: 4545 + int32(f.seq%2)},
				Resource: yarn.Resource{MemoryMB: 256, VCores: 1}, Priority: p, Token: &hadoop.Token{Identifier: []byte("ct")},
			}
			f.live[c.ID] = c
			resp.Allocated = append(resp.Allocated, c)
		}
		f.outstanding[p] = 0
	}
	return resp, nil
}

// complete makes a live container complete with the given exit status.
func (f *fakeScheduler) complete(id yarn.ContainerID, exit int32, diag string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, id)
	f.pending = append(f.pending, yarn.ContainerStatus{ID: id, State: yarn.ContainerComplete, ExitStatus: exit, Diagnostics: diag})
}

// loseNode reports the node in state st and every live container on it
// completed ABORTED, in one response, as the ResourceManager does when it
// expires a NodeManager.
func (f *fakeScheduler) loseNode(node yarn.NodeID, st yarn.NodeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = append(f.nodes, yarn.NodeReport{ID: node, State: st, HealthReport: "node expired"})
	for id, c := range f.live {
		if c.Node == node {
			delete(f.live, id)
			f.pending = append(f.pending, yarn.ContainerStatus{ID: id, State: yarn.ContainerComplete, ExitStatus: yarn.ExitAborted,
				Diagnostics: "Container released on a *lost* node"})
		}
	}
}

// warnPreemption announces that the scheduler will preempt id.
func (f *fakeScheduler) warnPreemption(id yarn.ContainerID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.preempt = append(f.preempt, id)
}

func (f *fakeScheduler) snapshot() (live int, released []yarn.ContainerID, asks []yarn.ResourceRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live), slices.Clone(f.released), slices.Clone(f.asks)
}

type fakeLauncher struct {
	mu       sync.Mutex
	started  []yarn.ContainerID
	contexts map[yarn.ContainerID]yarn.ContainerLaunchContext
	fail     map[int64]bool // container sequence numbers whose launch fails
}

func (l *fakeLauncher) StartContainer(ctx context.Context, c yarn.Container, launch yarn.ContainerLaunchContext) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail[c.ID.ID] {
		return errors.New("fake: NodeManager refused the container")
	}
	l.started = append(l.started, c.ID)
	l.contexts[c.ID] = launch
	return nil
}

func (l *fakeLauncher) startedIDs() []yarn.ContainerID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.started)
}

type stopRecorder struct {
	mu      sync.Mutex
	stopped map[string]string
}

func (r *stopRecorder) WorkerStopped(id, diag string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped[id] = diag
}

func (r *stopRecorder) get(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.stopped[id]
	return d, ok
}

// logRecorder passes log lines to t.Log and keeps them.
type logRecorder struct {
	t  *testing.T
	mu sync.Mutex
	b  strings.Builder
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.t.Log(strings.TrimSpace(string(p)))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b.Write(p)
	return len(p), nil
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

type driverRig struct {
	logs   *logRecorder
	rm     *fakeScheduler
	nm     *fakeLauncher
	events *stopRecorder
	d      *Driver
	done   chan error
	cancel context.CancelFunc
}

func startDriver(t *testing.T, fail map[int64]bool) *driverRig {
	t.Helper()
	return startDriverWith(t, fail, func(*Config) {})
}

func startDriverWith(t *testing.T, fail map[int64]bool, configure func(*Config)) *driverRig {
	t.Helper()
	var creds hadoop.Credentials
	creds.AddToken("amrm", &hadoop.Token{Identifier: []byte("a"), Kind: hadoop.KindAMRMToken})
	creds.AddToken("hdfs", &hadoop.Token{Identifier: []byte("h"), Kind: hadoop.KindHDFSDelegation})
	r := &driverRig{logs: &logRecorder{t: t}, rm: newFakeScheduler(), nm: &fakeLauncher{contexts: map[yarn.ContainerID]yarn.ContainerLaunchContext{}, fail: fail}, events: &stopRecorder{stopped: map[string]string{}}}
	cfg := Config{
		Scheduler: r.rm, Launcher: r.nm, Resource: yarn.Resource{MemoryMB: 256, VCores: 1},
		TaskManager: TaskManagerLaunch{
			LocalResources: map[string]yarn.LocalResource{"taskmanager": {
				URL: yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/u/.sluice/app/taskmanager"}, Size: 10, Timestamp: 1234,
				Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication,
			}},
			DynamicProperties: map[string]string{"jobmanager.rpc.address": "am", "jobmanager.rpc.port": "6123"},
			Environment:       map[string]string{"SLUICE_CONF_DIR": "$PWD"},
			Credentials:       &creds,
		},
		HeartbeatInterval: 50 * time.Millisecond, ContainerRequestHeartbeatInterval: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	configure(&cfg)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan error, 1)
	go func() { r.done <- d.Run(ctx, r.events) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func TestDriverLaunchesReplacesAndReleases(t *testing.T) {
	r := startDriver(t, map[int64]bool{3: true})
	r.d.SetRequired(2)
	testwait.Eventually(t, 10*time.Second, "two TaskManagers launched", func() bool { return len(r.nm.startedIDs()) == 2 })
	started := r.nm.startedIDs() // launched concurrently: in any order
	slices.SortFunc(started, func(a, b yarn.ContainerID) int { return int(a.ID - b.ID) })
	if started[0].ID != 1 || started[1].ID != 2 {
		t.Fatalf("started %v", started)
	}

	// The launch context: program, properties, log files, tokens without the AMRMToken.
	r.nm.mu.Lock()
	lc := r.nm.contexts[started[0]]
	r.nm.mu.Unlock()
	if len(lc.Commands) != 1 || !strings.Contains(lc.Commands[0], "-Dtaskmanager.resource-id="+started[0].String()) ||
		!strings.HasPrefix(lc.Commands[0], "./taskmanager -Djobmanager.rpc.address=am -Djobmanager.rpc.port=6123 ") {
		t.Errorf("command %q", lc.Commands)
	}
	if lc.Environment[EnvLogDir] != LogDirExpansion || lc.Environment["SLUICE_CONF_DIR"] != "$PWD" {
		t.Errorf("environment %v", lc.Environment)
	}
	if lr := lc.LocalResources["taskmanager"]; lr.Size != 10 || lr.Timestamp != 1234 {
		t.Errorf("local resources %v", lc.LocalResources)
	}
	creds, err := hadoop.ParseCredentials(lc.Tokens)
	if err != nil || creds.NumTokens() != 1 {
		t.Fatalf("tokens %v, %v", creds, err)
	}

	// A TaskManager exits: reported with diagnostics and replaced. The
	// replacement (container 3) fails to launch, is released and replaced
	// by container 4.
	r.rm.complete(started[1], 3, "Exception from container-launch")
	testwait.Eventually(t, 10*time.Second, "the exit reported", func() bool { _, ok := r.events.get(started[1].String()); return ok })
	diag, _ := r.events.get(started[1].String())
	if !strings.Contains(diag, "exited with code 3") || !strings.Contains(diag, "Exception from container-launch") {
		t.Errorf("diagnostics %q", diag)
	}
	testwait.Eventually(t, 10*time.Second, "a replacement launched", func() bool { return len(r.nm.startedIDs()) == 3 })
	if got := r.nm.startedIDs()[2].ID; got != 4 {
		t.Errorf("replacement is container %d, want 4 (3 failed to launch)", got)
	}
	testwait.Eventually(t, 10*time.Second, "the failed launch released", func() bool {
		_, rel, _ := r.rm.snapshot()
		return len(rel) == 1 && rel[0].ID == 3
	})
	if _, ok := r.events.get(yarn.ContainerID{Attempt: testAttempt, ID: 3}.String()); ok {
		t.Error("a container whose launch failed was reported as a stopped worker")
	}

	// What the dashboard lists: the running ones with their node, the one
	// that exited with its code and diagnostics, the one that failed to
	// launch as released (then complete, aborted, once YARN says so).
	state := func() map[int64]ContainerInfo {
		m := map[int64]ContainerInfo{}
		for _, c := range r.d.Containers() {
			id, err := yarn.ParseContainerID(c.ID)
			if err != nil {
				t.Fatal(err)
			}
			m[id.ID] = c
		}
		return m
	}
	testwait.Eventually(t, 10*time.Second, "container 4 running", func() bool { return state()[4].State == ContainerRunning })
	cs := state()
	if len(cs) != 4 || cs[1].State != ContainerRunning || cs[1].Node == "" || cs[1].Resource.MemoryMB == 0 {
		t.Errorf("containers %+v: want 1 running on its node with its resource, and 2, 3, 4", cs)
	}
	if c := cs[2]; c.State != ContainerComplete || c.ExitStatus != 3 || !strings.Contains(c.Diagnostics, "exited with code 3") {
		t.Errorf("the container that exited: %+v", c)
	}
	if c := cs[3]; c.State != ContainerReleased && (c.State != ContainerComplete || c.ExitStatus != -100) {
		t.Errorf("the container that failed to launch: %+v, want RELEASED (or COMPLETE, -100, once YARN reports the release)", c)
	}

	// The ResourceManager of the cluster stops an idle TaskManager and
	// lowers the demand: released, not replaced.
	r.d.SetRequired(1)
	r.d.Release(started[0].String())
	testwait.Eventually(t, 10*time.Second, "the stopped TaskManager released", func() bool {
		live, rel, _ := r.rm.snapshot()
		return len(rel) == 2 && rel[1] == started[0] && live == 1
	})
	_, _, asks := r.rm.snapshot()
	var counts []int32
	for _, a := range asks {
		counts = append(counts, a.NumContainers)
	}
	// 2 at first; 1 after the exit; 1 after the failed launch.
	if !slices.Equal(counts, []int32{2, 1, 1}) {
		t.Errorf("asks sent %v, want [2 1 1]", counts)
	}
	if len(r.nm.startedIDs()) != 3 {
		t.Errorf("started %v after the release, want no new launch", r.nm.startedIDs())
	}
}

// TestDriverPausesAfterStartFailures: with a rate of 2 failures per
// minute, the second TaskManager that fails to start pauses the asks for
// the retry interval; then the driver asks again and the third starts.
func TestDriverPausesAfterStartFailures(t *testing.T) {
	const retry = 300 * time.Millisecond
	r := startDriverWith(t, map[int64]bool{1: true, 2: true}, func(c *Config) {
		c.StartWorkerMaxFailureRate = 2
		c.StartWorkerRetryInterval = retry
	})
	r.d.SetRequired(1)
	testwait.Eventually(t, 10*time.Second, "a TaskManager started", func() bool { return len(r.nm.startedIDs()) == 1 })
	if got := r.nm.startedIDs()[0].ID; got != 3 {
		t.Errorf("started container %d, want 3 (1 and 2 failed)", got)
	}
	r.rm.mu.Lock()
	var counts []int32
	for _, a := range r.rm.asks {
		counts = append(counts, a.NumContainers)
	}
	at := slices.Clone(r.rm.askedAt)
	r.rm.mu.Unlock()
	if !slices.Equal(counts, []int32{1, 1, 1}) {
		t.Fatalf("asks sent %v, want [1 1 1]: one at first, one after the first failure, one after the pause", counts)
	}
	// The driver keeps time in milliseconds (its clock's), so the pause may
	// end up to a millisecond short of the interval on the wall clock.
	if gap := at[2].Sub(at[1]); gap < retry-time.Millisecond {
		t.Errorf("the ask after the second failure came %v after the one before, want at least the retry interval %v", gap, retry)
	}
	logs := r.logs.String()
	for _, want := range []string{"too many TaskManagers failed to start", "failures_last_minute=2", "max_failure_rate=2",
		"asking for TaskManager containers again after start failures"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
}

func TestFailedToStart(t *testing.T) {
	for _, tt := range []struct {
		exit int32
		want bool
	}{
		{1, true}, {143, true}, {yarn.ExitKilledExceededPMem, true}, {yarn.ExitKilledExceededVMem, true},
		{yarn.ExitSuccess, false}, {yarn.ExitAborted, false}, {yarn.ExitPreempted, false}, {yarn.ExitDisksFailed, false},
	} {
		if got := failedToStart(yarn.ContainerStatus{ExitStatus: tt.exit}); got != tt.want {
			t.Errorf("failedToStart(exit %d) = %v, want %v", tt.exit, got, tt.want)
		}
	}
}

func TestDriverReleasesSurplus(t *testing.T) {
	r := startDriver(t, nil)
	r.rm.mu.Lock()
	r.rm.extra = 2
	r.rm.mu.Unlock()
	r.d.SetRequired(1)
	testwait.Eventually(t, 10*time.Second, "surplus released", func() bool {
		_, rel, _ := r.rm.snapshot()
		return len(rel) == 2
	})
	if got := r.nm.startedIDs(); len(got) != 1 {
		t.Errorf("started %v, want one TaskManager", got)
	}
	live, _, _ := r.rm.snapshot()
	if live != 1 {
		t.Errorf("%d live containers, want 1", live)
	}
}

func TestDriverShutdownCommand(t *testing.T) {
	r := startDriver(t, nil)
	r.rm.mu.Lock()
	r.rm.shutdown = true
	r.rm.mu.Unlock()
	r.d.SetRequired(1) // wake the loop
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if !errors.Is(err, ErrShutdown) {
			t.Fatalf("Run returned %v, want ErrShutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return on AM_SHUTDOWN")
	}
}

func TestDriverHeartbeatsSlowlyWhenIdle(t *testing.T) {
	r := startDriver(t, nil)
	r.d.SetRequired(1)
	testwait.Eventually(t, 10*time.Second, "one TaskManager", func() bool { return len(r.nm.startedIDs()) == 1 })
	r.rm.mu.Lock()
	before := r.rm.calls
	r.rm.mu.Unlock()
	began := time.Now()
	testwait.Eventually(t, 10*time.Second, "two more heartbeats", func() bool {
		r.rm.mu.Lock()
		defer r.rm.mu.Unlock()
		return r.rm.calls >= before+2
	})
	// Two idle heartbeats take at least one full 50 ms interval; at the
	// 5 ms request interval they would take ~10 ms.
	if el := time.Since(began); el < 50*time.Millisecond {
		t.Errorf("two idle heartbeats in %v; the fast interval is still in use", el)
	}
}

func TestConfigValidate(t *testing.T) {
	_, err := New(Config{TaskManager: TaskManagerLaunch{
		LocalResources:    map[string]yarn.LocalResource{"bin/tm": {}},
		DynamicProperties: map[string]string{"a b": "c"},
	}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"Scheduler is nil", "Launcher is nil", "Resource", `no "taskmanager"`, `"bin/tm" must be a plain file name`, `dynamic property key "a b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestUpdateCredentials(t *testing.T) {
	var creds hadoop.Credentials
	creds.AddToken("amrm", &hadoop.Token{Identifier: []byte("a"), Kind: hadoop.KindAMRMToken})
	creds.AddToken("nn:8020", &hadoop.Token{Identifier: []byte("old"), Kind: hadoop.KindHDFSDelegation})
	creds.AddToken("other", &hadoop.Token{Identifier: []byte("o"), Kind: "OTHER"})
	d, err := New(Config{
		Scheduler: newFakeScheduler(), Launcher: &fakeLauncher{}, Resource: yarn.Resource{MemoryMB: 256, VCores: 1},
		TaskManager: TaskManagerLaunch{
			LocalResources: map[string]yarn.LocalResource{"taskmanager": {
				URL: yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/tm"}, Size: 10, Timestamp: 1234}},
			Credentials: &creds,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var renewed hadoop.Credentials
	renewed.AddToken("nn:8020", &hadoop.Token{Identifier: []byte("new"), Kind: hadoop.KindHDFSDelegation})
	renewed.AddToken("amrm2", &hadoop.Token{Identifier: []byte("x"), Kind: hadoop.KindAMRMToken})
	if err := d.UpdateCredentials(&renewed, time.Unix(1_772_400_000, 0)); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	b := d.mu.tokens
	d.mu.Unlock()
	got, err := hadoop.ParseCredentials(b)
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := got.Token("nn:8020"); !ok || string(tok.Identifier) != "new" {
		t.Errorf("the renewed HDFS token did not replace the old one: %v", got.TokenAliases())
	}
	if _, ok := got.Token("other"); !ok {
		t.Errorf("a token not renewed was lost: %v", got.TokenAliases())
	}
	if _, ok := got.TokenByKind(hadoop.KindAMRMToken); ok {
		t.Errorf("an AMRMToken reached the TaskManagers' credentials: %v", got.TokenAliases())
	}
}

// TestDriverTaskManagerTokenExpiries: each running TaskManager is listed
// with the expiry of the tokens it was launched with; one launched with
// tokens of unknown expiry is not, and an ended one leaves the list.
func TestDriverTaskManagerTokenExpiries(t *testing.T) {
	r := startDriver(t, nil)
	id := func(n int64) string { return yarn.ContainerID{Attempt: testAttempt, ID: n}.String() }
	r.d.SetRequired(1)
	testwait.Eventually(t, 10*time.Second, "a TaskManager launched", func() bool { return len(r.nm.startedIDs()) == 1 })
	if got := r.d.TaskManagerTokenExpiries(); len(got) != 0 {
		t.Errorf("with the client's tokens (expiry unknown): %v, want none", got)
	}
	var renewed hadoop.Credentials
	renewed.AddToken("nn:8020", &hadoop.Token{Identifier: []byte("new"), Kind: hadoop.KindHDFSDelegation})
	if err := r.d.UpdateCredentials(&renewed, time.Unix(1_772_400_000, 0)); err != nil {
		t.Fatal(err)
	}
	r.d.SetRequired(2)
	testwait.Eventually(t, 10*time.Second, "a second TaskManager launched", func() bool { return len(r.nm.startedIDs()) == 2 })
	if got, want := r.d.TaskManagerTokenExpiries(), map[string]int64{id(2): 1_772_400_000}; !maps.Equal(got, want) {
		t.Errorf("after the renewal: %v, want %v", got, want)
	}
	if err := r.d.UpdateCredentials(&renewed, time.Unix(1_772_500_000, 0)); err != nil {
		t.Fatal(err)
	}
	r.rm.complete(yarn.ContainerID{Attempt: testAttempt, ID: 2}, 1, "exited")
	testwait.Eventually(t, 10*time.Second, "the replacement launched", func() bool { return len(r.nm.startedIDs()) == 3 })
	testwait.EventuallyNil(t, 10*time.Second, "the ended TaskManager to leave the list", func() error {
		if got, want := r.d.TaskManagerTokenExpiries(), map[string]int64{id(3): 1_772_500_000}; !maps.Equal(got, want) {
			return fmt.Errorf("expiries %v, want %v", got, want)
		}
		return nil
	})
}

// TestDriverReplacesContainersYARNTookAway: a TaskManager container that
// YARN ends (preemption, a lost or decommissioned node, failed disks) is
// reported with diagnostics that say why, logged, and replaced by a new
// request, not released.
func TestDriverReplacesContainersYARNTookAway(t *testing.T) {
	tests := []struct {
		name string
		// takeAway ends the victim through the fake scheduler.
		takeAway func(t *testing.T, r *driverRig, victim yarn.Container)
		want     []string // in the reported and logged diagnostics
		wantLog  []string // in the log, besides the diagnostics
	}{
		{
			name: "preempted",
			takeAway: func(t *testing.T, r *driverRig, victim yarn.Container) {
				r.rm.warnPreemption(victim.ID)
				testwait.Eventually(t, 10*time.Second, "the preemption notice logged", func() bool {
					return strings.Contains(r.logs.String(), "the YARN scheduler will preempt a container")
				})
				r.rm.complete(victim.ID, yarn.ExitPreempted, "Container preempted by scheduler")
			},
			want:    []string{"was preempted by the YARN scheduler", "[exit status -102 PREEMPTED]", "Container preempted by scheduler"},
			wantLog: []string{"container=VICTIM"},
		},
		{
			name: "lost node",
			takeAway: func(t *testing.T, r *driverRig, victim yarn.Container) {
				r.rm.loseNode(victim.Node, yarn.NodeLost)
			},
			want:    []string{"on VICTIMNODE was lost with its node (node LOST)", "[exit status -100 ABORTED]", "Container released on a *lost* node"},
			wantLog: []string{"node is no longer usable", "state=LOST", "health=\"node expired\""},
		},
		{
			name: "decommissioned node",
			takeAway: func(t *testing.T, r *driverRig, victim yarn.Container) {
				r.rm.loseNode(victim.Node, yarn.NodeDecommissioned)
			},
			want:    []string{"was lost with its node (node DECOMMISSIONED)", "[exit status -100 ABORTED]"},
			wantLog: []string{"node is no longer usable", "state=DECOMMISSIONED"},
		},
		{
			name: "disks failed",
			takeAway: func(t *testing.T, r *driverRig, victim yarn.Container) {
				r.rm.complete(victim.ID, yarn.ExitDisksFailed, "Container exited: disks failed on the node")
			},
			want: []string{"failed: the node's disks failed", "[exit status -101 DISKS_FAILED]", "disks failed on the node"},
		},
		{
			name: "killed for memory",
			takeAway: func(t *testing.T, r *driverRig, victim yarn.Container) {
				r.rm.complete(victim.ID, yarn.ExitKilledExceededPMem, "Container is running beyond physical memory limits")
			},
			want: []string{"exceeding its physical memory limit (raise taskmanager.memory.process.size)", "[exit status -104 KILLED_EXCEEDED_PMEM]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startDriver(t, nil)
			r.d.SetRequired(2)
			testwait.Eventually(t, 10*time.Second, "two TaskManagers launched", func() bool { return len(r.nm.startedIDs()) == 2 })
			r.rm.mu.Lock()
			victim := r.rm.live[yarn.ContainerID{Attempt: testAttempt, ID: 2}]
			r.rm.mu.Unlock()
			subst := strings.NewReplacer("VICTIMNODE", victim.Node.String(), "VICTIM", victim.ID.String())

			tt.takeAway(t, r, victim)

			testwait.Eventually(t, 10*time.Second, "the loss reported", func() bool { _, ok := r.events.get(victim.ID.String()); return ok })
			diag, _ := r.events.get(victim.ID.String())
			for _, w := range tt.want {
				if w = subst.Replace(w); !strings.Contains(diag, w) {
					t.Errorf("reported diagnostics %q do not contain %q", diag, w)
				}
			}
			// The replacement: one more container asked for, allocated
			// and launched; the lost one is not released (YARN has it).
			testwait.Eventually(t, 10*time.Second, "a replacement launched", func() bool { return len(r.nm.startedIDs()) == 3 })
			if got := r.nm.startedIDs()[2]; got.ID != 3 {
				t.Errorf("replacement is container %v, want sequence 3", got)
			}
			live, released, asks := r.rm.snapshot()
			var counts []int32
			for _, a := range asks {
				counts = append(counts, a.NumContainers)
			}
			if !slices.Equal(counts, []int32{2, 1}) {
				t.Errorf("asks sent %v, want [2 1]: the two, then one replacement", counts)
			}
			if live != 2 || len(released) != 0 {
				t.Errorf("%d live containers, released %v; want 2 and none", live, released)
			}
			logs := r.logs.String()
			if !strings.Contains(logs, "TaskManager container completed") || !strings.Contains(logs, "container="+victim.ID.String()) {
				t.Errorf("the completion is not logged with its container:\n%s", logs)
			}
			// Text handler values are quoted: look for the diagnostics'
			// fixed part.
			if w := subst.Replace(tt.want[0]); !strings.Contains(logs, w) {
				t.Errorf("the log does not carry the diagnostics %q:\n%s", w, logs)
			}
			for _, w := range tt.wantLog {
				if w = subst.Replace(w); !strings.Contains(logs, w) {
					t.Errorf("the log does not mention %q:\n%s", w, logs)
				}
			}
			if _, ok := r.events.get(yarn.ContainerID{Attempt: testAttempt, ID: 1}.String()); ok {
				t.Error("the TaskManager YARN left alone was reported stopped")
			}
		})
	}
}
