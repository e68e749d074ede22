package planner

import (
	"fmt"
	"strconv"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/types"
)

// rowNumberItem is the index of q's ROW_NUMBER() OVER (...) item, or -1.
func rowNumberItem(q *parser.Select) int {
	if len(q.UnionAll) > 0 {
		return -1
	}
	for i, it := range q.Items {
		if c, ok := it.Expr.(*parser.Call); ok && c.Name == "ROW_NUMBER" && c.Over != nil {
			return i
		}
	}
	return -1
}

// overError is the error of a window function call where none is planned.
func (p *session) overError(c *parser.Call) error {
	if c.Name == "ROW_NUMBER" {
		return p.errAt(c.Position(), ErrInvalid,
			"ROW_NUMBER() OVER (...) is supported for Top-N and deduplication only: in a subquery whose enclosing query filters its row number (WHERE rn = 1, rn <= N or rn < N)")
	}
	return p.errAt(c.Position(), ErrInvalid, "%s(...) OVER (...) is not supported yet (over aggregations); ROW_NUMBER() is, for Top-N and deduplication", c.Name)
}

// planRank plans q, whose FROM is sub with a ROW_NUMBER() OVER (PARTITION
// BY ... ORDER BY ...) item, and whose WHERE bounds that row number, as
// Flink does: a deduplication when it keeps one row per key by a time
// attribute without selecting the row number, a window Top-N or window
// deduplication when the partition keys are a window's start and end,
// and a Top-N otherwise.
func (p *session) planRank(q *parser.Select, sub *parser.SubqueryRef) (Node, error) {
	if q.Distinct {
		return nil, p.errAt(q.Position(), ErrInvalid, "SELECT DISTINCT is not supported yet")
	}
	inner := sub.Query
	rnAt := rowNumberItem(inner)
	rnCall := inner.Items[rnAt].Expr.(*parser.Call)
	if len(rnCall.Args) > 0 || rnCall.Star {
		return nil, p.errAt(rnCall.Position(), ErrInvalid, "ROW_NUMBER takes no arguments")
	}
	if len(inner.GroupBy) > 0 || inner.Having != nil {
		return nil, p.errAt(inner.Position(), ErrInvalid, "ROW_NUMBER() OVER in an aggregating query is not supported: aggregate in a subquery below it")
	}
	rnName := inner.Items[rnAt].Alias
	if rnName == "" {
		return nil, p.errAt(rnCall.Position(), ErrInvalid, "give ROW_NUMBER() OVER (...) a name (AS rn) to filter on")
	}
	over := rnCall.Over
	if len(over.OrderBy) == 0 {
		return nil, p.errAt(over.Position(), ErrInvalid, "ROW_NUMBER() OVER (...) needs an ORDER BY")
	}
	in, sc, _, err := p.from(inner.From)
	if err != nil {
		return nil, err
	}
	var filter Expr
	if inner.Where != nil {
		if containsAgg(inner.Where) {
			return nil, p.errAt(inner.Where.Position(), ErrInvalid, "aggregate functions are not allowed in WHERE")
		}
		if filter, err = p.bind(inner.Where, sc, nil); err != nil {
			return nil, err
		}
		if filter.Type().Kind != types.Boolean {
			return nil, p.errAt(inner.Where.Position(), ErrInvalid, "WHERE must be a BOOLEAN condition, not %s", filter.Type())
		}
	}
	// The inner block's items but the row number, then the keys it does
	// not select: the rank's input.
	rest := *inner
	rest.Items = append(append([]*parser.SelectItem(nil), inner.Items[:rnAt]...), inner.Items[rnAt+1:]...)
	for _, it := range rest.Items {
		if it.Expr != nil && containsAgg(it.Expr) {
			return nil, p.errAt(it.Position(), ErrInvalid, "ROW_NUMBER() OVER in an aggregating query is not supported: aggregate in a subquery below it")
		}
	}
	exprs, names, err := p.selectList(&rest, sc, nil, in.Fields())
	if err != nil {
		return nil, err
	}
	nVisible := len(exprs)
	column := func(e parser.Expr) (int, error) {
		b, err := p.bind(e, sc, nil)
		if err != nil {
			return 0, err
		}
		if _, ok := b.(*ColRef); !ok {
			return 0, p.errAt(e.Position(), ErrInvalid, "PARTITION BY and ORDER BY of ROW_NUMBER() take columns, not expressions: compute %s in a subquery", parser.DumpExpr(e))
		}
		for i, x := range exprs {
			if x.String() == b.String() {
				return i, nil
			}
		}
		exprs, names = append(exprs, b), append(names, fmt.Sprintf("$%s", b))
		return len(exprs) - 1, nil
	}
	var parts []int
	for _, e := range over.PartitionBy {
		i, err := column(e)
		if err != nil {
			return nil, err
		}
		parts = append(parts, i)
	}
	var order []SortKey
	for _, it := range over.OrderBy {
		i, err := column(it.X)
		if err != nil {
			return nil, err
		}
		if k := exprs[i].Type().Kind; k == types.Array || k == types.Map || k == types.Row {
			return nil, p.errAt(it.X.Position(), ErrInvalid, "cannot order by %s", exprs[i].Type())
		}
		order = append(order, SortKey{Index: i, Desc: it.Desc})
	}
	pre := &Calc{Input: in, Exprs: exprs, Names: uniqueNames(names), Filter: filter}
	if pre.Changelog() == Updating {
		return nil, p.errAt(inner.Position(), ErrInvalid,
			"Top-N and deduplication over an updating input (produced by node %s) are not supported yet", updateSource(pre).describe())
	}
	preFields := pre.Fields()
	rnIdx := len(exprs)
	// The enclosing block sees the inner items and the row number.
	outer := &scope{}
	for i := 0; i < nVisible; i++ {
		outer.add(sub.Alias, pre.Names[i], &ColRef{Index: i, Name: pre.Names[i], T: preFields[i].Type})
	}
	// WHERE: the bound on the row number, and other conditions after it.
	first, n, others, err := p.rankBound(q.Where, rnName, over.Position())
	if err != nil {
		return nil, err
	}
	rnType := types.Type{Kind: types.BigInt, NotNull: true}
	if first == n {
		// The row number of a range of one rank is a constant (Flink's
		// RankNumberColumnRemoveRule), so a deduplication may select it.
		outer.add(sub.Alias, rnName, &Const{V: n, T: rnType, Text: fmt.Sprintf("%d:BIGINT", n)})
	} else {
		outer.add(sub.Alias, rnName, &ColRef{Index: rnIdx, Name: rnName, T: rnType})
	}
	var after Expr
	if len(others) > 0 {
		var conds []Expr
		for _, c := range others {
			b, err := p.bind(c, outer, nil)
			if err != nil {
				return nil, err
			}
			if b.Type().Kind != types.Boolean {
				return nil, p.errAt(c.Position(), ErrInvalid, "WHERE must be a BOOLEAN condition, not %s", b.Type())
			}
			conds = append(conds, b)
		}
		after = conds[0]
		if len(conds) > 1 {
			after = &Logic{Op: "AND", Args: conds}
		}
	}
	for _, it := range q.Items {
		if it.Expr != nil && containsAgg(it.Expr) {
			return nil, p.errAt(it.Position(), ErrInvalid, "aggregating over a Top-N in the same query is not supported: aggregate in an enclosing query")
		}
	}
	if len(q.GroupBy) > 0 || q.Having != nil {
		return nil, p.errAt(q.Position(), ErrInvalid, "aggregating over a Top-N in the same query is not supported: aggregate in an enclosing query")
	}
	// * of the enclosing block is the inner items and the row number.
	outExprs, outNames, err := p.selectList(q, outer, nil, nil)
	if err != nil {
		return nil, err
	}
	outputRank := after != nil && refersWindow(after, rnIdx)
	for _, e := range outExprs {
		outputRank = outputRank || refersWindow(e, rnIdx)
	}
	rank, err := p.rankNode(pre, parts, order, first, n, outputRank, rnName)
	if err != nil {
		return nil, p.errAt(over.Position(), ErrInvalid, "%v", err)
	}
	return &Calc{Input: rank, Exprs: outExprs, Names: outNames, Filter: after}, nil
}

// rankBound finds the conjuncts of where that bound the row number rn
// (rn = k, rn <= N, rn < N, rn > M, rn >= M, the same reversed, rn BETWEEN
// M AND N: Flink's constant rank range) and returns the range [start, end] and the other
// conjuncts.
func (p *session) rankBound(where parser.Expr, rn string, overPos parser.Pos) (int64, int64, []parser.Expr, error) {
	var conj []parser.Expr
	var split func(e parser.Expr)
	split = func(e parser.Expr) {
		if b, ok := e.(*parser.Binary); ok && b.Op == "AND" {
			split(b.L)
			split(b.R)
			return
		}
		conj = append(conj, e)
	}
	if where != nil {
		split(where)
	}
	isRn := func(e parser.Expr) bool {
		id, ok := e.(*parser.Ident)
		return ok && id.Parts[len(id.Parts)-1] == rn
	}
	var start, end int64 = 1, -1
	var others []parser.Expr
	for _, c := range conj {
		b, ok := c.(*parser.Binary)
		mentions := false
		walk(c, func(x parser.Expr) { mentions = mentions || isRn(x) })
		if !mentions {
			others = append(others, c)
			continue
		}
		if bt, isBt := c.(*parser.Between); isBt && !bt.Not && isRn(bt.X) {
			// rn BETWEEN M AND N: both bounds.
			lo, okLo := bt.Lo.(*parser.Literal)
			hi, okHi := bt.Hi.(*parser.Literal)
			if okLo && okHi && lo.Kind == parser.LitNumber && hi.Kind == parser.LitNumber {
				l, err1 := strconv.ParseInt(lo.Text, 10, 64)
				h, err2 := strconv.ParseInt(hi.Text, 10, 64)
				if err1 == nil && err2 == nil {
					start = max(start, l)
					if end < 0 || h < end {
						end = h
					}
					continue
				}
			}
		}
		op, lit := "", (*parser.Literal)(nil)
		if ok {
			if l, isLit := b.R.(*parser.Literal); isRn(b.L) && isLit {
				op, lit = b.Op, l
			} else if l, isLit := b.L.(*parser.Literal); isRn(b.R) && isLit {
				op, lit = map[string]string{"=": "=", ">=": "<=", ">": "<", "<=": ">=", "<": ">"}[b.Op], l
			}
		}
		var v int64
		var err error
		if lit != nil && lit.Kind == parser.LitNumber {
			v, err = strconv.ParseInt(lit.Text, 10, 64)
		}
		if lit == nil || lit.Kind != parser.LitNumber || err != nil || op == "" || op == "<>" {
			return 0, 0, nil, p.errAt(c.Position(), ErrInvalid,
				"the row number %s can be bounded only by comparisons with whole numbers (rn = k, rn <= N, rn < N, rn > M, rn >= M, rn BETWEEN M AND N) joined by AND; other conditions on it are not supported", rn)
		}
		lo, hi := int64(1), int64(-1)
		switch op {
		case "=":
			lo, hi = v, v
		case "<=":
			hi = v
		case "<":
			hi = v - 1
		case ">=":
			lo = v
		case ">":
			lo = v + 1
		}
		start = max(start, lo)
		if hi >= 0 && (end < 0 || hi < end) {
			end = hi
		}
	}
	if end < 0 {
		pos := overPos
		if where != nil {
			pos = where.Position()
		}
		return 0, 0, nil, p.errAt(pos, ErrInvalid,
			"Rank end is not specified. Currently rank only support TopN, which means the rank end must be specified: bound ROW_NUMBER() OVER (...) AS %s in the enclosing WHERE (%s = 1 for deduplication, %s <= N for a Top-N); over aggregations are not supported yet", rn, rn, rn)
	}
	if end < start {
		return 0, 0, nil, p.errAt(where.Position(), ErrInvalid, "the bounds on %s keep no rows (rank range [%d, %d])", rn, start, end)
	}
	return start, end, others, nil
}

// rankNode chooses the operator for a ROW_NUMBER over pre, as Flink's
// rules do.
func (p *session) rankNode(pre *Calc, parts []int, order []SortKey, first, n int64, outputRank bool, rnName string) (Node, error) {
	fields := pre.Fields()
	// A window's start and end among the partition keys: per window.
	start, end := -1, -1
	var w Window
	var keys []int
	for _, k := range parts {
		role, win, ok := windowColumn(pre, k)
		switch {
		case ok && role == "start" && start < 0:
			start, w = k, win
		case ok && role == "end" && end < 0:
			end, w = k, win
		default:
			keys = append(keys, k)
		}
	}
	if start >= 0 && end >= 0 {
		if first == 1 && n == 1 && !outputRank && len(order) == 1 {
			if role, _, ok := windowColumn(pre, order[0].Index); ok && (role == "time" || role == "timecol") {
				return &WindowDeduplicate{Input: pre, Window: w, Start: start, End: end, Keys: keys, Order: order[0].Index, KeepLast: order[0].Desc}, nil
			}
		}
		return &WindowRank{Input: pre, Window: w, Start: start, End: end, PartitionKeys: keys, OrderKeys: order, First: first, N: n, OutputRank: outputRank, RankName: rnName}, nil
	}
	if first == 1 && n == 1 && !outputRank && len(order) == 1 && (fields[order[0].Index].Type.Rowtime || fields[order[0].Index].Type.Proctime) {
		return &Deduplicate{Input: pre, Keys: parts, Order: order[0].Index, KeepLast: order[0].Desc, Proctime: fields[order[0].Index].Type.Proctime}, nil
	}
	return &Rank{Input: pre, PartitionKeys: parts, OrderKeys: order, First: first, N: n, OutputRank: outputRank, RankName: rnName}, nil
}

// windowColumn says whether field idx of n is a window's start, end or
// time (window_time), or the time column of a window TVF ("timecol"),
// following projections down to the window TVF or window aggregation.
func windowColumn(n Node, idx int) (string, Window, bool) {
	switch n := n.(type) {
	case *Calc:
		if c, ok := n.Exprs[idx].(*ColRef); ok {
			return windowColumn(n.Input, c.Index)
		}
	case *WindowTableFunction:
		base := len(n.Input.Fields())
		if idx == n.Window.TimeCol {
			return "timecol", n.Window, true
		}
		if idx >= base {
			return [3]string{"start", "end", "time"}[idx-base], n.Window, true
		}
	case *WindowAggregate:
		base := len(n.Keys) + len(n.Aggs)
		if idx >= base {
			return [3]string{"start", "end", "time"}[idx-base], n.Window, true
		}
	case *WindowRank:
		if idx < len(n.Input.Fields()) {
			return windowColumn(n.Input, idx)
		}
	case *WindowDeduplicate:
		return windowColumn(n.Input, idx)
	}
	return "", Window{}, false
}
