package resourcemanager

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/tracetest"
	"github.com/sluice/sluice/scheduler"
)

// tableTrace drives a slotTable from the lines of a trace. Times are ms.
// Events:
//
//	new [interval=D] [timeout=D] [idle=D] [slots-per-tm=N] [strategy=pack|spread]
//	register NOW TM SLOTS [resource=R]     (a new session of TM)
//	heartbeat NOW TM [SLOT...]             (SLOT is JOB/ALLOC or . for free)
//	exited NOW TM JOB ATTEMPT WORKER STATUS
//	declare NOW JOB SLOTS [jm=ADDR]
//	ended NOW TM [ERR...]                  (ERR "eof" is io.EOF)
//	stale NOW TM                           (a heartbeat on TM's previous session)
//	stopped NOW RESOURCE DIAGNOSTICS...
//	full NOW TM                            (a send to TM found its queue full)
//	tick NOW
//	deadline | slots | tms                 (tms: the snapshot of TaskManagers)
//
// Allocation ids are a1, a2, ... in the order drawn. Output lines are the
// effects; sessions print as TM#N, numbered in the order of the register
// events. Debug logs are left out.
type tableTrace struct {
	t        *slotTable
	allocs   int
	sessions map[string][]sessionID // accepted ones by TaskManager, oldest first
	nextSess sessionID
}

func TestSlotTableTrace(t *testing.T) {
	tr := &tableTrace{}
	tracetest.Replay(t, "testdata/slottable.txt", tr.do)
}

func (tr *tableTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		return "", tr.reset(f[1:])
	}
	if tr.t == nil {
		return "", errors.New("no slot table: start the block with new")
	}
	switch f[0] {
	case "deadline":
		if at, ok := tr.t.Deadline(); ok {
			return strconv.FormatInt(at, 10), nil
		}
		return "none", nil
	case "slots":
		return tr.slots(), nil
	case "tms":
		_, ans := tr.t.Step(0, evSnapshot{})
		var out []string
		for _, in := range ans.tms {
			out = append(out, fmt.Sprintf("%s resource=%s address=%s slots=%d free=%d registered=%d heartbeat=%d",
				in.ID, in.ResourceID, in.Address, in.SlotsTotal, in.SlotsFree, in.RegisteredAt.UnixMilli(), in.LastHeartbeat.UnixMilli()))
		}
		if len(out) == 0 {
			return "none", nil
		}
		return strings.Join(out, "\n"), nil
	}
	if len(f) < 2 {
		return "", fmt.Errorf("%s: want a time", f[0])
	}
	now, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", err
	}
	args := f[2:]
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("%s: want %d arguments, got %d", f[0], n, len(args))
		}
		return nil
	}
	var e event
	switch f[0] {
	case "register":
		if err := need(2); err != nil {
			return "", err
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return "", err
		}
		reg := &clusterpb.Register{TaskManagerId: args[0], Address: args[0] + ":7000", Slots: int32(n)}
		for _, kv := range args[2:] {
			k, v, _ := strings.Cut(kv, "=")
			if k != "resource" {
				return "", fmt.Errorf("unknown option %q", k)
			}
			reg.ResourceId = v
		}
		tr.nextSess++
		sess := tr.nextSess
		fx, ans := tr.t.Step(now, evRegister{sess: sess, reg: reg})
		if ans.err == nil {
			tr.sessions[args[0]] = append(tr.sessions[args[0]], sess)
		}
		out := tr.effects(fx)
		if ans.err != nil {
			out = append(out, fmt.Sprintf("refused %s#%d: %v", args[0], sess, ans.err))
		}
		return strings.Join(out, "\n"), nil
	case "heartbeat", "stale":
		if err := need(1); err != nil {
			return "", err
		}
		hb := &clusterpb.Heartbeat{}
		for i, s := range args[1:] {
			st := &clusterpb.SlotStatus{Index: int32(i)}
			if s != "." {
				j, a, ok := strings.Cut(s, "/")
				if !ok {
					return "", fmt.Errorf("slot %q: want JOB/ALLOC or .", s)
				}
				st.JobId, st.AllocationId = j, a
			}
			hb.Slots = append(hb.Slots, st)
		}
		sess := tr.session(args[0])
		if f[0] == "stale" {
			s := tr.sessions[args[0]]
			if len(s) < 2 {
				return "", fmt.Errorf("stale: %s has no previous session", args[0])
			}
			sess = s[len(s)-2]
		}
		e = evHeartbeat{sess: sess, tm: args[0], hb: hb}
	case "exited":
		if err := need(5); err != nil {
			return "", err
		}
		attempt, err := strconv.Atoi(args[2])
		if err != nil {
			return "", err
		}
		e = evWorkerExited{sess: tr.session(args[0]), tm: args[0], we: &clusterpb.WorkerExited{
			JobId: args[1], Attempt: int32(attempt), WorkerId: args[3], Status: strings.Join(args[4:], " ")}}
	case "declare":
		if err := need(2); err != nil {
			return "", err
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return "", err
		}
		d := &clusterpb.SlotDemand{JobId: args[0], Slots: int32(n), JobMasterAddress: "jm:6123"}
		for _, kv := range args[2:] {
			k, v, _ := strings.Cut(kv, "=")
			if k != "jm" {
				return "", fmt.Errorf("unknown option %q", k)
			}
			d.JobMasterAddress = v
		}
		if err := validateDemand(d); err != nil {
			return "", err
		}
		e = evDeclare{d}
	case "ended":
		if err := need(1); err != nil {
			return "", err
		}
		var cause error
		switch msg := strings.Join(args[1:], " "); msg {
		case "", "eof":
			cause = io.EOF
		default:
			cause = errors.New(msg)
		}
		e = evSessionEnded{sess: tr.session(args[0]), tm: args[0], err: cause}
	case "stopped":
		if err := need(2); err != nil {
			return "", err
		}
		e = evWorkerStopped{resourceID: args[0], diagnostics: strings.Join(args[1:], " ")}
	case "full":
		if err := need(1); err != nil {
			return "", err
		}
		e = evQueueFull{sess: tr.session(args[0]), tm: args[0]}
	case "tick":
		e = evTick{}
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	fx, _ := tr.t.Step(now, e)
	return strings.Join(tr.effects(fx), "\n"), nil
}

func (tr *tableTrace) reset(opts []string) error {
	cfg := Config{ID: "rm", HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
		IdleTimeout: 30 * time.Second, SlotsPerTaskManager: 1}
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "interval", "timeout", "idle":
			var d time.Duration
			d, err = time.ParseDuration(v)
			switch k {
			case "interval":
				cfg.HeartbeatInterval = d
			case "timeout":
				cfg.HeartbeatTimeout = d
			case "idle":
				cfg.IdleTimeout = d
			}
		case "slots-per-tm":
			cfg.SlotsPerTaskManager, err = strconv.Atoi(v)
		case "strategy":
			switch v {
			case "pack":
				cfg.Strategy = scheduler.Pack
			case "spread":
				cfg.Strategy = scheduler.Spread
			default:
				err = fmt.Errorf("unknown strategy %q", v)
			}
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return err
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tr.allocs, tr.nextSess = 0, 0
	tr.sessions = make(map[string][]sessionID)
	tr.t = newSlotTable(cfg.withDefaults(), func() string {
		tr.allocs++
		return "a" + strconv.Itoa(tr.allocs)
	})
	return nil
}

// session is TaskManager tm's latest accepted session (0 if none).
func (tr *tableTrace) session(tm string) sessionID {
	s := tr.sessions[tm]
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// name prints a session as TM#N, N counting the sessions of the trace.
func (tr *tableTrace) name(tm string, sess sessionID) string {
	return fmt.Sprintf("%s#%d", tm, sess)
}

func (tr *tableTrace) effects(fx []effect) []string {
	var out []string
	for _, f := range fx {
		switch f := f.(type) {
		case fxSend:
			out = append(out, "send "+tr.name(f.tm, f.sess)+" "+message(f.msg))
		case fxClose:
			out = append(out, fmt.Sprintf("close %s: %s", tr.name(f.tm, f.sess), f.reason))
		case fxLost:
			l := f.lost
			out = append(out, fmt.Sprintf("lost %s resource=%s jobs=%s timeout=%t: %s",
				l.ID, l.ResourceID, strings.Join(l.Jobs, ","), l.HeartbeatTimeout, l.Reason))
		case fxExited:
			x := f.exited
			out = append(out, fmt.Sprintf("exited %s %s/%d/%s: %s", x.TaskManager, x.Job, x.Attempt, x.Worker, x.Status))
		case fxSetRequired:
			out = append(out, fmt.Sprintf("set-required %d", f.n))
		case fxRelease:
			out = append(out, "release "+f.resourceID)
		case fxLog:
			if f.level < slog.LevelInfo {
				continue
			}
			s := strings.ToLower(f.level.String()) + " "
			if f.tm != "" {
				s += f.tm + ": "
			}
			s += f.msg
			for i := 0; i+1 < len(f.args); i += 2 {
				s += fmt.Sprintf(" %v=%v", f.args[i], f.args[i+1])
			}
			out = append(out, s)
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", f))
		}
	}
	return out
}

func message(m *clusterpb.ResourceManagerMessage) string {
	switch m := m.GetMsg().(type) {
	case *clusterpb.ResourceManagerMessage_Registered:
		r := m.Registered
		return fmt.Sprintf("registered rm=%s interval=%d timeout=%d", r.GetResourceManagerId(), r.GetHeartbeatIntervalMs(), r.GetHeartbeatTimeoutMs())
	case *clusterpb.ResourceManagerMessage_Heartbeat:
		return fmt.Sprintf("heartbeat seq=%d", m.Heartbeat.GetSeq())
	case *clusterpb.ResourceManagerMessage_AllocateSlot:
		a := m.AllocateSlot
		return fmt.Sprintf("allocate slot=%d %s/%s jm=%s", a.GetIndex(), a.GetJobId(), a.GetAllocationId(), a.GetJobMasterAddress())
	case *clusterpb.ResourceManagerMessage_FreeSlots:
		return fmt.Sprintf("free-slots %s %s", m.FreeSlots.GetJobId(), strings.Join(m.FreeSlots.GetAllocationIds(), ","))
	default:
		return fmt.Sprintf("%T", m)
	}
}

// slots prints each TaskManager's slots: JOB/ALLOC, with * while pending,
// or . when free.
func (tr *tableTrace) slots() string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(tr.t.tms)) {
		tm := tr.t.tms[id]
		s := id + ":"
		for _, sl := range tm.slots {
			switch {
			case sl.jobID == "":
				s += " ."
			case sl.pending:
				s += " " + sl.jobID + "/" + sl.allocationID + "*"
			default:
				s += " " + sl.jobID + "/" + sl.allocationID
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n")
}
