package stream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Asynchronous I/O (Flink's AsyncDataStream).
//
// An async operator hands each record to an AsyncFunction, which starts a
// request (a database lookup, an RPC) and returns at once; the request
// completes later, from any goroutine, through the record's ResultFuture.
// Results are handed back to the task goroutine through its mailbox, so
// the operator's state is only ever touched by the task goroutine, and
// many requests can be in flight while the task keeps processing.
//
// The contract is Flink's: AsyncInvoke is called on the task goroutine
// and must not block. It starts the work on a goroutine of its own (or
// through a client with callbacks or channels) and returns; whatever it
// starts must end when ctx is done. ctx is cancelled once the request has
// completed or timed out, and when the operator closes (the job ended,
// failed or was cancelled), so a well-behaved request goroutine never
// outlives the task:
//
//	lookup := stream.AsyncFuncs[string, User]{Invoke: func(ctx context.Context, id string, r stream.ResultFuture[User]) {
//		go func() {
//			u, err := db.Get(ctx, id)
//			if err != nil {
//				r.CompleteExceptionally(err)
//				return
//			}
//			r.Complete([]User{u})
//		}()
//	}}
//	users := stream.AsyncOrdered(ids, lookup, time.Second, 100)

// ErrAsyncTimeout fails a job when an async request neither completed
// within its timeout nor was completed by the function's Timeout callback.
var ErrAsyncTimeout = errors.New("stream: async request timed out")

// ResultFuture receives the outcome of one async request. Exactly one of
// Complete or CompleteExceptionally takes effect; later calls are ignored
// (as are calls after the request timed out). Both may be called from any
// goroutine and never block.
type ResultFuture[O any] interface {
	// Complete delivers the request's results (zero or more records, each
	// emitted with the input record's timestamp). The slice must not be
	// modified afterwards.
	Complete(results []O)
	// CompleteExceptionally fails the request, and with it the job.
	CompleteExceptionally(err error)
}

// AsyncFunction starts one asynchronous request per record. Each subtask
// gets its own instance of a function that is a pointer to a struct (see
// RuntimeContext).
type AsyncFunction[I, O any] interface {
	// AsyncInvoke runs on the task goroutine and must return quickly: it
	// starts the request and arranges for result to be completed later.
	// ctx is cancelled when the request has completed or timed out, or the
	// operator closes.
	AsyncInvoke(ctx context.Context, v I, result ResultFuture[O])
}

// AsyncTimeoutHandler is optionally implemented by an AsyncFunction. When
// a request times out, Timeout is called on the task goroutine; if it
// completes result (with fallback records, or exceptionally), that is the
// request's outcome. If it leaves result incomplete, or the function has no
// Timeout, the job fails with ErrAsyncTimeout (Flink's default).
type AsyncTimeoutHandler[I, O any] interface {
	Timeout(v I, result ResultFuture[O])
}

// AsyncFuncs builds an AsyncFunction from closures. TimeoutFn may be nil.
type AsyncFuncs[I, O any] struct {
	Invoke    func(ctx context.Context, v I, result ResultFuture[O])
	TimeoutFn func(v I, result ResultFuture[O])
}

// AsyncInvoke implements AsyncFunction.
func (f AsyncFuncs[I, O]) AsyncInvoke(ctx context.Context, v I, result ResultFuture[O]) {
	f.Invoke(ctx, v, result)
}

// Timeout implements AsyncTimeoutHandler; with a nil TimeoutFn the
// request stays incomplete and the job fails with ErrAsyncTimeout.
func (f AsyncFuncs[I, O]) Timeout(v I, result ResultFuture[O]) {
	if f.TimeoutFn != nil {
		f.TimeoutFn(v, result)
	}
}

// AsyncOrdered applies fn asynchronously to every record and emits the
// results in the order of the input records (Flink's
// AsyncDataStream.orderedWait).
//
// timeout bounds each request, measured in processing time from the
// moment it was started (≤ 0: no timeout). capacity bounds the records in
// flight per subtask: requests not completed plus results waiting for an
// earlier record; at capacity the operator stops taking input (the task
// keeps running its mailbox and timers) until a slot frees. Watermarks keep
// their place among the records. At the end of input the operator waits
// for every request in flight.
func AsyncOrdered[I, O any](in DataStream[I], fn AsyncFunction[I, O], timeout time.Duration, capacity int) DataStream[O] {
	return asyncWait(in, fn, timeout, capacity, true, "AsyncOrdered")
}

// AsyncUnordered is AsyncOrdered except that results are emitted as soon
// as their requests complete (Flink's AsyncDataStream.unorderedWait). They
// never overtake a watermark, though: a watermark is emitted only after
// the results of all records before it, and results of records after it
// wait for it, so no record becomes late by being reordered. Without
// watermarks (processing time) results flow in completion order.
func AsyncUnordered[I, O any](in DataStream[I], fn AsyncFunction[I, O], timeout time.Duration, capacity int) DataStream[O] {
	return asyncWait(in, fn, timeout, capacity, false, "AsyncUnordered")
}

func asyncWait[I, O any](in DataStream[I], fn AsyncFunction[I, O], timeout time.Duration, capacity int, ordered bool, api string) DataStream[O] {
	if f, ok := fn.(AsyncFuncs[I, O]); fn == nil || ok && f.Invoke == nil {
		in.env.fail(fmt.Errorf("%s after operator %s: the async function is nil", api, in.node.Label()))
	}
	if capacity <= 0 {
		in.env.fail(fmt.Errorf("%s after operator %s: capacity must be positive, got %d", api, in.node.Label(), capacity))
	}
	return oneInput(in, "async", "Async Wait Operator", &factory[O]{Make: func(ctx *task.Context, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		th, _ := fn.(AsyncTimeoutHandler[I, O])
		op := &asyncOp[I, O]{
			ctx: ctx, out: out, fn: fn, onTimeout: th, capacity: capacity, ordered: ordered,
			timeout: timeout, timeoutMs: timeout.Milliseconds(),
		}
		if timeout > 0 && op.timeoutMs == 0 {
			op.timeoutMs = 1 // processing time has millisecond resolution
		}
		return op, []any{op}, nil
	}})
}

// asyncOp runs the requests of one subtask. All its fields are used on the
// task goroutine only; requests report back through Context.Post.
type asyncOp[I, O any] struct {
	ctx       *task.Context
	out       task.Output[O]
	fn        AsyncFunction[I, O]
	onTimeout AsyncTimeoutHandler[I, O]
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
	deadlines    asyncFIFO[*asyncRequest[I, O]]
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
	unemitted []*asyncRequest[I, O]
	restored  []asyncInput[I]
}

type asyncEntry[I, O any] struct {
	r  *asyncRequest[I, O] // nil for a watermark
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
	done    []*asyncRequest[I, O] // completed, waiting for the segment to become the head
	wm      int64                 // the watermark that closes the segment
	closed  bool
}

// asyncRequest is one record's request and its ResultFuture.
type asyncRequest[I, O any] struct {
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
func (r *asyncRequest[I, O]) Complete(results []O) {
	if !r.completed.CompareAndSwap(false, true) {
		return
	}
	r.cancel()
	r.op.ctx.Post(func() error { return r.op.onResult(r, results) })
}

// CompleteExceptionally implements ResultFuture.
func (r *asyncRequest[I, O]) CompleteExceptionally(err error) {
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
	r := &asyncRequest[I, O]{op: a, v: v, ts: ts}
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
	a.fn.AsyncInvoke(ctx, v, r)
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
func (a *asyncOp[I, O]) onResult(r *asyncRequest[I, O], results []O) error {
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

func (a *asyncOp[I, O]) emit(r *asyncRequest[I, O]) error {
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
	a.deadlines.filter(func(r *asyncRequest[I, O]) bool { return !r.completed.Load() })
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
			a.onTimeout.Timeout(r.v, r)
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
