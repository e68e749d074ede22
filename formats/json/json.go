// Package json is the JSON format (Flink's format = 'json'): records as
// JSON objects decoded into Go values with encoding/json's rules (field
// names from `json` tags, case-insensitive matching, unknown fields
// ignored), and Go values written back as JSON.
//
// Two policies, under Flink's option names:
//
//   - fail-on-missing-field (default false): a struct field absent from the
//     record's object fails the record (formats.ErrMissingField). Fields
//     tagged omitempty or omitzero are optional. Nested structs are checked
//     too; elements of slices and maps are not.
//   - ignore-parse-errors (default false): a record that is not JSON is
//     skipped (formats.ErrSkip) instead of failing, and a field whose value
//     has the wrong type is left at its zero value (Flink: set to null).
//
// As in Flink, the two cannot both be on, and a record without bytes (a
// Kafka tombstone) is skipped.
package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice/sluice/formats"
)

// Option keys, as in Flink's JSON format ('json.' prefixed in a table's
// WITH clause).
const (
	KeyFailOnMissingField = "fail-on-missing-field"
	KeyIgnoreParseErrors  = "ignore-parse-errors"
)

// Options configure the format.
type Options struct {
	// FailOnMissingField is fail-on-missing-field. Default false.
	FailOnMissingField bool
	// IgnoreParseErrors is ignore-parse-errors. Default false.
	IgnoreParseErrors bool
}

// Validate reports every problem of o.
func (o Options) Validate() error {
	if o.FailOnMissingField && o.IgnoreParseErrors {
		return fmt.Errorf("%w: %s and %s cannot both be true", ErrInvalidOptions, KeyFailOnMissingField, KeyIgnoreParseErrors)
	}
	return nil
}

// ErrInvalidOptions: the options are wrong.
var ErrInvalidOptions = errors.New("json: invalid options")

// ParseOptions reads Options from Flink-style keys, with or without the
// "json." prefix; values are "true" or "false". Unknown keys are problems.
func ParseOptions(kv map[string]string) (Options, error) {
	var o Options
	var problems []string
	for k, v := range kv {
		dst := (*bool)(nil)
		switch strings.TrimPrefix(k, "json.") {
		case KeyFailOnMissingField:
			dst = &o.FailOnMissingField
		case KeyIgnoreParseErrors:
			dst = &o.IgnoreParseErrors
		default:
			problems = append(problems, fmt.Sprintf("unknown option %q", k))
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s = %q is not true or false", k, v))
			continue
		}
		*dst = b
	}
	if err := o.Validate(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), ErrInvalidOptions.Error()+": "))
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return Options{}, fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
	}
	return o, nil
}

// Format reads and writes T as JSON. It is safe for concurrent use.
type Format[T any] struct {
	opts     Options
	required *fieldSet // nil unless FailOnMissingField and T is a struct
}

// New returns the format of T.
func New[T any](opts Options) (*Format[T], error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &Format[T]{opts: opts}
	if opts.FailOnMissingField {
		f.required = fieldsOf(reflect.TypeFor[T](), map[reflect.Type]*fieldSet{})
	}
	return f, nil
}

// MustNew is New for options known to be valid; it panics otherwise.
func MustNew[T any](opts Options) *Format[T] {
	f, err := New[T](opts)
	if err != nil {
		panic(err)
	}
	return f
}

// Deserialize implements formats.Deserializer.
func (f *Format[T]) Deserialize(_ string, data []byte) (T, error) {
	var v T
	if data == nil {
		return v, &formats.Error{Format: "json", Op: "decode", Reason: "record has no value", Kind: formats.ErrSkip}
	}
	if err := stdjson.Unmarshal(data, &v); err != nil {
		var te *stdjson.UnmarshalTypeError
		if f.opts.IgnoreParseErrors && errors.As(err, &te) {
			return v, nil // the field is left at its zero value
		}
		e := decodeError(err)
		if f.opts.IgnoreParseErrors {
			e.Kind = formats.ErrSkip
		}
		return v, e
	}
	if f.required != nil {
		if path := f.required.missing(data); path != "" {
			return v, &formats.Error{Format: "json", Op: "decode", Reason: fmt.Sprintf("field %q is missing (%s)", path, KeyFailOnMissingField),
				Kind: formats.ErrMissingField}
		}
	}
	return v, nil
}

// Serialize implements formats.Serializer.
func (f *Format[T]) Serialize(_ string, v T) ([]byte, error) {
	b, err := stdjson.Marshal(v)
	if err != nil {
		reason := fmt.Sprintf("%T", err)
		var ue *stdjson.UnsupportedTypeError
		var uv *stdjson.UnsupportedValueError
		var me *stdjson.MarshalerError
		switch {
		case errors.As(err, &ue):
			reason = fmt.Sprintf("Go type %v cannot be written as JSON", ue.Type)
		case errors.As(err, &uv):
			reason = fmt.Sprintf("a %v value cannot be written as JSON (NaN, infinity or a cycle)", uv.Value.Type())
		case errors.As(err, &me):
			reason = fmt.Sprintf("MarshalJSON of %v failed", me.Type)
		}
		return nil, &formats.Error{Format: "json", Op: "encode", Reason: reason, Kind: formats.ErrEncode, Err: err}
	}
	return b, nil
}

// decodeError describes err without quoting the payload: encoding/json's
// messages quote a character or a number of it.
func decodeError(err error) *formats.Error {
	e := &formats.Error{Format: "json", Op: "decode", Kind: formats.ErrMalformed, Err: err}
	var se *stdjson.SyntaxError
	var te *stdjson.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		e.Reason = fmt.Sprintf("invalid JSON at byte offset %d", se.Offset)
	case errors.As(err, &te):
		kind, _, _ := strings.Cut(te.Value, " ") // "number 300" quotes the number
		field := te.Field
		if field == "" {
			field = "(the record)"
		}
		e.Reason = fmt.Sprintf("field %q: a JSON %s cannot be read into Go %v", field, kind, te.Type)
	default:
		e.Reason = fmt.Sprintf("cannot decode (%T)", err)
	}
	return e
}

// fieldSet is the fields of a struct that fail-on-missing-field requires.
type fieldSet struct {
	fields []field
	exact  map[string]int
}

type field struct {
	name     string
	required bool
	nested   *fieldSet // a struct-valued field's own fields
}

var unmarshalerType = reflect.TypeFor[stdjson.Unmarshaler]()

// fieldsOf follows encoding/json's rules for the names of t's fields (tags,
// "-", embedded structs promoted); nil when t is not a struct.
func fieldsOf(t reflect.Type, seen map[reflect.Type]*fieldSet) *fieldSet {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	if fs, ok := seen[t]; ok {
		return fs // a recursive type: checked to the depth of the record
	}
	fs := &fieldSet{exact: map[string]int{}}
	seen[t] = fs
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					add(et)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
			fs.exact[name] = len(fs.fields)
			fs.fields = append(fs.fields, field{name: name, required: !optional, nested: fieldsOf(sf.Type, seen)})
		}
	}
	add(t)
	return fs
}

// missing returns the path of the first required field absent from the
// object obj (valid JSON), "" when none is. A value that is not an object
// (null included) has nothing missing.
func (fs *fieldSet) missing(obj []byte) string {
	var found [64]bool
	seen := found[:0]
	if len(fs.fields) <= len(found) {
		seen = found[:len(fs.fields)]
	} else {
		seen = make([]bool, len(fs.fields))
	}
	var nestedMissing string
	ok := members(obj, func(key, val []byte) {
		i, hit := fs.exact[string(key)]
		if !hit {
			for j := range fs.fields {
				if strings.EqualFold(fs.fields[j].name, string(key)) {
					i, hit = j, true
					break
				}
			}
		}
		if !hit {
			return
		}
		seen[i] = true
		if n := fs.fields[i].nested; n != nil && nestedMissing == "" {
			if p := n.missing(val); p != "" {
				nestedMissing = fs.fields[i].name + "." + p
			}
		}
	})
	if !ok {
		return ""
	}
	for i, f := range fs.fields {
		if f.required && !seen[i] {
			return f.name
		}
	}
	return nestedMissing
}

// members calls fn with each key (unescaped) and raw value of the object b,
// which is valid JSON (encoding/json has read it); false when b is not an
// object.
func members(b []byte, fn func(key, val []byte)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return true
		}
		if b[i] == ',' {
			i++
			continue
		}
		end := skipString(b, i)
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if stdjson.Unmarshal(b[i:end], &s) == nil {
				key = []byte(s)
			}
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the colon
		vend := skipValue(b, i)
		fn(key, b[i:vend])
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}
