// Package types is the SQL front end's data types and their values: what
// a column's type is (Flink's names, precision and scale, nullability, the
// rowtime attribute), how its values are held at run time, and the
// conversions between them (CAST), decimal arithmetic, and the text forms
// of timestamps. It is pure computation shared by the planner and the
// operators.
//
// Values at run time, one Go type per kind, NULL being nil:
//
//	STRING, VARCHAR, CHAR          string
//	BOOLEAN                        bool
//	TINYINT ... BIGINT             int64
//	FLOAT, DOUBLE                  float64
//	DECIMAL(p, s)                  int64, the unscaled value (p ≤ 18 exact; wider types are
//	                               typed, and a value beyond int64 fails as an overflow)
//	DATE                           int64 days since 1970-01-01
//	TIME(p)                        int64 milliseconds of the day
//	TIMESTAMP(p), TIMESTAMP_LTZ(p) int64 milliseconds since the epoch (UTC wall clock)
//	INTERVAL                       int64 milliseconds (day-time) or months (year-month)
//	BYTES, VARBINARY               []byte
package types

import (
	"fmt"
	"strings"
)

// Kind is a type's root.
type Kind int

// Kinds.
const (
	Null Kind = iota // the type of the literal NULL
	String
	Boolean
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Decimal
	Date
	Time
	Timestamp
	TimestampLTZ
	Bytes
	IntervalDayTime
	IntervalYearMonth
	Array
	Map
	Row
)

// Type is a SQL type.
type Type struct {
	Kind Kind
	// Precision is DECIMAL's precision, TIMESTAMP's and TIME's fractional
	// digits, VARCHAR's length (0: unbounded, STRING).
	Precision int
	// Scale is DECIMAL's scale.
	Scale   int
	NotNull bool
	// Rowtime marks an event-time attribute (a watermarked column, or a
	// window's window_time).
	Rowtime bool
	// Proctime marks a processing-time attribute (a computed column AS
	// PROCTIME()).
	Proctime bool
}

// Constructors of common types.
var (
	STRING  = Type{Kind: String}
	BOOLEAN = Type{Kind: Boolean}
	INT     = Type{Kind: Int}
	BIGINT  = Type{Kind: BigInt}
	DOUBLE  = Type{Kind: Double}
)

// DecimalOf is DECIMAL(p, s).
func DecimalOf(p, s int) Type { return Type{Kind: Decimal, Precision: p, Scale: s} }

// TimestampOf is TIMESTAMP(p).
func TimestampOf(p int) Type { return Type{Kind: Timestamp, Precision: p} }

// MaxDecimalPrecision is Flink's largest DECIMAL precision.
const MaxDecimalPrecision = 38

// Nullable is t without NOT NULL.
func (t Type) Nullable() Type { t.NotNull = false; return t }

// WithNotNull is t NOT NULL (or not).
func (t Type) WithNotNull(nn bool) Type { t.NotNull = nn; return t }

// Plain is t without the time attribute marks.
func (t Type) Plain() Type { t.Rowtime, t.Proctime = false, false; return t }

// IsNumeric reports an exact or approximate number.
func (t Type) IsNumeric() bool {
	return t.IsInteger() || t.Kind == Decimal || t.Kind == Float || t.Kind == Double
}

// IsInteger reports TINYINT to BIGINT.
func (t Type) IsInteger() bool { return t.Kind >= TinyInt && t.Kind <= BigInt }

// IsTimestamp reports TIMESTAMP or TIMESTAMP_LTZ.
func (t Type) IsTimestamp() bool { return t.Kind == Timestamp || t.Kind == TimestampLTZ }

// IsString reports a character string type.
func (t Type) IsString() bool { return t.Kind == String }

// IsInterval reports an interval type.
func (t Type) IsInterval() bool { return t.Kind == IntervalDayTime || t.Kind == IntervalYearMonth }

// Equal compares types, nullability and rowtime included.
func (t Type) Equal(u Type) bool { return t == u }

// String is the type as Flink prints it: INT NOT NULL, DECIMAL(12, 2),
// TIMESTAMP(3) *ROWTIME*.
func (t Type) String() string {
	var s string
	switch t.Kind {
	case Null:
		s = "NULL"
	case String:
		if t.Precision > 0 {
			s = fmt.Sprintf("VARCHAR(%d)", t.Precision)
		} else {
			s = "STRING"
		}
	case Boolean:
		s = "BOOLEAN"
	case TinyInt:
		s = "TINYINT"
	case SmallInt:
		s = "SMALLINT"
	case Int:
		s = "INT"
	case BigInt:
		s = "BIGINT"
	case Float:
		s = "FLOAT"
	case Double:
		s = "DOUBLE"
	case Decimal:
		s = fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Date:
		s = "DATE"
	case Time:
		s = fmt.Sprintf("TIME(%d)", t.Precision)
	case Timestamp:
		s = fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case TimestampLTZ:
		s = fmt.Sprintf("TIMESTAMP_LTZ(%d)", t.Precision)
	case Bytes:
		s = "BYTES"
	case IntervalDayTime:
		s = "INTERVAL SECOND(3)"
	case IntervalYearMonth:
		s = "INTERVAL MONTH"
	case Array:
		s = "ARRAY"
	case Map:
		s = "MAP"
	case Row:
		s = "ROW"
	default:
		s = fmt.Sprintf("Kind(%d)", int(t.Kind))
	}
	if t.NotNull {
		s += " NOT NULL"
	}
	if t.Rowtime {
		s += " *ROWTIME*"
	}
	if t.Proctime {
		s += " *PROCTIME*"
	}
	return s
}

// integerRank orders the integer kinds by width.
func integerRank(k Kind) int { return int(k - TinyInt) }

// integerDigits is the precision of an integer kind as a DECIMAL.
func integerDigits(k Kind) int {
	switch k {
	case TinyInt:
		return 3
	case SmallInt:
		return 5
	case Int:
		return 10
	}
	return 19
}

// AsDecimal is the DECIMAL type holding every value of the exact numeric
// type t.
func AsDecimal(t Type) Type {
	if t.Kind == Decimal {
		return t
	}
	return Type{Kind: Decimal, Precision: integerDigits(t.Kind), NotNull: t.NotNull}
}

// CommonNumeric is the type two numeric operands are compared in (and
// CASE branches unified to): the wider integer, DOUBLE if either is
// approximate, else a DECIMAL holding both.
func CommonNumeric(a, b Type) Type {
	nn := a.NotNull && b.NotNull
	switch {
	case a.Kind == Double || b.Kind == Double || a.Kind == Float || b.Kind == Float:
		return Type{Kind: Double, NotNull: nn}
	case a.IsInteger() && b.IsInteger():
		if integerRank(a.Kind) >= integerRank(b.Kind) {
			return Type{Kind: a.Kind, NotNull: nn}
		}
		return Type{Kind: b.Kind, NotNull: nn}
	}
	da, db := AsDecimal(a), AsDecimal(b)
	s := max(da.Scale, db.Scale)
	p := min(MaxDecimalPrecision, max(da.Precision-da.Scale, db.Precision-db.Scale)+s)
	return Type{Kind: Decimal, Precision: p, Scale: s, NotNull: nn}
}

// Common is the type values of a and b are unified to (CASE, COALESCE,
// IN), or false when they have none.
func Common(a, b Type) (Type, bool) {
	nn := a.NotNull && b.NotNull
	switch {
	case a.Kind == Null:
		return b.Nullable(), true
	case b.Kind == Null:
		return a.Nullable(), true
	case a.IsNumeric() && b.IsNumeric():
		return CommonNumeric(a, b), true
	case a.Kind == b.Kind:
		t := a.Plain()
		t.Precision = max(a.Precision, b.Precision)
		if a.Kind == String && (a.Precision == 0 || b.Precision == 0) {
			t.Precision = 0
		}
		t.NotNull = nn
		return t, true
	case a.IsTimestamp() && b.IsTimestamp():
		return Type{Kind: TimestampLTZ, Precision: max(a.Precision, b.Precision), NotNull: nn}, true
	}
	return Type{}, false
}

// FromName is the type of a parsed type name with its parameters, or an
// error naming what is wrong with them.
func FromName(name string, params []int, notNull bool) (Type, error) {
	t := Type{NotNull: notNull}
	bad := func(format string, args ...any) (Type, error) { return Type{}, fmt.Errorf(format, args...) }
	np := len(params)
	switch strings.ToUpper(name) {
	case "STRING":
		t.Kind = String
	case "VARCHAR", "CHAR":
		t.Kind = String
		if np > 1 {
			return bad("%s takes one length", name)
		}
		if np == 1 {
			if params[0] < 1 {
				return bad("%s(%d): the length must be at least 1", name, params[0])
			}
			t.Precision = params[0]
		} else if name == "CHAR" {
			t.Precision = 1
		}
	case "BOOLEAN":
		t.Kind = Boolean
	case "TINYINT":
		t.Kind = TinyInt
	case "SMALLINT":
		t.Kind = SmallInt
	case "INT":
		t.Kind = Int
	case "BIGINT":
		t.Kind = BigInt
	case "FLOAT":
		t.Kind = Float
	case "DOUBLE":
		t.Kind = Double
	case "DECIMAL":
		t.Kind, t.Precision = Decimal, 10
		if np > 2 {
			return bad("DECIMAL takes a precision and a scale")
		}
		if np >= 1 {
			t.Precision = params[0]
		}
		if np == 2 {
			t.Scale = params[1]
		}
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return bad("DECIMAL(%d, %d): the precision must be between 1 and %d", t.Precision, t.Scale, MaxDecimalPrecision)
		}
		if t.Scale > t.Precision {
			return bad("DECIMAL(%d, %d): the scale must not exceed the precision", t.Precision, t.Scale)
		}
	case "DATE":
		t.Kind = Date
	case "TIME":
		t.Kind = Time
		if np == 1 {
			t.Precision = params[0]
		}
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		t.Kind, t.Precision = Timestamp, 6
		if name == "TIMESTAMP_LTZ" {
			t.Kind = TimestampLTZ
		}
		if np > 1 {
			return bad("%s takes one precision", name)
		}
		if np == 1 {
			t.Precision = params[0]
		}
		if t.Precision > 9 {
			return bad("%s(%d): the precision must be between 0 and 9", name, t.Precision)
		}
	case "BYTES", "VARBINARY", "BINARY":
		t.Kind = Bytes
	case "ARRAY":
		t.Kind = Array
	case "MAP", "MULTISET":
		t.Kind = Map
	case "ROW":
		t.Kind = Row
	default:
		return bad("unknown type %s", name)
	}
	return t, nil
}
