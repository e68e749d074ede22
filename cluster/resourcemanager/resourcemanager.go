// Package resourcemanager is the ResourceManager of a Sluice cluster: it
// keeps a session with every TaskManager (clusterpb.ResourceManager.Connect),
// tracks their slots, and assigns free slots to the jobs whose JobMasters
// declare a demand (DeclareSlots). A TaskManager given a slot offers it to
// the job's JobMaster itself.
//
// The decisions are the slot table's (slottable.go): a state machine over
// package scheduler's pure functions that turns the messages of
// TaskManagers, the demands of JobMasters, the driver's reports and the
// time of an injected clock into effects (sends, reports, driver calls,
// logs). The platform that starts and stops TaskManagers is behind a Driver
// (Standalone here, YARN containers in package yarn's driver). The table
// lives in one owner goroutine, Run (an ownerloop.Loop), which carries out
// its effects.
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
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/ownerloop"
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

	// loop owns table; its applier carries out the table's effects.
	loop    *ownerloop.Loop[event, effect, answer]
	table   *slotTable
	done    chan struct{} // closed when Run has closed the sessions and ended
	started atomic.Bool
	nextSes atomic.Uint64

	lost   queue[LostTaskManager]
	exited queue[ExitedWorker]

	mu struct {
		sync.Mutex
		sessions map[sessionID]*session // from Register until the stream ends
	}
}

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
		done:   make(chan struct{}),
		table:  newSlotTable(cfg, func() string { return "alloc-" + strings.ToLower(rand.Text()[:16]) }),
	}
	rm.mu.sessions = make(map[sessionID]*session)
	rm.loop = ownerloop.New(ownerloop.Config[event, effect, answer]{
		Machine: rm.table, Apply: rm.apply, Tick: evTick{}, Clock: cfg.Clock,
	})
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
	wg.Go(func() {
		err := rm.driver.Run(ctx, driverEvents{rm})
		switch {
		case err != nil:
			rm.loop.Stop(fmt.Errorf("resourcemanager: driver: %w", err))
		case ctx.Err() == nil:
			rm.log.Warn("the driver stopped; no more TaskManagers will be started or released")
		}
	})
	if fn := rm.cfg.OnTaskManagerLost; fn != nil {
		wg.Go(func() { rm.lost.serve(ctx, fn) })
	}
	if fn := rm.cfg.OnWorkerExited; fn != nil {
		wg.Go(func() { rm.exited.serve(ctx, fn) })
	}
	rm.log.Info("ResourceManager started", "id", rm.cfg.ID,
		"heartbeat_interval", rm.cfg.HeartbeatInterval, "heartbeat_timeout", rm.cfg.HeartbeatTimeout,
		"strategy", rm.cfg.Strategy)
	err := rm.loop.Run(ctx)
	// The loop has ended: the table is ours to read.
	for _, id := range rm.table.sessions() {
		if s := rm.session(id); s != nil {
			s.close("the ResourceManager is shutting down")
		}
	}
	close(rm.done)
	cancel()
	wg.Wait()
	rm.log.Info("ResourceManager stopped")
	return err
}

// apply carries out the slot table's effects on the owner goroutine.
func (rm *ResourceManager) apply(effects []effect) []event {
	var follow []event
	full := make(map[sessionID]bool)
	for _, f := range effects {
		switch f := f.(type) {
		case fxSend:
			s := rm.session(f.sess)
			if s == nil || full[f.sess] {
				continue
			}
			if !s.send(f.msg) {
				full[f.sess] = true
				follow = append(follow, evQueueFull{sess: f.sess, tm: f.tm})
			}
		case fxClose:
			if s := rm.session(f.sess); s != nil {
				s.close(f.reason)
			}
		case fxLost:
			if rm.cfg.OnTaskManagerLost != nil {
				rm.lost.push(f.lost)
			}
		case fxExited:
			if rm.cfg.OnWorkerExited != nil {
				rm.exited.push(f.exited)
			}
		case fxSetRequired:
			rm.driver.SetRequired(f.n)
		case fxRelease:
			rm.driver.Release(f.resourceID)
		case fxLog:
			log := rm.log
			if f.tm != "" {
				log = log.With("taskmanager", f.tm)
			}
			log.Log(context.Background(), f.level, f.msg, f.args...)
		default:
			panic(fmt.Sprintf("resourcemanager: unknown effect %T", f))
		}
	}
	return follow
}

func (rm *ResourceManager) session(id sessionID) *session {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.mu.sessions[id]
}

// call steps the slot table with e and returns its answer. It fails when
// the ResourceManager has stopped or ctx ends first.
func (rm *ResourceManager) call(ctx context.Context, e event) (answer, error) {
	a, err := rm.loop.Call(ctx, e)
	if errors.Is(err, ownerloop.ErrStopped) {
		return a, withCode(codes.Unavailable, ErrStopped)
	}
	return a, err
}

// TaskManagers returns a snapshot of the registered TaskManagers, sorted by
// id.
func (rm *ResourceManager) TaskManagers(ctx context.Context) ([]TaskManagerInfo, error) {
	a, err := rm.call(ctx, evSnapshot{})
	return a.tms, err
}

// DeclareSlots implements clusterpb.ResourceManagerServer: it sets a job's
// slot demand.
func (rm *ResourceManager) DeclareSlots(ctx context.Context, d *clusterpb.SlotDemand) (*clusterpb.SlotDemandAck, error) {
	if err := validateDemand(d); err != nil {
		return nil, withCode(codes.InvalidArgument, err)
	}
	if _, err := rm.call(ctx, evDeclare{d}); err != nil {
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
	sess := &session{id: sessionID(rm.nextSes.Add(1)), tmID: reg.GetTaskManagerId(),
		out: make(chan *clusterpb.ResourceManagerMessage, sendQueue), closed: make(chan struct{})}
	rm.mu.Lock()
	rm.mu.sessions[sess.id] = sess
	rm.mu.Unlock()
	defer func() {
		rm.mu.Lock()
		delete(rm.mu.sessions, sess.id)
		rm.mu.Unlock()
	}()
	a, err := rm.call(ctx, evRegister{sess: sess.id, reg: reg})
	if err != nil {
		return err
	}
	if a.err != nil {
		rm.log.Warn("registration refused", "taskmanager", reg.GetTaskManagerId(), "err", a.err)
		return withCode(codes.AlreadyExists, a.err)
	}
	err = rm.serve(stream, sess, in, recvErr)
	// A no-op when the ResourceManager ended the session itself.
	_, _ = rm.call(context.Background(), evSessionEnded{sess: sess.id, tm: sess.tmID, err: err})
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
				if _, err := rm.call(ctx, evWorkerExited{sess: sess.id, tm: sess.tmID, we: we}); err != nil {
					return err
				}
				continue
			}
			hb := m.GetHeartbeat()
			if hb == nil {
				return withCode(codes.InvalidArgument, fmt.Errorf("%w: unexpected %T after Register", ErrInvalidRegistration, m.GetMsg()))
			}
			if _, err := rm.call(ctx, evHeartbeat{sess: sess.id, tm: sess.tmID, hb: hb}); err != nil {
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
	id        sessionID
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
	d.rm.loop.Post(evWorkerStopped{resourceID: resourceID, diagnostics: diagnostics})
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
