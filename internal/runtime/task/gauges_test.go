package task

import (
	"maps"
	"testing"
)

func TestGauges(t *testing.T) {
	var g Gauges
	if s := g.Snapshot(); s != nil {
		t.Fatalf("an empty registry's snapshot is %v, want nil", s)
	}
	g.Set("a.lag", 3)
	g.Set("b.lag", 7)
	g.Set("a.lag", 4)
	snap := g.Snapshot()
	if want := map[string]float64{"a.lag": 4, "b.lag": 7}; !maps.Equal(snap, want) {
		t.Fatalf("snapshot %v, want %v", snap, want)
	}
	snap["a.lag"] = 100 // a copy: the registry is unchanged
	g.Remove("b.lag")
	g.Remove("never.set")
	if got, want := g.Snapshot(), map[string]float64{"a.lag": 4}; !maps.Equal(got, want) {
		t.Fatalf("after Remove: %v, want %v", got, want)
	}
	in := map[string]float64{"x": 1}
	g.Replace(in)
	in["x"] = 2
	if got := g.Snapshot(); !maps.Equal(got, map[string]float64{"x": 1}) {
		t.Fatalf("after Replace: %v, want map[x:1]", got)
	}
	g.Replace(nil)
	if got := g.Snapshot(); got != nil {
		t.Fatalf("after Replace(nil): %v, want nil", got)
	}
}
