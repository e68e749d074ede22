package stream

import (
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// The test operators are written over internal/typed's plumbing.
type (
	factory[O any] = typed.Factory[O]
	base[O any]    = typed.Base[O]
)

// Test-only operators for the black-box tests of async I/O: they put
// watermarks at exact places in a stream and observe what an operator
// emits, records and watermarks, in order.

type punctuateOp[T any] struct {
	base[T]
	ts   func(T) int64
	mark func(T) bool
}

func (p *punctuateOp[T]) ProcessElement(v T, _ int64) error {
	ts := p.ts(v)
	if err := p.Out.Collect(v, ts); err != nil {
		return err
	}
	if p.mark(v) {
		return p.Out.EmitWatermark(ts)
	}
	return nil
}

// PunctuateForTest stamps every record with ts(v) and emits a watermark
// equal to that timestamp right after each record for which mark is true.
func PunctuateForTest[T any](in DataStream[T], ts func(T) int64, mark func(T) bool) DataStream[T] {
	return oneInput(in, "punctuate", "Punctuate", &factory[T]{Make: func(_ *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		op := &punctuateOp[T]{base: base[T]{Out: out}, ts: ts, mark: mark}
		return op, []any{op}, nil
	}})
}

type observeOp[T any] struct {
	base[T]
	onRecord    func(v T, ts int64)
	onWatermark func(wm int64)
}

func (o *observeOp[T]) ProcessElement(v T, ts int64) error {
	o.onRecord(v, ts)
	return o.Out.Collect(v, ts)
}

func (o *observeOp[T]) ProcessWatermark(wm int64) error {
	o.onWatermark(wm)
	return o.Out.EmitWatermark(wm)
}

// ObserveForTest passes records and watermarks through, reporting each to
// the callbacks (on the task goroutine) first.
func ObserveForTest[T any](in DataStream[T], onRecord func(v T, ts int64), onWatermark func(wm int64)) DataStream[T] {
	return oneInput(in, "observe", "Observe", &factory[T]{Make: func(_ *task.Context, out task.Output[T], _ map[string]any) (task.Operator, []any, error) {
		op := &observeOp[T]{base: base[T]{Out: out}, onRecord: onRecord, onWatermark: onWatermark}
		return op, []any{op}, nil
	}})
}
