// Package wire reads and writes the Beam encodings the runner itself must
// understand: the windowed values that cross the data channel between
// engine operators and SDK harnesses. Everything the runner does not need
// to look into travels length-prefixed (beam:coder:length_prefix:v1), so
// an element is always
//
//	timestamp (8 bytes) | windows (int32 count, each window) | pane | varint length | payload
//
// whatever the SDK's own coders are. Only the window encodings of the
// global and interval windows are read; any other window coder is wrapped
// in a length prefix as well.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorrupt is wrapped by the errors of decoding malformed data.
var ErrCorrupt = errors.New("beam wire: corrupt encoding")

// Timestamps in milliseconds, as Beam bounds them.
const (
	// MinTimestamp is Beam's BoundedWindow.TIMESTAMP_MIN_VALUE.
	MinTimestamp int64 = math.MinInt64 / 1000
	// MaxTimestamp is Beam's BoundedWindow.TIMESTAMP_MAX_VALUE.
	MaxTimestamp int64 = math.MaxInt64 / 1000
	// GlobalWindowMaxTimestamp is the global window's maximum timestamp:
	// one day before MaxTimestamp.
	GlobalWindowMaxTimestamp = MaxTimestamp - 24*60*60*1000
)

// PaneNoFiring is the pane of an element that no trigger produced (first,
// last, timing unknown); PaneOnTime the only firing of a window.
var (
	PaneNoFiring = []byte{0x0f}
	PaneOnTime   = []byte{0x07}
)

// WindowKind is how the runner reads a window's encoding.
type WindowKind int

// Window kinds.
const (
	// GlobalWindow: beam:coder:global_window:v1, no bytes.
	GlobalWindow WindowKind = iota
	// IntervalWindow: beam:coder:interval_window:v1, end timestamp and span.
	IntervalWindow
	// OpaqueWindow: any other window coder, length-prefixed.
	OpaqueWindow
)

func (k WindowKind) String() string {
	switch k {
	case GlobalWindow:
		return "global"
	case IntervalWindow:
		return "interval"
	}
	return "opaque"
}

// Element is one windowed value, its parts aliasing the bytes it was read
// from.
type Element struct {
	Timestamp int64
	// Windows are the raw encodings of the element's windows.
	Windows [][]byte
	// Pane is the raw pane info.
	Pane []byte
	// Payload is the element's value (the contents of its length prefix).
	Payload []byte
}

// AppendTimestamp appends a Beam timestamp (milliseconds, big-endian,
// shifted so that the order of the bytes is the order of the times).
func AppendTimestamp(dst []byte, ms int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ms)^(1<<63))
}

func readTimestamp(b []byte) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: timestamp needs 8 bytes, %d left", ErrCorrupt, len(b))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), b[8:], nil
}

func readUvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad varint (%s)", ErrCorrupt, what)
	}
	return v, b[n:], nil
}

// window returns the first window's encoding in b and the rest.
func window(b []byte, k WindowKind) ([]byte, []byte, error) {
	switch k {
	case GlobalWindow:
		return b[:0], b, nil
	case IntervalWindow:
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("%w: interval window end needs 8 bytes, %d left", ErrCorrupt, len(b))
		}
		_, rest, err := readUvarint(b[8:], "interval window span")
		if err != nil {
			return nil, nil, err
		}
		return b[:len(b)-len(rest)], rest, nil
	default:
		n, rest, err := readUvarint(b, "window length")
		if err != nil {
			return nil, nil, err
		}
		if uint64(len(rest)) < n {
			return nil, nil, fmt.Errorf("%w: window of %d bytes, %d left", ErrCorrupt, n, len(rest))
		}
		return b[:len(b)-len(rest)+int(n)], rest[n:], nil
	}
}

// Next reads the element at the start of b and returns it and the rest.
func Next(b []byte, k WindowKind) (Element, []byte, error) {
	e, b, err := header(b, k)
	if err != nil {
		return e, nil, err
	}
	size, b, err := readUvarint(b, "payload length")
	if err != nil {
		return e, nil, err
	}
	if uint64(len(b)) < size {
		return e, nil, fmt.Errorf("%w: payload of %d bytes, %d left", ErrCorrupt, size, len(b))
	}
	e.Payload = b[:size:size]
	return e, b[size:], nil
}

// Record reads the one element b holds. A framed element's payload is
// length-prefixed, as every element Next reads; an unframed one's (a
// GroupByKey's output, see AppendGroupedElement) is the rest of b.
func Record(b []byte, k WindowKind, framed bool) (Element, error) {
	if framed {
		e, rest, err := Next(b, k)
		if err == nil && len(rest) > 0 {
			err = fmt.Errorf("%w: %d bytes after an element", ErrCorrupt, len(rest))
		}
		return e, err
	}
	e, b, err := header(b, k)
	if err != nil {
		return e, err
	}
	e.Payload = b[:len(b):len(b)]
	return e, nil
}

// header reads an element's timestamp, windows and pane.
func header(b []byte, k WindowKind) (Element, []byte, error) {
	var e Element
	var err error
	if e.Timestamp, b, err = readTimestamp(b); err != nil {
		return e, nil, err
	}
	if len(b) < 4 {
		return e, nil, fmt.Errorf("%w: window count needs 4 bytes, %d left", ErrCorrupt, len(b))
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 || int(n) > len(b)+1 && k != GlobalWindow {
		return e, nil, fmt.Errorf("%w: %d windows", ErrCorrupt, n)
	}
	if k == GlobalWindow && n > 1 {
		return e, nil, fmt.Errorf("%w: %d global windows", ErrCorrupt, n)
	}
	e.Windows = make([][]byte, n)
	for i := range e.Windows {
		if e.Windows[i], b, err = window(b, k); err != nil {
			return e, nil, err
		}
	}
	if len(b) < 1 {
		return e, nil, fmt.Errorf("%w: missing pane", ErrCorrupt)
	}
	start := b
	indices := int(b[0] >> 4)
	b = b[1:]
	if indices > 2 {
		return e, nil, fmt.Errorf("%w: pane encoding %d", ErrCorrupt, indices)
	}
	for i := 0; i < indices; i++ {
		if _, b, err = readUvarint(b, "pane index"); err != nil {
			return e, nil, err
		}
	}
	e.Pane = start[:len(start)-len(b)]
	return e, b, nil
}

// Split cuts a concatenation of encoded elements into the encodings of
// each, aliasing data.
func Split(data []byte, k WindowKind, fn func(enc []byte, e Element) error) error {
	for len(data) > 0 {
		e, rest, err := Next(data, k)
		if err != nil {
			return err
		}
		if err := fn(data[:len(data)-len(rest)], e); err != nil {
			return err
		}
		data = rest
	}
	return nil
}

// AppendElement appends the encoding of a windowed value whose payload is
// written length-prefixed.
func AppendElement(dst []byte, ts int64, windows [][]byte, pane, payload []byte) []byte {
	dst = AppendTimestamp(dst, ts)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(windows)))
	for _, w := range windows {
		dst = append(dst, w...)
	}
	dst = append(dst, pane...)
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// ImpulseElement is the one element Impulse emits: an empty byte string
// in the global window at the minimum timestamp.
func ImpulseElement() []byte {
	// The payload is the bytes coder's (outer) encoding of no bytes.
	return AppendElement(nil, MinTimestamp, [][]byte{{}}, PaneNoFiring, nil)
}

// MaxTimestampOf is a window's maximum timestamp: when the watermark
// passes it the window is complete. An opaque window is complete only at
// the end of input (MaxTimestamp).
func MaxTimestampOf(k WindowKind, w []byte) (int64, error) {
	switch k {
	case GlobalWindow:
		return GlobalWindowMaxTimestamp, nil
	case IntervalWindow:
		end, _, err := readTimestamp(w)
		if err != nil {
			return 0, err
		}
		return end - 1, nil
	}
	return MaxTimestamp, nil
}

// KV splits the payload of a KV<LP<K>, LP<V>> into the raw (still
// length-prefixed) encodings of its key and value.
func KV(payload []byte) (key, value []byte, err error) {
	n, rest, err := readUvarint(payload, "key length")
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(rest)) < n {
		return nil, nil, fmt.Errorf("%w: key of %d bytes, %d left", ErrCorrupt, n, len(rest))
	}
	keyLen := len(payload) - len(rest) + int(n)
	value = payload[keyLen:]
	m, rest, err := readUvarint(value, "value length")
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(rest)) != m {
		return nil, nil, fmt.Errorf("%w: value of %d bytes, %d in the element", ErrCorrupt, m, len(rest))
	}
	return payload[:keyLen], value, nil
}

// Key returns the raw (length-prefixed) key at the start of the payload
// of a KV<LP<K>, V>, whatever V's encoding.
func Key(payload []byte) ([]byte, error) {
	n, rest, err := readUvarint(payload, "key length")
	if err != nil {
		return nil, err
	}
	if uint64(len(rest)) < n {
		return nil, fmt.Errorf("%w: key of %d bytes, %d left", ErrCorrupt, n, len(rest))
	}
	return payload[:len(payload)-len(rest)+int(n)], nil
}

// AppendGroupedElement appends a GroupByKey's output element: the
// windowed value of KV<LP<K>, Iterable<LP<V>>> of the raw key and the
// raw values, its payload not length-prefixed. The SDKs read a grouped
// input in that coder only (the Go SDK's data source groups an input
// whose coder is a KV of an iterable, not a length prefix of one), so
// the runner writes it as their coder says; Record reads it back.
func AppendGroupedElement(dst []byte, ts int64, windows [][]byte, pane, key []byte, values [][]byte) []byte {
	dst = AppendTimestamp(dst, ts)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(windows)))
	for _, w := range windows {
		dst = append(dst, w...)
	}
	dst = append(dst, pane...)
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(values)))
	for _, v := range values {
		dst = append(dst, v...)
	}
	return dst
}

// Interval reads an interval window's bounds (milliseconds, end
// exclusive).
func Interval(w []byte) (start, end int64, err error) {
	end, rest, err := readTimestamp(w)
	if err != nil {
		return 0, 0, err
	}
	span, rest, err := readUvarint(rest, "interval window span")
	if err != nil {
		return 0, 0, err
	}
	if len(rest) != 0 {
		return 0, 0, fmt.Errorf("%w: %d bytes after an interval window", ErrCorrupt, len(rest))
	}
	return end - int64(span), end, nil
}

// AppendInterval appends the encoding of the interval window [start, end).
func AppendInterval(dst []byte, start, end int64) []byte {
	return binary.AppendUvarint(AppendTimestamp(dst, end), uint64(end-start))
}

// Timer is one timer of a beam:coder:timer:v1 stream whose key is
// length-prefixed, its parts aliasing the bytes it was read from.
type Timer struct {
	// Key is the raw length-prefixed key; Tag the dynamic timer tag.
	Key, Tag []byte
	// Windows are the raw window encodings.
	Windows [][]byte
	// Clear: the timer was cleared; Fire and Hold are then unset.
	Clear      bool
	Fire, Hold int64
}

// NextTimer reads the timer at the start of b and returns it and the rest.
func NextTimer(b []byte, k WindowKind) (Timer, []byte, error) {
	var t Timer
	lp := func(what string) ([]byte, error) {
		start := b
		n, rest, err := readUvarint(b, what)
		if err != nil {
			return nil, err
		}
		if uint64(len(rest)) < n {
			return nil, fmt.Errorf("%w: %s of %d bytes, %d left", ErrCorrupt, what, n, len(rest))
		}
		b = rest[n:]
		return start[:len(start)-len(b)], nil
	}
	var err error
	if t.Key, err = lp("timer key"); err != nil {
		return t, nil, err
	}
	tag, err := lp("timer tag")
	if err != nil {
		return t, nil, err
	}
	_, n := binary.Uvarint(tag)
	t.Tag = tag[n:]
	if len(b) < 4 {
		return t, nil, fmt.Errorf("%w: timer window count", ErrCorrupt)
	}
	count := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if count < 0 || int(count) > len(b)+1 {
		return t, nil, fmt.Errorf("%w: %d timer windows", ErrCorrupt, count)
	}
	t.Windows = make([][]byte, count)
	for i := range t.Windows {
		if t.Windows[i], b, err = window(b, k); err != nil {
			return t, nil, err
		}
	}
	if len(b) < 1 {
		return t, nil, fmt.Errorf("%w: timer clear bit", ErrCorrupt)
	}
	t.Clear, b = b[0] != 0, b[1:]
	if t.Clear {
		return t, b, nil
	}
	if t.Fire, b, err = readTimestamp(b); err != nil {
		return t, nil, err
	}
	if t.Hold, b, err = readTimestamp(b); err != nil {
		return t, nil, err
	}
	if len(b) < 1 {
		return t, nil, fmt.Errorf("%w: timer pane", ErrCorrupt)
	}
	indices := int(b[0] >> 4)
	b = b[1:]
	for i := 0; i < indices; i++ {
		if _, b, err = readUvarint(b, "timer pane index"); err != nil {
			return t, nil, err
		}
	}
	return t, b, nil
}
