// Package taskmanager is the TaskManager of a Sluice cluster: it offers its
// task slots to a ResourceManager, offers the slots the ResourceManager
// assigns to the job's JobMaster, and runs each job's tasks in a worker
// process: the job binary, fetched from the JobMaster's blob service and
// executed with SLUICE_EXECUTION_TARGET=worker and a deployment file
// (WorkerDeployment).
//
// A TaskManager keeps one session with the ResourceManager
// (clusterpb.ResourceManager.Connect): Register, then heartbeats both ways
// carrying its slot report (and the state of its Kerberos login, if it has
// one), which it also sends whenever its slots change.
// When the session breaks (a closed stream at once, a silent
// ResourceManager after the heartbeat timeout) it stops its workers, frees
// its slots and registers again, retrying with backoff; this is how it
// outlives a JobManager restart.
//
// All state lives in one owner goroutine, Run (an ownerloop.Loop). The
// decisions about sessions are the link's (link.go) and about slots the
// slot offers' (offers.go): state machines whose effects the owner carries
// out.
//
// Workers are children in a process group of their own that the kernel
// kills with the TaskManager (Linux); CancelJob and a lost session stop
// them with SIGTERM, then SIGKILL after a grace period. Their stdout and
// stderr go to files in the log directory named after job, attempt and
// worker; a worker that fails is logged with the tail of its stderr.
package taskmanager

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/deployment"
	"github.com/sluice/sluice/cluster/loginwire"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/ownerloop"
)

// Errors of the TaskManager's RPCs. Over gRPC they arrive as status errors
// with the codes named here; in-process callers can test them with
// errors.Is.
var (
	// ErrStopped: the TaskManager is shutting down or not running
	// (codes.Unavailable).
	ErrStopped = errors.New("taskmanager: not running")
	// ErrInvalidRequest: a request is missing or has malformed fields
	// (codes.InvalidArgument).
	ErrInvalidRequest = errors.New("taskmanager: invalid request")
	// ErrNotRegistered: the TaskManager has no ResourceManager session
	// (codes.FailedPrecondition).
	ErrNotRegistered = errors.New("taskmanager: not registered at a ResourceManager")
	// ErrSlotNotHeld: a request names a slot the job does not hold here
	// (codes.FailedPrecondition).
	ErrSlotNotHeld = errors.New("taskmanager: slot not held by the job")
	// ErrWorkerExists: a worker with the same job, attempt and worker id
	// runs (codes.AlreadyExists).
	ErrWorkerExists = errors.New("taskmanager: worker already running")
	// ErrWorkerStopped: the worker was stopped before it started
	// (codes.Aborted).
	ErrWorkerStopped = errors.New("taskmanager: worker stopped before it started")
	// ErrNoBinary: the JobMaster's Blobs service has no job binary with
	// the requested digest (codes.NotFound).
	ErrNoBinary = errors.New("taskmanager: the JobMaster has no such job binary")
)

// sessionQueue bounds the messages waiting for the ResourceManager stream.
const sessionQueue = 256

type rpcError struct {
	code codes.Code
	err  error
}

func (e *rpcError) Error() string              { return e.err.Error() }
func (e *rpcError) Unwrap() error              { return e.err }
func (e *rpcError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }

func withCode(code codes.Code, err error) error { return &rpcError{code: code, err: err} }

// TaskManager serves clusterpb.TaskManagerServer and keeps a session with
// the ResourceManager. Create it with New and run it with Run.
type TaskManager struct {
	clusterpb.UnimplementedTaskManagerServer

	cfg        Config
	id         string
	resourceID string
	addr       string // advertised RPC address
	// ownWorkDir is the working directory the TaskManager made (no
	// taskmanager.working-dir given), removed when it stops.
	ownWorkDir *ownWorkDir
	host       string // advertised host
	hostname   string
	logDir     string
	workersDir string
	log        *slog.Logger
	clock      clock.Clock

	lis    net.Listener
	srv    *grpc.Server
	rmConn *grpc.ClientConn
	blobs  *blobCache

	// loop is the owner goroutine: it runs st's operations one at a time.
	loop *ownerloop.Loop[ownerEvent, struct{}, struct{}]
	// stopping ends when Run begins to shut down; it bounds RPC work such
	// as fetching a binary.
	stopping     context.Context
	stopStopping context.CancelFunc
	started      atomic.Bool
	closeOnce    sync.Once
	wg           sync.WaitGroup // session, offer and worker goroutines

	st state // REQUIRES: accessed only on the owner goroutine (Run)
}

// New creates a TaskManager: it binds the RPC port and prepares the
// working and log directories. Run starts it; Close releases a TaskManager
// that is never run.
func New(cfg Config) (*TaskManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		hostname = "localhost"
	}
	bindHost, host := Addresses(cfg.Host, cfg.BindHost, hostname)
	tm := &TaskManager{
		cfg:      cfg,
		host:     host,
		hostname: hostname,
		clock:    cfg.Clock,
	}
	tm.loop = ownerloop.New(ownerloop.Config[ownerEvent, struct{}, struct{}]{
		Machine: &owner{tm: tm}, Tick: tickEvent{}, Clock: cfg.Clock,
	})
	tm.stopping, tm.stopStopping = context.WithCancel(context.Background())
	tm.lis, err = listen(bindHost, cfg.RPCPort)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			tm.lis.Close()
			if tm.rmConn != nil {
				tm.rmConn.Close()
			}
		}
	}()
	tm.addr = net.JoinHostPort(tm.host, strconv.Itoa(tm.lis.Addr().(*net.TCPAddr).Port))
	tm.id = cmp.Or(cfg.ID, tm.addr+"-"+strings.ToLower(rand.Text()[:6]))
	tm.resourceID = cmp.Or(cfg.ResourceID, tm.id)
	tm.log = cfg.Logger.With("taskmanager", tm.id)

	workDir := cfg.WorkDir
	if workDir == "" {
		// Removed when the TaskManager stops; one that ends without (kill
		// -9) has its directory removed by the next one to start here.
		if tm.ownWorkDir, err = makeWorkDir(os.TempDir(), tm.log); err != nil {
			return nil, err
		}
		workDir = tm.ownWorkDir.path
		defer func() {
			if !ok {
				tm.ownWorkDir.remove()
			}
		}()
	}
	tm.logDir = cmp.Or(cfg.LogDir, filepath.Join(workDir, "log"))
	tm.workersDir = filepath.Join(workDir, "workers")
	// Worker directories hold the deployment files (a job's -D values and
	// arguments), the blob cache the job binaries: both private to the
	// TaskManager's user, narrowed if an earlier version made them wider.
	// A configured working directory made here is private too; one that
	// exists is left as it is.
	for _, d := range []string{workDir, tm.logDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("taskmanager: %w", err)
		}
	}
	if err := privateDir(tm.workersDir); err != nil {
		return nil, err
	}
	dial := func(addr string) (*grpc.ClientConn, error) { return grpc.NewClient(addr, cfg.DialOptions...) }
	if tm.blobs, err = newBlobCache(filepath.Join(workDir, "blobs"), dial); err != nil {
		return nil, err
	}
	if tm.rmConn, err = dial(cfg.ResourceManagerAddress); err != nil {
		return nil, fmt.Errorf("taskmanager: ResourceManager %s: %w", cfg.ResourceManagerAddress, err)
	}
	tm.srv = grpc.NewServer(slices.Concat(cfg.Security.ServerOptions(), cfg.ServerOptions, []grpc.ServerOption{grpc.WaitForHandlers(true)})...)
	clusterpb.RegisterTaskManagerServer(tm.srv, tm)
	tm.st = state{
		offers:  newSlotOffers(cfg.Slots),
		link:    newRMLink(cfg),
		workers: make(map[workerKey]*worker),
	}
	ok = true
	return tm, nil
}

// listen binds the first free port of spec on host.
func listen(host, spec string) (net.Listener, error) {
	ports, err := conf.Ports(spec)
	if err != nil {
		return nil, fmt.Errorf("taskmanager: taskmanager.rpc.port: %w", err)
	}
	var last error
	for _, p := range ports {
		lis, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return lis, nil
		}
		last = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("taskmanager: bind the RPC endpoint on %q (taskmanager.bind-host) port %s (taskmanager.rpc.port): %w", host, spec, last)
}

// ID returns the TaskManager's id.
func (tm *TaskManager) ID() string { return tm.id }

// Address returns the advertised gRPC address (host:port).
func (tm *TaskManager) Address() string { return tm.addr }

// LogDir returns the directory of the workers' stdout and stderr files.
func (tm *TaskManager) LogDir() string { return tm.logDir }

// Close releases a TaskManager that was never run. After Run it does
// nothing: Run releases everything itself.
func (tm *TaskManager) Close() error {
	if tm.started.Load() {
		return nil
	}
	var err error
	tm.closeOnce.Do(func() {
		tm.stopStopping()
		err = errors.Join(tm.lis.Close(), tm.rmConn.Close(), tm.removeWorkDir())
	})
	return err
}

// removeWorkDir removes the working directory if the TaskManager made it.
func (tm *TaskManager) removeWorkDir() error {
	if tm.ownWorkDir == nil {
		return nil
	}
	return tm.ownWorkDir.remove()
}

// Run serves RPCs and keeps the ResourceManager session until ctx ends.
// Then it ends the session, stops its workers (SIGTERM, SIGKILL after
// StopGrace) and waits for them. Run may be called once.
func (tm *TaskManager) Run(ctx context.Context) error {
	if !tm.started.CompareAndSwap(false, true) {
		return errors.New("taskmanager: Run called twice")
	}
	tm.wg.Go(func() {
		if err := tm.srv.Serve(tm.lis); err != nil {
			tm.loop.Post(shutdownEvent{reason: "the TaskManager's RPC server failed", err: fmt.Errorf("taskmanager: serve: %w", err)})
		}
	})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-ctx.Done():
			tm.loop.Post(shutdownEvent{reason: "the TaskManager is shutting down"})
		case <-tm.loop.Done():
		}
	})
	tm.log.Info("TaskManager started", "address", tm.addr, "resource", tm.resourceID, "slots", len(tm.st.offers.slots),
		"resourcemanager", tm.cfg.ResourceManagerAddress, "logdir", tm.logDir,
		"authentication", tm.cfg.Security.Describe())
	tm.loop.Post(opEvent(func() {})) // the first step connects
	// The loop ends when a shutdown has stopped every worker.
	err := tm.loop.Run(context.Background())
	watch.Wait()
	tm.stopStopping()
	tm.srv.Stop()
	tm.wg.Wait()
	tm.rmConn.Close()
	if rerr := tm.removeWorkDir(); rerr != nil {
		tm.log.Warn("TaskManager stopped; its working directory remains", "err", rerr)
	}
	tm.log.Info("TaskManager stopped")
	return err
}

// ownerEvent is what the owner goroutine runs: an operation of the
// TaskManager (opEvent), its deadline (tickEvent), or a shutdown.
type ownerEvent interface{ isOwnerEvent() }

// opEvent runs on the owner goroutine, with st to itself.
type opEvent func()

// tickEvent: the owner's deadline (nextDeadline) has come.
type tickEvent struct{}

// shutdownEvent begins the TaskManager's shutdown, for reason; err, if
// set, is what Run returns.
type shutdownEvent struct {
	reason string
	err    error
}

func (opEvent) isOwnerEvent()       {}
func (tickEvent) isOwnerEvent()     {}
func (shutdownEvent) isOwnerEvent() {}

// owner runs the TaskManager's state on its ownerloop. The decisions about
// sessions are rmLink's and about slots slotOffers'; workers are managed
// in place.
type owner struct {
	tm     *TaskManager
	runErr error
}

// Step implements ownerloop.Machine. After each event it stops the loop
// once a shutdown has no worker left, and otherwise connects to the
// ResourceManager when it is time to.
func (o *owner) Step(now int64, e ownerEvent) ([]struct{}, struct{}) {
	tm := o.tm
	switch e := e.(type) {
	case opEvent:
		e()
	case tickEvent:
		tm.tick(now)
	case shutdownEvent:
		if !tm.st.closing {
			o.runErr = e.err
			tm.shutdown(e.reason)
		}
	default:
		panic(fmt.Sprintf("taskmanager: unknown owner event %T", e))
	}
	if tm.st.closing && len(tm.st.workers) == 0 {
		tm.loop.Stop(o.runErr)
		return nil, struct{}{}
	}
	tm.stepLink(lkConnect{workers: len(tm.st.workers)})
	return nil, struct{}{}
}

// Deadline implements ownerloop.Machine.
func (o *owner) Deadline() (int64, bool) { return o.tm.nextDeadline() }

// shutdown ends the session and stops every worker; the loop ends once
// they have exited.
func (tm *TaskManager) shutdown(reason string) {
	tm.st.closing = true
	tm.stopStopping()
	tm.stepLink(lkShutdown{reason: reason})
	now := tm.clock.NowMillis()
	for _, w := range tm.st.workers {
		tm.stop(w, reason, now)
	}
}

// call runs f on the owner goroutine and waits for it.
func (tm *TaskManager) call(ctx context.Context, f func()) error {
	_, err := tm.loop.Call(ctx, opEvent(f))
	if errors.Is(err, ownerloop.ErrStopped) {
		return withCode(codes.Unavailable, ErrStopped)
	}
	return err
}

// post runs f on the owner goroutine unless the TaskManager has stopped.
func (tm *TaskManager) post(f func()) { tm.loop.Post(opEvent(f)) }

// ---- state, on the owner goroutine ----

type state struct {
	offers  *slotOffers
	link    *rmLink
	workers map[workerKey]*worker
	// sess is the stream of the link's open session, nil when the link
	// is down.
	sess    *session
	hbSeq   int64
	closing bool
}

// session is the transport of one session with the ResourceManager: the
// link decides, the session carries messages.
type session struct {
	gen    uint64
	ctx    context.Context
	cancel context.CancelFunc
	out    chan *clusterpb.TaskManagerMessage
}

// stepLink steps the link with e and carries out its effects.
func (tm *TaskManager) stepLink(e linkEvent) {
	st := &tm.st
	for _, f := range st.link.Step(tm.clock.NowMillis(), e) {
		switch f := f.(type) {
		case lxOpen:
			tm.open(f.gen)
		case lxClose:
			if s := st.sess; s != nil && s.gen == f.gen {
				s.cancel()
				st.sess = nil
			}
		case lxReport:
			tm.report()
		case lxAllocate:
			tm.stepOffers(oeAllocate{f.a})
		case lxFree:
			tm.stepOffers(oeFree{job: f.f.GetJobId(), allocs: f.f.GetAllocationIds(), reason: "taken back by the ResourceManager"})
		case lxSessionLost:
			now := tm.clock.NowMillis()
			for _, w := range st.workers {
				tm.stop(w, "the session with the ResourceManager ended", now)
			}
			tm.stepOffers(oeReset{})
		case lxLog:
			tm.log.Log(context.Background(), f.level, f.msg, f.args...)
		default:
			panic(fmt.Sprintf("taskmanager: unknown link effect %T", f))
		}
	}
}

// open opens session gen: it queues Register and starts the stream.
func (tm *TaskManager) open(gen uint64) {
	st := &tm.st
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{gen: gen, ctx: ctx, cancel: cancel, out: make(chan *clusterpb.TaskManagerMessage, sessionQueue)}
	n := len(st.offers.slots)
	cores, mem := tm.cfg.CPUCores/float64(n), tm.cfg.MemoryBytes/int64(n)
	s.out <- &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
		TaskManagerId: tm.id, Address: tm.addr, Hostname: tm.hostname, Slots: int32(n),
		SlotProfile: &clusterpb.ResourceProfile{CpuCores: cores, MemoryBytes: mem},
		Pid:         int64(os.Getpid()), ResourceId: tm.resourceID,
		DataPort: registeredDataPort(tm.cfg.DataPort), Hardware: tm.cfg.Hardware().Proto(),
	}}}
	st.sess = s
	tm.wg.Go(func() { tm.runSession(s) })
}

// registeredDataPort is the data port a TaskManager registers with (GET
// /taskmanagers shows it): the first port of taskmanager.data.port's
// specification, which its first worker binds; 0 when that port is any
// free one (or the specification is invalid, which Validate reports).
func registeredDataPort(spec string) int32 {
	ports, err := conf.Ports(spec)
	if err != nil || len(ports) == 0 {
		return 0
	}
	return int32(ports[0])
}

// runSession opens the stream, sends what the owner queues and forwards
// what arrives, until the stream ends or the owner cancels the session.
func (tm *TaskManager) runSession(s *session) {
	stream, err := clusterpb.NewResourceManagerClient(tm.rmConn).Connect(s.ctx)
	if err != nil {
		tm.post(func() { tm.stepLink(lkEnded{gen: s.gen, err: err}) })
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait() // the sender ends when the owner cancels s.ctx
	wg.Go(func() {
		for {
			select {
			case m := <-s.out:
				if err := stream.Send(m); err != nil {
					return // Recv fails as well
				}
			case <-s.ctx.Done():
				return
			}
		}
	})
	for {
		m, err := stream.Recv()
		if err != nil {
			tm.post(func() { tm.stepLink(lkEnded{gen: s.gen, err: err}) })
			return
		}
		tm.post(func() { tm.stepLink(lkMessage{gen: s.gen, m: m}) })
	}
}

// report sends the slot report, the state of the TaskManager's Kerberos
// login and its machine's hardware (free memory) to the ResourceManager.
func (tm *TaskManager) report() {
	st := &tm.st
	s := st.sess
	if s == nil || !st.link.registered() {
		return
	}
	st.hbSeq++
	hb := &clusterpb.Heartbeat{Seq: st.hbSeq, Slots: make([]*clusterpb.SlotStatus, len(st.offers.slots))}
	for i, sl := range st.offers.slots {
		hb.Slots[i] = &clusterpb.SlotStatus{Index: int32(i), AllocationId: sl.allocationID, JobId: sl.jobID}
	}
	if f := tm.cfg.KerberosStatus; f != nil {
		hb.Kerberos = loginwire.Message(f())
	}
	hb.Hardware = tm.cfg.Hardware().Proto()
	select {
	case s.out <- &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: hb}}:
		tm.stepLink(lkReported{ok: true})
	default:
		tm.stepLink(lkReported{ok: false})
	}
}

func (tm *TaskManager) tick(now int64) {
	st := &tm.st
	tm.stepLink(lkTick{})
	for _, w := range st.workers {
		if w.phase == workerStopping && !w.killed && now >= w.killAt {
			w.killed = true
			w.log.Warn("worker did not exit in time after SIGTERM; killing it", "grace", tm.cfg.StopGrace)
			signalGroup(w.cmd.Process, syscall.SIGKILL)
		}
	}
}

func (tm *TaskManager) nextDeadline() (int64, bool) {
	st := &tm.st
	var next int64
	ok := false
	at := func(t int64) {
		if !ok || t < next {
			next, ok = t, true
		}
	}
	if d, has := st.link.Deadline(len(st.workers)); has {
		at(d)
	}
	for _, w := range st.workers {
		if w.phase == workerStopping && !w.killed {
			at(w.killAt)
		}
	}
	return next, ok
}

// ---- slots ----

// stepOffers steps the slot offers with e and carries out their effects.
func (tm *TaskManager) stepOffers(e offerEvent) {
	fx, _ := tm.st.offers.Step(tm.clock.NowMillis(), e)
	for _, f := range fx {
		switch f := f.(type) {
		case ofReport:
			tm.report()
		case ofOffer:
			tm.sendOffer(f)
		case ofStopWorkers:
			now := tm.clock.NowMillis()
			for _, w := range tm.st.workers {
				if w.key.job == f.job && slices.Contains(w.allocs, f.alloc) {
					tm.stop(w, "its slot was freed", now)
				}
			}
		case ofLog:
			tm.log.Log(context.Background(), f.level, f.msg, f.args...)
		default:
			panic(fmt.Sprintf("taskmanager: unknown offer effect %T", f))
		}
	}
}

// sendOffer offers slots to a JobMaster on a goroutine of the session and
// reports the outcome to the owner. A session that ended while the effects
// were carried out has freed the slots already.
func (tm *TaskManager) sendOffer(f ofOffer) {
	s := tm.st.sess
	if s == nil || !tm.st.link.registered() {
		return
	}
	offer := &clusterpb.SlotOffer{JobId: f.job, TaskManagerId: tm.id, TaskManagerAddress: tm.addr, Hostname: tm.hostname, Slots: f.slots}
	allocs := make([]string, len(f.slots))
	for i, sl := range f.slots {
		allocs[i] = sl.GetAllocationId()
	}
	timeout := tm.st.link.hb.Timeout()
	tm.wg.Go(func() {
		accepted, err := tm.offer(s.ctx, f.jobMaster, offer, time.Duration(timeout)*time.Millisecond)
		tm.post(func() {
			if tm.st.sess != s {
				return // the session ended: the slots are free already
			}
			tm.stepOffers(oeOfferDone{job: f.job, jobMaster: f.jobMaster, allocs: allocs, accepted: accepted, err: err})
		})
	})
}

// offer calls JobMaster.OfferSlots, trying three times.
func (tm *TaskManager) offer(ctx context.Context, addr string, offer *clusterpb.SlotOffer, timeout time.Duration) ([]string, error) {
	conn, err := grpc.NewClient(addr, tm.cfg.DialOptions...)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	client := clusterpb.NewJobMasterClient(conn)
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		octx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := client.OfferSlots(octx, offer)
		cancel()
		if err == nil {
			return resp.GetAccepted(), nil
		}
		if attempt == 3 || ctx.Err() != nil {
			return nil, err
		}
		wake, stop := tm.clock.AfterMillis(tm.clock.NowMillis() + backoff.Milliseconds())
		select {
		case <-wake:
		case <-ctx.Done():
			stop()
			return nil, err
		}
		backoff *= 2
	}
}

// ---- workers ----

type workerKey struct {
	job     string
	attempt int32
	id      string
}

type workerPhase int

const (
	workerStarting workerPhase = iota // reserved; fetching the binary
	workerRunning
	workerStopping // SIGTERM sent
)

type worker struct {
	key       workerKey
	allocs    []string
	phase     workerPhase
	cancelled string // why it was stopped while starting
	// cancelStart cancels the fetch of the binary while starting.
	cancelStart context.CancelFunc
	cmd         *exec.Cmd
	stopReason  string
	killAt      int64
	killed      bool
	exited      chan struct{} // closed when it has exited or never started
	stderr      string
	log         *slog.Logger
}

func (tm *TaskManager) stop(w *worker, reason string, now int64) {
	switch w.phase {
	case workerStarting:
		if w.cancelled == "" {
			w.cancelled = reason
			w.cancelStart()
		}
	case workerRunning:
		w.phase, w.stopReason, w.killAt = workerStopping, reason, now+tm.cfg.StopGrace.Milliseconds()
		w.log.Info("stopping worker", "reason", reason)
		signalGroup(w.cmd.Process, syscall.SIGTERM)
		// A stopped worker (SIGSTOP, the JobMaster gave it up for
		// silence) takes SIGTERM only once it runs again: at once, not
		// at the SIGKILL after the grace.
		signalGroup(w.cmd.Process, syscall.SIGCONT)
	}
}

// signalGroup signals the process group of p (its worker and the processes
// it started), or p alone if the group is gone.
func signalGroup(p *os.Process, sig syscall.Signal) {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		_ = p.Signal(sig)
	}
}

// SubmitTasks implements clusterpb.TaskManagerServer: it starts a worker.
func (tm *TaskManager) SubmitTasks(ctx context.Context, req *clusterpb.SubmitTasksRequest) (*clusterpb.SubmitTasksResponse, error) {
	if err := validateSubmit(req); err != nil {
		return nil, withCode(codes.InvalidArgument, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(tm.stopping, cancel)()
	// Stopping the worker while it starts cancels the fetch.
	ctx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	var w *worker
	var err error
	if cerr := tm.call(ctx, func() { w, err = tm.reserve(req, cancelStart) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	abort := func(err error) error {
		_ = tm.call(context.Background(), func() { tm.unreserve(w) })
		return err
	}
	bin, err := tm.blobs.get(ctx, req.GetJobMasterAddress(), req.GetBinarySha256(), req.GetBinarySize())
	if err != nil {
		var stopped string
		_ = tm.call(context.Background(), func() { stopped = w.cancelled })
		if stopped != "" {
			return nil, abort(withCode(codes.Aborted, fmt.Errorf("%w: %s", ErrWorkerStopped, stopped)))
		}
		w.log.Warn("could not fetch the job binary", "err", err)
		switch {
		case errors.Is(err, ErrBinaryMismatch):
			return nil, abort(withCode(codes.DataLoss, err))
		case status.Code(err) == codes.NotFound:
			return nil, abort(withCode(codes.NotFound, fmt.Errorf("%w: %w", ErrNoBinary, err)))
		}
		return nil, abort(withCode(codes.Unavailable, err))
	}
	dir := filepath.Join(tm.workersDir, req.GetJobId(), strconv.Itoa(int(req.GetAttempt())), req.GetWorkerId())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, abort(withCode(codes.Internal, fmt.Errorf("taskmanager: worker directory: %w", err)))
	}
	configuration := maps.Clone(req.GetConfiguration())
	if configuration == nil {
		configuration = map[string]string{}
	}
	maps.Copy(configuration, tm.cfg.WorkerConfiguration)
	maps.Copy(configuration, tm.cfg.Security.WorkerConfiguration())
	// The deployment goes to the worker's standard input, never to disk:
	// it holds the job's -D values and environment.
	dep, err := deployment.EncodeWorkerDeployment(&deployment.WorkerDeployment{
		Format: deployment.DeploymentFormat, TaskManagerID: tm.id, TaskManagerAddress: tm.addr,
		JobID: req.GetJobId(), Attempt: req.GetAttempt(), WorkerID: req.GetWorkerId(),
		BinarySHA256: req.GetBinarySha256(), BinarySize: req.GetBinarySize(),
		JobMasterAddress: req.GetJobMasterAddress(), AllocationIDs: req.GetAllocationIds(),
		Args: req.GetArgs(), Env: req.GetEnv(), Configuration: configuration,
		DataHost: tm.host, DataPorts: tm.cfg.DataPort,
	})
	if err != nil {
		return nil, abort(withCode(codes.Internal, err))
	}
	if cerr := tm.call(context.Background(), func() { err = tm.start(w, bin, dir, dep, req) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return &clusterpb.SubmitTasksResponse{}, nil
}

// validName accepts ids used in file names: letters, digits, '.', '_' and
// '-', not "." or "..".
func validName(s string) bool {
	if s == "" || len(s) > 200 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateSubmit(r *clusterpb.SubmitTasksRequest) error {
	var problems []string
	if !validName(r.GetJobId()) {
		problems = append(problems, fmt.Sprintf("job_id %q: must be letters, digits, '.', '_' or '-'", r.GetJobId()))
	}
	if !validName(r.GetWorkerId()) {
		problems = append(problems, fmt.Sprintf("worker_id %q: must be letters, digits, '.', '_' or '-'", r.GetWorkerId()))
	}
	if r.GetAttempt() < 0 {
		problems = append(problems, fmt.Sprintf("attempt %d is negative", r.GetAttempt()))
	}
	if d := r.GetBinarySha256(); len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		problems = append(problems, fmt.Sprintf("binary_sha256 %q: must be 64 lower-case hex digits", d))
	}
	if r.GetBinarySize() <= 0 {
		problems = append(problems, fmt.Sprintf("binary_size %d: must be positive", r.GetBinarySize()))
	}
	if _, _, err := net.SplitHostPort(r.GetJobMasterAddress()); err != nil {
		problems = append(problems, fmt.Sprintf("job_master_address %q is not host:port", r.GetJobMasterAddress()))
	}
	if len(r.GetAllocationIds()) == 0 {
		problems = append(problems, "allocation_ids is empty")
	}
	for i, a := range r.GetAllocationIds() {
		if a == "" || slices.Contains(r.GetAllocationIds()[:i], a) {
			problems = append(problems, fmt.Sprintf("allocation_ids[%d] %q is empty or repeated", i, a))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.GetEnv())) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(r.GetEnv()[k], 0) {
			problems = append(problems, fmt.Sprintf("env %q: names must be non-empty without '=' or NUL, values without NUL", k))
		}
	}
	for i, a := range r.GetArgs() {
		if strings.ContainsRune(a, 0) {
			problems = append(problems, fmt.Sprintf("args[%d] contains NUL", i))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: SubmitTasks for job %q worker %q: %s", ErrInvalidRequest, r.GetJobId(), r.GetWorkerId(), strings.Join(problems, "; "))
}

// checkHeld reports the first allocation that job does not hold here.
func (tm *TaskManager) checkHeld(job string, allocs []string) error {
	if a, ok := tm.st.offers.notHeld(job, allocs); ok {
		return withCode(codes.FailedPrecondition, fmt.Errorf("%w: allocation %q is not a slot of job %q on TaskManager %s", ErrSlotNotHeld, a, job, tm.id))
	}
	return nil
}

func (tm *TaskManager) reserve(r *clusterpb.SubmitTasksRequest, cancelStart context.CancelFunc) (*worker, error) {
	st := &tm.st
	if st.closing {
		return nil, withCode(codes.Unavailable, ErrStopped)
	}
	if !st.link.registered() {
		return nil, withCode(codes.FailedPrecondition, ErrNotRegistered)
	}
	key := workerKey{r.GetJobId(), r.GetAttempt(), r.GetWorkerId()}
	if _, dup := st.workers[key]; dup {
		return nil, withCode(codes.AlreadyExists, fmt.Errorf("%w: job %s attempt %d worker %s", ErrWorkerExists, key.job, key.attempt, key.id))
	}
	if err := tm.checkHeld(key.job, r.GetAllocationIds()); err != nil {
		return nil, err
	}
	w := &worker{key: key, allocs: slices.Clone(r.GetAllocationIds()), exited: make(chan struct{}), cancelStart: cancelStart,
		log: tm.log.With("job", key.job, "attempt", key.attempt, "worker", key.id)}
	st.workers[key] = w
	return w, nil
}

func (tm *TaskManager) unreserve(w *worker) {
	if tm.st.workers[w.key] == w && w.phase == workerStarting {
		delete(tm.st.workers, w.key)
		close(w.exited)
	}
}

func (tm *TaskManager) start(w *worker, bin, dir string, dep []byte, r *clusterpb.SubmitTasksRequest) error {
	if w.cancelled != "" {
		tm.unreserve(w)
		return withCode(codes.Aborted, fmt.Errorf("%w: %s", ErrWorkerStopped, w.cancelled))
	}
	if err := tm.checkHeld(w.key.job, w.allocs); err != nil {
		tm.unreserve(w)
		return err
	}
	name := fmt.Sprintf("%s-%d-%s", w.key.job, w.key.attempt, w.key.id)
	stdoutPath, stderrPath := filepath.Join(tm.logDir, name+".out"), filepath.Join(tm.logDir, name+".err")
	stdout, err := os.OpenFile(stdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tm.unreserve(w)
		return withCode(codes.Internal, fmt.Errorf("taskmanager: worker stdout: %w", err))
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tm.unreserve(w)
		return withCode(codes.Internal, fmt.Errorf("taskmanager: worker stderr: %w", err))
	}
	defer stderr.Close()

	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(r.GetEnv())) {
		env = append(env, k+"="+r.GetEnv()[k])
	}
	env = append(env, conf.EnvExecutionTarget+"="+conf.BinaryModeWorker, conf.EnvWorkerDeployment+"="+deployment.Stdin)
	var cmd *exec.Cmd
	for attempt := 0; ; attempt++ {
		// The program's arguments are in the deployment (the worker's
		// start-up puts them in os.Args): a command line is public.
		cmd = exec.Command(bin)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
		cmd.Stdin = bytes.NewReader(dep) // copied by exec, ended by Wait
		cmd.SysProcAttr = workerAttr()
		err = cmd.Start()
		// A binary just written may be "busy" while a concurrently forked
		// child still holds its write descriptor; that passes at once.
		if !errors.Is(err, syscall.ETXTBSY) || attempt == 5 {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	if err != nil {
		tm.unreserve(w)
		w.log.Warn("could not start worker", "binary", bin, "err", err)
		return withCode(codes.Internal, fmt.Errorf("taskmanager: start worker %s of job %s: %w", w.key.id, w.key.job, err))
	}
	w.cmd, w.phase, w.stderr = cmd, workerRunning, stderrPath
	w.log = w.log.With("pid", cmd.Process.Pid)
	w.log.Info("worker started", "binary", bin, "dir", dir, "stdout", stdoutPath, "stderr", stderrPath,
		"allocations", w.allocs)
	tm.wg.Go(func() {
		err := cmd.Wait()
		tm.post(func() { tm.exited(w, err) })
	})
	return nil
}

func (tm *TaskManager) exited(w *worker, err error) {
	if tm.st.workers[w.key] == w {
		delete(tm.st.workers, w.key)
	}
	close(w.exited)
	// Processes the worker started and left behind go with it.
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	state := w.cmd.ProcessState
	if w.phase == workerStopping {
		w.log.Info("worker stopped", "reason", w.stopReason, "status", state.String())
		return
	}
	status := "exit status 0"
	switch {
	case state != nil:
		status = state.String()
	case err != nil:
		status = err.Error()
	}
	stderrTail := tail(w.stderr, stderrTailBytes, stderrTailLines)
	if err == nil {
		w.log.Info("worker finished")
	} else {
		w.log.Warn("worker failed", "status", status, "stderr_tail", stderrTail)
	}
	tm.reportExit(w, status, stderrTail)
}

// The tail of a worker's stderr that a WorkerExited report carries.
const (
	stderrTailBytes = 4096
	stderrTailLines = 20
)

// reportExit tells the ResourceManager (and so the worker's JobMaster)
// that a worker exited without being asked to stop, so that its JobMaster
// fails the deployment or the tasks at once, with the cause. Without a
// registered session there is no one to tell: the session's end stops the
// workers, and the JobMaster loses the TaskManager.
func (tm *TaskManager) reportExit(w *worker, status, stderrTail string) {
	s := tm.st.sess
	if s == nil || !tm.st.link.registered() {
		return
	}
	m := &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_WorkerExited{WorkerExited: &clusterpb.WorkerExited{
		JobId: w.key.job, Attempt: w.key.attempt, WorkerId: w.key.id, Status: status, StderrTail: stderrTail,
	}}}
	select {
	case s.out <- m:
	default:
		w.log.Warn("could not report the worker's exit: the queue to the ResourceManager is full")
	}
}

// tail returns the last lines of a file, at most max bytes and lines.
func tail(path string, maxBytes int64, maxLines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, fi.Size()-maxBytes)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // a partial first line
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// CancelJob implements clusterpb.TaskManagerServer: it stops the job's
// workers of attempts up to up_to_attempt (-1: all) and returns once they
// have exited.
func (tm *TaskManager) CancelJob(ctx context.Context, req *clusterpb.CancelJobRequest) (*clusterpb.CancelJobResponse, error) {
	if req.GetJobId() == "" || req.GetUpToAttempt() < -1 {
		return nil, withCode(codes.InvalidArgument, fmt.Errorf("%w: CancelJob needs a job_id and up_to_attempt of -1 or more, got %q and %d",
			ErrInvalidRequest, req.GetJobId(), req.GetUpToAttempt()))
	}
	var waits []chan struct{}
	err := tm.call(ctx, func() {
		now := tm.clock.NowMillis()
		for _, w := range tm.st.workers {
			if w.key.job == req.GetJobId() && (req.GetUpToAttempt() < 0 || w.key.attempt <= req.GetUpToAttempt()) {
				tm.stop(w, "cancelled by the JobMaster", now)
				waits = append(waits, w.exited)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &clusterpb.CancelJobResponse{}, nil
}

// FreeSlots implements clusterpb.TaskManagerServer: it frees slots of a job
// (all of them when allocation_ids is empty), stopping workers running in
// them, and reports them free to the ResourceManager. Unknown allocations
// are ignored.
func (tm *TaskManager) FreeSlots(ctx context.Context, req *clusterpb.FreeSlotsRequest) (*clusterpb.FreeSlotsResponse, error) {
	if req.GetJobId() == "" {
		return nil, withCode(codes.InvalidArgument, fmt.Errorf("%w: FreeSlots without job_id", ErrInvalidRequest))
	}
	if err := tm.call(ctx, func() {
		tm.stepOffers(oeFree{job: req.GetJobId(), allocs: req.GetAllocationIds(), reason: "freed by the JobMaster"})
	}); err != nil {
		return nil, err
	}
	return &clusterpb.FreeSlotsResponse{}, nil
}

// ---- snapshot ----

// SlotInfo is one slot in a Snapshot.
type SlotInfo struct {
	Index        int
	JobID        string // empty when free
	AllocationID string
	// State is free, queued (to be offered), offered or active (accepted
	// by the JobMaster).
	State string
}

// WorkerInfo is one worker in a Snapshot.
type WorkerInfo struct {
	JobID         string
	Attempt       int32
	WorkerID      string
	PID           int // 0 while starting
	AllocationIDs []string
	// State is starting, running or stopping.
	State string
}

// Snapshot is the state of a TaskManager.
type Snapshot struct {
	// Registered tells whether a ResourceManager session is established,
	// with ResourceManagerID.
	Registered        bool
	ResourceManagerID string
	Slots             []SlotInfo
	Workers           []WorkerInfo // sorted by job, attempt, worker
}

// Snapshot returns the TaskManager's slots and workers.
func (tm *TaskManager) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	err := tm.call(ctx, func() {
		st := &tm.st
		if st.link.registered() {
			s.Registered, s.ResourceManagerID = true, st.link.rmID
		}
		for i, sl := range st.offers.slots {
			s.Slots = append(s.Slots, SlotInfo{Index: i, JobID: sl.jobID, AllocationID: sl.allocationID, State: sl.phase.String()})
		}
		for _, w := range st.workers {
			in := WorkerInfo{JobID: w.key.job, Attempt: w.key.attempt, WorkerID: w.key.id, AllocationIDs: slices.Clone(w.allocs),
				State: [...]string{"starting", "running", "stopping"}[w.phase]}
			if w.cmd != nil {
				in.PID = w.cmd.Process.Pid
			}
			s.Workers = append(s.Workers, in)
		}
		slices.SortFunc(s.Workers, func(a, b WorkerInfo) int {
			return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.WorkerID, b.WorkerID))
		})
	})
	return s, err
}
