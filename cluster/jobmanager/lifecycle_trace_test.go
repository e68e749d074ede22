package jobmanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/tracetest"
)

// lifecycleTrace drives a jobLifecycle from the lines of a trace. Times
// are ms. Events:
//
//	new
//	start AT [recover]
//	status AT STATUS [cancelled] [fail=TASK@TM:MSG]... [cause=MSG...]
//	    (the first fail= is the cause unless cause= is given; the others
//	    are the attempt's concurrent failures)
//	triggered ID KIND AT
//	completed ID KIND AT PATH
//	failed ID KIND AT REASON...
//	restored ID KIND AT PATH
//	cancel
//	ended [cancelled] [shutting-down]
//	state                 (phase, status, counts and the REST view)
//
// Output lines are the effects, and the answer's error.
type lifecycleTrace struct {
	l *jobLifecycle
}

func TestJobLifecycleTrace(t *testing.T) {
	tr := &lifecycleTrace{}
	tracetest.Replay(t, "testdata/lifecycle.txt", tr.do)
}

func parseKind(s string) (checkpoint.Kind, error) {
	for k := checkpoint.Checkpoint; k <= checkpoint.FullCheckpoint; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown kind %q", s)
}

func (tr *lifecycleTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		tr.l = &jobLifecycle{}
		return "", nil
	}
	if tr.l == nil {
		return "", errors.New("no lifecycle: start the block with new")
	}
	if f[0] == "state" {
		return tr.state(), nil
	}
	e, err := parseLifecycleEvent(f)
	if err != nil {
		return "", err
	}
	fx, err := tr.l.Step(e)
	out := lifecycleEffects(fx)
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	return strings.Join(out, "\n"), nil
}

// parseLifecycleEvent parses the fields of a lifecycle event (any but new
// and state).
func parseLifecycleEvent(f []string) (lcEvent, error) {
	num := func(i int) (int64, error) {
		if i >= len(f) {
			return 0, fmt.Errorf("%s: argument %d missing", f[0], i)
		}
		return strconv.ParseInt(f[i], 10, 64)
	}
	// ckpt parses "ID KIND AT" at f[1:4].
	ckpt := func() (jobmaster.CheckpointStats, error) {
		id, err1 := num(1)
		at, err2 := num(3)
		if err := errors.Join(err1, err2); err != nil {
			return jobmaster.CheckpointStats{}, err
		}
		k, err := parseKind(f[2])
		return jobmaster.CheckpointStats{ID: id, Kind: k, TriggerMillis: at, EndMillis: at}, err
	}
	var e lcEvent
	switch f[0] {
	case "start":
		at, err := num(1)
		if err != nil {
			return nil, err
		}
		e = lcStart{at: at, recover: slices.Contains(f[2:], "recover")}
	case "status":
		at, err := num(1)
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("status: want AT STATUS: %v", err)
		}
		ev := lcStatus{status: jobmaster.Status(f[2]), at: at}
		for i := 3; i < len(f); i++ {
			k, v, _ := strings.Cut(f[i], "=")
			switch k {
			case "cancelled":
				ev.cancelled = true
			case "fail":
				task, msg, ok1 := strings.Cut(v, ":")
				name, tm, ok2 := strings.Cut(task, "@")
				if !ok1 || !ok2 {
					return nil, fmt.Errorf("fail %q: want TASK@TM:MSG", v)
				}
				ev.failures = append(ev.failures, &TaskFailure{TaskName: name, TaskManagerID: tm, Class: "java.lang.RuntimeException",
					Millis: at, Err: errors.New(msg)})
			case "cause":
				ev.cause = errors.New(strings.Join(append([]string{v}, f[i+1:]...), " "))
				i = len(f)
			default:
				return nil, fmt.Errorf("unknown option %q", k)
			}
		}
		if ev.cause == nil && len(ev.failures) > 0 {
			ev.cause = fmt.Errorf("attempt failed: %w", ev.failures[0])
		}
		if ev.cancelled && ev.cause == nil {
			ev.cause = errors.New("job cancelled")
		}
		e = ev
	case "triggered":
		c, err := ckpt()
		if err != nil {
			return nil, err
		}
		e = lcCheckpointTriggered{c}
	case "completed":
		c, err := ckpt()
		if err != nil || len(f) < 5 {
			return nil, fmt.Errorf("completed: want ID KIND AT PATH: %v", err)
		}
		c.Path = f[4]
		e = lcCheckpointCompleted{c}
	case "failed":
		c, err := ckpt()
		if err != nil || len(f) < 5 {
			return nil, fmt.Errorf("failed: want ID KIND AT REASON: %v", err)
		}
		c.Err = errors.New(strings.Join(f[4:], " "))
		e = lcCheckpointFailed{c}
	case "restored":
		c, err := ckpt()
		if err != nil || len(f) < 5 {
			return nil, fmt.Errorf("restored: want ID KIND AT PATH: %v", err)
		}
		e = lcRestored{jobmaster.RestoreStats{ID: c.ID, Kind: c.Kind, Path: f[4], Millis: c.TriggerMillis}}
	case "cancel":
		e = lcCancel{}
	case "ended":
		e = lcEnded{cancelled: slices.Contains(f[1:], "cancelled"), shuttingDown: slices.Contains(f[1:], "shutting-down")}
	default:
		return nil, fmt.Errorf("unknown event %q", f[0])
	}
	return e, nil
}

// lifecycleEffects are the lines of a lifecycle's effects.
func lifecycleEffects(fx []lcEffect) []string {
	var out []string
	for _, x := range fx {
		switch x := x.(type) {
		case lfLog:
			s := strings.ToLower(x.level.String()) + " " + x.msg
			for i := 0; i+1 < len(x.args); i += 2 {
				s += fmt.Sprintf(" %v=%v", x.args[i], x.args[i+1])
			}
			out = append(out, s)
		case lfCheckpointInHA:
			out = append(out, "ha checkpoint "+x.path)
		case lfCancelJob:
			out = append(out, "cancel-job")
		case lfRemoveFromHA:
			out = append(out, "ha remove")
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", x))
		}
	}
	return out
}

func (tr *lifecycleTrace) state() string { return lifecycleState(tr.l) }

// lifecycleState describes l: its phase, status, counts and REST view.
func lifecycleState(l *jobLifecycle) string {
	st := l.stats
	var ts []string
	for _, s := range slices.Sorted(maps.Keys(st.timestamps)) {
		ts = append(ts, fmt.Sprintf("%s@%d", s, st.timestamps[s]))
	}
	out := []string{
		fmt.Sprintf("phase=%s status=%s start=%d end=%d restarts=%d timestamps=%s", l.phase, st.status, st.start, st.end,
			st.restarts, strings.Join(ts, ",")),
		fmt.Sprintf("checkpoints completed=%d failed=%d in-progress=%v restores=%d stop-savepoint=%q",
			st.ckpt.Completed, st.ckpt.Failed, slices.Sorted(maps.Keys(st.inProgress)), st.restores, st.stopSave),
	}
	ref := func(name string, c *jobmaster.CheckpointStats) {
		if c != nil {
			out = append(out, strings.TrimSpace(fmt.Sprintf("%s %d %s %s", name, c.ID, c.Kind, c.Path)))
		}
	}
	ref("latest", st.latest)
	ref("latest-savepoint", st.latestSave)
	ref("latest-failed", st.latestFail)
	if r := st.restored; r != nil {
		out = append(out, fmt.Sprintf("restored %d %s %s at %d", r.ID, r.Kind, r.Path, r.Millis))
	}
	for _, x := range st.exceptions {
		s := fmt.Sprintf("exception @%d %q task=%q tm=%q", x.Millis, x.Message, x.TaskName, x.TaskManagerID)
		for _, c := range x.Concurrent {
			s += fmt.Sprintf(" concurrent=%s@%s:%q", c.TaskName, c.TaskManagerID, c.Message)
		}
		out = append(out, s)
	}
	if st.err != nil {
		out = append(out, "err "+st.err.Error())
	}
	return strings.Join(out, "\n")
}
