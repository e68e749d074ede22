package task

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/sluice/sluice/runtime/codec"
)

// ErrCorruptBatch is wrapped by the errors of BatchCodec.DecodeBatch.
var ErrCorruptBatch = errors.New("task: corrupt batch")

// BatchCodec encodes and decodes the batches (exchange.Buffer.Data) of one
// record type for the network exchange. Its methods are safe for concurrent
// use.
//
// The encoding of a batch of n records is uvarint(n), the n timestamps as
// zig-zag varint deltas (the first from 0), then the n values in the
// canonical encoding of runtime/codec.
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
	bc := &batchCodec[T]{c: c}
	bc.pool.New = func() any { return new(Batch[T]) }
	return bc, nil
}

type batchCodec[T any] struct {
	c    *codec.Codec[T]
	pool sync.Pool
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
