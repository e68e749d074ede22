package checkpoint

import "fmt"

// AlignResult is what an Aligner decided after an event. Carry it out in
// field order: decline the Aborted checkpoints (with ErrSubsumed), then, if
// Snapshot is set, take the snapshot for ID and forward its barrier
// downstream, then resume reading the Unblock channels, in that order.
type AlignResult struct {
	// Snapshot is set when every channel has delivered the barrier of ID
	// (or ended): snapshot now, then forward the barrier.
	Snapshot bool
	ID       ID
	Kind     Kind
	// Unblock lists the channels released after the snapshot or an abort,
	// in the order they delivered their barrier (EXACTLY_ONCE only).
	Unblock []int
	// Aborted lists, ascending, the alignments cancelled because a newer
	// barrier overtook them or Abort was called: as in Flink, a newer
	// barrier aborts the older checkpoint on this task.
	Aborted []ID
}

type alignment struct {
	id      ID
	kind    Kind
	arrived []bool // per channel
	missing int    // channels neither arrived nor ended
}

// Aligner aligns the checkpoint barriers on the input channels of one task.
//
// In EXACTLY_ONCE mode (Flink's aligned checkpoints) one checkpoint is
// aligned at a time: a channel that delivered the barrier is blocked, its
// data held back, until every channel has delivered it; then the task
// snapshots and the channels are released. A barrier of a newer checkpoint
// aborts the alignment in progress.
//
// In AT_LEAST_ONCE mode (Flink's barrier tracker) nothing is blocked and
// several checkpoints may be tracked at once; a checkpoint is snapshot when
// its barrier has arrived on every channel, and the older ones still
// tracked are aborted then.
//
// Either way a channel that ended counts as aligned for every later
// checkpoint, and barriers of a checkpoint older than the newest seen, or
// already snapshot or aborted, are ignored. An Aligner is not safe for
// concurrent use.
type Aligner struct {
	mode    Mode
	ended   []bool
	blocked []bool
	order   []int // blocked channels in the order they blocked (EXACTLY_ONCE)
	open    int   // channels not ended
	latest  ID    // newest checkpoint seen (started, snapshot or aborted)
	pending []*alignment
}

// NewAligner returns an aligner for a task with the given number of input
// channels (at least 1; sources have no aligner).
func NewAligner(mode Mode, channels int) *Aligner {
	if channels < 1 {
		panic(fmt.Sprintf("checkpoint: aligner needs at least one channel, got %d", channels))
	}
	return &Aligner{
		mode:    mode,
		ended:   make([]bool, channels),
		blocked: make([]bool, channels),
		open:    channels,
	}
}

// Blocked reports whether data from channel ch is held back: in
// EXACTLY_ONCE mode, ch delivered the barrier of the checkpoint being
// aligned. Do not read a blocked channel until an AlignResult unblocks it.
func (a *Aligner) Blocked(ch int) bool { return a.blocked[ch] }

// Barrier records the barrier of checkpoint id arriving on channel ch.
func (a *Aligner) Barrier(ch int, id ID, kind Kind) AlignResult {
	var r AlignResult
	if a.ended[ch] {
		return r
	}
	var al *alignment
	for _, p := range a.pending {
		if p.id == id {
			al = p
		}
	}
	switch {
	case al != nil:
		if al.arrived[ch] {
			return r // repeated barrier
		}
	case id > a.latest:
		if a.mode == ExactlyOnce {
			a.abortUpTo(&r, id-1)
		}
		a.latest = id
		al = &alignment{id: id, kind: kind, arrived: make([]bool, len(a.ended)), missing: a.open}
		a.pending = append(a.pending, al)
	default:
		return r // older than the newest seen, or already snapshot or aborted
	}
	al.arrived[ch] = true
	al.missing--
	if al.missing == 0 {
		a.snapshot(&r, al)
	} else if a.mode == ExactlyOnce {
		a.blocked[ch] = true
		a.order = append(a.order, ch)
	}
	return r
}

// EndOfPartition records that channel ch ended: it counts as aligned for
// the checkpoints in progress and all later ones. (In EXACTLY_ONCE mode a
// blocked channel is not read, so it does not end while blocked.)
func (a *Aligner) EndOfPartition(ch int) AlignResult {
	var r AlignResult
	if a.ended[ch] {
		return r
	}
	a.ended[ch] = true
	a.open--
	var done *alignment
	for _, p := range a.pending {
		if !p.arrived[ch] {
			p.missing--
			if p.missing == 0 {
				done = p // the newest complete one
			}
		}
	}
	if done != nil {
		a.snapshot(&r, done)
	}
	return r
}

// Abort cancels the alignment of checkpoint id and of any older one in
// progress, for instance when the coordinator aborted id or an upstream
// task declined it; barriers of id and older ids are ignored from now on.
// Call it for every abort the coordinator notifies: without it an
// EXACTLY_ONCE task whose alignment can never complete stays blocked until
// a newer barrier arrives, and an AT_LEAST_ONCE task keeps tracking it.
func (a *Aligner) Abort(id ID) AlignResult {
	var r AlignResult
	a.abortUpTo(&r, id)
	a.latest = max(a.latest, id)
	return r
}

// snapshot completes al: older alignments are aborted, blocked channels
// released.
func (a *Aligner) snapshot(r *AlignResult, al *alignment) {
	a.abortUpTo(r, al.id-1)
	a.pending[0] = nil // al, now the oldest
	a.pending = a.pending[1:]
	r.Snapshot, r.ID, r.Kind = true, al.id, al.kind
	a.release(r)
}

// abortUpTo cancels the alignments of ids up to id.
func (a *Aligner) abortUpTo(r *AlignResult, id ID) {
	keep := a.pending[:0]
	aborted := false
	for _, p := range a.pending {
		if p.id <= id {
			r.Aborted = append(r.Aborted, p.id)
			aborted = true
		} else {
			keep = append(keep, p)
		}
	}
	clear(a.pending[len(keep):])
	a.pending = keep
	if aborted && a.mode == ExactlyOnce {
		a.release(r)
	}
}

func (a *Aligner) release(r *AlignResult) {
	for _, ch := range a.order {
		a.blocked[ch] = false
		r.Unblock = append(r.Unblock, ch)
	}
	a.order = a.order[:0]
}
