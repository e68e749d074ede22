package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/tracetest"
)

// lifecycleTrace drives a job's lifecycle from the lines of a trace. Times
// are ms. Events:
//
//	new none|fixed-delay ATTEMPTS DELAY|failure-rate MAX INTERVAL DELAY [recover]
//	start AT
//	restored AT [restore] [ctx-done] [err=MSG...]
//	deployed AT [ctx-done] [err=MSG...]
//	ended AT [ctx-done] [unrecoverable] [err=MSG...]   (every task of the attempt ended)
//	tick AT
//	cancelled AT
//	state
//
// Output lines are the effects, then the deadline the machine asks for,
// if any ("deadline AT").
type lifecycleTrace struct {
	l *lifecycle
}

func TestLifecycleTrace(t *testing.T) {
	tr := &lifecycleTrace{}
	tracetest.Replay(t, "testdata/lifecycle.txt", tr.do)
}

func (tr *lifecycleTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		return "", tr.newLifecycle(f[1:])
	}
	if tr.l == nil {
		return "", errors.New("no lifecycle: start the trace with new")
	}
	if f[0] == "state" {
		return fmt.Sprintf("phase=%s restarts=%d deployed=%v", tr.l.phase, tr.l.restarts, tr.l.deployed), nil
	}
	if len(f) < 2 {
		return "", fmt.Errorf("%s: no time", f[0])
	}
	at, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", err
	}
	kinds := map[string]lcEventKind{"start": evStart, "restored": evRestored, "deployed": evDeployed,
		"ended": evAttemptEnded, "tick": evTick, "cancelled": evCancelled}
	kind, ok := kinds[f[0]]
	if !ok {
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	e := lcEvent{kind: kind}
	if kind == evCancelled {
		e.cause = context.Canceled
	}
	unrecoverable := false
	for i, a := range f[2:] {
		switch {
		case a == "restore":
			e.restored = true
		case a == "ctx-done":
			e.ctxDone, e.cause = true, context.Canceled
		case a == "unrecoverable":
			unrecoverable = true
		case strings.HasPrefix(a, "err="):
			e.err = errors.New(strings.Join(append([]string{strings.TrimPrefix(a, "err=")}, f[2+i+1:]...), " "))
		default:
			if e.err == nil {
				return "", fmt.Errorf("unknown argument %q", a)
			}
		}
		if e.err != nil {
			break
		}
	}
	if unrecoverable {
		e.err = &restart.Unrecoverable{Err: e.err}
	}
	fx, _ := tr.l.Step(at, e)
	var out []string
	for _, x := range fx {
		out = append(out, formatEffect(x))
	}
	if d, ok := tr.l.Deadline(); ok {
		out = append(out, fmt.Sprintf("deadline %d", d))
	}
	return strings.Join(out, "\n"), nil
}

func (tr *lifecycleTrace) newLifecycle(args []string) error {
	recover := len(args) > 0 && args[len(args)-1] == "recover"
	if recover {
		args = args[:len(args)-1]
	}
	ms := func(s string) (time.Duration, error) {
		n, err := strconv.Atoi(s)
		return time.Duration(n) * time.Millisecond, err
	}
	var s restart.Strategy
	switch {
	case len(args) == 1 && args[0] == "none":
		s = restart.NoRestart{}
	case len(args) == 3 && args[0] == "fixed-delay":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		d, err := ms(args[2])
		if err != nil {
			return err
		}
		if s, err = restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: n, Delay: d}); err != nil {
			return err
		}
	case len(args) == 4 && args[0] == "failure-rate":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		iv, err := ms(args[2])
		if err != nil {
			return err
		}
		d, err := ms(args[3])
		if err != nil {
			return err
		}
		if s, err = restart.NewFailureRate(restart.FailureRateOptions{MaxFailuresPerInterval: n, Interval: iv, Delay: d}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("new %q: want none, fixed-delay ATTEMPTS DELAY or failure-rate MAX INTERVAL DELAY", args)
	}
	tr.l = &lifecycle{restart: s, recover: recover}
	return nil
}

func formatEffect(x lcEffect) string {
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return " err=" + err.Error()
	}
	switch x.kind {
	case fxLoadRestore:
		what := "initial"
		if x.recover {
			what = "recovery"
		}
		return fmt.Sprintf("load-restore %s attempt=%d", what, x.attempt)
	case fxDeploy:
		return fmt.Sprintf("deploy attempt=%d", x.attempt)
	case fxRun:
		return fmt.Sprintf("run attempt=%d", x.attempt)
	case fxReportRestore:
		return fmt.Sprintf("report-restore attempt=%d at=%d", x.attempt, x.at)
	case fxStatus:
		return fmt.Sprintf("status %s at=%d%s", x.status, x.at, errText(x.err))
	case fxLogRestart:
		return fmt.Sprintf("log-restart attempt=%d delay=%v deployed=%v%s", x.attempt, x.delay, x.deployed, errText(x.err))
	case fxCleanup:
		return fmt.Sprintf("cleanup finished=%v", x.finished)
	case fxEnd:
		return fmt.Sprintf("end restarts=%d duration=%v cancelled=%v%s", x.restarts, x.duration, IsCancelled(x.err), errText(x.err))
	}
	return fmt.Sprintf("effect %d", x.kind)
}
