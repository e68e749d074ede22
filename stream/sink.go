package stream

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Sink writes a stream out of the job. Each subtask gets its own writer.
type Sink[T any] interface {
	CreateWriter(ctx SinkContext) (SinkWriter[T], error)
}

// SinkContext is a writer's view of its subtask.
type SinkContext interface {
	Subtask() int
	Parallelism() int
	// JobName is the name passed to Execute.
	JobName() string
	// CurrentProcessingTime is the task clock's time.
	CurrentProcessingTime() Timestamp
	// RegisterProcessingTimer runs fn on the task goroutine (never
	// concurrently with the writer's methods) once processing time reaches
	// at; the returned function cancels it.
	RegisterProcessingTimer(at Timestamp, fn func(now Timestamp) error) (cancel func())
	// FileSystems resolves file URIs by scheme: file:// and plain paths
	// everywhere, hdfs:// in a cluster's workers.
	FileSystems() *fs.Resolver
}

// SinkWriter writes the records of one subtask. Its methods run on the
// subtask's goroutine; ctx is the subtask's context, cancelled when the
// subtask is cancelled or torn down, so a call blocked on I/O (a full
// producer buffer, a flush) returns.
type SinkWriter[T any] interface {
	// Write takes a record and its event timestamp (or NoTimestamp).
	Write(ctx context.Context, v T, ts Timestamp) error
	// Flush makes written records durable or visible as far as the sink's
	// guarantee requires; endOfInput is set when no record will follow.
	Flush(ctx context.Context, endOfInput bool) error
	Close() error
}

// CommittingWriter is a SinkWriter of a two-phase-commit sink: at a
// checkpoint barrier (and at the end of input) the writer pre-commits and
// returns committables (e.g. a transaction, a pending file); they are
// committed only once the checkpoint is complete everywhere.
type CommittingWriter[T, C any] interface {
	SinkWriter[T]
	PrepareCommit(ctx context.Context) ([]C, error)
}

// Committer commits what writers pre-committed. Commit must be idempotent:
// after a failure, committables restored from a checkpoint are committed
// again. It runs on the sink subtask's goroutine; ctx is cancelled when the
// subtask is cancelled or torn down.
type Committer[C any] interface {
	Commit(ctx context.Context, committables []C) error
	Close() error
}

// TwoPhaseCommitSink is a sink with exactly-once delivery through
// pre-commit and commit.
type TwoPhaseCommitSink[T, C any] interface {
	Sink[T]
	CreateCommitter() (Committer[C], error)
}

// CommitterInContext is implemented by a two-phase-commit sink whose
// committer needs its subtask's context (as Flink's createCommitter takes a
// CommitterInitContext): the file sink resolves its base URI in the job's
// file systems. In a job, CreateCommitterIn is called instead of
// CreateCommitter.
type CommitterInContext[C any] interface {
	CreateCommitterIn(ctx SinkContext) (Committer[C], error)
}

// SinkTo writes the stream to sink.
func SinkTo[T any](in DataStream[T], sink Sink[T]) DataStream[T] {
	return addSink[T, struct{}](in, "Sink", sink, nil)
}

// SinkToCommitting writes the stream to a two-phase-commit sink.
func SinkToCommitting[T, C any](in DataStream[T], sink TwoPhaseCommitSink[T, C]) DataStream[T] {
	return addSink[T, C](in, "Sink", sink, sink.CreateCommitter)
}

func addSink[T, C any](in DataStream[T], name string, sink Sink[T], newCommitter func() (Committer[C], error)) DataStream[T] {
	f := &factory[T]{Make: func(ctx *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		op := &sinkOp[T, C]{ctx: ctx, sink: sink, newCommitter: newCommitter}
		return op, []any{op}, nil
	}}
	s := oneInput(in, "sink", name, f)
	return s
}

type sinkOp[T, C any] struct {
	ctx          *task.Context
	run          context.Context // the task's, for the writer and committer
	sink         Sink[T]
	newCommitter func() (Committer[C], error)
	w            SinkWriter[T]
	committer    Committer[C]
	// pending are pre-committed committables by checkpoint, committed when
	// that checkpoint completes.
	pending []pendingCommit[C]
	// restored committables belong to a completed checkpoint: committed
	// (again, idempotently) at Open.
	restored []C
}

type pendingCommit[C any] struct {
	id int64
	cs []C
}

func (s *sinkOp[T, C]) Subtask() int     { return s.ctx.Subtask }
func (s *sinkOp[T, C]) Parallelism() int { return s.ctx.Parallelism }
func (s *sinkOp[T, C]) JobName() string  { return s.ctx.Job }

// CurrentProcessingTime implements SinkContext.
func (s *sinkOp[T, C]) CurrentProcessingTime() Timestamp { return Timestamp(s.ctx.Clock.NowMillis()) }

// FileSystems implements SinkContext.
func (s *sinkOp[T, C]) FileSystems() *fs.Resolver { return s.ctx.FileSystems }

// RegisterProcessingTimer implements SinkContext.
func (s *sinkOp[T, C]) RegisterProcessingTimer(at Timestamp, fn func(now Timestamp) error) func() {
	return s.ctx.RegisterProcessingTimer(int64(at), func(now int64) error { return fn(Timestamp(now)) })
}

// Open commits the pre-commits of the restored checkpoint first: a new
// writer may fence what it finds lingering (a Kafka transactional producer
// aborts the open transactions of its ids).
func (s *sinkOp[T, C]) Open() error {
	s.run = s.ctx.Ctx()
	if s.newCommitter != nil {
		newCommitter := s.newCommitter
		if cc, ok := s.sink.(CommitterInContext[C]); ok {
			newCommitter = func() (Committer[C], error) { return cc.CreateCommitterIn(s) }
		}
		c, err := newCommitter()
		if err != nil {
			return err
		}
		s.committer = c
		if len(s.restored) > 0 {
			if err := c.Commit(s.run, s.restored); err != nil {
				return fmt.Errorf("committing restored pre-commits: %w", err)
			}
			s.restored = nil
		}
	}
	w, err := s.sink.CreateWriter(s)
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

func (s *sinkOp[T, C]) ProcessElement(v T, ts int64) error { return s.w.Write(s.run, v, Timestamp(ts)) }
func (s *sinkOp[T, C]) ProcessWatermark(int64) error       { return nil }

// prepare flushes the writer and, for a two-phase-commit sink, pre-commits.
func (s *sinkOp[T, C]) prepare(endOfInput bool) ([]C, error) {
	if err := s.w.Flush(s.run, endOfInput); err != nil {
		return nil, err
	}
	if s.committer == nil {
		return nil, nil
	}
	cw, ok := s.w.(CommittingWriter[T, C])
	if !ok {
		return nil, fmt.Errorf("stream: two-phase-commit sink writer %T does not implement CommittingWriter", s.w)
	}
	return cw.PrepareCommit(s.run)
}

// SnapshotOperatorState implements task.OperatorStateful: flush, pre-commit
// at the barrier, and keep every committable not yet committed in the
// checkpoint.
func (s *sinkOp[T, C]) SnapshotOperatorState(id int64) ([][]byte, bool, error) {
	cs, err := s.prepare(false)
	if err != nil {
		return nil, false, err
	}
	if s.committer == nil {
		return nil, false, nil
	}
	s.pending = append(s.pending, pendingCommit[C]{id, cs})
	c, err := codec.For[C]()
	if err != nil {
		return nil, false, err
	}
	var entries [][]byte
	for _, p := range s.pending {
		for _, x := range p.cs {
			entries = append(entries, c.Append(nil, x))
		}
	}
	return entries, false, nil
}

// RestoreOperatorState implements task.OperatorStateful.
func (s *sinkOp[T, C]) RestoreOperatorState(entries [][]byte) error {
	c, err := codec.For[C]()
	if err != nil {
		return err
	}
	for _, e := range entries {
		x, _, err := c.Decode(e)
		if err != nil {
			return fmt.Errorf("sink committable: %w", err)
		}
		s.restored = append(s.restored, x)
	}
	return nil
}

// NotifyCheckpointComplete implements task.CheckpointListener: commit what
// was pre-committed up to checkpoint id.
func (s *sinkOp[T, C]) NotifyCheckpointComplete(id int64) error {
	if s.committer == nil {
		return nil
	}
	var due []C
	kept := s.pending[:0]
	for _, p := range s.pending {
		if p.id <= id {
			due = append(due, p.cs...)
		} else {
			kept = append(kept, p)
		}
	}
	s.pending = kept
	if len(due) == 0 {
		return nil
	}
	return s.committer.Commit(s.run, due)
}

// Finish flushes at the end of input and pre-commits. Without checkpoints
// the commit follows at once; with checkpoints it waits until the whole
// job has finished (task.FinalCheckpoint), so a failure elsewhere that
// rewinds the job to its last checkpoint never finds output committed
// twice.
func (s *sinkOp[T, C]) Finish() error {
	cs, err := s.prepare(true)
	if err != nil || s.committer == nil {
		return err
	}
	if s.ctx.Checkpointing() {
		s.pending = append(s.pending, pendingCommit[C]{task.FinalCheckpoint, cs})
		return nil
	}
	return s.committer.Commit(s.run, cs)
}

func (s *sinkOp[T, C]) Close() error {
	var err error
	if s.w != nil {
		err = s.w.Close()
	}
	if s.committer != nil {
		if cerr := s.committer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// printSink writes records to w, one per line, prefixed with the subtask
// number ("2> ...") when the sink runs in parallel, as Flink's print does.
type printSink[T any] struct {
	w  io.Writer
	mu *sync.Mutex
}

type printWriter[T any] struct {
	s      *printSink[T]
	prefix string
}

func (p *printSink[T]) CreateWriter(ctx SinkContext) (SinkWriter[T], error) {
	pw := &printWriter[T]{s: p}
	if ctx.Parallelism() > 1 {
		pw.prefix = fmt.Sprintf("%d> ", ctx.Subtask()+1)
	}
	return pw, nil
}

func (p *printWriter[T]) Write(_ context.Context, v T, _ Timestamp) error {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	_, err := fmt.Fprintf(p.s.w, "%s%v\n", p.prefix, v)
	return err
}
func (p *printWriter[T]) Flush(context.Context, bool) error { return nil }
func (p *printWriter[T]) Close() error                      { return nil }

// Print writes every record to standard output.
func Print[T any](in DataStream[T]) DataStream[T] { return PrintTo(in, os.Stdout) }

// PrintTo writes every record to w, one line each.
func PrintTo[T any](in DataStream[T], w io.Writer) DataStream[T] {
	return addSink[T, struct{}](in, "Print", &printSink[T]{w: w, mu: &sync.Mutex{}}, nil).Name("Print to Std. Out")
}

type discardSink[T any] struct{}
type discardWriter[T any] struct{}

func (discardSink[T]) CreateWriter(SinkContext) (SinkWriter[T], error) {
	return discardWriter[T]{}, nil
}
func (discardWriter[T]) Write(context.Context, T, Timestamp) error { return nil }
func (discardWriter[T]) Flush(context.Context, bool) error         { return nil }
func (discardWriter[T]) Close() error                              { return nil }

// Discard consumes the stream and drops every record.
func Discard[T any](in DataStream[T]) DataStream[T] {
	return addSink[T, struct{}](in, "Discard", discardSink[T]{}, nil).Name("Discard")
}

// Record is a value with its event timestamp.
type Record[T any] struct {
	Value     T
	Timestamp Timestamp
}

// Collected gathers a stream's records in memory (embedded local mode only;
// meant for tests and small results).
type Collected[T any] struct {
	mu struct {
		sync.Mutex
		recs []Record[T]
	}
}

// Values returns the collected values in arrival order.
func (c *Collected[T]) Values() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]T, len(c.mu.recs))
	for i, r := range c.mu.recs {
		out[i] = r.Value
	}
	return out
}

// Records returns the collected records with their timestamps.
func (c *Collected[T]) Records() []Record[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record[T](nil), c.mu.recs...)
}

func (c *Collected[T]) CreateWriter(SinkContext) (SinkWriter[T], error) {
	return &collectWriter[T]{c: c}, nil
}

type collectWriter[T any] struct {
	c   *Collected[T]
	buf []Record[T]
}

func (w *collectWriter[T]) Write(ctx context.Context, v T, ts Timestamp) error {
	w.buf = append(w.buf, Record[T]{v, ts})
	if len(w.buf) >= 1024 {
		w.Flush(ctx, false)
	}
	return nil
}

func (w *collectWriter[T]) Flush(context.Context, bool) error {
	w.c.mu.Lock()
	w.c.mu.recs = append(w.c.mu.recs, w.buf...)
	w.c.mu.Unlock()
	w.buf = w.buf[:0]
	return nil
}
func (w *collectWriter[T]) Close() error { return w.Flush(context.Background(), true) }

// Collect gathers the stream's records in memory; read them after Execute.
func Collect[T any](in DataStream[T]) *Collected[T] {
	c := &Collected[T]{}
	addSink[T, struct{}](in, "Collect", c, nil).Name("Collect")
	return c
}
