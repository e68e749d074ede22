package pendingcommit

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// txn is a committable shaped as a Kafka transaction's.
type txn struct {
	ID       string
	Producer int64
	Epoch    int16
}

func txns(ids ...string) []txn {
	var out []txn
	for i, id := range ids {
		out = append(out, txn{ID: id, Producer: int64(100 + i), Epoch: int16(i)})
	}
	return out
}

// op is one step of a sink subtask's life; want is what Due returns (for
// "due") or what the snapshot holds, decoded (for "snapshot").
type op struct {
	kind string // "add", "due", "snapshot"
	id   int64
	cs   []txn
	want []txn
}

// TestLedger drives the ledger through the checkpoint lives of a sink
// subtask.
func TestLedger(t *testing.T) {
	const final = math.MaxInt64
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"each checkpoint completes in turn", []op{
			{kind: "add", id: 1, cs: txns("a")},
			{kind: "snapshot", want: txns("a")},
			{kind: "due", id: 1, want: txns("a")},
			{kind: "add", id: 2, cs: txns("b")},
			{kind: "snapshot", want: txns("b")},
			{kind: "due", id: 2, want: txns("b")},
			{kind: "snapshot"},
		}},
		{"a skipped notification: the next completion commits both, in order", []op{
			{kind: "add", id: 1, cs: txns("a", "b")},
			{kind: "add", id: 2, cs: txns("c")},
			{kind: "snapshot", want: slices.Concat(txns("a", "b"), txns("c"))},
			{kind: "due", id: 2, want: slices.Concat(txns("a", "b"), txns("c"))},
			{kind: "due", id: 2},
		}},
		{"a completion commits only what it covers", []op{
			{kind: "add", id: 3, cs: txns("a")},
			{kind: "add", id: 4, cs: txns("b")},
			{kind: "add", id: 5, cs: txns("c")},
			{kind: "due", id: 4, want: slices.Concat(txns("a"), txns("b"))},
			{kind: "snapshot", want: txns("c")},
			{kind: "due", id: 2},
			{kind: "due", id: 5, want: txns("c")},
		}},
		{"an older completion after a newer one commits nothing", []op{
			{kind: "add", id: 1, cs: txns("a")},
			{kind: "add", id: 2, cs: txns("b")},
			{kind: "due", id: 2, want: slices.Concat(txns("a"), txns("b"))},
			{kind: "due", id: 1},
		}},
		{"the end of input waits for the final checkpoint", []op{
			{kind: "add", id: 7, cs: txns("a")},
			{kind: "add", id: final, cs: txns("z")},
			{kind: "due", id: 7, want: txns("a")},
			{kind: "snapshot", want: txns("z")},
			{kind: "due", id: final, want: txns("z")},
		}},
		{"a barrier with nothing pre-committed", []op{
			{kind: "add", id: 1},
			{kind: "snapshot"},
			{kind: "due", id: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger[txn]
			for i, o := range tc.ops {
				switch o.kind {
				case "add":
					l.Add(o.id, o.cs)
				case "due":
					if got := l.Due(o.id); !slices.Equal(got, o.want) {
						t.Fatalf("op %d: Due(%d) = %v, want %v", i, o.id, got, o.want)
					}
				case "snapshot":
					entries, err := l.Snapshot()
					if err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
					if len(entries) != l.Pending() {
						t.Fatalf("op %d: %d entries, %d pending", i, len(entries), l.Pending())
					}
					// The snapshot restores as what was pending.
					var r Ledger[txn]
					if err := r.Restore(entries); err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
					if got := r.TakeRestored(); !slices.Equal(got, o.want) {
						t.Fatalf("op %d: snapshot restores as %v, want %v", i, got, o.want)
					}
				}
			}
		})
	}
}

// TestRestore: restored committables are handed out once, those of
// several subtasks' snapshots together, and a restore leaves the pending
// ones alone.
func TestRestore(t *testing.T) {
	var a, b Ledger[txn]
	a.Add(1, txns("a1", "a2"))
	b.Add(1, txns("b1"))
	ea, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var r Ledger[txn]
	r.Add(9, txns("new"))
	if err := r.Restore(slices.Concat(ea, eb)); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(txns("a1", "a2"), txns("b1"))
	if got := r.TakeRestored(); !slices.Equal(got, want) {
		t.Errorf("TakeRestored = %v, want %v", got, want)
	}
	if got := r.TakeRestored(); got != nil {
		t.Errorf("a second TakeRestored = %v, want nothing", got)
	}
	if got := r.Due(9); !slices.Equal(got, txns("new")) {
		t.Errorf("Due(9) after a restore = %v, want the pending %v", got, txns("new"))
	}
}

// TestRestoreCorrupt names the entry that does not decode.
func TestRestoreCorrupt(t *testing.T) {
	var a Ledger[txn]
	a.Add(1, txns("a", "b"))
	entries, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	entries[1] = entries[1][:2]
	var r Ledger[txn]
	err = r.Restore(entries)
	if err == nil || !strings.Contains(err.Error(), "committable 2 of 2") {
		t.Fatalf("Restore of a truncated entry: %v, want an error naming committable 2 of 2", err)
	}
}

// TestUnencodable: a committable type the codec cannot encode fails the
// snapshot rather than losing the committables.
func TestUnencodable(t *testing.T) {
	var l Ledger[chan int]
	l.Add(1, []chan int{make(chan int)})
	if _, err := l.Snapshot(); err == nil || !strings.HasPrefix(err.Error(), "pendingcommit: ") {
		t.Fatalf("Snapshot of a chan: %v, want a pendingcommit error", err)
	}
}
