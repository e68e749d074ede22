package graph

import (
	"fmt"
	"strings"
)

// Chain is a group of operators joined by forward edges at equal
// parallelism. A chain runs as one task per subtask: records inside it pass
// by function call and never cross a queue, a goroutine or a process.
type Chain struct {
	ID int `json:"id"`
	// Nodes in topological order; Nodes[0] is the head.
	Nodes          []NodeID `json:"nodes"`
	Name           string   `json:"name"`
	Parallelism    int      `json:"parallelism"`
	MaxParallelism int      `json:"max_parallelism"`
}

// Plan is the job graph grouped into chains, with the edges that cross
// chains (the exchanges).
type Plan struct {
	Graph  *JobGraph `json:"graph"`
	Chains []*Chain  `json:"chains"`
	// ChainOf maps each node to the index of its chain.
	ChainOf map[NodeID]int `json:"chain_of"`
	// Exchanges are the edges between chains, in graph order.
	Exchanges []*Edge `json:"exchanges"`
}

// Chainable reports whether edge e may be executed by function call.
func (g *JobGraph) Chainable(e *Edge) bool {
	from, to := g.Node(e.From), g.Node(e.To)
	if from == nil || to == nil {
		return false
	}
	return e.Partitioning == Forward &&
		from.Parallelism == to.Parallelism &&
		to.Inputs == 1 && len(g.InEdges(to.ID)) == 1 &&
		to.Chaining == ChainAlways &&
		from.Chaining != ChainNever
}

// BuildPlan validates the graph and groups it into chains.
func BuildPlan(g *JobGraph) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Graph: g, ChainOf: map[NodeID]int{}}
	for _, n := range g.TopoOrder() {
		in := g.InEdges(n.ID)
		if len(in) == 1 && g.Chainable(in[0]) {
			ci := p.ChainOf[in[0].From]
			p.ChainOf[n.ID] = ci
			p.Chains[ci].Nodes = append(p.Chains[ci].Nodes, n.ID)
			continue
		}
		c := &Chain{ID: len(p.Chains), Nodes: []NodeID{n.ID}, Parallelism: n.Parallelism, MaxParallelism: n.EffectiveMaxParallelism()}
		p.ChainOf[n.ID] = c.ID
		p.Chains = append(p.Chains, c)
	}
	for _, c := range p.Chains {
		names := make([]string, len(c.Nodes))
		for i, id := range c.Nodes {
			names[i] = g.Node(id).Name
		}
		c.Name = strings.Join(names, " -> ")
	}
	for _, e := range g.Edges {
		if p.ChainOf[e.From] != p.ChainOf[e.To] {
			p.Exchanges = append(p.Exchanges, e)
		}
	}
	return p, nil
}

// String renders the plan for humans (the CLI's info command prints JSON).
func (p *Plan) String() string {
	var b strings.Builder
	for _, c := range p.Chains {
		fmt.Fprintf(&b, "chain %d (parallelism %d): %s\n", c.ID, c.Parallelism, c.Name)
	}
	for _, e := range p.Exchanges {
		fmt.Fprintf(&b, "exchange %s: %d -> %d\n", e.Partitioning, p.ChainOf[e.From], p.ChainOf[e.To])
	}
	return b.String()
}
