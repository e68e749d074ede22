package jobmaster

import (
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

// uploadQueue decides when the uploader writes a task's snapshot: once it
// knows where the checkpoint goes. On a cluster a downstream task's barrier
// travels over the data exchange, the location of its checkpoint through
// the JobMaster's trigger to the task's worker, and either can come first:
// a snapshot whose location is not known yet waits for it (or for the
// checkpoint's end, which declines it), rather than failing a checkpoint
// that is still in progress. A task's end is reported after the snapshots
// it took, so it waits behind them.
//
// The queue is the uploader's own state: no locks, no I/O.
type uploadQueue struct {
	locs map[int64]*storage.Location
	// ended holds the ids of the last checkpoints that ended (completed or
	// aborted), so that a snapshot arriving after its checkpoint's end is
	// declined at once; bounded by maxEnded.
	ended  map[int64]bool
	parked map[int64][]upload // snapshots waiting for their location
	// finished holds the end of tasks that still have snapshots parked,
	// in the order the ends came.
	finished []upload
}

// maxEnded bounds the ended checkpoints remembered: a snapshot of an older
// one would wait until the host stops (its checkpoint long decided).
const maxEnded = 128

func newUploadQueue() *uploadQueue {
	return &uploadQueue{locs: map[int64]*storage.Location{}, ended: map[int64]bool{}, parked: map[int64][]upload{}}
}

// step is what the uploader does next: write snap to loc (and acknowledge
// it), decline it (loc nil: its checkpoint ended), or report the task
// finished.
type step struct {
	u   upload
	loc *storage.Location
}

// arrived takes an upload from a task.
func (q *uploadQueue) arrived(u upload) []step {
	if u.finished {
		if q.hasParked(u.task) {
			q.finished = append(q.finished, u)
			return nil
		}
		return []step{{u: u}}
	}
	id := u.snap.ID
	if loc, ok := q.locs[id]; ok {
		return []step{{u: u, loc: loc}}
	}
	if q.ended[id] {
		return []step{{u: u}}
	}
	q.parked[id] = append(q.parked[id], u)
	return nil
}

// located records where checkpoint id is written and releases the
// snapshots that waited for it.
func (q *uploadQueue) located(id int64, loc *storage.Location) []step {
	if q.ended[id] {
		return nil // a trigger after the checkpoint ended: nothing to write
	}
	if _, ok := q.locs[id]; !ok {
		q.locs[id] = loc
	}
	return q.release(id, q.locs[id])
}

// endedCheckpoint forgets checkpoint id (completed or aborted) and declines
// the snapshots that still waited for its location.
func (q *uploadQueue) endedCheckpoint(id int64) []step {
	delete(q.locs, id)
	q.ended[id] = true
	for len(q.ended) > maxEnded {
		oldest := id
		for e := range q.ended {
			oldest = min(oldest, e)
		}
		delete(q.ended, oldest)
	}
	return q.release(id, nil)
}

func (q *uploadQueue) release(id int64, loc *storage.Location) []step {
	us := q.parked[id]
	if len(us) == 0 {
		return nil
	}
	delete(q.parked, id)
	var steps []step
	for _, u := range us {
		steps = append(steps, step{u: u, loc: loc})
	}
	// The ends of tasks left without parked snapshots follow them.
	kept := q.finished[:0]
	for _, f := range q.finished {
		if q.hasParked(f.task) {
			kept = append(kept, f)
		} else {
			steps = append(steps, step{u: f})
		}
	}
	q.finished = kept
	return steps
}

func (q *uploadQueue) hasParked(t checkpoint.TaskID) bool {
	for _, us := range q.parked {
		for _, u := range us {
			if u.task == t {
				return true
			}
		}
	}
	return false
}

// drain returns every parked snapshot, for the host's end.
func (q *uploadQueue) drain() []upload {
	var us []upload
	for id, ps := range q.parked {
		us = append(us, ps...)
		delete(q.parked, id)
	}
	q.finished = nil
	return us
}
