package task

import (
	"container/heap"

	"github.com/sluice/sluice/internal/clock"
)

// procTimers is the task's processing-time timer queue. It is used only on
// the task goroutine.
type procTimers struct {
	clock clock.Clock
	h     timerHeap
	seq   uint64
	// armed is the deadline the current clock timer was set for.
	armed   int64
	ch      <-chan struct{}
	release func()
}

type procTimer struct {
	at        int64
	seq       uint64
	owner     int // chain index of the operator that registered it
	fn        func(now int64) error
	cancelled bool
}

type timerHeap []*procTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*procTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (p *procTimers) register(at int64, owner int, fn func(now int64) error) func() {
	p.seq++
	tm := &procTimer{at: at, seq: p.seq, owner: owner, fn: fn}
	heap.Push(&p.h, tm)
	return func() { tm.cancelled = true }
}

// c returns a channel that fires at the earliest deadline, or nil.
func (p *procTimers) c() <-chan struct{} {
	for len(p.h) > 0 && p.h[0].cancelled {
		heap.Pop(&p.h)
	}
	if len(p.h) == 0 {
		return nil
	}
	at := p.h[0].at
	if p.ch == nil || at != p.armed {
		if p.release != nil {
			p.release()
		}
		p.ch, p.release = p.clock.AfterMillis(at)
		p.armed = at
	}
	return p.ch
}

// fireDue runs every timer whose deadline has passed, in deadline order.
func (p *procTimers) fireDue() error { return p.fireDueFrom(0) }

// earliestFrom is the earliest live deadline of timers owned by operators
// at chain index minOwner or later.
func (p *procTimers) earliestFrom(minOwner int) (int64, bool) {
	best, ok := int64(0), false
	for _, tm := range p.h {
		if !tm.cancelled && tm.owner >= minOwner && (!ok || tm.at < best) {
			best, ok = tm.at, true
		}
	}
	return best, ok
}

// fireDueFrom fires the due timers of operators at chain index minOwner or
// later, in deadline order; the others stay queued.
func (p *procTimers) fireDueFrom(minOwner int) error {
	now := p.clock.NowMillis()
	var held []*procTimer
	defer func() {
		for _, tm := range held {
			heap.Push(&p.h, tm)
		}
		p.ch = nil // re-arm the main loop's timer
	}()
	for len(p.h) > 0 && p.h[0].at <= now {
		tm := heap.Pop(&p.h).(*procTimer)
		if tm.cancelled {
			continue
		}
		if tm.owner < minOwner {
			held = append(held, tm)
			continue
		}
		if err := tm.fn(now); err != nil {
			return err
		}
	}
	return nil
}

func (p *procTimers) stop() {
	if p.release != nil {
		p.release()
	}
}
