package typed

import "github.com/sluice/sluice/internal/runtime/task"

type coMapOp[A, B, O any] struct {
	Base[O]
	f1 func(A) O
	f2 func(B) O
}

func (m *coMapOp[A, B, O]) element1(v A, ts int64) error { return m.Out.Collect(m.f1(v), ts) }
func (m *coMapOp[A, B, O]) element2(v B, ts int64) error { return m.Out.Collect(m.f2(v), ts) }

// CoMap maps the records of input 0 with f1 and those of input 1 with f2.
func CoMap[A, B, O any](f1 func(A) O, f2 func(B) O) *ProcFactory[O] {
	return NewProcFactory(func(_ *Env, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		op := &coMapOp[A, B, O]{Base: Base[O]{Out: out}, f1: f1, f2: f2}
		return op, []any{Input[A](op.element1), Input[B](op.element2)}, nil
	})
}

type coFlatMapOp[A, B, O any] struct {
	Base[O]
	f1 func(A, *Collector[O])
	f2 func(B, *Collector[O])
	c  Collector[O]
}

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

// CoFlatMap calls f1 for the records of input 0 and f2 for those of input
// 1; both emit zero or more records.
func CoFlatMap[A, B, O any](f1 func(A, *Collector[O]), f2 func(B, *Collector[O])) *ProcFactory[O] {
	return NewProcFactory(func(_ *Env, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		op := &coFlatMapOp[A, B, O]{Base: Base[O]{Out: out}, f1: f1, f2: f2, c: Collector[O]{Out: out}}
		return op, []any{Input[A](op.element1), Input[B](op.element2)}, nil
	})
}

type coProcessOp[A, B, O any] struct {
	env  *Env
	out  task.Output[O]
	fn1  ProcessFn[A, O]
	fn2  ProcessFn[B, O]
	life *Lifecycle
	time Time
	ctx  FnContext
	c    Collector[O]
}

func (p *coProcessOp[A, B, O]) Open() error { return p.life.DoOpen(p.env) }

func (p *coProcessOp[A, B, O]) element1(v A, ts int64) error {
	p.ctx.SO.Ts, p.c.Ts = ts, ts
	err := p.fn1(&p.ctx, v, &p.c)
	return Settle(err, &p.c, &p.ctx.SO)
}

func (p *coProcessOp[A, B, O]) element2(v B, ts int64) error {
	p.ctx.SO.Ts, p.c.Ts = ts, ts
	err := p.fn2(&p.ctx, v, &p.c)
	return Settle(err, &p.c, &p.ctx.SO)
}

func (p *coProcessOp[A, B, O]) ProcessWatermark(wm int64) error {
	p.time.WM = wm
	return p.out.EmitWatermark(wm)
}

func (p *coProcessOp[A, B, O]) Finish() error { return nil }
func (p *coProcessOp[A, B, O]) Close() error  { return p.life.DoClose() }

// CoProcessFns are the callbacks of one subtask's co-process function.
type CoProcessFns[A, B, O any] struct {
	Element1 ProcessFn[A, O]
	Element2 ProcessFn[B, O]
	Life     Lifecycle
}

// CoProcess applies a two-input process function; fns makes the function
// of each subtask. Records it emits keep the timestamp of the record being
// processed.
func CoProcess[A, B, O any](fns func() CoProcessFns[A, B, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &coProcessOp[A, B, O]{env: env, out: out, fn1: f.Element1, fn2: f.Element2, life: &f.Life, time: NewTime(env.Clock)}
		op.ctx.T = &op.time
		op.ctx.SO.Outs = sides
		op.c.Out = out
		return op, []any{Input[A](op.element1), Input[B](op.element2)}, nil
	})
}

type keyedCoProcessOp[K comparable, A, B, O any] struct {
	KeyedFnOp[K, O]
	key1 func(A) K
	key2 func(B) K
	fn1  KeyedProcessFn[K, A, O]
	fn2  KeyedProcessFn[K, B, O]
}

func (p *keyedCoProcessOp[K, A, B, O]) element1(v A, ts int64) error {
	p.Element(p.key1(v), ts)
	err := p.fn1(&p.Ctx, v, &p.C)
	return p.Settle(err, &p.C, &p.Ctx.SO)
}

func (p *keyedCoProcessOp[K, A, B, O]) element2(v B, ts int64) error {
	p.Element(p.key2(v), ts)
	err := p.fn2(&p.Ctx, v, &p.C)
	return p.Settle(err, &p.C, &p.Ctx.SO)
}

// KeyedCoProcessFns are the callbacks of one subtask's keyed co-process
// function.
type KeyedCoProcessFns[K comparable, A, B, O any] struct {
	Element1 KeyedProcessFn[K, A, O]
	Element2 KeyedProcessFn[K, B, O]
	OnTimer  OnTimerFn[K, O]
	Bind     func(r *KeyedRuntime[K], rec, tim *KeyedCtx[K])
	Life     Lifecycle
}

// KeyedCoProcess applies a keyed two-input process function whose inputs
// are keyed by key1 and key2 (a key's state and timers are shared by both
// inputs). Timestamps and BATCH mode follow KeyedProcess.
func KeyedCoProcess[K comparable, A, B, O any](key1 func(A) K, key2 func(B) K, fns func() KeyedCoProcessFns[K, A, B, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &keyedCoProcessOp[K, A, B, O]{key1: key1, key2: key2, fn1: f.Element1, fn2: f.Element2}
		op.Setup(env, out, sides, &f.Life)
		op.OnTimer, op.Bind = f.OnTimer, f.Bind
		return op, []any{Input[A](op.element1), Input[B](op.element2)}, nil
	})
}
