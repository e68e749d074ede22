package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/sluice/sluice/internal/runtime/codec"
)

// ErrCorruptBatch is wrapped by the errors of BatchCodec.DecodeBatch.
var ErrCorruptBatch = errors.New("task: corrupt batch")

// BatchCodec encodes and decodes the batches (exchange.Buffer.Data) of one
// record type for the network exchange. Its methods are safe for concurrent
// use.
//
// The encoding of a batch of n records is uvarint(n), the n timestamps as
// zig-zag varint deltas (the first from 0), then the n values: for a type
// without pointers (numbers, arrays and structs of them) their memory as
// it is, since both ends run the same binary on the same architecture (the
// workers of a job prove it by the binary's digest); otherwise in the
// canonical encoding of internal/runtime/codec.
type BatchCodec interface {
	// AppendBatch appends the encoding of data (a *Batch[T]) to dst.
	AppendBatch(dst []byte, data any) []byte
	// DecodeBatch decodes one whole batch. The batch comes from the codec's
	// pool and goes back to it when the receiving task has processed it
	// (or by ReleaseBatch).
	DecodeBatch(b []byte) (any, error)
	// ReleaseBatch returns a batch to the pool it came from: the sending
	// writer's once it is encoded, the codec's once it is processed.
	ReleaseBatch(data any)
}

func (typeOps[T]) BatchCodec() (BatchCodec, error) {
	c, err := codec.For[T]()
	if err != nil {
		return nil, fmt.Errorf("task: records of type %s cannot cross the network: %w", reflect.TypeFor[T](), err)
	}
	bc := &batchCodec[T]{c: c, flat: pointerFree(reflect.TypeFor[T]())}
	bc.pool.New = func() any { return new(Batch[T]) }
	return bc, nil
}

type batchCodec[T any] struct {
	c    *codec.Codec[T]
	flat bool // values are copied as memory
	pool sync.Pool
}

// pointerFree reports whether values of t hold no pointers, so that their
// memory is their whole value.
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return t.Kind() != reflect.Uintptr
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// memory is the bytes of vs.
func memory[T any](vs []T) []byte {
	if len(vs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), len(vs)*int(unsafe.Sizeof(vs[0])))
}

func (bc *batchCodec[T]) batch(data any) *Batch[T] {
	b, ok := data.(*Batch[T])
	if !ok {
		panic(fmt.Sprintf("task: batch codec of %s given %T", reflect.TypeFor[T](), data)) // wired by the runtime
	}
	return b
}

func (bc *batchCodec[T]) AppendBatch(dst []byte, data any) []byte {
	b := bc.batch(data)
	dst = binary.AppendUvarint(dst, uint64(len(b.Values)))
	prev := int64(0)
	for _, ts := range b.Ts {
		dst = binary.AppendVarint(dst, ts-prev) // wraps for NoTimestamp: the decoder wraps back
		prev = ts
	}
	if bc.flat {
		return append(dst, memory(b.Values)...)
	}
	return bc.c.AppendValues(dst, b.Values)
}

func (bc *batchCodec[T]) DecodeBatch(data []byte) (any, error) {
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return nil, fmt.Errorf("%w of %s: bad record count", ErrCorruptBatch, reflect.TypeFor[T]())
	}
	data = data[k:]
	if n > uint64(len(data)) { // every timestamp takes at least a byte
		return nil, fmt.Errorf("%w of %s: %d records announced in %d bytes", ErrCorruptBatch, reflect.TypeFor[T](), n, len(data))
	}
	b := bc.pool.Get().(*Batch[T])
	b.pool = &bc.pool
	if cap(b.Values) < int(n) {
		b.Values, b.Ts = make([]T, n), make([]int64, n)
	}
	b.Values, b.Ts = b.Values[:n], b.Ts[:n]
	prev := int64(0)
	for i := range b.Ts {
		d, k := binary.Varint(data)
		if k <= 0 {
			b.release()
			return nil, fmt.Errorf("%w of %s: bad timestamp of record %d", ErrCorruptBatch, reflect.TypeFor[T](), i)
		}
		data = data[k:]
		prev += d
		b.Ts[i] = prev
	}
	if bc.flat {
		m := memory(b.Values)
		if len(data) != len(m) {
			b.release()
			return nil, fmt.Errorf("%w of %s: %d bytes of values, want %d for %d records", ErrCorruptBatch, reflect.TypeFor[T](), len(data), len(m), n)
		}
		copy(m, data)
		return b, nil
	}
	rest, err := bc.c.DecodeValues(data, b.Values)
	if err != nil {
		b.release()
		return nil, fmt.Errorf("%w: %w", ErrCorruptBatch, err)
	}
	if len(rest) != 0 {
		b.release()
		return nil, fmt.Errorf("%w of %s: %d bytes after %d records", ErrCorruptBatch, reflect.TypeFor[T](), len(rest), n)
	}
	return b, nil
}

func (bc *batchCodec[T]) ReleaseBatch(data any) { bc.batch(data).release() }
