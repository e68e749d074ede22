package jobmanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc"
)

// This file is the Dispatcher's coordination state: its job table (the
// jobs submitted and recovered, in order, each with its lifecycle), the
// connections to TaskManagers, and whether the Dispatcher is closing. It
// is a state machine without I/O, wall clock or randomness (an
// ownerloop.Machine): the Dispatcher's owner loop steps it with what
// submissions, recoveries, the jobs' owner loops and Close report, and its
// applier carries out the effects (logs, the HA store, cancelling a job,
// closing connections) and publishes the immutable views REST and the
// gRPC handlers read without a lock. jobtable_trace_test.go drives it
// directly.

// errDispatcherClosed: the Dispatcher is closing; it takes no more jobs.
var errDispatcherClosed = errors.New("jobmanager: the Dispatcher is closed")

// tmConn is a connection to a TaskManager (a *grpc.ClientConn).
type tmConn interface {
	grpc.ClientConnInterface
	Close() error
}

// dEvent is an input of the job table.
type dEvent interface{ isDEvent() }

// dAdd: a job is submitted (recover false) or recovered from the HA
// store, with its JobMaster jm, not started yet. The answer's err is
// ErrBadSubmission for an id in use, errDispatcherClosed once closing.
type dAdd struct {
	id      string
	jm      *jobMaster
	recover bool
}

// dForget: the job did not start (its HA record could not be written, or
// its owner loop did not start); it leaves the table.
type dForget struct{ id string }

// dStart: the job's owner loop starts now.
type dStart struct {
	id      string
	recover bool
}

// dReport: the job's owner loop reported e (its Listener): a status, a
// checkpoint or a restore, each with its own time.
type dReport struct {
	id string
	e  lcEvent
}

// dCancel: a user cancels the job. The answer's err is ErrNoJob or
// ErrJobEnded.
type dCancel struct{ id string }

// dEnded: the job's owner loop has returned, cancelled or not, and its
// slots are released.
type dEnded struct {
	id        string
	cancelled bool
}

// dClose: the Dispatcher closes. Jobs that end cancelled from now on are
// suspended (a new JobManager recovers them); no job is added. The
// answer's jobs are every job, to wait for.
type dClose struct{}

// dConn asks for the connection to the TaskManager at addr. The answer's
// conn is nil when there is none yet: the caller dials and reports dDialed.
type dConn struct{ addr string }

// dDialed: the caller dialled conn to addr. The answer's conn is the one to
// use: conn, or one another caller dialled first (conn is then closed).
type dDialed struct {
	addr string
	conn tmConn
}

// dCloseConns: every job has ended; the connections close.
type dCloseConns struct{}

// dTick: the table has no deadlines; the loop never ticks it.
type dTick struct{}

func (dAdd) isDEvent()        {}
func (dForget) isDEvent()     {}
func (dStart) isDEvent()      {}
func (dReport) isDEvent()     {}
func (dCancel) isDEvent()     {}
func (dEnded) isDEvent()      {}
func (dClose) isDEvent()      {}
func (dConn) isDEvent()       {}
func (dDialed) isDEvent()     {}
func (dCloseConns) isDEvent() {}
func (dTick) isDEvent()       {}

// dAnswer is the job table's answer to an event.
type dAnswer struct {
	err  error
	jobs []*jobMaster // dClose
	conn tmConn       // dConn, dDialed
}

// dEffect is an output of the job table.
type dEffect interface{ isDEffect() }

// dfPublishJobs: the table's jobs changed; v is the new view.
type dfPublishJobs struct{ v *jobsView }

// dfPublishJob: job jm's lifecycle changed; st is what REST shows of it
// now (a copy the table no longer writes).
type dfPublishJob struct {
	jm *jobMaster
	st *jobStats
}

// dfJob: carry out effect f of job jm's lifecycle.
type dfJob struct {
	id string
	jm *jobMaster
	f  lcEffect
}

// dfCloseConn: close conn.
type dfCloseConn struct{ conn tmConn }

func (dfPublishJobs) isDEffect() {}
func (dfPublishJob) isDEffect()  {}
func (dfJob) isDEffect()         {}
func (dfCloseConn) isDEffect()   {}

// jobsView is the Dispatcher's jobs as the table last published them:
// immutable, read without a lock.
type jobsView struct {
	order []*jobMaster // submission order
	byID  map[string]*jobMaster
}

// tableJob is a job of the table: its JobMaster, which the table only
// hands to effects and views, never calls, and its lifecycle.
type tableJob struct {
	jm *jobMaster
	lc jobLifecycle
}

// jobTable is the Dispatcher's state machine; it implements
// ownerloop.Machine and is not safe for concurrent use.
type jobTable struct {
	jobs    map[string]*tableJob
	order   []string
	conns   map[string]tmConn
	closing bool
	fx      []dEffect // of the current step
}

func newJobTable() *jobTable {
	return &jobTable{jobs: map[string]*tableJob{}, conns: map[string]tmConn{}}
}

// Deadline implements ownerloop.Machine: the table has none.
func (t *jobTable) Deadline() (int64, bool) { return 0, false }

// Step implements ownerloop.Machine.
func (t *jobTable) Step(now int64, e dEvent) ([]dEffect, dAnswer) {
	var a dAnswer
	switch e := e.(type) {
	case dAdd:
		a.err = t.add(e)
	case dForget:
		if _, ok := t.jobs[e.id]; ok {
			delete(t.jobs, e.id)
			t.order = slices.DeleteFunc(t.order, func(s string) bool { return s == e.id })
			t.publishJobs()
		}
	case dStart:
		a.err = t.lifecycle(e.id, lcStart{at: now, recover: e.recover})
	case dReport:
		a.err = t.lifecycle(e.id, e.e)
	case dCancel:
		a.err = t.lifecycle(e.id, lcCancel{})
	case dEnded:
		// When the JobManager is closing, a new one recovers the job.
		a.err = t.lifecycle(e.id, lcEnded{cancelled: e.cancelled, shuttingDown: t.closing})
	case dClose:
		t.closing = true
		for _, id := range t.order {
			a.jobs = append(a.jobs, t.jobs[id].jm)
		}
	case dConn:
		a.conn = t.conns[e.addr]
	case dDialed:
		if c, ok := t.conns[e.addr]; ok {
			t.emit(dfCloseConn{e.conn})
			a.conn = c
			break
		}
		t.conns[e.addr] = e.conn
		a.conn = e.conn
	case dCloseConns:
		for _, addr := range slices.Sorted(maps.Keys(t.conns)) {
			t.emit(dfCloseConn{t.conns[addr]})
		}
		t.conns = map[string]tmConn{}
	case dTick:
	default:
		panic(fmt.Sprintf("jobmanager: unknown job table event %T", e))
	}
	fx := t.fx
	t.fx = nil
	return fx, a
}

func (t *jobTable) emit(f dEffect) { t.fx = append(t.fx, f) }

func (t *jobTable) add(e dAdd) error {
	if t.closing {
		return errDispatcherClosed
	}
	if _, dup := t.jobs[e.id]; dup {
		return fmt.Errorf("%w: job %s exists", ErrBadSubmission, e.id)
	}
	t.jobs[e.id] = &tableJob{jm: e.jm}
	t.order = append(t.order, e.id)
	t.publishJobs()
	return nil
}

// lifecycle steps job id's lifecycle with e; its effects become the
// table's, and its stats are published.
func (t *jobTable) lifecycle(id string, e lcEvent) error {
	j, ok := t.jobs[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	fx, err := j.lc.Step(e)
	if err == nil {
		t.emit(dfPublishJob{jm: j.jm, st: j.lc.stats.clone()})
	}
	for _, f := range fx {
		t.emit(dfJob{id: id, jm: j.jm, f: f})
	}
	return err
}

func (t *jobTable) publishJobs() {
	v := &jobsView{byID: make(map[string]*jobMaster, len(t.jobs))}
	for _, id := range t.order {
		jm := t.jobs[id].jm
		v.order = append(v.order, jm)
		v.byID[id] = jm
	}
	t.emit(dfPublishJobs{v})
}

// clone is a copy of st that shares nothing the lifecycle writes later.
func (st *jobStats) clone() *jobStats {
	c := *st
	c.timestamps = maps.Clone(st.timestamps)
	c.inProgress = maps.Clone(st.inProgress)
	c.exceptions = slices.Clone(st.exceptions)
	c.history = slices.Clone(st.history)
	return &c
}
