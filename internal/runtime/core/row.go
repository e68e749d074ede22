package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sluice/sluice/internal/runtime/task"
)

// FieldType is the SQL type of a row field and, with it, the Go type of
// its values.
type FieldType int

// Field types. A NULL is a nil value in a field of any type.
const (
	// BigInt values are int64.
	BigInt FieldType = iota + 1
	// Double values are float64.
	Double
	// Varchar values are string.
	Varchar
	// Varbinary values are []byte.
	Varbinary
	// Boolean values are bool.
	Boolean
	// TimestampLTZ values are int64 epoch milliseconds (Flink's
	// TIMESTAMP_LTZ(3), the type of rowtime attributes).
	TimestampLTZ
)

func (f FieldType) String() string {
	switch f {
	case BigInt:
		return "BIGINT"
	case Double:
		return "DOUBLE"
	case Varchar:
		return "STRING"
	case Varbinary:
		return "BYTES"
	case Boolean:
		return "BOOLEAN"
	case TimestampLTZ:
		return "TIMESTAMP_LTZ(3)"
	}
	return fmt.Sprintf("FieldType(%d)", int(f))
}

// Field is one column of a schema.
type Field struct {
	Name string
	Type FieldType
}

// Schema is the fields of the rows of a Row type, in order.
type Schema struct {
	Fields []Field
}

// NewSchema returns a schema of fields, or the problems with them (every
// one at once): empty or duplicate names, unknown types.
func NewSchema(fields ...Field) (*Schema, error) {
	var errs []error
	seen := map[string]bool{}
	for i, f := range fields {
		if f.Name == "" {
			errs = append(errs, fmt.Errorf("core: field %d has no name", i))
		} else if seen[f.Name] {
			errs = append(errs, fmt.Errorf("core: field %q appears twice", f.Name))
		}
		seen[f.Name] = true
		if f.Type < BigInt || f.Type > TimestampLTZ {
			errs = append(errs, fmt.Errorf("core: field %q has unknown type %d", f.Name, int(f.Type)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Schema{Fields: append([]Field(nil), fields...)}, nil
}

// Index is the position of the field called name, or -1.
func (s *Schema) Index(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

func (s *Schema) String() string {
	var b strings.Builder
	b.WriteString("ROW<")
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` %s", f.Name, f.Type)
	}
	b.WriteString(">")
	return b.String()
}

// RowKind is a row's change in a changelog stream, as Flink's.
type RowKind uint8

// Row kinds. The zero value is Insert.
const (
	Insert       RowKind = iota // +I
	UpdateBefore                // -U
	UpdateAfter                 // +U
	Delete                      // -D
)

func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", uint8(k))
}

// Row is a record of a Row type: its change kind and one value per field
// of the schema (nil for NULL).
type Row struct {
	Kind   RowKind
	Values []any
}

func (r Row) String() string { return fmt.Sprintf("%s%v", r.Kind, r.Values) }

// Check reports whether r fits s: arity, kind and the Go type of every
// non-NULL value.
func (s *Schema) Check(r Row) error {
	if r.Kind > Delete {
		return fmt.Errorf("%w: row kind %d", ErrRecordKind, uint8(r.Kind))
	}
	if len(r.Values) != len(s.Fields) {
		return fmt.Errorf("%w: row of %d values for %s", ErrRecordKind, len(r.Values), s)
	}
	for i, v := range r.Values {
		if v == nil {
			continue
		}
		ok := false
		switch s.Fields[i].Type {
		case BigInt, TimestampLTZ:
			_, ok = v.(int64)
		case Double:
			_, ok = v.(float64)
		case Varchar:
			_, ok = v.(string)
		case Varbinary:
			_, ok = v.([]byte)
		case Boolean:
			_, ok = v.(bool)
		}
		if !ok {
			return fmt.Errorf("%w: field %q (%s) holds a %T", ErrRecordKind, s.Fields[i].Name, s.Fields[i].Type, v)
		}
	}
	return nil
}

// AppendRow appends the encoding of r, which must fit s (Check): the kind
// byte, then per field a presence byte (0 for NULL) and the value: BIGINT
// and TIMESTAMP_LTZ as zig-zag varints, DOUBLE as 8 little-endian bytes,
// STRING and BYTES as uvarint length and bytes, BOOLEAN as a byte.
func (s *Schema) AppendRow(dst []byte, r Row) []byte {
	dst = append(dst, byte(r.Kind))
	for i, v := range r.Values {
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		switch s.Fields[i].Type {
		case BigInt, TimestampLTZ:
			dst = binary.AppendVarint(dst, v.(int64))
		case Double:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.(float64)))
		case Varchar:
			x := v.(string)
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		case Varbinary:
			x := v.([]byte)
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		case Boolean:
			if v.(bool) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
	}
	return dst
}

// DecodeRow decodes one row from the front of b and returns the rest. The
// row's values do not alias b.
func (s *Schema) DecodeRow(b []byte) (Row, []byte, error) {
	bad := func(format string, args ...any) (Row, []byte, error) {
		return Row{}, nil, fmt.Errorf("%w: %s: %s", ErrCorruptRecord, s, fmt.Sprintf(format, args...))
	}
	if len(b) == 0 {
		return bad("no row kind")
	}
	r := Row{Kind: RowKind(b[0]), Values: make([]any, len(s.Fields))}
	if r.Kind > Delete {
		return bad("row kind %d", b[0])
	}
	b = b[1:]
	for i, f := range s.Fields {
		if len(b) == 0 {
			return bad("field %q missing", f.Name)
		}
		present := b[0]
		b = b[1:]
		if present == 0 {
			continue
		}
		switch f.Type {
		case BigInt, TimestampLTZ:
			v, k := binary.Varint(b)
			if k <= 0 {
				return bad("field %q: bad integer", f.Name)
			}
			r.Values[i], b = v, b[k:]
		case Double:
			if len(b) < 8 {
				return bad("field %q: short double", f.Name)
			}
			r.Values[i], b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		case Varchar, Varbinary:
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return bad("field %q: bad length", f.Name)
			}
			data := b[k : k+int(n)]
			if f.Type == Varchar {
				r.Values[i] = string(data)
			} else {
				r.Values[i] = append(make([]byte, 0, len(data)), data...)
			}
			b = b[k+int(n):]
		case Boolean:
			if len(b) == 0 || b[0] > 1 {
				return bad("field %q: bad boolean", f.Name)
			}
			r.Values[i], b = b[0] == 1, b[1:]
		}
	}
	return r, b, nil
}

// RowType is the type of rows of schema s. Records are checked against the
// schema when emitted; batches and state use AppendRow's encoding.
func RowType(s *Schema) Type {
	name := s.String()
	t := &valueType[Row]{
		n:    name,
		k:    KindRow,
		sch:  s,
		to:   RowRecord,
		from: func(r Record) (Row, bool) { return r.Row(), r.kind == KindRow },
		chk:  s.Check,
		enc: func(dst []byte, v Row) ([]byte, error) {
			if err := s.Check(v); err != nil {
				return dst, err
			}
			return s.AppendRow(dst, v), nil
		},
		dec: func(b []byte) (Row, error) {
			r, rest, err := s.DecodeRow(b)
			if err != nil {
				return Row{}, err
			}
			if len(rest) != 0 {
				return Row{}, fmt.Errorf("%w: %d bytes after a row of %s", ErrCorruptRecord, len(rest), s)
			}
			return r, nil
		},
	}
	t.op = taskRowOps(name, s)
	return Type{t}
}

// taskRowOps is the engine plumbing of rows of s: batches encode every row
// with AppendRow.
func taskRowOps(name string, s *Schema) task.TypeOps {
	return task.CustomType(name, task.ValuesCodec[Row]{
		Append: func(dst []byte, vs []Row) []byte {
			for _, r := range vs {
				dst = s.AppendRow(dst, r) // checked when emitted
			}
			return dst
		},
		Decode: func(src []byte, dst []Row) ([]byte, error) {
			for i := range dst {
				r, rest, err := s.DecodeRow(src)
				if err != nil {
					return nil, fmt.Errorf("row %d of %d: %w", i, len(dst), err)
				}
				dst[i], src = r, rest
			}
			return src, nil
		},
	})
}
