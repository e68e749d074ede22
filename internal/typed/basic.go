package typed

import "github.com/sluice/sluice/internal/runtime/task"

type mapOp[I, O any] struct {
	Base[O]
	fn  func(I) O
	buf []O // the mapped batch, reused
}

func (m *mapOp[I, O]) ProcessElement(v I, ts int64) error { return m.Out.Collect(m.fn(v), ts) }

// ProcessBatch maps the batch into a buffer of its own and emits that in
// one call: a chain of stateless operators costs one call per record (the
// user's function) and one per batch and operator.
func (m *mapOp[I, O]) ProcessBatch(vs []I, ts []int64) error {
	buf := m.buf[:0]
	for i := range vs {
		buf = append(buf, m.fn(vs[i]))
	}
	m.buf = buf
	err := task.CollectBatch(m.Out, buf, ts)
	clear(buf) // drop references for the garbage collector
	return err
}

// Map applies fn to every record.
func Map[I, O any](fn func(I) O) *Factory[O] {
	return &Factory[O]{Make: func(_ *task.Context, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		return Single(&mapOp[I, O]{Base: Base[O]{out}, fn: fn})
	}}
}

type flatMapOp[I, O any] struct {
	Base[O]
	fn func(I, *Collector[O])
	c  Collector[O]
}

func (m *flatMapOp[I, O]) ProcessElement(v I, ts int64) error {
	m.c.Ts = ts
	m.fn(v, &m.c)
	return m.c.TakeErr()
}

// FlatMap calls fn for every record; fn emits zero or more records to the
// collector, which stamps them with the record's timestamp.
func FlatMap[I, O any](fn func(I, *Collector[O])) *Factory[O] {
	return &Factory[O]{Make: func(_ *task.Context, out task.Output[O], _ map[string]any) (task.Operator, []any, error) {
		return Single(&flatMapOp[I, O]{Base: Base[O]{out}, fn: fn, c: Collector[O]{Out: out}})
	}}
}

type filterOp[T any] struct {
	Base[T]
	fn  func(T) bool
	buf []T // the kept records of a batch, reused
	ts  []int64
}

// ProcessBatch emits the kept records of the batch in one call.
func (f *filterOp[T]) ProcessBatch(vs []T, ts []int64) error {
	buf, tb := f.buf[:0], f.ts[:0]
	for i := range vs {
		if f.fn(vs[i]) {
			buf = append(buf, vs[i])
			tb = append(tb, ts[i])
		}
	}
	f.buf, f.ts = buf, tb
	if len(buf) == 0 {
		return nil
	}
	err := task.CollectBatch(f.Out, buf, tb)
	clear(buf)
	return err
}

func (f *filterOp[T]) ProcessElement(v T, ts int64) error {
	if f.fn(v) {
		return f.Out.Collect(v, ts)
	}
	return nil
}

// Filter keeps the records for which fn returns true.
func Filter[T any](fn func(T) bool) *Factory[T] {
	return &Factory[T]{Make: func(_ *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&filterOp[T]{Base: Base[T]{out}, fn: fn})
	}}
}

type identityOp[T any] struct{ Base[T] }

func (m *identityOp[T]) ProcessElement(v T, ts int64) error { return m.Out.Collect(v, ts) }

func (m *identityOp[T]) ProcessBatch(vs []T, ts []int64) error {
	return task.CollectBatch(m.Out, vs, ts)
}

// Identity passes records and watermarks on (a union of streams).
func Identity[T any]() *Factory[T] {
	return &Factory[T]{Make: func(_ *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&identityOp[T]{Base[T]{out}})
	}}
}
