// Package streamcore is how a front end of this module compiles into a
// typed program's job (sql/table mixes SQL into a stream.Environment's
// job graph) without the stream package's public API showing engine
// types: stream sets these hooks as it initialises, and they are never
// changed after. A program that does not import stream has none (nil).
package streamcore

import (
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
)

var (
	// Builder returns the core job builder of env, a *stream.Environment
	// (ok false for anything else).
	Builder func(env any) (b *core.Builder, ok bool)
	// Stream returns the core stream of ds, a stream.DataStream[T] (its
	// main output; records are Go values of type T).
	Stream func(ds any) (core.Stream, error)
	// Wrap returns the stream.DataStream[T] of env whose records node
	// produces, T being proto's (a stream.DataStream[T] value).
	Wrap func(env, proto any, node *graph.Node) (any, error)
)
