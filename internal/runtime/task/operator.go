// Package task runs one subtask of an operator chain: it builds the chain's
// operators, feeds them from the subtask's inbox (or its source), combines
// input watermarks, fires processing-time timers, batches output records
// into exchange buffers and reports metrics.
//
// The package is type-agnostic at its core: it moves opaque batches and
// control events. Typed code enters through two seams: operators, built by a
// Factory from the graph node's Impl, and TypeOps, which makes typed outputs,
// record writers and batch dispatchers for one record type.
package task

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
)

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp int64 = math.MinInt64

// MaxWatermark ends event time.
const MaxWatermark int64 = math.MaxInt64

// Output receives the records and watermarks an operator emits.
type Output[T any] interface {
	// Collect emits v with event timestamp ts (or NoTimestamp).
	Collect(v T, ts int64) error
	// EmitWatermark forwards a watermark downstream.
	EmitWatermark(wm int64) error
}

// Input is one typed input of an operator.
type Input[T any] interface {
	ProcessElement(v T, ts int64) error
}

// BatchInput is implemented by inputs that also take records a batch at a
// time (stateless operators of a chain): vs[i] with timestamp ts[i], in
// order. The slices are the caller's, valid during the call only: an
// input keeps no reference to them. A chain hands a batch from operator to
// operator with one call per batch instead of one per record.
type BatchInput[T any] interface {
	Input[T]
	ProcessBatch(vs []T, ts []int64) error
}

// BatchOutput is implemented by outputs that take a batch in one call
// (every output the task builds does). Operators emit batches with
// CollectBatch, which works with any Output.
type BatchOutput[T any] interface {
	Output[T]
	CollectBatch(vs []T, ts []int64) error
}

// CollectBatch emits vs (with timestamps ts, of the same length) to out:
// in one call if out takes batches, else record by record.
func CollectBatch[T any](out Output[T], vs []T, ts []int64) error {
	if b, ok := out.(BatchOutput[T]); ok {
		return b.CollectBatch(vs, ts)
	}
	for i := range vs {
		if err := out.Collect(vs[i], ts[i]); err != nil {
			return err
		}
	}
	return nil
}

// Operator is the type-erased lifecycle of an operator instance.
type Operator interface {
	// Open prepares the operator; it runs on the task goroutine.
	Open() error
	// ProcessWatermark handles the combined input watermark: fire
	// event-time timers up to wm, then forward wm to the output.
	ProcessWatermark(wm int64) error
	// Finish is called once all inputs have ended: emit final results.
	Finish() error
	// Close releases resources; it is called whether or not the task failed.
	Close() error
}

// SourceStatus is what a source operator's EmitNext reports.
type SourceStatus int

// Source statuses.
const (
	// MoreAvailable: call EmitNext again.
	MoreAvailable SourceStatus = iota
	// NothingAvailable: wait for Available before calling again.
	NothingAvailable
	// EndOfInput: the source is finished.
	EndOfInput
)

// SourceOperator heads a source chain.
type SourceOperator interface {
	Operator
	// EmitNext emits what is available now (a bounded amount).
	EmitNext() (SourceStatus, error)
	// Available is ready when EmitNext may make progress again after it
	// reported NothingAvailable.
	Available() <-chan struct{}
}

// Factory builds the operator of one graph node for one subtask. A graph
// node's Impl implements Factory.
type Factory interface {
	// OutType describes the main output's record type.
	OutType() TypeOps
	// SideOutputs describes the node's side outputs by tag.
	SideOutputs() map[string]TypeOps
	// Create builds the operator. out is an Output[T] of the main output
	// type and sides an Output[S] per side-output tag (all as any). It
	// returns the operator and one Input per logical input (as any; nil
	// for sources).
	Create(ctx *Context, out any, sides map[string]any) (Operator, []any, error)
}

// Coordinated is implemented by factories whose subtasks share one
// job-wide coordinator (a source's split enumerator). The runtime creates
// the coordinator once per node, wherever it likes (in the JobMaster's
// process or in one worker's); coordinator and subtasks talk only through
// byte events, so they need not share a process. restored is the
// coordinator's checkpointed state (nil on a fresh start).
type Coordinated interface {
	NewCoordinator(ctx CoordinatorContext, parallelism int, restored []byte) (Coordinator, error)
}

// CoordinatorContext is what the runtime gives a coordinator.
type CoordinatorContext interface {
	// SendEvent sends ev to the operator of the node's subtask; events to
	// one subtask arrive in the order sent, on the subtask's goroutine
	// (CoordinatorEventHandler). It never blocks.
	SendEvent(subtask int, ev []byte)
}

// Coordinator is a job-wide object shared by the subtasks of one node.
type Coordinator interface {
	Close() error
	// Checkpoint snapshots the coordinator for checkpoint id and, atomically
	// with the snapshot, calls trigger with the state, which records it and
	// starts the checkpoint at the node's subtasks: whatever the coordinator
	// sent its subtasks before the snapshot reaches them before the barrier.
	Checkpoint(id int64, trigger func(state []byte)) error
	// HandleOperatorEvent handles an event the operator of subtask sent
	// (Context.SendToCoordinator). It may be called from any goroutine.
	HandleOperatorEvent(subtask int, ev []byte) error
}

// CoordinatorEventHandler is implemented by the operators of coordinated
// nodes to receive their coordinator's events.
type CoordinatorEventHandler interface {
	HandleCoordinatorEvent(ev []byte) error
}

// RuntimeMode is STREAMING or BATCH execution.
type RuntimeMode int

// Runtime modes.
const (
	StreamingMode RuntimeMode = iota
	BatchMode
)

func (m RuntimeMode) String() string {
	if m == BatchMode {
		return "BATCH"
	}
	return "STREAMING"
}

// Context is what an operator instance knows of its place in the job.
type Context struct {
	Job            string
	Node           *graph.Node
	Subtask        int
	Parallelism    int
	MaxParallelism int
	// KeyGroups owned by this subtask (for keyed operators).
	KeyGroups keygroup.Range
	Mode      RuntimeMode
	Clock     clock.Clock
	// AutoWatermarkInterval is the period of periodic watermark generation (ms).
	AutoWatermarkInterval int64
	Log                   *slog.Logger
	// SendToCoordinator sends an event to the node's coordinator (nil for
	// nodes without one). An error means the coordinator failed or is
	// gone.
	SendToCoordinator func(ev []byte) error
	// StateBackend is where keyed operators keep their state (pass it to
	// state.NewKeyedWithBackend); nil: in memory.
	StateBackend state.Backend
	// FileSystems resolves file URIs (never nil: a task without one gets
	// a resolver of the local filesystem).
	FileSystems *fs.Resolver

	t *Task
}

// Done is closed when the task is being cancelled.
func (c *Context) Done() <-chan struct{} { return c.t.ctx.Done() }

// Ctx is the task's context, cancelled when the task is torn down.
func (c *Context) Ctx() context.Context { return c.t.ctx }

// RegisterProcessingTimer runs fn on the task goroutine once processing
// time reaches at. The returned function cancels the timer.
func (c *Context) RegisterProcessingTimer(at int64, fn func(now int64) error) (cancel func()) {
	node := c.t.opIndex(c.Node.ID)
	return c.t.timers.register(at, node, func(now int64) error {
		prev := c.t.current
		c.t.current = node
		err := fn(now)
		c.t.current = prev
		if err != nil {
			return c.t.wrapErr(err, node)
		}
		return nil
	})
}

// Post runs fn on the task goroutine; it may be called from any goroutine
// and never blocks. An error from fn fails the task.
func (c *Context) Post(fn func() error) {
	c.t.mail.post(mail{node: c.t.opIndex(c.Node.ID), fn: fn})
}

// Yield runs pending mail or due processing-time timers, blocking until
// there is some. Operators call it from the task goroutine while they wait
// for work they posted (async I/O at capacity). As in Flink, it only runs
// the mail and timers of this operator and those after it in the chain:
// an upstream operator, which is in the middle of emitting the record
// being processed, is never re-entered.
func (c *Context) Yield() error { return c.t.yield(c.t.opIndex(c.Node.ID)) }

// Metrics of the operator's subtask.
func (c *Context) Metrics() *Metrics { return c.t.metrics }

// OperatorError is a failure in an operator, naming it.
type OperatorError struct {
	Operator string // the node's label
	Subtask  int
	// Panic is set when user code panicked; Stack is the goroutine's stack.
	Panic any
	Stack string
	Err   error
}

func (e *OperatorError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("operator %s (subtask %d) panicked: %v\n%s", e.Operator, e.Subtask, e.Panic, e.Stack)
	}
	return fmt.Sprintf("operator %s (subtask %d): %v", e.Operator, e.Subtask, e.Err)
}

// Unwrap returns the operator's error.
func (e *OperatorError) Unwrap() error { return e.Err }
