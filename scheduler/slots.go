package scheduler

import (
	"cmp"
	"slices"
)

// Slot is one task slot of a TaskManager as the ResourceManager sees it.
type Slot struct {
	// JobID is the job holding the slot (assigned, offered or in use);
	// empty for a free slot.
	JobID string
}

// TaskManager is a registered TaskManager and its slots, by slot index.
type TaskManager struct {
	ID    string
	Slots []Slot
}

// Demand is a job's slot demand: the number of slots it needs in total
// (absolute, not incremental).
type Demand struct {
	JobID string
	Slots int
}

// Assignment gives slot Index of TaskManager TaskManagerID to JobID.
type Assignment struct {
	JobID         string
	TaskManagerID string
	Index         int
}

// Strategy chooses among free slots when several fit.
type Strategy int

const (
	// Pack fills TaskManagers one after the other: a job's slots go to the
	// TaskManager with the fewest free slots (ties by id). It keeps whole
	// TaskManagers idle, so a platform that starts them on demand (YARN)
	// can release them. It is Flink's default
	// (cluster.evenly-spread-out-slots: false).
	Pack Strategy = iota
	// Spread spreads each job evenly over the TaskManagers: a slot goes to
	// the TaskManager holding the fewest slots of that job, then to the
	// least utilised one (allocated / total), ties by id. It balances load
	// over a fixed set of TaskManagers (cluster.evenly-spread-out-slots:
	// true).
	Spread
)

func (s Strategy) String() string {
	switch s {
	case Pack:
		return "pack"
	case Spread:
		return "spread"
	default:
		return "Strategy(?)"
	}
}

// MatchSlots decides which free slots to assign to which job so that each
// job holds as many slots as it demands.
//
// Slots a job already holds count towards its demand; a job holding more
// than it demands gets nothing and gives nothing back (its JobMaster frees
// what it does not use). Jobs are served in the order of demands, each as
// fully as the free slots allow before the next is considered, so that when
// slots are short the earlier job can run rather than every job holding a
// part of what it needs. The ResourceManager passes jobs in the order they
// first declared a demand.
//
// The result is deterministic: it depends on the order of demands but not on
// the order of tms, and lists assignments in the order they were decided.
// Job and TaskManager ids are unique in their lists.
func MatchSlots(demands []Demand, tms []TaskManager, strategy Strategy) []Assignment {
	pool := newPool(tms)
	held := pool.heldByJob()
	var out []Assignment
	for _, d := range demands {
		missing := d.Slots - held[d.JobID]
		for ; missing > 0; missing-- {
			t := pool.choose(d.JobID, strategy)
			if t == nil {
				break
			}
			idx := t.take(d.JobID)
			out = append(out, Assignment{JobID: d.JobID, TaskManagerID: t.id, Index: idx})
		}
	}
	return out
}

// pool is the working copy of the TaskManagers' slots while matching.
type pool struct {
	tms []*tmSlots // sorted by id
}

type tmSlots struct {
	id    string
	slots []string // job per slot index, "" when free
	free  int
	byJob map[string]int
}

func newPool(tms []TaskManager) *pool {
	p := &pool{tms: make([]*tmSlots, 0, len(tms))}
	for _, tm := range tms {
		t := &tmSlots{id: tm.ID, slots: make([]string, len(tm.Slots)), byJob: make(map[string]int)}
		for i, s := range tm.Slots {
			t.slots[i] = s.JobID
			if s.JobID == "" {
				t.free++
			} else {
				t.byJob[s.JobID]++
			}
		}
		p.tms = append(p.tms, t)
	}
	slices.SortFunc(p.tms, func(a, b *tmSlots) int { return cmp.Compare(a.id, b.id) })
	return p
}

func (p *pool) heldByJob() map[string]int {
	held := make(map[string]int)
	for _, t := range p.tms {
		for job, n := range t.byJob {
			held[job] += n
		}
	}
	return held
}

// choose returns the TaskManager the next slot of job comes from, or nil
// when no slot is free.
func (p *pool) choose(job string, strategy Strategy) *tmSlots {
	var best *tmSlots
	for _, t := range p.tms {
		if t.free == 0 {
			continue
		}
		if best == nil || better(t, best, job, strategy) {
			best = t
		}
	}
	return best
}

// better reports whether a is preferred over b (b comes earlier by id, so
// ties keep b).
func better(a, b *tmSlots, job string, strategy Strategy) bool {
	switch strategy {
	case Spread:
		if a.byJob[job] != b.byJob[job] {
			return a.byJob[job] < b.byJob[job]
		}
		// utilisation used/total, compared without division.
		ua, ub := (len(a.slots)-a.free)*len(b.slots), (len(b.slots)-b.free)*len(a.slots)
		return ua < ub
	default:
		return a.free < b.free
	}
}

// take assigns the lowest free slot to job and returns its index.
func (t *tmSlots) take(job string) int {
	for i, j := range t.slots {
		if j == "" {
			t.slots[i] = job
			t.free--
			t.byJob[job]++
			return i
		}
	}
	panic("scheduler: take on a TaskManager without a free slot") // choose only returns TaskManagers with free slots
}

// Capacity is what the demand asks of the platform.
type Capacity struct {
	// Required is how many TaskManagers the cluster needs in total (what a
	// driver's SetRequired takes): every TaskManager holding a slot, the
	// idle ones whose slots the unmet demand can use, and new ones for the
	// rest.
	Required int
	// Surplus are the idle TaskManagers (no slot held) the demand does not
	// need, sorted by id: candidates for release.
	Surplus []string
}

// PlanCapacity computes the TaskManagers the demand needs, given the
// registered ones and the number of slots a new TaskManager brings
// (taskmanager.numberOfTaskSlots; values below 1 count as 1).
//
// The unmet demand (slots demanded beyond those held, over all jobs) is
// placed first on the free slots of TaskManagers already holding slots, then
// on idle TaskManagers in id order, then on new TaskManagers. Slots held
// beyond a job's demand are kept, as MatchSlots keeps them.
func PlanCapacity(demands []Demand, tms []TaskManager, slotsPerTaskManager int) Capacity {
	if slotsPerTaskManager < 1 {
		slotsPerTaskManager = 1
	}
	p := newPool(tms)
	held := p.heldByJob()
	unmet := 0
	for _, d := range demands {
		if m := d.Slots - held[d.JobID]; m > 0 {
			unmet += m
		}
	}
	var c Capacity
	var idle []*tmSlots
	for _, t := range p.tms {
		if t.free < len(t.slots) {
			c.Required++
			unmet -= t.free
		} else {
			idle = append(idle, t)
		}
	}
	for _, t := range idle { // in id order
		if unmet > 0 && len(t.slots) > 0 {
			c.Required++
			unmet -= len(t.slots)
			continue
		}
		c.Surplus = append(c.Surplus, t.id)
	}
	if unmet > 0 {
		c.Required += (unmet + slotsPerTaskManager - 1) / slotsPerTaskManager
	}
	return c
}
