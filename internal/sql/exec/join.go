package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// joinKeySelector encodes a side's join key: its key expressions, each
// cast to the type both sides compare it in, so that equal keys of
// different types (INT and BIGINT, DECIMAL scales) hash alike.
func joinKeySelector(exprs []planner.Expr, ts []types.Type) core.KeySelector {
	idx := make([]int, len(exprs))
	for i := range idx {
		idx[i] = i
	}
	enc := keySelector(idx)
	return func(r core.Record, dst []byte) []byte {
		vals, _ := joinKey(exprs, ts, r.Row().Values)
		return enc(core.RowRecord(core.Row{Values: vals}), dst)
	}
}

// joinKey evaluates a row's join key; ok is false when a part is NULL
// (or fails to evaluate), and such a row matches nothing.
func joinKey(exprs []planner.Expr, ts []types.Type, row []any) (vals []any, ok bool) {
	vals = make([]any, len(exprs))
	ok = true
	for i, e := range exprs {
		v, err := e.Eval(row)
		if err == nil && v != nil {
			v, err = types.Cast(v, e.Type(), ts[i])
		}
		if err != nil || v == nil {
			vals[i], ok = nil, false
			continue
		}
		vals[i] = v
	}
	return vals, ok
}

// joinCore is what the regular and the interval join share: the rows'
// codecs, the residual condition and how joined rows are built.
type joinCore struct {
	j      *planner.Join
	codecs [2]rowCodec
	widths [2]int
}

func newJoinCore(j *planner.Join) (*joinCore, error) {
	lc, err := newRowCodec(j.Left.Fields())
	if err != nil {
		return nil, err
	}
	rc, err := newRowCodec(j.Right.Fields())
	if err != nil {
		return nil, err
	}
	return &joinCore{j: j, codecs: [2]rowCodec{lc, rc}, widths: [2]int{len(j.Left.Fields()), len(j.Right.Fields())}}, nil
}

func (c *joinCore) outer(side int) bool {
	if side == 0 {
		return c.j.LeftOuter()
	}
	return c.j.RightOuter()
}

func (c *joinCore) keyed(side int, row []any) bool {
	if side == 0 {
		_, ok := joinKey(c.j.LeftKeys, c.j.KeyTypes, row)
		return ok
	}
	_, ok := joinKey(c.j.RightKeys, c.j.KeyTypes, row)
	return ok
}

// joined is the output row of a row of side and one of the other side
// (nil: NULL padding).
func (c *joinCore) joined(side int, row, other []any) []any {
	out := make([]any, c.widths[0]+c.widths[1])
	l, r := row, other
	if side == 1 {
		l, r = other, row
	}
	copy(out, l)
	copy(out[c.widths[0]:], r)
	return out
}

// matches evaluates the residual condition on a joined row.
func (c *joinCore) matches(row []any) (bool, error) {
	if c.j.Residual == nil {
		return true, nil
	}
	v, err := c.j.Residual.Eval(row)
	if err != nil {
		return false, fmt.Errorf("sql: evaluating join condition %s: %w", c.j.Residual, err)
	}
	b, _ := v.(bool)
	return b, nil
}

func emitRow(ctx *core.Context, kind core.RowKind, vals []any) error {
	return ctx.Emit(core.RowRecord(core.Row{Kind: kind, Values: vals}), core.NoTimestamp)
}

// joinEntry is a stored row of one side: its encoding (the map key), how
// many times it is there, and, for an outer side, with how many rows of
// the other side it is joined; written is when the entry was last written
// (processing time, for the state TTL).
type joinEntry struct {
	key     string
	vals    []any
	count   int64
	assoc   int64
	written int64
}

func encodeJoinEntry(e joinEntry) []byte {
	b := binary.AppendUvarint(nil, uint64(e.count))
	b = binary.AppendUvarint(b, uint64(e.assoc))
	return binary.AppendVarint(b, e.written)
}

func decodeJoinEntry(key string, b []byte) (joinEntry, error) {
	e := joinEntry{key: key}
	var n int
	var u uint64
	if u, n = binary.Uvarint(b); n <= 0 {
		return e, errCorruptJoinState
	}
	e.count, b = int64(u), b[n:]
	if u, n = binary.Uvarint(b); n <= 0 {
		return e, errCorruptJoinState
	}
	e.assoc, b = int64(u), b[n:]
	if e.written, n = binary.Varint(b); n <= 0 {
		return e, errCorruptJoinState
	}
	return e, nil
}

var errCorruptJoinState = errors.New("sql: join state entry is corrupt")

// joinOp is a regular join (Flink's StreamingJoinOperator): per join key,
// each side's rows in keyed map state (row encoding → count and, for an
// outer side, the number of rows it is joined with). A row is matched
// against the other side's rows of its key that pass the residual
// condition and emitted joined; an outer side's row without a match is
// emitted padded with NULLs, and that padded row is retracted (-D) when
// its first match arrives and inserted again when its last match is
// retracted. With a state TTL (ttl > 0 ms) a row not written for ttl is
// invisible and dropped, as Flink's state TTL (OnCreateAndWrite,
// NeverReturnExpired) does, by a processing-time timer.
type joinOp struct {
	*joinCore
	ttl   int64
	state [2]*core.MapState
}

const joinTTLNamespace = "ttl"

func (o *joinOp) Open(ctx *core.Context) error {
	var err error
	if o.state[0], err = ctx.MapState("join-left"); err != nil {
		return err
	}
	o.state[1], err = ctx.MapState("join-right")
	return err
}

// rows are the live entries of side's state for the current key, in the
// order of their encodings (deterministic output); expired ones are
// removed.
func (o *joinOp) rows(ctx *core.Context, side int) ([]joinEntry, error) {
	var out []joinEntry
	var expired []string
	now := ctx.CurrentProcessingTime()
	err := o.state[side].Entries(core.VoidNamespace, func(k string, v []byte) error {
		e, err := decodeJoinEntry(k, v)
		if err != nil {
			return err
		}
		if o.ttl > 0 && e.written+o.ttl <= now {
			expired = append(expired, k)
			return nil
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range expired {
		if err := o.state[side].Remove(core.VoidNamespace, k); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b joinEntry) int { return strings.Compare(a.key, b.key) })
	for i := range out {
		if out[i].vals, err = o.codecs[side].decode([]byte(out[i].key)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (o *joinOp) put(ctx *core.Context, side int, e joinEntry) error {
	if e.count <= 0 {
		return o.state[side].Remove(core.VoidNamespace, e.key)
	}
	now := ctx.CurrentProcessingTime()
	e.written = now
	if o.ttl > 0 {
		if err := ctx.RegisterProcessingTimer(joinTTLNamespace, now+o.ttl); err != nil {
			return err
		}
	}
	return o.state[side].Put(core.VoidNamespace, e.key, encodeJoinEntry(e))
}

func (o *joinOp) ProcessElement(ctx *core.Context, side int, r core.Record, _ int64) error {
	row := r.Row()
	other := 1 - side
	inputOuter, otherOuter := o.outer(side), o.outer(other)
	accumulate := row.Kind == core.Insert || row.Kind == core.UpdateAfter
	if !o.keyed(side, row.Values) {
		// A NULL key equals nothing: an outer side's row stays padded.
		if !inputOuter {
			return nil
		}
		kind := core.Insert
		if !accumulate {
			kind = core.Delete
		}
		return emitRow(ctx, kind, o.joined(side, row.Values, nil))
	}
	enc, err := o.codecs[side].encode(row.Values)
	if err != nil {
		return err
	}
	key := string(enc)
	// The other side's rows that match this one.
	cands, err := o.rows(ctx, other)
	if err != nil {
		return err
	}
	var matched []joinEntry
	var nMatched int64
	for _, e := range cands {
		ok, err := o.matches(o.joined(side, row.Values, e.vals))
		if err != nil {
			return err
		}
		if ok {
			matched = append(matched, e)
			nMatched += e.count
		}
	}
	self, ok, err := o.state[side].Get(core.VoidNamespace, key)
	if err != nil {
		return err
	}
	me := joinEntry{key: key}
	if ok {
		if me, err = decodeJoinEntry(key, self); err != nil {
			return err
		}
		if o.ttl > 0 && me.written+o.ttl <= ctx.CurrentProcessingTime() {
			me, ok = joinEntry{key: key}, false // expired: as if it were not there
		}
	}
	if accumulate {
		if len(matched) == 0 {
			if inputOuter {
				if err := emitRow(ctx, core.Insert, o.joined(side, row.Values, nil)); err != nil {
					return err
				}
			}
			me.count++
			me.assoc = 0
			return o.put(ctx, side, me)
		}
		if otherOuter {
			for _, e := range matched {
				if e.assoc == 0 {
					for range e.count {
						if err := emitRow(ctx, core.Delete, o.joined(other, e.vals, nil)); err != nil {
							return err
						}
					}
				}
				e.assoc++
				if err := o.put(ctx, other, e); err != nil {
					return err
				}
			}
		}
		kind := row.Kind
		if inputOuter || otherOuter {
			kind = core.Insert
		}
		for _, e := range matched {
			for range e.count {
				if err := emitRow(ctx, kind, o.joined(side, row.Values, e.vals)); err != nil {
					return err
				}
			}
		}
		me.count++
		me.assoc = nMatched
		return o.put(ctx, side, me)
	}
	// A retraction (-U or -D) of a stored row.
	if ok {
		me.count--
		if err := o.put(ctx, side, me); err != nil {
			return err
		}
	}
	if len(matched) == 0 {
		if inputOuter {
			return emitRow(ctx, core.Delete, o.joined(side, row.Values, nil))
		}
		return nil
	}
	kind := row.Kind
	if inputOuter {
		kind = core.Delete
	}
	for _, e := range matched {
		for range e.count {
			if err := emitRow(ctx, kind, o.joined(side, row.Values, e.vals)); err != nil {
				return err
			}
		}
	}
	if otherOuter {
		for _, e := range matched {
			if e.assoc == 1 {
				for range e.count {
					if err := emitRow(ctx, core.Insert, o.joined(other, e.vals, nil)); err != nil {
						return err
					}
				}
			}
			if e.assoc > 0 {
				e.assoc--
			}
			if err := o.put(ctx, other, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// OnTimer drops the current key's rows whose TTL has passed.
func (o *joinOp) OnTimer(ctx *core.Context, t core.Timer) error {
	for side := range o.state {
		if _, err := o.rows(ctx, side); err != nil {
			return err
		}
	}
	return nil
}

// intervalJoinOp is an interval join on rowtime (Flink's
// RowTimeIntervalJoin): a left row at tl matches right rows at tr with
// Lower <= tl - tr <= Upper. Each side's rows wait in keyed map state
// (namespace-free; the map key is the row's time and encoding) until the
// watermark shows that no row of the other side can match them any more:
// a left row at tl once the watermark reaches tl - Lower, a right row at
// tr once it reaches tr + Upper. An event-time timer then evicts them,
// emitting an outer side's unmatched rows padded with NULLs. A row that
// arrives when its interval is already over is matched against what is
// stored and not stored itself. The output is insert-only.
type intervalJoinOp struct {
	*joinCore
	iv    planner.IntervalBounds
	state [2]*core.MapState
}

var intervalNamespaces = [2]string{"left", "right"}

func (o *intervalJoinOp) Open(ctx *core.Context) error {
	var err error
	if o.state[0], err = ctx.MapState("interval-left"); err != nil {
		return err
	}
	o.state[1], err = ctx.MapState("interval-right")
	return err
}

// expiry is when a row of side at ts can match nothing more.
func (o *intervalJoinOp) expiry(side int, ts int64) int64 {
	if side == 0 {
		return ts - o.iv.Lower
	}
	return ts + o.iv.Upper
}

func (o *intervalJoinOp) timeOf(side int, row []any) (int64, bool) {
	col := o.iv.LeftTime
	if side == 1 {
		col = o.iv.RightTime
	}
	t, ok := row[col].(int64)
	return t, ok
}

// intervalEntry is a stored row: the map key is its time (8 bytes, big
// endian) and encoding; the value its count and whether it was joined.
type intervalEntry struct {
	key     string
	ts      int64
	vals    []any
	count   int64
	matched bool
}

func (o *intervalJoinOp) entries(side int) ([]intervalEntry, error) {
	var out []intervalEntry
	err := o.state[side].Entries(core.VoidNamespace, func(k string, v []byte) error {
		if len(k) < 8 || len(v) < 2 {
			return errCorruptJoinState
		}
		c, n := binary.Uvarint(v)
		if n <= 0 || n >= len(v) {
			return errCorruptJoinState
		}
		out = append(out, intervalEntry{key: k, ts: int64(binary.BigEndian.Uint64([]byte(k[:8]))), count: int64(c), matched: v[n] == 1})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b intervalEntry) int { return strings.Compare(a.key, b.key) })
	for i := range out {
		if out[i].vals, err = o.codecs[side].decode([]byte(out[i].key[8:])); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (o *intervalJoinOp) put(side int, e intervalEntry) error {
	v := binary.AppendUvarint(nil, uint64(e.count))
	if e.matched {
		v = append(v, 1)
	} else {
		v = append(v, 0)
	}
	return o.state[side].Put(core.VoidNamespace, e.key, v)
}

func (o *intervalJoinOp) ProcessElement(ctx *core.Context, side int, r core.Record, _ int64) error {
	row := r.Row()
	if row.Kind != core.Insert && row.Kind != core.UpdateAfter {
		return fmt.Errorf("sql: an interval join's input must be insert-only (it received %s)", row.Kind)
	}
	other := 1 - side
	ts, ok := o.timeOf(side, row.Values)
	if !ok || !o.keyed(side, row.Values) {
		if o.outer(side) {
			return emitRow(ctx, core.Insert, o.joined(side, row.Values, nil))
		}
		return nil
	}
	cands, err := o.entries(other)
	if err != nil {
		return err
	}
	matched := false
	for _, e := range cands {
		d := ts - e.ts // tl - tr
		if side == 1 {
			d = e.ts - ts
		}
		if d < o.iv.Lower || d > o.iv.Upper {
			continue
		}
		out := o.joined(side, row.Values, e.vals)
		ok, err := o.matches(out)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		matched = true
		for range e.count {
			if err := emitRow(ctx, core.Insert, out); err != nil {
				return err
			}
		}
		if !e.matched {
			e.matched = true
			if err := o.put(other, e); err != nil {
				return err
			}
		}
	}
	exp := o.expiry(side, ts)
	if ctx.CurrentWatermark() >= exp {
		// Its interval is over: nothing later can match it.
		if !matched && o.outer(side) {
			return emitRow(ctx, core.Insert, o.joined(side, row.Values, nil))
		}
		return nil
	}
	enc, err := o.codecs[side].encode(row.Values)
	if err != nil {
		return err
	}
	key := string(binary.BigEndian.AppendUint64(nil, uint64(ts))) + string(enc)
	me := intervalEntry{key: key, matched: matched}
	if v, ok, err := o.state[side].Get(core.VoidNamespace, key); err != nil {
		return err
	} else if ok {
		c, n := binary.Uvarint(v)
		if n <= 0 || n >= len(v) {
			return errCorruptJoinState
		}
		me.count, me.matched = int64(c), matched || v[n] == 1
	}
	me.count++
	if err := o.put(side, me); err != nil {
		return err
	}
	return ctx.RegisterEventTimer(intervalNamespaces[side], exp)
}

// OnTimer evicts the rows of a side whose interval the watermark passed,
// emitting an outer side's unmatched ones padded.
func (o *intervalJoinOp) OnTimer(ctx *core.Context, t core.Timer) error {
	side := 0
	if t.Namespace == intervalNamespaces[1] {
		side = 1
	}
	es, err := o.entries(side)
	if err != nil {
		return err
	}
	for _, e := range es {
		if o.expiry(side, e.ts) > t.Time {
			continue
		}
		if !e.matched && o.outer(side) {
			for range e.count {
				if err := emitRow(ctx, core.Insert, o.joined(side, e.vals, nil)); err != nil {
					return err
				}
			}
		}
		if err := o.state[side].Remove(core.VoidNamespace, e.key); err != nil {
			return err
		}
	}
	return nil
}

// joinName is the join operator's name in the job graph.
func joinName(j *planner.Join) string {
	var keys []string
	for i := range j.LeftKeys {
		keys = append(keys, j.LeftKeys[i].String()+"="+j.RightKeys[i].String())
	}
	name := "Join"
	if j.Interval != nil {
		name = "IntervalJoin"
	}
	return name + "(" + strings.ToLower(j.Kind) + ", " + strings.Join(keys, ", ") + ")"
}

// stateTTL is table.exec.state.ttl in milliseconds (0: never).
func stateTTL(raw string) (int64, error) {
	if raw == "" || raw == "0" {
		return 0, nil
	}
	d, err := conf.ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("sql: 'table.exec.state.ttl' = '%s': %w", raw, err)
	}
	return d.Milliseconds(), nil
}
