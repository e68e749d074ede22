package checkpoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// coordTrace drives a Coordinator from the lines of a trace. Events:
//
//	new [interval=D] [timeout=D] [min-pause=D] [max-concurrent=N] [tolerable=N]
//	    [mode=EXACTLY_ONCE|AT_LEAST_ONCE] sources=T,.. tasks=T,.. [now=MS] [first=ID]
//	tick NOW
//	savepoint NOW KIND
//	checkpoint NOW KIND       (a user's checkpoint: checkpoint or full-checkpoint)
//	ack NOW ID TASK           (the snapshot is "s<ID>@<TASK>", checked in complete)
//	decline NOW ID TASK REASON...   (REASON "subsumed" or "not-ready" wrap the sentinels)
//	finished TASK
//	persisted ID
//	persist-failed ID REASON...
//	trigger-failed NOW ID REASON...
//	shutdown REASON...
//	pending | last | deadline | next-id
type coordTrace struct {
	c *Coordinator
}

func (tr *coordTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] != "new" && tr.c == nil {
		return "", errors.New("no coordinator: start the block with new")
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	num := func(i int) (int64, error) { return strconv.ParseInt(arg(i), 10, 64) }
	rest := func(i int) error {
		if i >= len(f) {
			return errors.New("no reason given")
		}
		s := strings.Join(f[i:], " ")
		switch s {
		case "subsumed":
			return fmt.Errorf("barrier overtaken: %w", ErrSubsumed)
		case "not-ready":
			return fmt.Errorf("task closing: %w", ErrTaskNotReady)
		}
		return errors.New(s)
	}
	switch f[0] {
	case "new":
		var opts Options
		var sources, all []TaskID
		var now int64
		first := ID(1)
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			var n int64
			switch k {
			case "interval", "timeout", "min-pause":
				var d time.Duration
				d, err = time.ParseDuration(v)
				switch k {
				case "interval":
					opts.Interval = d
				case "timeout":
					opts.Timeout = d
				case "min-pause":
					opts.MinPause = d
				}
			case "max-concurrent":
				opts.MaxConcurrent, err = strconv.Atoi(v)
			case "tolerable":
				opts.TolerableFailures, err = strconv.Atoi(v)
			case "mode":
				opts.Mode, err = ParseMode(v)
			case "sources":
				sources, err = parseTasks(v)
			case "tasks":
				all, err = parseTasks(v)
			case "now":
				now, err = strconv.ParseInt(v, 10, 64)
			case "first":
				n, err = strconv.ParseInt(v, 10, 64)
				first = ID(n)
			default:
				err = fmt.Errorf("unknown option %q", k)
			}
			if err != nil {
				return "", err
			}
		}
		if err := opts.Validate(); err != nil {
			return "", err
		}
		tr.c = NewCoordinator(opts, sources, all, now, first)
		return "", nil
	case "tick":
		now, err := num(1)
		if err != nil {
			return "", err
		}
		return tr.actions(tr.c.Tick(now))
	case "savepoint", "checkpoint":
		now, err := num(1)
		if err != nil {
			return "", err
		}
		kind, err := parseKind(arg(2))
		if err != nil {
			return "", err
		}
		trigger, name := tr.c.TriggerSavepoint, "TriggerSavepoint"
		if f[0] == "checkpoint" {
			trigger, name = tr.c.TriggerCheckpoint, "TriggerCheckpoint"
		}
		id, acts, err := trigger(now, kind)
		if err != nil {
			if id != 0 || acts != nil {
				return "", fmt.Errorf("%s failed with id %d and actions %v", name, id, acts)
			}
			return "error: " + err.Error(), nil
		}
		if len(acts) != 1 || acts[0].(TriggerBarrier).ID != id {
			return "", fmt.Errorf("%s returned id %d with %v", name, id, acts)
		}
		return tr.actions(acts)
	case "ack", "decline":
		now, err1 := num(1)
		id, err2 := num(2)
		task, err3 := parseTask(arg(3))
		if err := errors.Join(err1, err2, err3); err != nil {
			return "", err
		}
		if f[0] == "ack" {
			return tr.actions(tr.c.Ack(now, ID(id), task, snapOf(ID(id), task)))
		}
		return tr.actions(tr.c.Decline(now, ID(id), task, rest(4)))
	case "finished":
		task, err := parseTask(arg(1))
		if err != nil {
			return "", err
		}
		return tr.actions(tr.c.TaskFinished(task))
	case "persisted", "persist-failed":
		id, err := num(1)
		if err != nil {
			return "", err
		}
		if f[0] == "persisted" {
			return tr.actions(tr.c.Persisted(ID(id)))
		}
		return tr.actions(tr.c.PersistFailed(ID(id), rest(2)))
	case "trigger-failed":
		now, err1 := num(1)
		id, err2 := num(2)
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		return tr.actions(tr.c.TriggerFailed(now, ID(id), rest(3)))
	case "shutdown":
		return tr.actions(tr.c.Shutdown(rest(1)))
	case "pending":
		return joinInts(tr.c.Pending()), nil
	case "last":
		if id, ok := tr.c.LastCompleted(); ok {
			return strconv.FormatInt(int64(id), 10), nil
		}
		return "none", nil
	case "deadline":
		if at, ok := tr.c.Deadline(); ok {
			return strconv.FormatInt(at, 10), nil
		}
		return "none", nil
	case "next-id":
		return strconv.FormatInt(int64(tr.c.NextID()), 10), nil
	}
	return "", fmt.Errorf("unknown event %q", f[0])
}

func snapOf(id ID, t TaskID) string { return fmt.Sprintf("s%d@%s", id, t) }

func (tr *coordTrace) actions(acts []Action) (string, error) {
	var out []string
	for _, a := range acts {
		switch a := a.(type) {
		case TriggerBarrier:
			out = append(out, fmt.Sprintf("trigger %d %s ts=%d at %s", a.ID, a.Kind, a.Timestamp, joinTasks(a.Tasks)))
		case Complete:
			keys := sortedKeys(a.Snapshots, TaskID.Compare)
			for _, k := range keys {
				if a.Snapshots[k] != snapOf(a.ID, k) {
					return "", fmt.Errorf("complete %d: snapshot of %s is %v, want %s", a.ID, k, a.Snapshots[k], snapOf(a.ID, k))
				}
			}
			s := fmt.Sprintf("complete %d %s ts=%d snaps=%s", a.ID, a.Kind, a.Timestamp, joinTasks(keys))
			if len(a.Finished) > 0 {
				s += " finished=" + joinTasks(a.Finished)
			}
			out = append(out, s)
		case NotifyComplete:
			out = append(out, fmt.Sprintf("notify %d", a.ID))
		case Abort:
			out = append(out, fmt.Sprintf("abort %d (%v)", a.ID, a.Reason))
		case FailJob:
			if !errors.Is(a.Reason, ErrTooManyFailures) {
				return "", fmt.Errorf("fail-job reason %v does not match ErrTooManyFailures", a.Reason)
			}
			out = append(out, fmt.Sprintf("fail-job (%v)", a.Reason))
		default:
			return "", fmt.Errorf("unknown action %T", a)
		}
	}
	return strings.Join(out, "; "), nil
}

func TestCoordinatorTraces(t *testing.T) {
	tr := &coordTrace{}
	replay(t, "testdata/coordinator.txt", tr.do)
}
