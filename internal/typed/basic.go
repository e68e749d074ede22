package typed

import "github.com/sluice/sluice/internal/runtime/task"

type mapOp[I, O any] struct {
	Base[O]
	fn func(I) O
}

func (m *mapOp[I, O]) ProcessElement(v I, ts int64) error { return m.Out.Collect(m.fn(v), ts) }

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
	fn func(T) bool
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

// Identity passes records and watermarks on (a union of streams).
func Identity[T any]() *Factory[T] {
	return &Factory[T]{Make: func(_ *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		return Single(&identityOp[T]{Base[T]{out}})
	}}
}
