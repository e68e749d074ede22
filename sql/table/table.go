// Package table mixes SQL with the typed DataStream API in one job, as
// Flink's StreamTableEnvironment does: a typed stream becomes a table
// (FromDataStream: a Go struct's exported fields are its columns, with a
// rowtime column of the stream's timestamps and watermarks when asked), a
// query over such tables becomes a typed stream again (ToDataStream, rows
// as a Go struct; ToChangelogStream, generic rows with their RowKind for
// an updating query), and everything compiles into the job graph of the
// stream.Environment, with the typed operators, run by its Execute.
//
//	env := stream.NewEnvironment()
//	tenv := table.NewEnvironment(env)
//	orders := stream.AssignTimestampsAndWatermarks(stream.FromSlice(env, data), strategy)
//	t, err := table.FromDataStream(tenv, orders, table.Rowtime("ts"))
//	err = tenv.CreateTemporaryView("orders", t)
//	totals, err := tenv.SQLQuery("SELECT customer, window_start, SUM(amount) AS total FROM TABLE(TUMBLE(...)) GROUP BY ...")
//	out, err := table.ToDataStream[Total](totals)
//	stream.Print(out)
//	env.Execute("mixed")
package table

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/exec"
	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
	"github.com/sluice/sluice/internal/streamcore"
	"github.com/sluice/sluice/stream"
)

// Errors, tested with errors.Is (a script's mistakes are also sql's
// ErrSyntax, ErrUnknown and ErrInvalid).
var (
	// ErrUpdating: an updating query (a changelog) converted to an
	// insert-only stream.
	ErrUpdating = errors.New("table: the query's result is updating")
)

// Environment is SQL over a stream.Environment's typed streams: its
// catalog of views, and the job they compile into.
type Environment struct {
	env    *stream.Environment
	b      *core.Builder
	pl     *planner.Session
	inputs map[string]func(out core.Type) (core.Stream, error)
	// converted counts the queries compiled so far, which number their
	// operators' UIDs.
	converted int
	metrics   *exec.Metrics
}

// NewEnvironment is the table environment of env (Flink's
// StreamTableEnvironment.create).
func NewEnvironment(env *stream.Environment) *Environment {
	te := &Environment{env: env, pl: planner.NewSession(nil), inputs: map[string]func(core.Type) (core.Stream, error){}, metrics: &exec.Metrics{}}
	if streamcore.Builder != nil {
		te.b, _ = streamcore.Builder(env)
	}
	return te
}

// Table is a table of the environment: a typed stream's rows, or a
// query's result.
type Table struct {
	te *Environment
	// A stream's table: its columns and rowtime (-1: none) and how its
	// rows are compiled in.
	cols    []planner.Column
	rowtime int
	input   func(out core.Type) (core.Stream, error)
	// A query's table: its text and plan.
	query string
	plan  planner.Node
}

// Columns are the table's column names and SQL types, as DESCRIBE prints
// them.
func (t *Table) Columns() []string {
	var out []string
	if t.plan != nil {
		for _, f := range t.plan.Fields() {
			out = append(out, f.Name+" "+f.Type.String())
		}
		return out
	}
	for _, c := range t.cols {
		out = append(out, c.Name+" "+c.Type.String())
	}
	return out
}

// Option configures FromDataStream.
type Option func(*fromOptions)

type fromOptions struct{ rowtime string }

// Rowtime adds a column called name of type TIMESTAMP(3) *ROWTIME*
// holding each record's timestamp, the table's event time, whose
// watermarks are the stream's (Flink's Schema.columnByMetadata("rowtime")
// with SOURCE_WATERMARK()). The stream must carry timestamps and
// watermarks (stream.AssignTimestampsAndWatermarks, or a source with a
// WatermarkStrategy).
func Rowtime(name string) Option { return func(o *fromOptions) { o.rowtime = name } }

// FromDataStream is the table of ds's records, whose type T is a struct
// (see the column mapping in columns.go); a T that cannot map is refused
// with a *TypeError naming the field.
func FromDataStream[T any](te *Environment, ds stream.DataStream[T], opts ...Option) (*Table, error) {
	var o fromOptions
	for _, opt := range opts {
		opt(&o)
	}
	rt := reflect.TypeFor[T]()
	cols, err := columnsOf(rt)
	if err != nil {
		return nil, err
	}
	if te.b == nil || streamcore.Stream == nil {
		return nil, fmt.Errorf("table: the stream.Environment has no job to compile into")
	}
	in, err := streamcore.Stream(ds)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	pcols := plannerColumns(cols)
	rowtime := -1
	if o.rowtime != "" {
		for _, c := range cols {
			if strings.EqualFold(c.name, o.rowtime) {
				return nil, fmt.Errorf("%w: the rowtime column %s is also a field of %s", planner.ErrInvalid, o.rowtime, rt)
			}
		}
		rowtime = len(pcols)
		pcols = append(pcols, planner.Column{Name: o.rowtime, Type: types.Type{Kind: types.Timestamp, Precision: 3, NotNull: true, Rowtime: true}})
	}
	input := func(out core.Type) (core.Stream, error) {
		name := "FromDataStream(" + rt.String() + ")"
		return core.Transform(in, core.OperatorSpec{Kind: "from-datastream", Name: name, Out: out,
			New: func() core.Operator { return &toRowOp[T]{cols: cols, rowtime: rowtime >= 0} }}), nil
	}
	return &Table{te: te, cols: pcols, rowtime: rowtime, input: input}, nil
}

// CreateTemporaryView registers t under name, for queries to read.
func (te *Environment) CreateTemporaryView(name string, t *Table) error {
	if t.te != te {
		return fmt.Errorf("table: view %s: the table belongs to another table environment", name)
	}
	if t.plan != nil {
		// A query's view is the query, planned where it is read.
		script := "CREATE TEMPORARY VIEW " + quoteIdent(name) + " AS " + t.query
		stmts, err := parser.Parse(script)
		if err != nil {
			return err
		}
		_, err = te.pl.Execute(script, stmts[0])
		return err
	}
	pt := &planner.Table{Name: name, Columns: append([]planner.Column(nil), t.cols...), Rowtime: t.rowtime, Temporary: true,
		Options: map[string]string{planner.OptConnector: planner.ConnectorDataStream}}
	if err := te.pl.Catalog().AddTable(pt); err != nil {
		return fmt.Errorf("table: view %s: %w", name, err)
	}
	te.inputs[name] = t.input
	return nil
}

// SQLQuery plans a SELECT over the environment's views; its mistakes are
// reported at their line and column (a *sql.Error).
func (te *Environment) SQLQuery(query string) (*Table, error) {
	stmts, err := parser.Parse(query)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("%w: SQLQuery takes one SELECT, got %d statements", planner.ErrInvalid, len(stmts))
	}
	if _, ok := stmts[0].(*parser.QueryStmt); !ok {
		return nil, parser.ErrorAt(query, stmts[0].Position(), planner.ErrInvalid, "SQLQuery takes a SELECT; run other statements in a sql.Session")
	}
	res, err := te.pl.Execute(query, stmts[0])
	if err != nil {
		return nil, err
	}
	return &Table{te: te, query: strings.TrimRight(strings.TrimSpace(query), ";"), plan: res.Sinks[0].Input, rowtime: -1}, nil
}

// compile adds t's query to the job and returns the stream of its rows.
func (t *Table) compile() (core.Stream, []planner.Field, error) {
	te := t.te
	n := t.plan
	if n == nil {
		// A stream's table read as it is: SELECT * from a view of it.
		name := "$table" + strconv.Itoa(te.converted)
		if err := te.CreateTemporaryView(name, t); err != nil {
			return core.Stream{}, nil, err
		}
		q, err := te.SQLQuery("SELECT * FROM " + quoteIdent(name))
		if err != nil {
			return core.Stream{}, nil, err
		}
		n = q.plan
	}
	te.converted++
	s, err := exec.CompileQuery(te.b, n, "table-"+strconv.Itoa(te.converted), exec.Options{
		Config: te.env.Configuration(), Metrics: te.metrics, Inputs: te.inputs})
	return s, n.Fields(), err
}

// ToDataStream is t's rows as a stream of T, a struct whose fields take
// the columns of the same names (every column needs one; see columns.go
// for the types each Go type takes, and DECIMAL into a float or string).
// An updating query (a changelog) is refused with ErrUpdating: use
// ToChangelogStream.
func ToDataStream[T any](t *Table) (stream.DataStream[T], error) {
	var zero stream.DataStream[T]
	rt := reflect.TypeFor[T]()
	if t.plan != nil && t.plan.Changelog() == planner.Updating {
		return zero, fmt.Errorf("%w: ToDataStream takes an insert-only query; convert %q with ToChangelogStream", ErrUpdating, t.query)
	}
	var fields []planner.Field
	if t.plan != nil {
		fields = t.plan.Fields()
	} else {
		for _, c := range t.cols {
			fields = append(fields, planner.Field{Name: c.Name, Type: c.Type})
		}
	}
	conv, err := newFromRow(rt, fields)
	if err != nil {
		return zero, err
	}
	rows, _, err := t.compile()
	if err != nil {
		return zero, err
	}
	out := core.Transform(rows, core.OperatorSpec{Kind: "to-datastream", Name: "ToDataStream(" + rt.String() + ")", Out: core.TypeOf[T](),
		New: func() core.Operator { return &fromRowOp[T]{conv: conv} }})
	return wrap[T](t.te, out)
}

// RowKind is a row's change in a changelog: +I, -U, +U, -D.
type RowKind = core.RowKind

// The row kinds.
const (
	Insert       = core.Insert
	UpdateBefore = core.UpdateBefore
	UpdateAfter  = core.UpdateAfter
	Delete       = core.Delete
)

// Row is a generic row of a changelog: its kind and its values, in the
// query's column order, as Go values (STRING string, BOOLEAN bool, the
// integers int64, FLOAT and DOUBLE float64, DECIMAL its exact text
// ("12.50"), TIMESTAMP time.Time in UTC, BYTES []byte, NULL nil).
type Row struct {
	Kind   RowKind
	Fields []any
}

func (r Row) String() string { return fmt.Sprintf("%s%v", r.Kind, r.Fields) }

// ToChangelogStream is t's changes as generic rows with their kind: +I
// only for an insert-only query; +I, -U, +U and -D for an updating one,
// each key's in order.
func ToChangelogStream(t *Table) (stream.DataStream[Row], error) {
	rows, fields, err := t.compile()
	if err != nil {
		return stream.DataStream[Row]{}, err
	}
	ts := make([]types.Type, len(fields))
	for i, f := range fields {
		ts[i] = f.Type
	}
	out := core.Transform(rows, core.OperatorSpec{Kind: "to-changelog-stream", Name: "ToChangelogStream", Out: core.TypeOf[Row](),
		New: func() core.Operator { return &changelogOp{types: ts} }})
	if rows.Node().Parallelism > 0 {
		out.SetParallelism(rows.Node().Parallelism) // each key's changes in order
	}
	return wrap[Row](t.te, out)
}

func wrap[T any](te *Environment, s core.Stream) (stream.DataStream[T], error) {
	var proto stream.DataStream[T]
	ds, err := streamcore.Wrap(te.env, proto, s.Node())
	if err != nil {
		return proto, err
	}
	return ds.(stream.DataStream[T]), nil
}

func quoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// toRowOp turns a stream's records into rows, with the record's timestamp
// as the rowtime column.
type toRowOp[T any] struct {
	cols    []column
	rowtime bool
}

func (o *toRowOp[T]) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	v, ok := r.Value().(T)
	if !ok {
		return fmt.Errorf("table: a %T record where a %T was expected", r.Value(), v)
	}
	rv := reflect.ValueOf(v)
	vals := make([]any, 0, len(o.cols)+1)
	for _, c := range o.cols {
		vals = append(vals, c.value(rv))
	}
	if o.rowtime {
		if ts == core.NoTimestamp {
			return fmt.Errorf("table: a %T record without a timestamp for the rowtime column: assign timestamps upstream (stream.AssignTimestampsAndWatermarks)", v)
		}
		vals = append(vals, ts)
	}
	return ctx.Emit(core.RowRecord(core.Row{Kind: core.Insert, Values: vals}), ts)
}

// fromRow sets a struct's fields from a row.
type fromRow struct {
	t       reflect.Type
	fields  []int // the struct field of each column
	setters []setter
	names   []string
}

// newFromRow maps the columns fields to the struct type t's fields.
func newFromRow(t reflect.Type, fields []planner.Field) (*fromRow, error) {
	if t.Kind() != reflect.Struct {
		return nil, &TypeError{Type: t.String(), Msg: "it is a " + t.Kind().String() + ", not a struct of exported fields"}
	}
	byName := map[string]int{}
	for i := range t.NumField() {
		if name, ok := columnName(t.Field(i)); ok {
			byName[strings.ToLower(name)] = i
		}
	}
	c := &fromRow{t: t}
	for _, f := range fields {
		i, ok := byName[strings.ToLower(f.Name)]
		if !ok {
			return nil, &TypeError{Type: t.String(), Msg: fmt.Sprintf("no field takes column %s (%s): add one, or name it with a `sql:%q` tag", f.Name, f.Type.Plain(), f.Name)}
		}
		set, err := fieldSetter(t.Field(i).Type, f.Type)
		if err != nil {
			return nil, &TypeError{Type: t.String(), Field: t.Field(i).Name, Msg: fmt.Sprintf("column %s: %v", f.Name, err)}
		}
		c.fields, c.setters, c.names = append(c.fields, i), append(c.setters, set), append(c.names, f.Name)
	}
	return c, nil
}

type fromRowOp[T any] struct{ conv *fromRow }

func (o *fromRowOp[T]) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	var v T
	dst := reflect.ValueOf(&v).Elem()
	vals := r.Row().Values
	for i, f := range o.conv.fields {
		if err := o.conv.setters[i](dst.Field(f), vals[i]); err != nil {
			return fmt.Errorf("table: column %s into %s.%s: %w", o.conv.names[i], o.conv.t, o.conv.t.Field(f).Name, err)
		}
	}
	return ctx.Emit(core.ValueRecord(v), ts)
}

type changelogOp struct{ types []types.Type }

func (o *changelogOp) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	row := r.Row()
	out := Row{Kind: row.Kind, Fields: make([]any, len(row.Values))}
	for i, v := range row.Values {
		out.Fields[i] = rowValue(o.types[i], v)
	}
	return ctx.Emit(core.ValueRecord(out), ts)
}
