package planner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice/sluice/internal/sql/types"
)

// Expr is a typed, resolved expression over the fields of its input row.
// Eval computes it for one row (NULL is nil).
type Expr interface {
	Type() types.Type
	Eval(row []any) (any, error)
	String() string
}

// ColRef is the value of an input field.
type ColRef struct {
	Index int
	Name  string
	T     types.Type
}

func (c *ColRef) Type() types.Type            { return c.T }
func (c *ColRef) Eval(row []any) (any, error) { return row[c.Index], nil }
func (c *ColRef) String() string              { return c.Name }

// Const is a literal value.
type Const struct {
	V    any
	T    types.Type
	Text string
}

func (c *Const) Type() types.Type        { return c.T }
func (c *Const) Eval([]any) (any, error) { return c.V, nil }
func (c *Const) String() string          { return c.Text }

// CastExpr is CAST(X AS T) (Try: TRY_CAST, NULL on failure).
type CastExpr struct {
	X   Expr
	T   types.Type
	Try bool
}

func (c *CastExpr) Type() types.Type { return c.T }
func (c *CastExpr) Eval(row []any) (any, error) {
	v, err := c.X.Eval(row)
	if err != nil {
		return nil, err
	}
	out, err := types.Cast(v, c.X.Type(), c.T)
	if err != nil && c.Try {
		return nil, nil
	}
	return out, err
}
func (c *CastExpr) String() string {
	if c.Try {
		return fmt.Sprintf("TRY_CAST(%s AS %s)", c.X, c.T.Plain().Nullable())
	}
	return fmt.Sprintf("CAST(%s AS %s)", c.X, c.T.Plain().Nullable())
}

// Arith is + - * / % over numbers of one type T (the operands are cast to
// it first), and timestamp ± interval.
type Arith struct {
	Op   string
	L, R Expr
	T    types.Type
}

func (a *Arith) Type() types.Type { return a.T }
func (a *Arith) String() string   { return fmt.Sprintf("%s(%s, %s)", a.Op, a.L, a.R) }
func (a *Arith) Eval(row []any) (any, error) {
	l, err := a.L.Eval(row)
	if err != nil || l == nil {
		return nil, err
	}
	r, err := a.R.Eval(row)
	if err != nil || r == nil {
		return nil, err
	}
	lt, rt := a.L.Type(), a.R.Type()
	switch {
	case a.T.IsTimestamp() || a.T.Kind == types.Date:
		// timestamp ± day-time interval (milliseconds).
		ts, iv := l.(int64), r.(int64)
		if lt.IsInterval() {
			ts, iv = iv, ts
		}
		if a.T.Kind == types.Date {
			iv /= 86400000
		}
		if a.Op == "-" {
			iv = -iv
		}
		return types.AddInt64(ts, iv)
	case a.T.Kind == types.Double || a.T.Kind == types.Float:
		x, _ := types.Cast(l, lt, types.DOUBLE)
		y, _ := types.Cast(r, rt, types.DOUBLE)
		fx, fy := x.(float64), y.(float64)
		switch a.Op {
		case "+":
			return fx + fy, nil
		case "-":
			return fx - fy, nil
		case "*":
			return fx * fy, nil
		case "/":
			return fx / fy, nil
		}
		return nil, fmt.Errorf("sql: %s on DOUBLE", a.Op)
	case a.T.IsInteger():
		x, y := l.(int64), r.(int64)
		var v int64
		switch a.Op {
		case "+":
			v = x + y
		case "-":
			v = x - y
		case "*":
			v = x * y
		case "/", "%":
			if y == 0 {
				return nil, fmt.Errorf("sql: division by zero in %s", a)
			}
			if a.Op == "/" {
				v = x / y
			} else {
				v = x % y
			}
		}
		return types.Cast(v, types.BIGINT, a.T) // wraps as Java's int arithmetic
	case a.T.Kind == types.Decimal:
		dl, dr := types.AsDecimal(lt), types.AsDecimal(rt)
		x, y := l.(int64), r.(int64)
		var v int64
		switch a.Op {
		case "+", "-":
			xs, err := types.Rescale(x, dl.Scale, a.T.Scale)
			if err != nil {
				return nil, err
			}
			ys, err := types.Rescale(y, dr.Scale, a.T.Scale)
			if err != nil {
				return nil, err
			}
			if a.Op == "-" {
				ys = -ys
			}
			if v, err = types.AddInt64(xs, ys); err != nil {
				return nil, err
			}
		case "*":
			if v, err = types.MulDecimal(x, dl.Scale, y, dr.Scale, a.T.Scale); err != nil {
				return nil, err
			}
		case "/":
			if v, err = types.DivDecimal(x, dl.Scale, y, dr.Scale, a.T.Scale); err != nil {
				return nil, err
			}
		case "%":
			xs, err1 := types.Rescale(x, dl.Scale, a.T.Scale)
			ys, err2 := types.Rescale(y, dr.Scale, a.T.Scale)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("%w in %s", types.ErrOverflow, a)
			}
			if ys == 0 {
				return nil, fmt.Errorf("sql: division by zero in %s", a)
			}
			v = xs % ys
		}
		if !types.FitsPrecision(v, a.T.Precision) {
			return nil, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("sql: %s over %s", a.Op, a.T)
}

// Neg is -X.
type Neg struct{ X Expr }

func (n *Neg) Type() types.Type { return n.X.Type() }
func (n *Neg) String() string   { return fmt.Sprintf("-(%s)", n.X) }
func (n *Neg) Eval(row []any) (any, error) {
	v, err := n.X.Eval(row)
	if err != nil || v == nil {
		return nil, err
	}
	if f, ok := v.(float64); ok {
		return -f, nil
	}
	return -v.(int64), nil
}

// Compare is = <> < <= > >= over operands of one type (cast to T).
type Compare struct {
	Op   string
	L, R Expr
	// T is the type both sides are compared in.
	T types.Type
}

func (c *Compare) Type() types.Type {
	return types.Type{Kind: types.Boolean, NotNull: c.L.Type().NotNull && c.R.Type().NotNull}
}
func (c *Compare) String() string { return fmt.Sprintf("%s(%s, %s)", c.Op, c.L, c.R) }
func (c *Compare) Eval(row []any) (any, error) {
	l, err := c.L.Eval(row)
	if err != nil || l == nil {
		return nil, err
	}
	r, err := c.R.Eval(row)
	if err != nil || r == nil {
		return nil, err
	}
	if l, err = types.Cast(l, c.L.Type(), c.T); err != nil {
		return nil, err
	}
	if r, err = types.Cast(r, c.R.Type(), c.T); err != nil {
		return nil, err
	}
	d := types.Compare(l, r, c.T)
	switch c.Op {
	case "=":
		return d == 0, nil
	case "<>":
		return d != 0, nil
	case "<":
		return d < 0, nil
	case "<=":
		return d <= 0, nil
	case ">":
		return d > 0, nil
	}
	return d >= 0, nil
}

// Logic is AND / OR with SQL's three-valued logic.
type Logic struct {
	Op   string
	Args []Expr
}

func (l *Logic) Type() types.Type { return types.BOOLEAN }
func (l *Logic) String() string {
	var s []string
	for _, a := range l.Args {
		s = append(s, a.String())
	}
	return fmt.Sprintf("%s(%s)", strings.ToUpper(l.Op), strings.Join(s, ", "))
}
func (l *Logic) Eval(row []any) (any, error) {
	and := l.Op == "AND"
	sawNull := false
	for _, a := range l.Args {
		v, err := a.Eval(row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			sawNull = true
			continue
		}
		if v.(bool) != and {
			return !and, nil
		}
	}
	if sawNull {
		return nil, nil
	}
	return and, nil
}

// Not is NOT X.
type Not struct{ X Expr }

func (n *Not) Type() types.Type { return types.BOOLEAN }
func (n *Not) String() string   { return fmt.Sprintf("NOT(%s)", n.X) }
func (n *Not) Eval(row []any) (any, error) {
	v, err := n.X.Eval(row)
	if err != nil || v == nil {
		return nil, err
	}
	return !v.(bool), nil
}

// IsTest is X IS [NOT] NULL / TRUE / FALSE.
type IsTest struct {
	X    Expr
	Test string
	Not  bool
}

func (t *IsTest) Type() types.Type { return types.Type{Kind: types.Boolean, NotNull: true} }
func (t *IsTest) String() string {
	op := "IS " + t.Test
	if t.Not {
		op = "IS NOT " + t.Test
	}
	return fmt.Sprintf("%s(%s)", op, t.X)
}
func (t *IsTest) Eval(row []any) (any, error) {
	v, err := t.X.Eval(row)
	if err != nil {
		return nil, err
	}
	var r bool
	switch t.Test {
	case "NULL":
		r = v == nil
	case "TRUE":
		r = v != nil && v.(bool)
	case "FALSE":
		r = v != nil && !v.(bool)
	}
	return r != t.Not, nil
}

// CaseExpr is CASE WHEN ... THEN ... ELSE ... END (the simple form is
// rewritten to comparisons); results are cast to T.
type CaseExpr struct {
	Conds, Thens []Expr
	Else         Expr
	T            types.Type
}

func (c *CaseExpr) Type() types.Type { return c.T }
func (c *CaseExpr) String() string {
	var s []string
	for i := range c.Conds {
		s = append(s, c.Conds[i].String(), c.Thens[i].String())
	}
	if c.Else != nil {
		s = append(s, c.Else.String())
	}
	return "CASE(" + strings.Join(s, ", ") + ")"
}
func (c *CaseExpr) Eval(row []any) (any, error) {
	for i, cond := range c.Conds {
		v, err := cond.Eval(row)
		if err != nil {
			return nil, err
		}
		if v != nil && v.(bool) {
			r, err := c.Thens[i].Eval(row)
			if err != nil {
				return nil, err
			}
			return types.Cast(r, c.Thens[i].Type(), c.T)
		}
	}
	if c.Else == nil {
		return nil, nil
	}
	r, err := c.Else.Eval(row)
	if err != nil {
		return nil, err
	}
	return types.Cast(r, c.Else.Type(), c.T)
}

// Like is X LIKE pattern (% and _), the pattern a constant.
type Like struct {
	X       Expr
	Pattern string
	re      *regexp.Regexp
}

func newLike(x Expr, pattern string) *Like {
	var b strings.Builder
	b.WriteString("(?s)^")
	for _, r := range pattern {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return &Like{X: x, Pattern: pattern, re: regexp.MustCompile(b.String())}
}

func (l *Like) Type() types.Type { return types.BOOLEAN }
func (l *Like) String() string   { return fmt.Sprintf("LIKE(%s, '%s')", l.X, l.Pattern) }
func (l *Like) Eval(row []any) (any, error) {
	v, err := l.X.Eval(row)
	if err != nil || v == nil {
		return nil, err
	}
	return l.re.MatchString(v.(string)), nil
}

// Func is a scalar function call.
type Func struct {
	Name string
	Args []Expr
	T    types.Type
	fn   func(args []any) (any, error)
	// nullSafe functions see NULL arguments (COALESCE); the others return
	// NULL for any NULL argument.
	nullSafe bool
}

func (f *Func) Type() types.Type { return f.T }
func (f *Func) String() string {
	var s []string
	for _, a := range f.Args {
		s = append(s, a.String())
	}
	return f.Name + "(" + strings.Join(s, ", ") + ")"
}
func (f *Func) Eval(row []any) (any, error) {
	args := make([]any, len(f.Args))
	for i, a := range f.Args {
		v, err := a.Eval(row)
		if err != nil {
			return nil, err
		}
		if v == nil && !f.nullSafe {
			return nil, nil
		}
		args[i] = v
	}
	return f.fn(args)
}
