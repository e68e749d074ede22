// Package pendingcommit is the ledger of a two-phase-commit sink subtask:
// what its writer pre-committed at each checkpoint barrier, kept (encoded)
// in every checkpoint until the checkpoint that holds it completes, and
// what a restored checkpoint hands back to be committed again. Every front
// end's two-phase-commit sink (the typed API's sink operator, the SQL
// planner's Kafka sink) keeps its committables here, so that the rules of
// exactly-once output are written once:
//
//   - committables pre-committed at checkpoint n are committed when a
//     checkpoint m ≥ n completes (a notification may be skipped, never
//     reordered);
//   - every committable not yet committed is in each snapshot, so a
//     restore from any checkpoint commits all that checkpoint covered;
//   - restored committables belong to a completed checkpoint and are
//     committed again, once, before the writer starts (commits are
//     idempotent).
//
// A Ledger does no I/O: the sink commits what Due and TakeRestored return.
package pendingcommit

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/codec"
)

// Ledger is one sink subtask's committables. The zero Ledger is empty and
// ready; it is driven by the subtask's goroutine only.
type Ledger[C any] struct {
	codec    *codec.Codec[C] // made on first use
	pending  []batch[C]      // by checkpoint, in the order Add saw them
	restored []C
}

type batch[C any] struct {
	id int64
	cs []C
}

// Add records the committables pre-committed at checkpoint id's barrier
// (or, at the end of input, with the final checkpoint's id).
func (l *Ledger[C]) Add(id int64, cs []C) {
	l.pending = append(l.pending, batch[C]{id, cs})
}

// Due removes and returns, in the order they were added, the committables
// of checkpoints up to and including id: what the completion of checkpoint
// id commits. Nil when there are none.
func (l *Ledger[C]) Due(id int64) []C {
	var due []C
	kept := l.pending[:0]
	for _, b := range l.pending {
		if b.id <= id {
			due = append(due, b.cs...)
		} else {
			kept = append(kept, b)
		}
	}
	clear(l.pending[len(kept):]) // drop what was committed
	l.pending = kept
	return due
}

// Pending is how many committables wait for their checkpoint to complete.
func (l *Ledger[C]) Pending() int {
	n := 0
	for _, b := range l.pending {
		n += len(b.cs)
	}
	return n
}

func (l *Ledger[C]) codecFor() (*codec.Codec[C], error) {
	if l.codec == nil {
		c, err := codec.For[C]()
		if err != nil {
			return nil, fmt.Errorf("pendingcommit: %w", err)
		}
		l.codec = c
	}
	return l.codec, nil
}

// Snapshot encodes every committable not yet committed: the operator state
// of the checkpoint being taken.
func (l *Ledger[C]) Snapshot() ([][]byte, error) {
	c, err := l.codecFor()
	if err != nil {
		return nil, err
	}
	var entries [][]byte
	for _, b := range l.pending {
		for _, x := range b.cs {
			entries = append(entries, c.Append(nil, x))
		}
	}
	return entries, nil
}

// Restore decodes the entries of a restored checkpoint (what Snapshot
// wrote, from one or more subtasks) as committables to commit again; see
// TakeRestored.
func (l *Ledger[C]) Restore(entries [][]byte) error {
	c, err := l.codecFor()
	if err != nil {
		return err
	}
	for i, e := range entries {
		x, _, err := c.Decode(e)
		if err != nil {
			return fmt.Errorf("pendingcommit: committable %d of %d: %w", i+1, len(entries), err)
		}
		l.restored = append(l.restored, x)
	}
	return nil
}

// TakeRestored returns the restored committables and forgets them: the
// sink commits them before its writer starts.
func (l *Ledger[C]) TakeRestored() []C {
	r := l.restored
	l.restored = nil
	return r
}
