package exec

import (
	"fmt"
	"io"
	"sync"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
)

// CompileQuery adds the operators of a query's plan to b and returns the
// stream of its result rows (of RowType(n.Fields())), for a program that
// goes on with them (sql/table's ToDataStream). prefix starts the UIDs of
// its operators, which must differ between the queries of a job.
func CompileQuery(b *core.Builder, n planner.Node, prefix string, o Options) (core.Stream, error) {
	if o.Config == nil {
		o.Config = conf.New()
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Metrics == nil {
		o.Metrics = &Metrics{}
	}
	c := &compiler{b: b, o: o, mu: &sync.Mutex{}, prefix: prefix}
	return c.node(n)
}

// RowType is the record type of rows of fields.
func RowType(fields []planner.Field) (core.Type, error) { return rowType(fields) }

// dataStreamScan is the scan of a table whose rows a program's stream
// provides.
func (c *compiler) dataStreamScan(t *planner.Table, out core.Type) (core.Stream, error) {
	in, ok := c.o.Inputs[t.Name]
	if !ok {
		return core.Stream{}, fmt.Errorf("sql: table %s: no stream provides its rows", t.Name)
	}
	return in(out)
}
