package parser

// Stmt is a statement of a script.
type Stmt interface {
	Position() Pos
	stmt()
}

// Expr is an expression.
type Expr interface {
	Position() Pos
	expr()
}

// Node positions.
type node struct{ P Pos }

// Position is where the node starts.
func (n node) Position() Pos { return n.P }

// CreateTable is CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (...) WITH (...).
type CreateTable struct {
	node
	Temporary   bool
	IfNotExists bool
	Name        Name
	Columns     []*Column
	Watermark   *Watermark
	PrimaryKey  *PrimaryKey
	Comment     string
	// PartitionedBy is PARTITIONED BY (columns), or nil.
	PartitionedBy *PartitionedBy
	Options       []*Option
}

// Name is a possibly qualified name (catalog.db.table).
type Name struct {
	node
	Parts []string
}

// Last is the unqualified name.
func (n Name) Last() string { return n.Parts[len(n.Parts)-1] }

// Column is a column of a table: physical (Type), computed (Expr) or
// metadata (Type and Metadata).
type Column struct {
	node
	Name     string
	Type     *Type
	Computed Expr
	Metadata *Metadata
	Comment  string
}

// Metadata is METADATA [FROM 'key'] [VIRTUAL].
type Metadata struct {
	node
	Key     string // "" when FROM is omitted: the column's name
	Virtual bool
}

// Type is a data type as written.
type Type struct {
	node
	// Name is the canonical upper-case name: STRING, VARCHAR, CHAR,
	// BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL,
	// DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, BYTES, VARBINARY, BINARY,
	// ARRAY, MAP, ROW.
	Name string
	// Params are the numbers in parentheses (precision, scale, length).
	Params  []int
	NotNull bool
	// Elem is an ARRAY's element type; Key and Value a MAP's.
	Elem, Key, Value *Type
	// Fields are a ROW's.
	Fields []*RowField
}

// RowField is a field of a ROW type.
type RowField struct {
	Name string
	Type *Type
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	node
	Column string
	ColPos Pos
	Expr   Expr
}

// PrimaryKey is PRIMARY KEY (columns) NOT ENFORCED.
type PrimaryKey struct {
	node
	Columns []string
}

// PartitionedBy is a table's PARTITIONED BY (columns).
type PartitionedBy struct {
	node
	Columns []string
}

// Option is 'key' = 'value' of WITH.
type Option struct {
	node
	Key, Value string
}

// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name AS query.
type CreateView struct {
	node
	Temporary   bool
	IfNotExists bool
	Name        Name
	Query       *Select
}

// Drop is DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name.
type Drop struct {
	node
	What     string // TABLE or VIEW
	IfExists bool
	Name     Name
}

// Set is SET 'key' = 'value' (or SET alone, listing the settings).
type Set struct {
	node
	Key, Value string
}

// Reset is RESET ['key'].
type Reset struct {
	node
	Key string
}

// Insert is INSERT INTO table [(columns)] query [ON CONFLICT ...].
type Insert struct {
	node
	Overwrite bool
	Table     Name
	Columns   []string
	Query     *Select
	// OnConflict is DEDUPLICATE, ERROR or NOTHING (Flink 2.3's ON
	// CONFLICT DO ...), or "".
	OnConflict string
}

// Explain is EXPLAIN [PLAN FOR] statement.
type Explain struct {
	node
	Stmt Stmt
}

// ShowTables is SHOW TABLES.
type ShowTables struct{ node }

// Describe is DESCRIBE name.
type Describe struct {
	node
	Name Name
}

// StatementSet is EXECUTE STATEMENT SET BEGIN insert; ... END.
type StatementSet struct {
	node
	Inserts []*Insert
}

// QueryStmt is a SELECT run on its own.
type QueryStmt struct {
	node
	Query *Select
}

// Select is a query block.
type Select struct {
	node
	Distinct bool
	Items    []*SelectItem
	From     From
	Where    Expr
	GroupBy  []Expr
	Having   Expr
	// UnionAll are the queries appended with UNION ALL.
	UnionAll []*Select
}

// SelectItem is an item of the select list: an expression with an
// optional alias, or * (Star, optionally Qualifier.*).
type SelectItem struct {
	node
	Star      bool
	Qualifier string
	Expr      Expr
	Alias     string
}

// From is what a query reads.
type From interface {
	Position() Pos
	from()
}

// TableRef is a table or view by name, with an optional alias.
type TableRef struct {
	node
	Name  Name
	Alias string
}

// WindowTVF is TABLE(TUMBLE|HOP|CUMULATE|SESSION(TABLE t, DESCRIPTOR(col), ...)).
type WindowTVF struct {
	node
	Func  string // TUMBLE, HOP, CUMULATE, SESSION
	Table Name
	// TimeCol is the DESCRIPTOR's column.
	TimeCol    string
	TimeColPos Pos
	// Args are the intervals after the descriptor, in order: TUMBLE's
	// size; HOP's slide and size; CUMULATE's step and size; SESSION's gap.
	Args  []Expr
	Alias string
	// PartitionBy are SESSION's PARTITION BY columns (TABLE t PARTITION
	// BY k), with their positions.
	PartitionBy    []string
	PartitionByPos []Pos
}

// SubqueryRef is (query) [AS alias].
type SubqueryRef struct {
	node
	Query *Select
	Alias string
}

// Join is Left JOIN Right ON On, or the implicit join of a comma-separated
// FROM list (Kind ",", no On: its condition is the WHERE's).
type Join struct {
	node
	Kind        string // INNER, LEFT, RIGHT, FULL or ","
	Left, Right From
	On          Expr
}

// Ident is a column reference, possibly qualified (t.col).
type Ident struct {
	node
	Parts []string
}

// Literal is a number, string, boolean or NULL.
type Literal struct {
	node
	Kind LitKind
	Text string // the number's digits, the string's text, TRUE/FALSE
}

// LitKind is a literal's kind.
type LitKind int

// Literal kinds.
const (
	LitNumber LitKind = iota + 1
	LitString
	LitBool
	LitNull
)

// Interval is INTERVAL 'value' unit [TO unit].
type Interval struct {
	node
	Value string
	Unit  string // SECOND, MINUTE, HOUR, DAY, MONTH, YEAR, ...
	To    string
}

// TypedLiteral is TIMESTAMP '...', DATE '...' or TIME '...'.
type TypedLiteral struct {
	node
	Type  string
	Value string
}

// Binary is a binary operator: + - * / % || = <> < <= > >= AND OR LIKE.
type Binary struct {
	node
	Op   string
	L, R Expr
}

// Unary is NOT x or -x.
type Unary struct {
	node
	Op string
	X  Expr
}

// IsNull is x IS [NOT] NULL (and IS [NOT] TRUE/FALSE as Test).
type IsNull struct {
	node
	X   Expr
	Not bool
	// Test is NULL, TRUE or FALSE.
	Test string
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	node
	X, Lo, Hi Expr
	Not       bool
}

// In is x [NOT] IN (list).
type In struct {
	node
	X    Expr
	List []Expr
	Not  bool
}

// Call is a function call: name(args), name(DISTINCT args), COUNT(*),
// and ROW_NUMBER() OVER (...).
type Call struct {
	node
	Name     string // upper case
	Args     []Expr
	Distinct bool
	Star     bool
	// Over is the OVER (PARTITION BY ... ORDER BY ...) of a window
	// function, or nil.
	Over *Over
}

// Over is OVER ([PARTITION BY exprs] [ORDER BY expr [ASC|DESC], ...]).
type Over struct {
	node
	PartitionBy []Expr
	OrderBy     []*OrderItem
}

// OrderItem is an expression of ORDER BY and its direction.
type OrderItem struct {
	X    Expr
	Desc bool
}

// Cast is CAST(x AS type) (TRY_CAST too).
type Cast struct {
	node
	X   Expr
	To  *Type
	Try bool
}

// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type Case struct {
	node
	Operand Expr
	Whens   []*When
	Else    Expr
}

// When is WHEN cond THEN result.
type When struct {
	Cond, Then Expr
}

func (*CreateTable) stmt()  {}
func (*CreateView) stmt()   {}
func (*Drop) stmt()         {}
func (*Set) stmt()          {}
func (*Reset) stmt()        {}
func (*Insert) stmt()       {}
func (*Explain) stmt()      {}
func (*ShowTables) stmt()   {}
func (*Describe) stmt()     {}
func (*StatementSet) stmt() {}
func (*QueryStmt) stmt()    {}

func (*TableRef) from()    {}
func (*WindowTVF) from()   {}
func (*SubqueryRef) from() {}
func (*Join) from()        {}

func (*Ident) expr()        {}
func (*Literal) expr()      {}
func (*Interval) expr()     {}
func (*TypedLiteral) expr() {}
func (*Binary) expr()       {}
func (*Unary) expr()        {}
func (*IsNull) expr()       {}
func (*Between) expr()      {}
func (*In) expr()           {}
func (*Call) expr()         {}
func (*Cast) expr()         {}
func (*Case) expr()         {}
