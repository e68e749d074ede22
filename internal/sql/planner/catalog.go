package planner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/types"
)

// Error kinds wrapped by the planner's *parser.Error values.
var (
	// ErrUnknown: a table, column or function that does not exist.
	ErrUnknown = errors.New("sql: unknown name")
	// ErrInvalid: a statement that is well-formed but wrong: a type
	// mismatch, a missing connector option, an unsupported construct.
	ErrInvalid = errors.New("sql: invalid statement")
)

// ColumnKind says where a column's values come from.
type ColumnKind int

// Column kinds.
const (
	Physical    ColumnKind = iota // read from (and written to) the format
	Computed                      // computed from the other columns
	MetadataCol                   // from the connector (METADATA FROM ...)
)

// proctimeType is the type of a PROCTIME() column, as Flink's:
// TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*.
var proctimeType = types.Type{Kind: types.TimestampLTZ, Precision: 3, NotNull: true, Proctime: true}

// Column is a table's column.
type Column struct {
	Name string
	Type types.Type
	Kind ColumnKind
	// Expr is a computed column's expression over the table's physical and
	// metadata columns (indexes into Table.Columns).
	Expr Expr
	// MetaKey is a metadata column's key; Virtual ones are read-only.
	MetaKey string
	Virtual bool
}

// Table is a table of the catalog.
type Table struct {
	Name    string
	Columns []Column
	// Rowtime is the index of the watermarked column (-1: none), and
	// Watermark its watermark expression over the columns.
	Rowtime   int
	Watermark Expr
	// PrimaryKey lists column indexes.
	PrimaryKey []int
	// PartitionKeys lists the PARTITIONED BY column indexes.
	PartitionKeys []int
	Options       map[string]string
	Temporary     bool
	// Pos is where the table was created, for messages.
	Pos parser.Pos
}

// Index is the index of the column called name, or -1.
func (t *Table) Index(name string) int {
	return slices.IndexFunc(t.Columns, func(c Column) bool { return c.Name == name })
}

// ColumnNames are the names of the columns.
func (t *Table) ColumnNames() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// Path is the table's name as Flink prints it.
func (t *Table) Path() string { return "default_catalog.default_database." + t.Name }

// Catalog holds the tables, views and settings of a session.
type Catalog struct {
	tables map[string]*Table
	views  map[string]*parser.CreateView
	// Settings are SET's key-value pairs.
	Settings map[string]string
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{tables: map[string]*Table{}, views: map[string]*parser.CreateView{}, Settings: map[string]string{}}
}

// Clone is a copy of the catalog that can change without changing c.
func (c *Catalog) Clone() *Catalog {
	return &Catalog{tables: maps.Clone(c.tables), views: maps.Clone(c.views), Settings: maps.Clone(c.Settings)}
}

// Table returns the table called name.
func (c *Catalog) Table(name string) (*Table, bool) { t, ok := c.tables[name]; return t, ok }

// TableNames are the tables and views, sorted.
func (c *Catalog) TableNames() []string {
	names := slices.Collect(maps.Keys(c.tables))
	names = append(names, slices.Collect(maps.Keys(c.views))...)
	slices.Sort(names)
	return names
}

// objectName checks a possibly qualified name: only the default catalog
// and database exist.
func (p *session) objectName(n parser.Name) (string, error) {
	switch len(n.Parts) {
	case 3:
		if n.Parts[0] != "default_catalog" {
			return "", p.errAt(n.Position(), ErrUnknown, "catalog %s does not exist (only default_catalog)", n.Parts[0])
		}
		fallthrough
	case 2:
		if db := n.Parts[len(n.Parts)-2]; db != "default_database" {
			return "", p.errAt(n.Position(), ErrUnknown, "database %s does not exist (only default_database)", db)
		}
	}
	return n.Last(), nil
}

func (p *session) createTable(s *parser.CreateTable) error {
	name, err := p.objectName(s.Name)
	if err != nil {
		return err
	}
	if _, ok := p.cat.tables[name]; ok || p.cat.views[name] != nil {
		if s.IfNotExists {
			return nil
		}
		return p.errAt(s.Name.Position(), ErrInvalid, "table %s already exists", name)
	}
	t := &Table{Name: name, Rowtime: -1, Options: map[string]string{}, Temporary: s.Temporary, Pos: s.Position()}
	for _, o := range s.Options {
		t.Options[o.Key] = o.Value
	}
	// Physical and metadata columns first (computed ones may refer to them).
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if seen[c.Name] {
			return p.errAt(c.Position(), ErrInvalid, "column %s is declared twice", c.Name)
		}
		seen[c.Name] = true
		col := Column{Name: c.Name}
		if c.Type != nil {
			ty, err := p.resolveType(c.Type)
			if err != nil {
				return err
			}
			col.Type = ty
		}
		if m := c.Metadata; m != nil {
			col.Kind, col.MetaKey, col.Virtual = MetadataCol, m.Key, m.Virtual
			if col.MetaKey == "" {
				col.MetaKey = c.Name
			}
		}
		if c.Computed != nil {
			col.Kind = Computed
		}
		t.Columns = append(t.Columns, col)
	}
	sc := &scope{}
	for i, c := range t.Columns {
		if c.Kind != Computed {
			sc.add("", c.Name, &ColRef{Index: i, Name: c.Name, T: c.Type})
		}
	}
	for i, c := range s.Columns {
		if c.Computed == nil {
			continue
		}
		if call, ok := c.Computed.(*parser.Call); ok && call.Name == "PROCTIME" && call.Over == nil {
			if len(call.Args) > 0 {
				return p.errAt(call.Position(), ErrInvalid, "PROCTIME takes no arguments")
			}
			// A processing-time attribute: the source sets it to the time
			// it reads the record.
			t.Columns[i].Expr = &Const{T: proctimeType, Text: "PROCTIME()"}
			t.Columns[i].Type = proctimeType
			continue
		}
		e, err := p.bind(c.Computed, sc, nil)
		if err != nil {
			return err
		}
		if containsAgg(c.Computed) {
			return p.errAt(c.Computed.Position(), ErrInvalid, "a computed column cannot aggregate")
		}
		t.Columns[i].Expr, t.Columns[i].Type = e, e.Type().Plain()
	}
	if w := s.Watermark; w != nil {
		idx := t.Index(w.Column)
		if idx < 0 {
			return p.unknownColumn(w.ColPos, w.Column, t.ColumnNames())
		}
		if !t.Columns[idx].Type.IsTimestamp() || t.Columns[idx].Type.Precision > 3 {
			return p.errAt(w.ColPos, ErrInvalid, "the rowtime column %s must be TIMESTAMP(3) or TIMESTAMP_LTZ(3) (or a lower precision), not %s", w.Column, t.Columns[idx].Type)
		}
		full := &scope{}
		for i, c := range t.Columns {
			full.add("", c.Name, &ColRef{Index: i, Name: c.Name, T: c.Type})
		}
		e, err := p.bind(w.Expr, full, nil)
		if err != nil {
			return err
		}
		if !e.Type().IsTimestamp() {
			return p.errAt(w.Expr.Position(), ErrInvalid, "the watermark expression must be a timestamp, not %s", e.Type())
		}
		t.Rowtime, t.Watermark = idx, e
		t.Columns[idx].Type.Rowtime = true
	}
	if k := s.PrimaryKey; k != nil {
		for _, name := range k.Columns {
			idx := t.Index(name)
			if idx < 0 {
				return p.unknownColumn(k.Position(), name, t.ColumnNames())
			}
			if t.Columns[idx].Kind != Physical {
				return p.errAt(k.Position(), ErrInvalid, "primary key column %s must be a physical column", name)
			}
			t.Columns[idx].Type.NotNull = true
			t.PrimaryKey = append(t.PrimaryKey, idx)
		}
	}
	if k := s.PartitionedBy; k != nil {
		for _, name := range k.Columns {
			idx := t.Index(name)
			if idx < 0 {
				return p.unknownColumn(k.Position(), name, t.ColumnNames())
			}
			if t.Columns[idx].Kind != Physical {
				return p.errAt(k.Position(), ErrInvalid, "partition column %s must be a physical column", name)
			}
			if slices.Contains(t.PartitionKeys, idx) {
				return p.errAt(k.Position(), ErrInvalid, "partition column %s is listed twice", name)
			}
			t.PartitionKeys = append(t.PartitionKeys, idx)
		}
		if len(t.PartitionKeys) == len(physicalColumns(t)) {
			return p.errAt(k.Position(), ErrInvalid, "table %s: every physical column is a partition column; the files would hold nothing", t.Name)
		}
		if t.Options[OptConnector] != "filesystem" {
			return p.errAt(k.Position(), ErrInvalid, "table %s: connector '%s' has no partitions (PARTITIONED BY is for 'filesystem' tables)", t.Name, t.Options[OptConnector])
		}
	}
	if err := p.validateConnector(s, t); err != nil {
		return err
	}
	p.cat.tables[name] = t
	return nil
}

func physicalColumns(t *Table) []int {
	var out []int
	for i, c := range t.Columns {
		if c.Kind == Physical {
			out = append(out, i)
		}
	}
	return out
}

func (p *session) resolveType(t *parser.Type) (types.Type, error) {
	ty, err := types.FromName(t.Name, t.Params, t.NotNull)
	if err != nil {
		return types.Type{}, p.errAt(t.Position(), ErrInvalid, "%v", err)
	}
	return ty, nil
}

func (p *session) unknownColumn(pos parser.Pos, name string, known []string) error {
	msg := fmt.Sprintf("column '%s' not found", name)
	if n := parser.Nearest(name, known); n != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", n)
	} else if len(known) > 0 {
		msg += fmt.Sprintf(" (the columns are %s)", strings.Join(known, ", "))
	}
	return p.errAt(pos, ErrUnknown, "%s", msg)
}
