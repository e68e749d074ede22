package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice/sluice/internal/typed"
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
var ErrAsyncTimeout = typed.ErrAsyncTimeout

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
	return oneInput(in, "async", "Async Wait Operator", typed.AsyncWait(func() typed.AsyncFns[I, O] {
		fn := perSubtask(fn)
		f := typed.AsyncFns[I, O]{Invoke: func(ctx context.Context, v I, r *typed.AsyncRequest[I, O]) { fn.AsyncInvoke(ctx, v, r) }}
		if th, ok := fn.(AsyncTimeoutHandler[I, O]); ok {
			f.Timeout = func(v I, r *typed.AsyncRequest[I, O]) { th.Timeout(v, r) }
		}
		return f
	}, timeout, capacity, ordered))
}
