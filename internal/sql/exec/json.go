package exec

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// jsonFormat is Flink's json format of a table's fields: the options of
// one prefix (json., key.json., value.json.).
type jsonFormat struct {
	fields            []planner.Field
	index             map[string]int
	failOnMissing     bool
	ignoreParseErrors bool
	iso               bool // json.timestamp-format.standard = ISO-8601
	plainDecimals     bool // json.encode.decimal-as-plain-number
	ignoreNullFields  bool // json.encode.ignore-null-fields
}

func newJSONFormat(opts map[string]string, prefix string, fields []planner.Field) (*jsonFormat, error) {
	f := &jsonFormat{fields: fields, index: map[string]int{}}
	for i, fl := range fields {
		f.index[fl.Name] = i
	}
	var errs []error
	boolOpt := func(name string, dst *bool) { boolOption(opts, prefix, name, dst, &errs) }
	boolOpt("fail-on-missing-field", &f.failOnMissing)
	boolOpt("ignore-parse-errors", &f.ignoreParseErrors)
	boolOpt("encode.decimal-as-plain-number", &f.plainDecimals)
	boolOpt("encode.ignore-null-fields", &f.ignoreNullFields)
	if f.failOnMissing && f.ignoreParseErrors {
		errs = append(errs, fmt.Errorf("options '%sfail-on-missing-field' and '%signore-parse-errors' cannot both be true", prefix, prefix))
	}
	switch v := opts[prefix+"timestamp-format.standard"]; v {
	case "", "SQL":
	case "ISO-8601":
		f.iso = true
	default:
		errs = append(errs, fmt.Errorf("option '%stimestamp-format.standard' = '%s': want SQL or ISO-8601", prefix, v))
	}
	return f, errors.Join(errs...)
}

// errSkip is a record the format skips (json.ignore-parse-errors).
var errSkip = errors.New("sql: record skipped")

// decode parses a JSON object into the format's fields, in order. A
// record that is not a JSON object fails (or, with ignore-parse-errors, is
// errSkip); a field that cannot be converted fails (or is NULL).
func (f *jsonFormat) decode(data []byte, dst []any) (fieldErrors int, err error) {
	if data == nil {
		// A tombstone: Flink's json deserializer returns no row for it.
		return 0, errSkip
	}
	for i := range dst {
		dst[i] = nil
	}
	var seen uint64 // fields present, for fail-on-missing-field (first 64)
	var convErr error
	nulls := 0
	err = scanObject(data, func(key string, raw jsonValue) {
		i, ok := f.index[key]
		if !ok || convErr != nil {
			return
		}
		if i < 64 {
			seen |= 1 << i
		}
		v, err := f.convert(raw, f.fields[i].Type)
		if err != nil {
			if f.ignoreParseErrors {
				dst[i] = nil
				nulls++
				return
			}
			convErr = fmt.Errorf("failed to deserialize JSON '%s': field '%s' (%s): %w", truncate(data), f.fields[i].Name, f.fields[i].Type.Plain(), err)
			return
		}
		dst[i] = v
	})
	if err != nil {
		if f.ignoreParseErrors {
			return 0, errSkip
		}
		return 0, fmt.Errorf("failed to deserialize JSON '%s': %w", truncate(data), err)
	}
	if convErr != nil {
		return 0, convErr
	}
	if f.failOnMissing {
		for i, fl := range f.fields {
			if i < 64 && seen&(1<<i) == 0 {
				return 0, fmt.Errorf("failed to deserialize JSON '%s': could not find field with name '%s'", truncate(data), fl.Name)
			}
		}
	}
	return nulls, nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// convert is one JSON value as a value of t (Flink's
// JsonToRowDataConverters: numbers and their text both parse).
func (f *jsonFormat) convert(raw jsonValue, t types.Type) (any, error) {
	if raw.kind == 'z' {
		return nil, nil
	}
	switch t.Kind {
	case types.String:
		return raw.text, nil
	case types.Boolean:
		switch raw.kind {
		case 'b':
			return raw.b, nil
		case 's':
			return strings.EqualFold(raw.text, "true"), nil
		}
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		if raw.kind == 'n' || raw.kind == 's' {
			return types.Cast(strings.TrimSpace(raw.text), types.STRING, t)
		}
	case types.Float, types.Double:
		if raw.kind == 'n' || raw.kind == 's' {
			return types.Cast(raw.text, types.STRING, t)
		}
	case types.Decimal:
		if raw.kind == 'n' || raw.kind == 's' {
			text := strings.TrimSpace(raw.text)
			if v, ok := types.ParseDecimalFast(text, t.Precision, t.Scale); ok {
				return v, nil
			}
			r, ok := new(big.Rat).SetString(text)
			if !ok {
				return nil, fmt.Errorf("%q is not a number", raw.text)
			}
			v, err := types.RatToDecimal(r, t.Precision, t.Scale)
			if err != nil {
				return nil, nil // does not fit: NULL, as Flink's DecimalData.fromBigDecimal
			}
			return v, nil
		}
	case types.Timestamp, types.TimestampLTZ:
		if raw.kind == 's' {
			s := strings.TrimSpace(raw.text)
			if t.Kind == types.TimestampLTZ {
				s = strings.TrimSuffix(s, "Z")
			}
			ms, err := types.ParseTimestamp(s, f.iso)
			if err != nil {
				return nil, err
			}
			return types.TruncateMillis(ms, t.Precision), nil
		}
	case types.Date:
		if raw.kind == 's' {
			return types.ParseDate(raw.text)
		}
	case types.Time:
		if raw.kind == 's' {
			return types.ParseTime(raw.text)
		}
	case types.Bytes:
		if raw.kind == 's' {
			return []byte(raw.text), nil // Flink decodes base64; kept as the text's bytes here
		}
	}
	return nil, fmt.Errorf("cannot read %s as %s", raw.text, t.Plain())
}

// encode writes the values of the format's fields (indexes idx into row)
// as a JSON object, as Flink's json format does.
func (f *jsonFormat) encode(dst []byte, row []any, idx []int) []byte {
	dst = append(dst, '{')
	first := true
	for j, i := range idx {
		v := row[i]
		if v == nil && f.ignoreNullFields {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, f.fields[j].Name)
		dst = append(dst, ':')
		dst = f.appendValue(dst, v, f.fields[j].Type)
	}
	return append(dst, '}')
}

func (f *jsonFormat) appendValue(dst []byte, v any, t types.Type) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case types.String:
		return appendJSONString(dst, v.(string))
	case types.Boolean:
		return strconv.AppendBool(dst, v.(bool))
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		return strconv.AppendInt(dst, v.(int64), 10)
	case types.Float, types.Double:
		s := types.FormatDoubleJava(v.(float64))
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return appendJSONString(dst, s)
		}
		return append(dst, s...)
	case types.Decimal:
		return append(dst, types.FormatDecimalJSON(v.(int64), t.Scale, f.plainDecimals)...)
	case types.Timestamp:
		if f.iso {
			return appendJSONString(dst, types.FormatTimestampISO(v.(int64)))
		}
		return appendJSONString(dst, types.FormatTimestampSQL(v.(int64)))
	case types.TimestampLTZ:
		if f.iso {
			return appendJSONString(dst, types.FormatTimestampISO(v.(int64))+"Z")
		}
		return appendJSONString(dst, types.FormatTimestampSQL(v.(int64))+"Z")
	case types.Date:
		return appendJSONString(dst, types.FormatDate(v.(int64)))
	case types.Time:
		return appendJSONString(dst, types.FormatTime(v.(int64)))
	case types.Bytes:
		return appendJSONString(dst, string(v.([]byte)))
	}
	return appendJSONString(dst, fmt.Sprint(v))
}

// appendJSONString quotes s as Jackson does: " and \ escaped, control
// characters as \n, \t... or \u00XX; everything else (non-ASCII too) as it
// is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				dst = append(dst, c)
				i++
				continue
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
			continue
		}
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		i++
	}
	return append(dst, '"')
}

// boolOption reads a format's boolean option prefix+name into dst when it
// is set; a value other than true or false (any case) is added to errs,
// naming the option.
func boolOption(opts map[string]string, prefix, name string, dst *bool, errs *[]error) {
	v, ok := opts[prefix+name]
	if !ok {
		return
	}
	switch strings.ToLower(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		*errs = append(*errs, fmt.Errorf("option '%s%s' = '%s': want true or false", prefix, name, v))
	}
}
