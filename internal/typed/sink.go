package typed

import (
	"context"
	"fmt"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/pendingcommit"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Writer writes the records of one sink subtask; stream adapts its
// SinkWriter to it. PrepareCommit is only called for a two-phase-commit
// sink (one with a committer).
type Writer[T, C any] interface {
	Write(ctx context.Context, v T, ts int64) error
	Flush(ctx context.Context, endOfInput bool) error
	PrepareCommit(ctx context.Context) ([]C, error)
	Close() error
}

// Committer commits what writers pre-committed; its method set is
// stream's Committer's.
type Committer[C any] interface {
	Commit(ctx context.Context, committables []C) error
	Close() error
}

// SinkEnv is a sink writer's (and committer's) view of its subtask.
type SinkEnv struct{ ctx *task.Context }

func (e *SinkEnv) Subtask() int              { return e.ctx.Subtask }
func (e *SinkEnv) Parallelism() int          { return e.ctx.Parallelism }
func (e *SinkEnv) JobName() string           { return e.ctx.Job }
func (e *SinkEnv) NowMillis() int64          { return e.ctx.Clock.NowMillis() }
func (e *SinkEnv) FileSystems() *fs.Resolver { return e.ctx.FileSystems }
func (e *SinkEnv) Gauges() *task.Gauges      { return &e.ctx.Metrics().Gauges }

// RegisterProcessingTimer runs fn on the task goroutine once processing
// time reaches at; the returned function cancels it.
func (e *SinkEnv) RegisterProcessingTimer(at int64, fn func(now int64) error) func() {
	return e.ctx.RegisterProcessingTimer(at, fn)
}

// SinkHooks make one subtask's writer and, for a two-phase-commit sink,
// its committer (NewCommitter nil: records are only written and flushed).
type SinkHooks[T, C any] struct {
	NewWriter    func(env *SinkEnv) (Writer[T, C], error)
	NewCommitter func(env *SinkEnv) (Committer[C], error)
}

// Sink is the sink operator: it writes every record, flushes at
// checkpoints and the end of input and, with a committer, pre-commits
// at every checkpoint barrier and commits once the checkpoint is
// complete (two-phase commit, committables kept in the checkpoint).
func Sink[T, C any](hooks SinkHooks[T, C]) *Factory[T] {
	return &Factory[T]{Make: func(ctx *task.Context, _ task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&sinkOp[T, C]{ctx: ctx, sink: hooks})
	}}
}

type sinkOp[T, C any] struct {
	ctx       *task.Context
	run       context.Context // the task's, for the writer and committer
	sink      SinkHooks[T, C]
	env       SinkEnv
	w         Writer[T, C]
	committer Committer[C]
	// ledger holds the pre-committed committables by checkpoint until that
	// checkpoint completes, and those of a restored checkpoint, committed
	// (again, idempotently) at Open.
	ledger pendingcommit.Ledger[C]
}

// Open commits the pre-commits of the restored checkpoint first: a new
// writer may fence what it finds lingering (a Kafka transactional producer
// aborts the open transactions of its ids).
func (s *sinkOp[T, C]) Open() error {
	s.run = s.ctx.Ctx()
	s.env = SinkEnv{ctx: s.ctx}
	if s.sink.NewCommitter != nil {
		c, err := s.sink.NewCommitter(&s.env)
		if err != nil {
			return err
		}
		s.committer = c
		if restored := s.ledger.TakeRestored(); len(restored) > 0 {
			if err := c.Commit(s.run, restored); err != nil {
				return fmt.Errorf("committing restored pre-commits: %w", err)
			}
		}
	}
	w, err := s.sink.NewWriter(&s.env)
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

func (s *sinkOp[T, C]) ProcessElement(v T, ts int64) error { return s.w.Write(s.run, v, ts) }
func (s *sinkOp[T, C]) ProcessWatermark(int64) error       { return nil }

// prepare flushes the writer and, for a two-phase-commit sink, pre-commits.
func (s *sinkOp[T, C]) prepare(endOfInput bool) ([]C, error) {
	if err := s.w.Flush(s.run, endOfInput); err != nil {
		return nil, err
	}
	if s.committer == nil {
		return nil, nil
	}
	return s.w.PrepareCommit(s.run)
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
	s.ledger.Add(id, cs)
	entries, err := s.ledger.Snapshot()
	if err != nil {
		return nil, false, err
	}
	return entries, false, nil
}

// RestoreOperatorState implements task.OperatorStateful.
func (s *sinkOp[T, C]) RestoreOperatorState(entries [][]byte) error {
	if err := s.ledger.Restore(entries); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

// NotifyCheckpointComplete implements task.CheckpointListener: commit what
// was pre-committed up to checkpoint id.
func (s *sinkOp[T, C]) NotifyCheckpointComplete(id int64) error {
	if s.committer == nil {
		return nil
	}
	due := s.ledger.Due(id)
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
		s.ledger.Add(task.FinalCheckpoint, cs)
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
