package stream

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/typed"
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
	// MetricGroup is where the writer (or committer) publishes metrics of
	// its own.
	MetricGroup() MetricGroup
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
	hooks := typed.SinkHooks[T, C]{NewWriter: func(env *typed.SinkEnv) (typed.Writer[T, C], error) {
		w, err := sink.CreateWriter(sinkContext{env})
		if err != nil {
			return nil, err
		}
		cw, _ := w.(CommittingWriter[T, C])
		return sinkWriter[T, C]{w, cw}, nil
	}}
	if newCommitter != nil {
		hooks.NewCommitter = func(env *typed.SinkEnv) (typed.Committer[C], error) {
			if cc, ok := sink.(CommitterInContext[C]); ok {
				return cc.CreateCommitterIn(sinkContext{env})
			}
			return newCommitter()
		}
	}
	return oneInput(in, "sink", name, typed.Sink(hooks))
}

// sinkContext is the SinkContext of a sink subtask.
type sinkContext struct{ env *typed.SinkEnv }

func (s sinkContext) Subtask() int              { return s.env.Subtask() }
func (s sinkContext) Parallelism() int          { return s.env.Parallelism() }
func (s sinkContext) JobName() string           { return s.env.JobName() }
func (s sinkContext) FileSystems() *fs.Resolver { return s.env.FileSystems() }
func (s sinkContext) MetricGroup() MetricGroup  { return gauges{s.env.Gauges()} }

// CurrentProcessingTime implements SinkContext.
func (s sinkContext) CurrentProcessingTime() Timestamp { return Timestamp(s.env.NowMillis()) }

// RegisterProcessingTimer implements SinkContext.
func (s sinkContext) RegisterProcessingTimer(at Timestamp, fn func(now Timestamp) error) func() {
	return s.env.RegisterProcessingTimer(int64(at), func(now int64) error { return fn(Timestamp(now)) })
}

// sinkWriter is a user's SinkWriter as the sink operator's Writer.
type sinkWriter[T, C any] struct {
	w  SinkWriter[T]
	cw CommittingWriter[T, C] // nil: not a committing writer
}

func (w sinkWriter[T, C]) Write(ctx context.Context, v T, ts int64) error {
	return w.w.Write(ctx, v, Timestamp(ts))
}
func (w sinkWriter[T, C]) Flush(ctx context.Context, endOfInput bool) error {
	return w.w.Flush(ctx, endOfInput)
}
func (w sinkWriter[T, C]) Close() error { return w.w.Close() }

func (w sinkWriter[T, C]) PrepareCommit(ctx context.Context) ([]C, error) {
	if w.cw == nil {
		return nil, fmt.Errorf("stream: two-phase-commit sink writer %T does not implement CommittingWriter", w.w)
	}
	return w.cw.PrepareCommit(ctx)
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
