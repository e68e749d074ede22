package state

import (
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
)

func TestValueTableScopesByKeyAndNamespace(t *testing.T) {
	k, err := NewKeyed[string](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewValueTable[string, int, int64](k, "sum", TTL{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.Get(0); err != ErrNoKey {
		t.Fatalf("access without a key: %v", err)
	}
	k.SetCurrentKey("a")
	tab.Put(1, 10)
	tab.Put(2, 20)
	k.SetCurrentKey("b")
	tab.Put(1, 30)
	if v, ok, _ := tab.Get(2); ok {
		t.Fatalf("b sees a's value %d", v)
	}
	k.SetCurrentKey("a")
	if v, _, _ := tab.Get(2); v != 20 {
		t.Fatalf("a/2 = %d", v)
	}
	if tab.Len() != 3 {
		t.Fatalf("len %d", tab.Len())
	}
	if _, err := NewValueTable[string, int, string](k, "sum", TTL{}); err == nil {
		t.Fatal("re-registering a name with another type must fail")
	}
	again, err := NewValueTable[string, int, int64](k, "sum", TTL{})
	if err != nil || again != tab {
		t.Fatalf("re-registering the same state must return it: %v", err)
	}
}

func TestTTLExpiresByProcessingTime(t *testing.T) {
	clk := clock.NewManual(1000)
	k, _ := NewKeyed[int](128, keygroup.RangeFor(128, 1, 0), clk)
	onWrite, _ := NewValueTable[int, Void, string](k, "w", TTL{Millis: 100})
	onRead, _ := NewValueTable[int, Void, string](k, "r", TTL{Millis: 100, UpdateOnRead: true})
	stale, _ := NewValueTable[int, Void, string](k, "s", TTL{Millis: 100, ReturnExpiredIfNotCleanedUp: true})
	k.SetCurrentKey(7)
	for _, tab := range []*ValueTable[int, Void, string]{onWrite, onRead, stale} {
		tab.Put(Void{}, "v")
	}
	clk.Advance(60)
	onWrite.Get(Void{})
	onRead.Get(Void{}) // refreshes to 1060
	clk.Advance(60)    // 1120: written at 1000 → expired; read at 1060 → alive
	if _, ok, _ := onWrite.Get(Void{}); ok {
		t.Error("OnCreateAndWrite value survived its TTL")
	}
	if _, ok, _ := onRead.Get(Void{}); !ok {
		t.Error("OnReadAndWrite value expired although read within its TTL")
	}
	if v, ok, _ := stale.Get(Void{}); !ok || v != "v" {
		t.Error("ReturnExpiredIfNotCleanedUp must return the stored expired value")
	}
	if onWrite.Len() != 0 {
		t.Error("an expired value read must be cleaned up")
	}
}
