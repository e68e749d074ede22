package core

import (
	"fmt"
	"maps"
	"strings"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Builder builds one job graph: the nodes and edges every front end
// compiles to. Its low-level half (AddNode, AddEdge, Graph) takes any
// task.Factory, which is how the typed API adds its operators; its
// high-level half (AddSource, Transform, Transform2, Sink, on Streams)
// adds untyped operators over Records.
//
// Mistakes found while building (a nil function, an undeclared side
// output) are collected and reported together by Build.
type Builder struct {
	g              graph.JobGraph
	parallelism    int
	maxParallelism int
	errs           []error
}

// NewBuilder returns a builder whose nodes get parallelism and
// maxParallelism (0: derived from each node's parallelism) unless set on
// the stream. Values out of range are reported when the graph is
// validated, naming each node.
func NewBuilder(parallelism, maxParallelism int) *Builder {
	return &Builder{parallelism: parallelism, maxParallelism: maxParallelism}
}

// Parallelism is the default parallelism of new nodes.
func (b *Builder) Parallelism() int { return b.parallelism }

// AddNode appends a node of kind and name with inputs logical inputs (0
// for a source) whose operator impl builds, with the builder's default
// parallelism, max parallelism and chaining. Its OutType is impl's; it is
// Coordinated when impl implements task.Coordinated.
func (b *Builder) AddNode(kind, name string, inputs int, impl task.Factory) *graph.Node {
	n := &graph.Node{
		ID:             graph.NodeID(len(b.g.Nodes)),
		Kind:           kind,
		Name:           name,
		Parallelism:    b.parallelism,
		MaxParallelism: b.maxParallelism,
		Chaining:       graph.ChainAlways,
		Inputs:         inputs,
		Impl:           impl,
		OutType:        impl.OutType().TypeName(),
	}
	_, n.Coordinated = impl.(task.Coordinated)
	b.g.Nodes = append(b.g.Nodes, n)
	return n
}

// AddEdge connects the output tag ("" for the main one) of from to input
// of to. A Hash edge's partitioner is a task.KeyPartitioner of the
// records' Go type.
func (b *Builder) AddEdge(from *graph.Node, tag string, to *graph.Node, input int, p graph.Partitioning, partitioner any) *graph.Edge {
	e := &graph.Edge{From: from.ID, To: to.ID, Input: input, SideOutput: tag, Partitioning: p, Partitioner: partitioner}
	b.g.Edges = append(b.g.Edges, e)
	return e
}

// Fail records a mistake in the job, reported by Build.
func (b *Builder) Fail(err error) { b.errs = append(b.errs, err) }

// Errs are the mistakes recorded so far.
func (b *Builder) Errs() []error { return b.errs }

// Graph returns the graph built so far, named name, with configuration
// config (copied; it is not part of the fingerprint), and with forward
// edges between nodes of different parallelism turned into rebalancing
// ones. The nodes and edges are the builder's: settings made on streams
// afterwards show in it.
func (b *Builder) Graph(name string, config map[string]string) *graph.JobGraph {
	g := b.g
	g.Name = name
	g.Config = maps.Clone(config)
	for _, e := range g.Edges {
		if e.Partitioning == graph.Forward && g.Node(e.From).Parallelism != g.Node(e.To).Parallelism {
			e.Partitioning = graph.Rebalance
		}
	}
	return &g
}

// Build is Graph after checking for the mistakes recorded while building
// (a *BuildError listing all of them) and validating the graph (a
// *graph.ValidationError).
func (b *Builder) Build(name string, config map[string]string) (*graph.JobGraph, error) {
	if len(b.errs) > 0 {
		return nil, &BuildError{Errs: b.errs}
	}
	g := b.Graph(name, config)
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// BuildError lists the mistakes found while a job was built.
type BuildError struct{ Errs []error }

func (e *BuildError) Error() string {
	var s strings.Builder
	s.WriteString("core: the job is invalid:")
	for _, err := range e.Errs {
		s.WriteString("\n  - ")
		s.WriteString(err.Error())
	}
	return s.String()
}

// Unwrap returns the mistakes.
func (e *BuildError) Unwrap() []error { return e.Errs }

// KeySelector appends the encoded key of r to dst and returns it. Keys
// are placed by the hash of their encoding (keygroup.ForEncodedKey), as
// the typed API places a key of the same encoding
// (keygroup.Hasher.AppendEncodedKey): a string key's encoding is its
// bytes. It runs once per record at the sender and once at the keyed
// operator, so it must be deterministic.
type KeySelector func(r Record, dst []byte) []byte

// BytesKey keys a Bytes record by its whole bytes.
func BytesKey(r Record, dst []byte) []byte { return append(dst, r.Bytes()...) }

// Stream is the output of a node (its main output or a side output) with
// the record type it carries and how the next edge read from it is
// partitioned. Its configuration methods change the node and return the
// stream, as the typed API's do.
type Stream struct {
	b    *Builder
	node *graph.Node
	tag  string
	typ  Type
	part graph.Partitioning
	// partitioner and key are set for a Hash edge (KeyBy).
	partitioner any
	key         KeySelector
}

// StreamOf is the main output of node n, a node of b whose records are of
// type t (for nodes added with AddNode).
func StreamOf(b *Builder, n *graph.Node, t Type) Stream {
	return Stream{b: b, node: n, typ: t, part: graph.Forward}
}

// Node is the node producing the stream.
func (s Stream) Node() *graph.Node { return s.node }

// Tag is the side output the stream reads ("" for the main output).
func (s Stream) Tag() string { return s.tag }

// Type is the stream's record type.
func (s Stream) Type() Type { return s.typ }

// Builder is the builder of the stream's job.
func (s Stream) Builder() *Builder { return s.b }

// Keyed reports whether the next edge is partitioned by key.
func (s Stream) Keyed() bool { return s.key != nil }

// Partitioning is the partitioning of the next edge read from s.
func (s Stream) Partitioning() graph.Partitioning { return s.part }

// Name sets the node's name.
func (s Stream) Name(name string) Stream { s.node.Name = name; return s }

// UID sets the node's stable identifier, which matches its state to it
// in savepoints. Set it on every stateful operator.
func (s Stream) UID(uid string) Stream { s.node.UID = uid; return s }

// SetParallelism sets the node's number of subtasks.
func (s Stream) SetParallelism(p int) Stream { s.node.Parallelism = p; return s }

// SetMaxParallelism sets the node's max parallelism (its key groups).
func (s Stream) SetMaxParallelism(p int) Stream { s.node.MaxParallelism = p; return s }

// DisableChaining keeps the node in a task of its own.
func (s Stream) DisableChaining() Stream { s.node.Chaining = graph.ChainNever; return s }

// StartNewChain starts a chain at the node.
func (s Stream) StartNewChain() Stream { s.node.Chaining = graph.ChainHead; return s }

// SetProp records a configuration property of the node (shown in plans,
// part of the fingerprint).
func (s Stream) SetProp(k, v string) Stream {
	if s.node.Props == nil {
		s.node.Props = map[string]string{}
	}
	s.node.Props[k] = v
	return s
}

func (s Stream) partitioned(p graph.Partitioning) Stream {
	s.part, s.partitioner, s.key = p, nil, nil
	return s
}

// Forward sends subtask i's records to subtask i of the next node (the
// default; between nodes of different parallelism it becomes Rebalance).
func (s Stream) Forward() Stream { return s.partitioned(graph.Forward) }

// Rebalance spreads records round-robin over the next node's subtasks.
func (s Stream) Rebalance() Stream { return s.partitioned(graph.Rebalance) }

// Broadcast sends every record to every subtask of the next node.
func (s Stream) Broadcast() Stream { return s.partitioned(graph.Broadcast) }

// Global sends every record to the next node's first subtask.
func (s Stream) Global() Stream { return s.partitioned(graph.Global) }

// KeyBy partitions the next edge by the encoded key key selects: every
// record of a key goes to the subtask owning its key group, and an
// untyped operator reading the stream is keyed (keyed state and timers,
// with the record's key current).
func (s Stream) KeyBy(key KeySelector) Stream {
	if key == nil {
		s.b.Fail(fmt.Errorf("core: KeyBy after operator %s: the key selector is nil", s.node.Label()))
		return s
	}
	s.part, s.partitioner, s.key = graph.Hash, s.typ.impl.partitioner(key), key
	return s
}

// Partition sets the next edge's partitioning with a partitioner of the
// engine's (a task.KeyPartitioner of the records' Go type for Hash): how
// the typed API keys its streams. An untyped operator reading the stream
// is not keyed by it; use KeyBy for that.
func (s Stream) Partition(p graph.Partitioning, partitioner any) Stream {
	s.part, s.partitioner, s.key = p, partitioner, nil
	return s
}

// SideOutput is the stream of the records the node emits to tag, which its
// spec declared.
func (s Stream) SideOutput(tag string) Stream {
	out := Stream{b: s.b, node: s.node, tag: tag, part: graph.Forward}
	f, ok := s.node.Impl.(*opFactory)
	if ok {
		out.typ, ok = f.sides[tag]
	}
	if !ok {
		s.b.Fail(fmt.Errorf("%w %q of operator %s", ErrNoSideOutput, tag, s.node.Label()))
		out.typ = Bytes()
	}
	return out
}

// connect adds the edge from s into input of n.
func (s Stream) connect(n *graph.Node, input int) {
	s.b.AddEdge(s.node, s.tag, n, input, s.part, s.partitioner)
}

// SourceStatus is what a Source's EmitNext reports.
type SourceStatus = task.SourceStatus

// Source statuses.
const (
	// MoreAvailable: call EmitNext again.
	MoreAvailable = task.MoreAvailable
	// NothingAvailable: call again when Available is ready (or after the
	// subtask's mail, timers or checkpoints ran).
	NothingAvailable = task.NothingAvailable
	// EndOfInput: the source is finished.
	EndOfInput = task.EndOfInput
)

// Source is an untyped source subtask: EmitNext emits what is available
// now (a bounded amount) with ctx.Emit and ctx.EmitWatermark. When it
// reports EndOfInput the engine emits MaxWatermark after it, so every
// window and event-time timer downstream fires. A source
// may also implement Opener, Finisher, Closer, OperatorState (its
// positions), CheckpointListener and Availability.
type Source interface {
	EmitNext(ctx *Context) (SourceStatus, error)
}

// Availability is a source that can say when it may make progress after
// NothingAvailable.
type Availability interface {
	Available() <-chan struct{}
}

// SourceSpec describes a source node.
type SourceSpec struct {
	// Name is the node's name (default "Source").
	Name string
	// Out is the type of the records it emits.
	Out Type
	// Sides declares side outputs by tag.
	Sides map[string]Type
	// Bounded marks a source that ends.
	Bounded bool
	// AssignsWatermarks marks a source that emits watermarks, which
	// event-time operators downstream need.
	AssignsWatermarks bool
	// Props describe the source's configuration (part of the fingerprint).
	Props map[string]string
	// New makes the source of one subtask.
	New func() Source
}

// OperatorSpec describes an untyped operator node.
type OperatorSpec struct {
	// Kind is the node's kind (default "transform"; "sink" for Sink).
	Kind string
	// Name is the node's name (default: Kind).
	Name string
	// Out is the type of the main output's records (ignored by Sink).
	Out Type
	// Sides declares side outputs by tag.
	Sides map[string]Type
	// NeedsWatermarks marks an event-time operator (windows, joins,
	// event-time timers): a source upstream must assign watermarks.
	NeedsWatermarks bool
	// Props describe the operator's configuration (window size...).
	Props map[string]string
	// New makes the operator of one subtask.
	New func() Operator
}

// AddSource adds a source node.
func AddSource(b *Builder, spec SourceSpec) Stream {
	if spec.Name == "" {
		spec.Name = "Source"
	}
	spec.Out = b.check(spec.Name, spec.Out, spec.Sides, spec.New == nil)
	f := &opFactory{out: spec.Out, sides: spec.Sides, newSrc: spec.New}
	n := b.AddNode("source", spec.Name, 0, f)
	n.Bounded, n.AssignsWatermarks, n.Props = spec.Bounded, spec.AssignsWatermarks, maps.Clone(spec.Props)
	return StreamOf(b, n, spec.Out)
}

// check records the mistakes of a spec; it returns out, or Bytes in
// place of a missing type so that the graph can still be built.
func (b *Builder) check(name string, out Type, sides map[string]Type, noNew bool) Type {
	if !out.Valid() {
		b.Fail(fmt.Errorf("core: operator %q has no output type", name))
		out = Bytes()
	}
	for tag, t := range sides {
		if tag == "" || !t.Valid() {
			b.Fail(fmt.Errorf("core: operator %q declares side output %q without a tag or type", name, tag))
		}
	}
	if noNew {
		b.Fail(fmt.Errorf("core: operator %q has no New function", name))
	}
	return out
}

func (b *Builder) addOperator(spec OperatorSpec, defKind string, ins []Stream) Stream {
	if spec.Kind == "" {
		spec.Kind = defKind
	}
	if spec.Name == "" {
		spec.Name = spec.Kind
	}
	spec.Out = b.check(spec.Name, spec.Out, spec.Sides, spec.New == nil)
	f := &opFactory{out: spec.Out, sides: spec.Sides, newOp: spec.New}
	for _, in := range ins {
		f.ins = append(f.ins, inputSpec{typ: in.typ, key: in.key})
	}
	n := b.AddNode(spec.Kind, spec.Name, len(ins), f)
	n.NeedsWatermarks, n.Props = spec.NeedsWatermarks, maps.Clone(spec.Props)
	if len(ins) > 1 {
		n.Chaining = graph.ChainHead // a two-input operator never chains to its inputs
	}
	for i, in := range ins {
		if in.b != b {
			b.Fail(fmt.Errorf("core: operator %q reads a stream of another job", spec.Name))
			continue
		}
		n.Keyed = n.Keyed || in.key != nil
		in.connect(n, i)
	}
	return StreamOf(b, n, spec.Out)
}

// Transform adds a one-input untyped operator reading in. It is keyed
// when in is (KeyBy).
func Transform(in Stream, spec OperatorSpec) Stream {
	return in.b.addOperator(spec, "transform", []Stream{in})
}

// Transform2 adds a two-input untyped operator reading a into input 0 and
// b into input 1. It is keyed when either is; a keyed operator's other
// input must be broadcast (its records then have no current key).
func Transform2(a, b Stream, spec OperatorSpec) Stream {
	return a.b.addOperator(spec, "transform", []Stream{a, b})
}

// Sink adds an untyped operator without outputs reading in (kind "sink").
// Its node's OutType is the input's, as for the typed API's sinks.
func Sink(in Stream, spec OperatorSpec) Stream {
	spec.Out = in.typ
	spec.Sides = nil
	return in.b.addOperator(spec, "sink", []Stream{in})
}

// AddTyped adds a node whose operator is a typed task.Factory (the typed
// API's) reading ins, producing records of out, which must be the type
// f's output is: the bridge that lets typed and untyped operators share a
// job. The caller marks the node Keyed when its operator is.
func AddTyped(b *Builder, kind, name string, ins []Stream, out Type, f task.Factory) Stream {
	if got := f.OutType().TypeName(); got != out.Name() {
		b.Fail(fmt.Errorf("core: operator %q produces %s, not %s", name, got, out.Name()))
	}
	n := b.AddNode(kind, name, len(ins), f)
	if len(ins) > 1 {
		n.Chaining = graph.ChainHead
	}
	for i, in := range ins {
		in.connect(n, i)
	}
	return StreamOf(b, n, out)
}
