package stream

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// Boundedness says whether a source ends.
type Boundedness int

// Boundedness values.
const (
	Unbounded Boundedness = iota
	Bounded
)

// Split is a part of a source's input that one reader processes (a file,
// a Kafka partition, a range of generated numbers). A split value also
// carries the reader's position in it, so a snapshot of a reader is the
// list of its splits.
type Split interface {
	SplitID() string
}

// Source is a connector's entry point: it says whether it ends, and creates
// the job-wide split enumerator and the per-subtask readers.
type Source[T any, S Split] interface {
	Boundedness() Boundedness
	CreateEnumerator(ctx SplitEnumeratorContext[S]) (SplitEnumerator[S], error)
	CreateReader(ctx SourceReaderContext) (SourceReader[T, S], error)
}

// SplitEnumerator discovers splits and assigns them to readers. One runs
// per source per job; its methods are never called concurrently.
type SplitEnumerator[S Split] interface {
	// Start begins discovery.
	Start() error
	// AddReader is called when reader subtask registers.
	AddReader(subtask int) error
	// HandleSplitRequest is called when a reader asks for work.
	HandleSplitRequest(subtask int) error
	// AddSplitsBack returns splits of a failed reader for reassignment.
	AddSplitsBack(splits []S, subtask int) error
	Close() error
}

// SplitEnumeratorContext is the enumerator's view of the job.
type SplitEnumeratorContext[S Split] interface {
	// Parallelism is the number of reader subtasks.
	Parallelism() int
	// RegisteredReaders lists the subtasks whose readers are running.
	RegisteredReaders() []int
	// AssignSplits hands splits to a reader.
	AssignSplits(subtask int, splits []S)
	// SignalNoMoreSplits tells a reader it will get no more splits.
	SignalNoMoreSplits(subtask int)
}

// InputStatus is what SourceReader.PollNext reports.
type InputStatus int

// Reader statuses.
const (
	// MoreAvailable: the reader has more records now; poll again at once.
	MoreAvailable InputStatus = iota
	// NothingAvailable: nothing now; the reader signals when more arrives.
	NothingAvailable
	// EndOfInput: the reader has emitted its last record.
	EndOfInput
)

// sourceStatus is s in the engine's terms.
func (s InputStatus) sourceStatus() task.SourceStatus {
	switch s {
	case MoreAvailable:
		return task.MoreAvailable
	case NothingAvailable:
		return task.NothingAvailable
	default:
		return task.EndOfInput
	}
}

// SourceReaderContext is a reader's view of its subtask.
type SourceReaderContext interface {
	Subtask() int
	Parallelism() int
	// Clock is the job's processing time.
	Clock() Clock
	// SendSplitRequest asks the enumerator for a split.
	SendSplitRequest()
	// FileSystems resolves file URIs by scheme: file:// and plain paths
	// everywhere, hdfs:// in a cluster's workers.
	FileSystems() *fs.Resolver
}

// ReaderOutput receives a reader's records.
type ReaderOutput[T any] interface {
	// Collect emits a record with the given source timestamp (or NoTimestamp).
	Collect(v T, ts Timestamp)
	// ForSplit returns the output for the records of one split, so
	// watermarks are generated per split.
	ForSplit(splitID string) SplitOutput[T]
	// ReleaseSplit forgets a finished split's watermark state.
	ReleaseSplit(splitID string)
}

// SplitOutput receives the records of one split.
type SplitOutput[T any] interface {
	Collect(v T, ts Timestamp)
}

// SourceReader reads the splits assigned to one subtask. Its methods run on
// the subtask's goroutine.
type SourceReader[T any, S Split] interface {
	// Start begins reading. ctx is the subtask's context, cancelled when
	// the subtask is cancelled or torn down: the reader may keep it for its
	// background work (fetchers) and must not block past its cancellation.
	Start(ctx context.Context) error
	// PollNext emits what is available now (a bounded amount) and says
	// whether more is available, nothing for now, or the input ended. ctx
	// is the subtask's context, as for Start.
	PollNext(ctx context.Context, out ReaderOutput[T]) (InputStatus, error)
	// Available is ready when PollNext may make progress again after it
	// reported NothingAvailable (nil: only new splits wake the reader).
	Available() <-chan struct{}
	AddSplits(splits []S) error
	NotifyNoMoreSplits()
	// SnapshotState returns the assigned, unfinished splits with their
	// current positions.
	SnapshotState(checkpointID int64) ([]S, error)
	Close() error
}

// FromSource adds a source to the job.
func FromSource[T any, S Split](env *Environment, src Source[T, S], wm WatermarkStrategy[T], name string) DataStream[T] {
	f := &sourceFactory[T, S]{src: src, wm: wm}
	n := env.addNode("source", name, 0, f)
	n.Bounded = src.Boundedness() == Bounded
	n.AssignsWatermarks = wm.generatesWatermarks()
	n.Chaining = graph.ChainHead
	return newStream[T](env, n)
}

type sourceFactory[T any, S Split] struct {
	src Source[T, S]
	wm  WatermarkStrategy[T]
}

func (f *sourceFactory[T, S]) OutType() task.TypeOps                { return task.TypeOf[T]() }
func (f *sourceFactory[T, S]) SideOutputs() map[string]task.TypeOps { return nil }

// CheckpointedEnumerator is implemented by enumerators whose state (e.g.
// the splits not assigned yet) is part of checkpoints, encoded by the
// enumerator (internal/runtime/codec is the canonical choice).
type CheckpointedEnumerator interface {
	SnapshotEnumerator(checkpointID int64) ([]byte, error)
}

// RestorableSource creates an enumerator from the state its
// CheckpointedEnumerator wrote. Splits that readers held are restored into
// the readers.
type RestorableSource[S Split] interface {
	RestoreEnumeratorState(ctx SplitEnumeratorContext[S], state []byte) (SplitEnumerator[S], error)
}

func (f *sourceFactory[T, S]) NewCoordinator(ctx task.CoordinatorContext, parallelism int, restored []byte) (task.Coordinator, error) {
	c := &sourceCoordinator[S]{ctx: ctx, parallelism: parallelism, readers: map[int]bool{}}
	var enum SplitEnumerator[S]
	var err error
	if restored != nil {
		rs, ok := f.src.(RestorableSource[S])
		if !ok {
			return nil, fmt.Errorf("source %T cannot restore its enumerator (it does not implement RestorableSource)", f.src)
		}
		enum, err = rs.RestoreEnumeratorState(c, restored)
		if err != nil {
			return nil, fmt.Errorf("restoring the split enumerator: %w", err)
		}
	} else if enum, err = f.src.CreateEnumerator(c); err != nil {
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
	op := &sourceOp[T, S]{ctx: ctx, out: out.(task.Output[T]), batch: ctx.Mode == task.BatchMode}
	op.wm = typed.NewWMMultiplexer(f.wm.typedStrategy())
	op.strategy = f.wm
	reader, err := f.src.CreateReader(op)
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

// sourceCoordinator runs a source's enumerator for the job. Enumerator
// calls are serialised by mu; split assignments reach the readers as
// events, which may cross processes.
type sourceCoordinator[S Split] struct {
	ctx         task.CoordinatorContext
	parallelism int
	mu          struct{ sync.Mutex }
	enum        SplitEnumerator[S]
	readers     map[int]bool
}

func (c *sourceCoordinator[S]) Parallelism() int { return c.parallelism }

// REQUIRES: c.mu held (called by the enumerator).
func (c *sourceCoordinator[S]) RegisteredReaders() []int {
	var out []int
	for i := 0; i < c.parallelism; i++ {
		if c.readers[i] {
			out = append(out, i)
		}
	}
	return out
}

// REQUIRES: c.mu held (called by the enumerator).
func (c *sourceCoordinator[S]) AssignSplits(subtask int, splits []S) {
	if !c.readers[subtask] {
		panic(fmt.Sprintf("stream: enumerator assigned splits to unregistered reader %d", subtask)) // enumerator bug
	}
	b, err := encodeAll(splits)
	if err != nil {
		panic(fmt.Sprintf("stream: encoding splits: %v", err)) // the split type was checked when the job was built
	}
	c.ctx.SendEvent(subtask, append([]byte{evSplits}, b...))
}

// REQUIRES: c.mu held (called by the enumerator).
func (c *sourceCoordinator[S]) SignalNoMoreSplits(subtask int) {
	if !c.readers[subtask] {
		return
	}
	c.ctx.SendEvent(subtask, []byte{evNoMoreSplits})
}

// HandleOperatorEvent implements task.Coordinator.
func (c *sourceCoordinator[S]) HandleOperatorEvent(subtask int, ev []byte) error {
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
func (c *sourceCoordinator[S]) Checkpoint(id int64, trigger func(state []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.enum.(CheckpointedEnumerator)
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

func (c *sourceCoordinator[S]) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enum.Close()
}

// sourceOp heads a source chain: it drives the reader, assigns
// timestamps, and generates watermarks per split.
type sourceOp[T any, S Split] struct {
	ctx      *task.Context
	out      task.Output[T]
	reader   SourceReader[T, S]
	strategy WatermarkStrategy[T]
	wm       *typed.WMMultiplexer[T]
	batch    bool
	err      error
	noMore   bool
	cancelWM func()
	main     *splitOut[T, S]
	splits   map[string]*splitOut[T, S]
	restored []S
}

// SnapshotOperatorState implements task.OperatorStateful: the reader's
// splits with their positions, one entry each (spread over the subtasks on
// restore).
func (s *sourceOp[T, S]) SnapshotOperatorState(id int64) ([][]byte, bool, error) {
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
func (s *sourceOp[T, S]) RestoreOperatorState(entries [][]byte) error {
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

// ReaderCheckpointListener is implemented by readers that act when a
// checkpoint completes (a Kafka reader commits offsets).
type ReaderCheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

// NotifyCheckpointComplete implements task.CheckpointListener.
func (s *sourceOp[T, S]) NotifyCheckpointComplete(id int64) error {
	if l, ok := s.reader.(ReaderCheckpointListener); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

func encodeAll[S any](vs []S) ([]byte, error) {
	c, err := codec.For[[]S]()
	if err != nil {
		return nil, err
	}
	return c.Append(nil, vs), nil
}

func decodeAll[S any](b []byte) ([]S, error) {
	c, err := codec.For[[]S]()
	if err != nil {
		return nil, err
	}
	vs, _, err := c.Decode(b)
	return vs, err
}

// SourceReaderContext implementation.
func (s *sourceOp[T, S]) Subtask() int     { return s.ctx.Subtask }
func (s *sourceOp[T, S]) Parallelism() int { return s.ctx.Parallelism }
func (s *sourceOp[T, S]) Clock() Clock     { return s.ctx.Clock }

// FileSystems implements SourceReaderContext.
func (s *sourceOp[T, S]) FileSystems() *fs.Resolver { return s.ctx.FileSystems }

func (s *sourceOp[T, S]) SendSplitRequest() {
	s.ctx.Post(func() error { return s.ctx.SendToCoordinator([]byte{evSplitRequest}) })
}

// HandleCoordinatorEvent implements task.CoordinatorEventHandler: splits
// assigned by the enumerator, or the end of them.
func (s *sourceOp[T, S]) HandleCoordinatorEvent(ev []byte) error {
	switch {
	case len(ev) == 1 && ev[0] == evNoMoreSplits:
		s.noMore = true
		s.reader.NotifyNoMoreSplits()
		return nil
	case len(ev) > 0 && ev[0] == evSplits:
		splits, err := decodeAll[S](ev[1:])
		if err != nil {
			return fmt.Errorf("stream: decoding assigned splits: %w", err)
		}
		return s.reader.AddSplits(splits)
	}
	return fmt.Errorf("stream: malformed coordinator event (%d bytes)", len(ev))
}

func (s *sourceOp[T, S]) Open() error {
	s.splits = map[string]*splitOut[T, S]{}
	if err := s.reader.Start(s.ctx.Ctx()); err != nil {
		return err
	}
	if len(s.restored) > 0 {
		if err := s.reader.AddSplits(s.restored); err != nil {
			return err
		}
		s.restored = nil
	}
	if s.strategy.generatesWatermarks() && !s.batch {
		s.schedulePeriodic()
	}
	return s.ctx.SendToCoordinator([]byte{evRegister})
}

func (s *sourceOp[T, S]) schedulePeriodic() {
	at := s.ctx.Clock.NowMillis() + s.ctx.AutoWatermarkInterval
	s.cancelWM = s.ctx.RegisterProcessingTimer(at, func(now int64) error {
		if err := s.emitPeriodic(now); err != nil {
			return err
		}
		s.schedulePeriodic()
		return nil
	})
}

func (s *sourceOp[T, S]) emitPeriodic(now int64) error {
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

func (s *sourceOp[T, S]) EmitNext() (task.SourceStatus, error) {
	st, err := s.reader.PollNext(s.ctx.Ctx(), s)
	if err == nil {
		err = s.err
	}
	if err != nil {
		return st.sourceStatus(), err
	}
	if st == EndOfInput {
		if s.cancelWM != nil {
			s.cancelWM()
		}
		// The end of a bounded source ends event time: every window fires.
		if err := s.out.EmitWatermark(task.MaxWatermark); err != nil {
			return st.sourceStatus(), err
		}
	}
	return st.sourceStatus(), nil
}

func (s *sourceOp[T, S]) Available() <-chan struct{} { return s.reader.Available() }

func (s *sourceOp[T, S]) ProcessWatermark(wm int64) error { return s.out.EmitWatermark(wm) } // stop --drain
func (s *sourceOp[T, S]) Finish() error                   { return nil }
func (s *sourceOp[T, S]) Close() error                    { return s.reader.Close() }

// ReaderOutput implementation.
func (s *sourceOp[T, S]) Collect(v T, ts Timestamp) {
	if s.main == nil {
		s.main = &splitOut[T, S]{op: s, tr: s.wm.Add("", s.ctx.Clock.NowMillis())}
	}
	s.main.Collect(v, ts)
}

func (s *sourceOp[T, S]) ForSplit(id string) SplitOutput[T] {
	if o, ok := s.splits[id]; ok {
		return o
	}
	o := &splitOut[T, S]{op: s, tr: s.wm.Add(id, s.ctx.Clock.NowMillis())}
	s.splits[id] = o
	return o
}

func (s *sourceOp[T, S]) ReleaseSplit(id string) {
	delete(s.splits, id)
	s.wm.Remove(id)
}

type splitOut[T any, S Split] struct {
	op *sourceOp[T, S]
	tr *typed.WMTracker[T]
}

func (o *splitOut[T, S]) Collect(v T, ts Timestamp) {
	s := o.op
	if s.err != nil {
		return
	}
	if s.strategy.assigner != nil {
		ts = s.strategy.assigner(v, ts)
	}
	if !s.batch {
		prev := o.tr.WM
		s.wm.OnEvent(o.tr, v, int64(ts))
		if o.tr.Idle {
			// Activity ends idleness at once, not at the next period.
			o.tr.Idle = false
			if _, _, idle, changed := s.wm.Combine(); changed && !idle {
				if err := s.ctx.EmitIdle(false); err != nil {
					s.err = err
					return
				}
			}
		}
		s.err = s.out.Collect(v, int64(ts))
		// A watermark the generator emitted on the event (a punctuated
		// generator) goes out at once, after the record, as in Flink.
		if s.err == nil && o.tr.WM > prev {
			if wm, adv, _, _ := s.wm.Combine(); adv {
				s.err = s.out.EmitWatermark(wm)
			}
		}
		return
	}
	s.err = s.out.Collect(v, int64(ts))
}
