package taskmanager

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/security/kerberos"
)

const (
	interval = 50 * time.Millisecond
	timeout  = time.Second
)

func TestRegisterAllocateOffer(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	jm.decide = func(n int, o *clusterpb.SlotOffer) []string {
		if n == 1 {
			return nil // the first offer is declined: its slots go back
		}
		var ids []string
		for _, s := range o.Slots {
			ids = append(ids, s.AllocationId)
		}
		return ids
	}
	tm, _ := startTM(t, r.addr, func(c *Config) { c.CPUCores = 3; c.MemoryBytes = 4 << 30 })

	eventually(t, "registered", func() bool { return snapshot(t, tm).Registered && len(r.taskManagers(t)) == 1 })
	info := r.taskManagers(t)[0]
	if info.ID != tm.ID() || info.Address != tm.Address() || !strings.HasPrefix(info.Address, "127.0.0.1:") ||
		info.SlotsTotal != 2 || info.SlotResources.CPUCores != 1.5 || info.SlotResources.MemoryBytes != 2<<30 {
		t.Fatalf("ResourceManager sees %+v", info)
	}
	if s := snapshot(t, tm); s.ResourceManagerID != "rm" {
		t.Fatalf("snapshot %+v", s)
	}

	r.declare(t, "job1", jm.addr, 2)
	allocs := activeAllocations(t, tm, "active:job1 active:job1")
	offers := jm.allOffers()
	if len(offers) < 2 {
		t.Fatalf("offers %v: want the declined one and a later one", offers)
	}
	// The offer names the machine (the host label of the job's metrics),
	// whatever address the TaskManager binds.
	host, _ := os.Hostname()
	for _, o := range offers {
		if o.JobId != "job1" || o.TaskManagerId != tm.ID() || o.TaskManagerAddress != tm.Address() || o.Hostname != host {
			t.Fatalf("offer %v", o)
		}
	}
	for _, o := range offers[1:] {
		for _, s := range o.Slots {
			if !slices.Contains(allocs, s.AllocationId) {
				t.Errorf("accepted allocation %s is not active: %v", s.AllocationId, allocs)
			}
		}
	}
	// The ResourceManager's view follows the slot reports.
	eventually(t, "confirmed at the ResourceManager", func() bool {
		in := r.taskManagers(t)[0]
		return in.SlotsFree == 0 && !in.Slots[0].Pending && !in.Slots[1].Pending
	})

	// The demand drops to 1: the JobMaster frees one slot itself.
	r.declare(t, "job1", jm.addr, 1)
	client := clusterpb.NewTaskManagerClient(dial(t, tm.Address()))
	if _, err := client.FreeSlots(context.Background(), &clusterpb.FreeSlotsRequest{JobId: "job1", AllocationIds: []string{allocs[1], "unknown"}}); err != nil {
		t.Fatal(err)
	}
	activeAllocations(t, tm, "active:job1 free")
	eventually(t, "free at the ResourceManager", func() bool { return r.taskManagers(t)[0].SlotsFree == 1 })

	// The demand ends: the ResourceManager takes the slot back.
	r.declare(t, "job1", jm.addr, 0)
	activeAllocations(t, tm, "free free")
	eventually(t, "all free at the ResourceManager", func() bool { return r.taskManagers(t)[0].SlotsFree == 2 })

	if _, err := client.FreeSlots(context.Background(), &clusterpb.FreeSlotsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("FreeSlots without job: %v", err)
	}
}

func TestSubmitAndCancel(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	workDir := t.TempDir()
	tm, _ := startTM(t, r.addr, func(c *Config) { c.WorkDir = workDir; c.DataPort = "7001-7003" })
	r.declare(t, "job1", jm.addr, 2)
	allocs := activeAllocations(t, tm, "active:job1 active:job1")

	out := filepath.Join(t.TempDir(), "record")
	const secret = "s3cret-of-job1"
	req := request("job1", "w0", jm.addr, allocs, out, map[string]string{"FAKEJOB_EXTRA": "x", "KAFKA_PASSWORD": secret + "-env"})
	req.Args = []string{"--input", "a b"}
	req.Configuration = map[string]string{"parallelism.default": "2", "properties.sasl.jaas.config": "password=" + secret}
	if err := submit(t, tm, req); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)

	// The process: own process group, arguments, environment.
	if rec.PGID != rec.PID {
		t.Errorf("worker pgid %d, want its own group %d", rec.PGID, rec.PID)
	}
	// The arguments come in the deployment (checked below), not on the
	// command line, which every local user can read.
	if len(rec.Args) != 0 {
		t.Errorf("the worker's command line holds arguments %q", rec.Args)
	}
	if rec.Env[conf.EnvExecutionTarget] != conf.BinaryModeWorker || rec.Env["FAKEJOB_EXTRA"] != "x" {
		t.Errorf("env %v", rec.Env)
	}
	// The deployment names everything the worker needs; it comes on the
	// worker's standard input.
	if p := rec.Env[conf.EnvWorkerDeployment]; p != deployment.Stdin {
		t.Errorf("%s=%q, want %q (standard input)", conf.EnvWorkerDeployment, p, deployment.Stdin)
	}
	d, err := deployment.ParseWorkerDeployment(rec.Deployment)
	if err != nil {
		t.Fatal(err)
	}
	want := deployment.WorkerDeployment{Format: deployment.DeploymentFormat, TaskManagerID: tm.ID(), TaskManagerAddress: tm.Address(),
		JobID: "job1", WorkerID: "w0", BinarySHA256: fakeJob.sha256, BinarySize: int64(len(fakeJob.data)),
		JobMasterAddress: jm.addr, AllocationIDs: allocs, Args: req.Args, Env: req.Env,
		Configuration: req.Configuration, DataHost: "127.0.0.1", DataPorts: "7001-7003"}
	if !d.Equal(&want) {
		t.Errorf("deployment\n got %+v\nwant %+v", *d, want)
	}
	if want := filepath.Join(workDir, "workers", "job1", "0", "w0"); rec.Dir != want {
		t.Errorf("worker ran in %s, want %s", rec.Dir, want)
	}
	// The job's -D values and environment reached the worker, and no file
	// of the TaskManager's holds them.
	if !strings.Contains(string(rec.Deployment), secret) {
		t.Errorf("the worker's deployment lacks the job's -D values: %s", rec.Deployment)
	}
	filepath.WalkDir(workDir, func(p string, e iofs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if data, err := os.ReadFile(p); err != nil {
			t.Error(err)
		} else if strings.Contains(string(data), secret) {
			t.Errorf("%s holds a secret of the job", p)
		}
		return nil
	})
	// The worker directories and the blob cache are the TaskManager's
	// user's alone, even in a working directory others may enter.
	for _, d := range []string{filepath.Join(workDir, "workers"), filepath.Join(workDir, "workers", "job1"), rec.Dir, filepath.Join(workDir, "blobs")} {
		if fi, err := os.Stat(d); err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	// The binary is cached by digest, executable.
	fi, err := os.Stat(filepath.Join(workDir, "blobs", fakeJob.sha256))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("cached binary: %v %v", fi, err)
	}
	// stdout goes to the log directory.
	stdout := filepath.Join(tm.LogDir(), "job1-0-w0.out")
	eventually(t, "stdout file", func() bool {
		data, _ := os.ReadFile(stdout)
		return strings.Contains(string(data), "fakejob started")
	})
	if s := snapshot(t, tm); len(s.Workers) != 1 || s.Workers[0].PID != rec.PID || s.Workers[0].State != "running" {
		t.Fatalf("workers %+v", s.Workers)
	}

	// The same worker again is refused; so are slots not held, bad
	// requests, a binary that does not match and one the JobMaster does
	// not have.
	if err := submit(t, tm, req); status.Code(err) != codes.AlreadyExists {
		t.Errorf("duplicate worker: %v", err)
	}
	if err := submit(t, tm, request("job2", "w0", jm.addr, allocs, out, nil)); status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), `is not a slot of job "job2"`) {
		t.Errorf("slots of another job: %v", err)
	}
	bad := request("../job", "w/1", "nohost", nil, out, map[string]string{"A=B": "c"})
	bad.BinarySha256, bad.BinarySize = "XYZ", 0
	err = submit(t, tm, bad)
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad request: %v", err)
	}
	for _, w := range []string{"job_id", "worker_id", "binary_sha256", "binary_size", "job_master_address", "allocation_ids is empty", `env "A=B"`} {
		if err != nil && !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not name %s", err, w)
		}
	}
	wrongSize := request("job1", "w1", jm.addr, allocs[:1], out+".1", nil)
	wrongSize.BinarySize--
	if err := submit(t, tm, wrongSize); status.Code(err) != codes.DataLoss {
		t.Errorf("wrong size: %v", err)
	}
	unknown := request("job1", "w1", jm.addr, allocs[:1], out+".1", nil)
	unknown.BinarySha256 = strings.Repeat("0", 64)
	// A binary the JobMaster does not have is NotFound: no restart brings
	// it back.
	if err := submit(t, tm, unknown); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "no blob") ||
		!strings.Contains(err.Error(), ErrNoBinary.Error()) {
		t.Errorf("unknown binary: %v", err)
	}

	// CancelJob stops the worker and returns once it has exited.
	client := clusterpb.NewTaskManagerClient(dial(t, tm.Address()))
	if _, err := client.CancelJob(context.Background(), &clusterpb.CancelJobRequest{JobId: "job1", UpToAttempt: -1}); err != nil {
		t.Fatal(err)
	}
	if alive(rec.PID) {
		t.Fatalf("worker %d alive after CancelJob", rec.PID)
	}
	if s := snapshot(t, tm); len(s.Workers) != 0 || slotStates(t, tm) != "active:job1 active:job1" {
		t.Fatalf("after cancel: workers %+v slots %s", s.Workers, slotStates(t, tm))
	}

	// A worker that ignores SIGTERM is killed after the grace period, with
	// the process it started.
	out2 := filepath.Join(t.TempDir(), "record")
	stubborn := request("job1", "w0", jm.addr, allocs, out2, map[string]string{"FAKEJOB_IGNORE_TERM": "1", "FAKEJOB_MODE": "child"})
	stubborn.Attempt = 1
	if err := submit(t, tm, stubborn); err != nil {
		t.Fatal(err)
	}
	rec2 := readRecord(t, out2)
	child := readRecord(t, out2+".child")
	if child.PGID != rec2.PID || !alive(child.PID) {
		t.Fatalf("child %+v of worker %d", child, rec2.PID)
	}
	// Attempt 0 is gone: cancelling up to it leaves attempt 1 running.
	if _, err := client.CancelJob(context.Background(), &clusterpb.CancelJobRequest{JobId: "job1", UpToAttempt: 0}); err != nil {
		t.Fatal(err)
	}
	if !alive(rec2.PID) {
		t.Fatal("CancelJob up to attempt 0 stopped attempt 1")
	}
	start := time.Now()
	if _, err := client.CancelJob(context.Background(), &clusterpb.CancelJobRequest{JobId: "job1", UpToAttempt: 1}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a worker ignoring SIGTERM stopped after %v, before the grace period", took)
	}
	if alive(rec2.PID) {
		t.Errorf("worker %d alive after CancelJob", rec2.PID)
	}
	eventually(t, "child killed", func() bool { return !alive(child.PID) })

	if _, err := client.CancelJob(context.Background(), &clusterpb.CancelJobRequest{UpToAttempt: -2}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad CancelJob: %v", err)
	}
}

// TestCancelStopsAFrozenWorker: a stopped worker (SIGSTOP; its JobMaster
// gave it up for silence) is resumed to take its SIGTERM, so CancelJob
// returns at once rather than after the grace period's SIGKILL.
func TestCancelStopsAFrozenWorker(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	tm, logs := startTM(t, r.addr, func(c *Config) { c.StopGrace = time.Minute })
	r.declare(t, "job1", jm.addr, 1)
	allocs := activeAllocations(t, tm, "active:job1 free")
	out := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out, nil)); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)
	if err := syscall.Kill(rec.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(rec.PID, syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := clusterpb.NewTaskManagerClient(dial(t, tm.Address())).CancelJob(ctx, &clusterpb.CancelJobRequest{JobId: "job1", UpToAttempt: -1}); err != nil {
		t.Fatalf("CancelJob of a stopped worker: %v", err)
	}
	if alive(rec.PID) {
		t.Fatalf("worker %d alive after CancelJob", rec.PID)
	}
	if strings.Contains(logs.String(), "killing it") {
		t.Errorf("the stopped worker was killed after the grace period, not stopped by its SIGTERM")
	}
}

func TestWorkerFailureIsLogged(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	tm, logs := startTM(t, r.addr, nil)
	r.declare(t, "job1", jm.addr, 1)
	allocs := activeAllocations(t, tm, "active:job1 free")
	out := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out, map[string]string{"FAKEJOB_MODE": "fail"})); err != nil {
		t.Fatal(err)
	}
	readRecord(t, out)
	eventually(t, "failure logged", func() bool {
		s := logs.String()
		return strings.Contains(s, `msg="worker failed"`) && strings.Contains(s, "exit status 3") &&
			strings.Contains(s, "fakejob: line before") && strings.Contains(s, "boom: deliberate failure")
	})
	if s := snapshot(t, tm); len(s.Workers) != 0 || slotStates(t, tm) != "active:job1 free" {
		t.Fatalf("after the failure: %+v", s)
	}
}

func TestSessionLossKillsWorkersAndReregisters(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	p := startProxy(t, r.addr)
	tm, _ := startTM(t, p.addr(), nil)
	r.declare(t, "job1", jm.addr, 2)
	allocs := activeAllocations(t, tm, "active:job1 active:job1")
	out := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out, nil)); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)

	// The connection breaks: both sides notice at once.
	p.cut()
	r.expectLost(t, tm.ID(), "")
	eventually(t, "worker killed", func() bool { return !alive(rec.PID) })
	// The TaskManager registers again and, the demand standing, gets new
	// slots for the job.
	again := activeAllocations(t, tm, "active:job1 active:job1")
	for _, a := range again {
		if slices.Contains(allocs, a) {
			t.Fatalf("allocation %s survived the session", a)
		}
	}
	if n := len(r.taskManagers(t)); n != 1 {
		t.Fatalf("%d TaskManagers registered", n)
	}
}

func TestSilence(t *testing.T) {
	r := startRM(t, interval, 500*time.Millisecond)
	jm := startJobMaster(t)
	p := startProxy(t, r.addr)
	tm, logs := startTM(t, p.addr(), nil)
	r.declare(t, "job1", jm.addr, 1)
	allocs := activeAllocations(t, tm, "active:job1 free")
	out := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out, nil)); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)

	// Nothing passes: the ResourceManager loses the TaskManager after its
	// timeout, and the TaskManager the ResourceManager.
	p.freeze()
	r.expectLost(t, tm.ID(), "no heartbeat")
	eventually(t, "session dropped", func() bool { return !snapshot(t, tm).Registered })
	if !strings.Contains(logs.String(), "no heartbeat from the ResourceManager") {
		t.Error("the TaskManager did not log the silent ResourceManager")
	}
	eventually(t, "worker killed", func() bool { return !alive(rec.PID) })
	p.unfreeze()
	activeAllocations(t, tm, "active:job1 free")
}

// silentRM is a ResourceManager of the test that registers TaskManagers
// and never sends a heartbeat.
type silentRM struct {
	clusterpb.UnimplementedResourceManagerServer
	sessions chan string
}

func (s *silentRM) Connect(stream grpc.BidiStreamingServer[clusterpb.TaskManagerMessage, clusterpb.ResourceManagerMessage]) error {
	m, err := stream.Recv()
	if err != nil {
		return err
	}
	s.sessions <- m.GetRegister().GetTaskManagerId()
	if err := stream.Send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Registered{Registered: &clusterpb.Registered{
		ResourceManagerId: "silent", HeartbeatIntervalMs: 50, HeartbeatTimeoutMs: 300}}}); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			return nil
		}
	}
}

func TestSilentResourceManager(t *testing.T) {
	s := &silentRM{sessions: make(chan string, 16)}
	addr := serve(t, func(g *grpc.Server) { clusterpb.RegisterResourceManagerServer(g, s) })
	tm, logs := startTM(t, addr, nil)
	for range 2 {
		select {
		case id := <-s.sessions:
			if id != tm.ID() {
				t.Fatalf("registered %q", id)
			}
		case <-time.After(wait):
			t.Fatal("the TaskManager did not register again after a silent ResourceManager")
		}
	}
	if !strings.Contains(logs.String(), "no heartbeat from the ResourceManager for 300ms") {
		t.Error("the timeout given in Registered was not used")
	}
}

func TestRefusedRegistrationIsRetried(t *testing.T) {
	r := startRM(t, interval, timeout)
	// Two TaskManagers with one id: the second is refused until the first
	// ends.
	first, _ := startTM(t, r.addr, func(c *Config) { c.ID = "same" })
	eventually(t, "first registered", func() bool { return snapshot(t, first).Registered })
	ctx, cancel := context.WithCancel(context.Background())
	l, log := newLogs(t)
	second, err := New(Config{ID: "same", ResourceManagerAddress: r.addr, Host: "127.0.0.1", WorkDir: t.TempDir(),
		ReconnectBackoff: 20 * time.Millisecond, ReconnectBackoffMax: 50 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "refusal logged", func() bool { return strings.Contains(l.String(), "is registered from "+first.Address()) })
	if snapshot(t, second).Registered {
		t.Fatal("a duplicate registered")
	}
}

func TestRunStopsWorkers(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	l, log := newLogs(t)
	tm, err := New(Config{ResourceManagerAddress: r.addr, Host: "127.0.0.1", WorkDir: t.TempDir(), StopGrace: 200 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tm.Run(ctx) }()
	r.declare(t, "job1", jm.addr, 1)
	allocs := activeAllocations(t, tm, "active:job1")
	out := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out, map[string]string{"FAKEJOB_IGNORE_TERM": "1"})); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	if alive(rec.PID) {
		t.Fatal("worker alive after Run returned")
	}
	r.expectLost(t, tm.ID(), "")
	if !strings.Contains(l.String(), "killing it") {
		t.Error("the kill after the grace period was not logged")
	}
	if _, err := tm.Snapshot(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Snapshot after Run: %v", err)
	}
}

func TestConfig(t *testing.T) {
	err := Config{RPCPort: "x", Slots: -1, DataPort: "70000", ReconnectBackoff: time.Second, ReconnectBackoffMax: time.Millisecond}.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{"ResourceManagerAddress is empty", "RPCPort", `DataPort: invalid port specification "70000"`, "Slots -1", "ReconnectBackoffMax"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %q", err, w)
		}
	}
	// A port range: the first free port is taken.
	busy, err := New(Config{ResourceManagerAddress: "127.0.0.1:1", Host: "127.0.0.1", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := strings.Cut(busy.Address(), ":")
	tm, err := New(Config{ResourceManagerAddress: "127.0.0.1:1", Host: "127.0.0.1", RPCPort: port + ",0", WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if tm.Address() == busy.Address() {
		t.Fatalf("two TaskManagers on %s", tm.Address())
	}
	if _, err := New(Config{ResourceManagerAddress: "127.0.0.1:1", Host: "127.0.0.1", RPCPort: port, WorkDir: t.TempDir()}); err == nil {
		t.Fatal("bound a busy port")
	}
}

// A TaskManager's heartbeats carry the state of its Kerberos login, which
// the ResourceManager keeps; without a login they carry none.
func TestHeartbeatCarriesKerberosStatus(t *testing.T) {
	r := startRM(t, interval, timeout)
	var relogins atomic.Int64
	status := func() kerberos.Status {
		return kerberos.Status{Principal: "sluice/tm@EXAMPLE.COM", TGTExpiry: 1_772_370_000, TGTRenewTill: 1_772_452_800, Relogins: relogins.Load()}
	}
	for _, tc := range []struct {
		name  string
		login func() kerberos.Status
	}{
		{"with a login", status},
		{"without a login", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, _ := startTM(t, r.addr, func(c *Config) { c.KerberosStatus = tc.login })
			var info resourcemanager.TaskManagerInfo
			seen := r.seenAs(t, tm.ID(), &info)
			if tc.login == nil {
				eventually(t, "a heartbeat after registering", func() bool { return seen() && info.LastHeartbeat.After(info.RegisteredAt) })
				if info.Kerberos != nil {
					t.Fatalf("the ResourceManager sees a login %+v of a TaskManager without one", info.Kerberos)
				}
				return
			}
			eventually(t, "the login at the ResourceManager", func() bool { return seen() && info.Kerberos != nil && *info.Kerberos == status() })
			// The next heartbeats carry the login's new state.
			relogins.Store(3)
			eventually(t, "the re-logins at the ResourceManager", func() bool { return seen() && info.Kerberos != nil && *info.Kerberos == status() })
		})
	}
}

// A TaskManager registers with its data port and hardware, and its
// heartbeats carry the hardware as it is then (free memory changes).
func TestRegistrationAndHeartbeatCarryHardware(t *testing.T) {
	r := startRM(t, interval, timeout)
	var free atomic.Int64
	free.Store(6 << 30)
	hw := func() Hardware {
		return Hardware{CPUCores: 4, PhysicalMemoryBytes: 8 << 30, FreeMemoryBytes: free.Load()}
	}
	tm, _ := startTM(t, r.addr, func(c *Config) { c.DataPort = "6121-6125"; c.Hardware = hw })
	var info resourcemanager.TaskManagerInfo
	seen := r.seenAs(t, tm.ID(), &info)
	want := func() resourcemanager.Hardware {
		return resourcemanager.Hardware{CPUCores: 4, PhysicalMemoryBytes: 8 << 30, FreeMemoryBytes: free.Load()}
	}
	eventually(t, "the hardware at the ResourceManager", func() bool { return seen() && info.Hardware == want() })
	if info.DataPort != 6121 {
		t.Errorf("data port %d, want 6121", info.DataPort)
	}
	free.Store(2 << 30)
	eventually(t, "the free memory of a later heartbeat", func() bool { return seen() && info.Hardware == want() })
}

// The data port a TaskManager registers with is the first of
// taskmanager.data.port's ports; 0 for any free port.
func TestRegisteredDataPort(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want int32
	}{
		{"0", 0},
		{"6121", 6121},
		{"6121-6125", 6121},
		{"6130,6121-6125", 6130},
		{"not a port", 0},
	} {
		if got := registeredDataPort(tc.spec); got != tc.want {
			t.Errorf("registeredDataPort(%q) = %d, want %d", tc.spec, got, tc.want)
		}
	}
}

// TestWorkerExitIsReported checks that a worker that exits unasked is
// reported to the ResourceManager with its status and stderr tail, and a
// worker stopped on request is not.
func TestWorkerExitIsReported(t *testing.T) {
	r := startRM(t, interval, timeout)
	jm := startJobMaster(t)
	tm, _ := startTM(t, r.addr, nil)
	r.declare(t, "job1", jm.addr, 1)
	allocs := activeAllocations(t, tm, "active:job1 free")

	// Attempt 0 is stopped on request: no report.
	out0 := filepath.Join(t.TempDir(), "record")
	if err := submit(t, tm, request("job1", "w0", jm.addr, allocs, out0, nil)); err != nil {
		t.Fatal(err)
	}
	readRecord(t, out0)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := clusterpb.NewTaskManagerClient(dial(t, tm.Address())).CancelJob(ctx, &clusterpb.CancelJobRequest{JobId: "job1", UpToAttempt: 0}); err != nil {
		t.Fatal(err)
	}

	// Attempt 1 fails: reported. Reports keep their order on the session,
	// so a report of the stopped worker would come first.
	out1 := filepath.Join(t.TempDir(), "record")
	req := request("job1", "w1", jm.addr, allocs, out1, map[string]string{"FAKEJOB_MODE": "fail"})
	req.Attempt = 1
	if err := submit(t, tm, req); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-r.exited:
		if e.TaskManager != tm.ID() || e.Job != "job1" || e.Attempt != 1 || e.Worker != "w1" || e.Status != "exit status 3" ||
			!strings.Contains(e.StderrTail, "fakejob: line before") || !strings.Contains(e.StderrTail, "boom: deliberate failure") {
			t.Fatalf("reported %+v", e)
		}
	case <-time.After(wait):
		t.Fatal("the failed worker was not reported")
	}
}
