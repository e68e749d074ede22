package stream

import (
	"fmt"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/streamcore"
)

// coreBridge is what internal/streamcore's hooks need of a DataStream[T]
// whose T they do not know.
type coreBridge interface {
	coreStream() (core.Stream, error)
	wrap(env *Environment, n *graph.Node) any
}

func (s DataStream[T]) coreStream() (core.Stream, error) {
	if s.env == nil || s.node == nil {
		return core.Stream{}, fmt.Errorf("stream: a zero DataStream has no operator")
	}
	if s.tag != "" {
		return core.Stream{}, fmt.Errorf("stream: side output %q of %q: only a main output can be used here", s.tag, s.node.Name)
	}
	return core.StreamOf(s.env.jobs, s.node, core.TypeOf[T]()), nil
}

func (DataStream[T]) wrap(env *Environment, n *graph.Node) any { return newStream[T](env, n) }

func init() {
	streamcore.Builder = func(env any) (*core.Builder, bool) {
		e, ok := env.(*Environment)
		if !ok || e == nil {
			return nil, false
		}
		return e.jobs, true
	}
	streamcore.Stream = func(ds any) (core.Stream, error) {
		b, ok := ds.(coreBridge)
		if !ok {
			return core.Stream{}, fmt.Errorf("stream: %T is not a DataStream", ds)
		}
		return b.coreStream()
	}
	streamcore.Wrap = func(env, proto any, n *graph.Node) (any, error) {
		e, ok := env.(*Environment)
		b, ok2 := proto.(coreBridge)
		if !ok || !ok2 {
			return nil, fmt.Errorf("stream: wrapping %T of %T: not a DataStream of an Environment", proto, env)
		}
		return b.wrap(e, n), nil
	}
}
