package table

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// A Go struct maps to a table's columns, field by field in order: each
// exported field is a column named as the field (or by its `sql:"name"`
// tag; `sql:"-"` leaves it out), of the type its Go type maps to:
//
//	string                      STRING
//	bool                        BOOLEAN
//	int8, int16, int32          TINYINT, SMALLINT, INT
//	int, int64                  BIGINT
//	float32, float64            FLOAT, DOUBLE
//	time.Time                   TIMESTAMP(3) (milliseconds, UTC)
//	[]byte                      BYTES
//	*T of any of those          the same type, NULL for nil
//
// Any other field type is refused, naming the field.

var timeType = reflect.TypeFor[time.Time]()

// column is a struct field's column.
type column struct {
	name  string
	field int // the field's index
	typ   types.Type
	ptr   bool
}

// ErrType: a Go type that cannot be a table's row (see columnsOf).
var ErrType = errors.New("table: a Go type that cannot map to columns")

// TypeError is a Go type that cannot map to a table's columns, naming
// the field that does not.
type TypeError struct {
	Type  string // the Go type
	Field string // the field ("" when the type itself is not a struct)
	Msg   string
}

func (e *TypeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("table: %s cannot map to columns: %s", e.Type, e.Msg)
	}
	return fmt.Sprintf("table: field %s of %s cannot map to a column: %s", e.Field, e.Type, e.Msg)
}

func (e *TypeError) Unwrap() error { return ErrType }

// columnName is the column of a struct field: its name, or its `sql`
// tag; ok is false for an unexported field or one tagged `sql:"-"`.
func columnName(f reflect.StructField) (name string, ok bool) {
	if !f.IsExported() {
		return "", false
	}
	if tag, ok := f.Tag.Lookup("sql"); ok {
		return tag, tag != "-"
	}
	return f.Name, true
}

// columnsOf maps the struct type t to columns.
func columnsOf(t reflect.Type) ([]column, error) {
	if t.Kind() != reflect.Struct {
		return nil, &TypeError{Type: t.String(), Msg: "it is a " + t.Kind().String() + ", not a struct of exported fields"}
	}
	var cols []column
	seen := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := columnName(f)
		if !ok {
			continue
		}
		typ, ptr, err := columnType(f.Type)
		if err != nil {
			return nil, &TypeError{Type: t.String(), Field: f.Name, Msg: err.Error()}
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return nil, &TypeError{Type: t.String(), Field: f.Name, Msg: fmt.Sprintf("its column %s is also field %s's", name, other)}
		}
		seen[strings.ToLower(name)] = f.Name
		cols = append(cols, column{name: name, field: i, typ: typ, ptr: ptr})
	}
	if len(cols) == 0 {
		return nil, &TypeError{Type: t.String(), Msg: "it has no exported field"}
	}
	return cols, nil
}

// columnType is the SQL type of a field of Go type t.
func columnType(t reflect.Type) (types.Type, bool, error) {
	ptr := false
	if t.Kind() == reflect.Pointer {
		ptr, t = true, t.Elem()
	}
	var typ types.Type
	switch {
	case t == timeType:
		typ = types.Type{Kind: types.Timestamp, Precision: 3}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		typ = types.Type{Kind: types.Bytes}
	default:
		switch t.Kind() {
		case reflect.String:
			typ = types.STRING
		case reflect.Bool:
			typ = types.BOOLEAN
		case reflect.Int8:
			typ = types.Type{Kind: types.TinyInt}
		case reflect.Int16:
			typ = types.Type{Kind: types.SmallInt}
		case reflect.Int32:
			typ = types.INT
		case reflect.Int, reflect.Int64:
			typ = types.BIGINT
		case reflect.Float32:
			typ = types.Type{Kind: types.Float}
		case reflect.Float64:
			typ = types.DOUBLE
		default:
			return types.Type{}, false, fmt.Errorf("a %s has no SQL type (use string, bool, intN, floatN, time.Time, []byte or a pointer to one)", t)
		}
	}
	typ.NotNull = !ptr && t.Kind() != reflect.Slice
	return typ, ptr, nil
}

// plannerColumns are cols as the planner's.
func plannerColumns(cols []column) []planner.Column {
	out := make([]planner.Column, len(cols))
	for i, c := range cols {
		out[i] = planner.Column{Name: c.name, Type: c.typ}
	}
	return out
}

// value is field c of struct v as a SQL value (see package types).
func (c column) value(v reflect.Value) any {
	f := v.Field(c.field)
	if c.ptr {
		if f.IsNil() {
			return nil
		}
		f = f.Elem()
	}
	switch c.typ.Kind {
	case types.Timestamp:
		return f.Interface().(time.Time).UnixMilli()
	case types.Bytes:
		if f.IsNil() {
			return nil
		}
		return f.Bytes()
	case types.String:
		return f.String()
	case types.Boolean:
		return f.Bool()
	case types.Float, types.Double:
		return f.Float()
	default:
		return f.Int()
	}
}

// setter sets a struct field from a SQL value of type from.
type setter func(dst reflect.Value, v any) error

// fieldSetter is how field f (of Go type ft) takes values of the SQL type
// from, or why it cannot.
func fieldSetter(ft reflect.Type, from types.Type) (setter, error) {
	ptr := ft.Kind() == reflect.Pointer
	base := ft
	if ptr {
		base = ft.Elem()
	}
	set, err := baseSetter(base, from)
	if err != nil {
		return nil, err
	}
	return func(dst reflect.Value, v any) error {
		if v == nil {
			if !ptr && base.Kind() != reflect.Slice {
				return fmt.Errorf("a NULL for a %s: use a pointer field", ft)
			}
			dst.SetZero()
			return nil
		}
		if ptr {
			p := reflect.New(base)
			if err := set(p.Elem(), v); err != nil {
				return err
			}
			dst.Set(p)
			return nil
		}
		return set(dst, v)
	}, nil
}

func baseSetter(t reflect.Type, from types.Type) (setter, error) {
	mismatch := fmt.Errorf("a %s column cannot go into a %s", from.Plain(), t)
	switch from.Kind {
	case types.String:
		if t.Kind() == reflect.String {
			return func(d reflect.Value, v any) error { d.SetString(v.(string)); return nil }, nil
		}
	case types.Boolean:
		if t.Kind() == reflect.Bool {
			return func(d reflect.Value, v any) error { d.SetBool(v.(bool)); return nil }, nil
		}
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return func(d reflect.Value, v any) error {
				n := v.(int64)
				if d.OverflowInt(n) {
					return fmt.Errorf("%d overflows a %s", n, d.Type())
				}
				d.SetInt(n)
				return nil
			}, nil
		case reflect.Float32, reflect.Float64:
			return func(d reflect.Value, v any) error { d.SetFloat(float64(v.(int64))); return nil }, nil
		}
	case types.Float, types.Double:
		if t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 {
			return func(d reflect.Value, v any) error { d.SetFloat(v.(float64)); return nil }, nil
		}
	case types.Decimal:
		switch t.Kind() {
		case reflect.String:
			return func(d reflect.Value, v any) error {
				d.SetString(types.FormatDecimal(v.(int64), from.Scale))
				return nil
			}, nil
		case reflect.Float32, reflect.Float64:
			scale := math.Pow10(from.Scale)
			return func(d reflect.Value, v any) error { d.SetFloat(float64(v.(int64)) / scale); return nil }, nil
		}
	case types.Timestamp, types.TimestampLTZ:
		if t == timeType {
			return func(d reflect.Value, v any) error {
				d.Set(reflect.ValueOf(time.UnixMilli(v.(int64)).UTC()))
				return nil
			}, nil
		}
		if t.Kind() == reflect.Int64 {
			return func(d reflect.Value, v any) error { d.SetInt(v.(int64)); return nil }, nil
		}
	case types.Bytes:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return func(d reflect.Value, v any) error { d.SetBytes(v.([]byte)); return nil }, nil
		}
	}
	return nil, mismatch
}

// rowValue is a SQL value of type t as a generic Row holds it.
func rowValue(t types.Type, v any) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case types.Decimal:
		return types.FormatDecimal(v.(int64), t.Scale)
	case types.Timestamp, types.TimestampLTZ:
		return time.UnixMilli(v.(int64)).UTC()
	}
	return v
}
