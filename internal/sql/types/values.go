package types

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// ErrOverflow is wrapped by the errors of a value that does not fit its
// type (a DECIMAL beyond its precision or int64, an integer out of range).
var ErrOverflow = errors.New("sql: numeric overflow")

// ErrCast is wrapped by the errors of a CAST whose value cannot be
// converted (CAST('abc' AS INT)).
var ErrCast = errors.New("sql: invalid cast")

var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// Pow10 is 10^n for n in [0, 18].
func Pow10(n int) int64 { return pow10[n] }

// FitsPrecision reports whether unscaled has at most p digits.
func FitsPrecision(unscaled int64, p int) bool {
	if p >= 19 {
		return true
	}
	return unscaled > -pow10[p] && unscaled < pow10[p]
}

// Rescale changes the scale of an unscaled decimal, rounding HALF_UP when
// digits are dropped (as Flink's casts do).
func Rescale(v int64, from, to int) (int64, error) {
	switch {
	case to == from:
		return v, nil
	case to > from:
		d := to - from
		if d > 18 {
			return 0, fmt.Errorf("%w: rescaling a DECIMAL by %d digits", ErrOverflow, d)
		}
		r := v * pow10[d]
		if r/pow10[d] != v {
			return 0, fmt.Errorf("%w: DECIMAL value %s at scale %d", ErrOverflow, FormatDecimal(v, from), to)
		}
		return r, nil
	}
	d := from - to
	if d > 18 {
		return 0, nil
	}
	q, r := v/pow10[d], v%pow10[d]
	if r < 0 {
		r = -r
	}
	if r*2 >= pow10[d] {
		if v < 0 {
			q--
		} else {
			q++
		}
	}
	return q, nil
}

// AddInt64 adds with overflow detection.
func AddInt64(a, b int64) (int64, error) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, fmt.Errorf("%w: %d + %d", ErrOverflow, a, b)
	}
	return s, nil
}

// MulDecimal multiplies unscaled decimals of scales sa and sb into scale s.
func MulDecimal(a int64, sa int, b int64, sb int, s int) (int64, error) {
	x := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	return bigToScale(x, sa+sb, s)
}

// DivDecimal divides unscaled decimals of scales sa and sb into scale s,
// rounding HALF_UP.
func DivDecimal(a int64, sa int, b int64, sb int, s int) (int64, error) {
	if b == 0 {
		return 0, fmt.Errorf("sql: division by zero")
	}
	// a/10^sa / (b/10^sb) = a * 10^(sb + s - sa) / b at scale s.
	num := big.NewInt(a)
	den := big.NewInt(b)
	if e := sb + s - sa; e >= 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil))
	} else {
		den.Mul(den, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-e)), nil))
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	r.Abs(r).Mul(r, big.NewInt(2))
	if r.Cmp(new(big.Int).Abs(den)) >= 0 {
		if (num.Sign() < 0) != (den.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("%w: DECIMAL quotient", ErrOverflow)
	}
	return q.Int64(), nil
}

func bigToScale(x *big.Int, from, to int) (int64, error) {
	if to < from {
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(from-to)), nil)
		q, r := new(big.Int).QuoRem(x, d, new(big.Int))
		r.Abs(r).Mul(r, big.NewInt(2))
		if r.Cmp(d) >= 0 {
			if x.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		x = q
	} else if to > from {
		x = new(big.Int).Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(to-from)), nil))
	}
	if !x.IsInt64() {
		return 0, fmt.Errorf("%w: DECIMAL value %s", ErrOverflow, x)
	}
	return x.Int64(), nil
}

// FormatDecimal is the plain text of an unscaled decimal: 12.50, -0.05.
func FormatDecimal(v int64, scale int) string {
	neg := v < 0
	var digits string
	if neg {
		digits = new(big.Int).Neg(big.NewInt(v)).String()
	} else {
		digits = strconv.FormatInt(v, 10)
	}
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// FormatDecimalJava is the text of an unscaled decimal as Java's
// BigDecimal.toString writes it (Flink's JSON format writes DECIMALs so):
// plain unless the adjusted exponent is below -6, then scientific.
func FormatDecimalJava(v int64, scale int) string {
	neg := v < 0
	digits := strconv.FormatInt(v, 10)
	if neg {
		digits = digits[1:]
	}
	adjusted := -scale + len(digits) - 1
	if scale >= 0 && adjusted >= -6 {
		return FormatDecimal(v, scale)
	}
	s := digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	s += "E"
	if adjusted >= 0 {
		s += "+"
	}
	s += strconv.Itoa(adjusted)
	if neg {
		s = "-" + s
	}
	return s
}

// StripTrailingZeros is Java's BigDecimal.stripTrailingZeros of an
// unscaled decimal: the same value with the fewest digits, its scale
// negative for a multiple of ten (700 of scale 2 is 7 of scale 0, 1000 of
// scale 2 is 1 of scale -1); zero is 0 of scale 0.
func StripTrailingZeros(v int64, scale int) (int64, int) {
	if v == 0 {
		return 0, 0
	}
	for v%10 == 0 {
		v /= 10
		scale--
	}
	return v, scale
}

// FormatDecimalJSON is a DECIMAL as Flink's json format writes it: by
// default Jackson normalizes the BigDecimal (stripTrailingZeros, zero as
// 0) and writes its toString (7.00 as 7, 5.50 as 5.5, 10.00 as 1E+1);
// with plain (json.encode.decimal-as-plain-number) it keeps the value's
// scale and writes its toPlainString (10.00 as 10.00).
func FormatDecimalJSON(v int64, scale int, plain bool) string {
	if plain {
		return FormatDecimal(v, scale)
	}
	return FormatDecimalJava(StripTrailingZeros(v, scale))
}

// ParseDecimal parses text (12.5, -3, 1e2) into an unscaled value of scale
// s, rounding HALF_UP, checking precision p.
func ParseDecimal(text string, p, s int) (int64, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(text))
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a number", ErrCast, text)
	}
	return RatToDecimal(r, p, s)
}

// RatToDecimal is r as an unscaled value of DECIMAL(p, s), rounded HALF_UP.
func RatToDecimal(r *big.Rat, p, s int) (int64, error) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
	num, den := scaled.Num(), scaled.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	rem.Abs(rem).Mul(rem, big.NewInt(2))
	if rem.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if !q.IsInt64() || !FitsPrecision(q.Int64(), p) {
		return 0, fmt.Errorf("%w: %s does not fit DECIMAL(%d, %d)", ErrOverflow, r.FloatString(s), p, s)
	}
	return q.Int64(), nil
}

// DecimalToFloat is an unscaled decimal as a float64.
func DecimalToFloat(v int64, scale int) float64 {
	f, _ := strconv.ParseFloat(FormatDecimal(v, scale), 64)
	return f
}

// FormatDoubleJava writes a DOUBLE as Java's Double.toString does (and so
// Flink's JSON format): 12.5, 1.0, 1.0E10, 1.0E-5, NaN, Infinity.
func FormatDoubleJava(f float64) string { return FormatFloatJava(f, 64) }

// FormatFloatJava writes a FLOAT (bits 32: the shortest digits that read
// back as the same float32, as Java's Float.toString) or a DOUBLE (bits
// 64) as Java does.
func FormatFloatJava(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(f)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits) // 1E+10, 1.5E-05
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// Epoch day and millisecond helpers, all in UTC: TIMESTAMP values are wall
// clock times without a zone.

// FormatTimestampSQL writes epoch milliseconds as Flink's JSON format does
// with json.timestamp-format.standard = 'SQL': "yyyy-MM-dd HH:mm:ss" and
// the fraction of the second without trailing zeros ("...:00.5"), none
// when it is zero.
func FormatTimestampSQL(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	s := t.Format("2006-01-02 15:04:05")
	if frac := ms - floorDiv(ms, 1000)*1000; frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%03d", frac), "0")
		s += "." + f
	}
	return s
}

// FormatTimestampISO is the ISO-8601 form (json.timestamp-format.standard
// = 'ISO-8601'): "yyyy-MM-ddTHH:mm:ss" and the trimmed fraction.
func FormatTimestampISO(ms int64) string {
	return strings.Replace(FormatTimestampSQL(ms), " ", "T", 1)
}

// FormatTimestampCast is CAST(ts AS STRING): the fraction padded to the
// type's precision (at most 3 digits are held).
func FormatTimestampCast(ms int64, precision int) string {
	t := time.UnixMilli(ms).UTC()
	s := t.Format("2006-01-02 15:04:05")
	if precision > 0 {
		frac := fmt.Sprintf("%03d", ms-floorDiv(ms, 1000)*1000)
		for len(frac) < precision {
			frac += "0"
		}
		s += "." + frac[:precision]
	}
	return s
}

// TruncateMillis drops the digits of ms beyond precision (0..3).
func TruncateMillis(ms int64, precision int) int64 {
	switch precision {
	case 0:
		return floorDiv(ms, 1000) * 1000
	case 1:
		return floorDiv(ms, 100) * 100
	case 2:
		return floorDiv(ms, 10) * 10
	}
	return ms
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// ParseTimestamp parses "yyyy-MM-dd HH:mm[:ss[.fffffffff]]" (iso: with T
// instead of the space) into epoch milliseconds; digits beyond
// milliseconds are dropped.
func ParseTimestamp(s string, iso bool) (int64, error) {
	sep := " "
	if iso {
		sep = "T"
	}
	date, clock, ok := strings.Cut(s, sep)
	if !ok {
		if d, err := ParseDate(s); err == nil && !iso {
			return d * 86400000, nil
		}
		return 0, fmt.Errorf("%w: %q is not a timestamp (yyyy-MM-dd%sHH:mm:ss[.SSS])", ErrCast, s, sep)
	}
	if iso {
		clock = strings.TrimSuffix(clock, "Z")
	}
	d, err := ParseDate(date)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a timestamp: %v", ErrCast, s, err)
	}
	t, err := ParseTime(clock)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a timestamp: %v", ErrCast, s, err)
	}
	return d*86400000 + t, nil
}

// ParseDate parses "yyyy-MM-dd" into days since the epoch.
func ParseDate(s string) (int64, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 4 || len(parts[1]) != 2 || len(parts[2]) != 2 {
		return 0, fmt.Errorf("%w: %q is not a date (yyyy-MM-dd)", ErrCast, s)
	}
	y, e1 := strconv.Atoi(parts[0])
	m, e2 := strconv.Atoi(parts[1])
	d, e3 := strconv.Atoi(parts[2])
	if e1 != nil || e2 != nil || e3 != nil || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, fmt.Errorf("%w: %q is not a date (yyyy-MM-dd)", ErrCast, s)
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d {
		return 0, fmt.Errorf("%w: %q is not a valid date", ErrCast, s)
	}
	return floorDiv(t.UnixMilli(), 86400000), nil
}

// ParseTime parses "HH:mm[:ss[.fffffffff]]" into milliseconds of the day.
func ParseTime(s string) (int64, error) {
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("%w: %q is not a time (HH:mm:ss)", ErrCast, s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 {
			return 0, fmt.Errorf("%w: %q is not a time (HH:mm:ss)", ErrCast, s)
		}
		v[i] = n
	}
	if v[0] > 23 || v[1] > 59 || v[2] > 59 {
		return 0, fmt.Errorf("%w: %q is not a valid time", ErrCast, s)
	}
	ms := int64(v[0])*3600000 + int64(v[1])*60000 + int64(v[2])*1000
	if frac != "" {
		if len(parts) != 3 || len(frac) > 9 {
			return 0, fmt.Errorf("%w: %q is not a time (HH:mm:ss.SSS)", ErrCast, s)
		}
		for _, c := range frac {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%w: %q is not a time (HH:mm:ss.SSS)", ErrCast, s)
			}
		}
		f := (frac + "000")[:3]
		n, _ := strconv.Atoi(f)
		ms += int64(n)
	}
	return ms, nil
}

// FormatDate writes days since the epoch as yyyy-MM-dd.
func FormatDate(days int64) string {
	return time.UnixMilli(days * 86400000).UTC().Format("2006-01-02")
}

// FormatTime writes milliseconds of the day as HH:mm:ss.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("15:04:05")
}

// ParseDecimalFast parses plain decimal text ("-12.5", "7") into an
// unscaled value of DECIMAL(p, s) without allocating; ok is false for
// anything else (exponents, more fractional digits than s, overflow),
// which ParseDecimal handles.
func ParseDecimalFast(text string, p, s int) (int64, bool) {
	i, neg := 0, false
	if i < len(text) && (text[i] == '-' || text[i] == '+') {
		neg = text[i] == '-'
		i++
	}
	var v int64
	digits, frac, dot := 0, 0, false
	for ; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '.' && !dot:
			dot = true
		case c >= '0' && c <= '9':
			if dot {
				frac++
				if frac > s {
					return 0, false
				}
			}
			if v > (1<<62)/10 {
				return 0, false
			}
			v = v*10 + int64(c-'0')
			digits++
		default:
			return 0, false
		}
	}
	if digits == 0 || s-frac > 18 {
		return 0, false
	}
	for ; frac < s; frac++ {
		if v > (1<<62)/10 {
			return 0, false
		}
		v *= 10
	}
	if neg {
		v = -v
	}
	if !FitsPrecision(v, p) {
		return 0, false
	}
	return v, true
}
