package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/types"
)

// Join is a regular join (INNER, LEFT, RIGHT or FULL) on an equality of
// keys, or, with Interval set, an interval join of two rowtime attributes.
// Without an equality (ON a.x < b.y) it has no keys and runs on one
// parallel instance, as Flink runs it.
// Rows: the left input's fields, then the right's (a right name the left
// already has gets a suffix, as Flink's id0), both without time attribute
// marks; the fields of a side the join pads with NULLs are nullable.
//
// A regular join keeps both sides' rows in keyed state by the join key and
// emits a changelog (Flink's StreamingJoinOperator): an INNER join of two
// insert-only inputs is insert-only; an outer join emits the NULL-padded
// row first and retracts it (-D) when a match arrives; updating inputs
// retract stored rows and their joined rows. An interval join's output is
// insert-only: a padded row is emitted once the watermark passes the
// row's interval without a match, and rows that can match nothing more
// are evicted then.
type Join struct {
	Kind        string // INNER, LEFT, RIGHT, FULL
	Left, Right Node
	// LeftKeys and RightKeys are the equi-join keys, over each input,
	// compared as KeyTypes (the values are cast to them before hashing).
	LeftKeys, RightKeys []Expr
	KeyTypes            []types.Type
	// Residual is the rest of the condition, over the joined row (left
	// fields, then right), or nil.
	Residual Expr
	// Cond is the whole condition, for EXPLAIN.
	Cond Expr
	// Interval, when set, makes it an interval join.
	Interval *IntervalBounds
	F        []Field
}

// IntervalBounds are an interval join's time bounds: a left row at tl and a
// right row at tr match when Lower <= tl - tr <= Upper (milliseconds);
// LeftTime and RightTime are the rowtime fields in each input.
type IntervalBounds struct {
	LeftTime, RightTime int
	Lower, Upper        int64
}

// LeftOuter reports a join that pads unmatched left rows.
func (j *Join) LeftOuter() bool { return j.Kind == "LEFT" || j.Kind == "FULL" }

// RightOuter reports a join that pads unmatched right rows.
func (j *Join) RightOuter() bool { return j.Kind == "RIGHT" || j.Kind == "FULL" }

func (j *Join) Fields() []Field { return j.F }
func (j *Join) Inputs() []Node  { return []Node{j.Left, j.Right} }
func (j *Join) Changelog() Changelog {
	if j.Interval != nil {
		return InsertOnly
	}
	if j.Kind == "INNER" && j.Left.Changelog() == InsertOnly && j.Right.Changelog() == InsertOnly {
		return InsertOnly
	}
	return Updating
}

var joinTypeNames = map[string]string{"INNER": "InnerJoin", "LEFT": "LeftOuterJoin", "RIGHT": "RightOuterJoin", "FULL": "FullOuterJoin"}

func (j *Join) describe() string {
	if j.Interval != nil {
		iv := j.Interval
		return fmt.Sprintf("IntervalJoin(joinType=[%s], windowBounds=[isRowTime=true, leftLowerBound=%d, leftUpperBound=%d, leftTimeIndex=%d, rightTimeIndex=%d], where=[%s], select=[%s])",
			joinTypeNames[j.Kind], iv.Lower, iv.Upper, iv.LeftTime, iv.RightTime, j.Cond, fieldNames(j.F))
	}
	return fmt.Sprintf("Join(joinType=[%s], where=[%s], select=[%s])", joinTypeNames[j.Kind], j.Cond, fieldNames(j.F))
}

// exchange: both inputs are hashed by their join keys; EXPLAIN shows the
// keys under the join.
func (j *Join) exchange() string {
	if len(j.LeftKeys) == 0 {
		return "Exchange(distribution=[single])"
	}
	var l, r []string
	for i := range j.LeftKeys {
		l = append(l, j.LeftKeys[i].String())
		r = append(r, j.RightKeys[i].String())
	}
	return fmt.Sprintf("Exchange(distribution=[hash[%s] x hash[%s]])", strings.Join(l, ", "), strings.Join(r, ", "))
}

// joinScope is the scope of a join's output: the entries of both sides,
// the right's moved past the left's fields, typed as the join's fields.
func joinScope(l, r *scope, nLeft int, fields []Field) *scope {
	sc := &scope{}
	for i, side := range []*scope{l, r} {
		for _, e := range side.entries {
			c := e.e.(*ColRef)
			idx := c.Index
			if i == 1 {
				idx += nLeft
			}
			sc.add(e.qual, e.name, &ColRef{Index: idx, Name: fields[idx].Name, T: fields[idx].Type})
		}
	}
	return sc
}

// conjuncts splits e at its top-level ANDs.
func conjuncts(e parser.Expr, out []parser.Expr) []parser.Expr {
	if x, ok := e.(*parser.Binary); ok && strings.EqualFold(x.Op, "AND") {
		return conjuncts(x.R, conjuncts(x.L, out))
	}
	return append(out, e)
}

// join plans a JOIN (or a comma list's implicit join, whose condition is
// where: the WHERE conjuncts that bind in its scope, which it takes from
// *where).
func (p *session) join(j *parser.Join, where *[]parser.Expr) (Node, *scope, error) {
	side := func(f parser.From) (Node, *scope, error) {
		if sub, ok := f.(*parser.Join); ok {
			if sub.Kind == "," {
				return p.join(sub, where)
			}
			return p.join(sub, nil)
		}
		n, sc, _, err := p.from(f)
		return n, sc, err
	}
	left, lsc, err := side(j.Left)
	if err != nil {
		return nil, nil, err
	}
	right, rsc, err := side(j.Right)
	if err != nil {
		return nil, nil, err
	}
	kind := j.Kind
	if kind == "," {
		kind = "INNER"
	}
	lf, rf := left.Fields(), right.Fields()
	fields := make([]Field, 0, len(lf)+len(rf))
	seen := map[string]bool{}
	for _, f := range lf {
		f.Type = f.Type.Plain()
		if kind == "RIGHT" || kind == "FULL" {
			f.Type = f.Type.Nullable()
		}
		seen[f.Name] = true
		fields = append(fields, f)
	}
	for _, f := range rf {
		f.Type = f.Type.Plain()
		if kind == "LEFT" || kind == "FULL" {
			f.Type = f.Type.Nullable()
		}
		name := f.Name
		for n := 0; seen[name]; n++ {
			name = fmt.Sprintf("%s%d", f.Name, n)
		}
		seen[name] = true
		f.Name = name
		fields = append(fields, f)
	}
	sc := joinScope(lsc, rsc, len(lf), fields)
	// The condition: ON's conjuncts, or the WHERE's that bind here.
	var conds []parser.Expr
	if j.On != nil {
		conds = conjuncts(j.On, nil)
	} else if where != nil {
		var rest []parser.Expr
		for _, c := range *where {
			if _, err := p.bind(c, sc, nil); err == nil && !containsAgg(c) {
				conds = append(conds, c)
			} else {
				rest = append(rest, c)
			}
		}
		*where = rest
	}
	out := &Join{Kind: kind, Left: left, Right: right, F: fields}
	var residual, all []Expr
	var bounds []timeBound
	relatesSides := false // some conjunct names columns of both sides
	for _, c := range conds {
		e, err := p.bind(c, sc, nil)
		if err != nil {
			return nil, nil, err
		}
		if e.Type().Kind != types.Boolean {
			return nil, nil, p.errAt(c.Position(), ErrInvalid, "a join condition must be BOOLEAN, not %s", e.Type())
		}
		all = append(all, e)
		if !p.binds(c, lsc) && !p.binds(c, rsc) {
			relatesSides = true
		}
		if k, ok := p.equiKey(c, e, lsc, rsc); ok {
			out.LeftKeys, out.RightKeys, out.KeyTypes = append(out.LeftKeys, k.l), append(out.RightKeys, k.r), append(out.KeyTypes, k.t)
			continue
		}
		parts := []Expr{e}
		if lg, ok := e.(*Logic); ok && lg.Op == "AND" { // a BETWEEN
			parts = lg.Args
		}
		for _, x := range parts {
			if b, ok := timeBoundOf(x, lf, rf); ok {
				bounds = append(bounds, b)
			}
		}
		residual = append(residual, e)
	}
	out.Cond = andOf(all)
	out.Residual = andOf(residual)
	if len(out.LeftKeys) == 0 && !relatesSides {
		if where != nil {
			// A mistake in a WHERE conjunct that was meant for this join
			// says more than the missing condition does.
			for _, c := range *where {
				if _, err := p.bind(c, sc, nil); err != nil {
					return nil, nil, err
				}
			}
		}
		return nil, nil, p.errAt(j.Position(), ErrInvalid,
			"the join has no condition on columns of both sides: a cross join (Cartesian product) is not supported; join ON a condition relating both sides, e.g. ON a.id = b.id")
	}
	if iv := intervalOf(bounds); iv != nil && left.Changelog() == InsertOnly && right.Changelog() == InsertOnly {
		// The residual keeps the time bounds too (the join checks them
		// first): harmless, and EXPLAIN's where stays the whole condition.
		out.Interval = iv
	}
	return out, sc, nil
}

// binds reports whether c binds in scope sc alone.
func (p *session) binds(c parser.Expr, sc *scope) bool {
	_, err := p.bind(c, sc, nil)
	return err == nil
}

func andOf(es []Expr) Expr {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return &Logic{Op: "AND", Args: es}
}

type equiKey struct {
	l, r Expr
	t    types.Type
}

// equiKey recognizes c (bound as e in the join's scope) as an equality of
// an expression of the left input with one of the right: each operand
// bound in one side's scope alone.
func (p *session) equiKey(c parser.Expr, e Expr, lsc, rsc *scope) (equiKey, bool) {
	b, ok := c.(*parser.Binary)
	cmp, ok2 := e.(*Compare)
	if !ok || !ok2 || b.Op != "=" {
		return equiKey{}, false
	}
	try := func(x parser.Expr, sc *scope) Expr {
		if len(colIdents(x)) == 0 {
			return nil // a constant belongs to neither side
		}
		v, err := p.bind(x, sc, nil)
		if err != nil {
			return nil
		}
		return v
	}
	if l, r := try(b.L, lsc), try(b.R, rsc); l != nil && r != nil {
		return equiKey{l, r, cmp.T}, true
	}
	if l, r := try(b.R, lsc), try(b.L, rsc); l != nil && r != nil {
		return equiKey{l, r, cmp.T}, true
	}
	return equiKey{}, false
}

func colIdents(e parser.Expr) []*parser.Ident {
	var out []*parser.Ident
	walk(e, func(x parser.Expr) {
		if id, ok := x.(*parser.Ident); ok {
			out = append(out, id)
		}
	})
	return out
}

// timeBound is tl - tr Op C, for the rowtime fields tl of the left input
// and tr of the right.
type timeBound struct {
	lt, rt int
	op     string
	c      int64
}

// timeBoundOf recognizes e as a comparison of the left input's rowtime
// (plus or minus a constant interval) with the right input's.
func timeBoundOf(e Expr, lf, rf []Field) (timeBound, bool) {
	cmp, ok := e.(*Compare)
	if !ok || cmp.Op == "=" || cmp.Op == "<>" {
		return timeBound{}, false
	}
	nl := len(lf)
	// term is a rowtime column plus a constant.
	term := func(x Expr) (col int, c int64, ok bool) {
		switch x := x.(type) {
		case *ColRef:
			return x.Index, 0, true
		case *Arith:
			k, isConst := x.R.(*Const)
			col, ok := x.L.(*ColRef)
			if !isConst || !ok || k.V == nil || k.T.Kind != types.IntervalDayTime {
				return 0, 0, false
			}
			v := k.V.(int64)
			if x.Op == "-" {
				v = -v
			} else if x.Op != "+" {
				return 0, 0, false
			}
			return col.Index, v, true
		}
		return 0, 0, false
	}
	isRowtime := func(col int) bool {
		if col < nl {
			return lf[col].Type.Rowtime
		}
		return col-nl < len(rf) && rf[col-nl].Type.Rowtime
	}
	a, ca, ok1 := term(cmp.L)
	b, cb, ok2 := term(cmp.R)
	if !ok1 || !ok2 || !isRowtime(a) || !isRowtime(b) {
		return timeBound{}, false
	}
	op := cmp.Op
	switch {
	case a < nl && b >= nl: // tl + ca op tr + cb: tl - tr op cb - ca
		return timeBound{a, b - nl, op, cb - ca}, true
	case b < nl && a >= nl: // tr + ca op tl + cb: tl - tr flip(op) ca - cb
		flip := map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
		return timeBound{b, a - nl, flip, ca - cb}, true
	}
	return timeBound{}, false
}

// intervalOf makes an interval join's bounds from time bounds on the same
// pair of rowtime fields: one lower and one upper bound at least (the
// tightest of each kind); nil if there are none.
func intervalOf(bs []timeBound) *IntervalBounds {
	var iv *IntervalBounds
	hasLo, hasHi := false, false
	for _, b := range bs {
		if iv == nil {
			iv = &IntervalBounds{LeftTime: b.lt, RightTime: b.rt}
		}
		if b.lt != iv.LeftTime || b.rt != iv.RightTime {
			return nil
		}
		switch b.op {
		case ">", ">=":
			lo := b.c
			if b.op == ">" {
				lo++
			}
			if !hasLo || lo > iv.Lower {
				iv.Lower = lo
			}
			hasLo = true
		case "<", "<=":
			hi := b.c
			if b.op == "<" {
				hi--
			}
			if !hasHi || hi < iv.Upper {
				iv.Upper = hi
			}
			hasHi = true
		}
	}
	if !hasLo || !hasHi {
		return nil
	}
	return iv
}

// joinUpsertKey is the upsert key of an updating join's rows, by Flink's
// rules for unique keys of a join: a side's key stays unique when the
// other side is unique on its join keys and does not pad it with NULLs
// more than once.
func joinUpsertKey(j *Join) ([]int, bool) {
	lk, lok := upsertKey(j.Left)
	rk, rok := upsertKey(j.Right)
	nl := len(j.Left.Fields())
	uniqueOn := func(key []int, keys []Expr) bool {
		var cols []int
		for _, k := range keys {
			if c, ok := k.(*ColRef); ok {
				cols = append(cols, c.Index)
			}
		}
		for _, k := range key {
			if !slices.Contains(cols, k) {
				return false
			}
		}
		return true
	}
	if lok && rok && uniqueOn(rk, j.RightKeys) && (j.Kind == "INNER" || j.Kind == "LEFT") {
		return lk, true
	}
	shift := func(k []int) []int {
		out := make([]int, len(k))
		for i, x := range k {
			out[i] = x + nl
		}
		return out
	}
	if lok && rok && uniqueOn(lk, j.LeftKeys) && (j.Kind == "INNER" || j.Kind == "RIGHT") {
		return shift(rk), true
	}
	if lok && rok {
		return append(slices.Clone(lk), shift(rk)...), true
	}
	return nil, false
}
