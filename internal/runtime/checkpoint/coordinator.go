package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Action is a decision of the Coordinator for the lead to carry out, in the
// order returned.
type Action interface{ isAction() }

// TriggerBarrier: inject a barrier for checkpoint ID at the listed running
// sources. Timestamp is the checkpoint's timestamp (the trigger time).
type TriggerBarrier struct {
	ID        ID
	Kind      Kind
	Timestamp int64
	Tasks     []TaskID // sorted
}

// Complete: every task that was running has acknowledged checkpoint ID (or
// finished meanwhile). Write its metadata, then report Persisted (or
// PersistFailed); tasks are notified only after that.
type Complete struct {
	ID        ID
	Kind      Kind
	Timestamp int64
	// Snapshots holds each acknowledging task's snapshot, as given to Ack.
	Snapshots map[TaskID]any
	// Finished lists, sorted, the tasks that had finished and took no
	// snapshot: on restore they are finished (FLIP-147).
	Finished []TaskID
}

// NotifyComplete: tell the running tasks that checkpoint ID completed
// (Flink's notifyCheckpointComplete: sinks commit their transactions). It
// follows checkpoints and stop-with-savepoints, not plain savepoints.
type NotifyComplete struct{ ID ID }

// Abort: checkpoint ID will not complete. Tell the running tasks (Flink's
// notifyCheckpointAborted) and discard whatever was written for it, also
// metadata written after a Complete. Reason says why: an *ExpiredError, a
// *DeclinedError, ErrSubsumed, or ErrStopped wrapping the reason of the
// shutdown.
type Abort struct {
	ID     ID
	Reason error
}

// FailJob: fail the job over. Reason is a *FailuresError. The coordinator
// has aborted every pending checkpoint and is stopped; a restarted job
// gets a new Coordinator.
type FailJob struct{ Reason error }

func (TriggerBarrier) isAction() {}
func (Complete) isAction()       {}
func (NotifyComplete) isAction() {}
func (Abort) isAction()          {}
func (FailJob) isAction()        {}

type pending struct {
	id       ID
	kind     Kind
	ts       int64
	waiting  map[TaskID]bool // running tasks that have not acknowledged
	snaps    map[TaskID]any
	complete bool // Complete issued; waiting for Persisted
}

// Coordinator triggers and completes the checkpoints and savepoints of one
// job attempt, following Flink's CheckpointCoordinator:
//
//   - A periodic checkpoint is triggered by Tick once Interval has passed
//     since the last periodic trigger, MinPause since the last completion,
//     while fewer than MaxConcurrent checkpoints and savepoints are in
//     progress (a completed one is in progress until Persisted), no
//     stop-with-savepoint is in progress, and some source is running.
//   - Savepoints are triggered on request regardless of those limits.
//   - A checkpoint completes when every task that was running at its
//     trigger has acknowledged it or finished. Finished tasks are not
//     waited for (FLIP-147); barriers go to the running sources only.
//   - Tick aborts checkpoints not complete within Timeout; a task may
//     decline one. Each such failure of a periodic checkpoint newer than the
//     last completion counts; a completion resets the count; a count above
//     TolerableFailures fails the job. Savepoint failures never count, nor
//     do declines matching ErrSubsumed or ErrTaskNotReady, nor failures to
//     persist metadata (as in Flink).
//   - When a checkpoint or stop-with-savepoint is persisted, older pending
//     periodic checkpoints are aborted as subsumed and the tasks are
//     notified. Savepoints are never subsumed. As in Flink 1.15+, a plain
//     savepoint notifies nobody: it commits no side effects (a restore
//     from the checkpoint before it would replay them), so its Persisted
//     returns no action.
//   - Once a stop-with-savepoint is persisted the coordinator stops.
//
// Events that carry no time (TaskFinished, Persisted) happen at the latest
// time seen. Time never goes backwards: an earlier now counts as the
// latest seen. A Coordinator is not safe for concurrent use: one loop owns it.
type Coordinator struct {
	opts                        Options
	interval, timeout, minPause int64 // ms

	sources        []TaskID
	all            []TaskID
	isSource       map[TaskID]bool // every known task; true for sources
	finished       map[TaskID]bool
	runningSources int

	now            int64
	nextID         ID
	lastTrigger    int64 // time of the last periodic trigger; construction time before
	lastCompletion int64 // time the last checkpoint or savepoint was persisted
	completedOnce  bool
	pending        map[ID]*pending

	lastCheckpoint ID // latest persisted periodic checkpoint
	hasCheckpoint  bool
	lastSucceeded  ID // latest persisted checkpoint or savepoint
	failures       int
	stop           ID    // stop-with-savepoint in progress; 0 if none
	stopped        error // non-nil once stopped, matching ErrStopped
}

// NewCoordinator returns a coordinator for a job whose tasks are all and
// whose sources (a subset of all) receive the barriers. now is the current
// time: the first periodic checkpoint is due at now+Interval. firstID is
// the first ID to use: greater than any ID used before by the job,
// including by earlier attempts (pass their NextID), and at least 1.
//
// NewCoordinator panics if opts are invalid (check them with Validate),
// a source is not among all, a task is listed twice, or firstID < 1.
func NewCoordinator(opts Options, sources, all []TaskID, now int64, firstID ID) *Coordinator {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	if firstID < 1 {
		panic(fmt.Sprintf("checkpoint: first checkpoint id %d must be at least 1", firstID))
	}
	opts = opts.withDefaults()
	c := &Coordinator{
		opts:          opts,
		interval:      opts.Interval.Milliseconds(),
		timeout:       opts.Timeout.Milliseconds(),
		minPause:      opts.MinPause.Milliseconds(),
		sources:       sortTasks(slices.Clone(sources)),
		all:           sortTasks(slices.Clone(all)),
		isSource:      make(map[TaskID]bool, len(all)),
		finished:      make(map[TaskID]bool),
		now:           now,
		nextID:        firstID,
		lastTrigger:   now,
		pending:       make(map[ID]*pending),
		lastSucceeded: firstID - 1,
	}
	for _, t := range c.all {
		if _, dup := c.isSource[t]; dup {
			panic(fmt.Sprintf("checkpoint: task %s listed twice", t))
		}
		c.isSource[t] = false
	}
	for _, t := range c.sources {
		is, ok := c.isSource[t]
		if !ok {
			panic(fmt.Sprintf("checkpoint: source %s is not among the tasks", t))
		}
		if is {
			panic(fmt.Sprintf("checkpoint: source %s listed twice", t))
		}
		c.isSource[t] = true
	}
	c.runningSources = len(c.sources)
	return c
}

func (c *Coordinator) advance(now int64) {
	if now > c.now {
		c.now = now
	}
}

// Tick advances time to now: it aborts expired checkpoints and triggers a
// periodic checkpoint when one is due.
func (c *Coordinator) Tick(now int64) []Action {
	c.advance(now)
	if c.stopped != nil {
		return nil
	}
	var acts []Action
	for _, p := range c.sortedPending() {
		if p.complete || c.now < p.ts+c.timeout {
			continue
		}
		waiting := sortTasks(slices.Collect(maps.Keys(p.waiting)))
		acts = c.fail(acts, p, &ExpiredError{ID: p.id, Kind: p.kind, Timeout: c.opts.Timeout, Waiting: waiting}, true)
		if c.stopped != nil {
			return acts
		}
	}
	if at, ok := c.periodicAt(); ok && c.now >= at {
		acts = append(acts, c.trigger(Checkpoint))
	}
	return acts
}

// Deadline returns the earliest time at which Tick has something to do: a
// periodic checkpoint falls due or a checkpoint expires. ok is false when
// nothing is scheduled; other events may change the deadline.
func (c *Coordinator) Deadline() (at int64, ok bool) {
	if c.stopped != nil {
		return 0, false
	}
	at, ok = c.periodicAt()
	for _, p := range c.pending {
		if exp := p.ts + c.timeout; !p.complete && (!ok || exp < at) {
			at, ok = exp, true
		}
	}
	return at, ok
}

// periodicAt returns when the next periodic checkpoint is due, if one may
// be triggered at all in the current state.
func (c *Coordinator) periodicAt() (int64, bool) {
	if c.stopped != nil || c.stop != 0 || c.interval == 0 || c.runningSources == 0 ||
		len(c.pending) >= c.opts.MaxConcurrent {
		return 0, false
	}
	at := c.lastTrigger + c.interval
	if c.completedOnce {
		at = max(at, c.lastCompletion+c.minPause)
	}
	return at, true
}

// TriggerSavepoint starts a savepoint of the given kind now, regardless of
// the interval, min pause and max concurrent checkpoints. It fails with
// ErrNotSavepoint for a kind that is not a savepoint, ErrStopInProgress
// while a stop-with-savepoint is in progress, ErrStopped once the
// coordinator stopped, and ErrSourcesFinished when no source is running.
// While a stop-with-savepoint is in progress no periodic checkpoint is
// triggered; if it fails, they resume.
func (c *Coordinator) TriggerSavepoint(now int64, kind Kind) (ID, []Action, error) {
	c.advance(now)
	switch {
	case !kind.IsSavepoint():
		return 0, nil, fmt.Errorf("%w: %v", ErrNotSavepoint, kind)
	case c.stopped != nil:
		return 0, nil, c.stopped
	case c.stop != 0:
		return 0, nil, fmt.Errorf("%w: %d (%s)", ErrStopInProgress, c.stop, c.pending[c.stop].kind)
	case c.runningSources == 0:
		return 0, nil, ErrSourcesFinished
	}
	act := c.trigger(kind)
	return act.ID, []Action{act}, nil
}

// TriggerCheckpoint triggers a checkpoint of kind Checkpoint or
// FullCheckpoint now, outside the periodic schedule (a user's request); it
// counts as a periodic one once complete. Periodic checkpoints are of kind
// Checkpoint. It fails with ErrNotCheckpoint for another kind, and like
// TriggerSavepoint otherwise.
func (c *Coordinator) TriggerCheckpoint(now int64, kind Kind) (ID, []Action, error) {
	c.advance(now)
	switch {
	case !kind.IsCheckpoint():
		return 0, nil, fmt.Errorf("%w: %v", ErrNotCheckpoint, kind)
	case c.stopped != nil:
		return 0, nil, c.stopped
	case c.stop != 0:
		return 0, nil, fmt.Errorf("%w: %d (%s)", ErrStopInProgress, c.stop, c.pending[c.stop].kind)
	case c.runningSources == 0:
		return 0, nil, ErrSourcesFinished
	}
	act := c.trigger(kind)
	return act.ID, []Action{act}, nil
}

func (c *Coordinator) trigger(kind Kind) TriggerBarrier {
	p := &pending{
		id:      c.nextID,
		kind:    kind,
		ts:      c.now,
		waiting: make(map[TaskID]bool, len(c.all)-len(c.finished)),
		snaps:   make(map[TaskID]any, len(c.all)-len(c.finished)),
	}
	c.nextID++
	for _, t := range c.all {
		if !c.finished[t] {
			p.waiting[t] = true
		}
	}
	c.pending[p.id] = p
	if kind.IsCheckpoint() {
		c.lastTrigger = c.now
	}
	if kind.IsStop() {
		c.stop = p.id
	}
	var tasks []TaskID
	for _, t := range c.sources {
		if !c.finished[t] {
			tasks = append(tasks, t)
		}
	}
	return TriggerBarrier{ID: p.id, Kind: kind, Timestamp: p.ts, Tasks: tasks}
}

// Ack records that task took its snapshot for checkpoint id. Acks for
// checkpoints that are unknown, aborted or complete, from tasks that are
// unknown or finished, and repeated acks are ignored.
func (c *Coordinator) Ack(now int64, id ID, task TaskID, snap any) []Action {
	c.advance(now)
	p := c.pending[id]
	if p == nil || p.complete || !p.waiting[task] {
		return nil
	}
	delete(p.waiting, task)
	p.snaps[task] = snap
	if len(p.waiting) == 0 {
		return []Action{c.complete(p)}
	}
	return nil
}

// Decline records that task could not take its snapshot for checkpoint
// id: the checkpoint is aborted. Declines of checkpoints that are unknown,
// aborted or complete, and from tasks that already acknowledged it or
// finished, are ignored.
func (c *Coordinator) Decline(now int64, id ID, task TaskID, reason error) []Action {
	c.advance(now)
	p := c.pending[id]
	if p == nil || p.complete || !p.waiting[task] {
		return nil
	}
	countable := !errors.Is(reason, ErrSubsumed) && !errors.Is(reason, ErrTaskNotReady)
	return c.fail(nil, p, &DeclinedError{ID: id, Task: task, Err: reason}, countable)
}

// TaskFinished records that a task of a bounded input ended. It
// acknowledges nothing later, checkpoints in progress stop waiting for it,
// and later ones do not include it. Once every source has finished no
// periodic checkpoint is triggered.
func (c *Coordinator) TaskFinished(task TaskID) []Action {
	isSource, known := c.isSource[task]
	if !known || c.finished[task] {
		return nil
	}
	c.finished[task] = true
	if isSource {
		c.runningSources--
	}
	var acts []Action
	for _, p := range c.sortedPending() {
		if !p.complete && p.waiting[task] {
			delete(p.waiting, task)
			if len(p.waiting) == 0 {
				acts = append(acts, c.complete(p))
			}
		}
	}
	return acts
}

func (c *Coordinator) complete(p *pending) Complete {
	p.complete = true
	var finished []TaskID
	for _, t := range c.all {
		if _, ok := p.snaps[t]; !ok {
			finished = append(finished, t)
		}
	}
	return Complete{ID: p.id, Kind: p.kind, Timestamp: p.ts, Snapshots: p.snaps, Finished: finished}
}

// Persisted records that the metadata of completed checkpoint id was
// written. For a checkpoint or stop-with-savepoint it returns the aborts
// of the older pending periodic checkpoints it subsumes, then
// NotifyComplete; after a stop-with-savepoint the other pending ones are
// aborted too and the coordinator stops. For a plain savepoint it returns
// nothing. Unknown ids, and ids not yet complete or aborted meanwhile, are
// ignored.
func (c *Coordinator) Persisted(id ID) []Action {
	p := c.pending[id]
	if p == nil || !p.complete {
		return nil
	}
	delete(c.pending, id)
	c.lastCompletion, c.completedOnce = c.now, true
	if id > c.lastSucceeded {
		c.lastSucceeded, c.failures = id, 0
	}
	if p.kind.IsCheckpoint() && (!c.hasCheckpoint || id > c.lastCheckpoint) {
		c.lastCheckpoint, c.hasCheckpoint = id, true
	}
	if p.kind == Savepoint {
		return nil
	}
	var acts []Action
	for _, q := range c.sortedPending() {
		if q.id < id && q.kind.IsCheckpoint() {
			delete(c.pending, q.id)
			acts = append(acts, Abort{ID: q.id, Reason: fmt.Errorf("%w: %s %d completed", ErrSubsumed, p.kind, id)})
		}
	}
	if p.kind.IsStop() {
		c.stop = 0
		acts = c.shutdown(acts, fmt.Errorf("%s %d completed", p.kind, id))
	}
	return append(acts, NotifyComplete{ID: id})
}

// PersistFailed records that writing the metadata of completed checkpoint
// id failed: it is aborted with err. As in Flink this does not count
// towards the tolerable failures. Unknown ids and ids not complete are
// ignored.
func (c *Coordinator) PersistFailed(id ID, err error) []Action {
	p := c.pending[id]
	if p == nil || !p.complete {
		return nil
	}
	return c.fail(nil, p, fmt.Errorf("checkpoint: writing the metadata of %s %d: %w", p.kind, id, err), false)
}

// TriggerFailed records that the lead could not start checkpoint id,
// which it has not carried out yet (its TriggerBarrier was not applied):
// the location of a savepoint could not be created, for example. The
// checkpoint is aborted with err, before any barrier is injected; it
// counts towards the tolerable failures like a decline. Unknown ids and
// ids already complete are ignored.
func (c *Coordinator) TriggerFailed(now int64, id ID, err error) []Action {
	c.advance(now)
	p := c.pending[id]
	if p == nil || p.complete {
		return nil
	}
	return c.fail(nil, p, fmt.Errorf("checkpoint: starting %s %d: %w", p.kind, id, err), true)
}

// Shutdown stops the coordinator (the job was cancelled, failed or
// finished): every pending checkpoint is aborted with ErrStopped wrapping
// reason, and nothing is triggered any more.
func (c *Coordinator) Shutdown(reason error) []Action {
	if c.stopped != nil {
		return nil
	}
	return c.shutdown(nil, reason)
}

func (c *Coordinator) shutdown(acts []Action, reason error) []Action {
	if reason == nil {
		c.stopped = ErrStopped
	} else {
		c.stopped = fmt.Errorf("%w: %w", ErrStopped, reason)
	}
	for _, p := range c.sortedPending() {
		delete(c.pending, p.id)
		acts = append(acts, Abort{ID: p.id, Reason: c.stopped})
	}
	c.stop = 0
	return acts
}

// fail aborts p, counts the failure if it counts, and fails the job when
// too many consecutive checkpoints failed.
func (c *Coordinator) fail(acts []Action, p *pending, reason error, countable bool) []Action {
	delete(c.pending, p.id)
	if p.id == c.stop {
		c.stop = 0
	}
	acts = append(acts, Abort{ID: p.id, Reason: reason})
	if !p.kind.IsCheckpoint() || !countable || p.id <= c.lastSucceeded {
		return acts
	}
	c.failures++
	if c.failures <= c.opts.TolerableFailures {
		return acts
	}
	fe := &FailuresError{Failures: c.failures, Tolerable: c.opts.TolerableFailures, Last: reason}
	acts = c.shutdown(acts, fe)
	return append(acts, FailJob{Reason: fe})
}

func (c *Coordinator) sortedPending() []*pending {
	ps := slices.Collect(maps.Values(c.pending))
	slices.SortFunc(ps, func(a, b *pending) int { return cmp.Compare(a.id, b.id) })
	return ps
}

// Pending returns the ids of the checkpoints and savepoints in progress,
// including completed ones not yet persisted, in ascending order.
func (c *Coordinator) Pending() []ID {
	ids := slices.Collect(maps.Keys(c.pending))
	slices.Sort(ids)
	return ids
}

// LastCompleted returns the latest periodic checkpoint persisted by this
// coordinator: the one to restore from after a failure. (As in Flink,
// savepoints belong to the user and are not used for recovery.)
func (c *Coordinator) LastCompleted() (ID, bool) { return c.lastCheckpoint, c.hasCheckpoint }

// NextID returns the id the next trigger will use. A restarted job's
// coordinator starts there: ids are never reused, as tasks and external
// systems (e.g. transactional sinks) may have seen aborted ones.
func (c *Coordinator) NextID() ID { return c.nextID }

// Stopped returns why the coordinator stopped (matching ErrStopped), or nil.
func (c *Coordinator) Stopped() error { return c.stopped }
