package typed

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/task"
)

// ErrAsyncTimeout is stream's sentinel for an async request that neither
// completed within its timeout nor was completed by the function's
// Timeout callback.
var ErrAsyncTimeout = errors.New("stream: async request timed out")

// AsyncFns are one subtask's async function: Invoke starts a request,
// Timeout (may be nil) may complete one that timed out.
type AsyncFns[I, O any] struct {
	Invoke  func(ctx context.Context, v I, r *AsyncRequest[I, O])
	Timeout func(v I, r *AsyncRequest[I, O])
}

// AsyncWait is Flink's async wait operator: it hands every record to
// fns' Invoke, and emits the results in input order (ordered) or as they
// complete, never across a watermark. timeout bounds each request in
// processing time (≤ 0: none); capacity bounds the records in flight.
func AsyncWait[I, O any](fns func() AsyncFns[I, O], timeout time.Duration, capacity int, ordered bool) *Factory[O] {
	return &Factory[O]{Make: func(ctx *task.Context, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &asyncOp[I, O]{
			ctx: ctx, out: out, fn: f.Invoke, onTimeout: f.Timeout, capacity: capacity, ordered: ordered,
			timeout: timeout, timeoutMs: timeout.Milliseconds(),
		}
		if timeout > 0 && op.timeoutMs == 0 {
			op.timeoutMs = 1 // processing time has millisecond resolution
		}
		return Single(op)
	}}
}

// asyncOp runs the requests of one subtask. All its fields are used on the
// task goroutine only; requests report back through Context.Post.
type asyncOp[I, O any] struct {
	ctx       *task.Context
	out       task.Output[O]
	fn        func(ctx context.Context, v I, r *AsyncRequest[I, O])
	onTimeout func(v I, r *AsyncRequest[I, O]) // nil: a timeout fails the job
	timeout   time.Duration
	timeoutMs int64 // ≤ 0: no timeout
	capacity  int
	ordered   bool

	reqCtx context.Context // parent of every request's context
	cancel context.CancelFunc

	// inFlight counts records taken and not yet emitted.
	inFlight int
	// queue holds, in ordered mode, records and watermarks in input order.
	queue asyncFIFO[asyncEntry[I, O]]
	// segs holds, in unordered mode, the records between watermarks.
	segs asyncFIFO[*asyncSegment[I, O]]

	// deadlines holds the requests in start order, which is deadline
	// order; one processing-time timer is armed for the earliest.
	deadlines    asyncFIFO[*AsyncRequest[I, O]]
	lastDeadline int64
	timerAt      int64
	cancelTimer  func()

	// yielding is set while the operator runs the mailbox waiting for a
	// slot. Input that arrives meanwhile (from timers or mail of operators
	// chained before this one) waits in backlog, so it keeps its order.
	yielding bool
	backlog  []asyncInput[I]
	// unemitted lists, in input order, the requests whose results have not
	// been emitted (compacted at checkpoints); restored holds the inputs of
	// such requests from a checkpoint, re-run at Open.
	unemitted []*AsyncRequest[I, O]
	restored  []asyncInput[I]
}

type asyncEntry[I, O any] struct {
	r  *AsyncRequest[I, O] // nil for a watermark
	wm int64
}

type asyncInput[I any] struct {
	v    I
	ts   int64
	wm   int64
	isWM bool
}

// asyncSegment is the records between two watermarks (unordered mode).
type asyncSegment[I, O any] struct {
	pending int                   // requests not completed yet
	done    []*AsyncRequest[I, O] // completed, waiting for the segment to become the head
	wm      int64                 // the watermark that closes the segment
	closed  bool
}

// AsyncRequest is one record's request; its methods are those of
// stream's ResultFuture.
type AsyncRequest[I, O any] struct {
	op       *asyncOp[I, O]
	v        I
	ts       int64
	deadline int64
	cancel   context.CancelFunc
	// completed is set by the first Complete/CompleteExceptionally or by
	// the timeout; it is the only field other goroutines touch.
	completed atomic.Bool

	// Task goroutine only.
	emitted bool
	done    bool
	results []O
	seg     *asyncSegment[I, O]
}

// Complete implements ResultFuture.
func (r *AsyncRequest[I, O]) Complete(results []O) {
	if !r.completed.CompareAndSwap(false, true) {
		return
	}
	r.cancel()
	r.op.ctx.Post(func() error { return r.op.onResult(r, results) })
}

// CompleteExceptionally implements ResultFuture.
func (r *AsyncRequest[I, O]) CompleteExceptionally(err error) {
	if !r.completed.CompareAndSwap(false, true) {
		return
	}
	r.cancel()
	if err == nil {
		err = errors.New("CompleteExceptionally was called with a nil error")
	}
	r.op.ctx.Post(func() error { return fmt.Errorf("stream: async request failed: %w", err) })
}

func (a *asyncOp[I, O]) Open() error {
	a.reqCtx, a.cancel = context.WithCancel(a.ctx.Ctx())
	if !a.ordered {
		a.segs.push(&asyncSegment[I, O]{})
	}
	// Requests in flight at the checkpoint are sent again, as in Flink.
	restored := a.restored
	a.restored = nil
	for _, in := range restored {
		if err := a.ProcessElement(in.v, in.ts); err != nil {
			return err
		}
	}
	return nil
}

// SnapshotOperatorState implements task.OperatorStateful: the inputs of
// every request whose results have not been emitted, and of input waiting
// in the backlog, in order.
func (a *asyncOp[I, O]) SnapshotOperatorState(int64) ([][]byte, bool, error) {
	c, err := codec.For[asyncRecord[I]]()
	if err != nil {
		return nil, false, fmt.Errorf("async I/O in-flight records: %w", err)
	}
	a.compactUnemitted()
	var entries [][]byte
	for _, r := range a.unemitted {
		entries = append(entries, c.Append(nil, asyncRecord[I]{V: r.v, Ts: r.ts}))
	}
	for _, in := range a.backlog {
		if !in.isWM {
			entries = append(entries, c.Append(nil, asyncRecord[I]{V: in.v, Ts: in.ts}))
		}
	}
	return entries, false, nil
}

// compactUnemitted drops the requests whose results were emitted.
func (a *asyncOp[I, O]) compactUnemitted() {
	kept := a.unemitted[:0]
	for _, r := range a.unemitted {
		if !r.emitted {
			kept = append(kept, r)
		}
	}
	clear(a.unemitted[len(kept):])
	a.unemitted = kept
}

// RestoreOperatorState implements task.OperatorStateful.
func (a *asyncOp[I, O]) RestoreOperatorState(entries [][]byte) error {
	c, err := codec.For[asyncRecord[I]]()
	if err != nil {
		return err
	}
	for _, e := range entries {
		r, _, err := c.Decode(e)
		if err != nil {
			return fmt.Errorf("async I/O in-flight record: %w", err)
		}
		a.restored = append(a.restored, asyncInput[I]{v: r.V, ts: r.Ts})
	}
	return nil
}

// asyncRecord is an in-flight input in a checkpoint.
type asyncRecord[I any] struct {
	V  I
	Ts int64
}

func (a *asyncOp[I, O]) ProcessElement(v I, ts int64) error {
	if a.yielding {
		a.backlog = append(a.backlog, asyncInput[I]{v: v, ts: ts})
		return nil
	}
	if err := a.add(v, ts); err != nil {
		return err
	}
	return a.drainBacklog()
}

func (a *asyncOp[I, O]) ProcessWatermark(wm int64) error {
	if a.yielding {
		a.backlog = append(a.backlog, asyncInput[I]{wm: wm, isWM: true})
		return nil
	}
	return a.watermark(wm)
}

// yield runs the task's mailbox and timers once, keeping input that
// arrives meanwhile in the backlog.
func (a *asyncOp[I, O]) yield() error {
	a.yielding = true
	err := a.ctx.Yield()
	a.yielding = false
	return err
}

func (a *asyncOp[I, O]) drainBacklog() error {
	for len(a.backlog) > 0 {
		in := a.backlog[0]
		a.backlog[0] = asyncInput[I]{}
		a.backlog = a.backlog[1:]
		var err error
		if in.isWM {
			err = a.watermark(in.wm)
		} else {
			err = a.add(in.v, in.ts)
		}
		if err != nil {
			return err
		}
	}
	a.backlog = a.backlog[:0]
	return nil
}

// add waits for a free slot and starts the request for v.
func (a *asyncOp[I, O]) add(v I, ts int64) error {
	for a.inFlight >= a.capacity {
		if err := a.yield(); err != nil {
			return err
		}
	}
	r := &AsyncRequest[I, O]{op: a, v: v, ts: ts}
	ctx, cancel := context.WithCancel(a.reqCtx)
	r.cancel = cancel
	a.inFlight++
	if len(a.unemitted) >= 2*a.capacity+16 {
		a.compactUnemitted()
	}
	a.unemitted = append(a.unemitted, r)
	if a.ordered {
		a.queue.push(asyncEntry[I, O]{r: r})
	} else {
		seg := *a.segs.back()
		seg.pending++
		r.seg = seg
	}
	if a.timeoutMs > 0 {
		r.deadline = max(a.ctx.Clock.NowMillis()+a.timeoutMs, a.lastDeadline)
		a.lastDeadline = r.deadline
		a.deadlines.push(r)
		a.compactDeadlines()
		a.armTimer()
	}
	a.fn(ctx, v, r)
	return nil
}

// watermark places wm behind the records in flight, or forwards it when
// there are none.
func (a *asyncOp[I, O]) watermark(wm int64) error {
	if a.inFlight == 0 {
		return a.out.EmitWatermark(wm)
	}
	if a.ordered {
		if a.queue.len() > 0 && a.queue.back().r == nil {
			a.queue.back().wm = wm // nothing between the two watermarks
			return nil
		}
		a.queue.push(asyncEntry[I, O]{wm: wm})
		return nil
	}
	tail := *a.segs.back()
	if tail.pending == 0 && len(tail.done) == 0 && a.segs.len() > 1 {
		a.segs.at(a.segs.len() - 2).wm = wm // nothing between the two watermarks
		return nil
	}
	tail.wm, tail.closed = wm, true
	a.segs.push(&asyncSegment[I, O]{})
	return nil
}

// onResult runs on the task goroutine when r has completed.
func (a *asyncOp[I, O]) onResult(r *AsyncRequest[I, O], results []O) error {
	r.done, r.results = true, results
	if a.ordered {
		for a.queue.len() > 0 {
			e := a.queue.front()
			if e.r != nil && !e.r.done {
				break
			}
			a.queue.pop()
			if e.r == nil {
				if err := a.out.EmitWatermark(e.wm); err != nil {
					return err
				}
				continue
			}
			if err := a.emit(e.r); err != nil {
				return err
			}
		}
		return nil
	}
	seg := r.seg
	r.seg = nil
	seg.pending--
	if seg != a.segs.front() {
		seg.done = append(seg.done, r)
		return nil
	}
	if err := a.emit(r); err != nil {
		return err
	}
	// Close finished segments: their watermark goes out, and the results
	// that waited behind it follow in completion order.
	for {
		head := a.segs.front()
		if !head.closed || head.pending > 0 {
			return nil
		}
		a.segs.pop()
		if err := a.out.EmitWatermark(head.wm); err != nil {
			return err
		}
		next := a.segs.front()
		for i, d := range next.done {
			next.done[i] = nil
			if err := a.emit(d); err != nil {
				return err
			}
		}
		next.done = nil
	}
}

func (a *asyncOp[I, O]) emit(r *AsyncRequest[I, O]) error {
	a.inFlight--
	r.emitted = true
	results := r.results
	r.results = nil
	for _, o := range results {
		if err := a.out.Collect(o, r.ts); err != nil {
			return err
		}
	}
	return nil
}

// armTimer makes sure a timer is set for the earliest pending deadline.
func (a *asyncOp[I, O]) armTimer() {
	for a.deadlines.len() > 0 && a.deadlines.front().completed.Load() {
		a.deadlines.pop()
	}
	if a.deadlines.len() == 0 {
		return
	}
	at := a.deadlines.front().deadline
	if a.cancelTimer != nil && a.timerAt <= at {
		return // an earlier (or the same) timer is armed; it re-arms
	}
	if a.cancelTimer != nil {
		a.cancelTimer()
	}
	a.timerAt = at
	a.cancelTimer = a.ctx.RegisterProcessingTimer(at, a.onTimer)
}

// compactDeadlines drops completed requests from the deadline queue when
// it has grown well beyond the capacity (unordered mode with one slow
// request keeps the head in place while many later ones complete).
func (a *asyncOp[I, O]) compactDeadlines() {
	if a.deadlines.len() <= 2*a.capacity+16 {
		return
	}
	a.deadlines.filter(func(r *AsyncRequest[I, O]) bool { return !r.completed.Load() })
}

func (a *asyncOp[I, O]) onTimer(now int64) error {
	a.cancelTimer = nil
	for a.deadlines.len() > 0 {
		r := a.deadlines.front()
		if r.completed.Load() {
			a.deadlines.pop()
			continue
		}
		if r.deadline > now {
			break
		}
		a.deadlines.pop()
		if a.onTimeout != nil {
			a.onTimeout(r.v, r)
		}
		if r.completed.CompareAndSwap(false, true) {
			r.cancel()
			return fmt.Errorf("%w after %v (implement AsyncTimeoutHandler, or set AsyncFuncs.TimeoutFn, to complete timed-out requests instead)", ErrAsyncTimeout, a.timeout)
		}
	}
	a.armTimer()
	return nil
}

// Finish waits until every request in flight has completed and its
// results are emitted.
func (a *asyncOp[I, O]) Finish() error {
	for {
		if err := a.drainBacklog(); err != nil {
			return err
		}
		if a.inFlight == 0 {
			break
		}
		if err := a.yield(); err != nil {
			return err
		}
	}
	return nil
}

// Close cancels the context of every request still in flight.
func (a *asyncOp[I, O]) Close() error {
	if a.cancelTimer != nil {
		a.cancelTimer()
		a.cancelTimer = nil
	}
	if a.cancel != nil {
		a.cancel()
	}
	return nil
}

// asyncFIFO is a slice-backed queue.
type asyncFIFO[T any] struct {
	items []T
	head  int
}

func (q *asyncFIFO[T]) push(x T)   { q.items = append(q.items, x) }
func (q *asyncFIFO[T]) len() int   { return len(q.items) - q.head }
func (q *asyncFIFO[T]) front() T   { return q.items[q.head] }
func (q *asyncFIFO[T]) back() *T   { return &q.items[len(q.items)-1] }
func (q *asyncFIFO[T]) at(i int) T { return q.items[q.head+i] }

func (q *asyncFIFO[T]) pop() T {
	x := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 64 && 2*q.head >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return x
}

// filter keeps the items for which keep returns true, in order.
func (q *asyncFIFO[T]) filter(keep func(T) bool) {
	kept := q.items[:0]
	for _, x := range q.items[q.head:] {
		if keep(x) {
			kept = append(kept, x)
		}
	}
	clear(q.items[len(kept):])
	q.items, q.head = kept, 0
}
