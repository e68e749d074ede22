// Package planner validates Sluice SQL statements against a catalog and
// plans queries: it resolves names and types (every mistake an error at
// its line and column, an unknown name with the nearest known one),
// decides each operator's changelog mode, and produces a plan of
// relational nodes (Scan, WatermarkAssigner, Calc, WindowTableFunction,
// WindowAggregate, GroupAggregate, Deduplicate, Rank, WindowRank,
// WindowDeduplicate, Union, Sink) that internal/sql/exec compiles to the
// core job API. It runs nothing.
package planner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/types"
)

// Session plans the statements of a script against its catalog.
type Session struct {
	p *session
}

type session struct {
	src string
	cat *Catalog
}

// NewSession returns a session over cat (a new catalog when nil).
func NewSession(cat *Catalog) *Session {
	if cat == nil {
		cat = NewCatalog()
	}
	return &Session{p: &session{cat: cat}}
}

// Catalog is the session's catalog.
func (s *Session) Catalog() *Catalog { return s.p.cat }

// Result is what a statement did: DDL and SET change the catalog; an
// INSERT (or a statement set) gives plans to run; EXPLAIN, SHOW TABLES
// and DESCRIBE give text.
type Result struct {
	Sinks []*Sink
	Text  string
}

// Execute validates and plans one statement of src (the script it comes
// from, for error messages).
func (s *Session) Execute(src string, st parser.Stmt) (*Result, error) {
	p := s.p
	p.src = src
	switch st := st.(type) {
	case *parser.CreateTable:
		return &Result{}, p.createTable(st)
	case *parser.CreateView:
		name, err := p.objectName(st.Name)
		if err != nil {
			return nil, err
		}
		if _, ok := p.cat.tables[name]; ok || p.cat.views[name] != nil {
			if st.IfNotExists {
				return &Result{}, nil
			}
			return nil, p.errAt(st.Name.Position(), ErrInvalid, "table or view %s already exists", name)
		}
		if _, err := p.planQuery(st.Query); err != nil {
			return nil, err
		}
		p.cat.views[name] = st
		return &Result{}, nil
	case *parser.Drop:
		name, err := p.objectName(st.Name)
		if err != nil {
			return nil, err
		}
		_, isTable := p.cat.tables[name]
		isView := p.cat.views[name] != nil
		switch {
		case st.What == "TABLE" && isTable:
			delete(p.cat.tables, name)
		case st.What == "VIEW" && isView:
			delete(p.cat.views, name)
		case !st.IfExists:
			return nil, p.unknownTable(st.Name.Position(), name)
		}
		return &Result{}, nil
	case *parser.Set:
		if st.Key == "" {
			var lines []string
			for _, k := range sortedKeys(p.cat.Settings) {
				lines = append(lines, fmt.Sprintf("'%s' = '%s'", k, p.cat.Settings[k]))
			}
			return &Result{Text: strings.Join(lines, "\n")}, nil
		}
		p.cat.Settings[st.Key] = st.Value
		return &Result{}, nil
	case *parser.Reset:
		if st.Key == "" {
			clear(p.cat.Settings)
		} else {
			delete(p.cat.Settings, st.Key)
		}
		return &Result{}, nil
	case *parser.ShowTables:
		return &Result{Text: strings.Join(p.cat.TableNames(), "\n")}, nil
	case *parser.Describe:
		name, err := p.objectName(st.Name)
		if err != nil {
			return nil, err
		}
		t, ok := p.cat.tables[name]
		if !ok {
			return nil, p.unknownTable(st.Name.Position(), name)
		}
		var lines []string
		for _, c := range t.Columns {
			extra := ""
			switch c.Kind {
			case Computed:
				extra = " AS " + c.Expr.String()
			case MetadataCol:
				extra = " METADATA FROM '" + c.MetaKey + "'"
				if c.Virtual {
					extra += " VIRTUAL"
				}
			}
			lines = append(lines, fmt.Sprintf("%s %s%s", c.Name, c.Type, extra))
		}
		if t.Watermark != nil {
			lines = append(lines, fmt.Sprintf("WATERMARK FOR %s AS %s", t.Columns[t.Rowtime].Name, t.Watermark))
		}
		return &Result{Text: strings.Join(lines, "\n")}, nil
	case *parser.Insert:
		sink, err := p.planInsert(st)
		if err != nil {
			return nil, err
		}
		return &Result{Sinks: []*Sink{sink}}, nil
	case *parser.StatementSet:
		res := &Result{}
		for _, ins := range st.Inserts {
			sink, err := p.planInsert(ins)
			if err != nil {
				return nil, err
			}
			res.Sinks = append(res.Sinks, sink)
		}
		return res, nil
	case *parser.Explain:
		var roots []Node
		switch inner := st.Stmt.(type) {
		case *parser.QueryStmt:
			n, err := p.planQuery(inner.Query)
			if err != nil {
				return nil, err
			}
			roots = append(roots, n)
		default:
			r, err := s.Execute(src, inner)
			if err != nil {
				return nil, err
			}
			for _, sk := range r.Sinks {
				roots = append(roots, sk)
			}
		}
		return &Result{Text: Explain(roots...)}, nil
	case *parser.QueryStmt:
		// The client shows the result as a changelog: a print table of the
		// query's columns.
		n, err := p.planQuery(st.Query)
		if err != nil {
			return nil, err
		}
		t := &Table{Name: SelectTable, Rowtime: -1, Options: map[string]string{OptConnector: "print"}, Pos: st.Position()}
		var cols []int
		for i, f := range n.Fields() {
			t.Columns = append(t.Columns, Column{Name: f.Name, Type: f.Type.Plain()})
			cols = append(cols, i)
		}
		return &Result{Sinks: []*Sink{{Table: t, Input: n, Columns: cols}}}, nil
	}
	return nil, p.errAt(st.Position(), ErrInvalid, "statement %T is not supported", st)
}

// SelectTable is the name of the print table a SELECT statement writes
// its result to; a client may collect its rows instead (exec.Options.Results).
const SelectTable = "$select"

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func (p *session) errAt(pos parser.Pos, kind error, format string, args ...any) error {
	return parser.ErrorAt(p.src, pos, kind, format, args...)
}

func (p *session) unknownTable(pos parser.Pos, name string) error {
	msg := fmt.Sprintf("table '%s' not found", name)
	if n := parser.Nearest(name, p.cat.TableNames()); n != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", n)
	}
	return p.errAt(pos, ErrUnknown, "%s", msg)
}

// scope is the names a query block's expressions may use.
type scope struct {
	entries []scopeEntry
}

type scopeEntry struct {
	qual, name string
	e          Expr
}

func (s *scope) add(qual, name string, e Expr) {
	s.entries = append(s.entries, scopeEntry{qual, name, e})
}

func (s *scope) names() []string {
	var out []string
	for _, e := range s.entries {
		out = append(out, e.name)
	}
	return out
}

func scopeOf(fields []Field, qual string) *scope {
	sc := &scope{}
	for i, f := range fields {
		sc.add(qual, f.Name, &ColRef{Index: i, Name: f.Name, T: f.Type})
	}
	return sc
}

func (p *session) lookup(sc *scope, id *parser.Ident) (Expr, error) {
	var qual, name string
	switch len(id.Parts) {
	case 1:
		name = id.Parts[0]
	case 2:
		qual, name = id.Parts[0], id.Parts[1]
	default:
		return nil, p.errAt(id.Position(), ErrInvalid, "column reference %s has too many parts", strings.Join(id.Parts, "."))
	}
	var found Expr
	var quals []string
	for _, e := range sc.entries {
		if e.name == name && (qual == "" || e.qual == qual) {
			found = e.e
			quals = append(quals, e.qual)
		}
	}
	switch n := len(quals); {
	case n > 1:
		if qual == "" && len(quals) == 2 && quals[0] != quals[1] && quals[0] != "" && quals[1] != "" {
			return nil, p.errAt(id.Position(), ErrInvalid, "column '%s' is ambiguous: it is in both %s and %s", name, quals[0], quals[1])
		}
		return nil, p.errAt(id.Position(), ErrInvalid, "column '%s' is ambiguous", name)
	case n == 0:
		if qual != "" {
			var known []string
			for _, e := range sc.entries {
				if e.qual != "" && !slices.Contains(known, e.qual) {
					known = append(known, e.qual)
				}
			}
			if !slices.Contains(known, qual) {
				msg := fmt.Sprintf("table '%s' not found in this query", qual)
				if n := parser.Nearest(qual, known); n != "" {
					msg += fmt.Sprintf("; did you mean '%s'?", n)
				} else if len(known) > 0 {
					msg += fmt.Sprintf(" (the tables are %s)", strings.Join(known, ", "))
				}
				return nil, p.errAt(id.Position(), ErrUnknown, "%s", msg)
			}
		}
		return nil, p.unknownColumn(id.Position(), name, sc.names())
	}
	return found, nil
}

// aggregates are the aggregate functions.
var aggregates = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true}

func containsAgg(e parser.Expr) bool {
	found := false
	walk(e, func(x parser.Expr) {
		if c, ok := x.(*parser.Call); ok && aggregates[c.Name] && c.Over == nil {
			found = true
		}
	})
	return found
}

// walk calls fn on e and every expression inside it.
func walk(e parser.Expr, fn func(parser.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *parser.Binary:
		walk(e.L, fn)
		walk(e.R, fn)
	case *parser.Unary:
		walk(e.X, fn)
	case *parser.IsNull:
		walk(e.X, fn)
	case *parser.Between:
		walk(e.X, fn)
		walk(e.Lo, fn)
		walk(e.Hi, fn)
	case *parser.In:
		walk(e.X, fn)
		for _, x := range e.List {
			walk(x, fn)
		}
	case *parser.Call:
		for _, x := range e.Args {
			walk(x, fn)
		}
	case *parser.Cast:
		walk(e.X, fn)
	case *parser.Case:
		walk(e.Operand, fn)
		for _, w := range e.Whens {
			walk(w.Cond, fn)
			walk(w.Then, fn)
		}
		walk(e.Else, fn)
	}
}

// aggScope resolves the expressions of an aggregating query block: group
// keys, aggregate calls and window columns to fields of the aggregation's
// output.
type aggScope struct {
	keys     []string // parser.DumpExpr of each group key
	keyRefs  []Expr
	aggs     []string // parser.DumpExpr of each aggregate call
	aggRefs  []Expr
	winNames map[string]Expr
}

func (a *aggScope) match(e parser.Expr) (Expr, bool) {
	d := parser.DumpExpr(e)
	for i, k := range a.keys {
		if k == d {
			return a.keyRefs[i], true
		}
	}
	for i, k := range a.aggs {
		if k == d {
			return a.aggRefs[i], true
		}
	}
	if id, ok := e.(*parser.Ident); ok && len(id.Parts) >= 1 {
		if r, ok := a.winNames[id.Parts[len(id.Parts)-1]]; ok {
			return r, true
		}
	}
	return nil, false
}

func (p *session) planQuery(q *parser.Select) (Node, error) {
	n, err := p.planSelect(q)
	if err != nil {
		return nil, err
	}
	if len(q.UnionAll) == 0 {
		return n, nil
	}
	ins := []Node{n}
	fields := append([]Field(nil), n.Fields()...)
	for _, u := range q.UnionAll {
		m, err := p.planSelect(u)
		if err != nil {
			return nil, err
		}
		mf := m.Fields()
		if len(mf) != len(fields) {
			return nil, p.errAt(u.Position(), ErrInvalid, "UNION ALL of queries with %d and %d columns", len(fields), len(mf))
		}
		for i := range fields {
			t, ok := types.Common(fields[i].Type, mf[i].Type)
			if !ok {
				return nil, p.errAt(u.Position(), ErrInvalid, "UNION ALL column %d: %s and %s have no common type", i+1, fields[i].Type, mf[i].Type)
			}
			fields[i].Type = t
		}
		ins = append(ins, m)
	}
	// Inputs whose types differ from the union's are cast.
	for i, in := range ins {
		inf := in.Fields()
		same := true
		exprs := make([]Expr, len(fields))
		names := make([]string, len(fields))
		for j, f := range fields {
			var e Expr = &ColRef{Index: j, Name: inf[j].Name, T: inf[j].Type}
			if inf[j].Type.Plain().Nullable() != f.Type.Plain().Nullable() {
				e, same = &CastExpr{X: e, T: f.Type}, false
			}
			exprs[j], names[j] = e, f.Name
		}
		if !same {
			ins[i] = &Calc{Input: in, Exprs: exprs, Names: names}
		}
	}
	return &Union{Ins: ins, F: fields}, nil
}

// from plans a FROM item: its node, scope and, for a window TVF, the
// window (whose columns are the last three fields).
func (p *session) from(f parser.From) (Node, *scope, *Window, error) {
	switch f := f.(type) {
	case *parser.TableRef:
		n, err := p.tableNode(f.Name)
		if err != nil {
			return nil, nil, nil, err
		}
		qual := f.Name.Last()
		if f.Alias != "" {
			qual = f.Alias
		}
		return n, scopeOf(n.Fields(), qual), nil, nil
	case *parser.Join:
		n, sc, err := p.join(f, nil)
		return n, sc, nil, err
	case *parser.SubqueryRef:
		n, err := p.planQuery(f.Query)
		if err != nil {
			return nil, nil, nil, err
		}
		return n, scopeOf(n.Fields(), f.Alias), nil, nil
	case *parser.WindowTVF:
		in, err := p.tableNode(f.Table)
		if err != nil {
			return nil, nil, nil, err
		}
		if in.Changelog() == Updating {
			return nil, nil, nil, p.errAt(f.Position(), ErrInvalid,
				"the window function %s doesn't support consuming update changes which is produced by node %s", f.Func, updateSource(in).describe())
		}
		inf := in.Fields()
		tc := -1
		var names []string
		for i, fl := range inf {
			names = append(names, fl.Name)
			if fl.Name == f.TimeCol {
				tc = i
			}
		}
		if tc < 0 {
			return nil, nil, nil, p.unknownColumn(f.TimeColPos, f.TimeCol, names)
		}
		if !inf[tc].Type.Rowtime {
			return nil, nil, nil, p.errAt(f.TimeColPos, ErrInvalid,
				"the window function requires the time column %s to be a time attribute (declare a WATERMARK FOR it), but it is %s", f.TimeCol, inf[tc].Type)
		}
		w := Window{Kind: f.Func, TimeCol: tc, TimeName: f.TimeCol}
		for i, k := range f.PartitionBy {
			j := slices.Index(names, k)
			if j < 0 {
				return nil, nil, nil, p.unknownColumn(f.PartitionByPos[i], k, names)
			}
			w.PartitionBy, w.PartitionKeys = append(w.PartitionBy, k), append(w.PartitionKeys, j)
		}
		var ivs []int64
		for _, a := range f.Args {
			e, err := p.bind(a, &scope{}, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			c, ok := e.(*Const)
			if !ok || e.Type().Kind != types.IntervalDayTime || c.V == nil || c.V.(int64) <= 0 {
				return nil, nil, nil, p.errAt(a.Position(), ErrInvalid, "a window's size, slide and offset must be positive day-time INTERVAL literals")
			}
			ivs = append(ivs, c.V.(int64))
		}
		switch f.Func {
		case "TUMBLE":
			w.Size = ivs[0]
			if len(ivs) > 1 {
				w.Offset = ivs[1]
			}
		case "HOP":
			w.Slide, w.Size = ivs[0], ivs[1]
			if w.Size%w.Slide != 0 {
				return nil, nil, nil, p.errAt(f.Position(), ErrInvalid, "HOP's size must be an integral multiple of its slide")
			}
		case "CUMULATE":
			w.Slide, w.Size = ivs[0], ivs[1]
			if w.Size%w.Slide != 0 {
				return nil, nil, nil, p.errAt(f.Position(), ErrInvalid, "CUMULATE's max size must be an integral multiple of its step")
			}
		case "SESSION":
			w.Size = ivs[0]
		}
		if len(ivs) > 2 {
			w.Offset = ivs[2]
		}
		tvf := &WindowTableFunction{Input: in, Window: w}
		qual := f.Table.Last()
		if f.Alias != "" {
			qual = f.Alias
		}
		return tvf, scopeOf(tvf.Fields(), qual), &w, nil
	}
	return nil, nil, nil, fmt.Errorf("planner: FROM %T", f)
}

func (p *session) tableNode(n parser.Name) (Node, error) {
	name, err := p.objectName(n)
	if err != nil {
		return nil, err
	}
	if v := p.cat.views[name]; v != nil {
		return p.planQuery(v.Query)
	}
	t, ok := p.cat.tables[name]
	if !ok {
		return nil, p.unknownTable(n.Position(), name)
	}
	scan := &Scan{Table: t}
	if t.Watermark != nil {
		return &WatermarkAssigner{Input: scan, Rowtime: t.Rowtime, Expr: t.Watermark}, nil
	}
	return scan, nil
}

func (p *session) planSelect(q *parser.Select) (Node, error) {
	if q.Distinct {
		return nil, p.errAt(q.Position(), ErrInvalid, "SELECT DISTINCT is not supported yet")
	}
	if sub, ok := q.From.(*parser.SubqueryRef); ok && rowNumberItem(sub.Query) >= 0 {
		return p.planRank(q, sub)
	}
	var in Node
	var sc *scope
	var win *Window
	var err error
	wheres := []parser.Expr{q.Where}
	if j, ok := q.From.(*parser.Join); ok {
		// A comma list's join takes the WHERE conjuncts that bind in it as
		// its condition; the rest stay a filter.
		if j.Kind == "," && q.Where != nil {
			wheres = conjuncts(q.Where, nil)
			in, sc, err = p.join(j, &wheres)
		} else {
			in, sc, err = p.join(j, nil)
		}
	} else {
		in, sc, win, err = p.from(q.From)
	}
	if err != nil {
		return nil, err
	}
	var filter Expr
	var filters []Expr
	for _, w := range wheres {
		if w == nil {
			continue
		}
		if containsAgg(w) {
			return nil, p.errAt(w.Position(), ErrInvalid, "aggregate functions are not allowed in WHERE")
		}
		f, err := p.bind(w, sc, nil)
		if err != nil {
			return nil, err
		}
		if f.Type().Kind != types.Boolean {
			return nil, p.errAt(w.Position(), ErrInvalid, "WHERE must be a BOOLEAN condition, not %s", f.Type())
		}
		filters = append(filters, f)
	}
	filter = andOf(filters)
	aggregating := len(q.GroupBy) > 0 || q.Having != nil
	for _, it := range q.Items {
		aggregating = aggregating || (it.Expr != nil && containsAgg(it.Expr))
	}
	if !aggregating {
		exprs, names, err := p.selectList(q, sc, nil, in.Fields())
		if err != nil {
			return nil, err
		}
		return &Calc{Input: in, Exprs: exprs, Names: names, Filter: filter}, nil
	}
	if win == nil || !groupsByWindow(q.GroupBy) || !sessionGroupsByPartition(win, q.GroupBy) {
		return p.planGroupAgg(q, in, sc, filter)
	}
	tvf := in.(*WindowTableFunction)
	tvfFields := tvf.Fields()
	nIn := len(tvf.Input.Fields())
	// Group keys: window_start and window_end (both present: see
	// groupsByWindow), the others over the TVF's input.
	var keyExprs []parser.Expr
	for _, g := range q.GroupBy {
		if id, ok := g.(*parser.Ident); ok {
			switch id.Parts[len(id.Parts)-1] {
			case "window_start", "window_end", "window_time":
				continue
			}
		}
		keyExprs = append(keyExprs, g)
	}
	var pre []Expr
	var preNames []string
	as := &aggScope{winNames: map[string]Expr{}}
	for _, g := range keyExprs {
		e, err := p.bind(g, sc, nil)
		if err != nil {
			return nil, err
		}
		if refersWindow(e, nIn) {
			return nil, p.errAt(g.Position(), ErrInvalid, "a group key of a window aggregation cannot use the window's columns")
		}
		name := fmt.Sprintf("$f%d", len(pre))
		if c, ok := e.(*ColRef); ok {
			name = c.Name
		}
		as.keys = append(as.keys, parser.DumpExpr(g))
		pre, preNames = append(pre, e), append(preNames, name)
	}
	nKeys := len(pre)
	aggs, err := p.collectAggs(q, sc, as, nIn, nKeys, &pre, &preNames)
	if err != nil {
		return nil, err
	}
	// The rowtime goes last into the pre-projection.
	tcol := tvf.Window.TimeCol
	pre = append(pre, &ColRef{Index: tcol, Name: tvfFields[tcol].Name, T: tvf.Input.Fields()[tcol].Type})
	preNames = append(preNames, tvfFields[tcol].Name)
	preCalc := &Calc{Input: tvf.Input, Exprs: pre, Names: uniqueNames(preNames), Filter: filter}
	w := tvf.Window
	w.TimeCol = len(pre) - 1
	keys := make([]int, nKeys)
	for i := range keys {
		keys[i] = i
	}
	wa := &WindowAggregate{Input: preCalc, Window: w, Keys: keys, Aggs: aggs}
	waFields := wa.Fields()
	for i := 0; i < nKeys; i++ {
		as.keyRefs = append(as.keyRefs, &ColRef{Index: i, Name: waFields[i].Name, T: waFields[i].Type})
	}
	for i := range aggs {
		j := nKeys + i
		as.aggRefs = append(as.aggRefs, &ColRef{Index: j, Name: waFields[j].Name, T: waFields[j].Type})
	}
	for i, name := range []string{"window_start", "window_end", "window_time"} {
		j := nKeys + len(aggs) + i
		as.winNames[name] = &ColRef{Index: j, Name: name, T: waFields[j].Type}
	}
	// Fix the aggregates' input text now that the pre-projection exists.
	for i := range wa.Aggs {
		a := &wa.Aggs[i]
		if a.Arg >= 0 && a.Distinct {
			a.Text = fmt.Sprintf("%s(DISTINCT %s)", a.Func, preCalc.Names[a.Arg])
		} else if a.Arg >= 0 {
			a.Text = fmt.Sprintf("%s(%s)", a.Func, preCalc.Names[a.Arg])
		} else {
			a.Text = "COUNT(*)"
		}
	}
	var having Expr
	if q.Having != nil {
		if having, err = p.bind(q.Having, sc, as); err != nil {
			return nil, err
		}
		if having.Type().Kind != types.Boolean {
			return nil, p.errAt(q.Having.Position(), ErrInvalid, "HAVING must be a BOOLEAN condition, not %s", having.Type())
		}
	}
	exprs, names, err := p.selectList(q, sc, as, tvfFields)
	if err != nil {
		return nil, err
	}
	return &Calc{Input: wa, Exprs: exprs, Names: names, Filter: having}, nil
}

// collectAggs collects the aggregate calls of q's SELECT list and HAVING,
// in order of appearance and each once, into as. The argument of each goes
// into the pre-projection (pre, named in names) after the nKeys group keys,
// once per distinct argument; width is the aggregated input's width.
func (p *session) collectAggs(q *parser.Select, sc *scope, as *aggScope, width, nKeys int, pre *[]Expr, names *[]string) ([]AggCall, error) {
	var aggs []AggCall
	var err error
	collect := func(x parser.Expr) {
		c, ok := x.(*parser.Call)
		if !ok || !aggregates[c.Name] || err != nil {
			return
		}
		d := parser.DumpExpr(c)
		if contains(as.aggs, d) {
			return
		}
		a, argExpr, aerr := p.aggCall(c, sc, width, len(*pre))
		if aerr != nil {
			err = aerr
			return
		}
		if argExpr != nil {
			reused := false
			for i := nKeys; i < len(*pre); i++ {
				if (*pre)[i].String() == argExpr.String() {
					a.Arg, reused = i, true
					break
				}
			}
			if !reused {
				name := fmt.Sprintf("$f%d", len(*pre))
				if cr, ok := argExpr.(*ColRef); ok && !contains(*names, cr.Name) {
					name = cr.Name
				}
				*pre, *names = append(*pre, argExpr), append(*names, name)
			}
		}
		a.Name = fmt.Sprintf("EXPR$%d", len(aggs))
		as.aggs = append(as.aggs, d)
		aggs = append(aggs, a)
	}
	for _, it := range q.Items {
		walk(it.Expr, collect)
	}
	walk(q.Having, collect)
	return aggs, err
}

// sessionGroupsByPartition reports whether a GROUP BY over window w is a
// window aggregation as far as SESSION windows go: its keys besides the
// window's columns are exactly the PARTITION BY columns (Flink's
// validGroupKeyPartitionKey). Otherwise the sessions are the TVF's own
// (per partition key, or over all rows) and the GROUP BY a regular one
// over them.
func sessionGroupsByPartition(w *Window, groupBy []parser.Expr) bool {
	if w.Kind != "SESSION" {
		return true
	}
	keys := map[string]bool{}
	for _, g := range groupBy {
		id, ok := g.(*parser.Ident)
		if !ok {
			return false
		}
		switch name := id.Parts[len(id.Parts)-1]; name {
		case "window_start", "window_end", "window_time":
		default:
			keys[name] = true
		}
	}
	if len(keys) != len(w.PartitionBy) {
		return false
	}
	for _, k := range w.PartitionBy {
		if !keys[k] {
			return false
		}
	}
	return true
}

// groupsByWindow reports whether a GROUP BY names window_start and
// window_end: a window aggregation; otherwise a GROUP BY over a window TVF
// is a regular one.
func groupsByWindow(groupBy []parser.Expr) bool {
	start, end := false, false
	for _, g := range groupBy {
		if id, ok := g.(*parser.Ident); ok {
			switch id.Parts[len(id.Parts)-1] {
			case "window_start":
				start = true
			case "window_end":
				end = true
			}
		}
	}
	return start && end
}

// planGroupAgg plans a regular GROUP BY over in: an updating aggregation.
func (p *session) planGroupAgg(q *parser.Select, in Node, sc *scope, filter Expr) (Node, error) {
	if in.Changelog() == Updating {
		return nil, p.errAt(q.Position(), ErrInvalid, "a GROUP BY over an updating input is not supported yet")
	}
	nIn := len(in.Fields())
	var pre []Expr
	var preNames []string
	as := &aggScope{winNames: map[string]Expr{}}
	for _, g := range q.GroupBy {
		e, err := p.bind(g, sc, nil)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("$f%d", len(pre))
		if c, ok := e.(*ColRef); ok {
			name = c.Name
		}
		as.keys = append(as.keys, parser.DumpExpr(g))
		pre, preNames = append(pre, e), append(preNames, name)
	}
	nKeys := len(pre)
	aggs, err := p.collectAggs(q, sc, as, nIn+1, nKeys, &pre, &preNames)
	if err != nil {
		return nil, err
	}
	preCalc := &Calc{Input: in, Exprs: pre, Names: uniqueNames(preNames), Filter: filter}
	keys := make([]int, nKeys)
	for i := range keys {
		keys[i] = i
	}
	ga := &GroupAggregate{Input: preCalc, Keys: keys, Aggs: aggs}
	for i := range ga.Aggs {
		a := &ga.Aggs[i]
		if a.Arg >= 0 && a.Distinct {
			a.Text = fmt.Sprintf("%s(DISTINCT %s)", a.Func, preCalc.Names[a.Arg])
		} else if a.Arg >= 0 {
			a.Text = fmt.Sprintf("%s(%s)", a.Func, preCalc.Names[a.Arg])
		} else {
			a.Text = "COUNT(*)"
		}
	}
	gf := ga.Fields()
	for i := 0; i < nKeys; i++ {
		as.keyRefs = append(as.keyRefs, &ColRef{Index: i, Name: gf[i].Name, T: gf[i].Type})
	}
	for i := range aggs {
		j := nKeys + i
		as.aggRefs = append(as.aggRefs, &ColRef{Index: j, Name: gf[j].Name, T: gf[j].Type})
	}
	var having Expr
	if q.Having != nil {
		if having, err = p.bind(q.Having, sc, as); err != nil {
			return nil, err
		}
		if having.Type().Kind != types.Boolean {
			return nil, p.errAt(q.Having.Position(), ErrInvalid, "HAVING must be a BOOLEAN condition, not %s", having.Type())
		}
	}
	exprs, names, err := p.selectList(q, sc, as, nil)
	if err != nil {
		return nil, err
	}
	return &Calc{Input: ga, Exprs: exprs, Names: names, Filter: having}, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func uniqueNames(names []string) []string {
	seen := map[string]bool{}
	out := make([]string, len(names))
	for i, n := range names {
		m := n
		for k := 0; seen[m]; k++ {
			m = fmt.Sprintf("%s%d", n, k)
		}
		seen[m] = true
		out[i] = m
	}
	return out
}

func refersWindow(e Expr, nIn int) bool {
	found := false
	var visit func(Expr)
	visit = func(e Expr) {
		switch e := e.(type) {
		case *ColRef:
			found = found || e.Index >= nIn
		case *CastExpr:
			visit(e.X)
		case *Arith:
			visit(e.L)
			visit(e.R)
		case *Neg:
			visit(e.X)
		case *Compare:
			visit(e.L)
			visit(e.R)
		case *Logic:
			for _, a := range e.Args {
				visit(a)
			}
		case *Not:
			visit(e.X)
		case *IsTest:
			visit(e.X)
		case *CaseExpr:
			for i := range e.Conds {
				visit(e.Conds[i])
				visit(e.Thens[i])
			}
			if e.Else != nil {
				visit(e.Else)
			}
		case *Like:
			visit(e.X)
		case *Func:
			for _, a := range e.Args {
				visit(a)
			}
		}
	}
	visit(e)
	return found
}

// aggCall types an aggregate call; its argument (nil for COUNT(*)) is
// computed by the pre-projection at index at.
func (p *session) aggCall(c *parser.Call, sc *scope, nIn, at int) (AggCall, Expr, error) {
	if c.Distinct && c.Name != "COUNT" {
		return AggCall{}, nil, p.errAt(c.Position(), ErrInvalid, "%s(DISTINCT ...) is not supported yet (COUNT(DISTINCT ...) is)", c.Name)
	}
	a := AggCall{Func: c.Name, Arg: -1, Distinct: c.Distinct}
	if c.Star || (c.Name == "COUNT" && len(c.Args) == 0) {
		if c.Name != "COUNT" {
			return a, nil, p.errAt(c.Position(), ErrInvalid, "%s(*) is not defined; only COUNT(*)", c.Name)
		}
		a.T = types.Type{Kind: types.BigInt, NotNull: true}
		return a, nil, nil
	}
	if len(c.Args) != 1 {
		return a, nil, p.errAt(c.Position(), ErrInvalid, "%s takes one argument, not %d", c.Name, len(c.Args))
	}
	if containsAgg(c.Args[0]) {
		return a, nil, p.errAt(c.Args[0].Position(), ErrInvalid, "aggregate calls cannot be nested")
	}
	arg, err := p.bind(c.Args[0], sc, nil)
	if err != nil {
		return a, nil, err
	}
	if refersWindow(arg, nIn) {
		return a, nil, p.errAt(c.Args[0].Position(), ErrInvalid, "an aggregate of a window aggregation cannot use the window's columns")
	}
	at0 := arg.Type()
	a.Arg, a.ArgType = at, at0
	switch c.Name {
	case "COUNT":
		a.T = types.Type{Kind: types.BigInt, NotNull: true}
	case "SUM", "AVG":
		if !at0.IsNumeric() {
			return a, nil, p.errAt(c.Args[0].Position(), ErrInvalid, "%s needs a numeric argument, not %s", c.Name, at0)
		}
		switch {
		case at0.Kind == types.Decimal && c.Name == "SUM":
			a.T = types.DecimalOf(types.MaxDecimalPrecision, at0.Scale)
		case at0.Kind == types.Decimal:
			a.T = types.DecimalOf(types.MaxDecimalPrecision, max(at0.Scale, 6))
		case at0.Kind == types.Float:
			a.T = types.DOUBLE
		default:
			a.T = at0.Plain().Nullable()
		}
	case "MIN", "MAX":
		a.T = at0.Plain().Nullable()
	}
	return a, arg, nil
}

// selectList binds the select items (with as for an aggregating block).
// all are the fields * expands to.
func (p *session) selectList(q *parser.Select, sc *scope, as *aggScope, all []Field) ([]Expr, []string, error) {
	var exprs []Expr
	var names []string
	for _, it := range q.Items {
		if it.Star {
			if as != nil {
				return nil, nil, p.errAt(it.Position(), ErrInvalid, "* cannot be selected in an aggregation")
			}
			for _, e := range sc.entries {
				if it.Qualifier != "" && e.qual != it.Qualifier {
					continue
				}
				exprs, names = append(exprs, e.e), append(names, e.name)
			}
			continue
		}
		e, err := p.bind(it.Expr, sc, as)
		if err != nil {
			return nil, nil, err
		}
		name := it.Alias
		if name == "" {
			if id, ok := it.Expr.(*parser.Ident); ok {
				name = id.Parts[len(id.Parts)-1]
			} else {
				name = fmt.Sprintf("EXPR$%d", len(exprs))
			}
		}
		exprs, names = append(exprs, e), append(names, name)
	}
	return exprs, uniqueNames(names), nil
}

func (p *session) planInsert(ins *parser.Insert) (*Sink, error) {
	if ins.Overwrite {
		return nil, p.errAt(ins.Position(), ErrInvalid, "INSERT OVERWRITE is for batch tables; use INSERT INTO")
	}
	name, err := p.objectName(ins.Table)
	if err != nil {
		return nil, err
	}
	t, ok := p.cat.tables[name]
	if !ok {
		return nil, p.unknownTable(ins.Table.Position(), name)
	}
	q, err := p.planQuery(ins.Query)
	if err != nil {
		return nil, err
	}
	var cols []int
	if len(ins.Columns) > 0 {
		for _, c := range ins.Columns {
			i := t.Index(c)
			if i < 0 {
				return nil, p.unknownColumn(ins.Table.Position(), c, t.ColumnNames())
			}
			cols = append(cols, i)
		}
	} else {
		for i, c := range t.Columns {
			if c.Kind == Physical || (c.Kind == MetadataCol && !c.Virtual) {
				cols = append(cols, i)
			}
		}
	}
	qf := q.Fields()
	if len(qf) != len(cols) {
		var sinkCols []string
		for _, c := range cols {
			sinkCols = append(sinkCols, fmt.Sprintf("%s %s", t.Columns[c].Name, t.Columns[c].Type.Plain()))
		}
		var qCols []string
		for _, f := range qf {
			qCols = append(qCols, fmt.Sprintf("%s %s", f.Name, f.Type.Plain()))
		}
		return nil, p.errAt(ins.Query.Position(), ErrInvalid,
			"column types of query result and sink for '%s' do not match: different number of columns\n  query schema: [%s]\n  sink schema:  [%s]",
			t.Path(), strings.Join(qCols, ", "), strings.Join(sinkCols, ", "))
	}
	exprs := make([]Expr, len(cols))
	names := make([]string, len(cols))
	identity := true
	for i, c := range cols {
		want := t.Columns[c].Type
		got := qf[i].Type
		if !types.ImplicitlyCastable(got, want) {
			return nil, p.errAt(ins.Query.Position(), ErrInvalid,
				"column types of query result and sink for '%s' do not match: column %s is %s in the query and %s in the sink; CAST it",
				t.Path(), t.Columns[c].Name, got.Plain(), want.Plain())
		}
		var e Expr = &ColRef{Index: i, Name: qf[i].Name, T: got}
		if got.Plain().Nullable() != want.Plain().Nullable() {
			e = &CastExpr{X: e, T: want.Plain().Nullable()}
		}
		if qf[i].Name != t.Columns[c].Name {
			identity = false
		}
		if _, ok := e.(*CastExpr); ok {
			identity = false
		}
		exprs[i], names[i] = e, t.Columns[c].Name
	}
	in := q
	if !identity {
		if calc, ok := q.(*Calc); ok {
			in = fuseCalc(calc, exprs, names)
		} else {
			in = &Calc{Input: q, Exprs: exprs, Names: names}
		}
	}
	conn := t.Options[OptConnector]
	if in.Changelog() == Updating && conn == "kafka" {
		return nil, p.errAt(ins.Position(), ErrInvalid,
			"Table sink '%s' doesn't support consuming update changes which is produced by node %s: connector 'kafka' is append-only (use 'upsert-kafka' with a PRIMARY KEY)",
			t.Path(), updateSource(in).describe())
	}
	if in.Changelog() == Updating && conn == "filesystem" {
		return nil, p.errAt(ins.Position(), ErrInvalid,
			"Table sink '%s' doesn't support consuming update changes which is produced by node %s: connector 'filesystem' is append-only",
			t.Path(), updateSource(in).describe())
	}
	if in.Changelog() == Updating && conn == "upsert-kafka" {
		key, ok := upsertKey(in)
		var pk []int
		for i, c := range cols {
			if slices.Contains(t.PrimaryKey, c) {
				pk = append(pk, i)
			}
		}
		slices.Sort(key)
		if !ok || !slices.Equal(key, pk) {
			return nil, p.errAt(ins.Position(), ErrInvalid,
				"the query's upsert key differs from the primary key of sink table '%s': writing it needs an upsert materializer, which is not supported yet; make the sink's primary key the query's upsert key (the GROUP BY keys; a deduplication's PARTITION BY keys; a Top-N's PARTITION BY keys and row number)", t.Path())
		}
	}
	return &Sink{Table: t, Input: in, Columns: cols, OnConflict: ins.OnConflict}, nil
}

// upsertKey is the fields of an updating node that identify its rows:
// a GroupAggregate's keys, as far as a Calc above it keeps them.
func upsertKey(n Node) ([]int, bool) {
	switch n := n.(type) {
	case *GroupAggregate:
		return slices.Clone(n.Keys), true
	case *Deduplicate:
		return slices.Clone(n.Keys), true
	case *Rank:
		// A Top-N's rows are identified by the partition key and the row
		// number; a Top-1's by the partition key alone.
		if n.OutputRank {
			return append(slices.Clone(n.PartitionKeys), len(n.Input.Fields())), true
		}
		if n.First == n.N {
			return slices.Clone(n.PartitionKeys), true
		}
		return nil, false
	case *Join:
		return joinUpsertKey(n)
	case *Calc:
		inner, ok := upsertKey(n.Input)
		if !ok {
			return nil, false
		}
		var out []int
		for _, k := range inner {
			found := false
			for i, e := range n.Exprs {
				if c, ok := e.(*ColRef); ok && c.Index == k {
					out, found = append(out, i), true
					break
				}
			}
			if !found {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// updateSource is the node that makes n's input updating: the first
// updating node whose inputs are all insert-only.
func updateSource(n Node) Node {
	for _, in := range n.Inputs() {
		if in.Changelog() == Updating {
			return updateSource(in)
		}
	}
	return n
}

// fuseCalc applies exprs (over calc's output) directly to calc's input.
func fuseCalc(calc *Calc, exprs []Expr, names []string) *Calc {
	out := &Calc{Input: calc.Input, Filter: calc.Filter, Names: names}
	for _, e := range exprs {
		out.Exprs = append(out.Exprs, substitute(e, calc.Exprs))
	}
	return out
}

// substitute replaces the ColRefs of e (a projection over a Calc) with
// the Calc's expressions.
func substitute(e Expr, by []Expr) Expr {
	switch e := e.(type) {
	case *ColRef:
		return by[e.Index]
	case *CastExpr:
		return &CastExpr{X: substitute(e.X, by), T: e.T, Try: e.Try}
	}
	return e
}

// bind resolves an expression in scope sc (as: the aggregation scope of an
// aggregating block, nil otherwise).
func (p *session) bind(e parser.Expr, sc *scope, as *aggScope) (Expr, error) {
	if as != nil {
		if r, ok := as.match(e); ok {
			return r, nil
		}
		switch x := e.(type) {
		case *parser.Ident:
			name := x.Parts[len(x.Parts)-1]
			if _, err := p.lookup(sc, x); err != nil {
				return nil, err
			}
			return nil, p.errAt(x.Position(), ErrInvalid, "expression '%s' is neither grouped nor aggregated: add it to GROUP BY or aggregate it", name)
		case *parser.Call:
			if aggregates[x.Name] {
				return nil, p.errAt(x.Position(), ErrInvalid, "aggregate %s is not allowed here", x.Name)
			}
		}
	}
	switch x := e.(type) {
	case *parser.Ident:
		return p.lookup(sc, x)
	case *parser.Literal:
		return p.literal(x)
	case *parser.Interval:
		return p.interval(x)
	case *parser.TypedLiteral:
		var t types.Type
		var v any
		var err error
		switch x.Type {
		case "TIMESTAMP", "TIMESTAMP_LTZ":
			t = types.Type{Kind: types.Timestamp, Precision: 3, NotNull: true}
			if x.Type == "TIMESTAMP_LTZ" {
				t.Kind = types.TimestampLTZ
			}
			v, err = types.ParseTimestamp(x.Value, false)
		case "DATE":
			t = types.Type{Kind: types.Date, NotNull: true}
			v, err = types.ParseDate(x.Value)
		case "TIME":
			t = types.Type{Kind: types.Time, NotNull: true}
			v, err = types.ParseTime(x.Value)
		}
		if err != nil {
			return nil, p.errAt(x.Position(), ErrInvalid, "%v", err)
		}
		return &Const{V: v, T: t, Text: fmt.Sprintf("%s '%s'", x.Type, x.Value)}, nil
	case *parser.Unary:
		inner, err := p.bind(x.X, sc, as)
		if err != nil {
			return nil, err
		}
		if x.Op == "NOT" {
			if err := p.wantBool(x.X, inner); err != nil {
				return nil, err
			}
			return &Not{X: inner}, nil
		}
		if !inner.Type().IsNumeric() && !inner.Type().IsInterval() {
			return nil, p.errAt(x.Position(), ErrInvalid, "cannot negate %s", inner.Type())
		}
		return &Neg{X: inner}, nil
	case *parser.Binary:
		l, err := p.bind(x.L, sc, as)
		if err != nil {
			return nil, err
		}
		r, err := p.bind(x.R, sc, as)
		if err != nil {
			return nil, err
		}
		return p.binary(x, l, r)
	case *parser.IsNull:
		inner, err := p.bind(x.X, sc, as)
		if err != nil {
			return nil, err
		}
		if x.Test != "NULL" {
			if err := p.wantBool(x.X, inner); err != nil {
				return nil, err
			}
		}
		return &IsTest{X: inner, Test: x.Test, Not: x.Not}, nil
	case *parser.Between:
		v, err := p.bind(x.X, sc, as)
		if err != nil {
			return nil, err
		}
		lo, err := p.bind(x.Lo, sc, as)
		if err != nil {
			return nil, err
		}
		hi, err := p.bind(x.Hi, sc, as)
		if err != nil {
			return nil, err
		}
		c1, err := p.compare(x.Position(), ">=", v, lo)
		if err != nil {
			return nil, err
		}
		c2, err := p.compare(x.Position(), "<=", v, hi)
		if err != nil {
			return nil, err
		}
		var out Expr = &Logic{Op: "AND", Args: []Expr{c1, c2}}
		if x.Not {
			out = &Not{X: out}
		}
		return out, nil
	case *parser.In:
		v, err := p.bind(x.X, sc, as)
		if err != nil {
			return nil, err
		}
		or := &Logic{Op: "OR"}
		for _, item := range x.List {
			it, err := p.bind(item, sc, as)
			if err != nil {
				return nil, err
			}
			c, err := p.compare(item.Position(), "=", v, it)
			if err != nil {
				return nil, err
			}
			or.Args = append(or.Args, c)
		}
		if x.Not {
			return &Not{X: or}, nil
		}
		return or, nil
	case *parser.Cast:
		inner, err := p.bind(x.X, sc, as)
		if err != nil {
			return nil, err
		}
		to, err := p.resolveType(x.To)
		if err != nil {
			return nil, err
		}
		if !types.CanCast(inner.Type(), to) {
			return nil, p.errAt(x.Position(), ErrInvalid, "cannot cast %s to %s", inner.Type().Plain(), to)
		}
		to.NotNull = to.NotNull || (inner.Type().NotNull && !x.Try && inner.Type().Kind != types.String)
		return &CastExpr{X: inner, T: to, Try: x.Try}, nil
	case *parser.Case:
		return p.caseExpr(x, sc, as)
	case *parser.Call:
		if x.Over != nil {
			return nil, p.overError(x)
		}
		if aggregates[x.Name] {
			return nil, p.errAt(x.Position(), ErrInvalid, "aggregate %s is not allowed here", x.Name)
		}
		var args []Expr
		for _, a := range x.Args {
			b, err := p.bind(a, sc, as)
			if err != nil {
				return nil, err
			}
			args = append(args, b)
		}
		return p.scalarCall(x, args)
	}
	return nil, p.errAt(e.Position(), ErrInvalid, "unsupported expression %T", e)
}

func (p *session) wantBool(at parser.Expr, e Expr) error {
	if k := e.Type().Kind; k != types.Boolean && k != types.Null {
		return p.errAt(at.Position(), ErrInvalid, "expected a BOOLEAN, not %s", e.Type())
	}
	return nil
}

func (p *session) literal(x *parser.Literal) (Expr, error) {
	switch x.Kind {
	case parser.LitString:
		return &Const{V: x.Text, T: types.Type{Kind: types.String, NotNull: true}, Text: "'" + x.Text + "'"}, nil
	case parser.LitBool:
		return &Const{V: x.Text == "TRUE", T: types.Type{Kind: types.Boolean, NotNull: true}, Text: x.Text}, nil
	case parser.LitNull:
		return &Const{V: nil, T: types.Type{Kind: types.Null}, Text: "NULL"}, nil
	}
	text := x.Text
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, p.errAt(x.Position(), ErrInvalid, "%s is not a number", text)
		}
		return &Const{V: f, T: types.Type{Kind: types.Double, NotNull: true}, Text: text}, nil
	}
	if !strings.Contains(text, ".") {
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return &Const{V: n, T: types.Type{Kind: types.Int, NotNull: true}, Text: text}, nil
			}
			return &Const{V: n, T: types.Type{Kind: types.BigInt, NotNull: true}, Text: text}, nil
		}
	}
	digits := strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(text, "-"), ".", ""), "0")
	scale := 0
	if i := strings.Index(text, "."); i >= 0 {
		scale = len(text) - i - 1
	}
	prec := max(len(digits), scale, 1)
	if prec > types.MaxDecimalPrecision {
		return nil, p.errAt(x.Position(), ErrInvalid, "%s has more than %d digits", text, types.MaxDecimalPrecision)
	}
	v, err := types.ParseDecimal(text, prec, scale)
	if err != nil {
		return nil, p.errAt(x.Position(), ErrInvalid, "%s: %v (DECIMAL values are held in 64 bits)", text, err)
	}
	return &Const{V: v, T: types.Type{Kind: types.Decimal, Precision: prec, Scale: scale, NotNull: true}, Text: text}, nil
}

func (p *session) interval(x *parser.Interval) (Expr, error) {
	if x.To != "" {
		return nil, p.errAt(x.Position(), ErrInvalid, "INTERVAL ... TO ... is not supported yet; write a single unit")
	}
	unitMs := map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60000, "HOUR": 3600000, "DAY": 86400000}
	if x.Unit == "MONTH" || x.Unit == "YEAR" {
		n, err := strconv.ParseInt(strings.TrimSpace(x.Value), 10, 64)
		if err != nil {
			return nil, p.errAt(x.Position(), ErrInvalid, "INTERVAL '%s' %s: not a whole number", x.Value, x.Unit)
		}
		if x.Unit == "YEAR" {
			n *= 12
		}
		return &Const{V: n, T: types.Type{Kind: types.IntervalYearMonth, NotNull: true}, Text: fmt.Sprintf("%d:INTERVAL MONTH", n)}, nil
	}
	v, err := types.ParseDecimal(x.Value, 18, 3)
	if err != nil {
		return nil, p.errAt(x.Position(), ErrInvalid, "INTERVAL '%s' %s: not a number", x.Value, x.Unit)
	}
	ms := v * unitMs[x.Unit] / 1000
	unit := x.Unit
	if unit == "MILLISECOND" {
		unit = "SECOND"
	}
	return &Const{V: ms, T: types.Type{Kind: types.IntervalDayTime, NotNull: true}, Text: fmt.Sprintf("%d:INTERVAL %s", ms, unit)}, nil
}

func (p *session) binary(x *parser.Binary, l, r Expr) (Expr, error) {
	lt, rt := l.Type(), r.Type()
	switch x.Op {
	case "AND", "OR":
		if err := p.wantBool(x.L, l); err != nil {
			return nil, err
		}
		if err := p.wantBool(x.R, r); err != nil {
			return nil, err
		}
		// Flatten nested ANDs / ORs.
		var args []Expr
		for _, e := range []Expr{l, r} {
			if lg, ok := e.(*Logic); ok && lg.Op == x.Op {
				args = append(args, lg.Args...)
			} else {
				args = append(args, e)
			}
		}
		return &Logic{Op: x.Op, Args: args}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		return p.compare(x.Position(), x.Op, l, r)
	case "LIKE":
		c, ok := r.(*Const)
		if !ok || rt.Kind != types.String || lt.Kind != types.String {
			return nil, p.errAt(x.Position(), ErrInvalid, "LIKE needs a STRING and a constant pattern")
		}
		return newLike(l, c.V.(string)), nil
	case "||":
		if lt.Kind != types.String || rt.Kind != types.String {
			return nil, p.errAt(x.Position(), ErrInvalid, "|| concatenates strings, not %s and %s", lt, rt)
		}
		return concatFunc([]Expr{l, r}), nil
	}
	// Arithmetic.
	nn := lt.NotNull && rt.NotNull
	switch {
	case (lt.IsTimestamp() || lt.Kind == types.Date) && rt.Kind == types.IntervalDayTime && (x.Op == "+" || x.Op == "-"):
		t := lt.Plain()
		t.NotNull = nn
		return &Arith{Op: x.Op, L: l, R: r, T: t}, nil
	case lt.Kind == types.IntervalDayTime && rt.IsTimestamp() && x.Op == "+":
		t := rt.Plain()
		t.NotNull = nn
		return &Arith{Op: x.Op, L: l, R: r, T: t}, nil
	case lt.IsNumeric() && rt.IsNumeric():
	default:
		return nil, p.errAt(x.Position(), ErrInvalid, "cannot apply '%s' to %s and %s", x.Op, lt.Plain(), rt.Plain())
	}
	var t types.Type
	switch {
	case lt.Kind == types.Double || rt.Kind == types.Double || lt.Kind == types.Float || rt.Kind == types.Float:
		t = types.DOUBLE
		if x.Op == "%" {
			return nil, p.errAt(x.Position(), ErrInvalid, "%% needs exact numbers")
		}
	case lt.IsInteger() && rt.IsInteger():
		t = types.CommonNumeric(lt, rt)
	default:
		dl, dr := types.AsDecimal(lt), types.AsDecimal(rt)
		p1, s1, p2, s2 := dl.Precision, dl.Scale, dr.Precision, dr.Scale
		var prec, scale int
		switch x.Op {
		case "+", "-":
			scale = max(s1, s2)
			prec = max(p1-s1, p2-s2) + scale + 1
		case "*":
			prec, scale = p1+p2, s1+s2
		case "/":
			scale = max(6, s1+p2+1)
			prec = p1 - s1 + s2 + scale
		case "%":
			scale = max(s1, s2)
			prec = min(p1-s1, p2-s2) + scale
		}
		if prec > types.MaxDecimalPrecision {
			// Keep the integral digits, give up scale (at least 6), as Flink does.
			intDigits := prec - scale
			scale = max(min(scale, types.MaxDecimalPrecision-intDigits), min(scale, 6))
			prec = types.MaxDecimalPrecision
		}
		t = types.DecimalOf(prec, scale)
	}
	t.NotNull = nn && x.Op != "/" && x.Op != "%"
	return &Arith{Op: x.Op, L: l, R: r, T: t}, nil
}

func (p *session) compare(pos parser.Pos, op string, l, r Expr) (Expr, error) {
	lt, rt := l.Type(), r.Type()
	var t types.Type
	switch {
	case lt.Kind == types.Null || rt.Kind == types.Null:
		t = lt
		if lt.Kind == types.Null {
			t = rt
		}
	case lt.IsNumeric() && rt.IsNumeric():
		t = types.CommonNumeric(lt, rt)
	case lt.Kind == rt.Kind || (lt.IsTimestamp() && rt.IsTimestamp()):
		t, _ = types.Common(lt, rt)
	case (lt.IsTimestamp() || lt.Kind == types.Date) && rt.Kind == types.String:
		t = lt.Plain()
	case (rt.IsTimestamp() || rt.Kind == types.Date) && lt.Kind == types.String:
		t = rt.Plain()
	default:
		return nil, p.errAt(pos, ErrInvalid, "cannot compare %s with %s", lt.Plain(), rt.Plain())
	}
	return &Compare{Op: op, L: l, R: r, T: t.Plain().Nullable()}, nil
}

func (p *session) caseExpr(x *parser.Case, sc *scope, as *aggScope) (Expr, error) {
	out := &CaseExpr{}
	var operand Expr
	if x.Operand != nil {
		var err error
		if operand, err = p.bind(x.Operand, sc, as); err != nil {
			return nil, err
		}
	}
	var t types.Type
	first := true
	unify := func(at parser.Expr, e Expr) error {
		if first {
			t, first = e.Type().Plain(), false
			return nil
		}
		u, ok := types.Common(t, e.Type().Plain())
		if !ok {
			return p.errAt(at.Position(), ErrInvalid, "CASE branches of types %s and %s have no common type", t, e.Type().Plain())
		}
		t = u
		return nil
	}
	for _, w := range x.Whens {
		cond, err := p.bind(w.Cond, sc, as)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			if cond, err = p.compare(w.Cond.Position(), "=", operand, cond); err != nil {
				return nil, err
			}
		} else if err := p.wantBool(w.Cond, cond); err != nil {
			return nil, err
		}
		then, err := p.bind(w.Then, sc, as)
		if err != nil {
			return nil, err
		}
		if err := unify(w.Then, then); err != nil {
			return nil, err
		}
		out.Conds, out.Thens = append(out.Conds, cond), append(out.Thens, then)
	}
	if x.Else != nil {
		e, err := p.bind(x.Else, sc, as)
		if err != nil {
			return nil, err
		}
		if err := unify(x.Else, e); err != nil {
			return nil, err
		}
		out.Else = e
	}
	nn := x.Else != nil
	for _, th := range out.Thens {
		nn = nn && th.Type().NotNull
	}
	if out.Else != nil {
		nn = nn && out.Else.Type().NotNull
	}
	t.NotNull = nn
	out.T = t
	return out, nil
}
