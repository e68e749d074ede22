package stream

import (
	"errors"

	"github.com/sluice/sluice/internal/typed"
)

// ConnectedStreams are two streams, possibly of different types, processed
// together by one two-input operator (CoMap, CoFlatMap, CoProcess) that can
// share state between them. Records of the two inputs interleave in no
// guaranteed order.
type ConnectedStreams[A, B any] struct {
	First  DataStream[A]
	Second DataStream[B]
}

// Connect connects two streams for a two-input operator.
func Connect[A, B any](a DataStream[A], b DataStream[B]) ConnectedStreams[A, B] {
	return ConnectedStreams[A, B]{First: a, Second: b}
}

// CoMap maps the records of the first input with f1 and those of the
// second with f2 into one stream.
func CoMap[A, B, O any](c ConnectedStreams[A, B], f1 func(A) O, f2 func(B) O) DataStream[O] {
	if f1 == nil || f2 == nil {
		c.First.env.fail(errors.New("CoMap: both map functions are required"))
	}
	return procTwoInput(c.First, c.Second, "co-map", "CoMap", typed.CoMap(f1, f2))
}

// CoFlatMap calls f1 for every record of the first input and f2 for every
// record of the second; both emit zero or more records into one stream.
func CoFlatMap[A, B, O any](c ConnectedStreams[A, B], f1 func(A, Collector[O]), f2 func(B, Collector[O])) DataStream[O] {
	if f1 == nil || f2 == nil {
		c.First.env.fail(errors.New("CoFlatMap: both flat-map functions are required"))
	}
	return procTwoInput(c.First, c.Second, "co-flatmap", "CoFlatMap", typed.CoFlatMap(
		func(v A, c *typed.Collector[O]) { f1(v, c) }, func(v B, c *typed.Collector[O]) { f2(v, c) }))
}

// CoProcessFunction processes the records of two connected non-keyed
// streams: ProcessElement1 sees the first input's records, ProcessElement2
// the second's. It has no keyed state and no timers (connect two keyed
// streams with ConnectKeyed for those).
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type CoProcessFunction[A, B, O any] interface {
	ProcessElement1(ctx *ProcessContext, v A, out Collector[O]) error
	ProcessElement2(ctx *ProcessContext, v B, out Collector[O]) error
}

// CoProcessFuncs builds a CoProcessFunction from closures. Element1 and
// Element2 are required; Open and Close may be nil.
type CoProcessFuncs[A, B, O any] struct {
	Element1 func(ctx *ProcessContext, v A, out Collector[O]) error
	Element2 func(ctx *ProcessContext, v B, out Collector[O]) error
	Open     func(rc RuntimeContext) error
	Close    func() error
}

// ProcessElement1 implements CoProcessFunction.
func (f CoProcessFuncs[A, B, O]) ProcessElement1(ctx *ProcessContext, v A, out Collector[O]) error {
	return f.Element1(ctx, v, out)
}

// ProcessElement2 implements CoProcessFunction.
func (f CoProcessFuncs[A, B, O]) ProcessElement2(ctx *ProcessContext, v B, out Collector[O]) error {
	return f.Element2(ctx, v, out)
}

func (f CoProcessFuncs[A, B, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f CoProcessFuncs[A, B, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f CoProcessFuncs[A, B, O]) check() error {
	if f.Element1 == nil || f.Element2 == nil {
		return errors.New("CoProcessFuncs.Element1 and Element2 are required")
	}
	return nil
}

// CoProcess applies a CoProcessFunction to two connected streams. Records
// it emits keep the timestamp of the record being processed. The
// operator's watermark is the minimum of its two inputs' watermarks.
func CoProcess[A, B, O any](c ConnectedStreams[A, B], fn CoProcessFunction[A, B, O]) DataStream[O] {
	checkFn(c.First.env, "CoProcess", fn)
	return procTwoInput(c.First, c.Second, "co-process", "CoProcess", typed.CoProcess(func() typed.CoProcessFns[A, B, O] {
		fn := perSubtask(fn)
		ctx := &ProcessContext{}
		return typed.CoProcessFns[A, B, O]{
			Element1: func(c *typed.FnContext, v A, out *typed.Collector[O]) error {
				ctx.c = c
				return fn.ProcessElement1(ctx, v, out)
			},
			Element2: func(c *typed.FnContext, v B, out *typed.Collector[O]) error {
				ctx.c = c
				return fn.ProcessElement2(ctx, v, out)
			},
			Life: lifecycleOf(fn),
		}
	}))
}

// KeyedConnectedStreams are two keyed streams with the same key type,
// connected so that the records of both inputs with the same key go to the
// same subtask and share that key's state and timers.
type KeyedConnectedStreams[A, B any, K comparable] struct {
	First  KeyedStream[A, K]
	Second KeyedStream[B, K]
}

// ConnectKeyed connects two keyed streams for a KeyedCoProcessFunction.
// Both are partitioned by key, so a key's records of both inputs meet.
func ConnectKeyed[A, B any, K comparable](a KeyedStream[A, K], b KeyedStream[B, K]) KeyedConnectedStreams[A, B, K] {
	return KeyedConnectedStreams[A, B, K]{First: a, Second: b}
}

// Connected returns the pair as plain connected streams (still partitioned
// by key) for CoMap, CoFlatMap or CoProcess.
func (c KeyedConnectedStreams[A, B, K]) Connected() ConnectedStreams[A, B] {
	return ConnectedStreams[A, B]{First: c.First.DataStream, Second: c.Second.DataStream}
}

// KeyedCoProcessFunction processes two connected keyed streams: the state
// and timers of a key are shared by both inputs. ProcessElement1 sees the
// first input's records, ProcessElement2 the second's, OnTimer the timers.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type KeyedCoProcessFunction[K comparable, A, B, O any] interface {
	ProcessElement1(ctx *KeyedContext[K], v A, out Collector[O]) error
	ProcessElement2(ctx *KeyedContext[K], v B, out Collector[O]) error
	OnTimer(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error
}

// KeyedCoProcessFuncs builds a KeyedCoProcessFunction from closures.
// Element1 and Element2 are required; Timer, Open and Close may be nil.
type KeyedCoProcessFuncs[K comparable, A, B, O any] struct {
	Element1 func(ctx *KeyedContext[K], v A, out Collector[O]) error
	Element2 func(ctx *KeyedContext[K], v B, out Collector[O]) error
	Timer    func(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error
	Open     func(rc RuntimeContext) error
	Close    func() error
}

// ProcessElement1 implements KeyedCoProcessFunction.
func (f KeyedCoProcessFuncs[K, A, B, O]) ProcessElement1(ctx *KeyedContext[K], v A, out Collector[O]) error {
	return f.Element1(ctx, v, out)
}

// ProcessElement2 implements KeyedCoProcessFunction.
func (f KeyedCoProcessFuncs[K, A, B, O]) ProcessElement2(ctx *KeyedContext[K], v B, out Collector[O]) error {
	return f.Element2(ctx, v, out)
}

// OnTimer implements KeyedCoProcessFunction.
func (f KeyedCoProcessFuncs[K, A, B, O]) OnTimer(ctx *OnTimerContext[K], ts Timestamp, out Collector[O]) error {
	if f.Timer == nil {
		return nil
	}
	return f.Timer(ctx, ts, out)
}

func (f KeyedCoProcessFuncs[K, A, B, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f KeyedCoProcessFuncs[K, A, B, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f KeyedCoProcessFuncs[K, A, B, O]) check() error {
	if f.Element1 == nil || f.Element2 == nil {
		return errors.New("KeyedCoProcessFuncs.Element1 and Element2 are required")
	}
	return nil
}

// KeyedCoProcess applies a KeyedCoProcessFunction to two connected keyed
// streams. Timestamps of emitted records follow KeyedProcess. In BATCH
// mode, timers fire at the end of the input as for KeyedProcess.
func KeyedCoProcess[K comparable, A, B, O any](c KeyedConnectedStreams[A, B, K], fn KeyedCoProcessFunction[K, A, B, O]) DataStream[O] {
	checkFn(c.First.env, "KeyedCoProcess", fn)
	out := procTwoInput(c.First.DataStream, c.Second.DataStream, "keyed-co-process", "KeyedCoProcess", typed.KeyedCoProcess(c.First.key, c.Second.key, func() typed.KeyedCoProcessFns[K, A, B, O] {
		fn := perSubtask(fn)
		v := newKeyedView[K]()
		return typed.KeyedCoProcessFns[K, A, B, O]{
			Element1: func(_ *typed.KeyedCtx[K], x A, out *typed.Collector[O]) error {
				return fn.ProcessElement1(&v.ctx, x, out)
			},
			Element2: func(_ *typed.KeyedCtx[K], x B, out *typed.Collector[O]) error {
				return fn.ProcessElement2(&v.ctx, x, out)
			},
			OnTimer: func(_ *typed.KeyedCtx[K], ts int64, out *typed.Collector[O]) error {
				return fn.OnTimer(&v.tctx, Timestamp(ts), out)
			},
			Bind: v.bind,
			Life: lifecycleOf(fn),
		}
	}))
	out.node.Keyed = true
	return out
}
