// Package timer is the keyed timer service of an operator subtask: event-
// time timers fire as the watermark passes them, processing-time timers as
// the clock does. Timers are scoped by key and namespace and deduplicated:
// registering the same (key, namespace, time) twice fires once.
//
// The service does no I/O and reads no clock itself: processing-time
// deadlines are handed to a scheduler the task provides, so tests drive it
// with a manual clock.
package timer

import (
	"github.com/sluice/sluice/internal/runtime/state"
)

// Timer is one registered timer.
type Timer[K, N comparable] struct {
	Key       K
	Namespace N
	Time      int64
}

// Scheduler arms a processing-time callback on the task goroutine (the
// task's Context.RegisterProcessingTimer).
type Scheduler func(at int64, fn func(now int64) error) (cancel func())

// Service holds the timers of one keyed operator subtask.
type Service[K, N comparable] struct {
	keyed     *state.Keyed[K]
	event     queue[K, N]
	proc      queue[K, N]
	watermark int64
	schedule  Scheduler
	armedAt   int64
	cancel    func()
	onEvent   func(t Timer[K, N]) error
	onProc    func(t Timer[K, N]) error
	cs        *timerCodecs[K, N]
	// restoreErr is a failure to restore timers at creation.
	restoreErr error
}

// New returns a timer service. onEvent and onProc run with the timer's key
// set as the current key.
func New[K, N comparable](keyed *state.Keyed[K], schedule Scheduler, onEvent, onProc func(Timer[K, N]) error) *Service[K, N] {
	s := &Service[K, N]{keyed: keyed, schedule: schedule, onEvent: onEvent, onProc: onProc, watermark: minInt64}
	s.event.init()
	s.proc.init()
	// Timers are checkpointed with the keyed state; restored timers are
	// added here if the operator's state was restored first.
	if _, err := state.Register(keyed, TableName, func() *Service[K, N] { return s }); err != nil {
		s.restoreErr = err
	}
	return s
}

// Err reports a failure to restore the service's timers.
func (s *Service[K, N]) Err() error { return s.restoreErr }

const minInt64 = -1 << 63

// CurrentWatermark is the last watermark the service advanced to.
func (s *Service[K, N]) CurrentWatermark() int64 { return s.watermark }

func (s *Service[K, N]) currentKey() (K, error) {
	k, ok := s.keyed.CurrentKey()
	if !ok {
		return k, state.ErrNoKey
	}
	return k, nil
}

// RegisterEventTimer registers an event-time timer for the current key.
func (s *Service[K, N]) RegisterEventTimer(ns N, ts int64) error {
	k, err := s.currentKey()
	if err != nil {
		return err
	}
	s.event.add(Timer[K, N]{k, ns, ts}, s.keyed.CurrentKeyGroup())
	return nil
}

// DeleteEventTimer removes an event-time timer of the current key.
func (s *Service[K, N]) DeleteEventTimer(ns N, ts int64) error {
	k, err := s.currentKey()
	if err != nil {
		return err
	}
	s.event.remove(Timer[K, N]{k, ns, ts})
	return nil
}

// RegisterProcessingTimer registers a processing-time timer for the current key.
func (s *Service[K, N]) RegisterProcessingTimer(ns N, ts int64) error {
	k, err := s.currentKey()
	if err != nil {
		return err
	}
	s.proc.add(Timer[K, N]{k, ns, ts}, s.keyed.CurrentKeyGroup())
	s.rearm()
	return nil
}

// DeleteProcessingTimer removes a processing-time timer of the current key.
func (s *Service[K, N]) DeleteProcessingTimer(ns N, ts int64) error {
	k, err := s.currentKey()
	if err != nil {
		return err
	}
	s.proc.remove(Timer[K, N]{k, ns, ts})
	return nil
}

// AdvanceWatermark fires, in time order, every event-time timer at or
// before wm, including timers registered by the callbacks themselves.
func (s *Service[K, N]) AdvanceWatermark(wm int64) error {
	if wm > s.watermark {
		s.watermark = wm
	}
	return s.fire(&s.event, wm, s.onEvent)
}

// FireProcessingTimers fires every processing-time timer at or before now.
func (s *Service[K, N]) FireProcessingTimers(now int64) error {
	err := s.fire(&s.proc, now, s.onProc)
	s.rearm()
	return err
}

// NumEventTimers and NumProcessingTimers count registered timers.
func (s *Service[K, N]) NumEventTimers() int { return len(s.event.set) }

// NumProcessingTimers counts registered processing-time timers.
func (s *Service[K, N]) NumProcessingTimers() int { return len(s.proc.set) }

func (s *Service[K, N]) fire(q *queue[K, N], upTo int64, fn func(Timer[K, N]) error) error {
	defer s.keyed.ClearCurrentKey()
	for {
		t, kg, ok := q.popDue(upTo)
		if !ok {
			return nil
		}
		s.keyed.SetCurrentKeyAndGroup(t.Key, kg)
		if err := fn(t); err != nil {
			return err
		}
	}
}

func (s *Service[K, N]) rearm() {
	at, ok := s.proc.peek()
	if !ok {
		if s.cancel != nil {
			s.cancel()
			s.cancel = nil
		}
		return
	}
	if s.cancel != nil && s.armedAt == at {
		return
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.armedAt = at
	s.cancel = s.schedule(at, func(now int64) error {
		s.cancel = nil
		return s.FireProcessingTimers(now)
	})
}

// queue is a deduplicated min-heap of timers ordered by time, then by
// registration order.
type queue[K, N comparable] struct {
	h   entries[K, N]
	set map[Timer[K, N]]uint64 // timer → registration sequence
	seq uint64
}

type entry[K, N comparable] struct {
	t   Timer[K, N]
	kg  int
	seq uint64
}

type entries[K, N comparable] []entry[K, N]

func (h entries[K, N]) less(i, j int) bool {
	if h[i].t.Time != h[j].t.Time {
		return h[i].t.Time < h[j].t.Time
	}
	return h[i].seq < h[j].seq
}

// push and pop are a typed binary heap: container/heap would box every
// entry in an interface, an allocation per timer.
func (h *entries[K, N]) push(e entry[K, N]) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *entries[K, N]) pop() entry[K, N] {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a[last] = entry[K, N]{}
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func (q *queue[K, N]) init() { q.set = map[Timer[K, N]]uint64{} }

func (q *queue[K, N]) add(t Timer[K, N], kg int) {
	if _, dup := q.set[t]; dup {
		return
	}
	q.seq++
	q.set[t] = q.seq
	q.h.push(entry[K, N]{t: t, kg: kg, seq: q.seq})
}

// remove deletes lazily: the heap entry is skipped when popped.
func (q *queue[K, N]) remove(t Timer[K, N]) { delete(q.set, t) }

func (q *queue[K, N]) clean() {
	for len(q.h) > 0 {
		e := q.h[0]
		if seq, ok := q.set[e.t]; ok && seq == e.seq {
			return
		}
		q.h.pop()
	}
}

func (q *queue[K, N]) peek() (int64, bool) {
	q.clean()
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].t.Time, true
}

func (q *queue[K, N]) popDue(upTo int64) (Timer[K, N], int, bool) {
	q.clean()
	if len(q.h) == 0 || q.h[0].t.Time > upTo {
		var zero Timer[K, N]
		return zero, 0, false
	}
	e := q.h.pop()
	delete(q.set, e.t)
	return e.t, e.kg, true
}
