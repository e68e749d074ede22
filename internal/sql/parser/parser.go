// Package parser is the lexer and parser of Sluice's SQL: Flink's dialect
// of it (DDL with computed and metadata columns, watermarks, primary keys
// and WITH options; SET; INSERT INTO ... SELECT; queries with window
// table-valued functions). It turns a script into statements (ast.go)
// and reports a mistake as an *Error naming the line and column, with the
// line and a caret under the place. It knows no catalog: names are
// resolved by the planner.
package parser

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// reserved are the words that never start or continue an expression as a
// bare identifier (quote them with backticks to use them as names).
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "BY": true, "HAVING": true,
	"AS": true, "AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "TRUE": true,
	"FALSE": true, "CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true,
	"CAST": true, "BETWEEN": true, "IN": true, "LIKE": true, "UNION": true, "ALL": true,
	"INSERT": true, "INTO": true, "TABLE": true, "ON": true, "DISTINCT": true, "INTERVAL": true,
	"CREATE": true, "WITH": true, "ORDER": true, "LIMIT": true, "JOIN": true, "LEFT": true,
	"RIGHT": true, "INNER": true, "OUTER": true, "FULL": true, "CROSS": true, "WINDOW": true,
	"OVER": true, "PARTITION": true, "PRIMARY": true, "WATERMARK": true, "FOR": true,
	"DESCRIPTOR": true, "VALUES": true, "SET": true, "DROP": true, "EXPLAIN": true,
}

// Parse parses a script of statements separated by semicolons.
func Parse(src string) ([]Stmt, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	var out []Stmt
	for {
		for p.isOp(";") {
			p.next()
		}
		if p.peek().kind == tEOF {
			return out, nil
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if !p.isOp(";") && p.peek().kind != tEOF {
			return nil, p.unexpected("';' or the end of the script")
		}
	}
}

// ParseExpr parses one expression (for tests and computed options).
func ParseExpr(src string) (Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, p.unexpected("the end of the expression")
	}
	return e, nil
}

type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(op string) bool { t := p.peek(); return t.kind == tOp && t.text == op }

// isKw reports whether the next token is the (unquoted) keyword kw.
func (p *parser) isKw(kw string) bool { t := p.peek(); return t.kind == tIdent && t.upper() == kw }

func (p *parser) isKwAt(k int, kw string) bool {
	t := p.peekAt(k)
	return t.kind == tIdent && t.upper() == kw
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.next()
		return true
	}
	return false
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) errAt(pos Pos, format string, args ...any) error {
	return errorAt(p.src, pos, format, args...)
}

func (p *parser) unexpected(want string) error {
	t := p.peek()
	return p.errAt(t.pos, "unexpected %s, expected %s", t.describe(), want)
}

func (p *parser) expectKw(kws ...string) error {
	for _, kw := range kws {
		if !p.acceptKw(kw) {
			return p.unexpected(kw)
		}
	}
	return nil
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.unexpected(fmt.Sprintf("'%s'", op))
	}
	return nil
}

// ident reads a name: an unquoted identifier that is no reserved word, or
// a quoted one.
func (p *parser) ident(what string) (string, Pos, error) {
	t := p.peek()
	if t.kind == tQuotedIdent || (t.kind == tIdent && !reserved[t.upper()]) {
		p.next()
		return t.text, t.pos, nil
	}
	return "", t.pos, p.unexpected(what)
}

func (p *parser) name(what string) (Name, error) {
	s, pos, err := p.ident(what)
	if err != nil {
		return Name{}, err
	}
	n := Name{node: node{pos}, Parts: []string{s}}
	for p.isOp(".") {
		p.next()
		s, _, err := p.ident(what)
		if err != nil {
			return Name{}, err
		}
		n.Parts = append(n.Parts, s)
	}
	if len(n.Parts) > 3 {
		return Name{}, p.errAt(pos, "%s %s has more than three parts (catalog.database.object)", what, strings.Join(n.Parts, "."))
	}
	return n, nil
}

func (p *parser) stringLit(what string) (string, Pos, error) {
	t := p.peek()
	if t.kind != tString {
		return "", t.pos, p.unexpected(what)
	}
	p.next()
	return t.text, t.pos, nil
}

func (p *parser) statement() (Stmt, error) {
	t := p.peek()
	pos := t.pos
	switch {
	case p.isKw("CREATE"):
		p.next()
		temp := p.acceptKw("TEMPORARY")
		switch {
		case p.acceptKw("TABLE"):
			return p.createTable(pos, temp)
		case p.acceptKw("VIEW"):
			return p.createView(pos, temp)
		}
		return nil, p.unexpected("TABLE or VIEW")
	case p.isKw("DROP"):
		p.next()
		p.acceptKw("TEMPORARY")
		d := &Drop{node: node{pos}}
		switch {
		case p.acceptKw("TABLE"):
			d.What = "TABLE"
		case p.acceptKw("VIEW"):
			d.What = "VIEW"
		default:
			return nil, p.unexpected("TABLE or VIEW")
		}
		if p.isKw("IF") {
			p.next()
			if err := p.expectKw("EXISTS"); err != nil {
				return nil, err
			}
			d.IfExists = true
		}
		var err error
		d.Name, err = p.name("a table name")
		return d, err
	case p.isKw("SET"):
		p.next()
		s := &Set{node: node{pos}}
		if p.isOp(";") || p.peek().kind == tEOF {
			return s, nil
		}
		var err error
		if s.Key, _, err = p.stringLit("a quoted key ('key' = 'value')"); err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		if s.Value, _, err = p.stringLit("a quoted value ('key' = 'value')"); err != nil {
			return nil, err
		}
		return s, nil
	case p.isKw("RESET"):
		p.next()
		r := &Reset{node: node{pos}}
		if p.peek().kind == tString {
			r.Key = p.next().text
		}
		return r, nil
	case p.isKw("INSERT"):
		return p.insert()
	case p.isKw("EXPLAIN"):
		p.next()
		if p.acceptKw("PLAN") {
			if err := p.expectKw("FOR"); err != nil {
				return nil, err
			}
		}
		inner, err := p.statement()
		if err != nil {
			return nil, err
		}
		switch inner.(type) {
		case *Insert, *QueryStmt, *StatementSet:
		default:
			return nil, p.errAt(inner.Position(), "EXPLAIN takes a query, an INSERT or a statement set")
		}
		return &Explain{node: node{pos}, Stmt: inner}, nil
	case p.isKw("SHOW"):
		p.next()
		if err := p.expectKw("TABLES"); err != nil {
			return nil, err
		}
		return &ShowTables{node{pos}}, nil
	case p.isKw("DESCRIBE") || p.isKw("DESC"):
		p.next()
		n, err := p.name("a table name")
		return &Describe{node: node{pos}, Name: n}, err
	case p.isKw("EXECUTE") || p.isKw("BEGIN"):
		return p.statementSet()
	case p.isKw("SELECT") || p.isOp("("):
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		return &QueryStmt{node: node{pos}, Query: q}, nil
	}
	return nil, p.unexpected("a statement (CREATE, DROP, SET, RESET, INSERT, SELECT, EXPLAIN, SHOW, DESCRIBE, EXECUTE)")
}

func (p *parser) statementSet() (Stmt, error) {
	pos := p.peek().pos
	if p.acceptKw("EXECUTE") {
		if err := p.expectKw("STATEMENT", "SET"); err != nil {
			return nil, err
		}
	} else {
		p.next() // BEGIN STATEMENT SET
		if err := p.expectKw("STATEMENT", "SET"); err != nil {
			return nil, err
		}
		if !p.acceptOp(";") {
			return nil, p.unexpected("';'")
		}
	}
	if p.isKw("BEGIN") {
		p.next()
	}
	set := &StatementSet{node: node{pos}}
	for {
		for p.acceptOp(";") {
		}
		if p.acceptKw("END") {
			if len(set.Inserts) == 0 {
				return nil, p.errAt(pos, "the statement set has no INSERT")
			}
			return set, nil
		}
		if !p.isKw("INSERT") {
			return nil, p.unexpected("INSERT or END")
		}
		ins, err := p.insert()
		if err != nil {
			return nil, err
		}
		set.Inserts = append(set.Inserts, ins)
		if !p.isOp(";") && !p.isKw("END") {
			return nil, p.unexpected("';' or END")
		}
	}
}

func (p *parser) createTable(pos Pos, temp bool) (Stmt, error) {
	ct := &CreateTable{node: node{pos}, Temporary: temp}
	if p.isKw("IF") {
		p.next()
		if err := p.expectKw("NOT", "EXISTS"); err != nil {
			return nil, err
		}
		ct.IfNotExists = true
	}
	var err error
	if ct.Name, err = p.name("a table name"); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isKw("WATERMARK"):
			wpos := p.next().pos
			if ct.Watermark != nil {
				return nil, p.errAt(wpos, "a table has one WATERMARK")
			}
			if err := p.expectKw("FOR"); err != nil {
				return nil, err
			}
			w := &Watermark{node: node{wpos}}
			if w.Column, w.ColPos, err = p.ident("the rowtime column"); err != nil {
				return nil, err
			}
			if err := p.expectKw("AS"); err != nil {
				return nil, err
			}
			if w.Expr, err = p.expr(); err != nil {
				return nil, err
			}
			ct.Watermark = w
		case p.isKw("PRIMARY") || p.isKw("CONSTRAINT"):
			kpos := p.peek().pos
			if p.acceptKw("CONSTRAINT") {
				if _, _, err := p.ident("a constraint name"); err != nil {
					return nil, err
				}
			}
			if err := p.expectKw("PRIMARY", "KEY"); err != nil {
				return nil, err
			}
			if ct.PrimaryKey != nil {
				return nil, p.errAt(kpos, "a table has one PRIMARY KEY")
			}
			cols, err := p.columnList()
			if err != nil {
				return nil, err
			}
			if err := p.notEnforced(); err != nil {
				return nil, err
			}
			ct.PrimaryKey = &PrimaryKey{node: node{kpos}, Columns: cols}
		default:
			c, err := p.column(ct)
			if err != nil {
				return nil, err
			}
			ct.Columns = append(ct.Columns, c)
		}
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		break
	}
	if p.acceptKw("COMMENT") {
		if ct.Comment, _, err = p.stringLit("a comment string"); err != nil {
			return nil, err
		}
	}
	if p.isKw("PARTITIONED") {
		kpos := p.peek().pos
		if err := p.expectKw("PARTITIONED", "BY"); err != nil {
			return nil, err
		}
		cols, err := p.columnList()
		if err != nil {
			return nil, err
		}
		ct.PartitionedBy = &PartitionedBy{node: node{kpos}, Columns: cols}
	}
	if p.acceptKw("WITH") {
		if ct.Options, err = p.options(); err != nil {
			return nil, err
		}
	}
	if p.isKw("LIKE") {
		return nil, p.errAt(p.peek().pos, "CREATE TABLE ... LIKE is not supported")
	}
	return ct, nil
}

func (p *parser) notEnforced() error {
	if !p.isKw("NOT") {
		return p.errAt(p.peek().pos, "Flink supports only unenforced primary keys: write PRIMARY KEY (...) NOT ENFORCED")
	}
	p.next()
	return p.expectKw("ENFORCED")
}

func (p *parser) columnList() ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var cols []string
	for {
		c, _, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		if p.acceptOp(",") {
			continue
		}
		return cols, p.expectOp(")")
	}
}

func (p *parser) column(ct *CreateTable) (*Column, error) {
	name, pos, err := p.ident("a column name, WATERMARK or PRIMARY KEY")
	if err != nil {
		return nil, err
	}
	c := &Column{node: node{pos}, Name: name}
	if p.acceptKw("AS") {
		if c.Computed, err = p.expr(); err != nil {
			return nil, err
		}
	} else {
		if c.Type, err = p.dataType(); err != nil {
			return nil, err
		}
		if p.isKw("METADATA") {
			mpos := p.next().pos
			m := &Metadata{node: node{mpos}}
			if p.acceptKw("FROM") {
				if m.Key, _, err = p.stringLit("the metadata key ('timestamp', 'partition', 'offset', 'headers')"); err != nil {
					return nil, err
				}
			}
			m.Virtual = p.acceptKw("VIRTUAL")
			c.Metadata = m
		}
		if p.isKw("PRIMARY") {
			kpos := p.next().pos
			if err := p.expectKw("KEY"); err != nil {
				return nil, err
			}
			if err := p.notEnforced(); err != nil {
				return nil, err
			}
			if ct.PrimaryKey != nil {
				return nil, p.errAt(kpos, "a table has one PRIMARY KEY")
			}
			ct.PrimaryKey = &PrimaryKey{node: node{kpos}, Columns: []string{name}}
			c.Type.NotNull = true
		}
	}
	if p.acceptKw("COMMENT") {
		if c.Comment, _, err = p.stringLit("a comment string"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// typeNames maps the spellings of types to their canonical names.
var typeNames = map[string]string{
	"STRING": "STRING", "VARCHAR": "VARCHAR", "CHAR": "CHAR", "BOOLEAN": "BOOLEAN", "BOOL": "BOOLEAN",
	"TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT", "INTEGER": "INT", "BIGINT": "BIGINT",
	"FLOAT": "FLOAT", "REAL": "FLOAT", "DOUBLE": "DOUBLE", "DECIMAL": "DECIMAL", "DEC": "DECIMAL",
	"NUMERIC": "DECIMAL", "DATE": "DATE", "TIME": "TIME", "TIMESTAMP": "TIMESTAMP",
	"TIMESTAMP_LTZ": "TIMESTAMP_LTZ", "BYTES": "BYTES", "VARBINARY": "VARBINARY", "BINARY": "BINARY",
	"ARRAY": "ARRAY", "MAP": "MAP", "ROW": "ROW", "MULTISET": "MULTISET",
}

// KnownTypes lists the type names the parser accepts.
func KnownTypes() []string {
	var out []string
	for k := range typeNames {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (p *parser) dataType() (*Type, error) {
	t := p.peek()
	if t.kind != tIdent {
		return nil, p.unexpected("a data type")
	}
	canon, ok := typeNames[t.upper()]
	if !ok {
		msg := fmt.Sprintf("unknown data type %s", t.text)
		if n := Nearest(t.upper(), KnownTypes()); n != "" {
			msg += fmt.Sprintf("; did you mean %s?", n)
		}
		return nil, p.errAt(t.pos, "%s", msg)
	}
	p.next()
	ty := &Type{node: node{t.pos}, Name: canon}
	switch canon {
	case "DOUBLE":
		p.acceptKw("PRECISION")
	case "CHAR", "BINARY":
		if p.isKw("VARYING") {
			p.next()
			ty.Name = "VAR" + canon
		}
	case "ARRAY", "MULTISET":
		if p.acceptOp("<") {
			elem, err := p.dataType()
			if err != nil {
				return nil, err
			}
			ty.Elem = elem
			if err := p.expectOp(">"); err != nil {
				return nil, err
			}
		}
	case "MAP":
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		k, err := p.dataType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		v, err := p.dataType()
		if err != nil {
			return nil, err
		}
		ty.Key, ty.Value = k, v
		if err := p.expectOp(">"); err != nil {
			return nil, err
		}
	case "ROW":
		closeTok := ""
		switch {
		case p.acceptOp("<"):
			closeTok = ">"
		case p.acceptOp("("):
			closeTok = ")"
		default:
			return nil, p.unexpected("'<' or '(' after ROW")
		}
		for {
			fname, _, err := p.ident("a field name")
			if err != nil {
				return nil, err
			}
			ft, err := p.dataType()
			if err != nil {
				return nil, err
			}
			ty.Fields = append(ty.Fields, &RowField{Name: fname, Type: ft})
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(closeTok); err != nil {
				return nil, err
			}
			break
		}
	}
	if p.isOp("(") && canon != "ROW" {
		p.next()
		for {
			n := p.peek()
			if n.kind != tNumber {
				return nil, p.unexpected("a number")
			}
			v, err := strconv.Atoi(n.text)
			if err != nil || v < 0 {
				return nil, p.errAt(n.pos, "%s is not a valid type parameter", n.text)
			}
			p.next()
			ty.Params = append(ty.Params, v)
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			break
		}
	}
	if ty.Name == "TIMESTAMP" && p.isKw("WITH") && p.isKwAt(1, "LOCAL") {
		p.next()
		p.next()
		if err := p.expectKw("TIME", "ZONE"); err != nil {
			return nil, err
		}
		ty.Name = "TIMESTAMP_LTZ"
	} else if ty.Name == "TIMESTAMP" && p.isKw("WITHOUT") {
		p.next()
		if err := p.expectKw("TIME", "ZONE"); err != nil {
			return nil, err
		}
	}
	if p.isKw("NOT") && p.isKwAt(1, "NULL") {
		p.next()
		p.next()
		ty.NotNull = true
	} else if p.isKw("NULL") {
		p.next()
	}
	return ty, nil
}

func (p *parser) options() ([]*Option, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var opts []*Option
	seen := map[string]bool{}
	for {
		k, kpos, err := p.stringLit("a quoted option key ('key' = 'value')")
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, p.errAt(kpos, "option '%s' is given twice", k)
		}
		seen[k] = true
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, _, err := p.stringLit("a quoted option value")
		if err != nil {
			return nil, err
		}
		opts = append(opts, &Option{node: node{kpos}, Key: k, Value: v})
		if p.acceptOp(",") {
			continue
		}
		return opts, p.expectOp(")")
	}
}

func (p *parser) createView(pos Pos, temp bool) (Stmt, error) {
	v := &CreateView{node: node{pos}, Temporary: temp}
	if p.isKw("IF") {
		p.next()
		if err := p.expectKw("NOT", "EXISTS"); err != nil {
			return nil, err
		}
		v.IfNotExists = true
	}
	var err error
	if v.Name, err = p.name("a view name"); err != nil {
		return nil, err
	}
	if err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	v.Query, err = p.query()
	return v, err
}

func (p *parser) insert() (*Insert, error) {
	pos := p.next().pos // INSERT
	ins := &Insert{node: node{pos}}
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		ins.Overwrite = true
	default:
		return nil, p.unexpected("INTO")
	}
	var err error
	if ins.Table, err = p.name("a table name"); err != nil {
		return nil, err
	}
	if p.isOp("(") && !p.isKwAt(1, "SELECT") {
		if ins.Columns, err = p.columnList(); err != nil {
			return nil, err
		}
	}
	if ins.Query, err = p.query(); err != nil {
		return nil, err
	}
	if p.isKw("ON") && p.isKwAt(1, "CONFLICT") {
		p.next()
		p.next()
		if err := p.expectKw("DO"); err != nil {
			return nil, err
		}
		t := p.peek()
		switch t.upper() {
		case "DEDUPLICATE", "ERROR", "NOTHING":
			if t.kind == tIdent {
				p.next()
				ins.OnConflict = t.upper()
				break
			}
			fallthrough
		default:
			return nil, p.unexpected("DEDUPLICATE, ERROR or NOTHING")
		}
	}
	return ins, nil
}

// query is a SELECT with its UNION ALLs, or one in parentheses.
func (p *parser) query() (*Select, error) {
	var q *Select
	var err error
	if p.isOp("(") {
		p.next()
		if q, err = p.query(); err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	} else if q, err = p.selectBlock(); err != nil {
		return nil, err
	}
	for p.isKw("UNION") {
		upos := p.next().pos
		if !p.acceptKw("ALL") {
			return nil, p.errAt(upos, "only UNION ALL is supported (a streaming UNION would keep every row in state)")
		}
		var next *Select
		if p.isOp("(") {
			p.next()
			if next, err = p.query(); err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		} else if next, err = p.selectBlock(); err != nil {
			return nil, err
		}
		q.UnionAll = append(q.UnionAll, next)
	}
	return q, nil
}

func (p *parser) selectBlock() (*Select, error) {
	t := p.peek()
	if err := p.expectKw("SELECT"); err != nil {
		return nil, err
	}
	s := &Select{node: node{t.pos}}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		it, err := p.selectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, it)
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.isKw("FROM") {
		return nil, p.unexpected("',' or FROM")
	}
	p.next()
	var err error
	if s.From, err = p.fromItem(); err != nil {
		return nil, err
	}
	if s.From, err = p.joins(s.From); err != nil {
		return nil, err
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.isKw("GROUP") {
		p.next()
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if s.GroupBy, err = p.exprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("HAVING") {
		if s.Having, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if p.isKw("ORDER") || p.isKw("LIMIT") {
		return nil, p.errAt(p.peek().pos, "ORDER BY and LIMIT are not supported yet")
	}
	return s, nil
}

func (p *parser) selectItem() (*SelectItem, error) {
	t := p.peek()
	it := &SelectItem{node: node{t.pos}}
	if p.isOp("*") {
		p.next()
		it.Star = true
		return it, nil
	}
	if (t.kind == tIdent || t.kind == tQuotedIdent) && p.peekAt(1).kind == tOp && p.peekAt(1).text == "." &&
		p.peekAt(2).kind == tOp && p.peekAt(2).text == "*" {
		p.next()
		p.next()
		p.next()
		it.Star, it.Qualifier = true, t.text
		return it, nil
	}
	var err error
	if it.Expr, err = p.expr(); err != nil {
		return nil, err
	}
	if it.Alias, err = p.alias(); err != nil {
		return nil, err
	}
	return it, nil
}

// alias reads [AS] name.
func (p *parser) alias() (string, error) {
	if p.acceptKw("AS") {
		a, _, err := p.ident("an alias")
		return a, err
	}
	t := p.peek()
	if t.kind == tQuotedIdent || (t.kind == tIdent && !reserved[t.upper()]) {
		p.next()
		return t.text, nil
	}
	return "", nil
}

func (p *parser) fromItem() (From, error) {
	t := p.peek()
	switch {
	case p.isKw("TABLE") && p.peekAt(1).kind == tOp && p.peekAt(1).text == "(":
		p.next()
		p.next()
		w, err := p.windowTVF()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if w.Alias, err = p.alias(); err != nil {
			return nil, err
		}
		return w, nil
	case p.isOp("("):
		p.next()
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		a, err := p.alias()
		return &SubqueryRef{node: node{t.pos}, Query: q, Alias: a}, err
	}
	n, err := p.name("a table name")
	if err != nil {
		return nil, err
	}
	r := &TableRef{node: node{t.pos}, Name: n}
	r.Alias, err = p.alias()
	return r, err
}

// joins reads the joins after a FROM item (left): a comma and another
// item, or [INNER | LEFT [OUTER] | RIGHT [OUTER] | FULL [OUTER]] JOIN item
// ON condition; left to right.
func (p *parser) joins(left From) (From, error) {
	for {
		t := p.peek()
		kind := ""
		switch {
		case p.isOp(","):
			p.next()
			kind = ","
		case p.isKw("CROSS"):
			return nil, p.errAt(t.pos, "CROSS JOIN is not supported; join with ON and an equality of both sides' columns")
		case p.isKw("JOIN"):
			p.next()
			kind = "INNER"
		case p.isKw("INNER"):
			p.next()
			kind = "INNER"
			if err := p.expectKw("JOIN"); err != nil {
				return nil, err
			}
		case p.isKw("LEFT"), p.isKw("RIGHT"), p.isKw("FULL"):
			kind = p.next().upper()
			p.acceptKw("OUTER")
			if err := p.expectKw("JOIN"); err != nil {
				return nil, err
			}
		default:
			return left, nil
		}
		right, err := p.fromItem()
		if err != nil {
			return nil, err
		}
		j := &Join{node: node{t.pos}, Kind: kind, Left: left, Right: right}
		if kind != "," {
			if err := p.expectKw("ON"); err != nil {
				return nil, err
			}
			if j.On, err = p.expr(); err != nil {
				return nil, err
			}
		}
		left = j
	}
}

// windowTVF reads FUNC(TABLE t, DESCRIPTOR(col), args...) after TABLE(.
func (p *parser) windowTVF() (*WindowTVF, error) {
	t := p.peek()
	fn := t.upper()
	switch fn {
	case "TUMBLE", "HOP", "CUMULATE", "SESSION":
	default:
		if t.kind == tIdent {
			msg := fmt.Sprintf("unknown table function %s", t.text)
			if n := Nearest(fn, []string{"TUMBLE", "HOP", "CUMULATE", "SESSION"}); n != "" {
				msg += fmt.Sprintf("; did you mean %s?", n)
			}
			return nil, p.errAt(t.pos, "%s", msg)
		}
		return nil, p.unexpected("a window function (TUMBLE, HOP, CUMULATE, SESSION)")
	}
	p.next()
	w := &WindowTVF{node: node{t.pos}, Func: fn}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	// Named arguments (DATA => TABLE t, TIMECOL => DESCRIPTOR(c), SIZE => ...)
	// are not supported: positional only.
	if err := p.expectKw("TABLE"); err != nil {
		return nil, err
	}
	var err error
	if w.Table, err = p.name("a table name"); err != nil {
		return nil, err
	}
	if p.isKw("PARTITION") {
		ppos := p.next().pos
		if fn != "SESSION" {
			return nil, p.errAt(ppos, "only SESSION windows take PARTITION BY")
		}
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		paren := p.acceptOp("(")
		for {
			c, cpos, err := p.ident("a partition column")
			if err != nil {
				return nil, err
			}
			w.PartitionBy, w.PartitionByPos = append(w.PartitionBy, c), append(w.PartitionByPos, cpos)
			if !p.acceptOp(",") {
				break
			}
			if !paren && p.isKw("DESCRIPTOR") { // TABLE t PARTITION BY a, DESCRIPTOR(...)
				p.i--
				break
			}
		}
		if paren {
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
	}
	if err := p.expectOp(","); err != nil {
		return nil, err
	}
	if err := p.expectKw("DESCRIPTOR"); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if w.TimeCol, w.TimeColPos, err = p.ident("the time attribute column"); err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	for p.acceptOp(",") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		w.Args = append(w.Args, e)
	}
	want := map[string]int{"TUMBLE": 1, "HOP": 2, "CUMULATE": 2, "SESSION": 1}[fn]
	if len(w.Args) != want && !(len(w.Args) == want+1 && fn != "SESSION") {
		return nil, p.errAt(t.pos, "%s takes a table, a descriptor and %d interval(s)%s, not %d", fn, want,
			map[bool]string{true: " (and an optional offset)", false: ""}[fn != "SESSION"], len(w.Args))
	}
	return w, p.expectOp(")")
}

// Expressions, by precedence from loosest: OR, AND, NOT, comparisons (=
// <> < <= > >= IS BETWEEN IN LIKE), + - ||, * / %, unary -.

func (p *parser) expr() (Expr, error) { return p.orExpr() }

func (p *parser) orExpr() (Expr, error) {
	l, err := p.andExpr()
	if err != nil {
		return nil, err
	}
	for p.isKw("OR") {
		pos := p.next().pos
		r, err := p.andExpr()
		if err != nil {
			return nil, err
		}
		l = &Binary{node: node{pos}, Op: "OR", L: l, R: r}
	}
	return l, nil
}

func (p *parser) andExpr() (Expr, error) {
	l, err := p.notExpr()
	if err != nil {
		return nil, err
	}
	for p.isKw("AND") {
		pos := p.next().pos
		r, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		l = &Binary{node: node{pos}, Op: "AND", L: l, R: r}
	}
	return l, nil
}

func (p *parser) notExpr() (Expr, error) {
	if p.isKw("NOT") {
		pos := p.next().pos
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &Unary{node: node{pos}, Op: "NOT", X: x}, nil
	}
	return p.cmpExpr()
}

func (p *parser) cmpExpr() (Expr, error) {
	l, err := p.addExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "=" || t.text == "<>" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
			p.next()
			r, err := p.addExpr()
			if err != nil {
				return nil, err
			}
			op := t.text
			if op == "!=" {
				op = "<>"
			}
			l = &Binary{node: node{t.pos}, Op: op, L: l, R: r}
		case p.isKw("IS"):
			p.next()
			is := &IsNull{node: node{t.pos}, X: l}
			is.Not = p.acceptKw("NOT")
			switch {
			case p.acceptKw("NULL"):
				is.Test = "NULL"
			case p.acceptKw("TRUE"):
				is.Test = "TRUE"
			case p.acceptKw("FALSE"):
				is.Test = "FALSE"
			default:
				return nil, p.unexpected("NULL, TRUE or FALSE")
			}
			l = is
		case p.isKw("NOT") && (p.isKwAt(1, "BETWEEN") || p.isKwAt(1, "IN") || p.isKwAt(1, "LIKE")):
			p.next()
			if l, err = p.cmpTail(l, true); err != nil {
				return nil, err
			}
		case p.isKw("BETWEEN") || p.isKw("IN") || p.isKw("LIKE"):
			if l, err = p.cmpTail(l, false); err != nil {
				return nil, err
			}
		default:
			return l, nil
		}
	}
}

func (p *parser) cmpTail(l Expr, not bool) (Expr, error) {
	t := p.next()
	switch t.upper() {
	case "BETWEEN":
		p.acceptKw("ASYMMETRIC")
		lo, err := p.addExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.addExpr()
		if err != nil {
			return nil, err
		}
		return &Between{node: node{t.pos}, X: l, Lo: lo, Hi: hi, Not: not}, nil
	case "IN":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		in := &In{node: node{t.pos}, X: l, Not: not}
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			in.List = append(in.List, e)
			if !p.acceptOp(",") {
				break
			}
		}
		return in, p.expectOp(")")
	}
	r, err := p.addExpr()
	if err != nil {
		return nil, err
	}
	var e Expr = &Binary{node: node{t.pos}, Op: "LIKE", L: l, R: r}
	if not {
		e = &Unary{node: node{t.pos}, Op: "NOT", X: e}
	}
	return e, nil
}

func (p *parser) addExpr() (Expr, error) {
	l, err := p.mulExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || (t.text != "+" && t.text != "-" && t.text != "||") {
			return l, nil
		}
		p.next()
		r, err := p.mulExpr()
		if err != nil {
			return nil, err
		}
		l = &Binary{node: node{t.pos}, Op: t.text, L: l, R: r}
	}
}

func (p *parser) mulExpr() (Expr, error) {
	l, err := p.unaryExpr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || (t.text != "*" && t.text != "/" && t.text != "%") {
			return l, nil
		}
		p.next()
		r, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		l = &Binary{node: node{t.pos}, Op: t.text, L: l, R: r}
	}
}

func (p *parser) unaryExpr() (Expr, error) {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "+") {
		p.next()
		x, err := p.unaryExpr()
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		if lit, ok := x.(*Literal); ok && lit.Kind == LitNumber && !strings.HasPrefix(lit.Text, "-") {
			return &Literal{node: node{t.pos}, Kind: LitNumber, Text: "-" + lit.Text}, nil
		}
		return &Unary{node: node{t.pos}, Op: "-", X: x}, nil
	}
	return p.primary()
}

func (p *parser) primary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.next()
		return &Literal{node: node{t.pos}, Kind: LitNumber, Text: t.text}, nil
	case tString:
		p.next()
		return &Literal{node: node{t.pos}, Kind: LitString, Text: t.text}, nil
	case tQuotedIdent:
		return p.identExpr()
	case tOp:
		if t.text == "(" {
			p.next()
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			return e, p.expectOp(")")
		}
		return nil, p.unexpected("an expression")
	case tEOF:
		return nil, p.unexpected("an expression")
	}
	switch t.upper() {
	case "NULL":
		p.next()
		return &Literal{node: node{t.pos}, Kind: LitNull, Text: "NULL"}, nil
	case "TRUE", "FALSE":
		p.next()
		return &Literal{node: node{t.pos}, Kind: LitBool, Text: t.upper()}, nil
	case "INTERVAL":
		return p.interval()
	case "CAST", "TRY_CAST":
		p.next()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AS"); err != nil {
			return nil, err
		}
		ty, err := p.dataType()
		if err != nil {
			return nil, err
		}
		return &Cast{node: node{t.pos}, X: x, To: ty, Try: t.upper() == "TRY_CAST"}, p.expectOp(")")
	case "CASE":
		return p.caseExpr()
	case "TIMESTAMP", "DATE", "TIME", "TIMESTAMP_LTZ":
		if p.peekAt(1).kind == tString {
			p.next()
			v := p.next()
			return &TypedLiteral{node: node{t.pos}, Type: t.upper(), Value: v.text}, nil
		}
	}
	if reserved[t.upper()] {
		return nil, p.unexpected("an expression")
	}
	if p.peekAt(1).kind == tOp && p.peekAt(1).text == "(" {
		return p.call()
	}
	return p.identExpr()
}

func (p *parser) identExpr() (Expr, error) {
	t := p.peek()
	s, _, err := p.ident("a column name")
	if err != nil {
		return nil, err
	}
	id := &Ident{node: node{t.pos}, Parts: []string{s}}
	for p.isOp(".") {
		p.next()
		s, _, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		id.Parts = append(id.Parts, s)
	}
	return id, nil
}

func (p *parser) call() (Expr, error) {
	t := p.next()
	p.next() // (
	c := &Call{node: node{t.pos}, Name: t.upper()}
	if p.acceptOp(")") {
		return p.over(c)
	}
	if p.isOp("*") {
		p.next()
		c.Star = true
		return c, p.expectOp(")")
	}
	if p.acceptKw("DISTINCT") {
		c.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Args = append(c.Args, e)
		if !p.acceptOp(",") {
			break
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return p.over(c)
}

// over reads the OVER (...) of a window function call, if there is one.
func (p *parser) over(c *Call) (Expr, error) {
	if !p.isKw("OVER") {
		return c, nil
	}
	pos := p.next().pos
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	o := &Over{node: node{pos}}
	if p.acceptKw("PARTITION") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		var err error
		if o.PartitionBy, err = p.exprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		for {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			it := &OrderItem{X: e}
			if p.acceptKw("DESC") {
				it.Desc = true
			} else {
				p.acceptKw("ASC")
			}
			o.OrderBy = append(o.OrderBy, it)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.isKw("ROWS") || p.isKw("RANGE") {
		return nil, p.errAt(p.peek().pos, "OVER windows with a frame (ROWS/RANGE) are not supported yet")
	}
	c.Over = o
	return c, p.expectOp(")")
}

// intervalUnits are the units of INTERVAL literals.
var intervalUnits = map[string]string{
	"SECOND": "SECOND", "SECONDS": "SECOND", "MINUTE": "MINUTE", "MINUTES": "MINUTE",
	"HOUR": "HOUR", "HOURS": "HOUR", "DAY": "DAY", "DAYS": "DAY", "MONTH": "MONTH", "MONTHS": "MONTH",
	"YEAR": "YEAR", "YEARS": "YEAR", "MILLISECOND": "MILLISECOND", "MILLISECONDS": "MILLISECOND",
}

func (p *parser) interval() (Expr, error) {
	t := p.next() // INTERVAL
	iv := &Interval{node: node{t.pos}}
	v := p.peek()
	switch {
	case v.kind == tString:
		iv.Value = v.text
	case v.kind == tNumber:
		iv.Value = v.text // INTERVAL 1 MINUTE, as Flink also accepts
	default:
		return nil, p.unexpected("the interval's value in quotes (INTERVAL '1' MINUTE)")
	}
	p.next()
	u := p.peek()
	unit, ok := intervalUnits[u.upper()]
	if u.kind != tIdent || !ok {
		return nil, p.unexpected("an interval unit (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR)")
	}
	p.next()
	iv.Unit = unit
	if p.isOp("(") { // SECOND(3): precision, ignored
		p.next()
		for !p.isOp(")") && p.peek().kind != tEOF {
			p.next()
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("TO") {
		u := p.peek()
		to, ok := intervalUnits[u.upper()]
		if u.kind != tIdent || !ok {
			return nil, p.unexpected("an interval unit")
		}
		p.next()
		iv.To = to
	}
	return iv, nil
}

func (p *parser) caseExpr() (Expr, error) {
	t := p.next() // CASE
	c := &Case{node: node{t.pos}}
	var err error
	if !p.isKw("WHEN") {
		if c.Operand, err = p.expr(); err != nil {
			return nil, err
		}
	}
	for p.acceptKw("WHEN") {
		w := &When{}
		if w.Cond, err = p.expr(); err != nil {
			return nil, err
		}
		if err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		if w.Then, err = p.expr(); err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		return nil, p.unexpected("WHEN")
	}
	if p.acceptKw("ELSE") {
		if c.Else, err = p.expr(); err != nil {
			return nil, err
		}
	}
	return c, p.expectKw("END")
}

// exprList parses one or more comma-separated expressions (GROUP BY,
// PARTITION BY).
func (p *parser) exprList() ([]Expr, error) {
	var es []Expr
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		es = append(es, e)
		if !p.acceptOp(",") {
			return es, nil
		}
	}
}
