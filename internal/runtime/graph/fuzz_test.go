package graph

import "testing"

// FuzzUnmarshalValidate: a serialised graph comes off the wire (client to
// cluster); decoding, validating and planning it must never panic.
func FuzzUnmarshalValidate(f *testing.F) {
	g := &JobGraph{Name: "j", Nodes: []*Node{node(0, "src", 2, 0), node(1, "map", 2, 1)}}
	g.Edges = []*Edge{{From: 0, To: 1, Partitioning: Forward}}
	b, _ := g.Marshal()
	f.Add(b)
	f.Add([]byte(`{"nodes":[{"id":0,"parallelism":1},{"id":0}],"edges":[{"from":0,"to":0}]}`))
	f.Add([]byte(`{"nodes":[{"id":5,"parallelism":1,"inputs":1}],"edges":[{"from":5,"to":7,"input":-3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Unmarshal(data)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			return
		}
		if _, err := BuildPlan(g); err != nil {
			t.Fatalf("valid graph failed to plan: %v", err)
		}
		_ = g.Fingerprint()
	})
}
