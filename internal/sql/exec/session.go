package exec

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// sessionAggOp is a window aggregation over SESSION windows, Flink's
// merging windows: a row at t opens [t, t + gap) for its key; windows that
// overlap or touch merge into the one covering them, their accumulators
// merged. The key's windows are a list in keyed value state, each
// window's accumulator row in keyed value state under the window's
// namespace, and an event-time timer at the window's last millisecond
// emits the result and clears it. A row is late (dropped and counted)
// when the window it ends up in — after merging — has an end the
// watermark has passed, as Flink's merging window operator decides.
type sessionAggOp struct {
	*aggSpec
	w       *planner.WindowAggregate
	windows *core.ValueState
	accs    *core.ValueState
	seen    *core.MapState
	late    *lateCounter
}

type span struct{ start, end int64 }

// intersects is Flink's TimeWindow.intersects: overlapping or touching.
func (a span) intersects(b span) bool { return a.start <= b.end && a.end >= b.start }

func encodeSpans(ws []span) []byte {
	b := make([]byte, 0, 16*len(ws))
	for _, w := range ws {
		b = binary.BigEndian.AppendUint64(b, uint64(w.start))
		b = binary.BigEndian.AppendUint64(b, uint64(w.end))
	}
	return b
}

func decodeSpans(b []byte) ([]span, error) {
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("sql: session window list of %d bytes", len(b))
	}
	out := make([]span, 0, len(b)/16)
	for ; len(b) > 0; b = b[16:] {
		out = append(out, span{int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))})
	}
	return out, nil
}

func (o *sessionAggOp) Open(ctx *core.Context) error {
	var err error
	if o.windows, err = ctx.ValueState("session-windows"); err != nil {
		return err
	}
	if o.accs, err = ctx.ValueState("window-accumulators"); err != nil {
		return err
	}
	o.seen, err = ctx.MapState("distinct-values")
	return err
}

func (o *sessionAggOp) loadSpans() ([]span, error) {
	b, ok, err := o.windows.Get(core.VoidNamespace)
	if err != nil || !ok {
		return nil, err
	}
	return decodeSpans(b)
}

func (o *sessionAggOp) storeSpans(ws []span) error {
	if len(ws) == 0 {
		return o.windows.Delete(core.VoidNamespace)
	}
	return o.windows.Put(core.VoidNamespace, encodeSpans(ws))
}

func (o *sessionAggOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: window aggregation received a %s row; its input must be insert-only", row.Kind)
	}
	t, ok := row.Values[o.w.Window.TimeCol].(int64)
	if !ok {
		return nil
	}
	ws, err := o.loadSpans()
	if err != nil {
		return err
	}
	merged := span{t, t + o.w.Window.Size}
	var keep, into []span
	for _, w := range ws {
		if w.intersects(merged) {
			into = append(into, w)
			merged = span{min(merged.start, w.start), max(merged.end, w.end)}
		} else {
			keep = append(keep, w)
		}
	}
	if merged.end-1 <= ctx.CurrentWatermark() {
		o.late.add()
		return nil
	}
	ns := windowNamespace(merged.start, merged.end)
	var acc []any
	for _, w := range into {
		wns := windowNamespace(w.start, w.end)
		b, ok, err := o.accs.Get(wns)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		part, err := o.load(b)
		if err != nil {
			return err
		}
		if acc == nil {
			acc = part
		} else {
			o.merge(acc, part)
		}
		if w == merged {
			continue // the row falls into an existing window: state stays
		}
		if err := o.moveDistinct(wns, ns); err != nil {
			return err
		}
		if err := o.accs.Delete(wns); err != nil {
			return err
		}
		if err := ctx.DeleteEventTimer(wns, w.end-1); err != nil {
			return err
		}
	}
	if acc == nil {
		acc = o.newAcc(row.Values)
	} else if len(into) > 1 {
		if err := o.recountDistinct(acc, ns); err != nil {
			return err
		}
	}
	if len(into) != 1 || into[0] != merged {
		if err := ctx.RegisterEventTimer(ns, merged.end-1); err != nil {
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
	if err := o.accs.Put(ns, enc); err != nil {
		return err
	}
	return o.storeSpans(append(keep, merged))
}

// moveDistinct moves the COUNT(DISTINCT) values seen in window from into
// window to.
func (o *sessionAggOp) moveDistinct(from, to string) error {
	var kvs []string
	if err := o.seen.Entries(from, func(k string, _ []byte) error { kvs = append(kvs, k); return nil }); err != nil {
		return err
	}
	for _, k := range kvs {
		if err := o.seen.Put(to, k, nil); err != nil {
			return err
		}
	}
	return o.seen.Clear(from)
}

// recountDistinct sets each COUNT(DISTINCT) of acc to the number of
// distinct values of the merged window ns.
func (o *sessionAggOp) recountDistinct(acc []any, ns string) error {
	j := len(o.keys)
	for i, a := range o.aggs {
		if a.Func == "COUNT" && a.Distinct {
			var n int64
			if err := o.seen.Entries(ns, func(k string, _ []byte) error {
				if k[0] == byte(i) {
					n++
				}
				return nil
			}); err != nil {
				return err
			}
			acc[j] = n
		}
		j += accWidth(a)
	}
	return nil
}

func accWidth(a planner.AggCall) int {
	if a.Func == "AVG" {
		return 2
	}
	return 1
}

// merge adds the accumulator src into dst (both of the same group).
func (o *aggSpec) merge(dst, src []any) {
	j := len(o.keys)
	for _, a := range o.aggs {
		switch a.Func {
		case "COUNT":
			x, _ := dst[j].(int64)
			y, _ := src[j].(int64)
			dst[j] = x + y // COUNT(DISTINCT) is recounted from the merged values
		case "SUM", "AVG":
			switch {
			case dst[j] == nil:
				dst[j] = src[j]
			case src[j] != nil:
				if s, err := addValues(dst[j], src[j]); err == nil {
					dst[j] = s
				}
			}
			if a.Func == "AVG" {
				x, _ := dst[j+1].(int64)
				y, _ := src[j+1].(int64)
				dst[j+1] = x + y
			}
		case "MIN", "MAX":
			if src[j] != nil {
				if dst[j] == nil {
					dst[j] = src[j]
				} else if c := types.Compare(src[j], dst[j], a.ArgType); (a.Func == "MIN" && c < 0) || (a.Func == "MAX" && c > 0) {
					dst[j] = src[j]
				}
			}
		}
		j += accWidth(a)
	}
}

func (o *sessionAggOp) OnTimer(ctx *core.Context, t core.Timer) error {
	ns := []byte(t.Namespace)
	w := span{int64(binary.BigEndian.Uint64(ns)), int64(binary.BigEndian.Uint64(ns[8:]))}
	ws, err := o.loadSpans()
	if err != nil {
		return err
	}
	var rest []span
	for _, x := range ws {
		if x != w {
			rest = append(rest, x)
		}
	}
	if err := o.storeSpans(rest); err != nil {
		return err
	}
	acc, ok, err := o.takeWindow(o.accs, o.seen, t.Namespace)
	if err != nil || !ok {
		return err
	}
	out, err := o.results(acc)
	if err != nil {
		return err
	}
	out = append(out, w.start, w.end, w.end-1)
	return ctx.Emit(core.RowRecord(core.Row{Values: out}), w.end-1)
}

// sessionTVFOp is a SESSION window TVF on its own (not merged into a
// window aggregation; Flink's unaligned window table function): per
// partition key the open sessions and, under each session's namespace,
// its rows in keyed list state. Sessions merge as in sessionAggOp; an
// event-time timer at a session's last millisecond emits its rows with
// window_start, window_end and window_time appended, then clears them.
// A row whose session (after merging) is over is late: dropped, counted.
type sessionTVFOp struct {
	w       planner.Window
	codec   rowCodec
	windows *core.ValueState
	rows    *core.ListState
	late    *lateCounter
}

func (o *sessionTVFOp) Open(ctx *core.Context) error {
	var err error
	if o.windows, err = ctx.ValueState("session-windows"); err != nil {
		return err
	}
	o.rows, err = ctx.ListState("session-rows")
	return err
}

func (o *sessionTVFOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: the SESSION window function received a %s row; its input must be insert-only", row.Kind)
	}
	t, ok := row.Values[o.w.TimeCol].(int64)
	if !ok {
		return nil // a NULL rowtime belongs to no window
	}
	var ws []span
	if b, ok, err := o.windows.Get(core.VoidNamespace); err != nil {
		return err
	} else if ok {
		if ws, err = decodeSpans(b); err != nil {
			return err
		}
	}
	merged := span{t, t + o.w.Size}
	var keep, into []span
	for _, w := range ws {
		if w.intersects(merged) {
			into = append(into, w)
			merged = span{min(merged.start, w.start), max(merged.end, w.end)}
		} else {
			keep = append(keep, w)
		}
	}
	if merged.end-1 <= ctx.CurrentWatermark() {
		o.late.add()
		return nil
	}
	ns := windowNamespace(merged.start, merged.end)
	var moved [][]byte
	for _, w := range into {
		if w == merged {
			continue
		}
		wns := windowNamespace(w.start, w.end)
		rs, err := o.rows.Get(wns)
		if err != nil {
			return err
		}
		moved = append(moved, rs...)
		if err := o.rows.Clear(wns); err != nil {
			return err
		}
		if err := ctx.DeleteEventTimer(wns, w.end-1); err != nil {
			return err
		}
	}
	if len(into) != 1 || into[0] != merged {
		if err := ctx.RegisterEventTimer(ns, merged.end-1); err != nil {
			return err
		}
	}
	for _, b := range moved {
		if err := o.rows.Add(ns, b); err != nil {
			return err
		}
	}
	enc, err := o.codec.encode(row.Values)
	if err != nil {
		return err
	}
	if err := o.rows.Add(ns, enc); err != nil {
		return err
	}
	ws = append(keep, merged)
	return o.windows.Put(core.VoidNamespace, encodeSpans(ws))
}

func (o *sessionTVFOp) OnTimer(ctx *core.Context, t core.Timer) error {
	ns := []byte(t.Namespace)
	w := span{int64(binary.BigEndian.Uint64(ns)), int64(binary.BigEndian.Uint64(ns[8:]))}
	if b, ok, err := o.windows.Get(core.VoidNamespace); err != nil {
		return err
	} else if ok {
		ws, err := decodeSpans(b)
		if err != nil {
			return err
		}
		var rest []span
		for _, x := range ws {
			if x != w {
				rest = append(rest, x)
			}
		}
		if len(rest) == 0 {
			err = o.windows.Delete(core.VoidNamespace)
		} else {
			err = o.windows.Put(core.VoidNamespace, encodeSpans(rest))
		}
		if err != nil {
			return err
		}
	}
	rs, err := o.rows.Get(t.Namespace)
	if err != nil {
		return err
	}
	// Decode all before clearing: Get's slices belong to the state.
	var out [][]any
	for _, b := range rs {
		vals, err := o.codec.decode(b)
		if err != nil {
			return err
		}
		out = append(out, vals)
	}
	if err := o.rows.Clear(t.Namespace); err != nil {
		return err
	}
	for _, vals := range out {
		vals = append(vals, w.start, w.end, w.end-1)
		if err := ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), w.end-1); err != nil {
			return err
		}
	}
	return nil
}
