package exec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// coreType is the core field type holding values of t.
func coreType(t types.Type) core.FieldType {
	switch t.Kind {
	case types.String:
		return core.Varchar
	case types.Boolean:
		return core.Boolean
	case types.Float, types.Double:
		return core.Double
	case types.Timestamp, types.TimestampLTZ:
		return core.TimestampLTZ
	case types.Bytes:
		return core.Varbinary
	}
	return core.BigInt
}

// rowType is the core Row type of a node's fields.
func rowType(fields []planner.Field) (core.Type, error) {
	seen := map[string]int{}
	cf := make([]core.Field, len(fields))
	for i, f := range fields {
		name := f.Name
		if n := seen[name]; n > 0 {
			name = fmt.Sprintf("%s$%d", f.Name, n)
		}
		seen[f.Name]++
		cf[i] = core.Field{Name: name, Type: coreType(f.Type)}
	}
	s, err := core.NewSchema(cf...)
	if err != nil {
		return core.Type{}, err
	}
	return core.RowType(s), nil
}

// rowtimeOf is the index of the rowtime field, or -1.
func rowtimeOf(fields []planner.Field) int {
	for i, f := range fields {
		if f.Type.Rowtime {
			return i
		}
	}
	return -1
}

func timestampOf(vals []any, rowtime int, ts int64) int64 {
	if rowtime >= 0 {
		if v, ok := vals[rowtime].(int64); ok {
			return v
		}
	}
	return ts
}

// calcOp evaluates a Calc: filter, then projections.
type calcOp struct {
	c       *planner.Calc
	rowtime int // of the output
	buf     []any
}

func (o *calcOp) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	row := r.Row()
	if o.c.Filter != nil {
		v, err := o.c.Filter.Eval(row.Values)
		if err != nil {
			return fmt.Errorf("sql: evaluating %s: %w", o.c.Filter, err)
		}
		if v == nil || !v.(bool) {
			return nil
		}
	}
	out := make([]any, len(o.c.Exprs))
	for i, e := range o.c.Exprs {
		v, err := e.Eval(row.Values)
		if err != nil {
			return fmt.Errorf("sql: evaluating %s: %w", e, err)
		}
		out[i] = v
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: row.Kind, Values: out}), timestampOf(out, o.rowtime, ts))
}

// windowTVFOp emits each row once per window it falls in, with
// window_start, window_end and window_time appended. Rows of windows the
// watermark has passed are dropped, as Flink's window table function does.
type windowTVFOp struct {
	w planner.Window
}

func (o *windowTVFOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	t, ok := row.Values[o.w.TimeCol].(int64)
	if !ok {
		return nil // a NULL rowtime belongs to no window
	}
	return o.w.Assign(t, func(start, end int64) error {
		if end-1 <= ctx.CurrentWatermark() {
			return nil
		}
		out := make([]any, 0, len(row.Values)+3)
		out = append(out, row.Values...)
		out = append(out, start, end, end-1)
		return ctx.Emit(core.RowRecord(core.Row{Kind: row.Kind, Values: out}), end-1)
	})
}

// unionOp forwards the rows of both inputs.
type unionOp struct{ rowtime int }

func (o *unionOp) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	return ctx.Emit(r, timestampOf(r.Row().Values, o.rowtime, ts))
}

// keySelector encodes the values of fields idx of a row: per field a type
// byte and the value (a NULL is its own byte), so equal keys encode
// equally and different keys differently.
func keySelector(idx []int) core.KeySelector {
	return func(r core.Record, dst []byte) []byte {
		vals := r.Row().Values
		for _, i := range idx {
			switch v := vals[i].(type) {
			case nil:
				dst = append(dst, 0)
			case int64:
				dst = binary.AppendVarint(append(dst, 1), v)
			case float64:
				dst = binary.BigEndian.AppendUint64(append(dst, 2), math.Float64bits(v))
			case string:
				dst = binary.AppendUvarint(append(dst, 3), uint64(len(v)))
				dst = append(dst, v...)
			case bool:
				if v {
					dst = append(dst, 4, 1)
				} else {
					dst = append(dst, 4, 0)
				}
			case []byte:
				dst = binary.AppendUvarint(append(dst, 5), uint64(len(v)))
				dst = append(dst, v...)
			}
		}
		return dst
	}
}

// windowAggOp aggregates the rows of each (key, window): the accumulator
// row (the key's values, then each aggregate's state) in keyed value state
// under the window's namespace, and an event-time timer at the window's
// last millisecond that emits the result and clears the state. Rows of a
// window the watermark has passed are late and dropped (Flink's window
// aggregate drops them too).
type windowAggOp struct {
	*aggSpec
	w    *planner.WindowAggregate
	accs *core.ValueState
	seen *core.MapState
	late *lateCounter
}

// aggSpec is the accumulation of a group's aggregates: an accumulator row
// of the group key's values and each aggregate's state.
type aggSpec struct {
	keys    []int
	aggs    []planner.AggCall
	acc     core.Type // accumulator rows
	nFields int
}

func newAggSpec(in []planner.Field, keys []int, aggs []planner.AggCall) (*aggSpec, error) {
	fs := accFields(in, keys, aggs)
	t, err := rowType(fs)
	if err != nil {
		return nil, err
	}
	return &aggSpec{keys: keys, aggs: aggs, acc: t, nFields: len(fs)}, nil
}

// newAcc is the accumulator of the group of row in.
func (o *aggSpec) newAcc(in []any) []any {
	acc := make([]any, o.nFields)
	for i, k := range o.keys {
		acc[i] = in[k]
	}
	return acc
}

// takeWindow removes a fired window's accumulator (accs) and its distinct
// values (seen) from state and returns the accumulator; ok is false when
// the window holds none.
func (o *aggSpec) takeWindow(accs *core.ValueState, seen *core.MapState, ns string) (acc []any, ok bool, err error) {
	b, ok, err := accs.Get(ns)
	if err != nil || !ok {
		return nil, false, err
	}
	if err := accs.Delete(ns); err != nil {
		return nil, false, err
	}
	if err := seen.Clear(ns); err != nil {
		return nil, false, err
	}
	acc, err = o.load(b)
	if err != nil {
		return nil, false, err
	}
	return acc, true, nil
}

func (o *aggSpec) load(b []byte) ([]any, error) {
	rec, err := o.acc.Decode(b)
	if err != nil {
		return nil, err
	}
	return rec.Row().Values, nil
}

func (o *aggSpec) store(acc []any) ([]byte, error) {
	return o.acc.Encode(nil, core.RowRecord(core.Row{Values: acc}))
}

// accLayout is where each aggregate's state starts in the accumulator row
// (after the keys) and how many fields it takes.
func accFields(in []planner.Field, keys []int, aggs []planner.AggCall) []planner.Field {
	var out []planner.Field
	for _, k := range keys {
		out = append(out, planner.Field{Name: in[k].Name, Type: in[k].Type.Plain()})
	}
	for i, a := range aggs {
		name := fmt.Sprintf("acc%d", i)
		switch a.Func {
		case "COUNT":
			out = append(out, planner.Field{Name: name, Type: types.BIGINT})
		case "SUM", "MIN", "MAX":
			st := a.ArgType.Plain()
			if a.Func == "SUM" && st.Kind == types.Float {
				st = types.DOUBLE
			}
			out = append(out, planner.Field{Name: name, Type: st})
		case "AVG":
			st := a.ArgType.Plain()
			out = append(out, planner.Field{Name: name, Type: st}, planner.Field{Name: name + "n", Type: types.BIGINT})
		}
	}
	return out
}

func windowNamespace(start, end int64) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(start))
	return string(binary.BigEndian.AppendUint64(b, uint64(end)))
}

func (o *windowAggOp) Open(ctx *core.Context) error {
	var err error
	if o.accs, err = ctx.ValueState("window-accumulators"); err != nil {
		return err
	}
	o.seen, err = ctx.MapState("distinct-values")
	return err
}

func (o *windowAggOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: window aggregation received a %s row; its input must be insert-only", row.Kind)
	}
	t, ok := row.Values[o.w.Window.TimeCol].(int64)
	if !ok {
		return nil
	}
	return o.w.Window.Assign(t, func(start, end int64) error {
		if end-1 <= ctx.CurrentWatermark() {
			o.late.add()
			return nil
		}
		ns := windowNamespace(start, end)
		b, ok, err := o.accs.Get(ns)
		if err != nil {
			return err
		}
		var acc []any
		if ok {
			if acc, err = o.load(b); err != nil {
				return err
			}
		} else {
			acc = o.newAcc(row.Values)
			if err := ctx.RegisterEventTimer(ns, end-1); err != nil {
				return err
			}
		}
		if err := o.accumulate(acc, row.Values, o.seen, ns); err != nil {
			return err
		}
		enc, err := o.store(acc)
		if err != nil {
			return err
		}
		return o.accs.Put(ns, enc)
	})
}

// accumulate adds row in to acc. seen is the distinct values of the
// group (and window) so far, for COUNT(DISTINCT): namespace ns of its map
// state.
func (o *aggSpec) accumulate(acc, in []any, seen *core.MapState, ns string) error {
	j := len(o.keys)
	for i, a := range o.aggs {
		var v any
		if a.Arg >= 0 {
			v = in[a.Arg]
		}
		switch a.Func {
		case "COUNT":
			n, _ := acc[j].(int64)
			if a.Distinct && v != nil {
				k := string(keySelector([]int{a.Arg})(core.RowRecord(core.Row{Values: in}), []byte{byte(i)}))
				if _, dup, err := seen.Get(ns, k); err != nil || dup {
					acc[j] = n
					j++
					if err != nil {
						return err
					}
					continue
				}
				if err := seen.Put(ns, k, nil); err != nil {
					return err
				}
			}
			if a.Arg < 0 || v != nil {
				n++
			}
			acc[j] = n
			j++
		case "SUM", "AVG":
			if v != nil {
				s, err := addValues(acc[j], v)
				if err != nil {
					return fmt.Errorf("sql: %s: %w", a.Text, err)
				}
				acc[j] = s
				if a.Func == "AVG" {
					n, _ := acc[j+1].(int64)
					acc[j+1] = n + 1
				}
			}
			j++
			if a.Func == "AVG" {
				j++
			}
		case "MIN", "MAX":
			if v != nil {
				if acc[j] == nil {
					acc[j] = v
				} else {
					c := types.Compare(v, acc[j], a.ArgType)
					if (a.Func == "MIN" && c < 0) || (a.Func == "MAX" && c > 0) {
						acc[j] = v
					}
				}
			}
			j++
		}
	}
	return nil
}

func addValues(sum, v any) (any, error) {
	switch x := v.(type) {
	case int64:
		s, _ := sum.(int64)
		if sum == nil {
			return x, nil
		}
		return types.AddInt64(s, x)
	case float64:
		s, _ := sum.(float64)
		return s + x, nil
	}
	return nil, fmt.Errorf("cannot sum %T", v)
}

func (o *windowAggOp) OnTimer(ctx *core.Context, t core.Timer) error {
	acc, ok, err := o.takeWindow(o.accs, o.seen, t.Namespace)
	if err != nil || !ok {
		return err
	}
	ns := []byte(t.Namespace)
	start, end := int64(binary.BigEndian.Uint64(ns)), int64(binary.BigEndian.Uint64(ns[8:]))
	out, err := o.results(acc)
	if err != nil {
		return err
	}
	out = append(out, start, end, end-1)
	return ctx.Emit(core.RowRecord(core.Row{Values: out}), end-1)
}

// results are the group key's values and each aggregate's result.
func (o *aggSpec) results(acc []any) ([]any, error) {
	out := make([]any, 0, len(o.keys)+len(o.aggs)+3)
	out = append(out, acc[:len(o.keys)]...)
	j := len(o.keys)
	for _, a := range o.aggs {
		switch a.Func {
		case "COUNT", "MIN", "MAX":
			out = append(out, acc[j])
			j++
		case "SUM":
			v := acc[j]
			var err error
			if v != nil && a.ArgType.Kind == types.Decimal {
				if v, err = types.Cast(v, a.ArgType, a.T); err != nil {
					return nil, err
				}
			} else if v != nil && a.ArgType.IsInteger() {
				v, _ = types.Cast(v, types.BIGINT, a.T)
			}
			out = append(out, v)
			j++
		case "AVG":
			v, err := average(acc[j], acc[j+1], a)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			j += 2
		}
	}
	return out, nil
}

// average is AVG's result: integer division for integers (as Flink's AVG
// of an INT is an INT), HALF_UP at the result's scale for DECIMAL.
func average(sum, count any, a planner.AggCall) (any, error) {
	n, _ := count.(int64)
	if sum == nil || n == 0 {
		return nil, nil
	}
	switch {
	case a.ArgType.Kind == types.Decimal:
		return types.DivDecimal(sum.(int64), a.ArgType.Scale, n, 0, a.T.Scale)
	case a.ArgType.IsInteger():
		return types.Cast(sum.(int64)/n, types.BIGINT, a.T)
	}
	return sum.(float64) / float64(n), nil
}

// lateCounter counts late rows dropped (shared by the subtasks of a job).
type lateCounter struct{ m *Metrics }

func (l *lateCounter) add() {
	if l != nil && l.m != nil {
		l.m.LateRecordsDropped.Add(1)
	}
}

// groupAggOp is a regular GROUP BY: the accumulator of each key in keyed
// value state, and for every input row the change of the key's result: +I
// for its first row, then -U of the old result and +U of the new one (no
// output when the result did not change), as Flink's GroupAggFunction.
type groupAggOp struct {
	*aggSpec
	accs *core.ValueState
	seen *core.MapState
}

func (o *groupAggOp) Open(ctx *core.Context) error {
	var err error
	if o.accs, err = ctx.ValueState("group-accumulators"); err != nil {
		return err
	}
	o.seen, err = ctx.MapState("distinct-values")
	return err
}

func (o *groupAggOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: GROUP BY over an updating input is not supported yet (it received %s)", row.Kind)
	}
	b, ok, err := o.accs.Get(core.VoidNamespace)
	if err != nil {
		return err
	}
	var acc, before []any
	if ok {
		if acc, err = o.load(b); err != nil {
			return err
		}
		if before, err = o.results(acc); err != nil {
			return err
		}
	} else {
		acc = o.newAcc(row.Values)
	}
	if err := o.accumulate(acc, row.Values, o.seen, core.VoidNamespace); err != nil {
		return err
	}
	after, err := o.results(acc)
	if err != nil {
		return err
	}
	enc, err := o.store(acc)
	if err != nil {
		return err
	}
	if err := o.accs.Put(core.VoidNamespace, enc); err != nil {
		return err
	}
	if before == nil {
		return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: after}), core.NoTimestamp)
	}
	if equalValues(before, after) {
		return nil
	}
	if err := ctx.Emit(core.RowRecord(core.Row{Kind: core.UpdateBefore, Values: before}), core.NoTimestamp); err != nil {
		return err
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.UpdateAfter, Values: after}), core.NoTimestamp)
}

func equalValues(a, b []any) bool {
	for i := range a {
		if x, ok := a[i].([]byte); ok {
			if y, ok := b[i].([]byte); !ok || string(x) != string(y) {
				return false
			}
			continue
		}
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
