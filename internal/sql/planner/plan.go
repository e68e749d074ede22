package planner

import (
	"fmt"
	"strings"

	"github.com/sluice/sluice/internal/sql/types"
)

// Field is a column of a node's output rows.
type Field struct {
	Name string
	Type types.Type
}

// Changelog is the kind of changes a node emits.
type Changelog int

// Changelog modes.
const (
	// InsertOnly streams only add rows (+I): scans, filters, window
	// aggregations.
	InsertOnly Changelog = iota
	// Updating streams retract and update rows (+I, -U, +U, -D).
	Updating
)

func (c Changelog) String() string {
	if c == Updating {
		return "I,UB,UA,D"
	}
	return "I"
}

// Node is an operator of a plan: a relational operator whose rows have
// Fields, read from its Inputs.
type Node interface {
	Fields() []Field
	Inputs() []Node
	Changelog() Changelog
	// describe is the node's line in EXPLAIN.
	describe() string
}

// Scan reads a table: every column (physical, metadata and computed) of
// each record, in the table's order.
type Scan struct {
	Table *Table
}

func (s *Scan) Fields() []Field {
	out := make([]Field, len(s.Table.Columns))
	for i, c := range s.Table.Columns {
		out[i] = Field{c.Name, c.Type}
	}
	return out
}
func (s *Scan) Inputs() []Node       { return nil }
func (s *Scan) Changelog() Changelog { return InsertOnly }
func (s *Scan) describe() string {
	return fmt.Sprintf("TableSourceScan(table=[[default_catalog, default_database, %s]], fields=[%s])", s.Table.Name, fieldNames(s.Fields()))
}

// WatermarkAssigner assigns the table's watermarks after its scan (the
// operators fuse it into the source, per partition).
type WatermarkAssigner struct {
	Input   *Scan
	Rowtime int
	Expr    Expr
}

func (w *WatermarkAssigner) Fields() []Field      { return w.Input.Fields() }
func (w *WatermarkAssigner) Inputs() []Node       { return []Node{w.Input} }
func (w *WatermarkAssigner) Changelog() Changelog { return InsertOnly }
func (w *WatermarkAssigner) describe() string {
	return fmt.Sprintf("WatermarkAssigner(rowtime=[%s], watermark=[%s])", w.Input.Fields()[w.Rowtime].Name, w.Expr)
}

// Calc projects (and filters) rows: Exprs over the input's fields, named
// Names; rows for which Filter is not TRUE are dropped.
type Calc struct {
	Input  Node
	Exprs  []Expr
	Names  []string
	Filter Expr
}

func (c *Calc) Fields() []Field {
	out := make([]Field, len(c.Exprs))
	for i, e := range c.Exprs {
		out[i] = Field{c.Names[i], e.Type()}
	}
	return out
}
func (c *Calc) Inputs() []Node       { return []Node{c.Input} }
func (c *Calc) Changelog() Changelog { return c.Input.Changelog() }
func (c *Calc) describe() string {
	var items []string
	for i, e := range c.Exprs {
		s := e.String()
		if s != c.Names[i] {
			s += " AS " + c.Names[i]
		}
		items = append(items, s)
	}
	out := fmt.Sprintf("Calc(select=[%s]", strings.Join(items, ", "))
	if c.Filter != nil {
		out += fmt.Sprintf(", where=[%s]", c.Filter)
	}
	return out + ")"
}

// Window is a window TVF's assignment.
type Window struct {
	Kind string // TUMBLE, HOP, CUMULATE, SESSION
	// TimeCol is the index of the time attribute in the input.
	TimeCol  int
	TimeName string
	// Size, Slide (HOP's slide, CUMULATE's step) and Offset, in
	// milliseconds. A SESSION window's gap is its Size: a row at t opens
	// [t, t + gap), and windows that overlap or touch merge.
	Size, Slide, Offset int64
	// PartitionBy are a SESSION's PARTITION BY columns (names), and
	// PartitionKeys their indexes in the TVF's input.
	PartitionBy   []string
	PartitionKeys []int
}

func (w Window) String() string {
	switch w.Kind {
	case "HOP":
		return fmt.Sprintf("HOP(time_col=[%s], size=[%s], slide=[%s])", w.TimeName, durationText(w.Size), durationText(w.Slide))
	case "CUMULATE":
		return fmt.Sprintf("CUMULATE(time_col=[%s], max_size=[%s], step=[%s])", w.TimeName, durationText(w.Size), durationText(w.Slide))
	case "SESSION":
		s := fmt.Sprintf("SESSION(time_col=[%s], gap=[%s]", w.TimeName, durationText(w.Size))
		if len(w.PartitionBy) > 0 {
			s += fmt.Sprintf(", partition keys=[%s]", strings.Join(w.PartitionBy, ", "))
		}
		return s + ")"
	}
	s := fmt.Sprintf("TUMBLE(time_col=[%s], size=[%s]", w.TimeName, durationText(w.Size))
	if w.Offset != 0 {
		s += fmt.Sprintf(", offset=[%s]", durationText(w.Offset))
	}
	return s + ")"
}

// Assign calls fn with [start, end) of every window the timestamp ts
// falls in, earliest first (for SESSION: the window the row opens, before
// merging).
func (w Window) Assign(ts int64, fn func(start, end int64) error) error {
	if w.Kind == "SESSION" {
		return fn(ts, ts+w.Size)
	}
	floor := func(t, size int64) int64 {
		r := (t - w.Offset) % size
		if r < 0 {
			r += size
		}
		return t - r
	}
	switch w.Kind {
	case "HOP":
		last := floor(ts, w.Slide)
		var starts []int64
		for s := last; s > ts-w.Size; s -= w.Slide {
			starts = append(starts, s)
		}
		for i := len(starts) - 1; i >= 0; i-- {
			if err := fn(starts[i], starts[i]+w.Size); err != nil {
				return err
			}
		}
		return nil
	case "CUMULATE":
		start := floor(ts, w.Size)
		for end := start + w.Slide; end <= start+w.Size; end += w.Slide {
			if ts < end {
				if err := fn(start, end); err != nil {
					return err
				}
			}
		}
		return nil
	}
	s := floor(ts, w.Size)
	return fn(s, s+w.Size)
}

func durationText(ms int64) string {
	switch {
	case ms%3600000 == 0:
		return fmt.Sprintf("%d h", ms/3600000)
	case ms%60000 == 0:
		return fmt.Sprintf("%d min", ms/60000)
	case ms%1000 == 0:
		return fmt.Sprintf("%d s", ms/1000)
	}
	return fmt.Sprintf("%d ms", ms)
}

// windowFields are the columns a window TVF appends.
func windowFields() []Field {
	ts := types.Type{Kind: types.Timestamp, Precision: 3, NotNull: true}
	rt := ts
	rt.Rowtime = true
	return []Field{{"window_start", ts}, {"window_end", ts}, {"window_time", rt}}
}

// WindowTableFunction is a window TVF whose rows are not aggregated: each
// input row once per window it falls in, with window_start, window_end and
// window_time appended. A SESSION TVF holds each partition key's rows until
// their session closes (its windows merge), then emits them with the
// session's bounds.
type WindowTableFunction struct {
	Input  Node
	Window Window
}

func (w *WindowTableFunction) Fields() []Field {
	in := w.Input.Fields()
	out := append([]Field(nil), in...)
	out[w.Window.TimeCol].Type.Rowtime = false // window_time is the rowtime now
	return append(out, windowFields()...)
}
func (w *WindowTableFunction) Inputs() []Node       { return []Node{w.Input} }
func (w *WindowTableFunction) Changelog() Changelog { return InsertOnly }
func (w *WindowTableFunction) describe() string {
	return fmt.Sprintf("WindowTableFunction(window=[%s])", w.Window)
}

// exchange: a SESSION TVF merges its sessions per partition key (all rows
// in one place without PARTITION BY); the other TVFs assign rows where
// they are.
func (w *WindowTableFunction) exchange() string {
	if w.Window.Kind != "SESSION" {
		return ""
	}
	return hashExchange(w.Input.Fields(), w.Window.PartitionKeys)
}

// AggCall is one aggregate of a window aggregation.
type AggCall struct {
	Func string // COUNT, SUM, AVG, MIN, MAX
	// Arg is the input field aggregated (-1 for COUNT(*)).
	Arg      int
	Distinct bool // COUNT(DISTINCT arg)
	ArgType  types.Type
	T        types.Type
	Name     string
	Text     string // as EXPLAIN prints it
}

// WindowAggregate aggregates the rows of each window per key: it emits one
// row per (key, window) when the watermark passes the window's end, so its
// output is insert-only. Rows: Keys..., Aggs..., window_start, window_end,
// window_time.
type WindowAggregate struct {
	Input  Node
	Window Window
	// Keys are input field indexes.
	Keys []int
	Aggs []AggCall
}

func (w *WindowAggregate) Fields() []Field {
	in := w.Input.Fields()
	var out []Field
	for _, k := range w.Keys {
		out = append(out, Field{in[k].Name, in[k].Type.Plain()})
	}
	for _, a := range w.Aggs {
		out = append(out, Field{a.Name, a.T})
	}
	return append(out, windowFields()...)
}
func (w *WindowAggregate) Inputs() []Node       { return []Node{w.Input} }
func (w *WindowAggregate) Changelog() Changelog { return InsertOnly }
func (w *WindowAggregate) describe() string {
	in := w.Input.Fields()
	var keys, sel []string
	for _, k := range w.Keys {
		keys = append(keys, in[k].Name)
		sel = append(sel, in[k].Name)
	}
	for _, a := range w.Aggs {
		sel = append(sel, a.Text+" AS "+a.Name)
	}
	sel = append(sel, "start('w$) AS window_start", "end('w$) AS window_end", "rowtime('w$) AS window_time")
	return fmt.Sprintf("WindowAggregate(groupBy=[%s], window=[%s], select=[%s])", strings.Join(keys, ", "), w.Window, strings.Join(sel, ", "))
}

// exchange is the line EXPLAIN shows under a keyed node.
func (w *WindowAggregate) exchange() string {
	in := w.Input.Fields()
	if len(w.Keys) == 0 {
		return "Exchange(distribution=[single])"
	}
	var keys []string
	for _, k := range w.Keys {
		keys = append(keys, in[k].Name)
	}
	return fmt.Sprintf("Exchange(distribution=[hash[%s]])", strings.Join(keys, ", "))
}

// GroupAggregate is a regular GROUP BY: it updates each key's result with
// every input row, so its output is a changelog (+I, then -U/+U). Rows:
// Keys..., Aggs...
type GroupAggregate struct {
	Input Node
	Keys  []int
	Aggs  []AggCall
}

func (g *GroupAggregate) Fields() []Field {
	in := g.Input.Fields()
	var out []Field
	for _, k := range g.Keys {
		out = append(out, Field{in[k].Name, in[k].Type.Plain()})
	}
	for _, a := range g.Aggs {
		out = append(out, Field{a.Name, a.T})
	}
	return out
}
func (g *GroupAggregate) Inputs() []Node       { return []Node{g.Input} }
func (g *GroupAggregate) Changelog() Changelog { return Updating }
func (g *GroupAggregate) describe() string {
	in := g.Input.Fields()
	var keys, sel []string
	for _, k := range g.Keys {
		keys = append(keys, in[k].Name)
		sel = append(sel, in[k].Name)
	}
	for _, a := range g.Aggs {
		sel = append(sel, a.Text+" AS "+a.Name)
	}
	return fmt.Sprintf("GroupAggregate(groupBy=[%s], select=[%s])", strings.Join(keys, ", "), strings.Join(sel, ", "))
}

func (g *GroupAggregate) exchange() string {
	in := g.Input.Fields()
	if len(g.Keys) == 0 {
		return "Exchange(distribution=[single])"
	}
	var keys []string
	for _, k := range g.Keys {
		keys = append(keys, in[k].Name)
	}
	return fmt.Sprintf("Exchange(distribution=[hash[%s]])", strings.Join(keys, ", "))
}

// Union is UNION ALL of inputs with the same fields.
type Union struct {
	Ins []Node
	F   []Field
}

func (u *Union) Fields() []Field { return u.F }
func (u *Union) Inputs() []Node  { return u.Ins }
func (u *Union) Changelog() Changelog {
	for _, in := range u.Ins {
		if in.Changelog() == Updating {
			return Updating
		}
	}
	return InsertOnly
}
func (u *Union) describe() string {
	return fmt.Sprintf("Union(all=[true], union=[%s])", fieldNames(u.F))
}

// Sink writes its input, whose fields are the sink table's written
// columns in order (Columns: their indexes in the table), to a table.
type Sink struct {
	Table   *Table
	Input   Node
	Columns []int
	// OnConflict is ON CONFLICT's DEDUPLICATE, ERROR or NOTHING, or "".
	OnConflict string
	// UpsertMaterialize is set when the upsert key of the input differs
	// from the sink's primary key and the input is updating; never for an
	// insert-only input (Flink 2.2's behaviour).
	UpsertMaterialize bool
}

func (s *Sink) Fields() []Field      { return s.Input.Fields() }
func (s *Sink) Inputs() []Node       { return []Node{s.Input} }
func (s *Sink) Changelog() Changelog { return s.Input.Changelog() }
func (s *Sink) describe() string {
	var cols []string
	for _, c := range s.Columns {
		cols = append(cols, s.Table.Columns[c].Name)
	}
	out := fmt.Sprintf("Sink(table=[%s], fields=[%s]", s.Table.Path(), strings.Join(cols, ", "))
	if s.OnConflict != "" {
		out += fmt.Sprintf(", conflictStrategy=[%s]", s.OnConflict)
	}
	if len(s.Table.PrimaryKey) > 0 {
		out += fmt.Sprintf(", upsertMaterialize=[%v]", s.UpsertMaterialize)
	}
	return out + ")"
}

func fieldNames(fs []Field) string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// Explain renders a plan as a tree, each node with its changelog mode.
func Explain(roots ...Node) string {
	var b strings.Builder
	b.WriteString("== Optimized Execution Plan ==\n")
	for _, r := range roots {
		explainNode(&b, r, "", "")
	}
	return strings.TrimRight(b.String(), "\n")
}

func explainNode(b *strings.Builder, n Node, first, rest string) {
	line := n.describe()
	line = strings.TrimSuffix(line, ")") + fmt.Sprintf(", changelogMode=[%s])", n.Changelog())
	b.WriteString(first + line + "\n")
	if w, ok := n.(interface{ exchange() string }); ok && w.exchange() != "" {
		b.WriteString(rest + "+- " + w.exchange() + "\n")
		rest += "   "
	}
	ins := n.Inputs()
	for i, in := range ins {
		if i == len(ins)-1 {
			explainNode(b, in, rest+"+- ", rest+"   ")
		} else {
			explainNode(b, in, rest+":- ", rest+":  ")
		}
	}
}

// SortKey is a field of an ORDER BY and its direction.
type SortKey struct {
	Index int
	Desc  bool
}

func sortKeysText(in []Field, keys []SortKey) string {
	var out []string
	for _, k := range keys {
		d := "ASC"
		if k.Desc {
			d = "DESC"
		}
		out = append(out, in[k.Index].Name+" "+d)
	}
	return strings.Join(out, ", ")
}

func indexNames(in []Field, idx []int) string {
	var out []string
	for _, i := range idx {
		out = append(out, in[i].Name)
	}
	return strings.Join(out, ", ")
}

func hashExchange(in []Field, keys []int) string {
	if len(keys) == 0 {
		return "Exchange(distribution=[single])"
	}
	return fmt.Sprintf("Exchange(distribution=[hash[%s]])", indexNames(in, keys))
}

// rankFields are a rank's input fields and, when it outputs it, the row
// number.
func rankFields(in []Field, output bool, name string) []Field {
	out := append([]Field(nil), in...)
	if output {
		out = append(out, Field{name, types.Type{Kind: types.BigInt, NotNull: true}})
	}
	return out
}

// Rank is a Top-N: per partition key the first N rows by the order keys
// (ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) with rn <= N). Its
// input is insert-only (Flink's AppendFastStrategy); its output is a
// changelog: a row entering the top N inserts it and deletes the one it
// pushes out, or, with the row number selected, updates every rank that
// moved. Rows: the input's fields, then the row number when selected.
type Rank struct {
	Input         Node
	PartitionKeys []int
	OrderKeys     []SortKey
	// First and N are the rank range [First, N] (First 1 but for an
	// offset: rn > 2 AND rn <= 5).
	First, N int64
	// OutputRank says the row number is a field (RankName).
	OutputRank bool
	RankName   string
}

func (r *Rank) Fields() []Field      { return rankFields(r.Input.Fields(), r.OutputRank, r.RankName) }
func (r *Rank) Inputs() []Node       { return []Node{r.Input} }
func (r *Rank) Changelog() Changelog { return Updating }
func (r *Rank) describe() string {
	in := r.Input.Fields()
	return fmt.Sprintf("Rank(strategy=[AppendFastStrategy], rankType=[ROW_NUMBER], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		r.First, r.N, indexNames(in, r.PartitionKeys), sortKeysText(in, r.OrderKeys), fieldNames(r.Fields()))
}
func (r *Rank) exchange() string { return hashExchange(r.Input.Fields(), r.PartitionKeys) }

// Deduplicate keeps the first or the last row per key by a time
// attribute: ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime ASC|DESC)
// = 1 without the row number selected. Keeping the last row is a
// changelog (-U of the previous row, +U of the new); keeping the first is
// insert-only, as Flink 2 plans it (FLINK-37005): by processing time the
// first row to arrive, by rowtime the earliest row, emitted once the
// watermark passes its time.
type Deduplicate struct {
	Input    Node
	Keys     []int
	Order    int // the time attribute's field
	KeepLast bool
	Proctime bool
}

func (d *Deduplicate) Fields() []Field { return d.Input.Fields() }
func (d *Deduplicate) Inputs() []Node  { return []Node{d.Input} }
func (d *Deduplicate) Changelog() Changelog {
	if !d.KeepLast {
		return InsertOnly
	}
	return Updating
}
func (d *Deduplicate) describe() string {
	keep, order := "FirstRow", "ROWTIME"
	if d.KeepLast {
		keep = "LastRow"
	}
	if d.Proctime {
		order = "PROCTIME"
	}
	return fmt.Sprintf("Deduplicate(keep=[%s], key=[%s], order=[%s])", keep, indexNames(d.Input.Fields(), d.Keys), order)
}
func (d *Deduplicate) exchange() string { return hashExchange(d.Input.Fields(), d.Keys) }

// WindowRank is a Top-N per window: PARTITION BY window_start,
// window_end (and more keys) over a window TVF or window aggregation. It
// keeps the first N rows of each (key, window) and emits them, ranked,
// when the watermark passes the window's end: insert-only. Rows: the
// input's fields, then the row number when selected.
type WindowRank struct {
	Input Node
	// Window is the input's window; Start and End its columns.
	Window        Window
	Start, End    int
	PartitionKeys []int // besides window_start and window_end
	OrderKeys     []SortKey
	First, N      int64 // the rank range
	OutputRank    bool
	RankName      string
}

func (r *WindowRank) Fields() []Field      { return rankFields(r.Input.Fields(), r.OutputRank, r.RankName) }
func (r *WindowRank) Inputs() []Node       { return []Node{r.Input} }
func (r *WindowRank) Changelog() Changelog { return InsertOnly }
func (r *WindowRank) describe() string {
	in := r.Input.Fields()
	return fmt.Sprintf("WindowRank(window=[%s], rankType=[ROW_NUMBER], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		windowRefText(r.Window, in, r.Start, r.End), r.First, r.N, indexNames(in, r.PartitionKeys), sortKeysText(in, r.OrderKeys), fieldNames(r.Fields()))
}
func (r *WindowRank) exchange() string { return hashExchange(r.Input.Fields(), r.PartitionKeys) }

// WindowDeduplicate keeps the first or last row of each (key, window) by
// the window's time column and emits it when the watermark passes the
// window's end: insert-only.
type WindowDeduplicate struct {
	Input      Node
	Window     Window
	Start, End int
	Keys       []int // besides window_start and window_end
	Order      int
	KeepLast   bool
}

func (d *WindowDeduplicate) Fields() []Field      { return d.Input.Fields() }
func (d *WindowDeduplicate) Inputs() []Node       { return []Node{d.Input} }
func (d *WindowDeduplicate) Changelog() Changelog { return InsertOnly }
func (d *WindowDeduplicate) describe() string {
	in := d.Input.Fields()
	keep := "FirstRow"
	if d.KeepLast {
		keep = "LastRow"
	}
	return fmt.Sprintf("WindowDeduplicate(window=[%s], keep=[%s], partitionKeys=[%s], orderKey=[%s], order=[ROWTIME])",
		windowRefText(d.Window, in, d.Start, d.End), keep, indexNames(in, d.Keys), in[d.Order].Name)
}
func (d *WindowDeduplicate) exchange() string { return hashExchange(d.Input.Fields(), d.Keys) }

// windowRefText is a window as a window rank shows it: by its columns.
func windowRefText(w Window, in []Field, start, end int) string {
	s := w.String()
	i := strings.Index(s, "(")
	return fmt.Sprintf("%s(win_start=[%s], win_end=[%s], %s", s[:i], in[start].Name, in[end].Name, s[i+1:])
}
