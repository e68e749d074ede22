package graph

import (
	"errors"
	"strings"
	"testing"
)

func node(id NodeID, kind string, par, inputs int) *Node {
	return &Node{ID: id, Kind: kind, Name: kind, Parallelism: par, Inputs: inputs, Chaining: ChainAlways}
}

func TestValidateReportsEachProblemNamingTheOperator(t *testing.T) {
	tests := []struct {
		name  string
		graph func() *JobGraph
		want  []string
	}{
		{"empty", func() *JobGraph { return &JobGraph{} }, []string{"no operators"}},
		{"cycle", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 1, 0), node(1, "a", 1, 2), node(2, "b", 1, 1)}}
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}, {From: 1, To: 2, Partitioning: Forward}, {From: 2, To: 1, Input: 1, Partitioning: Forward}}
			return g
		}, []string{`is part of a cycle: "a" (id 1) -> "b" (id 2) -> "a" (id 1)`}},
		{"keyed state on non-keyed input", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 1, 0), node(1, "counter", 1, 1)}}
			g.Nodes[1].Keyed = true
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}}
			return g
		}, []string{`operator "counter" (id 1): uses keyed state or timers but input 0 is not keyed`}},
		{"keyed operator with only a broadcast input", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 1, 0), node(1, "rules", 1, 1)}}
			g.Nodes[1].Keyed = true
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Broadcast}}
			return g
		}, []string{`operator "rules" (id 1): uses keyed state or timers but input 0 is not keyed (BROADCAST edge`}},
		{"keyed two-input operator with a rebalanced input", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "a", 1, 0), node(1, "b", 1, 0), node(2, "co", 1, 2)}}
			g.Nodes[2].Keyed = true
			g.Edges = []*Edge{{From: 0, To: 2, Partitioning: Hash}, {From: 1, To: 2, Input: 1, Partitioning: Rebalance}}
			return g
		}, []string{`operator "co" (id 2): uses keyed state or timers but input 1 is not keyed (REBALANCE edge`}},
		{"parallelism above max", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 8, 0)}}
			g.Nodes[0].MaxParallelism = 4
			return g
		}, []string{`operator "src" (id 0): parallelism 8 is above its max parallelism 4`}},
		{"event time without watermarks", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 1, 0), node(1, "window", 1, 1)}}
			g.Nodes[1].NeedsWatermarks = true
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Hash}}
			return g
		}, []string{`operator "window" (id 1): uses event time but no watermark strategy`}},
		{"duplicate uids", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 1, 0), node(1, "m", 1, 1)}}
			g.Nodes[0].UID, g.Nodes[1].UID = "x", "x"
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}}
			return g
		}, []string{`operator "m" (uid "x", id 1): uid "x" is already used by operator "src" (uid "x", id 0)`}},
		{"several at once", func() *JobGraph {
			g := &JobGraph{Nodes: []*Node{node(0, "src", 0, 0), node(1, "m", 2, 1)}}
			g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}}
			return g
		}, []string{"parallelism 0 must be at least 1", "forward edge from"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.graph().Validate()
			if !errors.Is(err, ErrInvalidGraph) {
				t.Fatalf("want ErrInvalidGraph, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestKeyedOperatorAcceptsBroadcastBesideKeyedInput(t *testing.T) {
	g := &JobGraph{Nodes: []*Node{node(0, "events", 2, 0), node(1, "rules", 1, 0), node(2, "apply", 2, 2)}}
	g.Nodes[2].Keyed = true
	g.Edges = []*Edge{{From: 0, To: 2, Partitioning: Hash}, {From: 1, To: 2, Input: 1, Partitioning: Broadcast}}
	if err := g.Validate(); err != nil {
		t.Fatalf("keyed broadcast operator rejected: %v", err)
	}
}

func TestPlanChainsForwardEdgesAtEqualParallelism(t *testing.T) {
	g := &JobGraph{Nodes: []*Node{
		node(0, "src", 2, 0), node(1, "map", 2, 1), node(2, "filter", 2, 1),
		node(3, "window", 2, 1), node(4, "sink", 2, 1), node(5, "print", 1, 1),
	}}
	g.Nodes[0].AssignsWatermarks = true
	g.Edges = []*Edge{
		{From: 0, To: 1, Partitioning: Forward},
		{From: 1, To: 2, Partitioning: Forward},
		{From: 2, To: 3, Partitioning: Hash},
		{From: 3, To: 4, Partitioning: Forward},
		{From: 3, To: 5, Partitioning: Rebalance},
	}
	p, err := BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	got := p.String()
	want := "chain 0 (parallelism 2): src -> map -> filter\n" +
		"chain 1 (parallelism 2): window -> sink\n" +
		"chain 2 (parallelism 1): print\n" +
		"exchange HASH: 0 -> 1\n" +
		"exchange REBALANCE: 1 -> 2\n"
	if got != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", got, want)
	}
}

func TestFingerprintStableAndSensitive(t *testing.T) {
	build := func(par int) *JobGraph {
		g := &JobGraph{Nodes: []*Node{node(0, "src", par, 0), node(1, "map", par, 1)}, Config: map[string]string{"x": "1"}}
		g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}}
		return g
	}
	a, b := build(2), build(2)
	b.Config["x"] = "2"
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("fingerprint depends on configuration")
	}
	if a.Fingerprint() == build(3).Fingerprint() {
		t.Error("fingerprint ignores parallelism")
	}
	data, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Fingerprint() != a.Fingerprint() {
		t.Error("fingerprint changes across a JSON round trip")
	}
}

func TestOperatorIDsAreStableAndIgnoreParallelism(t *testing.T) {
	build := func(par int) *JobGraph {
		g := &JobGraph{Nodes: []*Node{node(0, "src", par, 0), node(1, "map", par, 1), node(2, "map", par, 1), node(3, "sink", 1, 1)}}
		g.Nodes[3].UID = "out"
		g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}, {From: 0, To: 2, Partitioning: Forward}, {From: 2, To: 3, Partitioning: Rebalance}}
		return g
	}
	a, b := build(2).OperatorIDs(), build(5).OperatorIDs()
	for id, v := range a {
		if b[id] != v {
			t.Errorf("node %d: id %s at parallelism 2, %s at 5", id, v, b[id])
		}
	}
	if a[1] == a[2] {
		t.Error("identical sibling maps share an ID")
	}
	if a[3] != "uid:out" {
		t.Errorf("uid node got %s", a[3])
	}
}
