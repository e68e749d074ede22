package stream

import (
	"context"
	"slices"
	"strconv"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/typed"
)

// pollBatch bounds the records a built-in reader emits per PollNext.
const pollBatch = 256

// IndexSplit is the record indexes Next, Next+Stride, ... below End that
// one reader of a built-in collection or generator source produces. Next
// is the split's position.
type IndexSplit struct {
	ID     int
	Next   int64
	End    int64 // exclusive; -1 for unbounded
	Stride int64
}

// SplitID implements Split.
func (s IndexSplit) SplitID() string { return strconv.Itoa(s.ID) }

// indexSource serves records by index from fn, split into ranges.
type indexSource[T any] struct {
	count   int64 // -1: unbounded
	rate    float64
	fn      func(i int64) T
	nsplits func(parallelism int) int
	// interleave gives split i the indexes i, i+n, i+2n, ... (so event
	// time advances evenly over the splits of a generator) instead of a
	// contiguous range (a collection keeps its order within a split).
	interleave bool
}

func (s *indexSource[T]) Boundedness() Boundedness {
	if s.count < 0 {
		return Unbounded
	}
	return Bounded
}

func (s *indexSource[T]) CreateEnumerator(ctx SplitEnumeratorContext[IndexSplit]) (SplitEnumerator[IndexSplit], error) {
	n := s.nsplits(ctx.Parallelism())
	e := &staticEnumerator[IndexSplit]{ctx: ctx, owner: indexSplitOwner(ctx.Parallelism())}
	for i := 0; i < n; i++ {
		switch {
		case s.count < 0 || s.interleave:
			if s.count < 0 || int64(i) < s.count {
				e.pending = append(e.pending, IndexSplit{ID: i, Next: int64(i), End: s.count, Stride: int64(n)})
			}
		default:
			start := s.count * int64(i) / int64(n)
			end := s.count * int64(i+1) / int64(n)
			if end > start {
				e.pending = append(e.pending, IndexSplit{ID: i, Next: start, End: end, Stride: 1})
			}
		}
	}
	return e, nil
}

// RestoreEnumeratorState implements RestorableSource.
func (s *indexSource[T]) RestoreEnumeratorState(ctx SplitEnumeratorContext[IndexSplit], state []byte) (SplitEnumerator[IndexSplit], error) {
	pending, err := typed.DecodeAll[IndexSplit](state)
	if err != nil {
		return nil, err
	}
	return &staticEnumerator[IndexSplit]{ctx: ctx, pending: pending, owner: indexSplitOwner(ctx.Parallelism())}, nil
}

// indexSplitOwner gives split i to subtask i mod p, so which subtask
// produces which records does not depend on which asks first.
func indexSplitOwner(p int) func(IndexSplit) int {
	return func(s IndexSplit) int { return s.ID % p }
}

func (s *indexSource[T]) CreateReader(ctx SourceReaderContext) (SourceReader[T, IndexSplit], error) {
	return &indexReader[T]{src: s, ctx: ctx}, nil
}

// staticEnumerator hands out a fixed list of splits on request: to the
// subtask that asks first, or, with owner, each split only to its owner.
type staticEnumerator[S Split] struct {
	ctx     SplitEnumeratorContext[S]
	pending []S
	owner   func(S) int
}

func (e *staticEnumerator[S]) Start() error        { return nil }
func (e *staticEnumerator[S]) AddReader(int) error { return nil }
func (e *staticEnumerator[S]) Close() error        { return nil }
func (e *staticEnumerator[S]) HandleSplitRequest(subtask int) error {
	for i, s := range e.pending {
		if e.owner != nil && e.owner(s) != subtask {
			continue
		}
		e.pending = slices.Delete(e.pending, i, i+1)
		e.ctx.AssignSplits(subtask, []S{s})
		return nil
	}
	e.ctx.SignalNoMoreSplits(subtask)
	return nil
}

// SnapshotEnumerator implements CheckpointedEnumerator: the splits not
// assigned yet.
func (e *staticEnumerator[S]) SnapshotEnumerator(int64) ([]byte, error) {
	return typed.EncodeAll(e.pending)
}

func restoreStatic[S Split](ctx SplitEnumeratorContext[S], state []byte) (SplitEnumerator[S], error) {
	pending, err := typed.DecodeAll[S](state)
	if err != nil {
		return nil, err
	}
	return &staticEnumerator[S]{ctx: ctx, pending: pending}, nil
}

func (e *staticEnumerator[S]) AddSplitsBack(splits []S, _ int) error {
	e.pending = append(e.pending, splits...)
	return nil
}

type indexReader[T any] struct {
	src    *indexSource[T]
	ctx    SourceReaderContext
	splits []IndexSplit
	noMore bool
	asked  bool
	pacer  clock.Pacer // the rate over this subtask's share
	wait   <-chan struct{}
}

func (r *indexReader[T]) Start(context.Context) error {
	r.ctx.SendSplitRequest()
	r.asked = true
	r.pacer = clock.Pacer{PerSecond: r.src.rate / float64(r.ctx.Parallelism())}
	return nil
}

func (r *indexReader[T]) AddSplits(splits []IndexSplit) error {
	r.splits = append(r.splits, splits...)
	r.asked = false
	return nil
}

func (r *indexReader[T]) NotifyNoMoreSplits() { r.noMore = true }

func (r *indexReader[T]) SnapshotState(int64) ([]IndexSplit, error) {
	return append([]IndexSplit(nil), r.splits...), nil
}

func (r *indexReader[T]) Available() <-chan struct{} { return r.wait }
func (r *indexReader[T]) Close() error               { return nil }

// permits is how many records the rate limit allows now.
func (r *indexReader[T]) permits() int64 {
	n, next := r.pacer.Allow(r.ctx.Clock().NowMillis(), pollBatch)
	if n == 0 {
		r.wait, _ = r.ctx.Clock().AfterMillis(next)
	}
	return n
}

func (r *indexReader[T]) PollNext(_ context.Context, out ReaderOutput[T]) (InputStatus, error) {
	if len(r.splits) == 0 {
		if r.noMore {
			return EndOfInput, nil
		}
		if !r.asked {
			r.ctx.SendSplitRequest()
			r.asked = true
		}
		r.wait = nil
		return NothingAvailable, nil
	}
	n := r.permits()
	if n == 0 {
		return NothingAvailable, nil
	}
	sp := &r.splits[0]
	so := out.ForSplit(sp.SplitID())
	for ; n > 0 && (sp.End < 0 || sp.Next < sp.End); n-- {
		so.Collect(r.src.fn(sp.Next), NoTimestamp)
		sp.Next += sp.Stride
		r.pacer.Took(1)
	}
	if sp.End >= 0 && sp.Next >= sp.End {
		out.ReleaseSplit(sp.SplitID())
		r.splits = r.splits[1:]
	}
	return MoreAvailable, nil
}

// FromSlice is a bounded source of the given records, split into
// contiguous ranges over the source's subtasks: subtask s of p reads the
// s-th range.
func FromSlice[T any](env *Environment, data []T) DataStream[T] {
	data = append([]T(nil), data...)
	src := &indexSource[T]{count: int64(len(data)), fn: func(i int64) T { return data[i] }, nsplits: func(p int) int { return p }}
	return FromSource[T, IndexSplit](env, src, NoWatermarks[T](), "Collection Source")
}

// FromElements is FromSlice of its arguments.
func FromElements[T any](env *Environment, data ...T) DataStream[T] { return FromSlice(env, data) }

// DataGen is a deterministic generator source: record i is fn(i) for i in
// [0, count) (count < 0: unbounded), at most ratePerSecond records per
// second over all subtasks (≤ 0: unlimited). The same count gives the same
// records at any parallelism; subtask s of the source's p subtasks
// generates i = s, s+p, s+2p, ... (split s, which only subtask s is given;
// after a restore at another parallelism, split s goes to subtask s mod p).
func DataGen[T any](env *Environment, count int64, ratePerSecond float64, fn func(i int64) T) DataStream[T] {
	src := &indexSource[T]{count: count, rate: ratePerSecond, fn: fn, nsplits: func(p int) int { return p }, interleave: true}
	return FromSource[T, IndexSplit](env, src, NoWatermarks[T](), "DataGen Source")
}

// DataGenWithWatermarks is DataGen with a watermark strategy.
func DataGenWithWatermarks[T any](env *Environment, count int64, ratePerSecond float64, fn func(i int64) T, wm WatermarkStrategy[T]) DataStream[T] {
	src := &indexSource[T]{count: count, rate: ratePerSecond, fn: fn, nsplits: func(p int) int { return p }, interleave: true}
	return FromSource[T, IndexSplit](env, src, wm, "DataGen Source")
}
