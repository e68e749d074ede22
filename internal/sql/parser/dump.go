package parser

import (
	"fmt"
	"strconv"
	"strings"
)

// Dump renders a statement as an S-expression: the parse tree with every
// clause and operator explicit, for tests and debugging.
func Dump(s Stmt) string {
	var b strings.Builder
	dumpStmt(&b, s)
	return b.String()
}

// DumpExpr renders an expression as an S-expression.
func DumpExpr(e Expr) string {
	var b strings.Builder
	dumpExpr(&b, e)
	return b.String()
}

func dumpStmt(b *strings.Builder, s Stmt) {
	switch s := s.(type) {
	case *CreateTable:
		fmt.Fprintf(b, "(create-table %s", dumpName(s.Name))
		if s.Temporary {
			b.WriteString(" temporary")
		}
		if s.IfNotExists {
			b.WriteString(" if-not-exists")
		}
		for _, c := range s.Columns {
			fmt.Fprintf(b, "\n  (column %s", quoteIdent(c.Name))
			if c.Type != nil {
				b.WriteString(" " + DumpType(c.Type))
			}
			if c.Computed != nil {
				b.WriteString(" (as ")
				dumpExpr(b, c.Computed)
				b.WriteString(")")
			}
			if m := c.Metadata; m != nil {
				b.WriteString(" (metadata")
				if m.Key != "" {
					fmt.Fprintf(b, " from %s", quoteString(m.Key))
				}
				if m.Virtual {
					b.WriteString(" virtual")
				}
				b.WriteString(")")
			}
			if c.Comment != "" {
				fmt.Fprintf(b, " (comment %s)", quoteString(c.Comment))
			}
			b.WriteString(")")
		}
		if w := s.Watermark; w != nil {
			fmt.Fprintf(b, "\n  (watermark %s ", quoteIdent(w.Column))
			dumpExpr(b, w.Expr)
			b.WriteString(")")
		}
		if k := s.PrimaryKey; k != nil {
			fmt.Fprintf(b, "\n  (primary-key %s)", identList(k.Columns))
		}
		if k := s.PartitionedBy; k != nil {
			fmt.Fprintf(b, "\n  (partitioned-by %s)", identList(k.Columns))
		}
		if len(s.Options) > 0 {
			b.WriteString("\n  (with")
			for _, o := range s.Options {
				fmt.Fprintf(b, "\n    %s=%s", quoteString(o.Key), quoteString(o.Value))
			}
			b.WriteString(")")
		}
		b.WriteString(")")
	case *CreateView:
		fmt.Fprintf(b, "(create-view %s", dumpName(s.Name))
		if s.Temporary {
			b.WriteString(" temporary")
		}
		if s.IfNotExists {
			b.WriteString(" if-not-exists")
		}
		b.WriteString("\n  ")
		dumpSelect(b, s.Query, "  ")
		b.WriteString(")")
	case *Drop:
		fmt.Fprintf(b, "(drop %s %s", strings.ToLower(s.What), dumpName(s.Name))
		if s.IfExists {
			b.WriteString(" if-exists")
		}
		b.WriteString(")")
	case *Set:
		if s.Key == "" {
			b.WriteString("(set)")
		} else {
			fmt.Fprintf(b, "(set %s %s)", quoteString(s.Key), quoteString(s.Value))
		}
	case *Reset:
		fmt.Fprintf(b, "(reset %s)", quoteString(s.Key))
	case *Insert:
		dumpInsert(b, s, "")
	case *Explain:
		b.WriteString("(explain\n  ")
		var inner strings.Builder
		dumpStmt(&inner, s.Stmt)
		b.WriteString(strings.ReplaceAll(inner.String(), "\n", "\n  "))
		b.WriteString(")")
	case *ShowTables:
		b.WriteString("(show-tables)")
	case *Describe:
		fmt.Fprintf(b, "(describe %s)", dumpName(s.Name))
	case *StatementSet:
		b.WriteString("(statement-set")
		for _, ins := range s.Inserts {
			b.WriteString("\n  ")
			dumpInsert(b, ins, "  ")
		}
		b.WriteString(")")
	case *QueryStmt:
		dumpSelect(b, s.Query, "")
	default:
		fmt.Fprintf(b, "(? %T)", s)
	}
}

func dumpInsert(b *strings.Builder, s *Insert, indent string) {
	verb := "insert"
	if s.Overwrite {
		verb = "insert-overwrite"
	}
	fmt.Fprintf(b, "(%s %s", verb, dumpName(s.Table))
	if len(s.Columns) > 0 {
		b.WriteString(" " + identList(s.Columns))
	}
	if s.OnConflict != "" {
		fmt.Fprintf(b, " (on-conflict %s)", strings.ToLower(s.OnConflict))
	}
	b.WriteString("\n" + indent + "  ")
	dumpSelect(b, s.Query, indent+"  ")
	b.WriteString(")")
}

func dumpSelect(b *strings.Builder, s *Select, indent string) {
	b.WriteString("(select")
	if s.Distinct {
		b.WriteString(" distinct")
	}
	nl := "\n" + indent + "  "
	for _, it := range s.Items {
		b.WriteString(nl)
		switch {
		case it.Star && it.Qualifier != "":
			fmt.Fprintf(b, "%s.*", quoteIdent(it.Qualifier))
		case it.Star:
			b.WriteString("*")
		default:
			dumpExpr(b, it.Expr)
			if it.Alias != "" {
				fmt.Fprintf(b, " (as %s)", quoteIdent(it.Alias))
			}
		}
	}
	b.WriteString(nl + "(from ")
	dumpFrom(b, s.From, indent, nl)
	b.WriteString(")")
	if s.Where != nil {
		b.WriteString(nl + "(where ")
		dumpExpr(b, s.Where)
		b.WriteString(")")
	}
	if len(s.GroupBy) > 0 {
		b.WriteString(nl + "(group-by")
		for _, g := range s.GroupBy {
			b.WriteString(" ")
			dumpExpr(b, g)
		}
		b.WriteString(")")
	}
	if s.Having != nil {
		b.WriteString(nl + "(having ")
		dumpExpr(b, s.Having)
		b.WriteString(")")
	}
	for _, u := range s.UnionAll {
		b.WriteString(nl + "(union-all ")
		dumpSelect(b, u, indent+"  ")
		b.WriteString(")")
	}
	b.WriteString(")")
}

func dumpExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Ident:
		for i, p := range e.Parts {
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(quoteIdent(p))
		}
	case *Literal:
		switch e.Kind {
		case LitString:
			b.WriteString(quoteString(e.Text))
		default:
			b.WriteString(e.Text)
		}
	case *Interval:
		fmt.Fprintf(b, "(interval %s %s", quoteString(e.Value), e.Unit)
		if e.To != "" {
			b.WriteString(" to " + e.To)
		}
		b.WriteString(")")
	case *TypedLiteral:
		fmt.Fprintf(b, "(%s %s)", strings.ToLower(e.Type), quoteString(e.Value))
	case *Binary:
		fmt.Fprintf(b, "(%s ", strings.ToLower(e.Op))
		dumpExpr(b, e.L)
		b.WriteString(" ")
		dumpExpr(b, e.R)
		b.WriteString(")")
	case *Unary:
		fmt.Fprintf(b, "(%s ", strings.ToLower(e.Op))
		dumpExpr(b, e.X)
		b.WriteString(")")
	case *IsNull:
		op := "is-" + strings.ToLower(e.Test)
		if e.Not {
			op = "is-not-" + strings.ToLower(e.Test)
		}
		fmt.Fprintf(b, "(%s ", op)
		dumpExpr(b, e.X)
		b.WriteString(")")
	case *Between:
		op := "between"
		if e.Not {
			op = "not-between"
		}
		fmt.Fprintf(b, "(%s ", op)
		dumpExpr(b, e.X)
		b.WriteString(" ")
		dumpExpr(b, e.Lo)
		b.WriteString(" ")
		dumpExpr(b, e.Hi)
		b.WriteString(")")
	case *In:
		op := "in"
		if e.Not {
			op = "not-in"
		}
		fmt.Fprintf(b, "(%s ", op)
		dumpExpr(b, e.X)
		for _, x := range e.List {
			b.WriteString(" ")
			dumpExpr(b, x)
		}
		b.WriteString(")")
	case *Call:
		fmt.Fprintf(b, "(call %s", e.Name)
		if e.Distinct {
			b.WriteString(" distinct")
		}
		if e.Star {
			b.WriteString(" *")
		}
		for _, a := range e.Args {
			b.WriteString(" ")
			dumpExpr(b, a)
		}
		if o := e.Over; o != nil {
			b.WriteString(" (over")
			if len(o.PartitionBy) > 0 {
				b.WriteString(" (partition-by")
				for _, x := range o.PartitionBy {
					b.WriteString(" ")
					dumpExpr(b, x)
				}
				b.WriteString(")")
			}
			if len(o.OrderBy) > 0 {
				b.WriteString(" (order-by")
				for _, it := range o.OrderBy {
					b.WriteString(" ")
					dumpExpr(b, it.X)
					if it.Desc {
						b.WriteString(" desc")
					} else {
						b.WriteString(" asc")
					}
				}
				b.WriteString(")")
			}
			b.WriteString(")")
		}
		b.WriteString(")")
	case *Cast:
		op := "cast"
		if e.Try {
			op = "try-cast"
		}
		fmt.Fprintf(b, "(%s ", op)
		dumpExpr(b, e.X)
		b.WriteString(" " + DumpType(e.To) + ")")
	case *Case:
		b.WriteString("(case")
		if e.Operand != nil {
			b.WriteString(" ")
			dumpExpr(b, e.Operand)
		}
		for _, w := range e.Whens {
			b.WriteString(" (when ")
			dumpExpr(b, w.Cond)
			b.WriteString(" ")
			dumpExpr(b, w.Then)
			b.WriteString(")")
		}
		if e.Else != nil {
			b.WriteString(" (else ")
			dumpExpr(b, e.Else)
			b.WriteString(")")
		}
		b.WriteString(")")
	default:
		fmt.Fprintf(b, "(? %T)", e)
	}
}

// DumpType renders a type as Flink prints it.
func DumpType(t *Type) string {
	var s string
	switch t.Name {
	case "ARRAY", "MULTISET":
		s = t.Name
		if t.Elem != nil {
			s += "<" + DumpType(t.Elem) + ">"
		}
	case "MAP":
		s = "MAP<" + DumpType(t.Key) + ", " + DumpType(t.Value) + ">"
	case "ROW":
		var fs []string
		for _, f := range t.Fields {
			fs = append(fs, quoteIdent(f.Name)+" "+DumpType(f.Type))
		}
		s = "ROW<" + strings.Join(fs, ", ") + ">"
	default:
		s = t.Name
		if len(t.Params) > 0 {
			var ps []string
			for _, p := range t.Params {
				ps = append(ps, strconv.Itoa(p))
			}
			s += "(" + strings.Join(ps, ", ") + ")"
		}
	}
	if t.NotNull {
		s += " NOT NULL"
	}
	return s
}

func dumpName(n Name) string {
	var ps []string
	for _, p := range n.Parts {
		ps = append(ps, quoteIdent(p))
	}
	return strings.Join(ps, ".")
}

func identList(cols []string) string {
	var ps []string
	for _, c := range cols {
		ps = append(ps, quoteIdent(c))
	}
	return "(" + strings.Join(ps, " ") + ")"
}

func quoteIdent(s string) string  { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func dumpFrom(b *strings.Builder, from From, indent, nl string) {
	switch f := from.(type) {
	case *TableRef:
		b.WriteString(dumpName(f.Name))
		if f.Alias != "" {
			fmt.Fprintf(b, " (as %s)", quoteIdent(f.Alias))
		}
	case *WindowTVF:
		fmt.Fprintf(b, "(%s %s", strings.ToLower(f.Func), dumpName(f.Table))
		if len(f.PartitionBy) > 0 {
			b.WriteString(" (partition-by " + identList(f.PartitionBy) + ")")
		}
		fmt.Fprintf(b, " (descriptor %s)", quoteIdent(f.TimeCol))
		for _, a := range f.Args {
			b.WriteString(" ")
			dumpExpr(b, a)
		}
		b.WriteString(")")
		if f.Alias != "" {
			fmt.Fprintf(b, " (as %s)", quoteIdent(f.Alias))
		}
	case *SubqueryRef:
		dumpSelect(b, f.Query, indent+"  ")
		if f.Alias != "" {
			fmt.Fprintf(b, " (as %s)", quoteIdent(f.Alias))
		}
	case *Join:
		fmt.Fprintf(b, "(join %s ", strings.ToLower(f.Kind))
		dumpFrom(b, f.Left, indent, nl)
		b.WriteString(" ")
		dumpFrom(b, f.Right, indent, nl)
		if f.On != nil {
			b.WriteString(" (on ")
			dumpExpr(b, f.On)
			b.WriteString(")")
		}
		b.WriteString(")")
	}
}
