package graph

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidGraph is wrapped by every validation error.
var ErrInvalidGraph = errors.New("graph: invalid job graph")

// Problem is one reason a graph is invalid, naming the operator concerned.
type Problem struct {
	Node    *Node // nil for graph-wide problems
	Message string
}

func (p Problem) String() string {
	if p.Node == nil {
		return p.Message
	}
	return fmt.Sprintf("operator %s: %s", p.Node.Label(), p.Message)
}

// ValidationError lists every problem found in a graph.
type ValidationError struct{ Problems []Problem }

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("graph: invalid job graph:")
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidGraph) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidGraph }

// Validate checks the graph and reports every problem at once: dangling or
// cyclic edges, bad parallelism, duplicate UIDs, keyed operators on
// non-keyed inputs, and event-time operators without watermarks upstream.
func (g *JobGraph) Validate() error {
	var probs []Problem
	add := func(n *Node, format string, args ...any) {
		probs = append(probs, Problem{Node: n, Message: fmt.Sprintf(format, args...)})
	}
	if len(g.Nodes) == 0 {
		add(nil, "the job has no operators; add a source and a sink before Execute")
		return &ValidationError{Problems: probs}
	}
	uids := map[string]*Node{}
	ids := map[NodeID]bool{}
	for _, n := range g.Nodes {
		if ids[n.ID] {
			add(n, "duplicate node id %d", n.ID)
		}
		ids[n.ID] = true
		if n.Parallelism < 1 {
			add(n, "parallelism %d must be at least 1", n.Parallelism)
		}
		if n.MaxParallelism < 0 || n.MaxParallelism > 1<<15 {
			add(n, "max parallelism %d is outside [1, 32768]", n.MaxParallelism)
		} else if n.Parallelism > n.EffectiveMaxParallelism() {
			add(n, "parallelism %d is above its max parallelism %d", n.Parallelism, n.EffectiveMaxParallelism())
		}
		if n.UID != "" {
			if prev, ok := uids[n.UID]; ok {
				add(n, "uid %q is already used by operator %s; UIDs must be unique", n.UID, prev.Label())
			} else {
				uids[n.UID] = n
			}
		}
	}
	for _, e := range g.Edges {
		from, to := g.Node(e.From), g.Node(e.To)
		if from == nil || to == nil {
			add(nil, "edge %d -> %d refers to an unknown node", e.From, e.To)
			continue
		}
		if e.Input < 0 || e.Input >= max(to.Inputs, 1) {
			add(to, "edge from %s targets input %d but the operator has %d input(s)", from.Label(), e.Input, to.Inputs)
		}
		if e.Partitioning == Forward && from.Parallelism != to.Parallelism {
			add(to, "forward edge from %s needs equal parallelism (%d vs %d); use Rebalance", from.Label(), from.Parallelism, to.Parallelism)
		}
	}
	for _, n := range g.Nodes {
		in := g.InEdges(n.ID)
		if n.Inputs == 0 && len(in) > 0 {
			add(n, "a source cannot have inputs")
		}
		if n.Inputs > 0 && len(in) == 0 {
			add(n, "operator has no input")
		}
		if n.Keyed {
			hashed := false
			for _, e := range in {
				hashed = hashed || e.Partitioning == Hash
			}
			for _, e := range in {
				// A broadcast input next to a keyed one (Flink's keyed
				// broadcast pattern) carries no keys: every subtask sees
				// all its records.
				if e.Partitioning == Broadcast && hashed {
					continue
				}
				if e.Partitioning != Hash {
					add(n, "uses keyed state or timers but input %d is not keyed (%s edge from %s); call KeyBy first", e.Input, e.Partitioning, g.Node(e.From).Label())
				}
			}
		}
	}
	if len(probs) > 0 && !structurallySound(g) {
		// Dangling edges or duplicate IDs: reported above; the analyses
		// below need a well-formed graph.
		return &ValidationError{Problems: probs}
	}
	if cyc := g.cycle(); cyc != nil {
		names := make([]string, len(cyc))
		for i, n := range cyc {
			names[i] = n.Label()
		}
		add(cyc[0], "is part of a cycle: %s", strings.Join(names, " -> "))
	} else {
		// Watermark reachability needs an acyclic graph.
		has := map[NodeID]bool{}
		for _, n := range g.TopoOrder() {
			h := n.AssignsWatermarks
			for _, e := range g.InEdges(n.ID) {
				h = h || has[e.From]
			}
			has[n.ID] = h
			if n.NeedsWatermarks && !h {
				add(n, "uses event time but no watermark strategy is set upstream; pass one to the source (the WatermarkStrategy argument of FromSource or DataGenWithWatermarks) or call AssignTimestampsAndWatermarks")
			}
		}
	}
	if len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	return nil
}

// structurallySound reports whether every edge joins existing nodes and
// node IDs are unique.
func structurallySound(g *JobGraph) bool {
	ids := map[NodeID]bool{}
	for _, n := range g.Nodes {
		if ids[n.ID] {
			return false
		}
		ids[n.ID] = true
	}
	for _, e := range g.Edges {
		if !ids[e.From] || !ids[e.To] {
			return false
		}
	}
	return true
}

// cycle returns the nodes of one cycle, or nil.
func (g *JobGraph) cycle() []*Node {
	const (
		white = iota
		grey
		black
	)
	color := map[NodeID]int{}
	var stack []*Node
	var found []*Node
	var visit func(n *Node) bool
	visit = func(n *Node) bool {
		color[n.ID] = grey
		stack = append(stack, n)
		for _, e := range g.OutEdges(n.ID) {
			m := g.Node(e.To)
			if m == nil {
				continue
			}
			switch color[m.ID] {
			case grey:
				for i, s := range stack {
					if s.ID == m.ID {
						found = append(append([]*Node(nil), stack[i:]...), m)
						return true
					}
				}
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n.ID] = black
		return false
	}
	for _, n := range g.Nodes {
		if color[n.ID] == white && visit(n) {
			return found
		}
	}
	return nil
}

// TopoOrder returns the nodes so that every edge points forward. It must
// only be called on acyclic graphs; ties keep declaration order.
func (g *JobGraph) TopoOrder() []*Node {
	indeg := map[NodeID]int{}
	for _, e := range g.Edges {
		indeg[e.To]++
	}
	var order []*Node
	done := map[NodeID]bool{}
	for len(order) < len(g.Nodes) {
		progressed := false
		for _, n := range g.Nodes {
			if done[n.ID] || indeg[n.ID] > 0 {
				continue
			}
			done[n.ID] = true
			order = append(order, n)
			progressed = true
			for _, e := range g.OutEdges(n.ID) {
				indeg[e.To]--
			}
		}
		if !progressed {
			panic("graph: TopoOrder called on a cyclic graph")
		}
	}
	return order
}
