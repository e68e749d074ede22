package keygroup

import (
	"strings"
	"testing"
)

func TestRangesPartitionKeyGroups(t *testing.T) {
	for _, tc := range []struct{ max, par int }{{128, 1}, {128, 2}, {128, 3}, {128, 7}, {10, 10}, {4096, 5}} {
		owner := make([]int, tc.max)
		for i := range owner {
			owner[i] = -1
		}
		for s := 0; s < tc.par; s++ {
			r := RangeFor(tc.max, tc.par, s)
			for kg := r.Start; kg <= r.End; kg++ {
				if owner[kg] != -1 {
					t.Fatalf("max=%d par=%d: key group %d owned twice", tc.max, tc.par, kg)
				}
				owner[kg] = s
				if got := Operator(kg, tc.max, tc.par); got != s {
					t.Fatalf("max=%d par=%d: Operator(%d)=%d, range says %d", tc.max, tc.par, kg, got, s)
				}
			}
		}
		for kg, o := range owner {
			if o == -1 {
				t.Fatalf("max=%d par=%d: key group %d unowned", tc.max, tc.par, kg)
			}
		}
	}
}

func TestDefaultMax(t *testing.T) {
	for _, tc := range []struct{ par, want int }{{1, 128}, {4, 128}, {100, 256}, {1000, 2048}, {30000, 32768}} {
		if got := DefaultMax(tc.par); got != tc.want {
			t.Errorf("DefaultMax(%d) = %d, want %d", tc.par, got, tc.want)
		}
	}
}

func TestForHashSpreads(t *testing.T) {
	seen := map[int]bool{}
	for i := uint64(0); i < 1000; i++ {
		seen[ForHash(i, 128)] = true
	}
	if len(seen) < 120 {
		t.Fatalf("1000 sequential hashes reached only %d of 128 key groups", len(seen))
	}
}

func TestHasherDeterministic(t *testing.T) {
	type pair struct {
		A string
		B int32
	}
	hs, err := NewHasher[string]()
	if err != nil {
		t.Fatal(err)
	}
	// Pinned values: a change here would silently move keyed state between
	// subtasks on restore, so it must be a deliberate, versioned decision.
	if got, want := hs.KeyGroup("alice", 128), 81; got != want {
		t.Errorf("KeyGroup(alice)=%d, want %d", got, want)
	}
	hp, err := NewHasher[pair]()
	if err != nil {
		t.Fatal(err)
	}
	if hp.Hash(pair{"x", 1}) == hp.Hash(pair{"x", 2}) {
		t.Error("different struct keys hash equal")
	}
	if hp.Hash(pair{"x", 1}) != hp.Hash(pair{"x", 1}) {
		t.Error("equal struct keys hash differently")
	}
	hi, _ := NewHasher[int]()
	hu, _ := NewHasher[int64]()
	if hi.Hash(42) != hu.Hash(42) {
		t.Error("int and int64 of the same value should hash equally")
	}
}

func TestHasherRejectsPointers(t *testing.T) {
	type bad struct{ P *int }
	_, err := NewHasher[bad]()
	if err == nil || !strings.Contains(err.Error(), "bad.P") {
		t.Fatalf("want error naming the field, got %v", err)
	}
}
