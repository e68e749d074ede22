package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/task"
)

// ErrRecordKind is wrapped by the errors of handing a record of one kind
// where a type of another is expected (a Row to a Bytes output).
var ErrRecordKind = errors.New("core: record of the wrong kind")

// ErrCorruptRecord is wrapped by the errors of decoding a record.
var ErrCorruptRecord = errors.New("core: corrupt record")

// Kind is how a record type's values are represented.
type Kind int

// Record kinds.
const (
	// KindBytes records are byte strings (Beam's encoded elements).
	KindBytes Kind = iota + 1
	// KindRow records are rows of a schema (the SQL planner's).
	KindRow
	// KindValue records are Go values of one type (TypeOf).
	KindValue
)

func (k Kind) String() string {
	switch k {
	case KindBytes:
		return "BYTES"
	case KindRow:
		return "ROW"
	case KindValue:
		return "VALUE"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Record is one record as untyped operators see it: a byte string, a row
// or a Go value, by its type's Kind. It is passed by value and holds no
// allocation of its own: a Bytes record is the slice it was made from.
type Record struct {
	kind  Kind
	b     []byte
	vals  []any
	rkind RowKind
	v     any
}

// BytesRecord is a record of bytes b (not copied).
func BytesRecord(b []byte) Record { return Record{kind: KindBytes, b: b} }

// RowRecord is a record of row r (its values are not copied).
func RowRecord(r Row) Record { return Record{kind: KindRow, vals: r.Values, rkind: r.Kind} }

// ValueRecord is a record of the Go value v (for types made by TypeOf).
func ValueRecord(v any) Record { return Record{kind: KindValue, v: v} }

// Kind is the record's kind (0 for the zero Record).
func (r Record) Kind() Kind { return r.kind }

// Bytes is a Bytes record's bytes (nil for other kinds). They may be
// shared with other operators of the chain: do not modify them.
func (r Record) Bytes() []byte { return r.b }

// Row is a Row record's row (the zero Row for other kinds).
func (r Record) Row() Row { return Row{Kind: r.rkind, Values: r.vals} }

// Value is a Value record's Go value (nil for other kinds).
func (r Record) Value() any { return r.v }

func (r Record) String() string {
	switch r.kind {
	case KindBytes:
		return fmt.Sprintf("bytes(%q)", r.b)
	case KindRow:
		return r.Row().String()
	case KindValue:
		return fmt.Sprintf("value(%v)", r.v)
	}
	return "record()"
}

// Type describes the records of one stream: the serializer contract
// between the front end that produces them and the engine that moves,
// stores and checkpoints them. It names the type (for plans and graph
// fingerprints), gives the engine its batch codec for the network
// (TypeOps), and encodes single records for state and checkpoints.
//
// Make one with Bytes, RowType or TypeOf. Types are immutable and may be
// shared between jobs and goroutines.
type Type struct{ impl typeImpl }

// Name is the type's name in plans and fingerprints.
func (t Type) Name() string { return t.impl.name() }

// Kind is how the type's records are represented.
func (t Type) Kind() Kind { return t.impl.kind() }

// Ops is the engine's plumbing for the type: typed outputs, writers,
// dispatchers and the network batch codec.
func (t Type) Ops() task.TypeOps { return t.impl.ops() }

// Schema is a Row type's schema (nil for other kinds).
func (t Type) Schema() *Schema { return t.impl.schema() }

// Valid reports whether t was made by a constructor (the zero Type is not).
func (t Type) Valid() bool { return t.impl != nil }

// Encode appends the encoding of r, a record of this type, to dst: the
// form in which operators keep records in state and checkpoints. The
// encoding is not self-delimiting; frame it when storing several.
func (t Type) Encode(dst []byte, r Record) ([]byte, error) { return t.impl.encode(dst, r) }

// Decode decodes a record of this type from exactly b. A Bytes record is
// b itself (not copied).
func (t Type) Decode(b []byte) (Record, error) { return t.impl.decode(b) }

// Check reports whether r is a record of this type: its kind, and for a
// row its arity and field types. Emitting a record checks it.
func (t Type) Check(r Record) error { return t.impl.check(r) }

// typeImpl is a Type's implementation; valueType[T] is the only one: every
// record type is a Go type for the engine.
type typeImpl interface {
	name() string
	kind() Kind
	ops() task.TypeOps
	schema() *Schema
	encode(dst []byte, r Record) ([]byte, error)
	decode(b []byte) (Record, error)
	check(r Record) error
	// input returns a task.Input[T] calling fn with each record.
	input(fn func(r Record, ts int64) error) any
	// output returns the emitter of out, a task.Output[T].
	output(out any) (emit func(r Record, ts int64) error, wm func(int64) error)
	// partitioner returns the task.KeyPartitioner[T] of key.
	partitioner(key KeySelector) any
}

// valueType is a record type whose records are Go values of type T.
type valueType[T any] struct {
	n   string
	k   Kind
	sch *Schema
	op  task.TypeOps
	to  func(T) Record
	// from returns a record's value; ok is false for another kind.
	from func(Record) (T, bool)
	// chk checks a value of the right kind (nil: any is fine).
	chk func(T) error
	enc func(dst []byte, v T) ([]byte, error)
	dec func(b []byte) (T, error)
}

func (t *valueType[T]) name() string      { return t.n }
func (t *valueType[T]) kind() Kind        { return t.k }
func (t *valueType[T]) ops() task.TypeOps { return t.op }
func (t *valueType[T]) schema() *Schema   { return t.sch }

func (t *valueType[T]) value(r Record) (T, error) {
	v, ok := t.from(r)
	if !ok {
		return v, fmt.Errorf("%w: %s record for type %s", ErrRecordKind, r.kind, t.n)
	}
	return v, nil
}

func (t *valueType[T]) check(r Record) error {
	v, err := t.value(r)
	if err != nil || t.chk == nil {
		return err
	}
	return t.chk(v)
}

func (t *valueType[T]) encode(dst []byte, r Record) ([]byte, error) {
	v, err := t.value(r)
	if err != nil {
		return dst, err
	}
	return t.enc(dst, v)
}

func (t *valueType[T]) decode(b []byte) (Record, error) {
	v, err := t.dec(b)
	if err != nil {
		return Record{}, err
	}
	return t.to(v), nil
}

type inputFunc[T any] func(v T, ts int64) error

func (f inputFunc[T]) ProcessElement(v T, ts int64) error { return f(v, ts) }

func (t *valueType[T]) input(fn func(Record, int64) error) any {
	to := t.to
	return inputFunc[T](func(v T, ts int64) error { return fn(to(v), ts) })
}

func (t *valueType[T]) output(out any) (func(Record, int64) error, func(int64) error) {
	o := out.(task.Output[T]) // the engine builds outputs of the factory's types
	emit := func(r Record, ts int64) error {
		v, ok := t.from(r)
		if !ok {
			return fmt.Errorf("%w: %s record emitted to an output of type %s", ErrRecordKind, r.kind, t.n)
		}
		if t.chk != nil {
			if err := t.chk(v); err != nil {
				return err
			}
		}
		return o.Collect(v, ts)
	}
	return emit, o.EmitWatermark
}

// keyPartitioner routes records of T by the key group of their encoded key.
type keyPartitioner[T any] struct {
	to  func(T) Record
	key KeySelector
}

func (p keyPartitioner[T]) NewKeyGroupFunc(maxParallelism int) func(T) int {
	var buf []byte
	return func(v T) int {
		buf = p.key(p.to(v), buf[:0])
		return keygroup.ForEncodedKey(buf, maxParallelism)
	}
}

func (t *valueType[T]) partitioner(key KeySelector) any {
	return keyPartitioner[T]{to: t.to, key: key}
}

// bytesType is the type of Bytes records.
var bytesType = &valueType[[]byte]{
	n:    "bytes",
	k:    KindBytes,
	op:   task.CustomType("bytes", task.ValuesCodec[[]byte]{Append: appendBytesValues, Decode: decodeBytesValues}),
	to:   BytesRecord,
	from: func(r Record) ([]byte, bool) { return r.b, r.kind == KindBytes },
	enc:  func(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil },
	dec:  func(b []byte) ([]byte, error) { return b, nil },
}

// Bytes is the type of byte-string records. Within a chain a record is
// its slice, handed on without a copy; across the network a batch is one
// copy of the received bytes that its records share (an allocation per
// batch, none per record).
func Bytes() Type { return Type{bytesType} }

// appendBytesValues encodes byte records as uvarint length, then bytes.
func appendBytesValues(dst []byte, vs [][]byte) []byte {
	for _, v := range vs {
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

func decodeBytesValues(src []byte, dst [][]byte) ([]byte, error) {
	if len(dst) == 0 {
		return src, nil
	}
	// One copy for the batch: the exchange reuses src, records keep arena.
	arena := append([]byte(nil), src...)
	off := 0
	for i := range dst {
		n, k := binary.Uvarint(arena[off:])
		if k <= 0 || n > uint64(len(arena)-off-k) {
			return nil, fmt.Errorf("%w: bytes record %d of %d: bad length", ErrCorruptRecord, i, len(dst))
		}
		off += k
		dst[i] = arena[off : off+int(n) : off+int(n)]
		off += int(n)
	}
	return src[off:], nil
}

// TypeOf is the type of records that are Go values of type T: the bridge
// from the typed API. Its engine plumbing is task.TypeOf[T] itself, so a
// typed operator's records keep the engine's fast path (no allocation per
// record for numbers and plain structs, in a chain and across the
// network). Untyped operators see them as ValueRecord(v) (boxed: one
// allocation per record that is not a pointer). State and checkpoints
// encode them canonically (internal/runtime/codec); a type without a canonical
// encoding (interfaces, funcs, channels) fails to encode, naming itself.
func TypeOf[T any]() Type {
	ops := task.TypeOf[T]()
	var once sync.Once
	var c *codec.Codec[T]
	var cerr error
	cdc := func() (*codec.Codec[T], error) {
		once.Do(func() { c, cerr = codec.For[T]() })
		return c, cerr
	}
	t := &valueType[T]{
		n:  ops.TypeName(),
		k:  KindValue,
		op: ops,
		to: func(v T) Record { return ValueRecord(v) },
		from: func(r Record) (T, bool) {
			v, ok := r.v.(T)
			return v, ok && r.kind == KindValue
		},
		enc: func(dst []byte, v T) ([]byte, error) {
			c, err := cdc()
			if err != nil {
				return dst, fmt.Errorf("core: records of type %s cannot be encoded: %w", ops.TypeName(), err)
			}
			return c.Append(dst, v), nil
		},
		dec: func(b []byte) (T, error) {
			var zero T
			c, err := cdc()
			if err != nil {
				return zero, fmt.Errorf("core: records of type %s cannot be decoded: %w", ops.TypeName(), err)
			}
			v, rest, err := c.Decode(b)
			if err != nil {
				return zero, fmt.Errorf("%w: %w", ErrCorruptRecord, err)
			}
			if len(rest) != 0 {
				return zero, fmt.Errorf("%w: %d bytes after a %s", ErrCorruptRecord, len(rest), ops.TypeName())
			}
			return v, nil
		},
	}
	return Type{t}
}
