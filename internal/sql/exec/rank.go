package exec

import (
	"encoding/binary"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// rowCodec encodes the rows a rank or deduplication keeps in state.
type rowCodec struct{ t core.Type }

func newRowCodec(fields []planner.Field) (rowCodec, error) {
	t, err := rowType(fields)
	return rowCodec{t}, err
}

func (c rowCodec) encode(vals []any) ([]byte, error) {
	return c.t.Encode(nil, core.RowRecord(core.Row{Values: vals}))
}

func (c rowCodec) decode(b []byte) ([]any, error) {
	r, err := c.t.Decode(b)
	if err != nil {
		return nil, err
	}
	return r.Row().Values, nil
}

// sorter compares rows by a rank's order keys: NULL first ascending and
// last descending (Flink's default null collation).
type sorter struct {
	keys  []planner.SortKey
	types []types.Type
}

func newSorter(fields []planner.Field, keys []planner.SortKey) sorter {
	s := sorter{keys: keys}
	for _, k := range keys {
		s.types = append(s.types, fields[k.Index].Type.Plain())
	}
	return s
}

func (s sorter) compare(a, b []any) int {
	for i, k := range s.keys {
		x, y := a[k.Index], b[k.Index]
		var c int
		switch {
		case x == nil && y == nil:
		case x == nil:
			c = -1
		case y == nil:
			c = 1
		default:
			c = types.Compare(x, y, s.types[i])
		}
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// insertTop inserts row into rows (sorted, at most n) after the rows it
// ties with and returns the new list (n+1 long when it pushed a row out)
// and the row's index, or -1 when it does not enter the top n.
func (s sorter) insertTop(rows [][]any, row []any, n int) ([][]any, int) {
	if len(rows) >= n && s.compare(row, rows[len(rows)-1]) >= 0 {
		return rows, -1
	}
	pos := len(rows)
	for i, r := range rows {
		if s.compare(row, r) < 0 {
			pos = i
			break
		}
	}
	rows = append(rows, nil)
	copy(rows[pos+1:], rows[pos:])
	rows[pos] = row
	return rows, pos
}

func withRank(vals []any, rank int) []any {
	out := make([]any, 0, len(vals)+1)
	return append(append(out, vals...), int64(rank))
}

// rankOp is a Top-N over an insert-only input, the three ways Flink's
// append-fast strategy runs one:
//   - ordered by a proctime attribute ascending (Flink's
//     AppendOnlyFirstNFunction): the first N rows to arrive, each +I, counted
//     in keyed value state;
//   - a Top-1 (FastTop1Function): the key's best row in keyed list state,
//     +I for the first, then -U of the old and +U of a strictly better one;
//   - otherwise (AppendOnlyTopNFunction): per key the first N rows in keyed
//     list state. A row entering the top N is emitted as +I; without the row
//     number it deletes (-D) the row it pushes out; with it, every rank from
//     the new row's down is updated (-U of the rank's old row, +U of its new
//     one) and a rank that had no row gets +I.
type rankOp struct {
	r      *planner.Rank
	codec  rowCodec
	sort   sorter
	rows   *core.ListState
	firstN bool
	count  *core.ValueState
}

func (o *rankOp) Open(ctx *core.Context) error {
	var err error
	if o.count, err = ctx.ValueState("first-n-count"); err != nil {
		return err
	}
	o.rows, err = ctx.ListState("topn-rows")
	return err
}

// firstNOf reports whether a Top-N is ordered by a proctime attribute
// ascending only: the first N rows to arrive.
func firstNOf(r *planner.Rank) bool {
	in := r.Input.Fields()
	return len(r.OrderKeys) == 1 && !r.OrderKeys[0].Desc && in[r.OrderKeys[0].Index].Type.Proctime
}

func (o *rankOp) processFirstN(ctx *core.Context, vals []any, ts int64) error {
	var n int64
	if b, ok, err := o.count.Get(core.VoidNamespace); err != nil {
		return err
	} else if ok {
		n = int64(binary.BigEndian.Uint64(b))
	}
	if n >= o.r.N {
		return nil
	}
	n++
	if err := o.count.Put(core.VoidNamespace, binary.BigEndian.AppendUint64(nil, uint64(n))); err != nil {
		return err
	}
	if n < o.r.First {
		return nil // before the rank range's offset
	}
	if o.r.OutputRank {
		vals = withRank(vals, int(n))
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), ts)
}

func (o *rankOp) processTop1(ctx *core.Context, vals []any, ts int64) error {
	rows, err := loadRows(o.rows, core.VoidNamespace, o.codec)
	if err != nil {
		return err
	}
	emit := func(kind core.RowKind, v []any) error {
		if o.r.OutputRank {
			v = withRank(v, 1)
		}
		return ctx.Emit(core.RowRecord(core.Row{Kind: kind, Values: v}), ts)
	}
	if len(rows) > 0 && o.sort.compare(vals, rows[0]) >= 0 {
		return nil
	}
	if err := storeRows(o.rows, core.VoidNamespace, o.codec, [][]any{vals}); err != nil {
		return err
	}
	if len(rows) == 0 {
		return emit(core.Insert, vals)
	}
	if err := emit(core.UpdateBefore, rows[0]); err != nil {
		return err
	}
	return emit(core.UpdateAfter, vals)
}

func loadRows(l *core.ListState, ns string, c rowCodec) ([][]any, error) {
	bs, err := l.Get(ns)
	if err != nil {
		return nil, err
	}
	out := make([][]any, len(bs))
	for i, b := range bs {
		if out[i], err = c.decode(b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func storeRows(l *core.ListState, ns string, c rowCodec, rows [][]any) error {
	bs := make([][]byte, len(rows))
	for i, r := range rows {
		b, err := c.encode(r)
		if err != nil {
			return err
		}
		bs[i] = b
	}
	return l.Update(ns, bs)
}

func (o *rankOp) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: Top-N received a %s row; its input must be insert-only", row.Kind)
	}
	switch {
	case o.firstN:
		return o.processFirstN(ctx, row.Values, ts)
	case o.r.First == 1 && o.r.N == 1:
		return o.processTop1(ctx, row.Values, ts)
	}
	rows, err := loadRows(o.rows, core.VoidNamespace, o.codec)
	if err != nil {
		return err
	}
	n := int(o.r.N)
	rows, pos := o.sort.insertTop(rows, row.Values, n)
	if pos < 0 {
		return nil
	}
	emit := func(kind core.RowKind, vals []any) error {
		return ctx.Emit(core.RowRecord(core.Row{Kind: kind, Values: vals}), ts)
	}
	// ranked is a rank's row as emitted, or nil outside the rank range
	// (Flink's isInRankRange).
	ranked := func(vals []any, q int) []any {
		if int64(q) < o.r.First {
			return nil
		}
		if o.r.OutputRank {
			return withRank(vals, q)
		}
		return vals
	}
	if !o.r.OutputRank && o.r.First == 1 {
		if len(rows) > n {
			if err := emit(core.Delete, rows[n]); err != nil {
				return err
			}
		}
		if err := emit(core.Insert, row.Values); err != nil {
			return err
		}
	} else {
		// Flink's with-row-number algorithm (also for an offset): every
		// rank from the new row's down changes its row.
		m := len(rows)
		for q := pos + 1; q <= min(m-1, n); q++ {
			if before := ranked(rows[q], q); before != nil {
				if err := emit(core.UpdateBefore, before); err != nil {
					return err
				}
				if err := emit(core.UpdateAfter, ranked(rows[q-1], q)); err != nil {
					return err
				}
			}
		}
		if m <= n {
			if last := ranked(rows[m-1], m); last != nil {
				if err := emit(core.Insert, last); err != nil {
					return err
				}
			}
		}
	}
	if len(rows) > n {
		rows = rows[:n]
	}
	return storeRows(o.rows, core.VoidNamespace, o.codec, rows)
}

// dedupOp keeps the first or last row per key. Keeping the last by
// rowtime (Flink's RowTimeDeduplicateKeepLastRowFunction), a row replaces
// the kept one when its time is not earlier; by processing time every row
// replaces it: the first row of a key is +I, a replacement -U of the old
// row and +U of the new. Keeping the first is insert-only: by processing
// time the first row to arrive (Flink's
// ProcTimeDeduplicateKeepFirstRowFunction), by rowtime see firstByRowtime.
type dedupOp struct {
	d       *planner.Deduplicate
	codec   rowCodec
	kept    *core.ValueState
	emitted *core.ValueState // keep-first by rowtime: the key's row was emitted
	late    *lateCounter
}

func (o *dedupOp) Open(ctx *core.Context) error {
	var err error
	if o.kept, err = ctx.ValueState("deduplicate-row"); err != nil {
		return err
	}
	o.emitted, err = ctx.ValueState("deduplicate-emitted")
	return err
}

func (o *dedupOp) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: deduplication received a %s row; its input must be insert-only", row.Kind)
	}
	t, ok := row.Values[o.d.Order].(int64)
	if !ok && !o.d.Proctime {
		return nil
	}
	if !o.d.Proctime && !o.d.KeepLast {
		return o.firstByRowtime(ctx, row.Values, t)
	}
	b, had, err := o.kept.Get(core.VoidNamespace)
	if err != nil {
		return err
	}
	var prev []any
	if had {
		if !o.d.KeepLast && o.d.Proctime {
			return nil // the first row to arrive stays
		}
		if prev, err = o.codec.decode(b); err != nil {
			return err
		}
		pt, _ := prev[o.d.Order].(int64)
		if !o.d.Proctime && ((o.d.KeepLast && t < pt) || (!o.d.KeepLast && t >= pt)) {
			return nil
		}
	}
	enc, err := o.codec.encode(row.Values)
	if err != nil {
		return err
	}
	if err := o.kept.Put(core.VoidNamespace, enc); err != nil {
		return err
	}
	if prev == nil {
		return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: row.Values}), ts)
	}
	if err := ctx.Emit(core.RowRecord(core.Row{Kind: core.UpdateBefore, Values: prev}), ts); err != nil {
		return err
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.UpdateAfter, Values: row.Values}), ts)
}

// firstByRowtime keeps the earliest row of the key until the watermark
// passes its time, then emits it (+I) once; rows behind the watermark are
// late (dropped, counted), and rows after the emission ignored (Flink 2's
// RowTimeDeduplicateKeepFirstRowFunction: insert-only).
func (o *dedupOp) firstByRowtime(ctx *core.Context, vals []any, t int64) error {
	if t < ctx.CurrentWatermark() {
		o.late.add()
		return nil
	}
	if _, done, err := o.emitted.Get(core.VoidNamespace); err != nil || done {
		return err
	}
	b, had, err := o.kept.Get(core.VoidNamespace)
	if err != nil {
		return err
	}
	if had {
		prev, err := o.codec.decode(b)
		if err != nil {
			return err
		}
		pt, _ := prev[o.d.Order].(int64)
		if t >= pt {
			return nil
		}
		if err := ctx.DeleteEventTimer(core.VoidNamespace, pt); err != nil {
			return err
		}
	}
	if err := ctx.RegisterEventTimer(core.VoidNamespace, t); err != nil {
		return err
	}
	enc, err := o.codec.encode(vals)
	if err != nil {
		return err
	}
	return o.kept.Put(core.VoidNamespace, enc)
}

func (o *dedupOp) OnTimer(ctx *core.Context, t core.Timer) error {
	b, ok, err := o.kept.Get(core.VoidNamespace)
	if err != nil || !ok {
		return err
	}
	vals, err := o.codec.decode(b)
	if err != nil {
		return err
	}
	if err := o.kept.Delete(core.VoidNamespace); err != nil {
		return err
	}
	if err := o.emitted.Put(core.VoidNamespace, nil); err != nil {
		return err
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), t.Time)
}

// windowRankOp is a Top-N per window (Flink's window rank): per key and
// window the first N rows in keyed list state under the window's
// namespace, emitted ranked (+I) by an event-time timer at the window's
// last millisecond, then cleared. Rows of a window the watermark has
// passed are late: dropped and counted.
type windowRankOp struct {
	r     *planner.WindowRank
	codec rowCodec
	sort  sorter
	rows  *core.ListState
	late  *lateCounter
}

func (o *windowRankOp) Open(ctx *core.Context) error {
	var err error
	o.rows, err = ctx.ListState("window-topn-rows")
	return err
}

// windowOfRow is the namespace and end of the window a row names.
func windowOfRow(vals []any, start, end int) (string, int64, bool) {
	s, ok1 := vals[start].(int64)
	e, ok2 := vals[end].(int64)
	return windowNamespace(s, e), e, ok1 && ok2
}

func (o *windowRankOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: window Top-N received a %s row; its input must be insert-only", row.Kind)
	}
	ns, end, ok := windowOfRow(row.Values, o.r.Start, o.r.End)
	if !ok {
		return nil
	}
	if end-1 <= ctx.CurrentWatermark() {
		o.late.add()
		return nil
	}
	rows, err := loadRows(o.rows, ns, o.codec)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		if err := ctx.RegisterEventTimer(ns, end-1); err != nil {
			return err
		}
	}
	n := int(o.r.N)
	rows, pos := o.sort.insertTop(rows, row.Values, n)
	if pos < 0 {
		return nil
	}
	if len(rows) > n {
		rows = rows[:n]
	}
	return storeRows(o.rows, ns, o.codec, rows)
}

func (o *windowRankOp) OnTimer(ctx *core.Context, t core.Timer) error {
	rows, err := loadRows(o.rows, t.Namespace, o.codec)
	if err != nil {
		return err
	}
	if err := o.rows.Clear(t.Namespace); err != nil {
		return err
	}
	for i, vals := range rows {
		if int64(i+1) < o.r.First {
			continue
		}
		if o.r.OutputRank {
			vals = withRank(vals, i+1)
		}
		if err := ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), t.Time); err != nil {
			return err
		}
	}
	return nil
}

// windowDedupOp keeps the first or last row of each key and window by the
// window's time column (Flink's window deduplication) and emits it when
// the watermark passes the window's end.
type windowDedupOp struct {
	d     *planner.WindowDeduplicate
	codec rowCodec
	kept  *core.ValueState
	late  *lateCounter
}

func (o *windowDedupOp) Open(ctx *core.Context) error {
	var err error
	o.kept, err = ctx.ValueState("window-deduplicate-row")
	return err
}

func (o *windowDedupOp) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert {
		return fmt.Errorf("sql: window deduplication received a %s row; its input must be insert-only", row.Kind)
	}
	ns, end, ok := windowOfRow(row.Values, o.d.Start, o.d.End)
	t, ok2 := row.Values[o.d.Order].(int64)
	if !ok || !ok2 {
		return nil
	}
	if end-1 <= ctx.CurrentWatermark() {
		o.late.add()
		return nil
	}
	b, had, err := o.kept.Get(ns)
	if err != nil {
		return err
	}
	if had {
		prev, err := o.codec.decode(b)
		if err != nil {
			return err
		}
		pt, _ := prev[o.d.Order].(int64)
		if (o.d.KeepLast && t < pt) || (!o.d.KeepLast && t >= pt) {
			return nil
		}
	} else if err := ctx.RegisterEventTimer(ns, end-1); err != nil {
		return err
	}
	enc, err := o.codec.encode(row.Values)
	if err != nil {
		return err
	}
	return o.kept.Put(ns, enc)
}

func (o *windowDedupOp) OnTimer(ctx *core.Context, t core.Timer) error {
	b, ok, err := o.kept.Get(t.Namespace)
	if err != nil || !ok {
		return err
	}
	if err := o.kept.Delete(t.Namespace); err != nil {
		return err
	}
	vals, err := o.codec.decode(b)
	if err != nil {
		return err
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), t.Time)
}
