package task

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
)

// DefaultBatchSize is the number of records per exchange buffer.
const DefaultBatchSize = 512

// TypeOps makes the typed plumbing for one record type.
type TypeOps interface {
	// TypeName is the Go type's name.
	TypeName() string
	// BatchCodec returns the network encoding of this type's batches (see
	// BatchCodec); it fails, naming the type, if the type has none.
	BatchCodec() (BatchCodec, error)
	fanOut(outs []any) any
	chained(in any, h *opHandle) any
	newWriter(cfg writerConfig) (recordWriter, any)
	dispatcher(in any) func(data any) (int, error)
	discard() any
}

// TypeOf returns the TypeOps of T.
func TypeOf[T any]() TypeOps { return typeOps[T]{} }

// KeyPartitioner routes records of type T by key group. A Hash edge's
// Partitioner implements it.
type KeyPartitioner[T any] interface {
	// NewKeyGroupFunc returns a function computing a record's key group. It
	// is called once per writer; the function need not be goroutine-safe.
	NewKeyGroupFunc(maxParallelism int) func(T) int
}

// Batch is a buffer's payload: records and their timestamps.
type Batch[T any] struct {
	Values []T
	Ts     []int64
	pool   *sync.Pool
}

func (b *Batch[T]) release() {
	if b.pool == nil {
		return
	}
	clear(b.Values) // drop references for the garbage collector
	b.Values, b.Ts = b.Values[:0], b.Ts[:0]
	b.pool.Put(b)
}

type typeOps[T any] struct{}

func (typeOps[T]) TypeName() string { return reflect.TypeFor[T]().String() }

func (typeOps[T]) discard() any { return discardOutput[T]{} }

func (o typeOps[T]) fanOut(outs []any) any {
	switch len(outs) {
	case 0:
		return discardOutput[T]{}
	case 1:
		return outs[0]
	}
	f := make(fanOut[T], len(outs))
	for i, x := range outs {
		f[i] = x.(Output[T])
	}
	return f
}

func (typeOps[T]) chained(in any, h *opHandle) any {
	c := &chainedOutput[T]{in: in.(Input[T]), h: h}
	c.batch, _ = in.(BatchInput[T])
	return c
}

func (typeOps[T]) dispatcher(in any) func(data any) (int, error) {
	input := in.(Input[T])
	return func(data any) (int, error) {
		b := data.(*Batch[T])
		n := len(b.Values)
		for i := range b.Values {
			if err := input.ProcessElement(b.Values[i], b.Ts[i]); err != nil {
				return i, err
			}
		}
		b.release()
		return n, nil
	}
}

type discardOutput[T any] struct{}

func (discardOutput[T]) Collect(T, int64) error          { return nil }
func (discardOutput[T]) CollectBatch([]T, []int64) error { return nil }
func (discardOutput[T]) EmitWatermark(int64) error       { return nil }

type fanOut[T any] []Output[T]

func (f fanOut[T]) Collect(v T, ts int64) error {
	for _, o := range f {
		if err := o.Collect(v, ts); err != nil {
			return err
		}
	}
	return nil
}

func (f fanOut[T]) CollectBatch(vs []T, ts []int64) error {
	for _, o := range f {
		if err := CollectBatch(o, vs, ts); err != nil {
			return err
		}
	}
	return nil
}

func (f fanOut[T]) EmitWatermark(wm int64) error {
	for _, o := range f {
		if err := o.EmitWatermark(wm); err != nil {
			return err
		}
	}
	return nil
}

// opHandle is a chained operator with what the task needs to drive it.
type opHandle struct {
	t     *Task
	index int // position in the chain
	node  *graph.Node
	op    Operator
	// sideW forward watermarks to the side outputs after the operator has
	// processed them.
	sideW []func(int64) error
	// keyed are the operator's keyed states, for checkpoints.
	keyed []KeyedState
}

func (h *opHandle) processWatermark(wm int64) error {
	prev := h.t.current
	h.t.current = h.index
	err := h.op.ProcessWatermark(wm)
	h.t.current = prev
	if err != nil {
		return h.t.wrapErr(err, h.index)
	}
	for _, w := range h.sideW {
		if err := w(wm); err != nil {
			return err
		}
	}
	return nil
}

// chainedOutput hands records to the next operator of the chain by a plain
// function call, and tracks which operator runs so a panic is attributed.
type chainedOutput[T any] struct {
	in    Input[T]
	batch BatchInput[T] // in, if it takes batches
	h     *opHandle
}

// TakesBatches reports whether out hands a batch on in one call to an
// operator that processes batches (a chained stateless operator, or
// several): only then is collecting records into batches for it worth
// the records it holds back.
func TakesBatches[T any](out Output[T]) bool {
	switch o := out.(type) {
	case *chainedOutput[T]:
		return o.batch != nil
	case fanOut[T]:
		for _, x := range o {
			if !TakesBatches(x) {
				return false
			}
		}
		return len(o) > 0
	}
	return false
}

// CollectBatch hands the batch to the next operator in one call if it
// takes batches, else record by record.
func (c *chainedOutput[T]) CollectBatch(vs []T, ts []int64) error {
	t := c.h.t
	prev := t.current
	t.current = c.h.index
	var err error
	if c.batch != nil {
		err = c.batch.ProcessBatch(vs, ts)
	} else {
		for i := range vs {
			if err = c.in.ProcessElement(vs[i], ts[i]); err != nil {
				break
			}
		}
	}
	t.current = prev
	if err != nil {
		return t.wrapErr(err, c.h.index)
	}
	return nil
}

func (c *chainedOutput[T]) Collect(v T, ts int64) error {
	t := c.h.t
	prev := t.current
	t.current = c.h.index
	err := c.in.ProcessElement(v, ts)
	t.current = prev
	if err != nil {
		return t.wrapErr(err, c.h.index)
	}
	return nil
}

func (c *chainedOutput[T]) EmitWatermark(wm int64) error { return c.h.processWatermark(wm) }

// recordWriter is the type-erased side of a typed writer.
type recordWriter interface {
	flush() error
	emitEvent(ev exchange.Event) error
}

type writerConfig struct {
	ctx          context.Context
	senders      []exchange.Sender
	partitioning graph.Partitioning
	partitioner  any
	subtask      int
	maxPar       int
	batchSize    int
	metrics      *Metrics
}

func (typeOps[T]) newWriter(cfg writerConfig) (recordWriter, any) {
	w := &writer[T]{
		ctx:       cfg.ctx,
		senders:   cfg.senders,
		mode:      cfg.partitioning,
		batchSize: cfg.batchSize,
		metrics:   cfg.metrics,
		pending:   make([]*Batch[T], len(cfg.senders)),
		rr:        cfg.subtask, // spread the round-robin start points
	}
	w.pool.New = func() any {
		return &Batch[T]{Values: make([]T, 0, w.batchSize), Ts: make([]int64, 0, w.batchSize)}
	}
	if cfg.partitioning == graph.Hash {
		kp, ok := cfg.partitioner.(KeyPartitioner[T])
		if !ok {
			panic(fmt.Sprintf("task: hash edge without a key partitioner for %T", *new(T))) // built by the stream API
		}
		w.keyGroup = kp.NewKeyGroupFunc(cfg.maxPar)
		w.maxPar = cfg.maxPar
	}
	return w, w
}

// writer batches the records of one output edge per channel.
type writer[T any] struct {
	ctx       context.Context
	senders   []exchange.Sender
	mode      graph.Partitioning
	keyGroup  func(T) int
	maxPar    int
	rr        int
	batchSize int
	pending   []*Batch[T]
	pool      sync.Pool
	metrics   *Metrics
}

func (w *writer[T]) Collect(v T, ts int64) error {
	switch w.mode {
	case graph.Hash:
		kg := w.keyGroup(v)
		return w.add(keygroup.Operator(kg, w.maxPar, len(w.senders)), v, ts)
	case graph.Broadcast:
		for ch := range w.senders {
			if err := w.add(ch, v, ts); err != nil {
				return err
			}
		}
		return nil
	case graph.Global:
		return w.add(0, v, ts)
	case graph.Forward:
		return w.add(0, v, ts)
	default: // Rebalance
		w.rr++
		if w.rr >= len(w.senders) {
			w.rr = 0
		}
		return w.add(w.rr, v, ts)
	}
}

// CollectBatch writes the batch record by record (each goes to its
// channel's buffer).
func (w *writer[T]) CollectBatch(vs []T, ts []int64) error {
	for i := range vs {
		if err := w.Collect(vs[i], ts[i]); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer[T]) add(ch int, v T, ts int64) error {
	b := w.pending[ch]
	if b == nil {
		b = w.pool.Get().(*Batch[T])
		b.pool = &w.pool
		w.pending[ch] = b
	}
	b.Values = append(b.Values, v)
	b.Ts = append(b.Ts, ts)
	if len(b.Values) >= w.batchSize {
		return w.send(ch)
	}
	return nil
}

func (w *writer[T]) send(ch int) error {
	b := w.pending[ch]
	w.pending[ch] = nil
	w.metrics.RecordsOut.Add(int64(len(b.Values)))
	return w.sendBuffer(ch, exchange.Buffer{Data: b})
}

func (w *writer[T]) sendBuffer(ch int, buf exchange.Buffer) error {
	s := w.senders[ch]
	if s.TrySend(buf) {
		return nil
	}
	start := time.Now()
	err := s.Send(w.ctx, buf)
	w.metrics.BackpressuredNanos.Add(int64(time.Since(start)))
	return err
}

func (w *writer[T]) flush() error {
	for ch, b := range w.pending {
		if b != nil && len(b.Values) > 0 {
			if err := w.send(ch); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *writer[T]) emitEvent(ev exchange.Event) error {
	if err := w.flush(); err != nil {
		return err
	}
	for ch := range w.senders {
		if err := w.sendBuffer(ch, exchange.Buffer{Event: ev}); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer[T]) EmitWatermark(wm int64) error {
	if err := w.emitEvent(exchange.Event{Kind: exchange.Watermark, Watermark: wm}); err != nil {
		return err
	}
	w.metrics.OutputWatermark.Store(wm)
	return nil
}
