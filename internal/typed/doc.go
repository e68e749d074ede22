// Package typed holds the operators of the typed Go API (package stream):
// generic, allocation-free implementations of task.Operator over Go values,
// handed to the core builder (internal/runtime/core) as task.Factory
// values. It is the engine side of the typed front end; stream is its user
// side.
//
// The operators here know nothing of stream's user-facing types. They are
// written over plain functions and small interfaces whose method sets
// mention only type parameters (an Aggregator, a Collector), so a user's
// function passes to them as it is, or through one adapter that stream
// builds per operator instance (in the factory's Make, once per subtask,
// never per record) and that calls the user's function with stream's
// contexts. Those contexts wrap the runtime contexts defined here.
//
// The window operator, with its triggers' runtime, merging-window sets and
// evictors, is the subpackage windowing.
//
// Timestamps, watermarks and timer times are plain int64 milliseconds, as
// the engine has them.
package typed
