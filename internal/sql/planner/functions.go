package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/sql/parser"
	"github.com/sluice/sluice/internal/sql/types"
)

// scalarNames are the scalar functions (for suggestions).
var scalarNames = []string{"UPPER", "LOWER", "TRIM", "CHAR_LENGTH", "CHARACTER_LENGTH", "CONCAT", "COALESCE",
	"ABS", "MOD", "IF", "TO_TIMESTAMP_LTZ", "PROCTIME"}

func concatFunc(args []Expr) *Func {
	nn := true
	for _, a := range args {
		nn = nn && a.Type().NotNull
	}
	return &Func{Name: "CONCAT", Args: args, T: types.Type{Kind: types.String, NotNull: nn}, fn: func(vs []any) (any, error) {
		var b strings.Builder
		for _, v := range vs {
			b.WriteString(v.(string))
		}
		return b.String(), nil
	}}
}

func (p *session) scalarCall(c *parser.Call, args []Expr) (Expr, error) {
	arity := func(n int) error {
		if len(args) != n {
			return p.errAt(c.Position(), ErrInvalid, "%s takes %d argument(s), not %d", c.Name, n, len(args))
		}
		return nil
	}
	wantString := func(i int) error {
		if k := args[i].Type().Kind; k != types.String && k != types.Null {
			return p.errAt(c.Args[i].Position(), ErrInvalid, "%s needs a STRING argument, not %s", c.Name, args[i].Type())
		}
		return nil
	}
	str := func(fn func(string) any, t types.Type) (Expr, error) {
		if err := arity(1); err != nil {
			return nil, err
		}
		if err := wantString(0); err != nil {
			return nil, err
		}
		t.NotNull = args[0].Type().NotNull
		return &Func{Name: c.Name, Args: args, T: t, fn: func(vs []any) (any, error) { return fn(vs[0].(string)), nil }}, nil
	}
	switch c.Name {
	case "PROCTIME":
		return nil, p.errAt(c.Position(), ErrInvalid, "PROCTIME() declares a processing-time attribute: use it as a computed column of a table (pt AS PROCTIME())")
	case "UPPER":
		return str(func(s string) any { return strings.ToUpper(s) }, types.STRING)
	case "LOWER":
		return str(func(s string) any { return strings.ToLower(s) }, types.STRING)
	case "TRIM":
		return str(func(s string) any { return strings.Trim(s, " ") }, types.STRING)
	case "CHAR_LENGTH", "CHARACTER_LENGTH":
		return str(func(s string) any { return int64(utf8.RuneCountInString(s)) }, types.INT)
	case "CONCAT":
		for i := range args {
			if err := wantString(i); err != nil {
				return nil, err
			}
		}
		return concatFunc(args), nil
	case "COALESCE":
		if len(args) == 0 {
			return nil, p.errAt(c.Position(), ErrInvalid, "COALESCE needs arguments")
		}
		t := args[0].Type().Plain()
		for i, a := range args[1:] {
			u, ok := types.Common(t, a.Type().Plain())
			if !ok {
				return nil, p.errAt(c.Args[i+1].Position(), ErrInvalid, "COALESCE of %s and %s: no common type", t, a.Type())
			}
			t = u
		}
		t.NotNull = slices.ContainsFunc(args, func(a Expr) bool { return a.Type().NotNull })
		return &Func{Name: c.Name, Args: args, T: t, nullSafe: true, fn: func(vs []any) (any, error) {
			for i, v := range vs {
				if v != nil {
					return types.Cast(v, args[i].Type(), t)
				}
			}
			return nil, nil
		}}, nil
	case "ABS":
		if err := arity(1); err != nil {
			return nil, err
		}
		at := args[0].Type()
		if !at.IsNumeric() {
			return nil, p.errAt(c.Position(), ErrInvalid, "ABS needs a number, not %s", at)
		}
		return &Func{Name: c.Name, Args: args, T: at.Plain(), fn: func(vs []any) (any, error) {
			switch v := vs[0].(type) {
			case float64:
				return math.Abs(v), nil
			case int64:
				if v < 0 {
					return -v, nil
				}
				return v, nil
			}
			return nil, fmt.Errorf("ABS of %T", vs[0])
		}}, nil
	case "MOD":
		if err := arity(2); err != nil {
			return nil, err
		}
		return p.binary(&parser.Binary{Op: "%", L: c.Args[0], R: c.Args[1]}, args[0], args[1])
	case "IF":
		if err := arity(3); err != nil {
			return nil, err
		}
		if err := p.wantBool(c.Args[0], args[0]); err != nil {
			return nil, err
		}
		t, ok := types.Common(args[1].Type().Plain(), args[2].Type().Plain())
		if !ok {
			return nil, p.errAt(c.Position(), ErrInvalid, "IF branches of %s and %s have no common type", args[1].Type(), args[2].Type())
		}
		return &CaseExpr{Conds: args[:1], Thens: args[1:2], Else: args[2], T: t}, nil
	case "TO_TIMESTAMP_LTZ":
		if len(args) != 1 && len(args) != 2 {
			return nil, p.errAt(c.Position(), ErrInvalid, "TO_TIMESTAMP_LTZ takes an epoch value and a precision (0 or 3)")
		}
		if !args[0].Type().IsInteger() {
			return nil, p.errAt(c.Position(), ErrInvalid, "TO_TIMESTAMP_LTZ needs an integer epoch value, not %s", args[0].Type())
		}
		prec := int64(3)
		if len(args) == 2 {
			k, ok := args[1].(*Const)
			if !ok || (k.V != int64(0) && k.V != int64(3)) {
				return nil, p.errAt(c.Position(), ErrInvalid, "TO_TIMESTAMP_LTZ's precision must be the constant 0 or 3")
			}
			prec = k.V.(int64)
		}
		t := types.Type{Kind: types.TimestampLTZ, Precision: 3, NotNull: args[0].Type().NotNull}
		return &Func{Name: c.Name, Args: args[:1], T: t, fn: func(vs []any) (any, error) {
			v := vs[0].(int64)
			if prec == 0 {
				return v * 1000, nil
			}
			return v, nil
		}}, nil
	}
	msg := fmt.Sprintf("no function %s", c.Name)
	cands := append(slices.Clone(scalarNames), "COUNT", "SUM", "AVG", "MIN", "MAX")
	if n := parser.Nearest(c.Name, cands); n != "" {
		msg += fmt.Sprintf("; did you mean %s?", n)
	}
	return nil, p.errAt(c.Position(), ErrUnknown, "%s", msg)
}
