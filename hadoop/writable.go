package hadoop

import (
	"errors"
	"fmt"
)

// errShort is returned by the Writable decoders when input ends early.
var errShort = errors.New("unexpected end of data")

// appendVLong appends v in Hadoop's WritableUtils variable-length encoding:
// values in [-112, 127] take one byte; otherwise a marker byte gives the sign
// and the byte count, followed by the magnitude big-endian (one's complement
// for negatives).
func appendVLong(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(int8(v)))
	}
	n := int64(-112)
	if v < 0 {
		v = ^v
		n = -120
	}
	for tmp := v; tmp != 0; tmp >>= 8 {
		n--
	}
	b = append(b, byte(int8(n)))
	size := -(n + 112)
	if n < -120 {
		size = -(n + 120)
	}
	for i := size; i > 0; i-- {
		b = append(b, byte(v>>((i-1)*8)))
	}
	return b
}

// readVLong decodes one WritableUtils variable-length integer from b and
// returns it with the number of bytes consumed.
func readVLong(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, errShort
	}
	first := int8(b[0])
	if first >= -112 {
		return int64(first), 1, nil
	}
	size := int(-111 - int(first)) // total size including marker
	if first < -120 {
		size = int(-119 - int(first))
	}
	if len(b) < size {
		return 0, 0, errShort
	}
	var v int64
	for i := 1; i < size; i++ {
		v = v<<8 | int64(b[i])
	}
	if first < -120 || (first >= -112 && first < 0) {
		v = ^v
	}
	return v, size, nil
}

// writableReader decodes Hadoop Writable primitives from a byte slice and
// tracks the offset for error messages.
type writableReader struct {
	b   []byte
	off int
}

func (r *writableReader) remaining() int { return len(r.b) - r.off }

func (r *writableReader) vint(what string) (int, error) {
	v, n, err := readVLong(r.b[r.off:])
	if err != nil {
		return 0, fmt.Errorf("%s at offset %d: %w", what, r.off, err)
	}
	if v < -1<<31 || v > 1<<31-1 {
		return 0, fmt.Errorf("%s at offset %d: %d does not fit in an int32", what, r.off, v)
	}
	r.off += n
	return int(v), nil
}

// length reads a VInt length and checks it against the remaining input.
func (r *writableReader) length(what string) (int, error) {
	at := r.off
	n, err := r.vint(what + " length")
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s length at offset %d is negative (%d)", what, at, n)
	}
	if n > r.remaining() {
		return 0, fmt.Errorf("%s length at offset %d is %d but only %d bytes remain", what, at, n, r.remaining())
	}
	return n, nil
}

func (r *writableReader) bytes(what string) ([]byte, error) {
	n, err := r.length(what)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	copy(out, r.b[r.off:r.off+n])
	r.off += n
	return out, nil
}

// text reads a Hadoop Text: a VInt byte length then UTF-8 bytes.
func (r *writableReader) text(what string) (string, error) {
	b, err := r.bytes(what)
	return string(b), err
}

func appendWritableBytes(b, v []byte) []byte {
	b = appendVLong(b, int64(len(v)))
	return append(b, v...)
}

func appendText(b []byte, s string) []byte {
	b = appendVLong(b, int64(len(s)))
	return append(b, s...)
}
