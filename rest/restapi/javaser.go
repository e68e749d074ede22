package restapi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// Java's Object Serialization Stream Protocol, as far as Flink's REST
// client needs it from Sluice: the "serialized-throwable" of a failure
// cause (an org.apache.flink.util.SerializedThrowable) and the
// "accumulator-results" of a job result (each an
// org.apache.flink.util.OptionalFailure of a java.lang.Long or
// java.lang.String). javaWriter writes them; javaAccumulator reads back
// what it writes, for Sluice's own client. The byte streams are those Java's
// ObjectOutputStream writes for the same objects, as the test vectors in
// testdata/javaser.txt (written by Java: go test -rewrite-java) check.

// Stream protocol constants (java.io.ObjectStreamConstants).
const (
	jMagic        = 0xaced
	jVersion      = 5
	jNull         = 0x70
	jReference    = 0x71
	jClassDesc    = 0x72
	jObject       = 0x73
	jString       = 0x74
	jArray        = 0x75
	jEndBlock     = 0x78
	jLongString   = 0x7c
	jBaseHandle   = 0x7e0000
	jWriteMethod  = 0x01 // SC_WRITE_METHOD: the class writes more after its fields
	jSerializable = 0x02 // SC_SERIALIZABLE
)

// javaClass is a class descriptor. Fields are in Java's serial order:
// primitive fields first, then by name.
type javaClass struct {
	name   string
	suid   int64
	flags  byte
	fields []javaField
	super  *javaClass
}

// javaField is a serializable field: typ is its type code ('J' long,
// 'L' object, '[' array), sig the JVM signature of an object field.
type javaField struct {
	typ       byte
	name, sig string
}

// The classes Sluice writes, with the serialVersionUIDs of Java 17 and
// Flink 2.x.
var (
	jThrowable = &javaClass{name: "java.lang.Throwable", suid: -3042686055658047285, flags: jSerializable | jWriteMethod, fields: []javaField{
		{'L', "cause", "Ljava/lang/Throwable;"},
		{'L', "detailMessage", "Ljava/lang/String;"},
		{'[', "stackTrace", "[Ljava/lang/StackTraceElement;"},
		{'L', "suppressedExceptions", "Ljava/util/List;"},
	}}
	jException           = &javaClass{name: "java.lang.Exception", suid: -3387516993124229948, flags: jSerializable, super: jThrowable}
	jSerializedThrowable = &javaClass{name: "org.apache.flink.util.SerializedThrowable", suid: 7284183123441947635, flags: jSerializable, super: jException,
		fields: []javaField{
			{'L', "fullStringifiedStackTrace", "Ljava/lang/String;"},
			{'L', "originalErrorClassName", "Ljava/lang/String;"},
			{'[', "serializedException", "[B"},
		}}
	jStackTraceArray = &javaClass{name: "[Ljava.lang.StackTraceElement;", suid: 0x02462a3c3cfd2239, flags: jSerializable}
	jEmptyList       = &javaClass{name: "java.util.Collections$EmptyList", suid: 0x7ab817b43ca79ede, flags: jSerializable}
	jOptionalFailure = &javaClass{name: "org.apache.flink.util.OptionalFailure", suid: 1, flags: jSerializable | jWriteMethod,
		fields: []javaField{{'L', "failureCause", "Ljava/lang/Throwable;"}}}
	jNumber = &javaClass{name: "java.lang.Number", suid: -8742448824652078965, flags: jSerializable}
	jLong   = &javaClass{name: "java.lang.Long", suid: 4290774380558885855, flags: jSerializable, super: jNumber,
		fields: []javaField{{'J', "value", ""}}}
)

// javaWriter writes one serialization stream. Handles are assigned as
// Java assigns them; class descriptors and field signatures (interned
// strings in Java) are written once and referred to after, value strings
// are written each time (Java's handle table is by identity).
type javaWriter struct {
	b       bytes.Buffer
	next    int32
	handles map[any]int32 // *javaClass or a signature string
}

func newJavaWriter() *javaWriter {
	w := &javaWriter{handles: map[any]int32{}}
	w.u16(jMagic)
	w.u16(jVersion)
	return w
}

func (w *javaWriter) u8(v byte)    { w.b.WriteByte(v) }
func (w *javaWriter) u16(v uint16) { w.b.Write(binary.BigEndian.AppendUint16(nil, v)) }
func (w *javaWriter) u32(v uint32) { w.b.Write(binary.BigEndian.AppendUint32(nil, v)) }
func (w *javaWriter) u64(v uint64) { w.b.Write(binary.BigEndian.AppendUint64(nil, v)) }

func (w *javaWriter) assign(key any) {
	if key != nil {
		w.handles[key] = w.next
	}
	w.next++
}

func (w *javaWriter) ref(key any) bool {
	h, ok := w.handles[key]
	if ok {
		w.u8(jReference)
		w.u32(uint32(jBaseHandle + h))
	}
	return ok
}

// modifiedUTF8 is s in Java's modified UTF-8: UTF-16 code units, NUL as
// two bytes, each surrogate as three.
func modifiedUTF8(s string) []byte {
	var out []byte
	for _, c := range utf16.Encode([]rune(s)) {
		switch {
		case c >= 1 && c <= 0x7f:
			out = append(out, byte(c))
		case c <= 0x7ff:
			out = append(out, byte(0xc0|c>>6), byte(0x80|c&0x3f))
		default:
			out = append(out, byte(0xe0|c>>12), byte(0x80|(c>>6)&0x3f), byte(0x80|c&0x3f))
		}
	}
	return out
}

// utf writes a short string (writeUTF): a class or field name.
func (w *javaWriter) utf(s string) {
	b := modifiedUTF8(s)
	w.u16(uint16(len(b)))
	w.b.Write(b)
}

// str writes a String object.
func (w *javaWriter) str(s string) {
	w.assign(nil)
	b := modifiedUTF8(s)
	if len(b) <= math.MaxUint16 {
		w.u8(jString)
		w.u16(uint16(len(b)))
	} else {
		w.u8(jLongString)
		w.u64(uint64(len(b)))
	}
	w.b.Write(b)
}

// signature writes a field's type string, once.
func (w *javaWriter) signature(sig string) {
	if w.ref(sig) {
		return
	}
	w.assign(sig)
	b := modifiedUTF8(sig)
	w.u8(jString)
	w.u16(uint16(len(b)))
	w.b.Write(b)
}

func (w *javaWriter) classDesc(c *javaClass) {
	if c == nil {
		w.u8(jNull)
		return
	}
	if w.ref(c) {
		return
	}
	w.u8(jClassDesc)
	w.assign(c)
	w.utf(c.name)
	w.u64(uint64(c.suid))
	w.u8(c.flags)
	w.u16(uint16(len(c.fields)))
	for _, f := range c.fields {
		w.u8(f.typ)
		w.utf(f.name)
		if f.typ == 'L' || f.typ == '[' {
			w.signature(f.sig)
		}
	}
	w.u8(jEndBlock) // no class annotation
	w.classDesc(c.super)
}

// object starts an object of class c; its field values follow, from the
// topmost serializable superclass down.
func (w *javaWriter) object(c *javaClass) {
	w.u8(jObject)
	w.classDesc(c)
	w.assign(nil)
}

func (w *javaWriter) bytes() []byte { return w.b.Bytes() }

// javaSerializedThrowable is Java's serialization of the Flink
// SerializedThrowable that stands for a failure that is no Java exception:
// class is its type, message its text, trace what Flink's client prints as
// its stack trace. It has no serialized original (Flink's client then
// uses the SerializedThrowable itself as the error), no stack frames and
// no cause; its message is Flink's "class: message".
func javaSerializedThrowable(class, message, trace string) []byte {
	w := newJavaWriter()
	w.object(jSerializedThrowable)
	// Throwable: cause, detailMessage, stackTrace, suppressedExceptions,
	// then the end of its writeObject.
	w.u8(jNull)
	w.str(class + ": " + message)
	w.u8(jArray)
	w.classDesc(jStackTraceArray)
	w.assign(nil)
	w.u32(0)
	w.object(jEmptyList)
	w.u8(jEndBlock)
	// SerializedThrowable: fullStringifiedStackTrace,
	// originalErrorClassName, serializedException.
	w.str(trace)
	w.str(class)
	w.u8(jNull)
	return w.bytes()
}

// javaAccumulator is Java's serialization of a Flink accumulator result,
// OptionalFailure.of(v), for an int64 (a java.lang.Long) or a string.
func javaAccumulator(v any) ([]byte, error) {
	w := newJavaWriter()
	w.object(jOptionalFailure)
	w.u8(jNull) // failureCause
	switch x := v.(type) {
	case int64:
		w.object(jLong)
		w.u64(uint64(x))
	case int:
		w.object(jLong)
		w.u64(uint64(int64(x)))
	case string:
		w.str(x)
	default:
		return nil, fmt.Errorf("rest: accumulator value %v is a %T: only integers and strings are sent", v, v)
	}
	w.u8(jEndBlock)
	return w.bytes(), nil
}

// errJavaStream is returned for a serialization stream javaAccumulator
// does not read.
var errJavaStream = errors.New("rest: not a serialized accumulator value of Sluice's")

// javaReader reads the subset of the protocol javaAccumulator writes.
type javaReader struct {
	b       []byte
	handles []any // *javaClass or string
}

func (r *javaReader) take(n int) ([]byte, error) {
	if n < 0 || len(r.b) < n {
		return nil, fmt.Errorf("%w: truncated", errJavaStream)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

func (r *javaReader) u8() (byte, error) {
	b, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *javaReader) u16() (int, error) {
	b, err := r.take(2)
	if err != nil {
		return 0, err
	}
	return int(binary.BigEndian.Uint16(b)), nil
}

func (r *javaReader) u32() (uint32, error) {
	b, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (r *javaReader) u64() (uint64, error) {
	b, err := r.take(8)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// decodeModifiedUTF8 is the inverse of modifiedUTF8.
func decodeModifiedUTF8(b []byte) (string, error) {
	var units []uint16
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			units = append(units, uint16(c))
			i++
		case c&0xe0 == 0xc0 && i+1 < len(b):
			units = append(units, uint16(c&0x1f)<<6|uint16(b[i+1]&0x3f))
			i += 2
		case c&0xf0 == 0xe0 && i+2 < len(b):
			units = append(units, uint16(c&0x0f)<<12|uint16(b[i+1]&0x3f)<<6|uint16(b[i+2]&0x3f))
			i += 3
		default:
			return "", fmt.Errorf("%w: malformed modified UTF-8", errJavaStream)
		}
	}
	s := string(utf16.Decode(units))
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: malformed modified UTF-8", errJavaStream)
	}
	return s, nil
}

func (r *javaReader) utf() (string, error) {
	n, err := r.u16()
	if err != nil {
		return "", err
	}
	b, err := r.take(n)
	if err != nil {
		return "", err
	}
	return decodeModifiedUTF8(b)
}

// content reads one content item: a string, null, a class descriptor or
// an object (returned as its *javaClass and primitive long value, the
// only field the classes read have).
func (r *javaReader) content() (any, error) {
	tc, err := r.u8()
	if err != nil {
		return nil, err
	}
	switch tc {
	case jNull:
		return nil, nil
	case jReference:
		h, err := r.u32()
		if err != nil {
			return nil, err
		}
		i := int64(h) - jBaseHandle
		if i < 0 || i >= int64(len(r.handles)) {
			return nil, fmt.Errorf("%w: reference to unknown handle %#x", errJavaStream, h)
		}
		return r.handles[i], nil
	case jString, jLongString:
		n := 0
		if tc == jString {
			n, err = r.u16()
		} else {
			var n64 uint64
			n64, err = r.u64()
			if n64 > uint64(len(r.b)) {
				return nil, fmt.Errorf("%w: truncated", errJavaStream)
			}
			n = int(n64)
		}
		if err != nil {
			return nil, err
		}
		b, err := r.take(n)
		if err != nil {
			return nil, err
		}
		s, err := decodeModifiedUTF8(b)
		if err != nil {
			return nil, err
		}
		r.handles = append(r.handles, s)
		return s, nil
	case jClassDesc:
		c := &javaClass{}
		r.handles = append(r.handles, c)
		if c.name, err = r.utf(); err != nil {
			return nil, err
		}
		suid, err := r.u64()
		if err != nil {
			return nil, err
		}
		c.suid = int64(suid)
		if c.flags, err = r.u8(); err != nil {
			return nil, err
		}
		n, err := r.u16()
		if err != nil {
			return nil, err
		}
		for range n {
			var f javaField
			if f.typ, err = r.u8(); err != nil {
				return nil, err
			}
			if f.name, err = r.utf(); err != nil {
				return nil, err
			}
			if f.typ == 'L' || f.typ == '[' {
				sig, err := r.content()
				if err != nil {
					return nil, err
				}
				s, ok := sig.(string)
				if !ok {
					return nil, fmt.Errorf("%w: field %s has no type", errJavaStream, f.name)
				}
				f.sig = s
			}
			c.fields = append(c.fields, f)
		}
		if end, err := r.u8(); err != nil || end != jEndBlock {
			return nil, fmt.Errorf("%w: class %s has annotations", errJavaStream, c.name)
		}
		super, err := r.content()
		if err != nil {
			return nil, err
		}
		if super != nil {
			sc, ok := super.(*javaClass)
			if !ok {
				return nil, fmt.Errorf("%w: superclass of %s is no class", errJavaStream, c.name)
			}
			c.super = sc
		}
		return c, nil
	case jObject:
		d, err := r.content()
		if err != nil {
			return nil, err
		}
		c, ok := d.(*javaClass)
		if !ok {
			return nil, fmt.Errorf("%w: object without a class", errJavaStream)
		}
		r.handles = append(r.handles, nil)
		switch c.name {
		case jLong.name:
			v, err := r.u64()
			if err != nil {
				return nil, err
			}
			return int64(v), nil
		case jOptionalFailure.name:
			cause, err := r.content()
			if err != nil {
				return nil, err
			}
			if cause != nil {
				return nil, fmt.Errorf("%w: a failed accumulator", errJavaStream)
			}
			v, err := r.content()
			if err != nil {
				return nil, err
			}
			if end, err := r.u8(); err != nil || end != jEndBlock {
				return nil, fmt.Errorf("%w: OptionalFailure does not end", errJavaStream)
			}
			return optionalValue{v}, nil
		}
		return nil, fmt.Errorf("%w: an object of class %s", errJavaStream, c.name)
	}
	return nil, fmt.Errorf("%w: type code %#x", errJavaStream, tc)
}

type optionalValue struct{ v any }

// readJavaAccumulator reads what javaAccumulator writes: an int64 or a
// string.
func readJavaAccumulator(b []byte) (any, error) {
	r := &javaReader{b: b}
	magic, err := r.u16()
	if err != nil {
		return nil, err
	}
	version, err := r.u16()
	if err != nil {
		return nil, err
	}
	if magic != jMagic || version != jVersion {
		return nil, fmt.Errorf("%w: no serialization stream header", errJavaStream)
	}
	v, err := r.content()
	if err != nil {
		return nil, err
	}
	o, ok := v.(optionalValue)
	if !ok {
		return nil, fmt.Errorf("%w: not an OptionalFailure", errJavaStream)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the value", errJavaStream, len(r.b))
	}
	switch o.v.(type) {
	case int64, string:
		return o.v, nil
	}
	return nil, fmt.Errorf("%w: value of type %T", errJavaStream, o.v)
}
