package jobmanager

import (
	"cmp"
	"slices"
	"sync"
)

// slot is a slot a TaskManager offered to a job.
type slot struct {
	allocation string
	tm         string
	tmAddr     string
	host       string // the TaskManager's host name
	index      int32
}

// slotPool holds the slots a job was offered. Offers arrive on gRPC
// goroutines; the executor takes slots when it deploys an attempt.
type slotPool struct {
	mu      sync.Mutex
	slots   map[string]slot // by allocation id
	closed  bool
	changed chan struct{} // replaced on every change
}

func newSlotPool() *slotPool {
	return &slotPool{slots: map[string]slot{}, changed: make(chan struct{})}
}

func (p *slotPool) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// offer adds slots; it returns the accepted allocation ids (none once the
// pool is closed).
func (p *slotPool) offer(ss []slot) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	var ok []string
	for _, s := range ss {
		p.slots[s.allocation] = s
		ok = append(ok, s.allocation)
	}
	p.signal()
	return ok
}

// dropTaskManager forgets the slots of a TaskManager that is gone.
func (p *slotPool) dropTaskManager(tm string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	dropped := false
	for id, s := range p.slots {
		if s.tm == tm {
			delete(p.slots, id)
			dropped = true
		}
	}
	if dropped {
		p.signal()
	}
	return dropped
}

// take returns n slots ordered by TaskManager and index, or false and a
// channel that is closed on the next change.
func (p *slotPool) take(n int) ([]slot, <-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.slots) < n {
		return nil, p.changed, false
	}
	all := make([]slot, 0, len(p.slots))
	for _, s := range p.slots {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b slot) int {
		return cmp.Or(cmp.Compare(a.tm, b.tm), cmp.Compare(a.index, b.index))
	})
	return all[:n], nil, true
}

// close empties the pool and returns what it held.
func (p *slotPool) close() []slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var out []slot
	for _, s := range p.slots {
		out = append(out, s)
	}
	p.slots = map[string]slot{}
	p.signal()
	return out
}

func (p *slotPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}
