package stream

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// DataStream is a stream of records of type T. It is a handle on the
// operator that produces it; methods configure that operator.
type DataStream[T any] struct {
	env  *Environment
	node *graph.Node
	// tag selects a side output of node ("" for the main output).
	tag string
	// part is the partitioning of the next edge read from this stream.
	part        graph.Partitioning
	partitioner any
}

func newStream[T any](env *Environment, n *graph.Node) DataStream[T] {
	return DataStream[T]{env: env, node: n, part: graph.Forward}
}

// Env is the stream's environment.
func (s DataStream[T]) Env() *Environment { return s.env }

// Name sets the operator's name (shown in plans, metrics and errors).
func (s DataStream[T]) Name(name string) DataStream[T] {
	s.node.Name = name
	return s
}

// UID sets the operator's stable identifier, used to match state to
// operators when restoring from a savepoint. Set it on every stateful operator.
func (s DataStream[T]) UID(uid string) DataStream[T] {
	s.node.UID = uid
	return s
}

// SetParallelism sets the number of parallel subtasks of the operator.
func (s DataStream[T]) SetParallelism(p int) DataStream[T] {
	s.node.Parallelism = p
	return s
}

// SetMaxParallelism sets the operator's max parallelism (its number of key
// groups, the upper bound for rescaling).
func (s DataStream[T]) SetMaxParallelism(p int) DataStream[T] {
	s.node.MaxParallelism = p
	return s
}

// DisableChaining keeps the operator in a task of its own.
func (s DataStream[T]) DisableChaining() DataStream[T] {
	s.node.Chaining = graph.ChainNever
	return s
}

// StartNewChain starts a new chain at this operator.
func (s DataStream[T]) StartNewChain() DataStream[T] {
	s.node.Chaining = graph.ChainHead
	return s
}

// Rebalance distributes records round-robin to the next operator.
func (s DataStream[T]) Rebalance() DataStream[T] {
	s.part = graph.Rebalance
	return s
}

// Broadcast sends every record to every subtask of the next operator.
func (s DataStream[T]) Broadcast() DataStream[T] {
	s.part = graph.Broadcast
	return s
}

// Global sends every record to the first subtask of the next operator.
func (s DataStream[T]) Global() DataStream[T] {
	s.part = graph.Global
	return s
}

// Forward sends records to the next operator's subtask of the same index
// (the default between operators of equal parallelism).
func (s DataStream[T]) Forward() DataStream[T] {
	s.part = graph.Forward
	return s
}

// connect adds the edge from s into input of n.
func (s DataStream[T]) connect(n *graph.Node, input int) {
	s.env.addEdge(s.node, s.tag, n, input, s.part, s.partitioner)
}

// Collector receives the records a function emits.
type Collector[T any] interface {
	Collect(v T)
}

// sideOutputs are the side outputs of a function's context, kept by the
// typed operator the context belongs to.
type sideOutputs = typed.SideOutputs

// oneInput adds a one-input operator reading from in.
func oneInput[I, O any](in DataStream[I], kind, name string, f *typed.Factory[O]) DataStream[O] {
	n := in.env.addNode(kind, name, 1, f)
	in.connect(n, 0)
	return newStream[O](in.env, n)
}

// Map applies fn to every record.
func Map[I, O any](in DataStream[I], fn func(I) O) DataStream[O] {
	return oneInput(in, "map", "Map", typed.Map(fn))
}

// FlatMap calls fn for every record; fn emits zero or more records.
func FlatMap[I, O any](in DataStream[I], fn func(I, Collector[O])) DataStream[O] {
	return oneInput(in, "flatmap", "FlatMap", typed.FlatMap(func(v I, c *typed.Collector[O]) { fn(v, c) }))
}

// Filter keeps the records for which fn returns true.
func Filter[T any](in DataStream[T], fn func(T) bool) DataStream[T] {
	return oneInput(in, "filter", "Filter", typed.Filter(fn))
}

// Union merges streams of the same type into one. Records keep their
// order per input stream; across inputs they interleave.
func Union[T any](first DataStream[T], others ...DataStream[T]) DataStream[T] {
	env := first.env
	n := env.addNode("union", "Union", 1, typed.Identity[T]())
	for _, s := range append([]DataStream[T]{first}, others...) {
		if s.env != env {
			env.fail(fmt.Errorf("union: streams of different environments cannot be united"))
			continue
		}
		if s.part == graph.Forward && s.node.Parallelism != n.Parallelism {
			s.part = graph.Rebalance
		}
		s.connect(n, 0)
	}
	// A union with several inputs cannot be chained; chaining needs one
	// input edge, which the planner checks.
	return newStream[T](env, n)
}

// OutputTag names a side output carrying records of type T.
type OutputTag[T any] struct{ id string }

// NewOutputTag returns a tag; id must be unique within the job.
func NewOutputTag[T any](id string) OutputTag[T] { return OutputTag[T]{id: id} }

// ID is the tag's identifier.
func (t OutputTag[T]) ID() string { return t.id }

// SideOutput returns the stream of records that the operator producing s
// emitted to tag (with Output from a process function, or late records of a
// window with SideOutputLateData). Records emitted to a tag nobody reads are
// dropped, as in Flink.
func SideOutput[S, T any](s DataStream[T], tag OutputTag[S]) DataStream[S] {
	st := DataStream[S]{env: s.env, node: s.node, tag: tag.id, part: graph.Forward}
	f, ok := s.node.Impl.(typed.SideDeclarer)
	if !ok {
		s.env.fail(fmt.Errorf("operator %s has no side outputs", s.node.Label()))
		return st
	}
	if err := f.DeclareSide(tag.id, task.TypeOf[S]()); err != nil {
		s.env.fail(fmt.Errorf("operator %s: %w", s.node.Label(), err))
	}
	return st
}

// SideOutputContext is implemented by the contexts of functions that may
// emit to side outputs.
type SideOutputContext interface {
	sides() *sideOutputs
}

// Output emits v to the side output tag, with the timestamp of the record
// (or timer) being processed.
func Output[S any](ctx SideOutputContext, tag OutputTag[S], v S) {
	typed.EmitSide(ctx.sides(), tag.id, v)
}
