package state

import (
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
)

// TestAsyncSnapshotOfEmptiedKeyGroups: a key group whose entries were all
// deleted keeps its (empty) map; the task may fill it again while an
// asynchronous snapshot is encoded on another goroutine (under -race, a
// shared empty map is a data race), and the snapshot has none of the new
// entries.
func TestAsyncSnapshotOfEmptiedKeyGroups(t *testing.T) {
	k, err := NewKeyed[string](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := NewValueTable[string, string, []byte](k, "count", TTL{})
	for i := range 200 {
		k.SetCurrentKey(string(rune('a' + i%26)))
		tab.Put("w1", []byte{1})
		tab.Delete("w1") // a window's state cleared when it fired
	}
	encode, _, err := k.SnapshotKeyGroupsAsync()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan map[int][]byte)
	go func() {
		snap, err := encode()
		if err != nil {
			t.Error(err)
		}
		done <- snap
	}()
	for i := range 200 {
		k.SetCurrentKey(string(rune('a' + i%26)))
		tab.Put("w2", []byte{2}) // the next window
	}
	snap := <-done
	k2, _ := NewKeyed[string](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	if err := k2.RestoreKeyGroups(snap); err != nil {
		t.Fatal(err)
	}
	t2, _ := NewValueTable[string, string, []byte](k2, "count", TTL{})
	if n := t2.Len(); n != 0 {
		t.Fatalf("the snapshot holds %d entries written after the barrier", n)
	}
}
