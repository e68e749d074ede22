package windowing

import (
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/typed"
)

// Evictor removes elements from an evicting window before and after its
// window function runs (Flink's Evictor).
type Evictor[T any, K comparable, W Window[TS], TS ~int64] interface {
	EvictBefore(elems *Elements[T], ctx *EvictorCtx[K, W, TS])
	EvictAfter(elems *Elements[T], ctx *EvictorCtx[K, W, TS])
}

// EvictorCtx gives an evictor the operator's clocks and the window.
type EvictorCtx[K comparable, W Window[TS], TS ~int64] struct {
	env *winEnv[K, W, TS]
	w   W
}

// CurrentProcessingTime is the processing time.
func (c *EvictorCtx[K, W, TS]) CurrentProcessingTime() int64 { return c.env.clock.NowMillis() }

// CurrentWatermark is the operator's input watermark.
func (c *EvictorCtx[K, W, TS]) CurrentWatermark() int64 { return c.env.timers.CurrentWatermark() }

// WindowMaxTimestamp is the window's largest timestamp.
func (c *EvictorCtx[K, W, TS]) WindowMaxTimestamp() int64 { return int64(c.w.MaxTimestamp()) }

// tsValue is a window element with its timestamp (evicting windows).
type tsValue[T any] struct {
	v  T
	ts int64
}

// Elements are an evicting window's elements, in arrival order, as an
// evictor sees them.
type Elements[T any] struct {
	elems   []tsValue[T]
	evicted []bool
	any     bool
}

// Len is the number of elements.
func (e *Elements[T]) Len() int { return len(e.elems) }

// Value is element i.
func (e *Elements[T]) Value(i int) (T, bool) {
	if i >= 0 && i < len(e.elems) {
		return e.elems[i].v, true
	}
	var zero T
	return zero, false
}

// Timestamp is element i's event timestamp; ok is false if it has none.
func (e *Elements[T]) Timestamp(i int) (ts int64, ok bool) {
	ts = e.elems[i].ts
	return ts, ts != typed.NoTimestamp
}

// Evict removes element i once the evictor returns.
func (e *Elements[T]) Evict(i int) {
	if i >= 0 && i < len(e.elems) {
		e.evicted[i] = true
		e.any = true
	}
}

// reset prepares e for elems.
func (e *Elements[T]) reset(elems []tsValue[T]) {
	e.elems, e.any = elems, false
	if cap(e.evicted) < len(elems) {
		e.evicted = make([]bool, len(elems))
	}
	e.evicted = e.evicted[:len(elems)]
	clear(e.evicted)
}

// compact drops the evicted elements in place.
func (e *Elements[T]) compact() {
	if !e.any {
		return
	}
	n := 0
	for i, x := range e.elems {
		if !e.evicted[i] {
			e.elems[n] = x
			n++
		}
	}
	clear(e.elems[n:])
	e.elems = e.elems[:n]
	clear(e.evicted)
	e.any = false
}

// tsListContents keeps all records of a window with their timestamps
// (evicting windows).
type tsListContents[T any, K, W comparable] struct {
	t *state.ValueTable[K, W, []tsValue[T]]
}

func (c *tsListContents[T, K, W]) add(ns W, v T, ts int64) (bool, error) {
	cur, ok, err := c.t.Get(ns)
	if err != nil {
		return false, err
	}
	return ok, c.t.Put(ns, append(cur, tsValue[T]{v: v, ts: ts}))
}

func (c *tsListContents[T, K, W]) get(ns W) ([]tsValue[T], bool, error) { return c.t.Get(ns) }
func (c *tsListContents[T, K, W]) clear(ns W) error                     { return c.t.Delete(ns) }
func (c *tsListContents[T, K, W]) merge(target W, sources []W) error {
	return mergeInto(c.t, target, sources, func(a, b []tsValue[T]) []tsValue[T] { return append(a, b...) })
}

func (c *tsListContents[T, K, W]) put(ns W, elems []tsValue[T]) error {
	if len(elems) == 0 {
		return c.t.Delete(ns)
	}
	return c.t.Put(ns, elems)
}

// newEvictingOp builds an evicting window: all elements are kept with
// their timestamps; inner computes the result over the ones the evictor
// kept.
func newEvictingOp[T any, K comparable, W Window[TS], TS ~int64](p parts[T, K, W, TS], inner func(env *winEnv[K, W, TS]) windowFn[K, W, []T]) *windowOp[T, K, W, TS, []tsValue[T]] {
	newContents := func(keyed *state.Keyed[K]) (contents[T, W, []tsValue[T]], error) {
		t, err := state.NewValueTable[K, W, []tsValue[T]](keyed, "window-contents", state.TTL{})
		return &tsListContents[T, K, W]{t: t}, err
	}
	evictor := p.fns.Evictor
	return newOp(p, newContents, func(env *winEnv[K, W, TS], c contents[T, W, []tsValue[T]]) windowFn[K, W, []tsValue[T]] {
		return &evicting[T, K, W, TS]{evictor: evictor, contents: c.(*tsListContents[T, K, W]), inner: inner(env), ctx: EvictorCtx[K, W, TS]{env: env}}
	})
}

// evicting runs the evictor around the window function of an evicting
// window and keeps what the evictor kept.
type evicting[T any, K comparable, W Window[TS], TS ~int64] struct {
	evictor  Evictor[T, K, W, TS]
	contents *tsListContents[T, K, W]
	inner    windowFn[K, W, []T]
	ev       Elements[T]
	ctx      EvictorCtx[K, W, TS]
	vals     []T
}

func (e *evicting[T, K, W, TS]) process(key K, w, stateW W, elems []tsValue[T]) error {
	e.ctx.w = w
	e.ev.reset(elems)
	e.evictor.EvictBefore(&e.ev, &e.ctx)
	e.ev.compact()
	e.vals = e.vals[:0]
	for _, x := range e.ev.elems {
		e.vals = append(e.vals, x.v)
	}
	err := e.inner.process(key, w, stateW, e.vals)
	clear(e.vals)
	if err != nil {
		return err
	}
	e.evictor.EvictAfter(&e.ev, &e.ctx)
	e.ev.compact()
	kept := e.ev.elems
	e.ev.elems = nil
	return e.contents.put(stateW, kept)
}

func (e *evicting[T, K, W, TS]) clear(key K, w W) error { return e.inner.clear(key, w) }
