package jobmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/tracetest"
)

// attemptBookTrace drives an attemptBook from the lines of a trace.
// Events:
//
//	new JOB N                 (attempt N of job JOB)
//	tm TM ADDR
//	expect WORKER@TM...
//	hello WORKER [ATTEMPT]
//	deploy-ended
//	connected TM NAME         (the session NAME of the worker on TM)
//	lost TM [timeout]
//	exited N TM [WORKER]      (WORKER default: attempt N's worker on TM)
//	start
//	ended CHAIN SUBTASK [failed|canceled]
//	release
//	state
//
// Output lines are the effects, then the answer (ok, or the error).
type attemptBookTrace struct {
	b     *attemptBook
	names map[*session]string
}

func TestAttemptBookTrace(t *testing.T) {
	tr := &attemptBookTrace{}
	tracetest.Replay(t, "testdata/attemptbook.txt", tr.do)
}

func (tr *attemptBookTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	if f[0] == "new" {
		n, err := strconv.Atoi(arg(2))
		tr.b, tr.names = newAttemptBook(arg(1), n), map[*session]string{}
		return "", err
	}
	if tr.b == nil {
		return "", errors.New("no attempt: start the block with new")
	}
	var e abEvent
	switch f[0] {
	case "state":
		return tr.state(), nil
	case "tm":
		e = abTaskManager{tm: arg(1), addr: arg(2)}
	case "expect":
		ws := map[string]string{}
		for _, x := range f[1:] {
			w, tm, ok := strings.Cut(x, "@")
			if !ok {
				return "", fmt.Errorf("expect %q: want WORKER@TM", x)
			}
			ws[w] = tm
		}
		e = abExpect{ws}
	case "hello":
		n, _ := strconv.Atoi(arg(2))
		e = abHello{worker: arg(1), attempt: n}
	case "deploy-ended":
		e = abDeployEnded{}
	case "connected":
		s := &session{hello: &clusterpb.Hello{WorkerId: arg(2), TaskManagerId: arg(1)}}
		tr.names[s] = arg(2)
		e = abConnected{tm: arg(1), s: s}
	case "lost":
		e = abTaskManagerLost{&TaskManagerLostError{TaskManager: arg(1), Reason: "gone", HeartbeatTimeout: arg(2) == "timeout"}}
	case "exited":
		n, err := strconv.Atoi(arg(1))
		if err != nil {
			return "", err
		}
		w := arg(3)
		if w == "" {
			w = workerID(tr.b.job, n, arg(2))
		}
		e = abWorkerExited{n: n, err: &WorkerExitedError{TaskManager: arg(2), Worker: w, Status: "exit status 2"}}
	case "start":
		e = abStart{}
	case "ended":
		c, err1 := strconv.Atoi(arg(1))
		k, err2 := strconv.Atoi(arg(2))
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		t := checkpoint.TaskID{Vertex: c, Subtask: k}
		var err error
		switch arg(3) {
		case "failed":
			err = &TaskFailure{Task: t, TaskName: fmt.Sprintf("chain%d (%d)", c, k+1), Err: errors.New("boom")}
		case "canceled":
			err = context.Canceled
		}
		e = abTaskEnded{t: t, err: err}
	case "release":
		e = abRelease{}
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	fx, a := tr.b.Step(e)
	var out []string
	for _, x := range fx {
		switch x := x.(type) {
		case afLoseTaskManager:
			s := "lose-taskmanager " + x.tm
			if x.err != nil {
				s += ": " + x.err.Error()
			}
			out = append(out, s)
		case afAbortDeploy:
			out = append(out, "abort-deploy: "+x.err.Error())
		case afFailSession:
			out = append(out, "fail-session "+tr.names[x.s]+": "+x.err.Error())
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", x))
		}
	}
	switch {
	case a.err != nil:
		out = append(out, "error: "+a.err.Error())
	case a.ok:
		out = append(out, "ok")
	}
	return strings.Join(out, "\n"), nil
}

func (tr *attemptBookTrace) state() string {
	b := tr.b
	var out []string
	for _, t := range b.tms {
		var ss []string
		for _, s := range t.sessions {
			ss = append(ss, tr.names[s])
		}
		out = append(out, fmt.Sprintf("tm %s %s %s sessions=[%s]", t.id, t.addr, t.hold, strings.Join(ss, " ")))
	}
	var exp []string
	for _, w := range slices.Sorted(maps.Keys(b.expected)) {
		exp = append(exp, w+"@"+b.expected[w])
	}
	var ended []string
	for _, t := range slices.SortedFunc(maps.Keys(b.ended), checkpoint.TaskID.Compare) {
		ended = append(ended, fmt.Sprintf("%d/%d", t.Vertex, t.Subtask))
	}
	var fails []string
	for _, f := range b.failures {
		fails = append(fails, f.TaskName)
	}
	out = append(out, fmt.Sprintf("expected=[%s] started=%t ended=[%s] failures=[%s] held=[%s]", strings.Join(exp, " "), b.started,
		strings.Join(ended, " "), strings.Join(fails, " "), strings.Join(b.heldTaskManagers(), " ")))
	return strings.Join(out, "\n")
}
