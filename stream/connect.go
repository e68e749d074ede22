package stream

import (
	"errors"

	"github.com/sluice/sluice/internal/runtime/task"
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

type coMapOp[A, B, O any] struct {
	out task.Output[O]
	f1  func(A) O
	f2  func(B) O
}

func (m *coMapOp[A, B, O]) Open() error                     { return nil }
func (m *coMapOp[A, B, O]) ProcessWatermark(wm int64) error { return m.out.EmitWatermark(wm) }
func (m *coMapOp[A, B, O]) Finish() error                   { return nil }
func (m *coMapOp[A, B, O]) Close() error                    { return nil }
func (m *coMapOp[A, B, O]) element1(v A, ts int64) error    { return m.out.Collect(m.f1(v), ts) }
func (m *coMapOp[A, B, O]) element2(v B, ts int64) error    { return m.out.Collect(m.f2(v), ts) }

// CoMap maps the records of the first input with f1 and those of the
// second with f2 into one stream.
func CoMap[A, B, O any](c ConnectedStreams[A, B], f1 func(A) O, f2 func(B) O) DataStream[O] {
	if f1 == nil || f2 == nil {
		c.First.env.fail(errors.New("CoMap: both map functions are required"))
	}
	return procTwoInput(c.First, c.Second, "co-map", "CoMap", newProcFactory(func(_ *procEnv, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		op := &coMapOp[A, B, O]{out: out, f1: f1, f2: f2}
		return op, []any{inputFunc[A](op.element1), inputFunc[B](op.element2)}, nil
	}))
}

type coFlatMapOp[A, B, O any] struct {
	out task.Output[O]
	f1  func(A, Collector[O])
	f2  func(B, Collector[O])
	c   collector[O]
}

func (m *coFlatMapOp[A, B, O]) Open() error                     { return nil }
func (m *coFlatMapOp[A, B, O]) ProcessWatermark(wm int64) error { return m.out.EmitWatermark(wm) }
func (m *coFlatMapOp[A, B, O]) Finish() error                   { return nil }
func (m *coFlatMapOp[A, B, O]) Close() error                    { return nil }

func (m *coFlatMapOp[A, B, O]) element1(v A, ts int64) error {
	m.c.Ts = ts
	m.f1(v, &m.c)
	return m.c.TakeErr()
}

func (m *coFlatMapOp[A, B, O]) element2(v B, ts int64) error {
	m.c.Ts = ts
	m.f2(v, &m.c)
	return m.c.TakeErr()
}

// CoFlatMap calls f1 for every record of the first input and f2 for every
// record of the second; both emit zero or more records into one stream.
func CoFlatMap[A, B, O any](c ConnectedStreams[A, B], f1 func(A, Collector[O]), f2 func(B, Collector[O])) DataStream[O] {
	if f1 == nil || f2 == nil {
		c.First.env.fail(errors.New("CoFlatMap: both flat-map functions are required"))
	}
	return procTwoInput(c.First, c.Second, "co-flatmap", "CoFlatMap", newProcFactory(func(_ *procEnv, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		op := &coFlatMapOp[A, B, O]{out: out, f1: f1, f2: f2, c: collector[O]{Out: out}}
		return op, []any{inputFunc[A](op.element1), inputFunc[B](op.element2)}, nil
	}))
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

type coProcessOp[A, B, O any] struct {
	env  *procEnv
	out  task.Output[O]
	fn   CoProcessFunction[A, B, O]
	life lifecycle
	time opTime
	ctx  ProcessContext
	c    collector[O]
}

func (p *coProcessOp[A, B, O]) Open() error { return p.life.open(p.env) }

func (p *coProcessOp[A, B, O]) element1(v A, ts int64) error {
	p.ctx.so.Ts, p.c.Ts = ts, ts
	err := p.fn.ProcessElement1(&p.ctx, v, &p.c)
	return settle(err, &p.c, &p.ctx.so)
}

func (p *coProcessOp[A, B, O]) element2(v B, ts int64) error {
	p.ctx.so.Ts, p.c.Ts = ts, ts
	err := p.fn.ProcessElement2(&p.ctx, v, &p.c)
	return settle(err, &p.c, &p.ctx.so)
}

func (p *coProcessOp[A, B, O]) ProcessWatermark(wm int64) error {
	p.time.wm = wm
	return p.out.EmitWatermark(wm)
}

func (p *coProcessOp[A, B, O]) Finish() error { return nil }
func (p *coProcessOp[A, B, O]) Close() error  { return p.life.close() }

// CoProcess applies a CoProcessFunction to two connected streams. Records
// it emits keep the timestamp of the record being processed. The
// operator's watermark is the minimum of its two inputs' watermarks.
func CoProcess[A, B, O any](c ConnectedStreams[A, B], fn CoProcessFunction[A, B, O]) DataStream[O] {
	checkFn(c.First.env, "CoProcess", fn)
	return procTwoInput(c.First, c.Second, "co-process", "CoProcess", newProcFactory(func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		op := &coProcessOp[A, B, O]{env: env, out: out, fn: fn, life: lifecycle{fn: adaptLifecycle(fn)}}
		op.time = opTime{wm: noWatermarkYet, clock: env.clock}
		op.ctx.t = &op.time
		op.ctx.so.Outs = sides
		op.c.Out = out
		return op, []any{inputFunc[A](op.element1), inputFunc[B](op.element2)}, nil
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

type keyedCoProcessOp[K comparable, A, B, O any] struct {
	keyedFnOp[K, O]
	key1 func(A) K
	key2 func(B) K
	fn   KeyedCoProcessFunction[K, A, B, O]
}

func (p *keyedCoProcessOp[K, A, B, O]) element1(v A, ts int64) error {
	p.element(p.key1(v), ts)
	err := p.fn.ProcessElement1(&p.ctx, v, &p.c)
	return p.settle(err, &p.c, &p.ctx.so)
}

func (p *keyedCoProcessOp[K, A, B, O]) element2(v B, ts int64) error {
	p.element(p.key2(v), ts)
	err := p.fn.ProcessElement2(&p.ctx, v, &p.c)
	return p.settle(err, &p.c, &p.ctx.so)
}

// KeyedCoProcess applies a KeyedCoProcessFunction to two connected keyed
// streams. Timestamps of emitted records follow KeyedProcess. In BATCH
// mode, timers fire at the end of the input as for KeyedProcess.
func KeyedCoProcess[K comparable, A, B, O any](c KeyedConnectedStreams[A, B, K], fn KeyedCoProcessFunction[K, A, B, O]) DataStream[O] {
	checkFn(c.First.env, "KeyedCoProcess", fn)
	key1, key2 := c.First.key, c.Second.key
	out := procTwoInput(c.First.DataStream, c.Second.DataStream, "keyed-co-process", "KeyedCoProcess", newProcFactory(func(env *procEnv, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		fn := perSubtask(fn)
		op := &keyedCoProcessOp[K, A, B, O]{key1: key1, key2: key2, fn: fn}
		op.setup(env, out, sides, fn)
		op.onTimer = fn.OnTimer
		return op, []any{inputFunc[A](op.element1), inputFunc[B](op.element2)}, nil
	}))
	out.node.Keyed = true
	return out
}
