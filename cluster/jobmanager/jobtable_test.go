package jobmanager

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/tracetest"
)

// addTestJob adds jm, which a test built, to d's job table.
func addTestJob(t testing.TB, d *Dispatcher, jm *jobMaster) {
	t.Helper()
	if _, err := d.call(dAdd{id: jm.id, jm: jm}); err != nil {
		t.Fatal(err)
	}
}

// fakeConn is a TaskManager connection of a trace, named.
type fakeConn struct {
	grpc.ClientConnInterface
	name string
}

func (fakeConn) Close() error { return nil }

// jobTableTrace drives a jobTable from the lines of a trace. Events:
//
//	new
//	at T                   (the time of the next events, ms)
//	add ID [recover]
//	forget ID
//	start ID [recover]
//	report ID EVENT...     (a lifecycle event of lifecycle_trace_test.go:
//	                        status, triggered, completed, failed, restored)
//	cancel ID
//	ended ID [cancelled]
//	close
//	conn ADDR
//	dialed ADDR NAME
//	close-conns
//	state ID               (the job's lifecycle, as lifecycle.txt shows it)
//
// Output lines are the effects, then the answer.
type jobTableTrace struct {
	t   *jobTable
	now int64
}

func TestJobTableTrace(t *testing.T) {
	tr := &jobTableTrace{}
	tracetest.Replay(t, "testdata/jobtable.txt", tr.do)
}

func (tr *jobTableTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		tr.t, tr.now = newJobTable(), 0
		return "", nil
	}
	if tr.t == nil {
		return "", errors.New("no job table: start the block with new")
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	var e dEvent
	switch f[0] {
	case "at":
		n, err := strconv.ParseInt(arg(1), 10, 64)
		tr.now = n
		return "", err
	case "state":
		j, ok := tr.t.jobs[arg(1)]
		if !ok {
			return "no job " + arg(1), nil
		}
		return lifecycleState(&j.lc), nil
	case "add":
		e = dAdd{id: arg(1), jm: &jobMaster{id: arg(1)}, recover: slices.Contains(f[2:], "recover")}
	case "forget":
		e = dForget{arg(1)}
	case "start":
		e = dStart{id: arg(1), recover: slices.Contains(f[2:], "recover")}
	case "report":
		if len(f) < 3 {
			return "", errors.New("report: want ID EVENT")
		}
		lc, err := parseLifecycleEvent(f[2:])
		if err != nil {
			return "", err
		}
		e = dReport{id: f[1], e: lc}
	case "cancel":
		e = dCancel{arg(1)}
	case "ended":
		e = dEnded{id: arg(1), cancelled: slices.Contains(f[2:], "cancelled")}
	case "close":
		e = dClose{}
	case "conn":
		e = dConn{arg(1)}
	case "dialed":
		e = dDialed{addr: arg(1), conn: fakeConn{name: arg(2)}}
	case "close-conns":
		e = dCloseConns{}
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	fx, a := tr.t.Step(tr.now, e)
	var out []string
	for _, x := range fx {
		switch x := x.(type) {
		case dfPublishJobs:
			var ids []string
			for _, jm := range x.v.order {
				if x.v.byID[jm.id] != jm {
					return "", fmt.Errorf("published view: %s is not indexed", jm.id)
				}
				ids = append(ids, jm.id)
			}
			out = append(out, fmt.Sprintf("publish jobs=[%s]", strings.Join(ids, " ")))
		case dfPublishJob:
			out = append(out, fmt.Sprintf("publish %s status=%s restarts=%d", x.jm.id, x.st.status, x.st.restarts))
		case dfJob:
			for _, l := range lifecycleEffects([]lcEffect{x.f}) {
				out = append(out, x.id+": "+l)
			}
		case dfCloseConn:
			out = append(out, "close-conn "+x.conn.(fakeConn).name)
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", x))
		}
	}
	switch {
	case a.err != nil:
		out = append(out, "error: "+a.err.Error())
	case f[0] == "close":
		var ids []string
		for _, jm := range a.jobs {
			ids = append(ids, jm.id)
		}
		out = append(out, fmt.Sprintf("wait for [%s]", strings.Join(ids, " ")))
	case f[0] == "conn" || f[0] == "dialed":
		if a.conn == nil {
			out = append(out, "conn none: dial")
		} else {
			out = append(out, "conn "+a.conn.(fakeConn).name)
		}
	}
	return strings.Join(out, "\n"), nil
}

// A published view of a job's stats is the lifecycle's as it was: later
// steps write none of it.
func TestJobTablePublishedStatsAreSnapshots(t *testing.T) {
	tb := newJobTable()
	tb.Step(0, dAdd{id: "a", jm: &jobMaster{id: "a"}})
	tb.Step(10, dStart{id: "a"})
	published := func(fx []dEffect) *jobStats {
		for _, f := range fx {
			if p, ok := f.(dfPublishJob); ok {
				return p.st
			}
		}
		t.Fatal("no job published")
		return nil
	}
	fx, _ := tb.Step(20, dReport{id: "a", e: lcCheckpointTriggered{jobmaster.CheckpointStats{ID: 1}}})
	v := published(fx)
	tb.Step(30, dReport{id: "a", e: lcStatus{status: jobmaster.StatusRunning, at: 30, cause: errors.New("x")}})
	tb.Step(40, dReport{id: "a", e: lcCheckpointCompleted{jobmaster.CheckpointStats{ID: 1, Path: "/c/chk-1"}}})
	if v.status != jobmaster.StatusCreated || len(v.timestamps) != 1 || len(v.inProgress) != 1 || len(v.exceptions) != 0 ||
		len(v.history) != 0 || v.latest != nil {
		t.Fatalf("the published stats changed after later steps: %+v", *v)
	}
}

// The Dispatcher's loop serves its callers: a job added is looked up from
// the published view at once, and Close stops the loop, after which
// changes fail with errDispatcherClosed and reads still answer.
func TestDispatcherLoopViewAndClose(t *testing.T) {
	d, err := NewDispatcher(Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	jm := &jobMaster{d: d, id: "job", name: "j", done: make(chan struct{})}
	addTestJob(t, d, jm)
	if got, err := d.job("job"); err != nil || got != jm {
		t.Fatalf("job = %p, %v; want %p", got, err, jm)
	}
	if _, err := d.call(dAdd{id: "job", jm: jm}); !errors.Is(err, ErrBadSubmission) {
		t.Fatalf("adding a job twice: %v, want ErrBadSubmission", err)
	}
	if err := d.Cancel("nope"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("Cancel of an unknown job = %v, want ErrNoJob", err)
	}
	close(jm.done) // the job has no owner loop to end it
	d.Close()
	d.Close() // a second Close does nothing
	select {
	case <-d.loop.Done():
	default:
		t.Fatal("the loop runs after Close")
	}
	if _, err := d.call(dAdd{id: "other", jm: &jobMaster{id: "other"}}); !errors.Is(err, errDispatcherClosed) {
		t.Fatalf("adding after Close = %v, want errDispatcherClosed", err)
	}
	if _, err := d.taskManager("127.0.0.1:1"); !errors.Is(err, errDispatcherClosed) {
		t.Fatalf("a connection after Close = %v, want errDispatcherClosed", err)
	}
	if jobs := d.Jobs(); len(jobs) != 1 || jobs[0].ID != "job" {
		t.Fatalf("Jobs after Close = %+v, want the job", jobs)
	}
}
