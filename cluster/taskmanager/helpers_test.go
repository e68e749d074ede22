package taskmanager

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/internal/testwait"
)

// wait bounds every wait of a test for something that must happen.
const wait = 20 * time.Second

// fakeJob is the test job binary (testdata/fakejob), built by TestMain.
var fakeJob struct {
	path   string
	data   []byte
	sha256 string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakejob-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeJob.path = filepath.Join(dir, "fakejob")
	cmd := exec.Command("go", "build", "-o", fakeJob.path, "./testdata/fakejob")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build testdata/fakejob:", err)
		os.Exit(1)
	}
	if fakeJob.data, err = os.ReadFile(fakeJob.path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sum := sha256.Sum256(fakeJob.data)
	fakeJob.sha256 = hex.EncodeToString(sum[:])
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// logs collects log lines for assertions and passes them to t.Log.
type logs struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogs(t testing.TB) (*logs, *slog.Logger) {
	l := &logs{t: t}
	return l, slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// eventually polls cond until it holds, failing after wait.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, wait, what, cond)
}

func serve(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	register(srv)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String()
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// rm is a real ResourceManager on loopback.
type rm struct {
	*resourcemanager.ResourceManager
	addr   string
	client clusterpb.ResourceManagerClient
	lost   chan resourcemanager.LostTaskManager
	exited chan resourcemanager.ExitedWorker
}

func startRM(t testing.TB, interval, timeout time.Duration) *rm {
	t.Helper()
	_, log := newLogs(t)
	r := &rm{lost: make(chan resourcemanager.LostTaskManager, 16), exited: make(chan resourcemanager.ExitedWorker, 16)}
	var err error
	r.ResourceManager, err = resourcemanager.New(resourcemanager.Config{
		ID: "rm", HeartbeatInterval: interval, HeartbeatTimeout: timeout, Logger: log.With("test", "rm"),
		OnTaskManagerLost: func(l resourcemanager.LostTaskManager) { r.lost <- l },
		OnWorkerExited:    func(e resourcemanager.ExitedWorker) { r.exited <- e },
	}, resourcemanager.NewStandalone(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	r.addr = serve(t, func(s *grpc.Server) { clusterpb.RegisterResourceManagerServer(s, r.ResourceManager) })
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ResourceManager: %v", err)
		}
	})
	r.client = clusterpb.NewResourceManagerClient(dial(t, r.addr))
	return r
}

func (r *rm) taskManagers(t testing.TB) []resourcemanager.TaskManagerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tms, err := r.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tms
}

// seenAs returns a function reporting whether the ResourceManager knows
// the TaskManager id, storing what it knows of it in info.
func (r *rm) seenAs(t testing.TB, id string, info *resourcemanager.TaskManagerInfo) func() bool {
	return func() bool {
		for _, in := range r.taskManagers(t) {
			if in.ID == id {
				*info = in
				return true
			}
		}
		return false
	}
}

func (r *rm) declare(t testing.TB, job, jobMaster string, slots int32) {
	t.Helper()
	if _, err := r.client.DeclareSlots(context.Background(), &clusterpb.SlotDemand{JobId: job, JobMasterAddress: jobMaster, Slots: slots}); err != nil {
		t.Fatal(err)
	}
}

func (r *rm) expectLost(t testing.TB, id, reasonPart string) {
	t.Helper()
	select {
	case l := <-r.lost:
		if l.ID != id || !strings.Contains(l.Reason, reasonPart) {
			t.Fatalf("lost %+v, want %s lost because of %q", l, id, reasonPart)
		}
	case <-time.After(wait):
		t.Fatalf("%s not reported lost within %v", id, wait)
	}
}

// jobMaster is a JobMaster of the test: it records slot offers, decides
// them with decide (default: accept all), and serves the fake job binary.
type jobMaster struct {
	clusterpb.UnimplementedJobMasterServer
	clusterpb.UnimplementedBlobsServer
	addr string

	mu     sync.Mutex
	offers []*clusterpb.SlotOffer
	decide func(n int, o *clusterpb.SlotOffer) []string // n counts offers from 1
}

func startJobMaster(t testing.TB) *jobMaster {
	jm := &jobMaster{}
	jm.addr = serve(t, func(s *grpc.Server) {
		clusterpb.RegisterJobMasterServer(s, jm)
		clusterpb.RegisterBlobsServer(s, jm)
	})
	return jm
}

func (jm *jobMaster) OfferSlots(_ context.Context, o *clusterpb.SlotOffer) (*clusterpb.SlotOfferResponse, error) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.offers = append(jm.offers, o)
	if jm.decide != nil {
		return &clusterpb.SlotOfferResponse{Accepted: jm.decide(len(jm.offers), o)}, nil
	}
	resp := &clusterpb.SlotOfferResponse{}
	for _, s := range o.Slots {
		resp.Accepted = append(resp.Accepted, s.AllocationId)
	}
	return resp, nil
}

func (jm *jobMaster) Get(r *clusterpb.BlobRequest, stream grpc.ServerStreamingServer[clusterpb.BlobChunk]) error {
	if r.Sha256 != fakeJob.sha256 {
		return status.Errorf(codes.NotFound, "no blob %s", r.Sha256)
	}
	for data := fakeJob.data; len(data) > 0; {
		n := min(len(data), 1<<20)
		if err := stream.Send(&clusterpb.BlobChunk{Data: data[:n]}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (jm *jobMaster) allOffers() []*clusterpb.SlotOffer {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return append([]*clusterpb.SlotOffer(nil), jm.offers...)
}

// proxy forwards TCP connections to target; the test can cut them (the
// peers see a broken connection) or freeze them (the peers see silence).
type proxy struct {
	lis    net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		lis.Close()
		p.unfreeze()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(u, c) })
		p.wg.Go(func() { p.pipe(c, u) })
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.frozen {
			p.cond.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

func (p *proxy) unfreeze() {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
	p.cond.Broadcast()
}

// startTM runs a TaskManager until the test ends.
func startTM(t testing.TB, rmAddr string, mod func(*Config)) (*TaskManager, *logs) {
	t.Helper()
	l, log := newLogs(t)
	cfg := Config{
		ID: "tm-" + strings.ReplaceAll(t.Name(), "/", "-"), ResourceManagerAddress: rmAddr, Host: "127.0.0.1",
		Slots: 2, WorkDir: t.TempDir(), StopGrace: 300 * time.Millisecond,
		ReconnectBackoff: 20 * time.Millisecond, ReconnectBackoffMax: 200 * time.Millisecond,
		HeartbeatTimeout: 2 * time.Second, Logger: log,
	}
	if mod != nil {
		mod(&cfg)
	}
	tm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tm.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("TaskManager: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("TaskManager did not stop within %v", wait)
		}
	})
	return tm, l
}

func snapshot(t testing.TB, tm *TaskManager) Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := tm.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// slotStates renders the TaskManager's slots as "state:job" separated by
// spaces.
func slotStates(t testing.TB, tm *TaskManager) string {
	var parts []string
	for _, s := range snapshot(t, tm).Slots {
		if s.JobID == "" {
			parts = append(parts, s.State)
		} else {
			parts = append(parts, s.State+":"+s.JobID)
		}
	}
	return strings.Join(parts, " ")
}

// activeAllocations waits until the TaskManager's slots are as want and
// returns the allocation ids of its active slots.
func activeAllocations(t testing.TB, tm *TaskManager, want string) []string {
	t.Helper()
	eventually(t, "slots "+want, func() bool { return slotStates(t, tm) == want })
	var ids []string
	for _, s := range snapshot(t, tm).Slots {
		if s.State == "active" {
			ids = append(ids, s.AllocationID)
		}
	}
	return ids
}

// fakeRecord is what testdata/fakejob records.
type fakeRecord struct {
	PID        int               `json:"pid"`
	PGID       int               `json:"pgid"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Dir        string            `json:"dir"`
	Deployment json.RawMessage   `json:"deployment"`
	ChildPID   int               `json:"child_pid"`
}

func readRecord(t testing.TB, path string) fakeRecord {
	t.Helper()
	var data []byte
	eventually(t, "worker record "+path, func() bool {
		var err error
		data, err = os.ReadFile(path)
		return err == nil
	})
	var r fakeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name in parentheses.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func submit(t testing.TB, tm *TaskManager, r *clusterpb.SubmitTasksRequest) error {
	t.Helper()
	client := clusterpb.NewTaskManagerClient(dial(t, tm.Address()))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := client.SubmitTasks(ctx, r)
	return err
}

func request(job, workerID, jm string, allocs []string, out string, env map[string]string) *clusterpb.SubmitTasksRequest {
	e := map[string]string{"FAKEJOB_OUT": out}
	for k, v := range env {
		e[k] = v
	}
	return &clusterpb.SubmitTasksRequest{
		JobId: job, Attempt: 0, WorkerId: workerID, BinarySha256: fakeJob.sha256, BinarySize: int64(len(fakeJob.data)),
		JobMasterAddress: jm, AllocationIds: allocs, Env: e,
	}
}
