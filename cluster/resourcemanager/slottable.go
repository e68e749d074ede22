package resourcemanager

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/cluster/loginwire"
	"github.com/sluice/sluice/scheduler"
	"github.com/sluice/sluice/security/kerberos"
)

// This file is the ResourceManager's slot table: a state machine without
// I/O, wall clock or randomness. It takes the events of TaskManager
// sessions, JobMasters' demands, the driver and the clock (event) and
// returns what to send, close, report, log and ask of the driver (effect).
// The ResourceManager's owner loop (package ownerloop) carries the effects
// out; trace_test.go drives the table directly.

// sessionID names one Connect stream. A TaskManager that registers again
// does so in a new session; events of an ended session are ignored.
type sessionID uint64

// event is an input of the slot table.
type event interface{ isEvent() }

// evRegister: a TaskManager sent Register (already validated) on session
// sess. The answer's err says why it is refused.
type evRegister struct {
	sess sessionID
	reg  *clusterpb.Register
}

// evHeartbeat: a registered TaskManager's heartbeat with its slot report.
type evHeartbeat struct {
	sess sessionID
	tm   string
	hb   *clusterpb.Heartbeat
}

// evWorkerExited: a TaskManager reports a worker that exited unasked.
type evWorkerExited struct {
	sess sessionID
	tm   string
	we   *clusterpb.WorkerExited
}

// evDeclare: a JobMaster's (validated) slot demand.
type evDeclare struct{ d *clusterpb.SlotDemand }

// evSessionEnded: the stream of session sess ended with err (io.EOF: the
// TaskManager closed it).
type evSessionEnded struct {
	sess sessionID
	tm   string
	err  error
}

// evWorkerStopped: the driver reports a TaskManager's resource gone.
type evWorkerStopped struct{ resourceID, diagnostics string }

// evQueueFull: a message for session sess could not be queued: the
// TaskManager does not read its stream. A follow-up of a send effect.
type evQueueFull struct {
	sess sessionID
	tm   string
}

// evTick: the table's deadline has come.
type evTick struct{}

// evSnapshot asks for the registered TaskManagers (answer.tms).
type evSnapshot struct{}

func (evRegister) isEvent()      {}
func (evHeartbeat) isEvent()     {}
func (evWorkerExited) isEvent()  {}
func (evDeclare) isEvent()       {}
func (evSessionEnded) isEvent()  {}
func (evWorkerStopped) isEvent() {}
func (evQueueFull) isEvent()     {}
func (evTick) isEvent()          {}
func (evSnapshot) isEvent()      {}

// answer is the table's answer to the submitter of an event.
type answer struct {
	err error             // evRegister: why it was refused
	tms []TaskManagerInfo // evSnapshot: sorted by id
}

// effect is an output of the slot table, to carry out in order.
type effect interface{ isEffect() }

// fxSend: queue msg on session sess (of TaskManager tm). When the queue is
// full, report evQueueFull.
type fxSend struct {
	sess sessionID
	tm   string
	msg  *clusterpb.ResourceManagerMessage
}

// fxClose: end session sess with reason (sent to the TaskManager as
// Disconnect after what is queued).
type fxClose struct {
	sess   sessionID
	tm     string
	reason string
}

// fxLost: report a lost TaskManager (Config.OnTaskManagerLost).
type fxLost struct{ lost LostTaskManager }

// fxExited: report an exited worker (Config.OnWorkerExited).
type fxExited struct{ exited ExitedWorker }

// fxSetRequired: Driver.SetRequired(n).
type fxSetRequired struct{ n int }

// fxRelease: Driver.Release(resourceID).
type fxRelease struct{ resourceID string }

// fxLog: log msg with args at level, scoped to TaskManager tm if set.
type fxLog struct {
	level slog.Level
	tm    string
	msg   string
	args  []any
}

func (fxSend) isEffect()        {}
func (fxClose) isEffect()       {}
func (fxLost) isEffect()        {}
func (fxExited) isEffect()      {}
func (fxSetRequired) isEffect() {}
func (fxRelease) isEffect()     {}
func (fxLog) isEffect()         {}

// slotTable is the ResourceManager's state: registered TaskManagers and
// their slots, the jobs' demands, heartbeats and idle TaskManagers. It
// implements ownerloop.Machine; it is not safe for concurrent use.
type slotTable struct {
	id                         string
	interval, timeout, idleFor int64 // ms
	slotsPerTM                 int
	strategy                   scheduler.Strategy
	newAllocationID            func() string

	tms           map[string]*taskManager // by TaskManager id
	jobs          map[string]*job
	jobSeq        uint64
	hb            *scheduler.Heartbeats
	nextHeartbeat int64
	hbSeq         int64
	required      int             // last SetRequired; -1 before the first
	surplus       map[string]bool // idle TaskManagers the demand does not need
	short         int             // slots demanded and not held, last logged

	fx []effect // of the current step
}

type taskManager struct {
	id, resourceID, address, hostname string
	pid                               int64
	dataPort                          int
	hardware                          Hardware
	profile                           Resources
	slots                             []slot
	sess                              sessionID
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

// newSlotTable returns the slot table of a ResourceManager configured by
// cfg (with defaults applied); newAllocationID draws the id of each slot
// assignment.
func newSlotTable(cfg Config, newAllocationID func() string) *slotTable {
	return &slotTable{
		id:              cfg.ID,
		interval:        cfg.HeartbeatInterval.Milliseconds(),
		timeout:         cfg.HeartbeatTimeout.Milliseconds(),
		idleFor:         cfg.IdleTimeout.Milliseconds(),
		slotsPerTM:      cfg.SlotsPerTaskManager,
		strategy:        cfg.Strategy,
		newAllocationID: newAllocationID,
		tms:             make(map[string]*taskManager),
		jobs:            make(map[string]*job),
		hb:              scheduler.NewHeartbeats(cfg.HeartbeatTimeout.Milliseconds()),
		required:        -1,
	}
}

// Step implements ownerloop.Machine.
func (t *slotTable) Step(now int64, e event) ([]effect, answer) {
	var ans answer
	switch e := e.(type) {
	case evRegister:
		ans.err = t.register(e.sess, e.reg, now)
	case evHeartbeat:
		t.heartbeat(e, now)
	case evWorkerExited:
		t.workerExited(e)
	case evDeclare:
		t.declare(e.d, now)
	case evSessionEnded:
		t.sessionEnded(e, now)
	case evWorkerStopped:
		t.workerStopped(e)
		t.schedule(now)
	case evQueueFull:
		if tm := t.current(e.sess, e.tm); tm != nil {
			t.lose(tm, "its message queue is full", false)
			t.schedule(now)
		}
	case evTick:
		t.tick(now)
	case evSnapshot:
		for _, id := range slices.Sorted(maps.Keys(t.tms)) {
			ans.tms = append(ans.tms, t.tms[id].info())
		}
	default:
		panic(fmt.Sprintf("resourcemanager: unknown event %T", e))
	}
	fx := t.fx
	t.fx = nil
	return fx, ans
}

// sessions returns the sessions of the registered TaskManagers.
func (t *slotTable) sessions() []sessionID {
	var out []sessionID
	for _, tm := range t.tms {
		out = append(out, tm.sess)
	}
	return out
}

func (t *slotTable) emit(f effect) { t.fx = append(t.fx, f) }

func (t *slotTable) log(level slog.Level, tm, msg string, args ...any) {
	t.emit(fxLog{level: level, tm: tm, msg: msg, args: args})
}

func (t *slotTable) send(tm *taskManager, m *clusterpb.ResourceManagerMessage) {
	t.emit(fxSend{sess: tm.sess, tm: tm.id, msg: m})
}

// current returns TaskManager id if sess is its session.
func (t *slotTable) current(sess sessionID, id string) *taskManager {
	if tm := t.tms[id]; tm != nil && tm.sess == sess {
		return tm
	}
	return nil
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

func (t *slotTable) register(sess sessionID, r *clusterpb.Register, now int64) error {
	resourceID := cmp.Or(r.GetResourceId(), r.GetTaskManagerId())
	if old, dup := t.tms[r.GetTaskManagerId()]; dup {
		return fmt.Errorf("%w: TaskManager %q is registered from %s since %s; it may register again once that session ends",
			ErrDuplicateTaskManager, old.id, old.address, time.UnixMilli(old.registeredAt).UTC().Format(time.RFC3339))
	}
	for _, old := range t.tms {
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
	if len(t.tms) == 0 {
		t.nextHeartbeat = now + t.interval
	}
	t.tms[tm.id] = tm
	t.hb.Seen(tm.id, now)
	t.send(tm, &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Registered{Registered: &clusterpb.Registered{
		ResourceManagerId:   t.id,
		HeartbeatIntervalMs: t.interval,
		HeartbeatTimeoutMs:  t.timeout,
	}}})
	t.log(slog.LevelInfo, tm.id, "TaskManager registered", "address", tm.address, "hostname", tm.hostname, "resource", tm.resourceID,
		"slots", len(tm.slots), "pid", tm.pid)
	t.schedule(now)
	return nil
}

// workerExited reports a registered TaskManager's report of a worker's
// exit.
func (t *slotTable) workerExited(e evWorkerExited) {
	tm := t.current(e.sess, e.tm)
	if tm == nil {
		return // from a session that has ended
	}
	we := e.we
	t.log(slog.LevelInfo, tm.id, "worker exited", "job", we.GetJobId(), "attempt", we.GetAttempt(), "worker", we.GetWorkerId(), "status", we.GetStatus())
	t.emit(fxExited{ExitedWorker{TaskManager: tm.id, Job: we.GetJobId(), Attempt: int(we.GetAttempt()),
		Worker: we.GetWorkerId(), Status: we.GetStatus(), StderrTail: we.GetStderrTail()}})
}

func (t *slotTable) heartbeat(e evHeartbeat, now int64) {
	tm := t.current(e.sess, e.tm)
	if tm == nil {
		return // from a session that has ended
	}
	hb := e.hb
	t.hb.Seen(tm.id, now)
	tm.lastHeartbeat = now
	tm.kerberos = nil
	if k := hb.GetKerberos(); k != nil {
		s := loginwire.Status(k)
		tm.kerberos = &s
	}
	if h := hb.GetHardware(); h != nil {
		tm.hardware = hardwareOf(h)
	}
	if t.reconcile(tm, hb.GetSlots()) {
		t.schedule(now)
	}
}

// reconcile applies a TaskManager's slot report and says whether a slot
// changed hands. The report is the truth, except for a slot assigned here
// whose allocation the report does not show yet.
func (t *slotTable) reconcile(tm *taskManager, report []*clusterpb.SlotStatus) bool {
	changed := false
	for _, s := range report {
		i := int(s.GetIndex())
		if i < 0 || i >= len(tm.slots) {
			t.log(slog.LevelWarn, tm.id, "slot report names a slot the TaskManager did not register", "index", i, "slots", len(tm.slots))
			continue
		}
		if (s.GetAllocationId() == "") != (s.GetJobId() == "") {
			t.log(slog.LevelWarn, tm.id, "slot report with an allocation id but no job, or a job but no allocation id; ignored",
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
			t.log(slog.LevelDebug, tm.id, "slot free", "index", i, "job", cur.jobID, "allocation", cur.allocationID)
			*cur = slot{}
			changed = true
		default:
			if cur.pending {
				t.log(slog.LevelWarn, tm.id, "TaskManager holds a slot for another allocation than the one assigned",
					"index", i, "assigned", cur.allocationID, "held", s.GetAllocationId(), "job", s.GetJobId())
			}
			*cur = slot{jobID: s.GetJobId(), allocationID: s.GetAllocationId()}
			changed = true
		}
	}
	return changed
}

func (t *slotTable) declare(d *clusterpb.SlotDemand, now int64) {
	j := t.jobs[d.GetJobId()]
	if d.GetSlots() == 0 {
		if j == nil {
			return
		}
		delete(t.jobs, j.id)
		t.log(slog.LevelInfo, "", "slot demand ended", "job", j.id)
		for _, id := range slices.Sorted(maps.Keys(t.tms)) {
			tm := t.tms[id]
			var allocs []string
			for _, s := range tm.slots {
				if s.jobID == j.id {
					allocs = append(allocs, s.allocationID)
				}
			}
			if len(allocs) > 0 {
				t.send(tm, &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_FreeSlots{
					FreeSlots: &clusterpb.FreeSlotsRequest{JobId: j.id, AllocationIds: allocs}}})
			}
		}
		t.schedule(now)
		return
	}
	if j == nil {
		t.jobSeq++
		j = &job{id: d.GetJobId(), order: t.jobSeq}
		t.jobs[j.id] = j
	}
	if j.slots != int(d.GetSlots()) || j.address != d.GetJobMasterAddress() {
		t.log(slog.LevelInfo, "", "slot demand", "job", j.id, "slots", d.GetSlots(), "jobmaster", d.GetJobMasterAddress())
	}
	j.slots, j.address = int(d.GetSlots()), d.GetJobMasterAddress()
	t.schedule(now)
}

func (t *slotTable) sessionEnded(e evSessionEnded, now int64) {
	tm := t.current(e.sess, e.tm)
	if tm == nil {
		return
	}
	reason := "the TaskManager closed its session"
	if e.err != nil && !errors.Is(e.err, io.EOF) {
		reason = "session ended: " + e.err.Error()
	}
	t.lose(tm, reason, false)
	t.schedule(now)
}

func (t *slotTable) workerStopped(e evWorkerStopped) {
	for _, tm := range t.tms {
		if tm.resourceID == e.resourceID {
			t.lose(tm, "stopped by the platform: "+e.diagnostics, false)
			return
		}
	}
	t.log(slog.LevelInfo, "", "platform reports a stopped TaskManager that is not registered", "resource", e.resourceID, "diagnostics", e.diagnostics)
}

// lose forgets a TaskManager, closes its session and reports it; timeout
// says whether it was silent for the heartbeat timeout. The caller
// schedules afterwards.
func (t *slotTable) lose(tm *taskManager, reason string, timeout bool) {
	if t.tms[tm.id] != tm {
		return
	}
	delete(t.tms, tm.id)
	t.hb.Forget(tm.id)
	t.emit(fxClose{sess: tm.sess, tm: tm.id, reason: reason})
	jobs := make(map[string]bool)
	for _, s := range tm.slots {
		if s.jobID != "" {
			jobs[s.jobID] = true
		}
	}
	l := LostTaskManager{ID: tm.id, ResourceID: tm.resourceID, Address: tm.address, Reason: reason, HeartbeatTimeout: timeout, Jobs: slices.Sorted(maps.Keys(jobs))}
	t.log(slog.LevelWarn, tm.id, "TaskManager lost", "reason", reason, "jobs", l.Jobs)
	t.emit(fxLost{l})
}

// tick sends heartbeats, loses silent TaskManagers, frees assignments the
// TaskManagers never confirmed, and releases idle TaskManagers.
func (t *slotTable) tick(now int64) {
	if len(t.tms) > 0 && now >= t.nextHeartbeat {
		t.hbSeq++
		for _, id := range slices.Sorted(maps.Keys(t.tms)) {
			t.send(t.tms[id], &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: t.hbSeq}}})
		}
		t.nextHeartbeat = now + t.interval
	}
	for _, id := range t.hb.Expire(now) {
		if tm := t.tms[id]; tm != nil {
			t.lose(tm, fmt.Sprintf("no heartbeat for %v (heartbeat.timeout)", time.Duration(t.timeout)*time.Millisecond), true)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.tms)) {
		tm := t.tms[id]
		for i := range tm.slots {
			if s := &tm.slots[i]; s.pending && now-s.pendingSince >= t.timeout {
				t.log(slog.LevelWarn, tm.id, "assigned slot not confirmed by the TaskManager in time; freed",
					"index", i, "job", s.jobID, "allocation", s.allocationID)
				*s = slot{}
			}
		}
	}
	t.schedule(now)
}

// Deadline implements ownerloop.Machine: when tick must run next.
func (t *slotTable) Deadline() (int64, bool) {
	var next int64
	ok := false
	at := func(d int64) {
		if !ok || d < next {
			next, ok = d, true
		}
	}
	if len(t.tms) > 0 {
		at(t.nextHeartbeat)
	}
	if d, has := t.hb.NextDeadline(); has {
		at(d)
	}
	for _, tm := range t.tms {
		for _, s := range tm.slots {
			if s.pending {
				at(s.pendingSince + t.timeout)
			}
		}
		if t.surplus[tm.id] && !tm.released {
			at(tm.idleSince + t.idleFor)
		}
	}
	return next, ok
}

func (t *slotTable) view() ([]scheduler.Demand, []scheduler.TaskManager) {
	jobs := slices.SortedFunc(maps.Values(t.jobs), func(a, b *job) int { return cmp.Compare(a.order, b.order) })
	demands := make([]scheduler.Demand, len(jobs))
	for i, j := range jobs {
		demands[i] = scheduler.Demand{JobID: j.id, Slots: j.slots}
	}
	tms := make([]scheduler.TaskManager, 0, len(t.tms))
	for _, tm := range t.tms {
		st := scheduler.TaskManager{ID: tm.id, Slots: make([]scheduler.Slot, len(tm.slots))}
		for i, s := range tm.slots {
			st.Slots[i].JobID = s.jobID
		}
		tms = append(tms, st)
	}
	return demands, tms
}

// schedule assigns free slots to jobs, tells the driver how many
// TaskManagers the demand needs, and releases idle surplus TaskManagers.
func (t *slotTable) schedule(now int64) {
	demands, tms := t.view()
	for _, a := range scheduler.MatchSlots(demands, tms, t.strategy) {
		tm, j := t.tms[a.TaskManagerID], t.jobs[a.JobID]
		alloc := t.newAllocationID()
		tm.slots[a.Index] = slot{jobID: j.id, allocationID: alloc, pending: true, pendingSince: now}
		t.log(slog.LevelDebug, tm.id, "slot assigned", "index", a.Index, "job", j.id, "allocation", alloc)
		t.send(tm, &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_AllocateSlot{AllocateSlot: &clusterpb.AllocateSlot{
			Index: int32(a.Index), AllocationId: alloc, JobId: j.id, JobMasterAddress: j.address,
		}}})
	}

	demands, tms = t.view()
	capacity := scheduler.PlanCapacity(demands, tms, t.slotsPerTM)
	if capacity.Required != t.required {
		t.log(slog.LevelInfo, "", "TaskManagers required", "required", capacity.Required, "registered", len(t.tms))
		t.required = capacity.Required
		t.emit(fxSetRequired{capacity.Required})
	}

	held := make(map[string]int)
	for _, tm := range t.tms {
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
	t.surplus = make(map[string]bool, len(capacity.Surplus))
	for _, id := range capacity.Surplus {
		t.surplus[id] = true
		tm := t.tms[id]
		if !tm.released && now-tm.idleSince >= t.idleFor {
			tm.released = true
			// Debug: what happens is the driver's to say (YARN logs the
			// container it releases; a standalone cluster keeps its
			// TaskManagers).
			t.log(slog.LevelDebug, tm.id, "idle TaskManager not needed; asking the driver to release it", "resource", tm.resourceID, "idle", time.Duration(now-tm.idleSince)*time.Millisecond)
			t.emit(fxRelease{tm.resourceID})
		}
	}
	short := 0
	for _, d := range demands {
		short += max(0, d.Slots-held[d.JobID])
	}
	if short != t.short {
		if short > 0 {
			t.log(slog.LevelInfo, "", "slot demand exceeds the free slots of the registered TaskManagers",
				"missing_slots", short, "taskmanagers", len(t.tms), "required", capacity.Required)
		} else {
			t.log(slog.LevelInfo, "", "slot demand met", "taskmanagers", len(t.tms))
		}
		t.short = short
	}
}
