package state

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
)

func TestSnapshotRestoresAcrossRescaling(t *testing.T) {
	clk := clock.NewManual(0)
	src, _ := NewKeyed[string](128, keygroup.RangeFor(128, 1, 0), clk)
	tab, _ := NewValueTable[string, int, []int](src, "lists", TTL{})
	for i := 0; i < 500; i++ {
		src.SetCurrentKey(fmt.Sprintf("k%d", i))
		tab.Put(i%3, []int{i, -i})
	}
	snap, err := src.SnapshotKeyGroups()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for sub := 0; sub < 3; sub++ {
		dst, _ := NewKeyed[string](128, keygroup.RangeFor(128, 3, sub), clk)
		// Restore before the table exists: operators register state lazily.
		if err := dst.RestoreKeyGroups(snap); err != nil {
			t.Fatal(err)
		}
		got, err := NewValueTable[string, int, []int](dst, "lists", TTL{})
		if err != nil {
			t.Fatal(err)
		}
		total += got.Len()
		got.Entries(func(k string, ns int, v []int) error {
			var i int
			fmt.Sscanf(k, "k%d", &i)
			if ns != i%3 || len(v) != 2 || v[0] != i || v[1] != -i {
				t.Errorf("subtask %d: %s/%d = %v", sub, k, ns, v)
			}
			if kg := dst.hasher.KeyGroup(k, 128); !dst.groups.Contains(kg) {
				t.Errorf("subtask %d got key %s of key group %d outside %v", sub, k, kg, dst.groups)
			}
			return nil
		})
	}
	if total != 500 {
		t.Fatalf("restored %d entries over 3 subtasks, want 500", total)
	}
}

func TestCorruptSnapshotIsAnError(t *testing.T) {
	k, _ := NewKeyed[int](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	tab, _ := NewValueTable[int, Void, string](k, "v", TTL{})
	k.SetCurrentKey(1)
	tab.Put(Void{}, "hello")
	snap, _ := k.SnapshotKeyGroups()
	for kg, b := range snap {
		snap[kg] = b[:len(b)-2]
	}
	k2, _ := NewKeyed[int](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	err := k2.RestoreKeyGroups(snap)
	if err == nil {
		_, err = NewValueTable[int, Void, string](k2, "v", TTL{})
	}
	if !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("got %v, want ErrCorruptSnapshot", err)
	}
}

// BenchmarkHeapSnapshot measures the synchronous part of a hashmap
// checkpoint: encoding one million int64 values (ns/op is per entry).
func BenchmarkHeapSnapshot(b *testing.B) {
	k, _ := NewKeyed[int64](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	tab, _ := NewValueTable[int64, Void, int64](k, "count", TTL{})
	const entries = 1 << 20
	for i := int64(0); i < entries; i++ {
		k.SetCurrentKey(i)
		tab.Put(Void{}, i)
	}
	b.ResetTimer()
	for range b.N / entries {
		if _, err := k.SnapshotKeyGroups(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAsyncSnapshotSeesTheStateAtTheBarrier freezes the state, changes it
// (puts, deletes, and in-place changes of map values) while the encoder
// runs on another goroutine, and checks that the snapshot holds exactly
// the state at the freeze and the live table the changes.
func TestAsyncSnapshotSeesTheStateAtTheBarrier(t *testing.T) {
	for _, name := range []string{"hashmap", "pebble"} {
		t.Run(name, func(t *testing.T) {
			var b Backend
			if name == "pebble" {
				b = &PebbleBackend{Dir: t.TempDir()}
			}
			testAsyncSnapshot(t, b)
		})
	}
}

func testAsyncSnapshot(t *testing.T, backend Backend) {
	clk := clock.NewManual(0)
	k, err := NewKeyedWithBackend[int](128, keygroup.RangeFor(128, 1, 0), clk, backend)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	counts, _ := NewValueTable[int, Void, int64](k, "counts", TTL{})
	maps, _ := NewValueTable[int, Void, map[string]int](k, "maps", TTL{})
	for i := 0; i < 2000; i++ {
		k.SetCurrentKey(i)
		counts.Put(Void{}, int64(i))
		maps.Put(Void{}, map[string]int{"v": i})
	}
	encode, _, err := k.SnapshotKeyGroupsAsync()
	// Closing the store while the snapshot is encoded must wait for it.
	defer k.Close()
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
	// Meanwhile the task goes on.
	for i := 0; i < 2000; i++ {
		k.SetCurrentKey(i)
		switch i % 3 {
		case 0:
			counts.Put(Void{}, -1)
		case 1:
			counts.Delete(Void{})
		}
		m, _, _ := maps.Get(Void{})
		m["v"] = -1 // an in-place change, as map state makes
		maps.Put(Void{}, m)
	}
	snap := <-done
	k2, _ := NewKeyed[int](128, keygroup.RangeFor(128, 1, 0), clk)
	if err := k2.RestoreKeyGroups(snap); err != nil {
		t.Fatal(err)
	}
	c2, _ := NewValueTable[int, Void, int64](k2, "counts", TTL{})
	m2, _ := NewValueTable[int, Void, map[string]int](k2, "maps", TTL{})
	for i := 0; i < 2000; i++ {
		k2.SetCurrentKey(i)
		if v, ok, _ := c2.Get(Void{}); !ok || v != int64(i) {
			t.Fatalf("key %d: snapshot count %d (%v), want %d as at the freeze", i, v, ok, i)
		}
		if m, _, _ := m2.Get(Void{}); m["v"] != i {
			t.Fatalf("key %d: snapshot map value %d, want %d as at the freeze", i, m["v"], i)
		}
		k.SetCurrentKey(i)
		if m, _, _ := maps.Get(Void{}); m["v"] != -1 {
			t.Fatalf("key %d: the live state lost the change", i)
		}
	}
}

// BenchmarkHeapSnapshotBarrier measures what the task does at a barrier
// with copy-on-write snapshots: freezing one million entries (ns/op is
// per snapshot).
func BenchmarkHeapSnapshotBarrier(b *testing.B) {
	k, _ := NewKeyed[int64](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	tab, _ := NewValueTable[int64, Void, int64](k, "count", TTL{})
	for i := int64(0); i < 1<<20; i++ {
		k.SetCurrentKey(i)
		tab.Put(Void{}, i)
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := k.SnapshotKeyGroupsAsync(); err != nil {
			b.Fatal(err)
		}
	}
}
