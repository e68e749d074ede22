package rest

import (
	"sync"
	"time"

	"github.com/sluice/sluice/internal/clock"
)

// Asynchronous operations (savepoint, stop-with-savepoint, checkpoint) are
// started by a POST that answers a trigger ID, run on a goroutine, and
// polled by GET .../:triggerid. Their outcomes are kept for the store
// duration after they complete; running ones are kept until they do.

type opKind int

const (
	opSavepoint  opKind = iota + 1 // savepoints and stop-with-savepoint
	opCheckpoint                   // checkpoints
	opDisposal                     // savepoint disposals (no job)
)

type opKey struct {
	kind    opKind
	job     string
	trigger string
}

type opResult struct {
	location     string // savepoints
	checkpointID int64  // checkpoints
	err          error
}

type opState struct {
	opResult
	done     bool
	finished int64 // epoch ms, when done
}

// operations is the registry of asynchronous operations and owns their
// goroutines.
type operations struct {
	clock clock.Clock
	keep  int64 // ms
	wg    sync.WaitGroup
	mu    struct {
		sync.Mutex
		ops    map[opKey]*opState
		closed bool
	}
}

func newOperations(c clock.Clock, keep time.Duration) *operations {
	o := &operations{clock: c, keep: keep.Milliseconds()}
	o.mu.ops = make(map[opKey]*opState)
	return o
}

// spawn registers an operation under k and runs it on a goroutine, unless
// one is registered under k already (a repeated request). It reports false
// once the registry is closed.
func (o *operations) spawn(k opKey, run func() opResult) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.closed {
		return false
	}
	o.expireLocked()
	if _, ok := o.mu.ops[k]; ok {
		return true
	}
	o.mu.ops[k] = &opState{}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		res := run()
		o.mu.Lock()
		defer o.mu.Unlock()
		o.mu.ops[k] = &opState{opResult: res, done: true, finished: o.clock.NowMillis()}
	}()
	return true
}

// get returns the state of the operation under k.
func (o *operations) get(k opKey) (opState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expireLocked()
	st, ok := o.mu.ops[k]
	if !ok {
		return opState{}, false
	}
	return *st, true
}

// close refuses new operations and waits for the running ones, which the
// caller has told to stop (by cancelling their context).
func (o *operations) close() {
	o.mu.Lock()
	o.mu.closed = true
	o.mu.Unlock()
	o.wg.Wait()
}

// expireLocked drops outcomes older than the store duration.
// REQUIRES: o.mu held.
func (o *operations) expireLocked() {
	now := o.clock.NowMillis()
	for k, st := range o.mu.ops {
		if st.done && now-st.finished >= o.keep {
			delete(o.mu.ops, k)
		}
	}
}
