package jobmanager

import (
	"fmt"
	"slices"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
)

// This file is the deployment bookkeeping of one remote attempt: a state
// machine without I/O, clock or goroutines. It knows which TaskManagers
// the attempt runs a worker on (held, lost or released), which workers it
// expects to connect while it deploys, which have connected, whether the
// attempt has started, which tasks have ended and with what failures; and
// it decides what a lost TaskManager, a worker's exit report and a task's
// end do to the attempt (abEffect). The remoteAttempt guards it with its
// mutex, since deployment, the workers' sessions and the ResourceManager's
// reports step it from goroutines of their own, and carries out the
// effects (failing sessions, ending the deployment, ending a
// TaskManager's context) after unlocking. attemptbook_test.go drives it
// directly.

// abEvent is an input of an attempt's bookkeeping.
type abEvent interface{ isAbEvent() }

// abTaskManager: the attempt runs a worker on TaskManager tm at addr.
type abTaskManager struct{ tm, addr string }

// abExpect: the deployment starts these workers (worker id → TaskManager)
// and waits for their Hello.
type abExpect struct{ workers map[string]string }

// abHello: worker sent its Hello. The answer's err says the attempt does
// not expect it (any more).
type abHello struct {
	worker  string
	attempt int // as the worker said
}

// abDeployEnded: the deployment has returned; no worker is expected any
// more.
type abDeployEnded struct{}

// abConnected: the session s of the attempt's worker on TaskManager tm
// has connected.
type abConnected struct {
	tm string
	s  *session
}

// abTaskManagerLost: the ResourceManager lost a TaskManager. The answer's
// ok says the attempt held it.
type abTaskManagerLost struct{ err *TaskManagerLostError }

// abWorkerExited: a TaskManager reports that the worker of attempt n
// exited unasked. The answer's ok says it was this attempt's worker, on a
// TaskManager it still holds.
type abWorkerExited struct {
	n   int
	err *WorkerExitedError
}

// abStart: the attempt starts running.
type abStart struct{}

// abTaskEnded: task t ended with err (nil: finished). The answer's ok
// says to report it: the attempt has started and t had not ended.
type abTaskEnded struct {
	t   checkpoint.TaskID
	err error
}

// abRelease: the attempt is closed; losing its TaskManagers fails nothing.
type abRelease struct{}

func (abTaskManager) isAbEvent()     {}
func (abExpect) isAbEvent()          {}
func (abHello) isAbEvent()           {}
func (abDeployEnded) isAbEvent()     {}
func (abConnected) isAbEvent()       {}
func (abTaskManagerLost) isAbEvent() {}
func (abWorkerExited) isAbEvent()    {}
func (abStart) isAbEvent()           {}
func (abTaskEnded) isAbEvent()       {}
func (abRelease) isAbEvent()         {}

// abAnswer is the bookkeeping's answer to an event.
type abAnswer struct {
	ok  bool
	err error
}

// abEffect is an output of an attempt's bookkeeping.
type abEffect interface{ isAbEffect() }

// afLoseTaskManager: end the context of the attempt's TaskManager tm with
// err (nil: released), so that nothing waits on it any more.
type afLoseTaskManager struct {
	tm  string
	err error
}

// afAbortDeploy: end the deployment under way, if any, with err.
type afAbortDeploy struct{ err error }

// afFailSession: end session s at once with err; its tasks fail with it.
type afFailSession struct {
	s   *session
	err error
}

func (afLoseTaskManager) isAbEffect() {}
func (afAbortDeploy) isAbEffect()     {}
func (afFailSession) isAbEffect()     {}

// tmHold is what an attempt has of a TaskManager.
type tmHold int

const (
	tmHeld     tmHold = iota // the attempt runs a worker there
	tmLost                   // the ResourceManager lost it
	tmReleased               // the attempt is closed
)

var tmHoldNames = [...]string{"held", "lost", "released"}

func (h tmHold) String() string { return tmHoldNames[h] }

// bookTM is a TaskManager of the attempt.
type bookTM struct {
	id, addr string
	hold     tmHold
	// sessions are its worker's, once connected (the table never calls
	// them; effects name them).
	sessions []*session
}

// attemptBook is the bookkeeping of attempt n of job; not safe for
// concurrent use.
type attemptBook struct {
	job string
	n   int
	tms []*bookTM // in the order the attempt took them
	// expected are the workers the deployment waits for, by id, with
	// their TaskManager.
	expected map[string]string
	// sessions are the connected workers', in order.
	sessions []*session
	started  bool
	ended    map[checkpoint.TaskID]bool
	failures []*TaskFailure
	fx       []abEffect // of the current step
}

func newAttemptBook(job string, n int) *attemptBook {
	return &attemptBook{job: job, n: n, expected: map[string]string{}, ended: map[checkpoint.TaskID]bool{}}
}

// Step applies e and returns the effects and the answer.
func (b *attemptBook) Step(e abEvent) ([]abEffect, abAnswer) {
	var a abAnswer
	switch e := e.(type) {
	case abTaskManager:
		if b.tm(e.tm) == nil {
			b.tms = append(b.tms, &bookTM{id: e.tm, addr: e.addr})
		}
	case abExpect:
		for w, tm := range e.workers {
			b.expected[w] = tm
		}
	case abHello:
		if _, ok := b.expected[e.worker]; !ok {
			a.err = fmt.Errorf("jobmanager: job %s expects no worker %q (attempt %d)", b.job, e.worker, e.attempt)
			break
		}
		delete(b.expected, e.worker)
		a.ok = true
	case abDeployEnded:
		clear(b.expected)
	case abConnected:
		b.sessions = append(b.sessions, e.s)
		if t := b.tm(e.tm); t != nil {
			t.sessions = append(t.sessions, e.s)
		}
	case abTaskManagerLost:
		t := b.held(e.err.TaskManager)
		if t == nil {
			break
		}
		t.hold = tmLost
		b.emit(afLoseTaskManager{tm: t.id, err: e.err})
		b.fail(t, e.err)
		a.ok = true
	case abWorkerExited:
		t := b.held(e.err.TaskManager)
		if e.n != b.n || e.err.Worker != workerID(b.job, b.n, e.err.TaskManager) || t == nil {
			break
		}
		b.fail(t, e.err)
		a.ok = true
	case abStart:
		b.started = true
	case abTaskEnded:
		if !b.started || b.ended[e.t] {
			break
		}
		b.ended[e.t] = true
		if tf, ok := e.err.(*TaskFailure); ok {
			b.failures = append(b.failures, tf)
		}
		a.ok = true
	case abRelease:
		for _, t := range b.tms {
			if t.hold == tmHeld {
				t.hold = tmReleased
				b.emit(afLoseTaskManager{tm: t.id})
			}
		}
	default:
		panic(fmt.Sprintf("jobmanager: unknown attempt event %T", e))
	}
	fx := b.fx
	b.fx = nil
	return fx, a
}

func (b *attemptBook) emit(f abEffect) { b.fx = append(b.fx, f) }

// fail ends the deployment under way and the sessions of the worker on t
// with err.
func (b *attemptBook) fail(t *bookTM, err error) {
	b.emit(afAbortDeploy{err})
	for _, s := range t.sessions {
		b.emit(afFailSession{s: s, err: err})
	}
}

func (b *attemptBook) tm(id string) *bookTM {
	i := slices.IndexFunc(b.tms, func(t *bookTM) bool { return t.id == id })
	if i < 0 {
		return nil
	}
	return b.tms[i]
}

// held is the attempt's TaskManager id if it still holds it.
func (b *attemptBook) held(id string) *bookTM {
	if t := b.tm(id); t != nil && t.hold == tmHeld {
		return t
	}
	return nil
}

// heldTaskManagers are the TaskManagers the attempt holds, in order.
func (b *attemptBook) heldTaskManagers() []string {
	var out []string
	for _, t := range b.tms {
		if t.hold == tmHeld {
			out = append(out, t.id)
		}
	}
	return out
}
