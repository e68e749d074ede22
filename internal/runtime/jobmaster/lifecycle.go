package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice/sluice/internal/runtime/restart"
)

// lifecycle is a job's life as a state machine, the decisions of the
// JobMaster's owner loop and nothing else: which restore to load, when to
// deploy an attempt, whether a failure restarts the job (the restart
// strategy decides) and after what delay, and how the job ends. It does no
// I/O and reads no clock: the time of each event is given, the loop
// (ownerloop) arms its restart deadline, and Job's applier carries out its
// effects (loading restores, deploying and running attempts, reporting
// status, cleaning up checkpoints), each of which may block and answers
// with the event that follows it.
//
// The effects that wait on the world (loading a restore, deploying,
// running an attempt) answer whether the job's context had ended by then;
// a job whose context ends is cancelled (or suspended, see cleanup), not
// failed. A cancellation that arrives while the job waits to restart ends
// it at once.
type lifecycle struct {
	restart restart.Strategy
	// recover: the first restore is the recovery one (the job's latest
	// checkpoint, Options.Recover), not Options.RestoreFrom.
	recover bool

	phase    lcPhase
	restarts int  // attempts restarted so far; the current attempt is number restarts
	deployed bool // the current attempt was deployed
	// report: the attempt being deployed restores state, which the
	// listener hears once it is deployed.
	report   bool
	start    int64 // when the job started (ms)
	duration int64 // the job's running time when its last attempt ended (ms)
	// restartAt is when the job restarts, while it waits to.
	restartAt int64
}

type lcPhase int

const (
	lcNew       lcPhase = iota
	lcRestoring         // loading the restore of the next attempt
	lcDeploying
	lcRunning
	lcWaiting // for the restart delay
	lcEnded
)

var lcPhaseNames = [...]string{"new", "restoring", "deploying", "running", "waiting", "ended"}

func (p lcPhase) String() string { return lcPhaseNames[p] }

// lcEvent is an event of the lifecycle.
type lcEvent struct {
	kind lcEventKind
	// err: what loading the restore, deploying or the attempt ended with.
	err error
	// restored: a restore was loaded (not a fresh start).
	restored bool
	// ctxDone: the job's context had ended when the effect returned; cause
	// is its cause.
	ctxDone bool
	cause   error
}

type lcEventKind int

const (
	evStart        lcEventKind = iota
	evRestored                 // the restore is loaded (or failed to)
	evDeployed                 // the attempt is deployed (or failed to)
	evAttemptEnded             // every task of the attempt ended
	evTick                     // the restart deadline came
	evCancelled                // the job's context ended
)

// lcEffect is an effect of the lifecycle, carried out by Job's applier.
type lcEffect struct {
	kind    lcEffectKind
	attempt int
	recover bool // fxLoadRestore: the recovery restore, not the initial one
	status  Status
	at      int64 // fxStatus: when (ms)
	err     error // fxStatus, fxLog, fxEnd
	delay   time.Duration
	// finished: fxCleanup after the job finished (not failed or cancelled).
	finished bool
	// deployed: fxLogRestart of an attempt that had deployed.
	deployed bool
	// fxEnd: the job's outcome.
	restarts int
	duration time.Duration
}

type lcEffectKind int

const (
	fxLoadRestore   lcEffectKind = iota // load the attempt's restore; answers evRestored
	fxDeploy                            // deploy the attempt; answers evDeployed
	fxRun                               // run the deployed attempt to its end; answers evAttemptEnded
	fxReportRestore                     // tell the listener the attempt restored its state
	fxStatus                            // tell the listener the job's status changed
	fxLogRestart                        // log that the job restarts
	fxCleanup                           // discard or keep the job's checkpoints, as its end asks
	fxEnd                               // the job has ended: publish its result and stop the loop
)

// Step implements ownerloop.Machine.
func (l *lifecycle) Step(now int64, e lcEvent) ([]lcEffect, struct{}) {
	var fx []lcEffect
	switch {
	case l.phase == lcEnded:
	case e.kind == evStart && l.phase == lcNew:
		l.start = now
		l.phase = lcRestoring
		fx = append(fx, lcEffect{kind: fxLoadRestore, recover: l.recover})
	case e.kind == evRestored && l.phase == lcRestoring:
		switch {
		case e.err != nil && l.restarts == 0:
			// The job never ran: nothing of it to clean up.
			fx = l.end(fx, now, e.err)
		case e.err != nil:
			fx = l.endCleaned(fx, now, e.err)
		case e.ctxDone:
			fx = l.endCleaned(fx, now, cancelled(e.cause))
		default:
			l.phase, l.deployed, l.report = lcDeploying, false, e.restored
			fx = append(fx, lcEffect{kind: fxDeploy, attempt: l.restarts})
		}
	case e.kind == evDeployed && l.phase == lcDeploying:
		l.duration = now - l.start
		if e.err != nil {
			fx = l.failed(fx, now, e.err, e.ctxDone, e.cause)
			break
		}
		l.phase, l.deployed = lcRunning, true
		if l.report {
			fx = append(fx, lcEffect{kind: fxReportRestore, attempt: l.restarts, at: now})
		}
		fx = append(fx, lcEffect{kind: fxStatus, status: StatusRunning, at: now},
			lcEffect{kind: fxRun, attempt: l.restarts})
	case e.kind == evAttemptEnded && l.phase == lcRunning:
		l.duration = now - l.start
		if e.err == nil {
			fx = append(fx, lcEffect{kind: fxCleanup, finished: true})
			fx = l.end(fx, now, nil)
			break
		}
		fx = l.failed(fx, now, e.err, e.ctxDone, e.cause)
	case e.kind == evTick && l.phase == lcWaiting && now >= l.restartAt:
		fx = l.restartNow(fx)
	case e.kind == evCancelled && l.phase == lcWaiting:
		fx = l.endCleaned(fx, now, cancelled(e.cause))
	}
	return fx, struct{}{}
}

// Deadline implements ownerloop.Machine: the end of the restart delay.
func (l *lifecycle) Deadline() (int64, bool) {
	return l.restartAt, l.phase == lcWaiting
}

// failed decides about an attempt that failed or failed to deploy (a
// TaskManager lost, a worker that dies while it deploys, no slots in
// time): a failover as in Flink. The restart strategy decides whether the
// job restarts from its latest checkpoint, and either counts as a restart;
// an unrecoverable failure (restart.Recoverable) fails the job at once.
func (l *lifecycle) failed(fx []lcEffect, now int64, err error, ctxDone bool, cause error) []lcEffect {
	if ctxDone {
		return l.endCleaned(fx, now, cancelled(cause))
	}
	d := l.restart.OnFailure(now, err)
	if !restart.Recoverable(err) || !d.Restart {
		if l.deployed {
			err = jobError(err)
		}
		return l.endCleaned(fx, now, err)
	}
	fx = append(fx, lcEffect{kind: fxStatus, status: StatusRestarting, at: now, err: err},
		lcEffect{kind: fxLogRestart, attempt: l.restarts + 1, delay: d.Delay, err: err, deployed: l.deployed})
	if d.Delay > 0 {
		l.phase, l.restartAt = lcWaiting, now+d.Delay.Milliseconds()
		return fx
	}
	return l.restartNow(fx)
}

func (l *lifecycle) restartNow(fx []lcEffect) []lcEffect {
	l.restarts++
	l.phase = lcRestoring
	return append(fx, lcEffect{kind: fxLoadRestore, attempt: l.restarts, recover: true})
}

// endCleaned ends a job that has run: its checkpoints are cleaned up for
// a job that did not finish first.
func (l *lifecycle) endCleaned(fx []lcEffect, now int64, err error) []lcEffect {
	fx = append(fx, lcEffect{kind: fxCleanup, finished: false})
	return l.end(fx, now, err)
}

// end reports the job's final status (from its error) and its outcome.
func (l *lifecycle) end(fx []lcEffect, now int64, err error) []lcEffect {
	l.phase = lcEnded
	st := StatusFinished
	switch {
	case err != nil && errors.Is(err, errCancelled):
		st = StatusCanceled
	case err != nil:
		st = StatusFailed
	}
	return append(fx, lcEffect{kind: fxStatus, status: st, at: now, err: err},
		lcEffect{kind: fxEnd, err: err, restarts: l.restarts, duration: time.Duration(l.duration) * time.Millisecond})
}

// cancelled is the error of a job whose context ended with cause.
func cancelled(cause error) error {
	if cause == nil {
		cause = context.Canceled
	}
	return fmt.Errorf("%w: %w", errCancelled, cause)
}
