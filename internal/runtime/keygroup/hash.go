package keygroup

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Hasher computes a deterministic 64-bit hash of keys of type K: equal keys
// hash equally in every process and run, which key-group assignment and state
// redistribution rely on. A Hasher is not safe for concurrent use (it reuses
// a buffer for composite keys); make one per goroutine.
type Hasher[K comparable] struct {
	fn  func(*Hasher[K], K) uint64
	app func(*Hasher[K], []byte, K) []byte
	enc func(buf []byte, v reflect.Value) []byte
	buf []byte
}

// NewHasher returns a hasher for K, or an error naming the part of K that
// cannot be hashed deterministically (pointers, channels, interfaces, funcs).
func NewHasher[K comparable]() (*Hasher[K], error) {
	h := &Hasher[K]{}
	t := reflect.TypeFor[K]()
	// app appends the bytes fn hashes: a key's encoded key (EncodedKey).
	word := func(v func(K) uint64) func(*Hasher[K], []byte, K) []byte {
		return func(_ *Hasher[K], b []byte, k K) []byte { return binary.LittleEndian.AppendUint64(b, v(k)) }
	}
	switch t.Kind() {
	case reflect.String:
		h.app = func(_ *Hasher[K], b []byte, k K) []byte { return append(b, *(*string)(unsafe.Pointer(&k))...) }
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		h.app = word(func(k K) uint64 { return *(*uint64)(unsafe.Pointer(&k)) })
	case reflect.Int32, reflect.Uint32:
		h.app = word(func(k K) uint64 { return uint64(*(*uint32)(unsafe.Pointer(&k))) })
	case reflect.Int16, reflect.Uint16:
		h.app = word(func(k K) uint64 { return uint64(*(*uint16)(unsafe.Pointer(&k))) })
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		h.app = word(func(k K) uint64 { return uint64(*(*uint8)(unsafe.Pointer(&k))) })
	default:
		h.app = func(h *Hasher[K], b []byte, k K) []byte { return h.enc(b, reflect.ValueOf(&k).Elem()) }
	}
	switch t.Kind() {
	case reflect.String:
		h.fn = func(_ *Hasher[K], k K) uint64 { return xxhash.Sum64String(*(*string)(unsafe.Pointer(&k))) }
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		h.fn = func(_ *Hasher[K], k K) uint64 { return mixInt(*(*uint64)(unsafe.Pointer(&k))) }
	case reflect.Int32, reflect.Uint32:
		h.fn = func(_ *Hasher[K], k K) uint64 { return mixInt(uint64(*(*uint32)(unsafe.Pointer(&k)))) }
	case reflect.Int16, reflect.Uint16:
		h.fn = func(_ *Hasher[K], k K) uint64 { return mixInt(uint64(*(*uint16)(unsafe.Pointer(&k)))) }
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		h.fn = func(_ *Hasher[K], k K) uint64 { return mixInt(uint64(*(*uint8)(unsafe.Pointer(&k)))) }
	default:
		enc, err := encoderFor(t, t.String())
		if err != nil {
			return nil, err
		}
		h.enc = enc
		h.fn = func(h *Hasher[K], k K) uint64 {
			h.buf = h.enc(h.buf[:0], reflect.ValueOf(&k).Elem())
			return xxhash.Sum64(h.buf)
		}
	}
	return h, nil
}

// AppendEncodedKey appends k's encoded key to dst: the bytes whose hash
// places k, so that ForEncodedKey(h.AppendEncodedKey(nil, k), m) equals
// h.KeyGroup(k, m). A front end whose keys are bytes (the core API, Beam's
// encoded keys, SQL rows' key fields) places a record where a typed
// operator places the key of the same encoding.
func (h *Hasher[K]) AppendEncodedKey(dst []byte, k K) []byte { return h.app(h, dst, k) }

// ForEncodedKey returns the key group of an encoded key (see
// Hasher.AppendEncodedKey). A string key's encoded key is its bytes.
func ForEncodedKey(key []byte, maxParallelism int) int {
	return ForHash(xxhash.Sum64(key), maxParallelism)
}

// Hash returns the hash of k.
func (h *Hasher[K]) Hash(k K) uint64 { return h.fn(h, k) }

// KeyGroup returns the key group of k.
func (h *Hasher[K]) KeyGroup(k K, maxParallelism int) int {
	return ForHash(h.fn(h, k), maxParallelism)
}

func mixInt(v uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return xxhash.Sum64(b[:])
}

// encoderFor builds a canonical byte encoding of values of type t.
func encoderFor(t reflect.Type, path string) (func([]byte, reflect.Value) []byte, error) {
	switch t.Kind() {
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte {
			s := v.String()
			b = binary.AppendUvarint(b, uint64(len(s)))
			return append(b, s...)
		}, nil
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte {
			if v.Bool() {
				return append(b, 1)
			}
			return append(b, 0)
		}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) []byte { return binary.AppendVarint(b, v.Int()) }, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b []byte, v reflect.Value) []byte { return binary.AppendUvarint(b, v.Uint()) }, nil
	case reflect.Float32, reflect.Float64:
		return func(b []byte, v reflect.Value) []byte {
			f := v.Float()
			if f == 0 { // +0 and -0 are equal keys
				f = 0
			}
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
		}, nil
	case reflect.Array:
		elem, err := encoderFor(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return func(b []byte, v reflect.Value) []byte {
			for i := 0; i < v.Len(); i++ {
				b = elem(b, v.Index(i))
			}
			return b
		}, nil
	case reflect.Struct:
		fields := make([]func([]byte, reflect.Value) []byte, t.NumField())
		for i := range fields {
			f := t.Field(i)
			enc, err := encoderFor(f.Type, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			fields[i] = enc
		}
		return func(b []byte, v reflect.Value) []byte {
			for i, enc := range fields {
				b = enc(b, v.Field(i))
			}
			return b
		}, nil
	default:
		return nil, fmt.Errorf("keygroup: key type %s cannot be hashed deterministically (%s is a %s); use strings, numbers, booleans, arrays or structs of them", path, t, t.Kind())
	}
}
