package stream

import (
	"errors"
	"time"
)

// taggedUnion carries a record of either input of a window join through
// the shared keyed window.
type taggedUnion[A, B any] struct {
	one   A
	two   B
	isOne bool
}

// coWindow is the keyed window over both tagged inputs of a join.
type coWindow[A, B any, K comparable, W AnyWindow] struct {
	ws WindowedStream[taggedUnion[A, B], K, W]
}

func newCoWindow[A, B any, K comparable, W AnyWindow](a DataStream[A], b DataStream[B], keyA func(A) K, keyB func(B) K, assigner WindowAssigner[W]) coWindow[A, B, K, W] {
	ta := Map(a, func(v A) taggedUnion[A, B] { return taggedUnion[A, B]{one: v, isOne: true} }).Name("Map")
	tb := Map(b, func(v B) taggedUnion[A, B] { return taggedUnion[A, B]{two: v} }).Name("Map")
	if a.env != b.env {
		a.env.fail(errors.New("window join: the two streams belong to different environments"))
	}
	if keyA == nil || keyB == nil {
		a.env.fail(errors.New("window join: the key functions must not be nil"))
	}
	union := Union(ta, tb)
	keyed := KeyBy(union, func(u taggedUnion[A, B]) K {
		if u.isOne {
			return keyA(u.one)
		}
		return keyB(u.two)
	})
	return coWindow[A, B, K, W]{ws: Window(keyed, assigner)}
}

// splitTagged separates the records of a window by input.
func splitTagged[A, B any](elems []taggedUnion[A, B]) ([]A, []B) {
	var as []A
	var bs []B
	for _, e := range elems {
		if e.isOne {
			as = append(as, e.one)
		} else {
			bs = append(bs, e.two)
		}
	}
	return as, bs
}

// JoinedStreams is a window join of two streams on equal keys, waiting for
// its join function (JoinApply, JoinApplyFlat). Its methods configure the
// windows.
type JoinedStreams[A, B any, K comparable, W AnyWindow] struct{ c coWindow[A, B, K, W] }

// Join joins a and b in windows: every pair of a record of a and a record
// of b with equal keys (keyA, keyB) in the same window is joined (an inner
// join), when the window fires. It is Flink's
// a.join(b).where(keyA).equalTo(keyB).window(assigner); Go's generics need
// the keys and the assigner up front and the function in JoinApply.
func Join[A, B any, K comparable, W AnyWindow](a DataStream[A], b DataStream[B], keyA func(A) K, keyB func(B) K, assigner WindowAssigner[W]) JoinedStreams[A, B, K, W] {
	return JoinedStreams[A, B, K, W]{newCoWindow(a, b, keyA, keyB, assigner)}
}

// Trigger replaces the assigner's default trigger.
func (j JoinedStreams[A, B, K, W]) Trigger(t Trigger) JoinedStreams[A, B, K, W] {
	j.c.ws = j.c.ws.Trigger(t)
	return j
}

// Evictor sets an evictor on the join's windows.
func (j JoinedStreams[A, B, K, W]) Evictor(e Evictor) JoinedStreams[A, B, K, W] {
	j.c.ws = j.c.ws.Evictor(e)
	return j
}

// AllowedLateness keeps the join's windows for d after their end.
func (j JoinedStreams[A, B, K, W]) AllowedLateness(d time.Duration) JoinedStreams[A, B, K, W] {
	j.c.ws = j.c.ws.AllowedLateness(d)
	return j
}

// JoinApply emits fn(a, b) for every joined pair, with the window's
// MaxTimestamp as timestamp.
func JoinApply[A, B any, K comparable, W AnyWindow, O any](j JoinedStreams[A, B, K, W], fn func(a A, b B) O) DataStream[O] {
	if fn == nil {
		j.c.ws = j.c.ws.fail(errors.New("the join function is nil"))
	}
	return windowProcess(j.c.ws, "Join", ProcessWindowFunc(func(_ K, _ WindowContext[K, W], elems []taggedUnion[A, B], out Collector[O]) error {
		as, bs := splitTagged(elems)
		for _, a := range as {
			for _, b := range bs {
				out.Collect(fn(a, b))
			}
		}
		return nil
	}))
}

// JoinApplyFlat calls fn for every joined pair; fn emits zero or more
// records (Flink's FlatJoinFunction).
func JoinApplyFlat[A, B any, K comparable, W AnyWindow, O any](j JoinedStreams[A, B, K, W], fn func(a A, b B, out Collector[O])) DataStream[O] {
	if fn == nil {
		j.c.ws = j.c.ws.fail(errors.New("the join function is nil"))
	}
	return windowProcess(j.c.ws, "Join", ProcessWindowFunc(func(_ K, _ WindowContext[K, W], elems []taggedUnion[A, B], out Collector[O]) error {
		as, bs := splitTagged(elems)
		for _, a := range as {
			for _, b := range bs {
				fn(a, b, out)
			}
		}
		return nil
	}))
}

// CoGroupedStreams is a window co-group of two streams on equal keys,
// waiting for its function (CoGroupApply). Its methods configure the
// windows.
type CoGroupedStreams[A, B any, K comparable, W AnyWindow] struct{ c coWindow[A, B, K, W] }

// CoGroup groups a and b in windows: for every key and window that fires,
// the records of a and of b with that key are handed to the function
// together (either list may be empty). It is Flink's
// a.coGroup(b).where(keyA).equalTo(keyB).window(assigner).
func CoGroup[A, B any, K comparable, W AnyWindow](a DataStream[A], b DataStream[B], keyA func(A) K, keyB func(B) K, assigner WindowAssigner[W]) CoGroupedStreams[A, B, K, W] {
	return CoGroupedStreams[A, B, K, W]{newCoWindow(a, b, keyA, keyB, assigner)}
}

// Trigger replaces the assigner's default trigger.
func (g CoGroupedStreams[A, B, K, W]) Trigger(t Trigger) CoGroupedStreams[A, B, K, W] {
	g.c.ws = g.c.ws.Trigger(t)
	return g
}

// Evictor sets an evictor on the co-group's windows.
func (g CoGroupedStreams[A, B, K, W]) Evictor(e Evictor) CoGroupedStreams[A, B, K, W] {
	g.c.ws = g.c.ws.Evictor(e)
	return g
}

// AllowedLateness keeps the co-group's windows for d after their end.
func (g CoGroupedStreams[A, B, K, W]) AllowedLateness(d time.Duration) CoGroupedStreams[A, B, K, W] {
	g.c.ws = g.c.ws.AllowedLateness(d)
	return g
}

// CoGroupApply calls fn with the records of both inputs for every key and
// window that fires; fn emits zero or more records, which carry the
// window's MaxTimestamp.
func CoGroupApply[A, B any, K comparable, W AnyWindow, O any](g CoGroupedStreams[A, B, K, W], fn func(as []A, bs []B, out Collector[O])) DataStream[O] {
	if fn == nil {
		g.c.ws = g.c.ws.fail(errors.New("the co-group function is nil"))
	}
	return windowProcess(g.c.ws, "CoGroup", ProcessWindowFunc(func(_ K, _ WindowContext[K, W], elems []taggedUnion[A, B], out Collector[O]) error {
		as, bs := splitTagged(elems)
		fn(as, bs, out)
		return nil
	}))
}
