package stream

import "github.com/sluice/sluice/internal/runtime/graph"

// GraphOf is the job graph env has built, for the tests that look at it.
func GraphOf(env *Environment, name string) *graph.JobGraph { return env.graph(name) }
