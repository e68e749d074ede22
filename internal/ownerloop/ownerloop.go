// Package ownerloop runs a coordinator's state machine on one owner
// goroutine.
//
// A coordinator (the ResourceManager's slot table, a TaskManager's slot
// offers, ...) is a Machine: a value without I/O or wall clock that takes an
// event and the time and returns the effects to carry out and an answer for
// whoever submitted the event. A Loop owns one Machine: it takes events from
// its inbox one at a time, steps the machine, and hands the effects to an
// injected applier, which sends, logs and calls drivers. When the machine has
// a deadline, the Loop arms a timer on the injected clock and steps the
// machine with the tick event when it fires.
//
// Decisions are tested by driving the Machine directly; the Loop and the
// applier only carry them out.
package ownerloop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/internal/clock"
)

// ErrStopped: the Loop is not running any more (Run has returned).
var ErrStopped = errors.New("ownerloop: stopped")

// Machine is a coordinator's state machine. It is driven by one goroutine,
// its Loop; it must not do I/O, read a clock or block.
type Machine[E, F, A any] interface {
	// Step applies event e at time now (epoch ms) and returns the effects
	// to carry out, in order, and the answer for the submitter.
	Step(now int64, e E) (effects []F, answer A)
	// Deadline is when the machine wants the tick event next, if ever.
	Deadline() (at int64, ok bool)
}

// Config configures a Loop.
type Config[E, F, A any] struct {
	// Machine is the state the Loop owns. Required.
	Machine Machine[E, F, A]
	// Apply carries out effects, in order, on the owner goroutine. It
	// returns follow-up events (e.g. "a send failed") that the Loop steps
	// at once, before the next event of the inbox; their answers are
	// dropped. It must not Call the Loop (that would wait for itself); it
	// may Post. Nil: effects are dropped.
	Apply func(effects []F) []E
	// Tick is the event the Machine is stepped with when its deadline has
	// come.
	Tick E
	// Clock tells the time of each step and arms the deadline's timer.
	// Default: clock.System{}.
	Clock clock.Clock
}

// envelope states.
const (
	queued int32 = iota
	taken
	withdrawn
)

type envelope[E, A any] struct {
	event E
	state atomic.Int32
	reply chan A // nil for Post; buffered 1 otherwise
}

// Loop owns a Machine and runs it on the goroutine of Run.
type Loop[E, F, A any] struct {
	cfg     Config[E, F, A]
	started atomic.Bool
	done    chan struct{} // closed when Run has returned
	stop    chan struct{} // closed by Stop
	stopOne sync.Once
	stopErr error // set before stop is closed
	wake    chan struct{}
	mu      struct {
		sync.Mutex
		inbox []*envelope[E, A]
	}
}

// New returns a Loop for cfg. It panics when cfg.Machine is nil: that is a
// programming error.
func New[E, F, A any](cfg Config[E, F, A]) *Loop[E, F, A] {
	if cfg.Machine == nil {
		panic("ownerloop: no Machine")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &Loop[E, F, A]{cfg: cfg, done: make(chan struct{}), stop: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Done is closed once Run has returned.
func (l *Loop[E, F, A]) Done() <-chan struct{} { return l.done }

// Stop makes Run return err (nil for a clean stop) once the event being
// stepped, if any, is done; no event is stepped after it. A Machine's Step
// or the applier may call it. The first Stop wins; later ones do nothing.
func (l *Loop[E, F, A]) Stop(err error) {
	l.stopOne.Do(func() {
		l.stopErr = err
		close(l.stop)
	})
}

// Post queues e without waiting for it. Events are stepped in the order
// they were posted or called. After Run has returned, e is dropped.
func (l *Loop[E, F, A]) Post(e E) {
	l.push(&envelope[E, A]{event: e})
}

// Call queues e and waits for the Machine's answer. It fails with
// ErrStopped when Run returns before e was stepped, and with ctx's error
// when ctx ends while e is still queued (e is then never stepped). Once the
// Loop has taken e, Call waits for its answer: the effects of an event are
// never half-reported.
func (l *Loop[E, F, A]) Call(ctx context.Context, e E) (A, error) {
	env := &envelope[E, A]{event: e, reply: make(chan A, 1)}
	l.push(env)
	var zero A
	select {
	case a := <-env.reply:
		return a, nil
	case <-l.done:
	case <-ctx.Done():
		if env.state.CompareAndSwap(queued, withdrawn) {
			return zero, ctx.Err()
		}
	}
	// Taken (or Run returned): Run replies before it returns.
	select {
	case a := <-env.reply:
		return a, nil
	case <-l.done:
		select {
		case a := <-env.reply:
			return a, nil
		default:
			return zero, ErrStopped
		}
	}
}

func (l *Loop[E, F, A]) push(env *envelope[E, A]) {
	l.mu.Lock()
	l.mu.inbox = append(l.mu.inbox, env)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *Loop[E, F, A]) take() []*envelope[E, A] {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.mu.inbox
	l.mu.inbox = nil
	return in
}

// Run steps the Machine until ctx ends (it returns nil) or Stop is called
// (it returns Stop's error). Run may be called once; the Machine may be
// read again after Run has returned.
func (l *Loop[E, F, A]) Run(ctx context.Context) error {
	if !l.started.CompareAndSwap(false, true) {
		return errors.New("ownerloop: Run called twice")
	}
	defer close(l.done)
	var (
		timer   <-chan struct{}
		cancel  = func() {}
		armedAt int64
	)
	defer func() { cancel() }()
	for {
		if at, ok := l.cfg.Machine.Deadline(); ok {
			if timer == nil || at != armedAt {
				cancel()
				timer, cancel = l.cfg.Clock.AfterMillis(at)
				armedAt = at
			}
		} else if timer != nil {
			cancel()
			timer, cancel = nil, func() {}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.stop:
			return l.stopErr
		case <-l.wake:
			for _, env := range l.take() {
				select {
				case <-l.stop:
					// A step stopped the loop: what is left is never
					// stepped; its callers get ErrStopped.
					return l.stopErr
				default:
				}
				if env.reply != nil && !env.state.CompareAndSwap(queued, taken) {
					continue // withdrawn by its caller
				}
				a := l.step(env.event)
				if env.reply != nil {
					env.reply <- a
				}
			}
		case <-timer:
			timer, cancel = nil, func() {}
			l.step(l.cfg.Tick)
		}
	}
}

// step steps the machine with e and its follow-ups and returns e's answer.
func (l *Loop[E, F, A]) step(e E) A {
	effects, answer := l.cfg.Machine.Step(l.cfg.Clock.NowMillis(), e)
	for pending := l.apply(effects); len(pending) > 0; {
		next := pending[0]
		pending = pending[1:]
		effects, _ := l.cfg.Machine.Step(l.cfg.Clock.NowMillis(), next)
		pending = append(pending, l.apply(effects)...)
	}
	return answer
}

func (l *Loop[E, F, A]) apply(effects []F) []E {
	if l.cfg.Apply == nil || len(effects) == 0 {
		return nil
	}
	return l.cfg.Apply(effects)
}
