package stream

import (
	"errors"
	"fmt"
	"iter"

	"github.com/sluice/sluice/internal/typed"

	"github.com/sluice/sluice/internal/runtime/graph"
)

// BroadcastStateDescriptor declares a broadcast state: a map that every
// subtask of a broadcast process operator keeps a copy of, updated from
// the broadcast input. *MapDescriptor implements it.
type BroadcastStateDescriptor interface {
	broadcastDescriptor() (name string, ttl bool, newState func() any)
}

func (d *MapDescriptor[UK, UV]) broadcastDescriptor() (string, bool, func() any) {
	return d.Name, d.TTL.TTL > 0, func() any { return typed.NewBcState[UK, UV]() }
}

// BroadcastStream is a stream whose every record goes to every subtask of
// the operator it is connected to, with the broadcast states that operator
// keeps. Connect it with ConnectBroadcast or ConnectKeyedBroadcast.
type BroadcastStream[T any] struct {
	s     DataStream[T]
	descs []BroadcastStateDescriptor
}

// Broadcast makes a broadcast stream of in, declaring the broadcast states
// (map states) its process functions use. Every subtask receives every
// record and holds its own copy of the states: update them only in a
// deterministic way from the broadcast records, so that the copies stay
// equal, as in Flink. Broadcast state has no TTL.
func Broadcast[T any](in DataStream[T], descs ...BroadcastStateDescriptor) BroadcastStream[T] {
	seen := map[string]bool{}
	for i, d := range descs {
		if d == nil {
			in.env.fail(fmt.Errorf("Broadcast after operator %s: descriptor %d is nil", in.node.Label(), i))
			continue
		}
		name, ttl, _ := d.broadcastDescriptor()
		if seen[name] {
			in.env.fail(fmt.Errorf("Broadcast after operator %s: broadcast state %q is declared twice", in.node.Label(), name))
		}
		seen[name] = true
		if ttl {
			in.env.fail(fmt.Errorf("Broadcast after operator %s: broadcast state %q has a TTL; broadcast state does not support TTL", in.node.Label(), name))
		}
	}
	s := in
	s.part, s.partitioner = graph.Broadcast, nil
	return BroadcastStream[T]{s: s, descs: append([]BroadcastStateDescriptor(nil), descs...)}
}

// ReadOnlyBroadcastState is the view of a broadcast state from the
// non-broadcast input: it may be read but not changed (values that are
// pointers, maps or slices must not be modified either).
type ReadOnlyBroadcastState[UK comparable, UV any] interface {
	Get(k UK) (UV, bool)
	Contains(k UK) bool
	Len() int
	// All iterates over the entries in no particular order.
	All() iter.Seq2[UK, UV]
}

// BroadcastState is a broadcast state as the broadcast input's function
// sees it: read-write.
type BroadcastState[UK comparable, UV any] interface {
	ReadOnlyBroadcastState[UK, UV]
	Put(k UK, v UV)
	Remove(k UK)
	Clear()
}

// readOnlyBc hides the write methods of a broadcast state.
type readOnlyBc[UK comparable, UV any] struct{ s *typed.BcState[UK, UV] }

func (r readOnlyBc[UK, UV]) Get(k UK) (UV, bool)    { return r.s.Get(k) }
func (r readOnlyBc[UK, UV]) Contains(k UK) bool     { return r.s.Contains(k) }
func (r readOnlyBc[UK, UV]) Len() int               { return r.s.Len() }
func (r readOnlyBc[UK, UV]) All() iter.Seq2[UK, UV] { return r.s.All() }

// broadcastStates are one operator subtask's broadcast states by name
// (internal/typed's, checkpointed by its operators).
type broadcastStates = typed.BroadcastStates

func newBroadcastStates(descs []BroadcastStateDescriptor) *broadcastStates {
	news := make(map[string]func() any, len(descs))
	for _, d := range descs {
		name, _, create := d.broadcastDescriptor()
		news[name] = create
	}
	return typed.NewBroadcastStates(news)
}

// ErrUndeclaredBroadcastState is returned when a function uses a broadcast
// state that was not passed to Broadcast, or with other types.
var ErrUndeclaredBroadcastState = typed.ErrUndeclaredBroadcastState

func lookupBroadcast[UK comparable, UV any](s *broadcastStates, d *MapDescriptor[UK, UV]) *typed.BcState[UK, UV] {
	return typed.Lookup[UK, UV](s, d.Name)
}

// ReadOnlyBroadcastStateContext is implemented by the contexts of
// broadcast process functions, which may read broadcast state.
type ReadOnlyBroadcastStateContext interface {
	broadcastStates() *broadcastStates
}

// BroadcastStateContext is implemented by the contexts of the broadcast
// input's calls, which may change broadcast state.
type BroadcastStateContext interface {
	ReadOnlyBroadcastStateContext
	writableBroadcastState()
}

// BroadcastStateOf returns the broadcast state of d, read-write. It is
// available while processing a broadcast record. A descriptor that was not
// passed to Broadcast fails the task with ErrUndeclaredBroadcastState.
func BroadcastStateOf[UK comparable, UV any](ctx BroadcastStateContext, d *MapDescriptor[UK, UV]) BroadcastState[UK, UV] {
	return lookupBroadcast(ctx.broadcastStates(), d)
}

// ReadOnlyBroadcastStateOf returns the broadcast state of d, read-only.
func ReadOnlyBroadcastStateOf[UK comparable, UV any](ctx ReadOnlyBroadcastStateContext, d *MapDescriptor[UK, UV]) ReadOnlyBroadcastState[UK, UV] {
	return readOnlyBc[UK, UV]{lookupBroadcast(ctx.broadcastStates(), d)}
}

// BroadcastReadOnlyContext is the context of a BroadcastProcessFunction's
// call for a record of the non-broadcast input.
type BroadcastReadOnlyContext struct {
	fnContext
	bc *broadcastStates
}

func (c *BroadcastReadOnlyContext) broadcastStates() *broadcastStates { return c.bc }

// BroadcastContext is the context of a broadcast process function's call
// for a broadcast record (keyed or not): broadcast state is writable.
type BroadcastContext struct {
	fnContext
	bc *broadcastStates
}

func (c *BroadcastContext) broadcastStates() *broadcastStates { return c.bc }
func (c *BroadcastContext) writableBroadcastState()           {}

// BroadcastProcessFunction processes a non-keyed stream connected to a
// broadcast stream: ProcessElement sees the non-broadcast records with
// read-only access to the broadcast state, ProcessBroadcastElement the
// broadcast records with read-write access. The order in which records of
// the two inputs arrive is not defined.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type BroadcastProcessFunction[IN, BC, O any] interface {
	ProcessElement(ctx *BroadcastReadOnlyContext, v IN, out Collector[O]) error
	ProcessBroadcastElement(ctx *BroadcastContext, v BC, out Collector[O]) error
}

// BroadcastProcessFuncs builds a BroadcastProcessFunction from closures.
// Element and Broadcast are required; Open and Close may be nil.
type BroadcastProcessFuncs[IN, BC, O any] struct {
	Element   func(ctx *BroadcastReadOnlyContext, v IN, out Collector[O]) error
	Broadcast func(ctx *BroadcastContext, v BC, out Collector[O]) error
	Open      func(rc RuntimeContext) error
	Close     func() error
}

// ProcessElement implements BroadcastProcessFunction.
func (f BroadcastProcessFuncs[IN, BC, O]) ProcessElement(ctx *BroadcastReadOnlyContext, v IN, out Collector[O]) error {
	return f.Element(ctx, v, out)
}

// ProcessBroadcastElement implements BroadcastProcessFunction.
func (f BroadcastProcessFuncs[IN, BC, O]) ProcessBroadcastElement(ctx *BroadcastContext, v BC, out Collector[O]) error {
	return f.Broadcast(ctx, v, out)
}

func (f BroadcastProcessFuncs[IN, BC, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f BroadcastProcessFuncs[IN, BC, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f BroadcastProcessFuncs[IN, BC, O]) check() error {
	if f.Element == nil || f.Broadcast == nil {
		return errors.New("BroadcastProcessFuncs.Element and Broadcast are required")
	}
	return nil
}

// BroadcastConnectedStream is a non-keyed stream connected to a broadcast
// stream; apply a BroadcastProcessFunction with BroadcastProcess.
type BroadcastConnectedStream[IN, BC any] struct {
	in DataStream[IN]
	bc BroadcastStream[BC]
}

// ConnectBroadcast connects a non-keyed stream to a broadcast stream.
func ConnectBroadcast[IN, BC any](in DataStream[IN], bc BroadcastStream[BC]) BroadcastConnectedStream[IN, BC] {
	return BroadcastConnectedStream[IN, BC]{in: in, bc: bc}
}

// BroadcastProcess applies a BroadcastProcessFunction to a non-keyed
// stream connected to a broadcast stream. Records emitted keep the
// timestamp of the record being processed.
func BroadcastProcess[IN, BC, O any](c BroadcastConnectedStream[IN, BC], fn BroadcastProcessFunction[IN, BC, O]) DataStream[O] {
	checkFn(c.in.env, "BroadcastProcess", fn)
	descs := c.bc.descs
	return procTwoInput(c.in, c.bc.s, "broadcast-process", "BroadcastProcess", typed.BroadcastProcess(func() typed.BroadcastFns[IN, BC, O] {
		fn := perSubtask(fn)
		bc := newBroadcastStates(descs)
		ectx := &BroadcastReadOnlyContext{bc: bc}
		bctx := &BroadcastContext{bc: bc}
		return typed.BroadcastFns[IN, BC, O]{
			States: bc,
			Element: func(c *typed.FnContext, v IN, out *typed.Collector[O]) error {
				ectx.c = c
				return fn.ProcessElement(ectx, v, out)
			},
			Broadcast: func(c *typed.FnContext, v BC, out *typed.Collector[O]) error {
				bctx.c = c
				return fn.ProcessBroadcastElement(bctx, v, out)
			},
			Life: lifecycleOf(fn),
		}
	}))
}

// KeyedBroadcastReadOnlyContext is the context of a
// KeyedBroadcastProcessFunction's call for a keyed record: the key's state
// and timers as in KeyedContext, and read-only broadcast state.
type KeyedBroadcastReadOnlyContext[K comparable] struct {
	*KeyedContext[K]
	bc *broadcastStates
}

func (c *KeyedBroadcastReadOnlyContext[K]) broadcastStates() *broadcastStates { return c.bc }

// KeyedBroadcastOnTimerContext is the context of a
// KeyedBroadcastProcessFunction's OnTimer call.
type KeyedBroadcastOnTimerContext[K comparable] struct {
	*OnTimerContext[K]
	bc *broadcastStates
}

func (c *KeyedBroadcastOnTimerContext[K]) broadcastStates() *broadcastStates { return c.bc }

// KeyedBroadcastContext is the context of a KeyedBroadcastProcessFunction's
// call for a broadcast record: broadcast state is writable, and
// ApplyToKeyedState reaches the keyed state of every key. There is no
// current key, hence no keyed state access or timers otherwise.
type KeyedBroadcastContext[K comparable] struct {
	fnContext
	bc *broadcastStates
	v  *keyedView[K]
}

func (c *KeyedBroadcastContext[K]) broadcastStates() *broadcastStates { return c.bc }
func (c *KeyedBroadcastContext[K]) writableBroadcastState()           {}

// AnyStateDescriptor is implemented by every keyed state descriptor
// (*ValueDescriptor, *ListDescriptor, *MapDescriptor, ...).
type AnyStateDescriptor interface {
	stateDescriptor() *StateDescriptor
}

func (d *StateDescriptor) stateDescriptor() *StateDescriptor { return d }

// ApplyToKeyedState calls fn for every key of this subtask that has state
// d, in no particular order, with that key as the current key: inside fn,
// st gives the key's state (stream.Value(st, d) and so on), which fn may
// read, change or clear. It is Flink's applyToKeyedState.
func ApplyToKeyedState[K comparable](ctx *KeyedBroadcastContext[K], d AnyStateDescriptor, fn func(key K, st KeyedStateContext[K]) error) error {
	err := ctx.v.states.ApplyToKeys(d.stateDescriptor().Name, func(k K) error { return fn(k, ctx.v) })
	if err != nil {
		return fmt.Errorf("stream: ApplyToKeyedState: %w", err)
	}
	return nil
}

// KeyedBroadcastProcessFunction processes a keyed stream connected to a
// broadcast stream. ProcessElement sees the keyed records, with the key's
// state and timers and read-only broadcast state; ProcessBroadcastElement
// sees the broadcast records, with read-write broadcast state and
// ApplyToKeyedState; OnTimer the key's timers.
//
// A function may also implement Open(RuntimeContext) error and Close() error.
// Each subtask gets its own instance of a function that is a pointer to a
// struct (see RuntimeContext).
type KeyedBroadcastProcessFunction[K comparable, IN, BC, O any] interface {
	ProcessElement(ctx *KeyedBroadcastReadOnlyContext[K], v IN, out Collector[O]) error
	ProcessBroadcastElement(ctx *KeyedBroadcastContext[K], v BC, out Collector[O]) error
	OnTimer(ctx *KeyedBroadcastOnTimerContext[K], ts Timestamp, out Collector[O]) error
}

// KeyedBroadcastProcessFuncs builds a KeyedBroadcastProcessFunction from
// closures. Element and Broadcast are required; Timer, Open and Close may
// be nil.
type KeyedBroadcastProcessFuncs[K comparable, IN, BC, O any] struct {
	Element   func(ctx *KeyedBroadcastReadOnlyContext[K], v IN, out Collector[O]) error
	Broadcast func(ctx *KeyedBroadcastContext[K], v BC, out Collector[O]) error
	Timer     func(ctx *KeyedBroadcastOnTimerContext[K], ts Timestamp, out Collector[O]) error
	Open      func(rc RuntimeContext) error
	Close     func() error
}

// ProcessElement implements KeyedBroadcastProcessFunction.
func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) ProcessElement(ctx *KeyedBroadcastReadOnlyContext[K], v IN, out Collector[O]) error {
	return f.Element(ctx, v, out)
}

// ProcessBroadcastElement implements KeyedBroadcastProcessFunction.
func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) ProcessBroadcastElement(ctx *KeyedBroadcastContext[K], v BC, out Collector[O]) error {
	return f.Broadcast(ctx, v, out)
}

// OnTimer implements KeyedBroadcastProcessFunction.
func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) OnTimer(ctx *KeyedBroadcastOnTimerContext[K], ts Timestamp, out Collector[O]) error {
	if f.Timer == nil {
		return nil
	}
	return f.Timer(ctx, ts, out)
}

func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) open(rc RuntimeContext) error {
	if f.Open == nil {
		return nil
	}
	return f.Open(rc)
}

func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) close() error {
	if f.Close == nil {
		return nil
	}
	return f.Close()
}

func (f KeyedBroadcastProcessFuncs[K, IN, BC, O]) check() error {
	if f.Element == nil || f.Broadcast == nil {
		return errors.New("KeyedBroadcastProcessFuncs.Element and Broadcast are required")
	}
	return nil
}

// KeyedBroadcastConnectedStream is a keyed stream connected to a broadcast
// stream; apply a KeyedBroadcastProcessFunction with KeyedBroadcastProcess.
type KeyedBroadcastConnectedStream[IN any, K comparable, BC any] struct {
	in KeyedStream[IN, K]
	bc BroadcastStream[BC]
}

// ConnectKeyedBroadcast connects a keyed stream to a broadcast stream.
func ConnectKeyedBroadcast[IN any, K comparable, BC any](in KeyedStream[IN, K], bc BroadcastStream[BC]) KeyedBroadcastConnectedStream[IN, K, BC] {
	return KeyedBroadcastConnectedStream[IN, K, BC]{in: in, bc: bc}
}

// KeyedBroadcastProcess applies a KeyedBroadcastProcessFunction to a keyed
// stream connected to a broadcast stream. Timestamps of emitted records and
// timer behaviour (also in BATCH mode) follow KeyedProcess.
func KeyedBroadcastProcess[K comparable, IN, BC, O any](c KeyedBroadcastConnectedStream[IN, K, BC], fn KeyedBroadcastProcessFunction[K, IN, BC, O]) DataStream[O] {
	checkFn(c.in.env, "KeyedBroadcastProcess", fn)
	descs := c.bc.descs
	out := procTwoInput(c.in.DataStream, c.bc.s, "keyed-broadcast-process", "KeyedBroadcastProcess", typed.KeyedBroadcastProcess(c.in.key, func() typed.KeyedBroadcastFns[K, IN, BC, O] {
		fn := perSubtask(fn)
		bc := newBroadcastStates(descs)
		v := newKeyedView[K]()
		ectx := &KeyedBroadcastReadOnlyContext[K]{KeyedContext: &v.ctx, bc: bc}
		tctx := &KeyedBroadcastOnTimerContext[K]{OnTimerContext: &v.tctx, bc: bc}
		bctx := &KeyedBroadcastContext[K]{bc: bc, v: v}
		return typed.KeyedBroadcastFns[K, IN, BC, O]{
			States: bc,
			Element: func(_ *typed.KeyedCtx[K], x IN, out *typed.Collector[O]) error {
				return fn.ProcessElement(ectx, x, out)
			},
			Broadcast: func(_ *typed.FnContext, x BC, out *typed.Collector[O]) error {
				return fn.ProcessBroadcastElement(bctx, x, out)
			},
			OnTimer: func(_ *typed.KeyedCtx[K], ts int64, out *typed.Collector[O]) error {
				return fn.OnTimer(tctx, Timestamp(ts), out)
			},
			Bind: func(r *typed.KeyedRuntime[K], rec, tim *typed.KeyedCtx[K], b *typed.FnContext) {
				v.bind(r, rec, tim)
				bctx.c = b
			},
			Life: lifecycleOf(fn),
		}
	}))
	// Keyed: the non-broadcast input is hash-partitioned; the broadcast
	// input reaches every subtask (graph validation allows that pairing).
	out.node.Keyed = true
	return out
}
