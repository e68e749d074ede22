// Package codec is Sluice's canonical binary encoding of Go values, used
// for everything that outlives a process: checkpointed and savepointed
// state, source split positions, sink committables. The encoding depends
// only on a value's type and content (map entries are sorted), so a
// savepoint written by one state backend restores into another.
//
// Supported: booleans, integers, floats, complex numbers, strings, arrays,
// slices, maps, structs (all fields, exported or not), pointers, and types
// implementing encoding.BinaryMarshaler and BinaryUnmarshaler (time.Time).
// Interfaces, channels, functions and unsafe pointers are rejected when
// the codec is built, with the path to the offending field.
package codec

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"unsafe"
)

// ErrCorrupt is wrapped by decoding errors.
var ErrCorrupt = errors.New("codec: corrupt data")

// Codec encodes and decodes values of type T.
type Codec[T any] struct {
	enc encFn
	dec decFn
	typ reflect.Type
}

type encFn func(b []byte, v reflect.Value) []byte
type decFn func(d *decoder, v reflect.Value) error

type decoder struct {
	b   []byte
	off int
}

// For builds the codec of T.
func For[T any]() (*Codec[T], error) {
	t := reflect.TypeFor[T]()
	enc, dec, err := build(t, t.String(), map[reflect.Type]*lazy{})
	if err != nil {
		return nil, err
	}
	return &Codec[T]{enc: enc, dec: dec, typ: t}, nil
}

// MustFor is For for types known to be supported; it panics otherwise.
func MustFor[T any]() *Codec[T] {
	c, err := For[T]()
	if err != nil {
		panic(err)
	}
	return c
}

// Append appends the encoding of v to b.
func (c *Codec[T]) Append(b []byte, v T) []byte {
	return c.enc(b, reflect.ValueOf(&v).Elem())
}

// Decode decodes one value from the front of b and returns the rest.
func (c *Codec[T]) Decode(b []byte) (T, []byte, error) {
	var v T
	d := &decoder{b: b}
	if err := c.dec(d, reflect.ValueOf(&v).Elem()); err != nil {
		return v, nil, fmt.Errorf("decoding %s: %w", c.typ, err)
	}
	return v, b[d.off:], nil
}

// AppendValues appends the encodings of vs one after another (no count) to
// b. Unlike calling Append per value it allocates nothing per value.
func (c *Codec[T]) AppendValues(b []byte, vs []T) []byte {
	if len(vs) == 0 {
		return b
	}
	rv := reflect.ValueOf(vs)
	for i := range vs {
		b = c.enc(b, rv.Index(i))
	}
	return b
}

// DecodeValues decodes len(dst) values from the front of b into dst,
// overwriting them, and returns the rest of b.
func (c *Codec[T]) DecodeValues(b []byte, dst []T) ([]byte, error) {
	if len(dst) == 0 {
		return b, nil
	}
	d := decoder{b: b}
	rv := reflect.ValueOf(dst)
	for i := range dst {
		if err := c.dec(&d, rv.Index(i)); err != nil {
			return nil, fmt.Errorf("decoding %s (value %d of %d): %w", c.typ, i, len(dst), err)
		}
	}
	return b[d.off:], nil
}

// lazy breaks recursion for self-referential types.
type lazy struct {
	enc encFn
	dec decFn
}

var (
	binMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

func build(t reflect.Type, path string, seen map[reflect.Type]*lazy) (encFn, decFn, error) {
	if l, ok := seen[t]; ok {
		return func(b []byte, v reflect.Value) []byte { return l.enc(b, v) },
			func(d *decoder, v reflect.Value) error { return l.dec(d, v) }, nil
	}
	if t.Implements(binMarshaler) && reflect.PointerTo(t).Implements(binUnmarshaler) {
		return func(b []byte, v reflect.Value) []byte {
				data, err := v.Interface().(encoding.BinaryMarshaler).MarshalBinary()
				if err != nil {
					panic(fmt.Sprintf("codec: %s.MarshalBinary: %v", t, err)) // only for broken marshalers
				}
				b = binary.AppendUvarint(b, uint64(len(data)))
				return append(b, data...)
			}, func(d *decoder, v reflect.Value) error {
				data, err := d.bytes()
				if err != nil {
					return err
				}
				return v.Addr().Interface().(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
			}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte {
				if v.Bool() {
					return append(b, 1)
				}
				return append(b, 0)
			}, func(d *decoder, v reflect.Value) error {
				x, err := d.byte()
				if err != nil {
					return err
				}
				if x > 1 {
					return fmt.Errorf("%w: bool byte %d", ErrCorrupt, x)
				}
				v.SetBool(x == 1)
				return nil
			}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) []byte { return binary.AppendVarint(b, v.Int()) },
			func(d *decoder, v reflect.Value) error {
				x, err := d.varint()
				if err != nil {
					return err
				}
				if v.OverflowInt(x) {
					return fmt.Errorf("%w: %d overflows %s", ErrCorrupt, x, t)
				}
				v.SetInt(x)
				return nil
			}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b []byte, v reflect.Value) []byte { return binary.AppendUvarint(b, v.Uint()) },
			func(d *decoder, v reflect.Value) error {
				x, err := d.uvarint()
				if err != nil {
					return err
				}
				if v.OverflowUint(x) {
					return fmt.Errorf("%w: %d overflows %s", ErrCorrupt, x, t)
				}
				v.SetUint(x)
				return nil
			}, nil
	case reflect.Float32, reflect.Float64:
		return func(b []byte, v reflect.Value) []byte {
				return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
			}, func(d *decoder, v reflect.Value) error {
				x, err := d.fixed64()
				if err != nil {
					return err
				}
				v.SetFloat(math.Float64frombits(x))
				return nil
			}, nil
	case reflect.Complex64, reflect.Complex128:
		return func(b []byte, v reflect.Value) []byte {
				c := v.Complex()
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(real(c)))
				return binary.LittleEndian.AppendUint64(b, math.Float64bits(imag(c)))
			}, func(d *decoder, v reflect.Value) error {
				r, err := d.fixed64()
				if err != nil {
					return err
				}
				i, err := d.fixed64()
				if err != nil {
					return err
				}
				v.SetComplex(complex(math.Float64frombits(r), math.Float64frombits(i)))
				return nil
			}, nil
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte {
				s := v.String()
				b = binary.AppendUvarint(b, uint64(len(s)))
				return append(b, s...)
			}, func(d *decoder, v reflect.Value) error {
				data, err := d.bytes()
				if err != nil {
					return err
				}
				v.SetString(string(data))
				return nil
			}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return func(b []byte, v reflect.Value) []byte {
					if v.IsNil() {
						return append(b, 0)
					}
					b = binary.AppendUvarint(b, uint64(v.Len())+1)
					return append(b, v.Bytes()...)
				}, func(d *decoder, v reflect.Value) error {
					n, err := d.length()
					if err != nil || n < 0 {
						return err
					}
					data, err := d.take(n)
					if err != nil {
						return err
					}
					v.SetBytes(append(make([]byte, 0, n), data...))
					return nil
				}, nil
		}
		l := &lazy{}
		seen[t] = l
		ee, ed, err := build(t.Elem(), path+"[]", seen)
		if err != nil {
			return nil, nil, err
		}
		l.enc = func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, 0)
			}
			b = binary.AppendUvarint(b, uint64(v.Len())+1)
			for i := 0; i < v.Len(); i++ {
				b = ee(b, v.Index(i))
			}
			return b
		}
		l.dec = func(d *decoder, v reflect.Value) error {
			n, err := d.length()
			if err != nil || n < 0 {
				return err
			}
			s := reflect.MakeSlice(t, n, n)
			for i := 0; i < n; i++ {
				if err := ed(d, s.Index(i)); err != nil {
					return err
				}
			}
			v.Set(s)
			return nil
		}
		return l.enc, l.dec, nil
	case reflect.Array:
		ee, ed, err := build(t.Elem(), path+"[]", seen)
		if err != nil {
			return nil, nil, err
		}
		return func(b []byte, v reflect.Value) []byte {
				for i := 0; i < v.Len(); i++ {
					b = ee(b, v.Index(i))
				}
				return b
			}, func(d *decoder, v reflect.Value) error {
				for i := 0; i < v.Len(); i++ {
					if err := ed(d, v.Index(i)); err != nil {
						return err
					}
				}
				return nil
			}, nil
	case reflect.Map:
		l := &lazy{}
		seen[t] = l
		ke, kd, err := build(t.Key(), path+"[key]", seen)
		if err != nil {
			return nil, nil, err
		}
		ve, vd, err := build(t.Elem(), path+"[value]", seen)
		if err != nil {
			return nil, nil, err
		}
		l.enc = func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, 0)
			}
			b = binary.AppendUvarint(b, uint64(v.Len())+1)
			type kv struct{ k, v []byte }
			entries := make([]kv, 0, v.Len())
			it := v.MapRange()
			for it.Next() {
				entries = append(entries, kv{ke(nil, it.Key()), ve(nil, it.Value())})
			}
			sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].k, entries[j].k) < 0 })
			for _, e := range entries {
				b = append(append(b, e.k...), e.v...)
			}
			return b
		}
		l.dec = func(d *decoder, v reflect.Value) error {
			n, err := d.length()
			if err != nil || n < 0 {
				return err
			}
			m := reflect.MakeMapWithSize(t, n)
			for i := 0; i < n; i++ {
				k := reflect.New(t.Key()).Elem()
				if err := kd(d, k); err != nil {
					return err
				}
				e := reflect.New(t.Elem()).Elem()
				if err := vd(d, e); err != nil {
					return err
				}
				m.SetMapIndex(k, e)
			}
			v.Set(m)
			return nil
		}
		return l.enc, l.dec, nil
	case reflect.Struct:
		l := &lazy{}
		seen[t] = l
		n := t.NumField()
		encs := make([]encFn, n)
		decs := make([]decFn, n)
		for i := 0; i < n; i++ {
			f := t.Field(i)
			e, d, err := build(f.Type, path+"."+f.Name, seen)
			if err != nil {
				return nil, nil, err
			}
			encs[i], decs[i] = e, d
		}
		l.enc = func(b []byte, v reflect.Value) []byte {
			v = addressable(v)
			for i, e := range encs {
				b = e(b, settable(v.Field(i)))
			}
			return b
		}
		l.dec = func(d *decoder, v reflect.Value) error {
			for i, dec := range decs {
				if err := dec(d, settable(v.Field(i))); err != nil {
					return err
				}
			}
			return nil
		}
		return l.enc, l.dec, nil
	case reflect.Pointer:
		l := &lazy{}
		seen[t] = l
		ee, ed, err := build(t.Elem(), "*"+path, seen)
		if err != nil {
			return nil, nil, err
		}
		l.enc = func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, 0)
			}
			return ee(append(b, 1), v.Elem())
		}
		l.dec = func(d *decoder, v reflect.Value) error {
			x, err := d.byte()
			if err != nil {
				return err
			}
			switch x {
			case 0:
				v.SetZero()
				return nil
			case 1:
				p := reflect.New(t.Elem())
				if err := ed(d, p.Elem()); err != nil {
					return err
				}
				v.Set(p)
				return nil
			}
			return fmt.Errorf("%w: pointer tag %d", ErrCorrupt, x)
		}
		return l.enc, l.dec, nil
	}
	return nil, nil, fmt.Errorf("codec: %s (%s) cannot be checkpointed: %s values have no stable encoding; use concrete data types", path, t, t.Kind())
}

// addressable returns an addressable copy of v when v is not addressable
// (so unexported fields can be read through unsafe).
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// settable gives access to unexported fields.
func settable(f reflect.Value) reflect.Value {
	if f.CanSet() || !f.CanAddr() {
		return f
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

func (d *decoder) byte() (byte, error) {
	if d.off >= len(d.b) {
		return 0, fmt.Errorf("%w: unexpected end of data", ErrCorrupt)
	}
	x := d.b[d.off]
	d.off++
	return x, nil
}

func (d *decoder) varint() (int64, error) {
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint at byte %d", ErrCorrupt, d.off)
	}
	d.off += n
	return x, nil
}

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad uvarint at byte %d", ErrCorrupt, d.off)
	}
	d.off += n
	return x, nil
}

func (d *decoder) fixed64() (uint64, error) {
	b, err := d.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, fmt.Errorf("%w: %d bytes wanted at byte %d, %d left", ErrCorrupt, n, d.off, len(d.b)-d.off)
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)-d.off) {
		return nil, fmt.Errorf("%w: length %d beyond the data", ErrCorrupt, n)
	}
	return d.take(int(n))
}

// length decodes a nil-able length: -1 for nil.
func (d *decoder) length() (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return -1, nil
	}
	if n-1 > uint64(len(d.b)-d.off) {
		// Every element takes at least one byte.
		return 0, fmt.Errorf("%w: %d elements announced, %d bytes left", ErrCorrupt, n-1, len(d.b)-d.off)
	}
	return int(n - 1), nil
}
