package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// rawFormat is Flink's raw format: the whole message (or line) is the
// table's single physical column. Text columns are raw.charset (UTF-8;
// ISO-8859-1 and US-ASCII also), numbers raw.endianness (big-endian) fixed
// width binary, BOOLEAN one byte. A NULL is written as a null message (a
// Kafka tombstone) and a null message reads as NULL.
type rawFormat struct {
	field planner.Field
	order interface {
		binary.ByteOrder
		binary.AppendByteOrder
	}
	latin1 bool // ISO-8859-1 or US-ASCII
	ascii  bool
}

func newRawFormat(opts map[string]string, prefix string, fields []planner.Field) (*rawFormat, error) {
	if len(fields) != 1 {
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		return nil, fmt.Errorf("the 'raw' format only supports a single physical column, but the schema has %d: %s", len(fields), strings.Join(names, ", "))
	}
	f := &rawFormat{field: fields[0], order: binary.BigEndian}
	var errs []error
	switch t := f.field.Type; t.Kind {
	case types.String, types.Bytes, types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double:
	default:
		errs = append(errs, fmt.Errorf("the 'raw' format does not support column %s of type %s", f.field.Name, t.Plain()))
	}
	switch v := strings.ToLower(opts[prefix+"endianness"]); v {
	case "", "big-endian":
	case "little-endian":
		f.order = binary.LittleEndian
	default:
		errs = append(errs, fmt.Errorf("option '%sendianness' = '%s': want big-endian or little-endian", prefix, opts[prefix+"endianness"]))
	}
	switch v := strings.ToUpper(opts[prefix+"charset"]); v {
	case "", "UTF-8", "UTF8":
	case "ISO-8859-1", "LATIN1":
		f.latin1 = true
	case "US-ASCII", "ASCII":
		f.latin1, f.ascii = true, true
	default:
		errs = append(errs, fmt.Errorf("option '%scharset' = '%s': unsupported charset (UTF-8, ISO-8859-1, US-ASCII)", prefix, opts[prefix+"charset"]))
	}
	return f, errors.Join(errs...)
}

func (f *rawFormat) width() int {
	switch f.field.Type.Kind {
	case types.Boolean, types.TinyInt:
		return 1
	case types.SmallInt:
		return 2
	case types.Int, types.Float:
		return 4
	case types.BigInt, types.Double:
		return 8
	}
	return -1
}

// decode reads a message into the column; a null message is NULL.
func (f *rawFormat) decode(data []byte, dst []any) (int, error) {
	if data == nil {
		dst[0] = nil
		return 0, nil
	}
	t := f.field.Type
	if w := f.width(); w > 0 && len(data) != w {
		return 0, fmt.Errorf("failed to deserialize raw %s value of column '%s': %d bytes, want %d", t.Plain(), f.field.Name, len(data), w)
	}
	switch t.Kind {
	case types.String:
		if !f.latin1 {
			dst[0] = strings.ToValidUTF8(string(data), "\uFFFD")
			return 0, nil
		}
		var b strings.Builder
		for _, c := range data {
			if f.ascii && c >= 0x80 {
				b.WriteRune(utf8.RuneError)
				continue
			}
			b.WriteRune(rune(c))
		}
		dst[0] = b.String()
	case types.Bytes:
		dst[0] = append([]byte{}, data...)
	case types.Boolean:
		dst[0] = data[0] != 0
	case types.TinyInt:
		dst[0] = int64(int8(data[0]))
	case types.SmallInt:
		dst[0] = int64(int16(f.order.Uint16(data)))
	case types.Int:
		dst[0] = int64(int32(f.order.Uint32(data)))
	case types.BigInt:
		dst[0] = int64(f.order.Uint64(data))
	case types.Float:
		dst[0] = float64(math.Float32frombits(f.order.Uint32(data)))
	case types.Double:
		dst[0] = math.Float64frombits(f.order.Uint64(data))
	}
	return 0, nil
}

// encode writes the column's value; a NULL is a nil message (a Kafka
// tombstone, an empty line in a file).
func (f *rawFormat) encodeValue(dst []byte, row []any, idx []int) ([]byte, error) {
	v := row[idx[0]]
	if v == nil {
		return nil, nil
	}
	if dst == nil {
		dst = []byte{} // an empty value is no tombstone
	}
	switch f.field.Type.Kind {
	case types.String:
		s := v.(string)
		if !f.latin1 {
			return append(dst, s...), nil
		}
		for _, r := range s {
			if r >= 0x100 || f.ascii && r >= 0x80 {
				r = '?' // Java's String.getBytes replacement
			}
			dst = append(dst, byte(r))
		}
		return dst, nil
	case types.Bytes:
		return append(dst, v.([]byte)...), nil
	case types.Boolean:
		if v.(bool) {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case types.TinyInt:
		return append(dst, byte(v.(int64))), nil
	case types.SmallInt:
		return f.order.AppendUint16(dst, uint16(v.(int64))), nil
	case types.Int:
		return f.order.AppendUint32(dst, uint32(v.(int64))), nil
	case types.BigInt:
		return f.order.AppendUint64(dst, uint64(v.(int64))), nil
	case types.Float:
		return f.order.AppendUint32(dst, math.Float32bits(float32(v.(float64)))), nil
	case types.Double:
		return f.order.AppendUint64(dst, math.Float64bits(v.(float64))), nil
	}
	return nil, fmt.Errorf("the 'raw' format cannot write %s", f.field.Type.Plain())
}
