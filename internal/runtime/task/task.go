package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/watermark"
)

// Spec is everything needed to run one subtask of a chain.
type Spec struct {
	Job     string
	Plan    *graph.Plan
	Chain   *graph.Chain
	Subtask int
	Mode    RuntimeMode
	Clock   clock.Clock
	Log     *slog.Logger
	// Inbox delivers the chain's input; nil for source chains.
	Inbox exchange.Inbox
	// Channels is the number of input channels (over all inputs).
	Channels int
	// Outputs holds, per exchange edge leaving the chain, the senders to
	// the downstream subtasks (one sender for a forward edge).
	Outputs map[*graph.Edge][]exchange.Sender
	// ToCoordinator sends an operator's event to its node's coordinator,
	// for the chain's nodes that have one.
	ToCoordinator map[graph.NodeID]func(ev []byte) error
	// BatchSize is the number of records per buffer (default DefaultBatchSize).
	BatchSize int
	// BufferTimeout flushes partly filled buffers (0: flush only when full
	// or on events).
	BufferTimeout time.Duration
	// AutoWatermarkInterval is the periodic watermark interval in ms.
	AutoWatermarkInterval int64
	// Checkpointing is nil when the job takes no checkpoints.
	Checkpointing *Checkpointing
	// Restore is the state to start from (nil: a fresh start).
	Restore *Restore
	// StateBackend keeps the keyed state of the chain's operators
	// (state.backend.type); nil keeps it in memory.
	StateBackend state.Backend
	// FileSystems resolves the URIs operators read and write (file sinks
	// and sources: file://, hdfs:// in a cluster); nil knows the local
	// filesystem only.
	FileSystems *fs.Resolver
}

// Metrics of one subtask. Fields are updated by the task goroutine and may
// be read from any goroutine.
type Metrics struct {
	RecordsIn          atomic.Int64
	RecordsOut         atomic.Int64
	BusyNanos          atomic.Int64
	IdleNanos          atomic.Int64
	BackpressuredNanos atomic.Int64
	// Watermark is the subtask's current input watermark.
	Watermark atomic.Int64
	// OutputWatermark is the last watermark the subtask sent to its
	// downstream subtasks (Flink's currentOutputWatermark); watermark.Min
	// before the first, and for a chain that sends to none.
	OutputWatermark atomic.Int64
	// BytesIn and BytesOut count the bytes of the batches the subtask
	// received and sent over the network (Flink's numBytesIn/Out). A task
	// knows no transport: they are kept by whoever reports the network
	// exchange's counts (a cluster's JobMaster, from its workers); channels
	// within a process carry records, not bytes, and count nothing.
	BytesIn, BytesOut atomic.Int64
	// Gauges are the metrics the subtask's operators publish of their own.
	Gauges Gauges
}

type mail struct {
	node int
	fn   func() error
}

// mailbox queues actions for the task goroutine. Posting never blocks:
// the producers (async I/O, split assignment) bound themselves.
type mailbox struct {
	mu struct {
		sync.Mutex
		q []mail
	}
	signal chan struct{}
}

func newMailbox() mailbox { return mailbox{signal: make(chan struct{}, 1)} }

func (m *mailbox) post(x mail) {
	m.mu.Lock()
	m.mu.q = append(m.mu.q, x)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// takeFrom removes and returns the mail of operators at chain index
// minOwner or later, and says how many other mails remain queued.
func (m *mailbox) takeFrom(minOwner int) (taken []mail, rest int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.mu.q[:0:0]
	for _, x := range m.mu.q {
		if x.node >= minOwner {
			taken = append(taken, x)
		} else {
			kept = append(kept, x)
		}
	}
	m.mu.q = kept
	return taken, len(kept)
}

func (m *mailbox) wake() {
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

func (m *mailbox) take() []mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.mu.q
	m.mu.q = nil
	return q
}

// Task is a running subtask of a chain.
type Task struct {
	spec    Spec
	ctx     context.Context
	log     *slog.Logger
	metrics *Metrics

	ops     []*opHandle // chain order, head first
	src     SourceOperator
	inputs  []func(data any) (int, error)
	writers []recordWriter
	valve   *watermark.Valve
	ended   int

	timers  procTimers
	mail    mailbox
	current int // index of the operator running now, for panic attribution

	// Checkpoints: the barrier aligner, buffers held from blocked channels,
	// and buffers released for processing before the inbox.
	aligner  *checkpoint.Aligner
	stash    map[int][]exchange.Buffer
	replay   []exchange.Buffer
	stopping bool // a source stopped by stop-with-savepoint
	finished bool // the chain finished and ended its outputs
	// suspended is set by a stop-with-savepoint without drain: the end of
	// input then does not finish the operators (no final results, no
	// final pre-commits), as in Flink.
	suspended bool
}

// New builds the chain's operators for one subtask.
func New(ctx context.Context, spec Spec) (*Task, error) {
	if spec.BatchSize <= 0 {
		spec.BatchSize = DefaultBatchSize
	}
	if spec.Log == nil {
		spec.Log = slog.New(slog.DiscardHandler)
	}
	fileSystems := spec.FileSystems
	if fileSystems == nil {
		fileSystems = fs.NewResolver()
	}
	t := &Task{
		spec:    spec,
		ctx:     ctx,
		metrics: &Metrics{},
		mail:    newMailbox(),
		log:     spec.Log.With("vertex", spec.Chain.Name, "subtask", spec.Subtask),
	}
	t.metrics.Watermark.Store(watermark.Min)
	t.metrics.OutputWatermark.Store(watermark.Min)
	t.timers.clock = spec.Clock
	g := spec.Plan.Graph
	chain := spec.Chain
	t.ops = make([]*opHandle, len(chain.Nodes))
	inputsOf := map[graph.NodeID][]any{}
	for i := len(chain.Nodes) - 1; i >= 0; i-- {
		n := g.Node(chain.Nodes[i])
		fac, ok := n.Impl.(Factory)
		if !ok {
			return nil, fmt.Errorf("task: operator %s has no implementation in this process (was the graph built by the same job binary?)", n.Label())
		}
		h := &opHandle{t: t, index: i, node: n}
		t.ops[i] = h
		main, err := t.outputsFor(n, "", fac.OutType(), inputsOf)
		if err != nil {
			return nil, err
		}
		sides := map[string]any{}
		for tag, ops := range fac.SideOutputs() {
			o, err := t.outputsFor(n, tag, ops, inputsOf)
			if err != nil {
				return nil, err
			}
			sides[tag] = o
			if w, ok := o.(interface{ EmitWatermark(int64) error }); ok {
				h.sideW = append(h.sideW, w.EmitWatermark)
			}
		}
		octx := &Context{
			Job:                   spec.Job,
			Node:                  n,
			Subtask:               spec.Subtask,
			Parallelism:           n.Parallelism,
			MaxParallelism:        n.EffectiveMaxParallelism(),
			KeyGroups:             keygroup.RangeFor(n.EffectiveMaxParallelism(), n.Parallelism, spec.Subtask),
			Mode:                  spec.Mode,
			Clock:                 spec.Clock,
			AutoWatermarkInterval: spec.AutoWatermarkInterval,
			Log:                   t.log.With("operator", n.Name),
			SendToCoordinator:     spec.ToCoordinator[n.ID],
			StateBackend:          spec.StateBackend,
			FileSystems:           fileSystems,
			t:                     t,
		}
		op, ins, err := fac.Create(octx, main, sides)
		if err != nil {
			return nil, fmt.Errorf("task: creating operator %s: %w", n.Label(), err)
		}
		h.op = op
		inputsOf[n.ID] = ins
	}
	head := t.ops[0]
	if so, ok := head.op.(SourceOperator); ok {
		t.src = so
	} else {
		headNode := head.node
		ins := inputsOf[headNode.ID]
		outTypes := map[int]TypeOps{}
		for _, e := range g.InEdges(headNode.ID) {
			outTypes[e.Input] = typeOfEdge(g, e)
		}
		t.inputs = make([]func(any) (int, error), len(ins))
		for i, in := range ins {
			t.inputs[i] = outTypes[i].dispatcher(in)
		}
		t.valve = watermark.NewValve(spec.Channels)
		if spec.Checkpointing != nil {
			t.aligner = checkpoint.NewAligner(spec.Checkpointing.Mode, spec.Channels)
			t.stash = map[int][]exchange.Buffer{}
		}
	}
	return t, nil
}

// typeOfEdge is the record type carried by e.
// EdgeType is the TypeOps of the records on edge e.
func EdgeType(g *graph.JobGraph, e *graph.Edge) TypeOps { return typeOfEdge(g, e) }

func typeOfEdge(g *graph.JobGraph, e *graph.Edge) TypeOps {
	fac := g.Node(e.From).Impl.(Factory)
	if e.SideOutput != "" {
		return fac.SideOutputs()[e.SideOutput]
	}
	return fac.OutType()
}

// outputsFor builds the Output of node n's main output (tag "") or side
// output: chained successors by call, other edges through writers.
func (t *Task) outputsFor(n *graph.Node, tag string, ops TypeOps, inputsOf map[graph.NodeID][]any) (any, error) {
	var outs []any
	g := t.spec.Plan.Graph
	for _, e := range g.OutEdges(n.ID) {
		if e.SideOutput != tag {
			continue
		}
		if t.spec.Plan.ChainOf[e.To] == t.spec.Chain.ID {
			ins := inputsOf[e.To]
			next := t.handleOf(e.To)
			outs = append(outs, ops.chained(ins[e.Input], next))
			continue
		}
		senders := t.spec.Outputs[e]
		if len(senders) == 0 {
			return nil, fmt.Errorf("task: no channels for the exchange %d -> %d", e.From, e.To)
		}
		w, out := ops.newWriter(writerConfig{
			ctx: t.ctx, senders: senders, partitioning: e.Partitioning, partitioner: e.Partitioner,
			subtask: t.spec.Subtask, maxPar: g.Node(e.To).EffectiveMaxParallelism(),
			batchSize: t.spec.BatchSize, metrics: t.metrics,
		})
		t.writers = append(t.writers, w)
		outs = append(outs, out)
	}
	return ops.fanOut(outs), nil
}

func (t *Task) handleOf(id graph.NodeID) *opHandle {
	for _, h := range t.ops {
		if h != nil && h.node.ID == id {
			return h
		}
	}
	panic(fmt.Sprintf("task: node %d is not in chain %d", id, t.spec.Chain.ID)) // built in reverse order
}

func (t *Task) opIndex(id graph.NodeID) int {
	for i, h := range t.ops {
		if h.node.ID == id {
			return i
		}
	}
	return 0
}

// Metrics of this subtask.
func (t *Task) Metrics() *Metrics { return t.metrics }

// DeliverCoordinatorEvent hands a coordinator's event to the operator of
// node on the task goroutine (in the order of calls). It never blocks.
func (t *Task) DeliverCoordinatorEvent(node graph.NodeID, ev []byte) {
	i := -1
	for k, h := range t.ops {
		if h.node.ID == node {
			i = k
		}
	}
	t.mail.post(mail{node: max(i, 0), fn: func() error {
		if i < 0 {
			return fmt.Errorf("task: a coordinator event for node %d, which is not in the chain", node)
		}
		h, ok := t.ops[i].op.(CoordinatorEventHandler)
		if !ok {
			return fmt.Errorf("task: operator %s got a coordinator event but does not handle them", t.ops[i].node.Label())
		}
		prev := t.current
		t.current = i
		err := h.HandleCoordinatorEvent(ev)
		t.current = prev
		if err != nil {
			return t.wrapErr(err, i)
		}
		return nil
	}})
}

func (t *Task) wrapErr(err error, index int) error {
	var oe *OperatorError
	if errors.As(err, &oe) || errors.Is(err, context.Canceled) {
		return err
	}
	return &OperatorError{Operator: t.ops[index].node.Label(), Subtask: t.spec.Subtask, Err: err}
}

// Run executes the subtask until its input ends, it fails, or ctx is
// cancelled. A panic in user code becomes an *OperatorError naming the
// operator, with the stack.
func (t *Task) Run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			h := t.ops[t.current]
			err = &OperatorError{Operator: h.node.Label(), Subtask: t.spec.Subtask, Panic: r, Stack: string(debug.Stack())}
		}
		for i := len(t.ops) - 1; i >= 0; i-- {
			if cerr := t.closeOp(i); cerr != nil && err == nil {
				err = cerr
			}
		}
		t.timers.stop()
		t.log.Debug("task ended", "err", err)
	}()
	if err := t.restoreOperators(); err != nil {
		return err
	}
	for i := len(t.ops) - 1; i >= 0; i-- {
		t.current = i
		if err := t.ops[i].op.Open(); err != nil {
			return t.wrapErr(err, i)
		}
	}
	t.current = 0
	if t.src != nil {
		err = t.runSource()
	} else {
		err = t.runInputs()
	}
	if err != nil {
		return err
	}
	if err := t.finish(); err != nil {
		return err
	}
	return t.waitFinalCommit()
}

func (t *Task) closeOp(i int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &OperatorError{Operator: t.ops[i].node.Label(), Subtask: t.spec.Subtask, Panic: r, Stack: string(debug.Stack())}
		}
	}()
	if t.ops[i].op == nil {
		return nil
	}
	cerr := t.ops[i].op.Close()
	// Keyed state ends with its operator (the pebble backend removes its
	// working directory).
	for _, k := range t.ops[i].keyed {
		if c, ok := k.(io.Closer); ok {
			if err := c.Close(); err != nil && cerr == nil {
				cerr = err
			}
		}
	}
	if cerr != nil {
		return t.wrapErr(cerr, i)
	}
	return nil
}

// finish ends the chain: operators emit final results head to tail, then
// every output ends.
func (t *Task) finish() error {
	for i, h := range t.ops {
		if t.suspended {
			break
		}
		t.current = i
		if err := h.op.Finish(); err != nil {
			return t.wrapErr(err, i)
		}
	}
	for _, w := range t.writers {
		if err := w.emitEvent(exchange.Event{Kind: exchange.EndOfPartition}); err != nil {
			return err
		}
	}
	t.finished = true
	return nil
}

func (t *Task) flushTicker() (<-chan time.Time, func()) {
	if t.spec.BufferTimeout <= 0 || len(t.writers) == 0 {
		return nil, func() {}
	}
	tk := time.NewTicker(t.spec.BufferTimeout)
	return tk.C, tk.Stop
}

func (t *Task) flush() error {
	for _, w := range t.writers {
		if err := w.flush(); err != nil {
			return err
		}
	}
	return nil
}

// runMail runs all queued mail in order.
func (t *Task) runMail() error { return t.runMails(t.mail.take()) }

func (t *Task) runMails(mails []mail) error {
	for _, m := range mails {
		prev := t.current
		t.current = m.node
		err := m.fn()
		t.current = prev
		if err != nil {
			return t.wrapErr(err, m.node)
		}
	}
	return nil
}

func (t *Task) runSource() error {
	flushC, stopFlush := t.flushTicker()
	defer stopFlush()
	for {
		// Control first, without blocking.
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-t.mail.signal:
			if err := t.runMail(); err != nil {
				return err
			}
			if t.stopping {
				return nil
			}
			continue
		case <-t.timers.c():
			if err := t.timers.fireDue(); err != nil {
				return err
			}
			continue
		case <-flushC:
			if err := t.flush(); err != nil {
				return err
			}
			continue
		default:
		}
		start := time.Now()
		t.current = 0
		st, err := t.src.EmitNext()
		t.metrics.BusyNanos.Add(int64(time.Since(start)))
		if err != nil {
			return t.wrapErr(err, 0)
		}
		switch st {
		case EndOfInput:
			return nil
		case NothingAvailable:
			if err := t.flush(); err != nil {
				return err
			}
			idle := time.Now()
			select {
			case <-t.ctx.Done():
				return t.ctx.Err()
			case <-t.src.Available():
			case <-t.mail.signal:
				if err := t.runMail(); err != nil {
					return err
				}
				if t.stopping {
					return nil
				}
			case <-t.timers.c():
				if err := t.timers.fireDue(); err != nil {
					return err
				}
			case <-flushC:
			}
			t.metrics.IdleNanos.Add(int64(time.Since(idle)))
		}
	}
}

func (t *Task) runInputs() error {
	if t.spec.Channels == 0 {
		return nil
	}
	flushC, stopFlush := t.flushTicker()
	defer stopFlush()
	inbox := t.spec.Inbox.C()
	for t.ended < t.spec.Channels {
		var b exchange.Buffer
		if len(t.replay) > 0 {
			b, t.replay = t.replay[0], t.replay[1:]
			if err := t.handleBuffer(b); err != nil {
				return err
			}
			continue
		}
		select {
		case b = <-inbox:
		default:
			idle := time.Now()
			select {
			case b = <-inbox:
			case <-t.ctx.Done():
				return t.ctx.Err()
			case <-t.mail.signal:
				t.metrics.IdleNanos.Add(int64(time.Since(idle)))
				if err := t.runMail(); err != nil {
					return err
				}
				continue
			case <-t.timers.c():
				t.metrics.IdleNanos.Add(int64(time.Since(idle)))
				if err := t.timers.fireDue(); err != nil {
					return err
				}
				continue
			case <-flushC:
				t.metrics.IdleNanos.Add(int64(time.Since(idle)))
				if err := t.flush(); err != nil {
					return err
				}
				continue
			}
			t.metrics.IdleNanos.Add(int64(time.Since(idle)))
		}
		start := time.Now()
		err := t.handleBuffer(b)
		t.metrics.BusyNanos.Add(int64(time.Since(start)))
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *Task) handleBuffer(b exchange.Buffer) error {
	if b.Err != nil {
		return b.Err // the exchange failed (a remote channel's connection broke)
	}
	if t.aligner != nil && t.aligner.Blocked(b.Channel) {
		// Held until the channel's barrier is aligned; its credit stays
		// spent, so the blocked sender stops after its credits.
		t.stash[b.Channel] = append(t.stash[b.Channel], b)
		return nil
	}
	defer b.Release()
	if b.Data != nil {
		t.current = 0
		n, err := t.inputs[b.Input](b.Data)
		t.metrics.RecordsIn.Add(int64(n))
		if err != nil {
			return t.wrapErr(err, 0)
		}
		return nil
	}
	var out watermark.Output
	switch b.Event.Kind {
	case exchange.Watermark:
		out = t.valve.Watermark(b.Channel, b.Event.Watermark)
	case exchange.Idle:
		out = t.valve.SetIdle(b.Channel, true)
	case exchange.Active:
		out = t.valve.SetIdle(b.Channel, false)
	case exchange.EndOfPartition:
		t.ended++
		out = t.valve.End(b.Channel)
		if t.aligner != nil {
			if err := t.applyAlign(t.aligner.EndOfPartition(b.Channel)); err != nil {
				return err
			}
		}
	case exchange.Barrier:
		return t.onBarrier(b.Channel, b.Event.CheckpointID, checkpoint.Kind(b.Event.Options))
	default:
		return fmt.Errorf("task: unexpected event %d on channel %d", b.Event.Kind, b.Channel)
	}
	if out.IdleChanged {
		kind := exchange.Active
		if out.Idle {
			kind = exchange.Idle
		}
		if err := t.emitEvent(exchange.Event{Kind: kind}); err != nil {
			return err
		}
	}
	if out.Advanced {
		t.metrics.Watermark.Store(out.Watermark)
		return t.ops[0].processWatermark(out.Watermark)
	}
	return nil
}

// emitEvent sends a task-level event (not a watermark, which travels through
// the operators) on every output.
func (t *Task) emitEvent(ev exchange.Event) error {
	for _, w := range t.writers {
		if err := w.emitEvent(ev); err != nil {
			return err
		}
	}
	return nil
}

// EmitIdle marks the task's outputs idle or active; sources call it
// through their context.
func (c *Context) EmitIdle(idle bool) error {
	kind := exchange.Active
	if idle {
		kind = exchange.Idle
	}
	return c.t.emitEvent(exchange.Event{Kind: kind})
}

func (t *Task) yield(minOwner int) error {
	var timerC <-chan struct{}
	if at, ok := t.timers.earliestFrom(minOwner); ok {
		var release func()
		timerC, release = t.spec.Clock.AfterMillis(at)
		defer release()
	}
	for {
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-t.mail.signal:
			mails, rest := t.mail.takeFrom(minOwner)
			if rest > 0 {
				t.mail.wake() // the main loop runs the rest later
			}
			if len(mails) == 0 {
				continue
			}
			return t.runMails(mails)
		case <-timerC:
			return t.timers.fireDueFrom(minOwner)
		}
	}
}
