// Package graph holds the logical job graph: the operators a job program
// declared and the edges between them, and the plan the engine derives from
// it (operator chains and the exchanges between them).
//
// The graph is plain data: it serialises to JSON and has a stable
// fingerprint, so a client can ship it to a cluster and a worker that rebuilt
// it by running the same job binary can prove it built the same one. The
// operator implementations (user closures) are not serialised: each node
// carries them in Impl, which only the process that built the graph has.
package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/sluice/sluice/internal/runtime/keygroup"
)

// NodeID identifies a node within one graph. IDs are assigned in the order
// the job program declares operators, so the same program yields the same IDs.
type NodeID int

// Partitioning says how records travel along an edge from the subtasks of
// one operator to those of the next.
type Partitioning string

// The exchange patterns.
const (
	// Forward sends subtask i's records to subtask i; it needs equal parallelism.
	Forward Partitioning = "FORWARD"
	// Hash routes each record by the key group of its key.
	Hash Partitioning = "HASH"
	// Rebalance spreads records round-robin over all downstream subtasks.
	Rebalance Partitioning = "REBALANCE"
	// Broadcast sends every record to every downstream subtask.
	Broadcast Partitioning = "BROADCAST"
	// Global sends every record to downstream subtask 0.
	Global Partitioning = "GLOBAL"
)

// Chaining says whether a node may share a task with its neighbours.
type Chaining string

// Chaining strategies, as in Flink.
const (
	// ChainAlways lets the node chain to its input and its output.
	ChainAlways Chaining = "ALWAYS"
	// ChainHead starts a chain: the node never chains to its input.
	ChainHead Chaining = "HEAD"
	// ChainNever keeps the node in a task of its own.
	ChainNever Chaining = "NEVER"
)

// Node is one operator of the logical graph.
type Node struct {
	ID   NodeID `json:"id"`
	Kind string `json:"kind"` // e.g. "source", "map", "window", "sink"
	Name string `json:"name"`
	// UID is the user-assigned stable operator identifier ("" when none).
	UID string `json:"uid,omitempty"`
	// Parallelism is the number of subtasks; > 0 after the graph is built.
	Parallelism int `json:"parallelism"`
	// MaxParallelism bounds rescaling and sets the number of key groups; 0
	// means the default derived from the parallelism.
	MaxParallelism int `json:"max_parallelism,omitempty"`
	// Chaining is the node's chaining strategy.
	Chaining Chaining `json:"chaining"`
	// OutType is the Go type of the main output (for plans and fingerprints).
	OutType string `json:"out_type,omitempty"`
	// Inputs is the number of logical inputs (0 for sources, 1 or 2).
	Inputs int `json:"inputs"`
	// Keyed marks operators that use keyed state or keyed timers; their
	// inputs must be hash-partitioned by key.
	Keyed bool `json:"keyed,omitempty"`
	// Bounded marks sources that end.
	Bounded bool `json:"bounded,omitempty"`
	// AssignsWatermarks marks nodes that generate watermarks (sources with a
	// watermark strategy, timestamp/watermark assigners).
	AssignsWatermarks bool `json:"assigns_watermarks,omitempty"`
	// NeedsWatermarks marks event-time operators (windows, joins, timers).
	NeedsWatermarks bool `json:"needs_watermarks,omitempty"`
	// Props describe the operator's configuration (window size, ...) in text.
	Props map[string]string `json:"props,omitempty"`
	// Coordinated marks a node with a job-wide coordinator (a source's split
	// enumerator): a chain head whose Impl implements task.Coordinated.
	Coordinated bool `json:"coordinated,omitempty"`
	// Impl is the engine-facing operator factory. It is not serialised.
	Impl any `json:"-"`
}

// Label is how errors and plans name the node.
func (n *Node) Label() string {
	if n.UID != "" {
		return fmt.Sprintf("%q (uid %q, id %d)", n.Name, n.UID, n.ID)
	}
	return fmt.Sprintf("%q (id %d)", n.Name, n.ID)
}

// EffectiveMaxParallelism is the node's max parallelism, defaulted.
func (n *Node) EffectiveMaxParallelism() int {
	if n.MaxParallelism > 0 {
		return n.MaxParallelism
	}
	return keygroup.DefaultMax(n.Parallelism)
}

// Edge connects an output of one node to an input of another.
type Edge struct {
	From NodeID `json:"from"`
	To   NodeID `json:"to"`
	// Input is the input index at To (0, or 1 for the second input).
	Input int `json:"input"`
	// SideOutput names the output tag the edge reads ("" for the main output).
	SideOutput   string       `json:"side_output,omitempty"`
	Partitioning Partitioning `json:"partitioning"`
	// Partitioner is the engine-facing typed router for Hash edges. It is
	// not serialised.
	Partitioner any `json:"-"`
}

// JobGraph is the logical dataflow of one job.
type JobGraph struct {
	Name  string  `json:"name"`
	Nodes []*Node `json:"nodes"`
	Edges []*Edge `json:"edges"`
	// Config holds the job's effective configuration (key → value).
	Config map[string]string `json:"config,omitempty"`
}

// Node returns the node with the given ID, or nil.
func (g *JobGraph) Node(id NodeID) *Node {
	if int(id) >= 0 && int(id) < len(g.Nodes) && g.Nodes[id].ID == id {
		return g.Nodes[id]
	}
	for _, n := range g.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// InEdges returns the edges into id, ordered by input index then source.
func (g *JobGraph) InEdges(id NodeID) []*Edge {
	var out []*Edge
	for _, e := range g.Edges {
		if e.To == id {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Input < out[j].Input })
	return out
}

// OutEdges returns the edges out of id in declaration order.
func (g *JobGraph) OutEdges(id NodeID) []*Edge {
	var out []*Edge
	for _, e := range g.Edges {
		if e.From == id {
			out = append(out, e)
		}
	}
	return out
}

// MarshalJSON-compatible canonical form: nodes by ID, edges in order; maps
// are sorted by encoding/json.
func (g *JobGraph) canonical() *JobGraph {
	c := *g
	c.Nodes = append([]*Node(nil), g.Nodes...)
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].ID < c.Nodes[j].ID })
	c.Config = nil // configuration may differ between client and worker (e.g. addresses)
	return &c
}

// Fingerprint is a stable hash of the graph's structure: nodes, their
// properties and edges, excluding configuration and implementations. Two
// builds of the same job program at the same settings have equal
// fingerprints.
func (g *JobGraph) Fingerprint() string {
	b, err := json.Marshal(g.canonical())
	if err != nil {
		panic(fmt.Sprintf("graph: job graph is not serialisable: %v", err)) // plain data by construction
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Marshal serialises the graph (without implementations).
func (g *JobGraph) Marshal() ([]byte, error) { return json.MarshalIndent(g, "", "  ") }

// Unmarshal parses a serialised graph.
func Unmarshal(b []byte) (*JobGraph, error) {
	var g JobGraph
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("graph: decoding job graph: %w", err)
	}
	return &g, nil
}
