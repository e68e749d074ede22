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
// All state lives in one owner goroutine, Run. Workers are children in a
// process group of their own that the kernel kills with the TaskManager
// (Linux); CancelJob and a lost session stop them with SIGTERM, then
// SIGKILL after a grace period. Their stdout and stderr go to files in the
// log directory named after job, attempt and worker; a worker that fails is
// logged with the tail of its stderr.
package taskmanager

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
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
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/scheduler"
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

// rmPeer names the ResourceManager in the heartbeat tracker.
const rmPeer = "resourcemanager"

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

	ops  chan func()
	done chan struct{}
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
	tm := &TaskManager{
		cfg:      cfg,
		host:     cmp.Or(cfg.Host, hostname),
		hostname: hostname,
		clock:    cfg.Clock,
		ops:      make(chan func()),
		done:     make(chan struct{}),
	}
	tm.stopping, tm.stopStopping = context.WithCancel(context.Background())
	tm.lis, err = listen(cfg.Host, cfg.RPCPort)
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
		if workDir, err = os.MkdirTemp("", "sluice-taskmanager-"); err != nil {
			return nil, fmt.Errorf("taskmanager: working directory: %w", err)
		}
	}
	tm.logDir = cmp.Or(cfg.LogDir, filepath.Join(workDir, "log"))
	tm.workersDir = filepath.Join(workDir, "workers")
	for _, d := range []string{workDir, tm.logDir, tm.workersDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("taskmanager: %w", err)
		}
	}
	dial := func(addr string) (*grpc.ClientConn, error) { return grpc.NewClient(addr, cfg.DialOptions...) }
	if tm.blobs, err = newBlobCache(filepath.Join(workDir, "blobs"), dial); err != nil {
		return nil, err
	}
	if tm.rmConn, err = dial(cfg.ResourceManagerAddress); err != nil {
		return nil, fmt.Errorf("taskmanager: ResourceManager %s: %w", cfg.ResourceManagerAddress, err)
	}
	tm.srv = grpc.NewServer(append(slices.Clone(cfg.ServerOptions), grpc.WaitForHandlers(true))...)
	clusterpb.RegisterTaskManagerServer(tm.srv, tm)
	tm.st = state{
		slots:    make([]slotState, cfg.Slots),
		workers:  make(map[workerKey]*worker),
		offering: make(map[string]bool),
		backoff:  cfg.ReconnectBackoff,
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
	return nil, fmt.Errorf("taskmanager: bind the RPC endpoint on %q port %s: %w", host, spec, last)
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
		err = errors.Join(tm.lis.Close(), tm.rmConn.Close())
	})
	return err
}

// Run serves RPCs and keeps the ResourceManager session until ctx ends.
// Then it ends the session, stops its workers (SIGTERM, SIGKILL after
// StopGrace) and waits for them. Run may be called once.
func (tm *TaskManager) Run(ctx context.Context) error {
	if !tm.started.CompareAndSwap(false, true) {
		return errors.New("taskmanager: Run called twice")
	}
	serveDone := make(chan error, 1)
	tm.wg.Go(func() { serveDone <- tm.srv.Serve(tm.lis) })
	tm.log.Info("TaskManager started", "address", tm.addr, "resource", tm.resourceID, "slots", len(tm.st.slots),
		"resourcemanager", tm.cfg.ResourceManagerAddress, "logdir", tm.logDir)
	err := tm.loop(ctx, serveDone)
	tm.stopStopping()
	close(tm.done)
	tm.srv.Stop()
	tm.wg.Wait()
	tm.rmConn.Close()
	tm.log.Info("TaskManager stopped")
	return err
}

func (tm *TaskManager) loop(ctx context.Context, serveDone <-chan error) error {
	var (
		timer   <-chan struct{}
		stop    = func() {}
		armedAt int64
		runErr  error
		ctxDone = ctx.Done()
	)
	defer func() { stop() }()
	shutdown := func(reason string) {
		tm.st.closing = true
		ctxDone = nil
		tm.stopStopping()
		now := tm.clock.NowMillis()
		tm.endSession(reason, now)
		for _, w := range tm.st.workers {
			tm.stop(w, reason, now)
		}
	}
	for {
		if tm.st.closing && len(tm.st.workers) == 0 {
			return runErr
		}
		tm.maybeConnect(tm.clock.NowMillis())
		if next, ok := tm.nextDeadline(); ok {
			if timer == nil || next != armedAt {
				stop()
				timer, stop = tm.clock.AfterMillis(next)
				armedAt = next
			}
		} else if timer != nil {
			stop()
			timer, stop = nil, func() {}
		}
		select {
		case <-ctxDone:
			shutdown("the TaskManager is shutting down")
		case err := <-serveDone:
			if err != nil && !tm.st.closing {
				runErr = fmt.Errorf("taskmanager: serve: %w", err)
				shutdown("the TaskManager's RPC server failed")
			}
			serveDone = nil
		case f := <-tm.ops:
			f()
		case <-timer:
			timer, stop = nil, func() {}
			tm.tick(tm.clock.NowMillis())
		}
	}
}

// call runs f on the owner goroutine and waits for it.
func (tm *TaskManager) call(ctx context.Context, f func()) error {
	ran := make(chan struct{})
	select {
	case tm.ops <- func() { f(); close(ran) }:
	case <-tm.done:
		return withCode(codes.Unavailable, ErrStopped)
	case <-ctx.Done():
		return ctx.Err()
	}
	<-ran
	return nil
}

// post runs f on the owner goroutine unless the TaskManager has stopped.
func (tm *TaskManager) post(f func()) {
	select {
	case tm.ops <- f:
	case <-tm.done:
	}
}

// ---- state, on the owner goroutine ----

type state struct {
	slots    []slotState
	workers  map[workerKey]*worker
	offering map[string]bool // jobs with an offer in flight
	sess     *session
	gen      uint64
	hbSeq    int64
	// reconnectAt is when to connect again; backoff the wait after the
	// next failure.
	reconnectAt int64
	backoff     time.Duration
	closing     bool
}

type slotPhase int

const (
	slotFree    slotPhase = iota
	slotQueued            // assigned, to be offered
	slotOffered           // offer in flight
	slotActive            // accepted by the JobMaster
)

var slotPhaseNames = [...]string{"free", "queued", "offered", "active"}

func (p slotPhase) String() string { return slotPhaseNames[p] }

type slotState struct {
	jobID, allocationID, jobMaster string
	phase                          slotPhase
}

type session struct {
	gen        uint64
	ctx        context.Context
	cancel     context.CancelFunc
	out        chan *clusterpb.TaskManagerMessage
	openedAt   int64
	registered bool
	rmID       string
	interval   int64 // ms
	hb         *scheduler.Heartbeats
	nextBeat   int64
	disconnect string // reason the ResourceManager gave, if any
}

func (tm *TaskManager) maybeConnect(now int64) {
	st := &tm.st
	if st.closing || st.sess != nil || len(st.workers) > 0 || now < st.reconnectAt {
		return
	}
	st.gen++
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{gen: st.gen, ctx: ctx, cancel: cancel, out: make(chan *clusterpb.TaskManagerMessage, sessionQueue), openedAt: now}
	cores, mem := tm.cfg.CPUCores/float64(len(st.slots)), tm.cfg.MemoryBytes/int64(len(st.slots))
	s.out <- &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Register{Register: &clusterpb.Register{
		TaskManagerId: tm.id, Address: tm.addr, Hostname: tm.hostname, Slots: int32(len(st.slots)),
		SlotProfile: &clusterpb.ResourceProfile{CpuCores: cores, MemoryBytes: mem},
		Pid:         int64(os.Getpid()), ResourceId: tm.resourceID,
		DataPort: registeredDataPort(tm.cfg.DataPort), Hardware: tm.cfg.Hardware().Proto(),
	}}}
	st.sess = s
	tm.log.Debug("connecting to the ResourceManager", "address", tm.cfg.ResourceManagerAddress, "session", s.gen)
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
		tm.post(func() { tm.sessionEnded(s, err) })
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
			tm.post(func() { tm.sessionEnded(s, err) })
			return
		}
		tm.post(func() { tm.onMessage(s, m) })
	}
}

func (tm *TaskManager) onMessage(s *session, m *clusterpb.ResourceManagerMessage) {
	st := &tm.st
	if st.sess != s {
		return
	}
	now := tm.clock.NowMillis()
	if !s.registered {
		r := m.GetRegistered()
		if r == nil {
			tm.endSession(fmt.Sprintf("the ResourceManager answered Register with %T instead of Registered", m.GetMsg()), now)
			return
		}
		s.registered, s.rmID = true, r.GetResourceManagerId()
		s.interval = r.GetHeartbeatIntervalMs()
		if s.interval <= 0 {
			s.interval = conf.HeartbeatInterval.Default().Milliseconds()
		}
		timeout := r.GetHeartbeatTimeoutMs()
		if timeout <= 0 {
			timeout = tm.cfg.HeartbeatTimeout.Milliseconds()
		}
		s.hb = scheduler.NewHeartbeats(timeout)
		s.hb.Seen(rmPeer, now)
		st.backoff = tm.cfg.ReconnectBackoff
		tm.log.Info("registered at the ResourceManager", "resourcemanager", s.rmID,
			"heartbeat_interval", time.Duration(s.interval)*time.Millisecond, "heartbeat_timeout", time.Duration(timeout)*time.Millisecond)
		tm.report()
		return
	}
	s.hb.Seen(rmPeer, now)
	switch msg := m.GetMsg().(type) {
	case *clusterpb.ResourceManagerMessage_Heartbeat:
	case *clusterpb.ResourceManagerMessage_AllocateSlot:
		tm.allocate(msg.AllocateSlot)
	case *clusterpb.ResourceManagerMessage_FreeSlots:
		tm.freeSlots(msg.FreeSlots.GetJobId(), msg.FreeSlots.GetAllocationIds(), "taken back by the ResourceManager", now)
	case *clusterpb.ResourceManagerMessage_Disconnect:
		s.disconnect = msg.Disconnect.GetReason()
		tm.log.Warn("the ResourceManager ends the session", "reason", s.disconnect)
	default:
		tm.log.Warn("unexpected message from the ResourceManager; ignored", "type", fmt.Sprintf("%T", m.GetMsg()))
	}
}

func (tm *TaskManager) sessionEnded(s *session, err error) {
	if tm.st.sess != s {
		return
	}
	reason := s.disconnect
	if reason == "" {
		reason = err.Error()
		if errors.Is(err, io.EOF) {
			reason = "the ResourceManager closed the session"
		}
	}
	tm.endSession(reason, tm.clock.NowMillis())
}

// endSession drops the session: its workers are stopped and its slots
// freed, and a new session is opened after the backoff once no worker is
// left.
func (tm *TaskManager) endSession(reason string, now int64) {
	st := &tm.st
	s := st.sess
	if s == nil {
		return
	}
	s.cancel()
	st.sess = nil
	if s.registered {
		tm.log.Warn("session with the ResourceManager ended; stopping workers and freeing slots", "reason", reason)
	} else if !st.closing {
		tm.log.Warn("could not register at the ResourceManager", "address", tm.cfg.ResourceManagerAddress,
			"reason", reason, "retry_in", st.backoff)
	}
	for _, w := range st.workers {
		tm.stop(w, "the session with the ResourceManager ended", now)
	}
	for i := range st.slots {
		st.slots[i] = slotState{}
	}
	clear(st.offering)
	st.reconnectAt = now + st.backoff.Milliseconds()
	st.backoff = min(2*st.backoff, tm.cfg.ReconnectBackoffMax)
}

// report sends the slot report, the state of the TaskManager's Kerberos
// login and its machine's hardware (free memory) to the ResourceManager.
func (tm *TaskManager) report() {
	st := &tm.st
	s := st.sess
	if s == nil || !s.registered {
		return
	}
	st.hbSeq++
	hb := &clusterpb.Heartbeat{Seq: st.hbSeq, Slots: make([]*clusterpb.SlotStatus, len(st.slots))}
	for i, sl := range st.slots {
		hb.Slots[i] = &clusterpb.SlotStatus{Index: int32(i), AllocationId: sl.allocationID, JobId: sl.jobID}
	}
	if f := tm.cfg.KerberosStatus; f != nil {
		hb.Kerberos = clusterpb.KerberosStatusOf(f())
	}
	hb.Hardware = tm.cfg.Hardware().Proto()
	select {
	case s.out <- &clusterpb.TaskManagerMessage{Msg: &clusterpb.TaskManagerMessage_Heartbeat{Heartbeat: hb}}:
		s.nextBeat = tm.clock.NowMillis() + s.interval
	default:
		tm.endSession("the ResourceManager does not read its messages", tm.clock.NowMillis())
	}
}

func (tm *TaskManager) tick(now int64) {
	st := &tm.st
	if s := st.sess; s != nil {
		switch {
		case !s.registered && now-s.openedAt >= tm.cfg.HeartbeatTimeout.Milliseconds():
			tm.endSession(fmt.Sprintf("no Registered within %v", tm.cfg.HeartbeatTimeout), now)
		case s.registered && len(s.hb.Expire(now)) > 0:
			tm.endSession(fmt.Sprintf("no heartbeat from the ResourceManager for %v", time.Duration(s.hb.Timeout())*time.Millisecond), now)
		case s.registered && now >= s.nextBeat:
			tm.report()
		}
	}
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
	switch s := st.sess; {
	case s == nil:
		if !st.closing && len(st.workers) == 0 {
			at(st.reconnectAt)
		}
	case !s.registered:
		at(s.openedAt + tm.cfg.HeartbeatTimeout.Milliseconds())
	default:
		at(s.nextBeat)
		if d, has := s.hb.NextDeadline(); has {
			at(d)
		}
	}
	for _, w := range st.workers {
		if w.phase == workerStopping && !w.killed {
			at(w.killAt)
		}
	}
	return next, ok
}

// ---- slots ----

func (tm *TaskManager) slotOf(allocationID string) int {
	for i, s := range tm.st.slots {
		if s.phase != slotFree && s.allocationID == allocationID {
			return i
		}
	}
	return -1
}

func (tm *TaskManager) allocate(a *clusterpb.AllocateSlot) {
	st := &tm.st
	i := int(a.GetIndex())
	switch {
	case i < 0 || i >= len(st.slots):
		tm.log.Warn("AllocateSlot names a slot this TaskManager does not have", "index", i, "slots", len(st.slots))
	case a.GetAllocationId() == "" || a.GetJobId() == "" || a.GetJobMasterAddress() == "":
		tm.log.Warn("AllocateSlot without allocation id, job or JobMaster address; ignored", "index", i,
			"allocation", a.GetAllocationId(), "job", a.GetJobId(), "jobmaster", a.GetJobMasterAddress())
	case st.slots[i].phase != slotFree:
		if st.slots[i].allocationID == a.GetAllocationId() {
			return // a repeat
		}
		tm.log.Warn("AllocateSlot for a slot in use; refused", "index", i, "allocation", a.GetAllocationId(),
			"job", a.GetJobId(), "held_by", st.slots[i].allocationID)
	default:
		st.slots[i] = slotState{jobID: a.GetJobId(), allocationID: a.GetAllocationId(), jobMaster: a.GetJobMasterAddress(), phase: slotQueued}
		tm.log.Info("slot allocated", "index", i, "job", a.GetJobId(), "allocation", a.GetAllocationId(), "jobmaster", a.GetJobMasterAddress())
	}
	tm.report()
	tm.startOffers()
}

// startOffers offers queued slots to their JobMasters, one offer per job
// at a time; slots queued while an offer is in flight go in the next.
func (tm *TaskManager) startOffers() {
	st := &tm.st
	s := st.sess
	if s == nil || !s.registered {
		return
	}
	type group struct{ job, jobMaster string }
	batches := make(map[group][]int)
	for i, sl := range st.slots {
		if sl.phase == slotQueued && !st.offering[sl.jobID] {
			g := group{sl.jobID, sl.jobMaster}
			batches[g] = append(batches[g], i)
		}
	}
	for _, g := range slices.SortedFunc(maps.Keys(batches), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.jobMaster, b.jobMaster))
	}) {
		if st.offering[g.job] {
			continue // another JobMaster address of the same job: next round
		}
		st.offering[g.job] = true
		offer := &clusterpb.SlotOffer{JobId: g.job, TaskManagerId: tm.id, TaskManagerAddress: tm.addr, Hostname: tm.host}
		var allocs []string
		for _, i := range batches[g] {
			st.slots[i].phase = slotOffered
			offer.Slots = append(offer.Slots, &clusterpb.OfferedSlot{Index: int32(i), AllocationId: st.slots[i].allocationID})
			allocs = append(allocs, st.slots[i].allocationID)
		}
		timeout := s.hb.Timeout()
		tm.wg.Go(func() {
			accepted, err := tm.offer(s.ctx, g.jobMaster, offer, time.Duration(timeout)*time.Millisecond)
			tm.post(func() { tm.offerDone(s, g.job, g.jobMaster, allocs, accepted, err) })
		})
	}
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

func (tm *TaskManager) offerDone(s *session, job, jobMaster string, allocs, accepted []string, err error) {
	st := &tm.st
	if st.sess != s {
		return // the session ended: the slots are free already
	}
	delete(st.offering, job)
	var took, declined []string
	for _, a := range allocs {
		i := tm.slotOf(a)
		if i < 0 || st.slots[i].phase != slotOffered {
			continue // freed meanwhile
		}
		if err == nil && slices.Contains(accepted, a) {
			st.slots[i].phase = slotActive
			took = append(took, a)
		} else {
			st.slots[i] = slotState{}
			declined = append(declined, a)
		}
	}
	switch {
	case err != nil:
		tm.log.Warn("offering slots to the JobMaster failed; slots freed", "job", job, "jobmaster", jobMaster, "allocations", declined, "err", err)
	case len(declined) > 0:
		tm.log.Info("JobMaster declined slots; slots freed", "job", job, "allocations", declined, "accepted", took)
	default:
		tm.log.Info("JobMaster accepted slots", "job", job, "allocations", took)
	}
	if len(declined) > 0 {
		tm.report()
	}
	tm.startOffers()
}

// freeSlots frees a job's slots (all of them when allocs is empty),
// stopping the workers that run in them.
func (tm *TaskManager) freeSlots(job string, allocs []string, reason string, now int64) {
	st := &tm.st
	var freed []string
	for i, sl := range st.slots {
		if sl.phase == slotFree || sl.jobID != job || len(allocs) > 0 && !slices.Contains(allocs, sl.allocationID) {
			continue
		}
		for _, w := range st.workers {
			if w.key.job == job && slices.Contains(w.allocs, sl.allocationID) {
				tm.stop(w, "its slot was freed", now)
			}
		}
		st.slots[i] = slotState{}
		freed = append(freed, sl.allocationID)
	}
	if len(freed) == 0 {
		tm.log.Debug("nothing to free", "job", job, "allocations", allocs)
		return
	}
	tm.log.Info("slots freed", "job", job, "allocations", freed, "reason", reason)
	tm.report()
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, abort(withCode(codes.Internal, fmt.Errorf("taskmanager: worker directory: %w", err)))
	}
	deploymentPath := filepath.Join(dir, "deployment.json")
	configuration := maps.Clone(req.GetConfiguration())
	if configuration == nil {
		configuration = map[string]string{}
	}
	maps.Copy(configuration, tm.cfg.WorkerConfiguration)
	if err := deployment.WriteWorkerDeployment(deploymentPath, &deployment.WorkerDeployment{
		Format: deployment.DeploymentFormat, TaskManagerID: tm.id, TaskManagerAddress: tm.addr,
		JobID: req.GetJobId(), Attempt: req.GetAttempt(), WorkerID: req.GetWorkerId(),
		BinarySHA256: req.GetBinarySha256(), BinarySize: req.GetBinarySize(),
		JobMasterAddress: req.GetJobMasterAddress(), AllocationIDs: req.GetAllocationIds(),
		Args: req.GetArgs(), Env: req.GetEnv(), Configuration: configuration,
		DataHost: tm.host, DataPorts: tm.cfg.DataPort,
	}); err != nil {
		return nil, abort(withCode(codes.Internal, err))
	}
	if cerr := tm.call(context.Background(), func() { err = tm.start(w, bin, dir, deploymentPath, req) }); cerr != nil {
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
	for _, a := range allocs {
		if i := tm.slotOf(a); i < 0 || tm.st.slots[i].jobID != job {
			return withCode(codes.FailedPrecondition, fmt.Errorf("%w: allocation %q is not a slot of job %q on TaskManager %s", ErrSlotNotHeld, a, job, tm.id))
		}
	}
	return nil
}

func (tm *TaskManager) reserve(r *clusterpb.SubmitTasksRequest, cancelStart context.CancelFunc) (*worker, error) {
	st := &tm.st
	if st.closing {
		return nil, withCode(codes.Unavailable, ErrStopped)
	}
	if st.sess == nil || !st.sess.registered {
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

func (tm *TaskManager) start(w *worker, bin, dir, deploymentPath string, r *clusterpb.SubmitTasksRequest) error {
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
	env = append(env, conf.EnvExecutionTarget+"="+conf.BinaryModeWorker, conf.EnvWorkerDeployment+"="+deploymentPath)
	var cmd *exec.Cmd
	for attempt := 0; ; attempt++ {
		cmd = exec.Command(bin, r.GetArgs()...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stdout, stderr
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
	w.log.Info("worker started", "binary", bin, "deployment", deploymentPath, "stdout", stdoutPath, "stderr", stderrPath,
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
	if s == nil || !s.registered {
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
		tm.freeSlots(req.GetJobId(), req.GetAllocationIds(), "freed by the JobMaster", tm.clock.NowMillis())
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
		if st.sess != nil && st.sess.registered {
			s.Registered, s.ResourceManagerID = true, st.sess.rmID
		}
		for i, sl := range st.slots {
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
