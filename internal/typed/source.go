package typed

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Enumerator discovers splits and assigns them to readers (stream's
// SplitEnumerator has the same method set). It may also implement
// SnapshotEnumerator(checkpointID int64) ([]byte, error) to be checkpointed.
type Enumerator[S any] interface {
	Start() error
	AddReader(subtask int) error
	HandleSplitRequest(subtask int) error
	AddSplitsBack(splits []S, subtask int) error
	Close() error
}

// Reader reads the splits assigned to one subtask; stream adapts its
// SourceReader to it. It may also implement NotifyCheckpointComplete(int64)
// error.
type Reader[T, S any] interface {
	Start(ctx context.Context) error
	PollNext(ctx context.Context, out *SourceOp[T, S]) (task.SourceStatus, error)
	Available() <-chan struct{}
	AddSplits(splits []S) error
	NotifyNoMoreSplits()
	SnapshotState(checkpointID int64) ([]S, error)
	Close() error
}

// SourceHooks make a source's enumerator (once per job, on the
// coordinator; restored is its checkpointed state or nil) and its
// readers (one per subtask).
type SourceHooks[T, S any] struct {
	NewEnumerator func(ctx *SourceCoordinator[S], restored []byte) (Enumerator[S], error)
	NewReader     func(op *SourceOp[T, S]) (Reader[T, S], error)
}

// Source is the factory of a source node: a coordinator running the
// enumerator, and per subtask the operator that drives the reader,
// assigns timestamps and generates watermarks per split.
func Source[T, S any](hooks SourceHooks[T, S], wm WMStrategy[T]) task.Factory {
	return &sourceFactory[T, S]{hooks: hooks, wm: wm}
}

type sourceFactory[T any, S any] struct {
	hooks SourceHooks[T, S]
	wm    WMStrategy[T]
}

func (f *sourceFactory[T, S]) OutType() task.TypeOps                { return task.TypeOf[T]() }
func (f *sourceFactory[T, S]) SideOutputs() map[string]task.TypeOps { return nil }

func (f *sourceFactory[T, S]) NewCoordinator(ctx task.CoordinatorContext, parallelism int, restored []byte) (task.Coordinator, error) {
	c := &SourceCoordinator[S]{ctx: ctx, parallelism: parallelism, readers: map[int]bool{}}
	enum, err := f.hooks.NewEnumerator(c, restored)
	if err != nil {
		return nil, err
	}
	c.enum = enum
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := enum.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (f *sourceFactory[T, S]) Create(ctx *task.Context, out any, _ map[string]any) (task.Operator, []any, error) {
	if ctx.SendToCoordinator == nil {
		return nil, nil, fmt.Errorf("stream: source %s has no split coordinator", ctx.Node.Label())
	}
	op := &SourceOp[T, S]{ctx: ctx, out: out.(task.Output[T]), batch: ctx.Mode == task.BatchMode}
	op.batching = task.TakesBatches(op.out)
	op.wm = NewWMMultiplexer(f.wm)
	op.strategy = f.wm
	reader, err := f.hooks.NewReader(op)
	if err != nil {
		return nil, nil, err
	}
	op.reader = reader
	return op, nil, nil
}

// The events between a source's coordinator and its readers: the first
// byte is the kind; splits carry the canonical encoding of []S.
const (
	evRegister byte = iota + 1
	evSplitRequest
	evSplits
	evNoMoreSplits
)

// SourceCoordinator runs a source's enumerator for the job. Enumerator
// calls are serialised by mu; split assignments reach the readers as
// events, which may cross processes.
type SourceCoordinator[S any] struct {
	ctx         task.CoordinatorContext
	parallelism int
	mu          struct{ sync.Mutex }
	enum        Enumerator[S]
	readers     map[int]bool
}

// Parallelism is the number of reader subtasks.
func (c *SourceCoordinator[S]) Parallelism() int { return c.parallelism }

// RegisteredReaders lists the subtasks whose readers run.
// REQUIRES: c.mu held (called by the enumerator).
func (c *SourceCoordinator[S]) RegisteredReaders() []int {
	var out []int
	for i := 0; i < c.parallelism; i++ {
		if c.readers[i] {
			out = append(out, i)
		}
	}
	return out
}

// AssignSplits hands splits to a reader.
// REQUIRES: c.mu held (called by the enumerator).
func (c *SourceCoordinator[S]) AssignSplits(subtask int, splits []S) {
	if !c.readers[subtask] {
		panic(fmt.Sprintf("stream: enumerator assigned splits to unregistered reader %d", subtask)) // enumerator bug
	}
	b, err := EncodeAll(splits)
	if err != nil {
		panic(fmt.Sprintf("stream: encoding splits: %v", err)) // the split type was checked when the job was built
	}
	c.ctx.SendEvent(subtask, append([]byte{evSplits}, b...))
}

// SignalNoMoreSplits tells a reader it gets no more splits.
// REQUIRES: c.mu held (called by the enumerator).
func (c *SourceCoordinator[S]) SignalNoMoreSplits(subtask int) {
	if !c.readers[subtask] {
		return
	}
	c.ctx.SendEvent(subtask, []byte{evNoMoreSplits})
}

// HandleOperatorEvent implements task.Coordinator.
func (c *SourceCoordinator[S]) HandleOperatorEvent(subtask int, ev []byte) error {
	if subtask < 0 || subtask >= c.parallelism {
		return fmt.Errorf("stream: a split event from subtask %d of %d", subtask, c.parallelism)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(ev) == 1 && ev[0] == evRegister:
		c.readers[subtask] = true
		return c.enum.AddReader(subtask)
	case len(ev) == 1 && ev[0] == evSplitRequest:
		return c.enum.HandleSplitRequest(subtask)
	}
	return fmt.Errorf("stream: malformed split event from subtask %d (%d bytes)", subtask, len(ev))
}

// Checkpoint implements task.Coordinator: the enumerator's unassigned
// splits, taken under the same lock that serialises assignments, and the
// trigger of the source subtasks' checkpoint.
func (c *SourceCoordinator[S]) Checkpoint(id int64, trigger func(state []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.enum.(interface {
		SnapshotEnumerator(checkpointID int64) ([]byte, error)
	})
	if !ok {
		return fmt.Errorf("split enumerator %T cannot be checkpointed (it does not implement CheckpointedEnumerator)", c.enum)
	}
	b, err := ce.SnapshotEnumerator(id)
	if err != nil {
		return err
	}
	trigger(b)
	return nil
}

func (c *SourceCoordinator[S]) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enum.Close()
}

// SourceOp heads a source chain: it drives the reader, assigns
// timestamps, and generates watermarks per split.
type SourceOp[T any, S any] struct {
	ctx      *task.Context
	out      task.Output[T]
	reader   Reader[T, S]
	strategy WMStrategy[T]
	wm       *WMMultiplexer[T]
	batch    bool
	err      error
	noMore   bool
	cancelWM func()
	main     *SplitOut[T, S]
	splits   map[string]*SplitOut[T, S]
	restored []S
	// pendV and pendTs are the records the reader emitted and the chain
	// has not seen yet: handed on as one batch when sourceBatch are
	// pending, before any watermark or idleness change, and when PollNext
	// returns, so nothing waits longer than the poll that emitted it.
	pendV  []T
	pendTs []int64
	// batching: the chain takes batches (its next operator is a stateless
	// one); otherwise records go on one by one, as they come.
	batching bool
}

// sourceBatch bounds the records a source hands its chain in one batch.
const sourceBatch = 256

// push queues a record for the chain.
func (s *SourceOp[T, S]) push(v T, ts int64) {
	if !s.batching {
		s.err = s.out.Collect(v, ts)
		return
	}
	if s.pendV == nil {
		s.pendV, s.pendTs = make([]T, 0, sourceBatch), make([]int64, 0, sourceBatch)
	}
	s.pendV = append(s.pendV, v)
	s.pendTs = append(s.pendTs, ts)
	if len(s.pendV) >= sourceBatch {
		s.flush()
	}
}

// flush hands the queued records to the chain (an error sticks in s.err).
func (s *SourceOp[T, S]) flush() {
	if len(s.pendV) == 0 {
		return
	}
	if s.err == nil {
		s.err = task.CollectBatch(s.out, s.pendV, s.pendTs)
	}
	clear(s.pendV) // drop references for the garbage collector
	s.pendV, s.pendTs = s.pendV[:0], s.pendTs[:0]
}

// SnapshotOperatorState implements task.OperatorStateful: the reader's
// splits with their positions, one entry each (spread over the subtasks on
// restore).
func (s *SourceOp[T, S]) SnapshotOperatorState(id int64) ([][]byte, bool, error) {
	splits, err := s.reader.SnapshotState(id)
	if err != nil {
		return nil, false, err
	}
	c, err := codec.For[S]()
	if err != nil {
		return nil, false, err
	}
	entries := make([][]byte, len(splits))
	for i, sp := range splits {
		entries[i] = c.Append(nil, sp)
	}
	return entries, false, nil
}

// RestoreOperatorState implements task.OperatorStateful.
func (s *SourceOp[T, S]) RestoreOperatorState(entries [][]byte) error {
	c, err := codec.For[S]()
	if err != nil {
		return err
	}
	for _, e := range entries {
		sp, _, err := c.Decode(e)
		if err != nil {
			return fmt.Errorf("source split: %w", err)
		}
		s.restored = append(s.restored, sp)
	}
	return nil
}

// NotifyCheckpointComplete implements task.CheckpointListener.
func (s *SourceOp[T, S]) NotifyCheckpointComplete(id int64) error {
	if l, ok := s.reader.(interface{ NotifyCheckpointComplete(int64) error }); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

// EncodeAll is the canonical encoding of vs (splits in events and enumerator state).
func EncodeAll[S any](vs []S) ([]byte, error) {
	c, err := codec.For[[]S]()
	if err != nil {
		return nil, err
	}
	return c.Append(nil, vs), nil
}

// DecodeAll decodes what EncodeAll wrote.
func DecodeAll[S any](b []byte) ([]S, error) {
	c, err := codec.For[[]S]()
	if err != nil {
		return nil, err
	}
	vs, _, err := c.Decode(b)
	return vs, err
}

// The reader's view of its subtask (stream's SourceReaderContext).
func (s *SourceOp[T, S]) Subtask() int              { return s.ctx.Subtask }
func (s *SourceOp[T, S]) Parallelism() int          { return s.ctx.Parallelism }
func (s *SourceOp[T, S]) ProcessClock() clock.Clock { return s.ctx.Clock }

// FileSystems resolves file URIs by scheme.
func (s *SourceOp[T, S]) FileSystems() *fs.Resolver { return s.ctx.FileSystems }

// Gauges are the subtask's published metrics.
func (s *SourceOp[T, S]) Gauges() *task.Gauges { return &s.ctx.Metrics().Gauges }

func (s *SourceOp[T, S]) SendSplitRequest() {
	s.ctx.Post(func() error { return s.ctx.SendToCoordinator([]byte{evSplitRequest}) })
}

// HandleCoordinatorEvent implements task.CoordinatorEventHandler: splits
// assigned by the enumerator, or the end of them.
func (s *SourceOp[T, S]) HandleCoordinatorEvent(ev []byte) error {
	switch {
	case len(ev) == 1 && ev[0] == evNoMoreSplits:
		s.noMore = true
		s.reader.NotifyNoMoreSplits()
		return nil
	case len(ev) > 0 && ev[0] == evSplits:
		splits, err := DecodeAll[S](ev[1:])
		if err != nil {
			return fmt.Errorf("stream: decoding assigned splits: %w", err)
		}
		return s.reader.AddSplits(splits)
	}
	return fmt.Errorf("stream: malformed coordinator event (%d bytes)", len(ev))
}

func (s *SourceOp[T, S]) Open() error {
	s.splits = map[string]*SplitOut[T, S]{}
	if err := s.reader.Start(s.ctx.Ctx()); err != nil {
		return err
	}
	if len(s.restored) > 0 {
		if err := s.reader.AddSplits(s.restored); err != nil {
			return err
		}
		s.restored = nil
	}
	if s.strategy.GeneratesWatermarks() && !s.batch {
		s.schedulePeriodic()
	}
	return s.ctx.SendToCoordinator([]byte{evRegister})
}

func (s *SourceOp[T, S]) schedulePeriodic() {
	at := s.ctx.Clock.NowMillis() + s.ctx.AutoWatermarkInterval
	s.cancelWM = s.ctx.RegisterProcessingTimer(at, func(now int64) error {
		if err := s.emitPeriodic(now); err != nil {
			return err
		}
		s.schedulePeriodic()
		return nil
	})
}

func (s *SourceOp[T, S]) emitPeriodic(now int64) error {
	s.flush()
	if s.err != nil {
		return s.err
	}
	wm, adv, idle, idleChanged := s.wm.Periodic(now)
	if idleChanged && idle {
		if err := s.ctx.EmitIdle(true); err != nil {
			return err
		}
	}
	if adv {
		if err := s.out.EmitWatermark(wm); err != nil {
			return err
		}
	} else if idleChanged && !idle {
		if err := s.ctx.EmitIdle(false); err != nil {
			return err
		}
	}
	return nil
}

func (s *SourceOp[T, S]) EmitNext() (task.SourceStatus, error) {
	st, err := s.reader.PollNext(s.ctx.Ctx(), s)
	s.flush()
	if err == nil {
		err = s.err
	}
	if err != nil {
		return st, err
	}
	if st == task.EndOfInput {
		if s.cancelWM != nil {
			s.cancelWM()
		}
		// The end of a bounded source ends event time: every window fires.
		if err := s.out.EmitWatermark(task.MaxWatermark); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *SourceOp[T, S]) Available() <-chan struct{} { return s.reader.Available() }

func (s *SourceOp[T, S]) ProcessWatermark(wm int64) error { // stop --drain
	s.flush()
	if s.err != nil {
		return s.err
	}
	return s.out.EmitWatermark(wm)
}
func (s *SourceOp[T, S]) Finish() error { return nil }
func (s *SourceOp[T, S]) Close() error  { return s.reader.Close() }

// Collect emits a record of the reader's (stream's ReaderOutput).
func (s *SourceOp[T, S]) Collect(v T, ts int64) {
	if s.main == nil {
		s.main = &SplitOut[T, S]{op: s, tr: s.wm.Add("", s.ctx.Clock.NowMillis())}
	}
	s.main.Collect(v, ts)
}

// ForSplit is the output of one split's records.
func (s *SourceOp[T, S]) ForSplit(id string) *SplitOut[T, S] {
	if o, ok := s.splits[id]; ok {
		return o
	}
	o := &SplitOut[T, S]{op: s, tr: s.wm.Add(id, s.ctx.Clock.NowMillis())}
	s.splits[id] = o
	return o
}

// ReleaseSplit forgets a finished split's watermark state.
func (s *SourceOp[T, S]) ReleaseSplit(id string) {
	delete(s.splits, id)
	s.wm.Remove(id)
}

// SplitOut receives the records of one split.
type SplitOut[T any, S any] struct {
	op *SourceOp[T, S]
	tr *WMTracker[T]
}

// Collect emits a record of the split.
func (o *SplitOut[T, S]) Collect(v T, ts int64) {
	s := o.op
	if s.err != nil {
		return
	}
	if s.strategy.Assigner != nil {
		ts = s.strategy.Assigner(v, ts)
	}
	if !s.batch {
		prev := o.tr.WM
		s.wm.OnEvent(o.tr, v, ts)
		if o.tr.Idle {
			// Activity ends idleness at once, not at the next period.
			o.tr.Idle = false
			if _, _, idle, changed := s.wm.Combine(); changed && !idle {
				if s.flush(); s.err != nil {
					return
				}
				if err := s.ctx.EmitIdle(false); err != nil {
					s.err = err
					return
				}
			}
		}
		s.push(v, ts)
		// A watermark the generator emitted on the event (a punctuated
		// generator) goes out at once, after the record, as in Flink.
		if s.err == nil && o.tr.WM > prev {
			if wm, adv, _, _ := s.wm.Combine(); adv {
				if s.flush(); s.err == nil {
					s.err = s.out.EmitWatermark(wm)
				}
			}
		}
		return
	}
	s.push(v, ts)
}
