package typed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sort"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/task"
)

// ErrUndeclaredBroadcastState is stream's sentinel for a broadcast state
// a function uses without declaring it on Broadcast.
var ErrUndeclaredBroadcastState = errors.New("stream: broadcast state not declared")

// BcState is one broadcast state of a subtask: a map kept in every
// subtask, checkpointed as operator state. Its methods are those of
// stream's BroadcastState.
type BcState[UK comparable, UV any] struct{ m map[UK]UV }

// NewBcState returns an empty broadcast state.
func NewBcState[UK comparable, UV any]() *BcState[UK, UV] { return &BcState[UK, UV]{m: map[UK]UV{}} }

func (s *BcState[UK, UV]) Get(k UK) (UV, bool) {
	v, ok := s.m[k]
	return v, ok
}
func (s *BcState[UK, UV]) Contains(k UK) bool { _, ok := s.m[k]; return ok }
func (s *BcState[UK, UV]) Len() int           { return len(s.m) }
func (s *BcState[UK, UV]) Put(k UK, v UV)     { s.m[k] = v }
func (s *BcState[UK, UV]) Remove(k UK)        { delete(s.m, k) }
func (s *BcState[UK, UV]) Clear()             { clear(s.m) }

// All iterates over the entries in no particular order.
func (s *BcState[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) {
		for k, v := range s.m {
			if !yield(k, v) {
				return
			}
		}
	}
}

func (s *BcState[UK, UV]) encode() ([]byte, error) {
	c, err := codec.For[map[UK]UV]()
	if err != nil {
		return nil, err
	}
	return c.Append(nil, s.m), nil
}

func (s *BcState[UK, UV]) decode(b []byte) error {
	c, err := codec.For[map[UK]UV]()
	if err != nil {
		return err
	}
	m, _, err := c.Decode(b)
	if err != nil {
		return err
	}
	if m == nil {
		m = map[UK]UV{}
	}
	s.m = m
	return nil
}

type bcCodec interface {
	encode() ([]byte, error)
	decode([]byte) error
}

// BroadcastStates are one operator subtask's broadcast states by name. A
// lookup of an undeclared state sticks an error that fails the task after
// the call.
type BroadcastStates struct {
	maps map[string]any // name → *BcState[UK, UV]
	err  error
}

// NewBroadcastStates makes the states created by news, by name.
func NewBroadcastStates(news map[string]func() any) *BroadcastStates {
	s := &BroadcastStates{maps: map[string]any{}}
	for name, create := range news {
		s.maps[name] = create()
	}
	return s
}

// TakeErr returns and clears the sticky error.
func (s *BroadcastStates) TakeErr() error {
	err := s.err
	s.err = nil
	return err
}

// Lookup is the broadcast state name of map type map[UK]UV. An
// undeclared name or another type sticks ErrUndeclaredBroadcastState and
// returns an empty state.
func Lookup[UK comparable, UV any](s *BroadcastStates, name string) *BcState[UK, UV] {
	st, ok := s.maps[name]
	if !ok {
		if s.err == nil {
			s.err = fmt.Errorf("%w: %q (pass its descriptor to Broadcast)", ErrUndeclaredBroadcastState, name)
		}
		return NewBcState[UK, UV]()
	}
	bs, ok := st.(*BcState[UK, UV])
	if !ok {
		if s.err == nil {
			s.err = fmt.Errorf("%w: %q is declared as %s, not as map[%s]%s", ErrUndeclaredBroadcastState, name,
				reflect.TypeOf(st).Elem().Field(0).Type, reflect.TypeFor[UK](), reflect.TypeFor[UV]())
		}
		return NewBcState[UK, UV]()
	}
	return bs
}

// snapshot encodes every state as one operator-state entry: the name's
// length and bytes, then the map, in name order. Every subtask holds the
// same states, so each entry is a union entry: on restore every subtask
// reads the first entry of each name.
func (s *BroadcastStates) snapshot() ([][]byte, bool, error) {
	names := make([]string, 0, len(s.maps))
	for n := range s.maps {
		names = append(names, n)
	}
	sort.Strings(names)
	var entries [][]byte
	for _, n := range names {
		b, err := s.maps[n].(bcCodec).encode()
		if err != nil {
			return nil, false, fmt.Errorf("broadcast state %q: %w", n, err)
		}
		e := binary.AppendUvarint(nil, uint64(len(n)))
		entries = append(entries, append(append(e, n...), b...))
	}
	return entries, true, nil
}

func (s *BroadcastStates) restore(entries [][]byte) error {
	done := map[string]bool{}
	for _, e := range entries {
		l, k := binary.Uvarint(e)
		if k <= 0 || l > uint64(len(e)-k) {
			return fmt.Errorf("broadcast state: corrupt entry")
		}
		name := string(e[k : k+int(l)])
		if done[name] {
			continue
		}
		st, ok := s.maps[name]
		if !ok {
			return fmt.Errorf("broadcast state %q is in the checkpoint but not declared on the operator", name)
		}
		if err := st.(bcCodec).decode(e[k+int(l):]); err != nil {
			return fmt.Errorf("broadcast state %q: %w", name, err)
		}
		done[name] = true
	}
	return nil
}

type broadcastOp[IN, BC, O any] struct {
	env  *Env
	out  task.Output[O]
	fn1  ProcessFn[IN, O]
	fn2  ProcessFn[BC, O]
	life *Lifecycle
	time Time
	bc   *BroadcastStates
	ectx FnContext
	bctx FnContext
	c    Collector[O]
}

func (p *broadcastOp[IN, BC, O]) Open() error { return p.life.DoOpen(p.env) }

func (p *broadcastOp[IN, BC, O]) element(v IN, ts int64) error {
	p.ectx.SO.Ts, p.c.Ts = ts, ts
	err := p.fn1(&p.ectx, v, &p.c)
	berr := p.bc.TakeErr()
	if err = Settle(err, &p.c, &p.ectx.SO); err != nil {
		return err
	}
	return berr
}

func (p *broadcastOp[IN, BC, O]) broadcast(v BC, ts int64) error {
	p.bctx.SO.Ts, p.c.Ts = ts, ts
	err := p.fn2(&p.bctx, v, &p.c)
	berr := p.bc.TakeErr()
	if err = Settle(err, &p.c, &p.bctx.SO); err != nil {
		return err
	}
	return berr
}

func (p *broadcastOp[IN, BC, O]) ProcessWatermark(wm int64) error {
	p.time.WM = wm
	return p.out.EmitWatermark(wm)
}

func (p *broadcastOp[IN, BC, O]) Finish() error { return nil }
func (p *broadcastOp[IN, BC, O]) Close() error  { return p.life.DoClose() }

// SnapshotOperatorState implements task.OperatorState: the broadcast
// states, a union state.
func (p *broadcastOp[IN, BC, O]) SnapshotOperatorState(int64) ([][]byte, bool, error) {
	return p.bc.snapshot()
}

// RestoreOperatorState implements task.OperatorState.
func (p *broadcastOp[IN, BC, O]) RestoreOperatorState(entries [][]byte) error {
	return p.bc.restore(entries)
}

// BroadcastFns are the callbacks of one subtask's broadcast process
// function over its broadcast states.
type BroadcastFns[IN, BC, O any] struct {
	States    *BroadcastStates
	Element   ProcessFn[IN, O]
	Broadcast ProcessFn[BC, O]
	Life      Lifecycle
}

// BroadcastProcess processes a non-broadcast input (0) with broadcast
// states that the broadcast input (1) updates; fns makes the function
// of each subtask.
func BroadcastProcess[IN, BC, O any](fns func() BroadcastFns[IN, BC, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &broadcastOp[IN, BC, O]{env: env, out: out, fn1: f.Element, fn2: f.Broadcast, life: &f.Life, bc: f.States, time: NewTime(env.Clock)}
		op.ectx = FnContext{T: &op.time, SO: SideOutputs{Outs: sides}}
		op.bctx = FnContext{T: &op.time, SO: SideOutputs{Outs: sides}}
		op.c.Out = out
		return op, []any{Input[IN](op.element), Input[BC](op.broadcast)}, nil
	})
}

type keyedBroadcastOp[K comparable, IN, BC, O any] struct {
	KeyedFnOp[K, O]
	key  func(IN) K
	fn1  KeyedProcessFn[K, IN, O]
	fn2  ProcessFn[BC, O]
	bc   *BroadcastStates
	bctx FnContext
}

func (p *keyedBroadcastOp[K, IN, BC, O]) element(v IN, ts int64) error {
	p.Element(p.key(v), ts)
	err := p.fn1(&p.Ctx, v, &p.C)
	berr := p.bc.TakeErr()
	if err = p.Settle(err, &p.C, &p.Ctx.SO); err != nil {
		return err
	}
	return berr
}

func (p *keyedBroadcastOp[K, IN, BC, O]) broadcast(v BC, ts int64) error {
	p.bctx.SO.Ts, p.C.Ts = ts, ts
	err := p.fn2(&p.bctx, v, &p.C)
	berr := p.bc.TakeErr()
	if err = p.Settle(err, &p.C, &p.bctx.SO); err != nil {
		return err
	}
	return berr
}

// SnapshotOperatorState implements task.OperatorState.
func (p *keyedBroadcastOp[K, IN, BC, O]) SnapshotOperatorState(int64) ([][]byte, bool, error) {
	return p.bc.snapshot()
}

// RestoreOperatorState implements task.OperatorState.
func (p *keyedBroadcastOp[K, IN, BC, O]) RestoreOperatorState(entries [][]byte) error {
	return p.bc.restore(entries)
}

// KeyedBroadcastFns are the callbacks of one subtask's keyed broadcast
// process function. Bind gets the broadcast input's context too.
type KeyedBroadcastFns[K comparable, IN, BC, O any] struct {
	States    *BroadcastStates
	Element   KeyedProcessFn[K, IN, O]
	Broadcast ProcessFn[BC, O]
	OnTimer   OnTimerFn[K, O]
	Bind      func(r *KeyedRuntime[K], rec, tim *KeyedCtx[K], bc *FnContext)
	Life      Lifecycle
}

// KeyedBroadcastProcess processes a keyed input (0, keyed by key) with
// keyed state, timers and broadcast states that the broadcast input (1)
// updates; fns makes the function of each subtask. A timer's call may
// use the broadcast states too (its errors fail the task after it).
func KeyedBroadcastProcess[K comparable, IN, BC, O any](key func(IN) K, fns func() KeyedBroadcastFns[K, IN, BC, O]) *ProcFactory[O] {
	return NewProcFactory(func(env *Env, out task.Output[O], sides map[string]any) (task.Operator, []any, error) {
		f := fns()
		op := &keyedBroadcastOp[K, IN, BC, O]{key: key, fn1: f.Element, fn2: f.Broadcast, bc: f.States}
		op.Setup(env, out, sides, &f.Life)
		if f.OnTimer != nil {
			op.OnTimer = func(ctx *KeyedCtx[K], ts int64, out *Collector[O]) error {
				err := f.OnTimer(ctx, ts, out)
				if berr := op.bc.TakeErr(); err == nil {
					err = berr
				}
				return err
			}
		}
		op.bctx = FnContext{T: &op.R.Time, SO: SideOutputs{Outs: sides}}
		if f.Bind != nil {
			op.Bind = func(r *KeyedRuntime[K], rec, tim *KeyedCtx[K]) { f.Bind(r, rec, tim, &op.bctx) }
		}
		return op, []any{Input[IN](op.element), Input[BC](op.broadcast)}, nil
	})
}
