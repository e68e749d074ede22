package exec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// csvFormat is Flink's csv format of a table's fields (one record per
// Kafka message or per line of a file), options of one prefix (csv.,
// key.csv., value.csv.). Flink reads and writes CSV with Jackson's
// CsvMapper; this follows Jackson's rules, not RFC 4180's, which is why it
// does not use encoding/csv: Jackson quotes a text value longer than 24
// characters or holding any character below the highest of the delimiter,
// the quote character and the line feed (so "a b" and
// "2024-01-01 10:00:00" are quoted with the default ','), the quote and
// escape characters are options
// (encoding/csv has neither), quoting can be disabled, and a field equal
// to csv.null-literal is NULL.
type csvFormat struct {
	fields            []planner.Field
	delim             rune
	quote             rune // -1: csv.disable-quote-character
	escape            rune // -1: none (the default)
	allowComments     bool
	ignoreParseErrors bool
	nullLiteral       string
	hasNullLiteral    bool
	// sci is csv.write-bigdecimal-in-scientific-notation (default true).
	sci bool
	// minSafe: a text value with a character below it is quoted.
	minSafe rune
}

func newCSVFormat(opts map[string]string, prefix string, fields []planner.Field) (*csvFormat, error) {
	f := &csvFormat{fields: fields, delim: ',', quote: '"', escape: -1, sci: true}
	var errs []error
	boolOpt := func(name string, dst *bool) { boolOption(opts, prefix, name, dst, &errs) }
	charOpt := func(name string, dst *rune) {
		v, ok := opts[prefix+name]
		if !ok {
			return
		}
		if v == `\t` { // Flink's doc: '\t' is a tab
			v = "\t"
		}
		if utf8.RuneCountInString(v) != 1 {
			errs = append(errs, fmt.Errorf("option '%s%s' = '%s': must be a single character", prefix, name, v))
			return
		}
		*dst, _ = utf8.DecodeRuneInString(v)
	}
	var noQuote bool
	boolOpt("disable-quote-character", &noQuote)
	boolOpt("allow-comments", &f.allowComments)
	boolOpt("ignore-parse-errors", &f.ignoreParseErrors)
	boolOpt("write-bigdecimal-in-scientific-notation", &f.sci)
	charOpt("field-delimiter", &f.delim)
	charOpt("quote-character", &f.quote)
	charOpt("escape-character", &f.escape)
	if noQuote {
		if _, ok := opts[prefix+"quote-character"]; ok {
			errs = append(errs, fmt.Errorf("format 'csv': option '%squote-character' cannot be set when '%sdisable-quote-character' is true", prefix, prefix))
		}
		f.quote = -1
	}
	if v, ok := opts[prefix+"array-element-delimiter"]; ok && v == "" {
		errs = append(errs, fmt.Errorf("option '%sarray-element-delimiter' must not be empty", prefix))
	}
	f.nullLiteral, f.hasNullLiteral = opts[prefix+"null-literal"]
	for _, fl := range fields {
		switch fl.Type.Kind {
		case types.String, types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double,
			types.Decimal, types.Date, types.Time, types.Timestamp, types.TimestampLTZ, types.Bytes:
		default:
			errs = append(errs, fmt.Errorf("format 'csv' cannot hold column %s of type %s", fl.Name, fl.Type.Plain()))
		}
	}
	f.minSafe = max(f.delim, f.quote, '\n') + 1
	return f, errors.Join(errs...)
}

// decode reads one CSV record into the format's fields. An empty record
// or (csv.allow-comments) a comment line is errSkip, as Flink's
// deserializer makes no row of it; a malformed record fails, or with
// csv.ignore-parse-errors is errSkip; a field that cannot be converted
// fails, or is NULL.
func (f *csvFormat) decode(data []byte, dst []any) (fieldErrors int, err error) {
	line := strings.TrimRight(string(data), "\r\n")
	if line == "" || f.allowComments && strings.HasPrefix(line, "#") {
		return 0, errSkip
	}
	for i := range dst {
		dst[i] = nil
	}
	cells, err := f.split(line)
	switch {
	case err != nil:
	case len(cells) > len(f.fields):
		// Jackson's "Too many entries", a parse error even when skipped.
		err = fmt.Errorf("too many entries: expected at most %d, found %d", len(f.fields), len(cells))
	case len(cells) < len(f.fields) && !f.ignoreParseErrors:
		// Flink's arity check; with ignore-parse-errors the missing fields
		// are NULL.
		err = fmt.Errorf("row length mismatch: %d fields expected but was %d", len(f.fields), len(cells))
	}
	if err != nil {
		if f.ignoreParseErrors {
			return 0, errSkip
		}
		return 0, fmt.Errorf("failed to deserialize CSV row '%s': %w", truncate(data), err)
	}
	nulls := 0
	for i, c := range cells {
		if c.null {
			continue
		}
		v, err := f.convert(c.text, f.fields[i].Type)
		if err != nil {
			if f.ignoreParseErrors {
				nulls++
				continue
			}
			return 0, fmt.Errorf("failed to deserialize CSV row '%s': field '%s' (%s): %w", truncate(data), f.fields[i].Name, f.fields[i].Type.Plain(), err)
		}
		dst[i] = v
	}
	return nulls, nil
}

type csvCell struct {
	text string
	null bool
}

// split cuts a record into its fields: a field starting with the quote
// character runs to the next lone quote (a doubled one is a quote), the
// escape character takes the next character as it is, and an unquoted
// field equal to the null literal is NULL.
func (f *csvFormat) split(line string) ([]csvCell, error) {
	var cells []csvCell
	var b strings.Builder
	i := 0
	for {
		b.Reset()
		if f.quote >= 0 && strings.HasPrefix(line[i:], string(f.quote)) {
			i += utf8.RuneLen(f.quote)
			closed := false
			for i < len(line) {
				r, n := utf8.DecodeRuneInString(line[i:])
				i += n
				switch {
				case r == f.escape && i < len(line):
					r2, n2 := utf8.DecodeRuneInString(line[i:])
					b.WriteRune(r2)
					i += n2
				case r == f.quote:
					if strings.HasPrefix(line[i:], string(f.quote)) {
						b.WriteRune(f.quote)
						i += n
						continue
					}
					closed = true
				default:
					b.WriteRune(r)
				}
				if closed {
					break
				}
			}
			if !closed {
				return nil, fmt.Errorf("missing closing quote for value (field %d)", len(cells)+1)
			}
			if i < len(line) {
				if r, _ := utf8.DecodeRuneInString(line[i:]); r != f.delim {
					return nil, fmt.Errorf("expected separator (%q) or end of record after the quoted value of field %d, found %q", f.delim, len(cells)+1, r)
				}
			}
		} else {
			for i < len(line) {
				r, n := utf8.DecodeRuneInString(line[i:])
				if r == f.delim {
					break
				}
				i += n
				if r == f.escape && i < len(line) {
					r2, n2 := utf8.DecodeRuneInString(line[i:])
					b.WriteRune(r2)
					i += n2
					continue
				}
				b.WriteRune(r)
			}
		}
		text := b.String()
		cells = append(cells, csvCell{text: text, null: f.hasNullLiteral && text == f.nullLiteral})
		if i >= len(line) {
			return cells, nil
		}
		i += utf8.RuneLen(f.delim) // the delimiter
		if i == len(line) {
			cells = append(cells, csvCell{null: f.hasNullLiteral && f.nullLiteral == ""})
			return cells, nil
		}
	}
}

// convert is one CSV field as a value of t, as Flink's
// CsvToRowDataConverters parse it.
func (f *csvFormat) convert(s string, t types.Type) (any, error) {
	bad := func() (any, error) { return nil, fmt.Errorf("cannot read %q as %s", s, t.Plain()) }
	switch t.Kind {
	case types.String:
		return s, nil
	case types.Boolean:
		return strings.EqualFold(strings.TrimSpace(s), "true"), nil // Boolean.parseBoolean: anything else is false
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		bits := map[types.Kind]int{types.TinyInt: 8, types.SmallInt: 16, types.Int: 32, types.BigInt: 64}[t.Kind]
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return bad()
		}
		return n, nil
	case types.Float, types.Double:
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return bad()
		}
		if t.Kind == types.Float {
			x = float64(float32(x))
		}
		return x, nil
	case types.Decimal:
		if v, ok := types.ParseDecimalFast(s, t.Precision, t.Scale); ok {
			return v, nil
		}
		if strings.ContainsAny(s, "/ ") {
			return bad()
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return bad()
		}
		v, err := types.RatToDecimal(r, t.Precision, t.Scale)
		if err != nil {
			return nil, nil // does not fit: NULL, as Flink's DecimalData.fromBigDecimal
		}
		return v, nil
	case types.Date:
		return types.ParseDate(s)
	case types.Time:
		ms, err := types.ParseTime(s)
		if err != nil {
			return nil, err
		}
		return types.TruncateMillis(ms, t.Precision), nil
	case types.Timestamp, types.TimestampLTZ:
		s := strings.TrimSpace(s)
		if t.Kind == types.TimestampLTZ {
			s = strings.TrimSuffix(s, "Z")
		}
		ms, err := types.ParseTimestamp(s, false)
		if err != nil {
			return nil, err
		}
		return types.TruncateMillis(ms, t.Precision), nil
	case types.Bytes:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("cannot read %q as %s: not base64", s, t.Plain())
		}
		return b, nil
	}
	return bad()
}

// encode writes the fields (indexes idx into row) as one CSV record
// without a line end, as Flink's csv serializer does.
func (f *csvFormat) encode(dst []byte, row []any, idx []int) []byte {
	for j, i := range idx {
		if j > 0 {
			dst = utf8.AppendRune(dst, f.delim)
		}
		v := row[i]
		if v == nil {
			dst = append(dst, f.nullLiteral...) // as it is, never quoted
			continue
		}
		t := f.fields[j].Type
		switch t.Kind {
		case types.Boolean:
			dst = strconv.AppendBool(dst, v.(bool))
		case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
			dst = strconv.AppendInt(dst, v.(int64), 10)
		case types.Float:
			dst = append(dst, types.FormatFloatJava(v.(float64), 32)...)
		case types.Double:
			dst = append(dst, types.FormatFloatJava(v.(float64), 64)...)
		case types.Decimal:
			dst = append(dst, formatDecimalCSV(v.(int64), t.Scale, f.sci)...)
		default:
			dst = f.appendText(dst, csvText(v, t))
		}
	}
	return dst
}

// csvText is the text of a value written as a string: Flink's
// ISO_LOCAL_DATE, ISO_LOCAL_TIME and SQL timestamp formats, base64 bytes.
func csvText(v any, t types.Type) string {
	switch t.Kind {
	case types.String:
		return v.(string)
	case types.Date:
		return types.FormatDate(v.(int64))
	case types.Time:
		ms := v.(int64)
		s := types.FormatTime(ms)
		if frac := ms % 1000; frac != 0 {
			s += "." + strings.TrimRight(fmt.Sprintf("%03d", frac), "0")
		}
		return s
	case types.Timestamp:
		return types.FormatTimestampSQL(v.(int64))
	case types.TimestampLTZ:
		return types.FormatTimestampSQL(v.(int64)) + "Z"
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(v.([]byte))
	}
	return fmt.Sprint(v)
}

// csvMaxQuoteCheck is Jackson's CsvEncoder.MAX_QUOTE_CHECK: a longer text
// value is quoted without looking at it.
const csvMaxQuoteCheck = 24

// appendText writes a text value, quoted as Jackson's CsvEncoder quotes
// (its loose check, Flink's): when it is longer than csvMaxQuoteCheck
// UTF-16 units or holds a character below minSafe or the escape
// character. Inside, a quote is doubled, and so is the escape character.
func (f *csvFormat) appendText(dst []byte, s string) []byte {
	need := false
	if f.quote >= 0 {
		if len(s) > csvMaxQuoteCheck && len(utf16.Encode([]rune(s))) > csvMaxQuoteCheck {
			need = true
		}
		for _, r := range s {
			if need || r < f.minSafe || r == f.escape {
				need = true
				break
			}
		}
	}
	if !need {
		return append(dst, s...)
	}
	dst = utf8.AppendRune(dst, f.quote)
	for _, r := range s {
		if r == f.quote || r == f.escape {
			dst = utf8.AppendRune(dst, r)
		}
		dst = utf8.AppendRune(dst, r)
	}
	return utf8.AppendRune(dst, f.quote)
}

// formatDecimalCSV writes a DECIMAL as Flink's csv format does: Jackson
// strips the trailing zeros of the BigDecimal, then writes it with
// toString (csv.write-bigdecimal-in-scientific-notation, the default:
// 100 is 1E+2, 12.50 is 12.5) or toPlainString.
func formatDecimalCSV(v int64, scale int, sci bool) string {
	if v == 0 {
		return "0"
	}
	for v%10 == 0 {
		v /= 10
		scale--
	}
	if scale >= 0 {
		if sci {
			return types.FormatDecimalJava(v, scale)
		}
		return types.FormatDecimal(v, scale)
	}
	if !sci {
		return strconv.FormatInt(v, 10) + strings.Repeat("0", -scale)
	}
	return types.FormatDecimalJava(v, scale)
}
