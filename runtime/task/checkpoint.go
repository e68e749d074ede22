package task

import (
	"fmt"
	"math"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/watermark"
)

// FinalCheckpoint is the checkpoint ID with which operators are notified
// that the job finished: what they pre-committed at the end of input may
// now be committed.
const FinalCheckpoint int64 = math.MaxInt64

// Checkpointing connects a task to the job's checkpoint coordinator.
type Checkpointing struct {
	Mode checkpoint.Mode
	// OnSnapshot receives the synchronous part of a checkpoint on the task
	// goroutine; it must hand the snapshot off (upload asynchronously).
	OnSnapshot func(s *Snapshot)
	// OnDecline reports a checkpoint this task could not take.
	OnDecline func(id int64, err error)
	// OnFinished reports that the task has finished its input and its
	// operators have emitted their final results.
	OnFinished func()
	// FinalCommit is closed once every task of the job has finished; the
	// task then notifies its operators of FinalCheckpoint and ends.
	FinalCommit <-chan struct{}
	// Incremental takes the keyed state of checkpoints (not savepoints) as
	// files where the backend can (execution.checkpointing.incremental with
	// the pebble backend): OperatorSnapshot.Files and Manifests instead of
	// KeyGroups. Full checkpoints (checkpoint.FullCheckpoint) take the same
	// files; the uploader uploads all of them again.
	Incremental bool
}

// Snapshot is the synchronous part of one task's checkpoint.
type Snapshot struct {
	ID        int64
	Kind      checkpoint.Kind
	Operators map[graph.NodeID]*OperatorSnapshot
}

// OperatorSnapshot is one operator's state in a checkpoint.
type OperatorSnapshot struct {
	// KeyGroups holds keyed state and timers per key group.
	KeyGroups map[int][]byte
	// State holds operator (non-keyed) list state entries; Union says every
	// subtask gets all entries of all subtasks on restore (broadcast state),
	// otherwise entries are spread over the subtasks.
	State [][]byte
	Union bool
	// Files of incremental keyed-state snapshots: upload those whose Name
	// was not uploaded before, then call ReleaseFiles (from any goroutine).
	Files []LocalFile
	// Manifests of the incremental snapshots, one per keyed state: small,
	// stored with the task's snapshot; restore hands them back with the
	// files they name.
	Manifests    [][]byte
	ReleaseFiles func()
	// KeyGroupsAsync encode keyed state frozen at the barrier
	// (copy-on-write); the uploader runs them and merges their key groups
	// into KeyGroups.
	KeyGroupsAsync []func() (map[int][]byte, error)
	releaseAsync   []func()
}

// Restore is the state a task starts from.
type Restore struct {
	// Operators by node of the current graph.
	Operators map[graph.NodeID]*OperatorRestore
}

// OperatorRestore is what one operator subtask restores.
type OperatorRestore struct {
	// KeyGroups may hold more groups than the subtask owns; the others are
	// ignored.
	KeyGroups map[int][]byte
	// Manifests of incremental snapshots whose key groups overlap the
	// subtask's (several when rescaling), and Files, the local copies of
	// the files they name, by name.
	Manifests [][]byte
	Files     map[string]string
	// State is this subtask's share of the operator state.
	State [][]byte
}

// KeyedState is an operator's keyed state (with its timers) as seen by
// checkpoints; *state.Keyed implements it.
type KeyedState interface {
	SnapshotKeyGroups() (map[int][]byte, error)
	RestoreKeyGroups(groups map[int][]byte) error
}

// LocalFile is a file of an incremental snapshot on local disk.
type LocalFile = state.LocalFile

// IncrementalKeyedState is keyed state that can take incremental snapshots
// (*state.Keyed with the pebble backend).
type IncrementalKeyedState interface {
	KeyedState
	// IncrementalSnapshots reports whether SnapshotFiles is available.
	IncrementalSnapshots() bool
	// SnapshotFiles returns the files of an incremental snapshot (immutable,
	// each with a Name unique across subtasks and checkpoints, the same in
	// every checkpoint that has the file) and a manifest to restore from.
	SnapshotFiles(checkpointID int64) (files []LocalFile, manifest []byte, err error)
	// ReleaseSnapshotFiles removes the local files of a snapshot once
	// uploaded; it may be called from any goroutine.
	ReleaseSnapshotFiles(checkpointID int64) error
	// RestoreFiles restores from the files (name → local path of a
	// downloaded copy) and manifests of one or more snapshots (several when
	// rescaling merges subtasks), keeping this subtask's key groups.
	RestoreFiles(files map[string]string, manifests [][]byte) error
}

// AsyncKeyedState is keyed state whose snapshot's synchronous part only
// freezes it; the returned function encodes it off the task goroutine.
type AsyncKeyedState interface {
	// SnapshotKeyGroupsAsync returns the encoder and a release for when
	// the encoder will not run (an abandoned upload).
	SnapshotKeyGroupsAsync() (encode func() (map[int][]byte, error), release func(), err error)
}

// ResolveKeyGroups runs the asynchronous parts of an operator snapshot and
// merges them into KeyGroups.
func (os *OperatorSnapshot) ResolveKeyGroups() error {
	defer os.releaseAll()
	for _, fn := range os.KeyGroupsAsync {
		groups, err := fn()
		if err != nil {
			return err
		}
		if os.KeyGroups == nil {
			os.KeyGroups = map[int][]byte{}
		}
		for kg, b := range groups {
			os.KeyGroups[kg] = append(os.KeyGroups[kg], b...)
		}
	}
	os.KeyGroupsAsync = nil
	return nil
}

func (os *OperatorSnapshot) releaseAll() {
	for _, r := range os.releaseAsync {
		r()
	}
	os.releaseAsync = nil
}

// Discard frees what a snapshot that will not be uploaded holds (pebble
// snapshots, local files).
func (s *Snapshot) Discard() {
	for _, os := range s.Operators {
		os.releaseAll()
		os.KeyGroupsAsync = nil
		if os.ReleaseFiles != nil {
			os.ReleaseFiles()
			os.ReleaseFiles = nil
		}
	}
}

// OperatorStateful is implemented by operators with operator state: source
// split positions, sink pre-commits, broadcast state.
type OperatorStateful interface {
	// SnapshotOperatorState runs at the barrier, on the task goroutine.
	SnapshotOperatorState(checkpointID int64) (entries [][]byte, union bool, err error)
	// RestoreOperatorState runs before Open.
	RestoreOperatorState(entries [][]byte) error
}

// CheckpointListener is implemented by operators that act when a
// checkpoint is complete everywhere (two-phase-commit sinks, offset commits).
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

// RegisterKeyedState makes s part of the operator's checkpoints and
// restores it if the task starts from a checkpoint.
func (c *Context) RegisterKeyedState(s KeyedState) error {
	h := c.t.handleOf(c.Node.ID)
	h.keyed = append(h.keyed, s)
	r := c.t.restoreOf(c.Node.ID)
	if r == nil {
		return nil
	}
	if r.Manifests != nil {
		inc, ok := s.(IncrementalKeyedState)
		if !ok {
			return fmt.Errorf("task: operator %s restores from an incremental snapshot, which its keyed state (%T) cannot read", c.Node.Label(), s)
		}
		if err := inc.RestoreFiles(r.Files, r.Manifests); err != nil {
			return err
		}
	}
	if r.KeyGroups != nil {
		return s.RestoreKeyGroups(r.KeyGroups)
	}
	return nil
}

// Checkpointing reports whether the job takes checkpoints.
func (c *Context) Checkpointing() bool { return c.t.spec.Checkpointing != nil }

func (t *Task) restoreOf(id graph.NodeID) *OperatorRestore {
	if t.spec.Restore == nil {
		return nil
	}
	return t.spec.Restore.Operators[id]
}

// restoreOperators hands operator state to the operators before Open.
func (t *Task) restoreOperators() error {
	for i, h := range t.ops {
		r := t.restoreOf(h.node.ID)
		if r == nil || len(r.State) == 0 {
			continue
		}
		os, ok := h.op.(OperatorStateful)
		if !ok {
			return fmt.Errorf("task: operator %s has operator state in the checkpoint but takes none", h.node.Label())
		}
		t.current = i
		if err := os.RestoreOperatorState(r.State); err != nil {
			return t.wrapErr(fmt.Errorf("restoring operator state: %w", err), i)
		}
	}
	return nil
}

// TriggerCheckpoint starts a checkpoint at a source task (called from the
// coordinator's goroutine): the task snapshots its chain at its next
// mailbox turn and sends the barrier downstream.
func (t *Task) TriggerCheckpoint(id int64, kind checkpoint.Kind) {
	t.mail.post(mail{node: 0, fn: func() error { return t.sourceCheckpoint(id, kind) }})
}

// AbortCheckpoint tells the task that checkpoint id will not complete, so
// an alignment waiting for it releases its channels.
func (t *Task) AbortCheckpoint(id int64) {
	t.mail.post(mail{node: 0, fn: func() error {
		if t.aligner == nil {
			return nil
		}
		return t.applyAlign(t.aligner.Abort(checkpoint.ID(id)))
	}})
}

// NotifyCheckpointComplete tells the task's operators that checkpoint id
// is complete everywhere (called from the coordinator's goroutine).
func (t *Task) NotifyCheckpointComplete(id int64) {
	t.mail.post(mail{node: 0, fn: func() error { return t.notifyComplete(id) }})
}

func (t *Task) notifyComplete(id int64) error {
	for i, h := range t.ops {
		if l, ok := h.op.(CheckpointListener); ok {
			t.current = i
			if err := l.NotifyCheckpointComplete(id); err != nil {
				return t.wrapErr(fmt.Errorf("checkpoint %d complete: %w", id, err), i)
			}
		}
	}
	return nil
}

func (t *Task) sourceCheckpoint(id int64, kind checkpoint.Kind) error {
	if t.stopping || t.finished {
		// The source already ended (its outputs are closed): the
		// checkpoint does not wait for it, its finish is reported.
		return nil
	}
	if kind == checkpoint.SavepointTerminate {
		// stop --drain: end event time first so every window and timer fires
		// before the savepoint.
		if err := t.ops[0].processWatermark(watermark.Max); err != nil {
			return err
		}
	}
	if err := t.performCheckpoint(id, kind); err != nil {
		return err
	}
	if kind == checkpoint.SavepointSuspend || kind == checkpoint.SavepointTerminate {
		t.stopping = true
	}
	return nil
}

// performCheckpoint snapshots every operator of the chain, then forwards
// the barrier on every output.
func (t *Task) performCheckpoint(id int64, kind checkpoint.Kind) error {
	cp := t.spec.Checkpointing
	if cp == nil {
		return fmt.Errorf("task: checkpoint %d triggered but checkpointing is off", id)
	}
	if kind == checkpoint.SavepointSuspend {
		// Stop without drain: the job is suspended at this savepoint, to be
		// resumed from it; operators must not emit final results after it.
		t.suspended = true
	}
	snap := &Snapshot{ID: id, Kind: kind, Operators: map[graph.NodeID]*OperatorSnapshot{}}
	for i, h := range t.ops {
		t.current = i
		os := &OperatorSnapshot{}
		for _, k := range h.keyed {
			if inc, ok := k.(IncrementalKeyedState); ok && cp.Incremental && kind.IsCheckpoint() && inc.IncrementalSnapshots() {
				files, manifest, err := inc.SnapshotFiles(id)
				if err != nil {
					cp.OnDecline(id, t.wrapErr(err, i))
					return t.forwardBarrier(id, kind)
				}
				os.Files = append(os.Files, files...)
				os.Manifests = append(os.Manifests, manifest)
				prev := os.ReleaseFiles
				os.ReleaseFiles = func() {
					if prev != nil {
						prev()
					}
					inc.ReleaseSnapshotFiles(id)
				}
				continue
			}
			if as, ok := k.(AsyncKeyedState); ok {
				fn, release, err := as.SnapshotKeyGroupsAsync()
				if err != nil {
					cp.OnDecline(id, t.wrapErr(err, i))
					return t.forwardBarrier(id, kind)
				}
				os.KeyGroupsAsync = append(os.KeyGroupsAsync, fn)
				os.releaseAsync = append(os.releaseAsync, release)
				continue
			}
			groups, err := k.SnapshotKeyGroups()
			if err != nil {
				cp.OnDecline(id, t.wrapErr(err, i))
				return t.forwardBarrier(id, kind)
			}
			if os.KeyGroups == nil {
				os.KeyGroups = groups
			} else {
				for kg, b := range groups {
					os.KeyGroups[kg] = append(os.KeyGroups[kg], b...)
				}
			}
		}
		if st, ok := h.op.(OperatorStateful); ok {
			entries, union, err := st.SnapshotOperatorState(id)
			if err != nil {
				if os.ReleaseFiles != nil {
					os.ReleaseFiles()
				}
				cp.OnDecline(id, t.wrapErr(err, i))
				return t.forwardBarrier(id, kind)
			}
			os.State, os.Union = entries, union
		}
		if os.KeyGroups != nil || os.State != nil || os.Manifests != nil || os.KeyGroupsAsync != nil {
			snap.Operators[h.node.ID] = os
		}
	}
	if err := t.forwardBarrier(id, kind); err != nil {
		return err
	}
	cp.OnSnapshot(snap)
	return nil
}

func (t *Task) forwardBarrier(id int64, kind checkpoint.Kind) error {
	return t.emitEvent(exchange.Event{Kind: exchange.Barrier, CheckpointID: id, Options: uint32(kind)})
}

// onBarrier feeds a barrier from channel ch to the aligner.
func (t *Task) onBarrier(ch int, id int64, kind checkpoint.Kind) error {
	if t.aligner == nil {
		return fmt.Errorf("task: barrier %d on channel %d but checkpointing is off", id, ch)
	}
	return t.applyAlign(t.aligner.Barrier(ch, checkpoint.ID(id), kind))
}

func (t *Task) applyAlign(r checkpoint.AlignResult) error {
	for _, a := range r.Aborted {
		t.spec.Checkpointing.OnDecline(int64(a), fmt.Errorf("checkpoint %d overtaken by a newer barrier: %w", a, checkpoint.ErrSubsumed))
	}
	if r.Snapshot {
		if err := t.performCheckpoint(int64(r.ID), r.Kind); err != nil {
			return err
		}
	}
	for _, ch := range r.Unblock {
		t.replay = append(t.replay, t.stash[ch]...)
		delete(t.stash, ch)
	}
	return nil
}

// waitFinalCommit keeps a finished task alive until the whole job has
// finished, then lets operators commit what they pre-committed at the end
// of input.
func (t *Task) waitFinalCommit() error {
	cp := t.spec.Checkpointing
	if cp == nil || cp.FinalCommit == nil {
		return nil
	}
	cp.OnFinished()
	for {
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-cp.FinalCommit:
			if err := t.runMail(); err != nil {
				return err
			}
			return t.notifyComplete(FinalCheckpoint)
		case <-t.mail.signal:
			if err := t.runMail(); err != nil {
				return err
			}
		}
	}
}
