package stream

import (
	"context"
	"fmt"

	"github.com/sluice/sluice/fs"
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
	// MetricGroup is where the reader publishes metrics of its own.
	MetricGroup() MetricGroup
}

// MetricGroup is where a connector publishes metrics of its own for its
// subtask (Flink's operator metric group): gauges by name, served by the
// REST API's subtask and vertex metrics (GET
// /jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics) and
// shown by the dashboard. Safe for use from any goroutine.
type MetricGroup interface {
	// SetGauge sets the gauge name to v.
	SetGauge(name string, v float64)
	// RemoveGauge drops the gauge name.
	RemoveGauge(name string)
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
	hooks := typed.SourceHooks[T, S]{
		NewEnumerator: func(c *typed.SourceCoordinator[S], restored []byte) (typed.Enumerator[S], error) {
			if restored == nil {
				return src.CreateEnumerator(c)
			}
			rs, ok := src.(RestorableSource[S])
			if !ok {
				return nil, fmt.Errorf("source %T cannot restore its enumerator (it does not implement RestorableSource)", src)
			}
			enum, err := rs.RestoreEnumeratorState(c, restored)
			if err != nil {
				return nil, fmt.Errorf("restoring the split enumerator: %w", err)
			}
			return enum, nil
		},
		NewReader: func(op *typed.SourceOp[T, S]) (typed.Reader[T, S], error) {
			r, err := src.CreateReader(readerContext[T, S]{op})
			if err != nil {
				return nil, err
			}
			return &sourceReader[T, S]{r: r, out: readerOutput[T, S]{op}}, nil
		},
	}
	n := env.addNode("source", name, 0, typed.Source(hooks, wm.typedStrategy()))
	n.Bounded = src.Boundedness() == Bounded
	n.AssignsWatermarks = wm.generatesWatermarks()
	n.Chaining = graph.ChainHead
	return newStream[T](env, n)
}

// sourceReader is a user's SourceReader as the source operator's Reader.
type sourceReader[T any, S Split] struct {
	r   SourceReader[T, S]
	out readerOutput[T, S]
}

func (a *sourceReader[T, S]) Start(ctx context.Context) error { return a.r.Start(ctx) }
func (a *sourceReader[T, S]) PollNext(ctx context.Context, _ *typed.SourceOp[T, S]) (task.SourceStatus, error) {
	st, err := a.r.PollNext(ctx, &a.out)
	return st.sourceStatus(), err
}
func (a *sourceReader[T, S]) Available() <-chan struct{}          { return a.r.Available() }
func (a *sourceReader[T, S]) AddSplits(splits []S) error          { return a.r.AddSplits(splits) }
func (a *sourceReader[T, S]) NotifyNoMoreSplits()                 { a.r.NotifyNoMoreSplits() }
func (a *sourceReader[T, S]) Close() error                        { return a.r.Close() }
func (a *sourceReader[T, S]) SnapshotState(id int64) ([]S, error) { return a.r.SnapshotState(id) }

// NotifyCheckpointComplete reaches a ReaderCheckpointListener.
func (a *sourceReader[T, S]) NotifyCheckpointComplete(id int64) error {
	if l, ok := a.r.(ReaderCheckpointListener); ok {
		return l.NotifyCheckpointComplete(id)
	}
	return nil
}

// readerContext is the SourceReaderContext of a source subtask.
type readerContext[T any, S Split] struct{ op *typed.SourceOp[T, S] }

func (c readerContext[T, S]) Subtask() int              { return c.op.Subtask() }
func (c readerContext[T, S]) Parallelism() int          { return c.op.Parallelism() }
func (c readerContext[T, S]) Clock() Clock              { return c.op.ProcessClock() }
func (c readerContext[T, S]) SendSplitRequest()         { c.op.SendSplitRequest() }
func (c readerContext[T, S]) FileSystems() *fs.Resolver { return c.op.FileSystems() }
func (c readerContext[T, S]) MetricGroup() MetricGroup  { return gauges{c.op.Gauges()} }

// gauges is the MetricGroup of a subtask.
type gauges struct{ g *task.Gauges }

func (g gauges) SetGauge(name string, v float64) { g.g.Set(name, v) }
func (g gauges) RemoveGauge(name string)         { g.g.Remove(name) }

// readerOutput is the ReaderOutput of a source subtask.
type readerOutput[T any, S Split] struct{ op *typed.SourceOp[T, S] }

func (o *readerOutput[T, S]) Collect(v T, ts Timestamp) { o.op.Collect(v, int64(ts)) }
func (o *readerOutput[T, S]) ForSplit(id string) SplitOutput[T] {
	return splitOutput[T, S]{o.op.ForSplit(id)}
}
func (o *readerOutput[T, S]) ReleaseSplit(id string) { o.op.ReleaseSplit(id) }

type splitOutput[T any, S Split] struct{ o *typed.SplitOut[T, S] }

func (o splitOutput[T, S]) Collect(v T, ts Timestamp) { o.o.Collect(v, int64(ts)) }

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

// ReaderCheckpointListener is implemented by readers that act when a
// checkpoint completes (a Kafka reader commits offsets).
type ReaderCheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}
