package planner

import "fmt"

// ConnectorDataStream is the connector of a table a program registers
// from one of its typed streams (sql/table): its rows come from that
// stream, compiled in by the caller (exec.Options.Inputs), not from a
// connector.
const ConnectorDataStream = "datastream"

// AddTable registers a table a program built (a typed stream's view): its
// columns, its rowtime column (-1: none; its watermarks come from the
// stream, so it has no watermark expression) and its options. A table or
// view of the name must not exist.
func (c *Catalog) AddTable(t *Table) error {
	if _, ok := c.tables[t.Name]; ok || c.views[t.Name] != nil {
		return fmt.Errorf("%w: table or view %s already exists", ErrInvalid, t.Name)
	}
	if t.Rowtime >= 0 {
		if t.Rowtime >= len(t.Columns) {
			return fmt.Errorf("%w: table %s: rowtime column %d of %d", ErrInvalid, t.Name, t.Rowtime, len(t.Columns))
		}
		t.Columns[t.Rowtime].Type.Rowtime = true
	}
	c.tables[t.Name] = t
	return nil
}
