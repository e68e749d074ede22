package types

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// CanCast reports whether CAST(x AS to) is defined for x of type from.
func CanCast(from, to Type) bool {
	switch {
	case from.Kind == Null || from.Kind == to.Kind:
		return true
	case to.Kind == String:
		return from.Kind != Array && from.Kind != Map && from.Kind != Row
	case from.Kind == String:
		return to.Kind != Array && to.Kind != Map && to.Kind != Row && !to.IsInterval()
	case from.IsNumeric() && to.IsNumeric():
		return true
	case from.IsNumeric() && to.Kind == Boolean, from.Kind == Boolean && to.IsNumeric():
		return true
	case (from.IsTimestamp() || from.Kind == Date) && (to.IsTimestamp() || to.Kind == Date):
		return true
	case from.IsTimestamp() && to.Kind == Time:
		return true
	}
	return false
}

// ImplicitlyCastable reports whether a value of from may be written to a
// column of to without a CAST (INSERT INTO, function arguments): the same
// family, numbers to numbers, timestamps to timestamps.
func ImplicitlyCastable(from, to Type) bool {
	switch {
	case from.Kind == Null || from.Kind == to.Kind:
		return true
	case from.IsNumeric() && to.IsNumeric():
		return true
	case from.IsTimestamp() && to.IsTimestamp():
		return true
	}
	return false
}

func intRange(k Kind) (int64, int64) {
	switch k {
	case TinyInt:
		return math.MinInt8, math.MaxInt8
	case SmallInt:
		return math.MinInt16, math.MaxInt16
	case Int:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// wrapInt narrows v to the integer kind k as Java's casts do (two's
// complement wrap-around).
func wrapInt(v int64, k Kind) int64 {
	switch k {
	case TinyInt:
		return int64(int8(v))
	case SmallInt:
		return int64(int16(v))
	case Int:
		return int64(int32(v))
	}
	return v
}

// Cast converts v of type from to type to. A value that does not fit a
// DECIMAL is NULL (as in Flink); text that does not parse is an error
// wrapping ErrCast (TRY_CAST makes it NULL).
func Cast(v any, from, to Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch to.Kind {
	case String:
		s := ToString(v, from)
		if to.Precision > 0 && len([]rune(s)) > to.Precision {
			s = string([]rune(s)[:to.Precision])
		}
		return s, nil
	case Boolean:
		switch {
		case from.Kind == Boolean:
			return v, nil
		case from.Kind == String:
			switch strings.ToLower(strings.TrimSpace(v.(string))) {
			case "true", "t", "yes", "y", "1":
				return true, nil
			case "false", "f", "no", "n", "0":
				return false, nil
			}
			return nil, fmt.Errorf("%w: %q is not a BOOLEAN", ErrCast, v)
		case from.IsInteger() || from.Kind == Decimal:
			return v.(int64) != 0, nil
		case from.Kind == Float || from.Kind == Double:
			return v.(float64) != 0, nil
		}
	case TinyInt, SmallInt, Int, BigInt:
		switch {
		case from.IsInteger():
			return wrapInt(v.(int64), to.Kind), nil
		case from.Kind == Decimal:
			q := v.(int64) / pow10[min(from.Scale, 18)]
			return wrapInt(q, to.Kind), nil
		case from.Kind == Float || from.Kind == Double:
			f := math.Trunc(v.(float64))
			lo, hi := intRange(BigInt)
			if math.IsNaN(f) || f < float64(lo) || f > float64(hi) {
				return nil, fmt.Errorf("%w: %v does not fit %s", ErrOverflow, v, to)
			}
			return wrapInt(int64(f), to.Kind), nil
		case from.Kind == Boolean:
			if v.(bool) {
				return int64(1), nil
			}
			return int64(0), nil
		case from.Kind == String:
			s := strings.TrimSpace(v.(string))
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not an integer", ErrCast, v)
			}
			if lo, hi := intRange(to.Kind); n < lo || n > hi {
				return nil, fmt.Errorf("%w: %q does not fit %s", ErrCast, v, to)
			}
			return n, nil
		}
	case Float, Double:
		switch {
		case from.IsInteger():
			return float64(v.(int64)), nil
		case from.Kind == Decimal:
			return DecimalToFloat(v.(int64), from.Scale), nil
		case from.Kind == Float || from.Kind == Double:
			if to.Kind == Float {
				return float64(float32(v.(float64))), nil
			}
			return v, nil
		case from.Kind == Boolean:
			if v.(bool) {
				return 1.0, nil
			}
			return 0.0, nil
		case from.Kind == String:
			f, err := strconv.ParseFloat(strings.TrimSpace(v.(string)), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not a number", ErrCast, v)
			}
			return f, nil
		}
	case Decimal:
		var r *big.Rat
		switch {
		case from.IsInteger():
			r = new(big.Rat).SetInt64(v.(int64))
		case from.Kind == Decimal:
			x, err := Rescale(v.(int64), from.Scale, to.Scale)
			if err != nil || !FitsPrecision(x, to.Precision) {
				return nil, nil // overflow: NULL, as Flink
			}
			return x, nil
		case from.Kind == Float || from.Kind == Double:
			f := v.(float64)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, nil
			}
			r = new(big.Rat)
			r.SetString(strconv.FormatFloat(f, 'g', -1, 64))
		case from.Kind == Boolean:
			r = new(big.Rat)
			if v.(bool) {
				r.SetInt64(1)
			}
		case from.Kind == String:
			var ok bool
			r, ok = new(big.Rat).SetString(strings.TrimSpace(v.(string)))
			if !ok {
				return nil, fmt.Errorf("%w: %q is not a DECIMAL", ErrCast, v)
			}
		}
		if r != nil {
			x, err := RatToDecimal(r, to.Precision, to.Scale)
			if err != nil {
				return nil, nil
			}
			return x, nil
		}
	case Timestamp, TimestampLTZ:
		switch {
		case from.IsTimestamp():
			return TruncateMillis(v.(int64), to.Precision), nil
		case from.Kind == Date:
			return v.(int64) * 86400000, nil
		case from.Kind == String:
			ms, err := ParseTimestamp(strings.TrimSpace(v.(string)), false)
			if err != nil {
				return nil, err
			}
			return TruncateMillis(ms, to.Precision), nil
		}
	case Date:
		switch {
		case from.Kind == Date:
			return v, nil
		case from.IsTimestamp():
			return floorDiv(v.(int64), 86400000), nil
		case from.Kind == String:
			return ParseDate(strings.TrimSpace(v.(string)))
		}
	case Time:
		switch {
		case from.Kind == Time:
			return v, nil
		case from.IsTimestamp():
			ms := v.(int64)
			return ms - floorDiv(ms, 86400000)*86400000, nil
		case from.Kind == String:
			return ParseTime(strings.TrimSpace(v.(string)))
		}
	case Bytes:
		switch from.Kind {
		case Bytes:
			return v, nil
		case String:
			return []byte(v.(string)), nil
		}
	}
	return nil, fmt.Errorf("%w: %s to %s", ErrCast, from, to)
}

// ToString is CAST(v AS STRING) for v of type t.
func ToString(v any, t Type) string {
	switch t.Kind {
	case String:
		return v.(string)
	case Boolean:
		if v.(bool) {
			return "TRUE"
		}
		return "FALSE"
	case TinyInt, SmallInt, Int, BigInt:
		return strconv.FormatInt(v.(int64), 10)
	case Float, Double:
		return FormatDoubleJava(v.(float64))
	case Decimal:
		return FormatDecimal(v.(int64), t.Scale)
	case Date:
		return FormatDate(v.(int64))
	case Time:
		return FormatTime(v.(int64))
	case Timestamp, TimestampLTZ:
		return FormatTimestampCast(v.(int64), t.Precision)
	case Bytes:
		return string(v.([]byte))
	}
	return fmt.Sprint(v)
}

// Compare orders two non-NULL values of the same type t.
func Compare(a, b any, t Type) int {
	switch t.Kind {
	case String:
		return strings.Compare(a.(string), b.(string))
	case Boolean:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case Float, Double:
		return cmp.Compare(a.(float64), b.(float64))
	case Bytes:
		return bytes.Compare(a.([]byte), b.([]byte))
	}
	return cmp.Compare(a.(int64), b.(int64))
}
