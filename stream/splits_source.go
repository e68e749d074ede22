package stream

import (
	"context"

	"github.com/sluice/sluice/internal/typed"
)

// SplitRecords is one split of a FromSplits source: its records, read in
// order, each with its source timestamp.
type SplitRecords[T any] struct {
	Records []Record[T]
	// Open keeps the split assigned after its last record instead of
	// finishing it: it then has no records and holds back the watermark
	// until WithIdleness marks it idle. A source with an open split never
	// ends (cancel the job).
	Open bool
}

// FromSplits is a source of several splits of given records, for tests of
// what happens per split: watermarks generated per split, idle splits,
// splits of different speeds. Split i has the ID strconv.Itoa(i) and goes
// to subtask i mod p of the source's p subtasks.
//
// A record is read once the task's processing time reaches its timestamp
// (records with NoTimestamp at once), so with a manual clock (WithClock) a
// test decides when each split produces what; with the system clock past
// timestamps are read at once. A subtask reads its splits in turn, one
// record at a time, in timestamp order within each split.
func FromSplits[T any](env *Environment, splits []SplitRecords[T], wm WatermarkStrategy[T]) DataStream[T] {
	src := &splitsSource[T]{splits: make([]SplitRecords[T], len(splits))}
	for i, s := range splits {
		src.splits[i] = SplitRecords[T]{Records: append([]Record[T](nil), s.Records...), Open: s.Open}
		src.open = src.open || s.Open
	}
	return FromSource[T, IndexSplit](env, src, wm, "Splits Source")
}

type splitsSource[T any] struct {
	splits []SplitRecords[T]
	open   bool // some split is open: the source never ends
}

func (s *splitsSource[T]) Boundedness() Boundedness {
	if s.open {
		return Unbounded
	}
	return Bounded
}

func (s *splitsSource[T]) CreateEnumerator(ctx SplitEnumeratorContext[IndexSplit]) (SplitEnumerator[IndexSplit], error) {
	e := &staticEnumerator[IndexSplit]{ctx: ctx, owner: indexSplitOwner(ctx.Parallelism())}
	for i, sp := range s.splits {
		e.pending = append(e.pending, IndexSplit{ID: i, End: int64(len(sp.Records)), Stride: 1})
	}
	return e, nil
}

// RestoreEnumeratorState implements RestorableSource.
func (s *splitsSource[T]) RestoreEnumeratorState(ctx SplitEnumeratorContext[IndexSplit], state []byte) (SplitEnumerator[IndexSplit], error) {
	pending, err := typed.DecodeAll[IndexSplit](state)
	if err != nil {
		return nil, err
	}
	return &staticEnumerator[IndexSplit]{ctx: ctx, pending: pending, owner: indexSplitOwner(ctx.Parallelism())}, nil
}

func (s *splitsSource[T]) CreateReader(ctx SourceReaderContext) (SourceReader[T, IndexSplit], error) {
	return &splitsReader[T]{src: s, ctx: ctx}, nil
}

type splitsReader[T any] struct {
	src    *splitsSource[T]
	ctx    SourceReaderContext
	splits []IndexSplit // assigned; an open split stays after its last record
	noMore bool
	asked  bool
	wait   <-chan struct{}
	stop   func()
}

func (r *splitsReader[T]) Start(context.Context) error {
	r.ctx.SendSplitRequest()
	r.asked = true
	return nil
}

func (r *splitsReader[T]) AddSplits(splits []IndexSplit) error {
	r.splits = append(r.splits, splits...)
	r.asked = false
	r.wait = nil // new splits: poll again
	return nil
}

func (r *splitsReader[T]) NotifyNoMoreSplits() { r.noMore = true }

func (r *splitsReader[T]) SnapshotState(int64) ([]IndexSplit, error) {
	return append([]IndexSplit(nil), r.splits...), nil
}

func (r *splitsReader[T]) Available() <-chan struct{} { return r.wait }

func (r *splitsReader[T]) Close() error {
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	return nil
}

func (r *splitsReader[T]) PollNext(_ context.Context, out ReaderOutput[T]) (InputStatus, error) {
	if !r.noMore && !r.asked {
		r.ctx.SendSplitRequest() // until the enumerator says there are no more
		r.asked = true
	}
	now := r.ctx.Clock().NowMillis()
	next := int64(MaxWatermark) // the earliest timestamp not read yet
	emitted := 0
	for progress := true; progress && emitted < pollBatch; {
		progress = false
		for i := range r.splits {
			sp := &r.splits[i]
			if sp.Next >= sp.End {
				continue
			}
			rec := r.src.splits[sp.ID].Records[sp.Next]
			if rec.Timestamp != NoTimestamp && rec.Timestamp > Timestamp(now) {
				next = min(next, int64(rec.Timestamp))
				continue
			}
			out.ForSplit(sp.SplitID()).Collect(rec.Value, rec.Timestamp)
			sp.Next++
			emitted++
			progress = true
		}
	}
	// Finished splits that are not open are released.
	kept := r.splits[:0]
	for _, sp := range r.splits {
		if sp.Next >= sp.End && !r.src.splits[sp.ID].Open {
			out.ReleaseSplit(sp.SplitID())
			continue
		}
		kept = append(kept, sp)
	}
	r.splits = kept
	switch {
	case emitted > 0:
		return MoreAvailable, nil
	case len(r.splits) == 0 && r.noMore:
		return EndOfInput, nil
	}
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	r.wait = nil
	if next != int64(MaxWatermark) {
		r.wait, r.stop = r.ctx.Clock().AfterMillis(next)
	}
	return NothingAvailable, nil
}
