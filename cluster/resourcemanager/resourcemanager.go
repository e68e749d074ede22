// Package resourcemanager is the ResourceManager of a Sluice cluster: it
// keeps a session with every TaskManager (clusterpb.ResourceManager.Connect),
// tracks their slots, and assigns free slots to the jobs whose JobMasters
// declare a demand (DeclareSlots). A TaskManager given a slot offers it to
// the job's JobMaster itself.
//
// The decisions are package scheduler's pure functions; the platform that
// starts and stops TaskManagers is behind a Driver (Standalone here, YARN
// containers in package yarn's driver). All state lives in one owner
// goroutine, Run, driven by the messages of TaskManagers, the demands of
// JobMasters, the driver's reports and an injected clock.
//
// # Protocol
//
// A TaskManager's Connect stream starts with Register, answered by
// Registered carrying heartbeat.interval and heartbeat.timeout. From then on
// both sides send Heartbeat at the interval; the TaskManager's carries its
// slot report, the state of its Kerberos login (the latest is kept for the
// JobManager's GET /metrics) and its machine's hardware (free memory, for
// GET /taskmanagers), and it sends one more whenever its slots change. A closed stream loses the TaskManager at once; a TaskManager
// silent for the timeout is lost then. A TaskManager id, and a resource
// id, may be registered once: a second Register with it is refused with
// codes.AlreadyExists until the first session ends.
//
// The ResourceManager's view of a slot follows the TaskManager's reports,
// except that a slot it has just assigned (AllocateSlot sent) stays assigned
// until a report shows the allocation, or for at most heartbeat.timeout.
// When a job's demand drops to 0 its slots are taken back (free_slots);
// when it drops otherwise the JobMaster frees the slots it does not use with
// TaskManager.FreeSlots.
package resourcemanager

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/scheduler"
	"github.com/sluice/sluice/security/kerberos"
)

// Errors of the ResourceManager. Over gRPC they arrive as status errors with
// the codes named here; in-process callers can test them with errors.Is.
var (
	// ErrStopped: the ResourceManager is not running (codes.Unavailable).
	ErrStopped = errors.New("resourcemanager: not running")
	// ErrDuplicateTaskManager: a TaskManager with the same id or resource
	// id is registered (codes.AlreadyExists).
	ErrDuplicateTaskManager = errors.New("resourcemanager: TaskManager already registered")
	// ErrInvalidRegistration: Register is missing or malformed
	// (codes.InvalidArgument).
	ErrInvalidRegistration = errors.New("resourcemanager: invalid registration")
	// ErrInvalidDemand: a SlotDemand is malformed (codes.InvalidArgument).
	ErrInvalidDemand = errors.New("resourcemanager: invalid slot demand")
	// ErrRegisterTimeout: no Register within heartbeat.timeout of
	// connecting (codes.DeadlineExceeded).
	ErrRegisterTimeout = errors.New("resourcemanager: no Register message in time")
)

// maxSlots bounds the slots one TaskManager may register.
const maxSlots = 1 << 14

// sendQueue is how many messages may wait for a TaskManager's stream; a
// TaskManager that falls this far behind is dropped.
const sendQueue = 1024

// rpcError carries a gRPC status code for an error of this package, so
// that gRPC clients see the code and in-process callers the sentinel.
type rpcError struct {
	code codes.Code
	err  error
}

func (e *rpcError) Error() string              { return e.err.Error() }
func (e *rpcError) Unwrap() error              { return e.err }
func (e *rpcError) GRPCStatus() *status.Status { return status.New(e.code, e.err.Error()) }

func withCode(code codes.Code, err error) error { return &rpcError{code: code, err: err} }

// Resources are CPU and memory, of a slot or of a whole TaskManager.
type Resources struct {
	CPUCores    float64
	MemoryBytes int64
}

// SlotInfo is one slot of a TaskManager in a snapshot.
type SlotInfo struct {
	Index        int
	JobID        string // empty when free
	AllocationID string
	// Pending: assigned by the ResourceManager, not yet confirmed by the
	// TaskManager's slot report.
	Pending bool
}

// Hardware describes a TaskManager's machine as it reported it: CPUs the
// process may use and memory in bytes (0 when unknown); free memory as of
// its latest heartbeat.
type Hardware struct {
	CPUCores                                                 int
	PhysicalMemoryBytes, FreeMemoryBytes, ManagedMemoryBytes int64
}

func hardwareOf(h *clusterpb.Hardware) Hardware {
	return Hardware{CPUCores: int(h.GetCpuCores()), PhysicalMemoryBytes: h.GetPhysicalMemoryBytes(),
		FreeMemoryBytes: h.GetFreeMemoryBytes(), ManagedMemoryBytes: h.GetManagedMemoryBytes()}
}

// TaskManagerInfo is a snapshot of a registered TaskManager.
type TaskManagerInfo struct {
	ID         string
	ResourceID string
	Address    string // gRPC address, host:port
	Hostname   string
	PID        int64
	// DataPort is the port its workers' data endpoints take
	// (taskmanager.data.port); 0 when each takes a free port.
	DataPort   int
	Hardware   Hardware
	SlotsTotal int
	SlotsFree  int
	// SlotResources are the resources of one slot; Resources those of the
	// TaskManager (SlotResources times SlotsTotal).
	SlotResources Resources
	Resources     Resources
	Slots         []SlotInfo
	RegisteredAt  time.Time
	LastHeartbeat time.Time
	// Kerberos is the TaskManager's Kerberos login as its latest heartbeat
	// reported it; nil when it has none.
	Kerberos *kerberos.Status
}

// LostTaskManager reports a registered TaskManager that is gone.
type LostTaskManager struct {
	ID         string
	ResourceID string
	Address    string
	// Reason says why: the connection closed, no heartbeat within the
	// timeout, or the platform stopped it (with its diagnostics).
	Reason string
	// HeartbeatTimeout is set when it was lost for silence: no heartbeat
	// within heartbeat.timeout, while its connection may still be open (a
	// frozen process or host, a network dropping packets).
	HeartbeatTimeout bool
	// Jobs are the jobs that held slots on it, sorted.
	Jobs []string
}

// ExitedWorker reports a worker process that exited on a TaskManager
// without being asked to stop (a crash, an exit before or after it
// connected to its JobMaster).
type ExitedWorker struct {
	// TaskManager is the id of the TaskManager that ran it.
	TaskManager string
	// Job, Attempt and Worker name the worker.
	Job     string
	Attempt int
	Worker  string
	// Status is its exit status, e.g. "exit status 2".
	Status string
	// StderrTail is the end of its stderr (at most 20 lines, 4 KiB).
	StderrTail string
}

// ResourceManager implements clusterpb.ResourceManagerServer. Register it
// on a gRPC server with clusterpb.RegisterResourceManagerServer and run it
// with Run.
type ResourceManager struct {
	clusterpb.UnimplementedResourceManagerServer

	cfg    Config
	driver Driver
	log    *slog.Logger
	clock  clock.Clock

	ops     chan func()   // run on the owner goroutine
	done    chan struct{} // closed when Run has ended
	started atomic.Bool

	driverQ queue[driverEvent]
	lost    queue[LostTaskManager]
	exited  queue[ExitedWorker]

	st state // REQUIRES: accessed only on the owner goroutine (Run)
}

type driverEvent struct{ resourceID, diagnostics string }

// New returns a ResourceManager using driver for its platform.
func New(cfg Config, driver Driver) (*ResourceManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if driver == nil {
		return nil, fmt.Errorf("%w: no driver", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults()
	if cfg.ID == "" {
		cfg.ID = "rm-" + strings.ToLower(rand.Text()[:12])
	}
	rm := &ResourceManager{
		cfg:    cfg,
		driver: driver,
		log:    cfg.Logger.With("component", "resourcemanager"),
		clock:  cfg.Clock,
		ops:    make(chan func()),
		done:   make(chan struct{}),
		st: state{
			tms:      make(map[string]*taskManager),
			jobs:     make(map[string]*job),
			hb:       scheduler.NewHeartbeats(cfg.HeartbeatTimeout.Milliseconds()),
			required: -1,
		},
	}
	rm.driverQ.init()
	rm.lost.init()
	rm.exited.init()
	return rm, nil
}

// ID returns the ResourceManager's id.
func (rm *ResourceManager) ID() string { return rm.cfg.ID }

// Run runs the ResourceManager and its driver until ctx ends or the driver
// fails. On return every TaskManager session is closed. Run may be called
// once.
func (rm *ResourceManager) Run(ctx context.Context) error {
	if !rm.started.CompareAndSwap(false, true) {
		return errors.New("resourcemanager: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	driverDone := make(chan error, 1)
	wg.Go(func() { driverDone <- rm.driver.Run(ctx, driverEvents{rm}) })
	if fn := rm.cfg.OnTaskManagerLost; fn != nil {
		wg.Go(func() { rm.lost.serve(ctx, fn) })
	}
	if fn := rm.cfg.OnWorkerExited; fn != nil {
		wg.Go(func() { rm.exited.serve(ctx, fn) })
	}
	rm.log.Info("ResourceManager started", "id", rm.cfg.ID,
		"heartbeat_interval", rm.cfg.HeartbeatInterval, "heartbeat_timeout", rm.cfg.HeartbeatTimeout,
		"strategy", rm.cfg.Strategy)
	err := rm.loop(ctx, driverDone)
	for _, tm := range rm.st.tms {
		tm.sess.close("the ResourceManager is shutting down")
	}
	close(rm.done)
	cancel()
	wg.Wait()
	rm.log.Info("ResourceManager stopped")
	return err
}

func (rm *ResourceManager) loop(ctx context.Context, driverDone <-chan error) error {
	var (
		timer   <-chan struct{}
		stop    = func() {}
		armedAt int64
	)
	defer func() { stop() }()
	for {
		if next, ok := rm.nextDeadline(); ok {
			if timer == nil || next != armedAt {
				stop()
				timer, stop = rm.clock.AfterMillis(next)
				armedAt = next
			}
		} else if timer != nil {
			stop()
			timer, stop = nil, func() {}
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-driverDone:
			if err != nil {
				return fmt.Errorf("resourcemanager: driver: %w", err)
			}
			if ctx.Err() != nil {
				return nil
			}
			rm.log.Warn("the driver stopped; no more TaskManagers will be started or released")
			driverDone = nil
		case f := <-rm.ops:
			f()
		case <-rm.driverQ.wake:
			now := rm.clock.NowMillis()
			for _, e := range rm.driverQ.take() {
				rm.workerStopped(e, now)
			}
			rm.schedule(now)
		case <-timer:
			timer, stop = nil, func() {}
			rm.tick(rm.clock.NowMillis())
		}
	}
}

// call runs f on the owner goroutine and waits for it. It fails when the
// ResourceManager has stopped or ctx ends first.
func (rm *ResourceManager) call(ctx context.Context, f func()) error {
	ran := make(chan struct{})
	select {
	case rm.ops <- func() { f(); close(ran) }:
	case <-rm.done:
		return withCode(codes.Unavailable, ErrStopped)
	case <-ctx.Done():
		return ctx.Err()
	}
	<-ran
	return nil
}

// TaskManagers returns a snapshot of the registered TaskManagers, sorted by
// id.
func (rm *ResourceManager) TaskManagers(ctx context.Context) ([]TaskManagerInfo, error) {
	var out []TaskManagerInfo
	err := rm.call(ctx, func() {
		for _, id := range slices.Sorted(maps.Keys(rm.st.tms)) {
			out = append(out, rm.st.tms[id].info())
		}
	})
	return out, err
}

// DeclareSlots implements clusterpb.ResourceManagerServer: it sets a job's
// slot demand.
func (rm *ResourceManager) DeclareSlots(ctx context.Context, d *clusterpb.SlotDemand) (*clusterpb.SlotDemandAck, error) {
	if err := validateDemand(d); err != nil {
		return nil, withCode(codes.InvalidArgument, err)
	}
	if err := rm.call(ctx, func() { rm.declare(d, rm.clock.NowMillis()) }); err != nil {
		return nil, err
	}
	return &clusterpb.SlotDemandAck{}, nil
}

func validateDemand(d *clusterpb.SlotDemand) error {
	var problems []string
	if d.GetJobId() == "" {
		problems = append(problems, "job_id is empty")
	}
	if d.GetSlots() < 0 {
		problems = append(problems, fmt.Sprintf("slots %d is negative", d.GetSlots()))
	}
	if d.GetSlots() > 0 {
		if err := checkAddress(d.GetJobMasterAddress()); err != nil {
			problems = append(problems, "job_master_address "+err.Error())
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w of job %q: %s", ErrInvalidDemand, d.GetJobId(), strings.Join(problems, "; "))
}

func checkAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has no port between 1 and 65535", addr)
	}
	return nil
}

// validateRegister checks a Register message and reports every problem.
func validateRegister(r *clusterpb.Register) error {
	var problems []string
	if r.GetTaskManagerId() == "" {
		problems = append(problems, "task_manager_id is empty")
	}
	if err := checkAddress(r.GetAddress()); err != nil {
		problems = append(problems, "address "+err.Error())
	}
	if s := r.GetSlots(); s < 1 || s > maxSlots {
		problems = append(problems, fmt.Sprintf("slots %d: must be between 1 and %d", s, maxSlots))
	}
	if p := r.GetSlotProfile(); p != nil {
		if c := p.GetCpuCores(); c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
			problems = append(problems, fmt.Sprintf("slot_profile.cpu_cores %v: must be a number of at least 0", c))
		}
		if p.GetMemoryBytes() < 0 {
			problems = append(problems, fmt.Sprintf("slot_profile.memory_bytes %d: must not be negative", p.GetMemoryBytes()))
		}
	}
	if r.GetPid() < 0 {
		problems = append(problems, fmt.Sprintf("pid %d is negative", r.GetPid()))
	}
	if p := r.GetDataPort(); p < 0 || p > 65535 {
		problems = append(problems, fmt.Sprintf("data_port %d is not a port", p))
	}
	if h := r.GetHardware(); h.GetCpuCores() < 0 || h.GetPhysicalMemoryBytes() < 0 || h.GetFreeMemoryBytes() < 0 || h.GetManagedMemoryBytes() < 0 {
		problems = append(problems, fmt.Sprintf("hardware %v has negative values", h))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w of TaskManager %q: %s", ErrInvalidRegistration, r.GetTaskManagerId(), strings.Join(problems, "; "))
}

// Connect implements clusterpb.ResourceManagerServer: one TaskManager's
// session.
func (rm *ResourceManager) Connect(stream clusterpb.ResourceManager_ConnectServer) error {
	ctx := stream.Context()
	in := make(chan *clusterpb.TaskManagerMessage)
	recvErr := make(chan error, 1)
	// The pump ends when the stream does: after this handler returns, gRPC
	// cancels ctx and Recv fails.
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case in <- m:
			case <-ctx.Done():
				return
			}
		}
	}()

	deadline, stopDeadline := rm.clock.AfterMillis(rm.clock.NowMillis() + rm.cfg.HeartbeatTimeout.Milliseconds())
	var first *clusterpb.TaskManagerMessage
	select {
	case first = <-in:
		stopDeadline()
	case err := <-recvErr:
		stopDeadline()
		return err
	case <-ctx.Done():
		stopDeadline()
		return ctx.Err()
	case <-deadline:
		return withCode(codes.DeadlineExceeded, fmt.Errorf("%w: waited %v", ErrRegisterTimeout, rm.cfg.HeartbeatTimeout))
	case <-rm.done:
		stopDeadline()
		return withCode(codes.Unavailable, ErrStopped)
	}
	reg := first.GetRegister()
	if reg == nil {
		return withCode(codes.InvalidArgument, fmt.Errorf("%w: the first message of a session must be Register, got %T", ErrInvalidRegistration, first.GetMsg()))
	}
	if err := validateRegister(reg); err != nil {
		rm.log.Warn("registration refused", "taskmanager", reg.GetTaskManagerId(), "err", err)
		return withCode(codes.InvalidArgument, err)
	}
	sess := &session{tmID: reg.GetTaskManagerId(), out: make(chan *clusterpb.ResourceManagerMessage, sendQueue), closed: make(chan struct{})}
	var regErr error
	if err := rm.call(ctx, func() { regErr = rm.register(reg, sess, rm.clock.NowMillis()) }); err != nil {
		return err
	}
	if regErr != nil {
		rm.log.Warn("registration refused", "taskmanager", reg.GetTaskManagerId(), "err", regErr)
		return withCode(codes.AlreadyExists, regErr)
	}
	err := rm.serve(stream, sess, in, recvErr)
	// A no-op when the ResourceManager ended the session itself.
	_ = rm.call(context.Background(), func() { rm.sessionEnded(sess, err) })
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// serve runs a registered session until it ends: it sends what the owner
// queues and forwards heartbeats to the owner.
func (rm *ResourceManager) serve(stream clusterpb.ResourceManager_ConnectServer, sess *session,
	in <-chan *clusterpb.TaskManagerMessage, recvErr <-chan error) error {
	ctx := stream.Context()
	for {
		select {
		case m := <-sess.out:
			if err := stream.Send(m); err != nil {
				return err
			}
		case m := <-in:
			if we := m.GetWorkerExited(); we != nil {
				if err := rm.call(ctx, func() { rm.workerExited(sess, we) }); err != nil {
					return err
				}
				continue
			}
			hb := m.GetHeartbeat()
			if hb == nil {
				return withCode(codes.InvalidArgument, fmt.Errorf("%w: unexpected %T after Register", ErrInvalidRegistration, m.GetMsg()))
			}
			if err := rm.call(ctx, func() { rm.heartbeat(sess, hb, rm.clock.NowMillis()) }); err != nil {
				return err
			}
		case err := <-recvErr:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.closed:
			return rm.disconnect(stream, sess)
		case <-rm.done:
			select {
			case <-sess.closed:
				return rm.disconnect(stream, sess)
			default:
				return withCode(codes.Unavailable, ErrStopped)
			}
		}
	}
}

// disconnect ends a session the ResourceManager closed: it sends what was
// queued before the close (e.g. free_slots), then Disconnect with the
// reason.
func (rm *ResourceManager) disconnect(stream clusterpb.ResourceManager_ConnectServer, sess *session) error {
	for pending := true; pending; {
		select {
		case m := <-sess.out:
			if stream.Send(m) != nil {
				pending = false
			}
		default:
			pending = false
		}
	}
	_ = stream.Send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Disconnect{
		Disconnect: &clusterpb.Disconnect{Reason: sess.reason}}})
	return withCode(codes.Unavailable, errors.New("resourcemanager: "+sess.reason))
}

// session is the sending side of one TaskManager's stream.
type session struct {
	tmID      string
	out       chan *clusterpb.ResourceManagerMessage
	closed    chan struct{}
	closeOnce sync.Once
	reason    string // set before closed is closed
}

// send queues m without waiting; false when the queue is full.
func (s *session) send(m *clusterpb.ResourceManagerMessage) bool {
	select {
	case s.out <- m:
		return true
	default:
		return false
	}
}

func (s *session) close(reason string) {
	s.closeOnce.Do(func() {
		s.reason = reason
		close(s.closed)
	})
}

type driverEvents struct{ rm *ResourceManager }

func (d driverEvents) WorkerStopped(resourceID, diagnostics string) {
	d.rm.driverQ.push(driverEvent{resourceID: resourceID, diagnostics: diagnostics})
}

// queue is an unbounded queue with a wake-up channel, for reports that must
// not wait for their consumer.
type queue[T any] struct {
	mu   sync.Mutex
	q    []T
	wake chan struct{}
}

func (q *queue[T]) init() { q.wake = make(chan struct{}, 1) }

func (q *queue[T]) push(v T) {
	q.mu.Lock()
	q.q = append(q.q, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.q
	q.q = nil
	return out
}

// serve calls fn for every value pushed, one at a time, until ctx ends.
func (q *queue[T]) serve(ctx context.Context, fn func(T)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
			for _, v := range q.take() {
				fn(v)
			}
		}
	}
}

// ---- state, on the owner goroutine ----

type state struct {
	tms           map[string]*taskManager // by TaskManager id
	jobs          map[string]*job
	jobSeq        uint64
	hb            *scheduler.Heartbeats
	nextHeartbeat int64
	hbSeq         int64
	required      int             // last SetRequired; -1 before the first
	surplus       map[string]bool // idle TaskManagers the demand does not need
	short         int             // slots demanded and not held, last logged
}

type taskManager struct {
	id, resourceID, address, hostname string
	pid                               int64
	dataPort                          int
	hardware                          Hardware
	profile                           Resources
	slots                             []slot
	sess                              *session
	log                               *slog.Logger
	registeredAt, lastHeartbeat       int64
	idleSince                         int64 // when it last became idle; -1 while it holds slots
	released                          bool  // Driver.Release called since it became idle
	// kerberos is the login its latest heartbeat reported; nil: none.
	kerberos *kerberos.Status
}

type slot struct {
	jobID, allocationID string
	pending             bool // AllocateSlot sent, no report shows it yet
	pendingSince        int64
}

type job struct {
	id, address string
	slots       int
	order       uint64
}

func (tm *taskManager) info() TaskManagerInfo {
	in := TaskManagerInfo{
		ID: tm.id, ResourceID: tm.resourceID, Address: tm.address, Hostname: tm.hostname, PID: tm.pid,
		DataPort: tm.dataPort, Hardware: tm.hardware,
		SlotsTotal: len(tm.slots), SlotResources: tm.profile,
		Resources:     Resources{CPUCores: tm.profile.CPUCores * float64(len(tm.slots)), MemoryBytes: tm.profile.MemoryBytes * int64(len(tm.slots))},
		RegisteredAt:  time.UnixMilli(tm.registeredAt),
		LastHeartbeat: time.UnixMilli(tm.lastHeartbeat),
	}
	if tm.kerberos != nil {
		k := *tm.kerberos
		in.Kerberos = &k
	}
	for i, s := range tm.slots {
		if s.jobID == "" {
			in.SlotsFree++
		}
		in.Slots = append(in.Slots, SlotInfo{Index: i, JobID: s.jobID, AllocationID: s.allocationID, Pending: s.pending})
	}
	return in
}

func (tm *taskManager) busy() bool {
	for _, s := range tm.slots {
		if s.jobID != "" {
			return true
		}
	}
	return false
}

func (rm *ResourceManager) register(r *clusterpb.Register, sess *session, now int64) error {
	st := &rm.st
	resourceID := cmp.Or(r.GetResourceId(), r.GetTaskManagerId())
	if old, dup := st.tms[r.GetTaskManagerId()]; dup {
		return fmt.Errorf("%w: TaskManager %q is registered from %s since %s; it may register again once that session ends",
			ErrDuplicateTaskManager, old.id, old.address, time.UnixMilli(old.registeredAt).UTC().Format(time.RFC3339))
	}
	for _, old := range st.tms {
		if old.resourceID == resourceID {
			return fmt.Errorf("%w: resource %q is registered as TaskManager %q from %s",
				ErrDuplicateTaskManager, resourceID, old.id, old.address)
		}
	}
	tm := &taskManager{
		id: r.GetTaskManagerId(), resourceID: resourceID, address: r.GetAddress(), hostname: r.GetHostname(),
		pid: r.GetPid(), dataPort: int(r.GetDataPort()), hardware: hardwareOf(r.GetHardware()),
		profile:      Resources{CPUCores: r.GetSlotProfile().GetCpuCores(), MemoryBytes: r.GetSlotProfile().GetMemoryBytes()},
		slots:        make([]slot, r.GetSlots()),
		sess:         sess,
		registeredAt: now, lastHeartbeat: now,
		idleSince: now,
	}
	tm.log = rm.log.With("taskmanager", tm.id)
	if len(st.tms) == 0 {
		st.nextHeartbeat = now + rm.cfg.HeartbeatInterval.Milliseconds()
	}
	st.tms[tm.id] = tm
	st.hb.Seen(tm.id, now)
	sess.send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Registered{Registered: &clusterpb.Registered{
		ResourceManagerId:   rm.cfg.ID,
		HeartbeatIntervalMs: rm.cfg.HeartbeatInterval.Milliseconds(),
		HeartbeatTimeoutMs:  rm.cfg.HeartbeatTimeout.Milliseconds(),
	}}})
	tm.log.Info("TaskManager registered", "address", tm.address, "hostname", tm.hostname, "resource", tm.resourceID,
		"slots", len(tm.slots), "pid", tm.pid)
	rm.schedule(now)
	return nil
}

// workerExited hands a registered TaskManager's report of a worker's exit
// to OnWorkerExited.
func (rm *ResourceManager) workerExited(sess *session, we *clusterpb.WorkerExited) {
	tm := rm.st.tms[sess.tmID]
	if tm == nil || tm.sess != sess {
		return // from a session that has ended
	}
	tm.log.Info("worker exited", "job", we.GetJobId(), "attempt", we.GetAttempt(), "worker", we.GetWorkerId(), "status", we.GetStatus())
	if rm.cfg.OnWorkerExited != nil {
		rm.exited.push(ExitedWorker{TaskManager: tm.id, Job: we.GetJobId(), Attempt: int(we.GetAttempt()),
			Worker: we.GetWorkerId(), Status: we.GetStatus(), StderrTail: we.GetStderrTail()})
	}
}

func (rm *ResourceManager) heartbeat(sess *session, hb *clusterpb.Heartbeat, now int64) {
	tm := rm.st.tms[sess.tmID]
	if tm == nil || tm.sess != sess {
		return // from a session that has ended
	}
	rm.st.hb.Seen(tm.id, now)
	tm.lastHeartbeat = now
	tm.kerberos = nil
	if k := hb.GetKerberos(); k != nil {
		s := k.Status()
		tm.kerberos = &s
	}
	if h := hb.GetHardware(); h != nil {
		tm.hardware = hardwareOf(h)
	}
	if rm.reconcile(tm, hb.GetSlots()) {
		rm.schedule(now)
	}
}

// reconcile applies a TaskManager's slot report and says whether a slot
// changed hands. The report is the truth, except for a slot assigned here
// whose allocation the report does not show yet.
func (rm *ResourceManager) reconcile(tm *taskManager, report []*clusterpb.SlotStatus) bool {
	changed := false
	for _, s := range report {
		i := int(s.GetIndex())
		if i < 0 || i >= len(tm.slots) {
			tm.log.Warn("slot report names a slot the TaskManager did not register", "index", i, "slots", len(tm.slots))
			continue
		}
		if (s.GetAllocationId() == "") != (s.GetJobId() == "") {
			tm.log.Warn("slot report with an allocation id but no job, or a job but no allocation id; ignored",
				"index", i, "allocation", s.GetAllocationId(), "job", s.GetJobId())
			continue
		}
		cur := &tm.slots[i]
		switch {
		case s.GetAllocationId() == cur.allocationID:
			cur.pending = false
		case s.GetAllocationId() == "":
			if cur.pending {
				continue // the report predates our AllocateSlot
			}
			tm.log.Debug("slot free", "index", i, "job", cur.jobID, "allocation", cur.allocationID)
			*cur = slot{}
			changed = true
		default:
			if cur.pending {
				tm.log.Warn("TaskManager holds a slot for another allocation than the one assigned",
					"index", i, "assigned", cur.allocationID, "held", s.GetAllocationId(), "job", s.GetJobId())
			}
			*cur = slot{jobID: s.GetJobId(), allocationID: s.GetAllocationId()}
			changed = true
		}
	}
	return changed
}

func (rm *ResourceManager) declare(d *clusterpb.SlotDemand, now int64) {
	st := &rm.st
	j := st.jobs[d.GetJobId()]
	if d.GetSlots() == 0 {
		if j == nil {
			return
		}
		delete(st.jobs, j.id)
		rm.log.Info("slot demand ended", "job", j.id)
		for _, id := range slices.Sorted(maps.Keys(st.tms)) {
			tm := st.tms[id]
			var allocs []string
			for _, s := range tm.slots {
				if s.jobID == j.id {
					allocs = append(allocs, s.allocationID)
				}
			}
			if len(allocs) > 0 && !tm.sess.send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_FreeSlots{
				FreeSlots: &clusterpb.FreeSlotsRequest{JobId: j.id, AllocationIds: allocs}}}) {
				rm.lose(tm, "its message queue is full")
			}
		}
		rm.schedule(now)
		return
	}
	if j == nil {
		st.jobSeq++
		j = &job{id: d.GetJobId(), order: st.jobSeq}
		st.jobs[j.id] = j
	}
	if j.slots != int(d.GetSlots()) || j.address != d.GetJobMasterAddress() {
		rm.log.Info("slot demand", "job", j.id, "slots", d.GetSlots(), "jobmaster", d.GetJobMasterAddress())
	}
	j.slots, j.address = int(d.GetSlots()), d.GetJobMasterAddress()
	rm.schedule(now)
}

func (rm *ResourceManager) sessionEnded(sess *session, err error) {
	tm := rm.st.tms[sess.tmID]
	if tm == nil || tm.sess != sess {
		return
	}
	reason := "the TaskManager closed its session"
	if err != nil && !errors.Is(err, io.EOF) {
		reason = "session ended: " + err.Error()
	}
	now := rm.clock.NowMillis()
	rm.lose(tm, reason)
	rm.schedule(now)
}

func (rm *ResourceManager) workerStopped(e driverEvent, now int64) {
	for _, tm := range rm.st.tms {
		if tm.resourceID == e.resourceID {
			rm.lose(tm, "stopped by the platform: "+e.diagnostics)
			return
		}
	}
	rm.log.Info("platform reports a stopped TaskManager that is not registered", "resource", e.resourceID, "diagnostics", e.diagnostics)
}

// lose forgets a TaskManager, closes its session and reports it. The
// caller schedules afterwards.
func (rm *ResourceManager) lose(tm *taskManager, reason string) {
	rm.loseFor(tm, reason, false)
}

// loseFor is lose, saying whether the TaskManager was silent for the
// heartbeat timeout.
func (rm *ResourceManager) loseFor(tm *taskManager, reason string, timeout bool) {
	if rm.st.tms[tm.id] != tm {
		return
	}
	delete(rm.st.tms, tm.id)
	rm.st.hb.Forget(tm.id)
	tm.sess.close(reason)
	jobs := make(map[string]bool)
	for _, s := range tm.slots {
		if s.jobID != "" {
			jobs[s.jobID] = true
		}
	}
	l := LostTaskManager{ID: tm.id, ResourceID: tm.resourceID, Address: tm.address, Reason: reason, HeartbeatTimeout: timeout, Jobs: slices.Sorted(maps.Keys(jobs))}
	tm.log.Warn("TaskManager lost", "reason", reason, "jobs", l.Jobs)
	if rm.cfg.OnTaskManagerLost != nil {
		rm.lost.push(l)
	}
}

// tick sends heartbeats, loses silent TaskManagers, frees assignments the
// TaskManagers never confirmed, and releases idle TaskManagers.
func (rm *ResourceManager) tick(now int64) {
	st := &rm.st
	if len(st.tms) > 0 && now >= st.nextHeartbeat {
		st.hbSeq++
		for _, id := range slices.Sorted(maps.Keys(st.tms)) {
			tm := st.tms[id]
			if !tm.sess.send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: st.hbSeq}}}) {
				rm.lose(tm, "its message queue is full")
			}
		}
		st.nextHeartbeat = now + rm.cfg.HeartbeatInterval.Milliseconds()
	}
	for _, id := range st.hb.Expire(now) {
		if tm := st.tms[id]; tm != nil {
			rm.loseFor(tm, fmt.Sprintf("no heartbeat for %v (heartbeat.timeout)", rm.cfg.HeartbeatTimeout), true)
		}
	}
	timeout := rm.cfg.HeartbeatTimeout.Milliseconds()
	for _, tm := range st.tms {
		for i := range tm.slots {
			if s := &tm.slots[i]; s.pending && now-s.pendingSince >= timeout {
				tm.log.Warn("assigned slot not confirmed by the TaskManager in time; freed",
					"index", i, "job", s.jobID, "allocation", s.allocationID)
				*s = slot{}
			}
		}
	}
	rm.schedule(now)
}

// nextDeadline is when tick must run next.
func (rm *ResourceManager) nextDeadline() (int64, bool) {
	st := &rm.st
	var next int64
	ok := false
	at := func(t int64) {
		if !ok || t < next {
			next, ok = t, true
		}
	}
	if len(st.tms) > 0 {
		at(st.nextHeartbeat)
	}
	if d, has := st.hb.NextDeadline(); has {
		at(d)
	}
	timeout := rm.cfg.HeartbeatTimeout.Milliseconds()
	for _, tm := range st.tms {
		for _, s := range tm.slots {
			if s.pending {
				at(s.pendingSince + timeout)
			}
		}
		if st.surplus[tm.id] && !tm.released {
			at(tm.idleSince + rm.cfg.IdleTimeout.Milliseconds())
		}
	}
	return next, ok
}

func (rm *ResourceManager) view() ([]scheduler.Demand, []scheduler.TaskManager) {
	st := &rm.st
	jobs := slices.SortedFunc(maps.Values(st.jobs), func(a, b *job) int { return cmp.Compare(a.order, b.order) })
	demands := make([]scheduler.Demand, len(jobs))
	for i, j := range jobs {
		demands[i] = scheduler.Demand{JobID: j.id, Slots: j.slots}
	}
	tms := make([]scheduler.TaskManager, 0, len(st.tms))
	for _, tm := range st.tms {
		t := scheduler.TaskManager{ID: tm.id, Slots: make([]scheduler.Slot, len(tm.slots))}
		for i, s := range tm.slots {
			t.Slots[i].JobID = s.jobID
		}
		tms = append(tms, t)
	}
	return demands, tms
}

// schedule assigns free slots to jobs, tells the driver how many
// TaskManagers the demand needs, and releases idle surplus TaskManagers.
func (rm *ResourceManager) schedule(now int64) {
	st := &rm.st
	for again := true; again; {
		again = false
		demands, tms := rm.view()
		for _, a := range scheduler.MatchSlots(demands, tms, rm.cfg.Strategy) {
			tm, j := st.tms[a.TaskManagerID], st.jobs[a.JobID]
			if tm == nil {
				continue // lost while applying this round
			}
			alloc := "alloc-" + strings.ToLower(rand.Text()[:16])
			tm.slots[a.Index] = slot{jobID: j.id, allocationID: alloc, pending: true, pendingSince: now}
			tm.log.Debug("slot assigned", "index", a.Index, "job", j.id, "allocation", alloc)
			if !tm.sess.send(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_AllocateSlot{AllocateSlot: &clusterpb.AllocateSlot{
				Index: int32(a.Index), AllocationId: alloc, JobId: j.id, JobMasterAddress: j.address,
			}}}) {
				rm.lose(tm, "its message queue is full")
				again = true
			}
		}
	}

	demands, tms := rm.view()
	capacity := scheduler.PlanCapacity(demands, tms, rm.cfg.SlotsPerTaskManager)
	if capacity.Required != st.required {
		rm.log.Info("TaskManagers required", "required", capacity.Required, "registered", len(st.tms))
		st.required = capacity.Required
		rm.driver.SetRequired(capacity.Required)
	}

	held := make(map[string]int)
	for _, tm := range st.tms {
		for _, s := range tm.slots {
			if s.jobID != "" {
				held[s.jobID]++
			}
		}
		if tm.busy() {
			tm.idleSince, tm.released = -1, false
		} else if tm.idleSince < 0 {
			tm.idleSince = now
		}
	}
	st.surplus = make(map[string]bool, len(capacity.Surplus))
	for _, id := range capacity.Surplus {
		st.surplus[id] = true
		tm := st.tms[id]
		if !tm.released && now-tm.idleSince >= rm.cfg.IdleTimeout.Milliseconds() {
			tm.released = true
			tm.log.Info("releasing idle TaskManager", "resource", tm.resourceID, "idle", time.Duration(now-tm.idleSince)*time.Millisecond)
			rm.driver.Release(tm.resourceID)
		}
	}
	short := 0
	for _, d := range demands {
		short += max(0, d.Slots-held[d.JobID])
	}
	if short != st.short {
		if short > 0 {
			rm.log.Info("slot demand exceeds the free slots of the registered TaskManagers",
				"missing_slots", short, "taskmanagers", len(st.tms), "required", capacity.Required)
		} else {
			rm.log.Info("slot demand met", "taskmanagers", len(st.tms))
		}
		st.short = short
	}
}
