package taskmanager

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// This file is the TaskManager's slot offers: a state machine without I/O
// that follows each slot from free through assigned by the
// ResourceManager (queued), offered to the job's JobMaster, to accepted
// (active) or back to free (declined, freed, session lost). It returns what
// to report, offer, stop and log (offerEffect); the TaskManager's owner
// goroutine carries that out. trace_test.go drives it directly.

// offerEvent is an input of the slot offers.
type offerEvent interface{ isOfferEvent() }

// oeAllocate: the ResourceManager assigned a slot (AllocateSlot).
type oeAllocate struct{ a *clusterpb.AllocateSlot }

// oeOfferDone: the offer of allocs to job's JobMaster ended: accepted
// lists those it took; err is set when the offer failed.
type oeOfferDone struct {
	job, jobMaster   string
	allocs, accepted []string
	err              error
}

// oeFree: free job's slots with these allocations (all of the job's when
// empty), for reason.
type oeFree struct {
	job    string
	allocs []string
	reason string
}

// oeReset: the session with the ResourceManager ended: every slot is free
// and no offer counts any more.
type oeReset struct{}

func (oeAllocate) isOfferEvent()  {}
func (oeOfferDone) isOfferEvent() {}
func (oeFree) isOfferEvent()      {}
func (oeReset) isOfferEvent()     {}

// offerEffect is an output of the slot offers, to carry out in order.
type offerEffect interface{ isOfferEffect() }

// ofReport: send the slot report to the ResourceManager.
type ofReport struct{}

// ofOffer: offer slots to job's JobMaster at jobMaster; report the
// outcome as oeOfferDone.
type ofOffer struct {
	job, jobMaster string
	slots          []*clusterpb.OfferedSlot
}

// ofStopWorkers: stop job's workers that run in allocation alloc.
type ofStopWorkers struct{ job, alloc string }

// ofLog: log msg with args at level.
type ofLog struct {
	level slog.Level
	msg   string
	args  []any
}

func (ofReport) isOfferEffect()      {}
func (ofOffer) isOfferEffect()       {}
func (ofStopWorkers) isOfferEffect() {}
func (ofLog) isOfferEffect()         {}

type slotPhase int

const (
	slotFree    slotPhase = iota
	slotQueued            // assigned, to be offered
	slotOffered           // offer in flight
	slotActive            // accepted by the JobMaster
)

var slotPhaseNames = [...]string{"free", "queued", "offered", "active"}

func (p slotPhase) String() string { return slotPhaseNames[p] }

type slotState struct {
	jobID, allocationID, jobMaster string
	phase                          slotPhase
}

// slotOffers is the state of a TaskManager's slots. Its events come only
// while the TaskManager is registered at a ResourceManager (oeReset when
// that ends; oeFree at any time). Not safe for concurrent use.
type slotOffers struct {
	slots    []slotState
	offering map[string]bool // jobs with an offer in flight
	fx       []offerEffect   // of the current step
}

func newSlotOffers(n int) *slotOffers {
	return &slotOffers{slots: make([]slotState, n), offering: make(map[string]bool)}
}

// Step applies e and returns the effects. The time is not used: offers
// have no deadlines of their own (an offer's RPC has its timeout).
func (o *slotOffers) Step(_ int64, e offerEvent) ([]offerEffect, struct{}) {
	switch e := e.(type) {
	case oeAllocate:
		o.allocate(e.a)
	case oeOfferDone:
		o.offerDone(e)
	case oeFree:
		o.free(e.job, e.allocs, e.reason)
	case oeReset:
		for i := range o.slots {
			o.slots[i] = slotState{}
		}
		clear(o.offering)
	default:
		panic(fmt.Sprintf("taskmanager: unknown offer event %T", e))
	}
	fx := o.fx
	o.fx = nil
	return fx, struct{}{}
}

// Deadline: slot offers have none.
func (o *slotOffers) Deadline() (int64, bool) { return 0, false }

func (o *slotOffers) emit(f offerEffect) { o.fx = append(o.fx, f) }

func (o *slotOffers) log(level slog.Level, msg string, args ...any) {
	o.emit(ofLog{level: level, msg: msg, args: args})
}

// slotOf returns the index of the slot holding allocationID, or -1.
func (o *slotOffers) slotOf(allocationID string) int {
	for i, s := range o.slots {
		if s.phase != slotFree && s.allocationID == allocationID {
			return i
		}
	}
	return -1
}

// notHeld returns the first of allocs that is not a slot of job, if any.
func (o *slotOffers) notHeld(job string, allocs []string) (string, bool) {
	for _, a := range allocs {
		if i := o.slotOf(a); i < 0 || o.slots[i].jobID != job {
			return a, true
		}
	}
	return "", false
}

func (o *slotOffers) allocate(a *clusterpb.AllocateSlot) {
	i := int(a.GetIndex())
	switch {
	case i < 0 || i >= len(o.slots):
		o.log(slog.LevelWarn, "AllocateSlot names a slot this TaskManager does not have", "index", i, "slots", len(o.slots))
	case a.GetAllocationId() == "" || a.GetJobId() == "" || a.GetJobMasterAddress() == "":
		o.log(slog.LevelWarn, "AllocateSlot without allocation id, job or JobMaster address; ignored", "index", i,
			"allocation", a.GetAllocationId(), "job", a.GetJobId(), "jobmaster", a.GetJobMasterAddress())
	case o.slots[i].phase != slotFree:
		if o.slots[i].allocationID == a.GetAllocationId() {
			return // a repeat
		}
		o.log(slog.LevelWarn, "AllocateSlot for a slot in use; refused", "index", i, "allocation", a.GetAllocationId(),
			"job", a.GetJobId(), "held_by", o.slots[i].allocationID)
	default:
		o.slots[i] = slotState{jobID: a.GetJobId(), allocationID: a.GetAllocationId(), jobMaster: a.GetJobMasterAddress(), phase: slotQueued}
		o.log(slog.LevelInfo, "slot allocated", "index", i, "job", a.GetJobId(), "allocation", a.GetAllocationId(), "jobmaster", a.GetJobMasterAddress())
	}
	o.emit(ofReport{})
	o.startOffers()
}

// startOffers offers queued slots to their JobMasters, one offer per job
// at a time; slots queued while an offer is in flight go in the next.
func (o *slotOffers) startOffers() {
	type group struct{ job, jobMaster string }
	batches := make(map[group][]int)
	for i, sl := range o.slots {
		if sl.phase == slotQueued && !o.offering[sl.jobID] {
			g := group{sl.jobID, sl.jobMaster}
			batches[g] = append(batches[g], i)
		}
	}
	for _, g := range slices.SortedFunc(maps.Keys(batches), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.jobMaster, b.jobMaster))
	}) {
		if o.offering[g.job] {
			continue // another JobMaster address of the same job: next round
		}
		o.offering[g.job] = true
		offer := ofOffer{job: g.job, jobMaster: g.jobMaster}
		for _, i := range batches[g] {
			o.slots[i].phase = slotOffered
			offer.slots = append(offer.slots, &clusterpb.OfferedSlot{Index: int32(i), AllocationId: o.slots[i].allocationID})
		}
		o.emit(offer)
	}
}

func (o *slotOffers) offerDone(e oeOfferDone) {
	delete(o.offering, e.job)
	var took, declined []string
	for _, a := range e.allocs {
		i := o.slotOf(a)
		if i < 0 || o.slots[i].phase != slotOffered {
			continue // freed meanwhile
		}
		if e.err == nil && slices.Contains(e.accepted, a) {
			o.slots[i].phase = slotActive
			took = append(took, a)
		} else {
			o.slots[i] = slotState{}
			declined = append(declined, a)
		}
	}
	switch {
	case e.err != nil:
		o.log(slog.LevelWarn, "offering slots to the JobMaster failed; slots freed", "job", e.job, "jobmaster", e.jobMaster, "allocations", declined, "err", e.err)
	case len(declined) > 0:
		o.log(slog.LevelInfo, "JobMaster declined slots; slots freed", "job", e.job, "allocations", declined, "accepted", took)
	default:
		o.log(slog.LevelInfo, "JobMaster accepted slots", "job", e.job, "allocations", took)
	}
	if len(declined) > 0 {
		o.emit(ofReport{})
	}
	o.startOffers()
}

// free frees a job's slots (all of them when allocs is empty), stopping
// the workers that run in them.
func (o *slotOffers) free(job string, allocs []string, reason string) {
	var freed []string
	for i, sl := range o.slots {
		if sl.phase == slotFree || sl.jobID != job || len(allocs) > 0 && !slices.Contains(allocs, sl.allocationID) {
			continue
		}
		o.emit(ofStopWorkers{job: job, alloc: sl.allocationID})
		o.slots[i] = slotState{}
		freed = append(freed, sl.allocationID)
	}
	if len(freed) == 0 {
		o.log(slog.LevelDebug, "nothing to free", "job", job, "allocations", allocs)
		return
	}
	o.log(slog.LevelInfo, "slots freed", "job", job, "allocations", freed, "reason", reason)
	o.emit(ofReport{})
}
