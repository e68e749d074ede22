// Package core is the engine's untyped job API: the one job graph that
// every front end compiles to. The typed Go API (stream), the Beam
// portable runner and the SQL planner each translate their programs into
// a core job — sources, operators and sinks over records of a declared
// Type, joined by partitioned edges — and the engine below runs it the
// same way, whoever built it: the same chains, exchanges, checkpoints,
// state backends, REST views and deployments. Nothing below a front end
// knows which one built a graph.
//
// # Building a job
//
// A Builder collects the graph. Its low-level half is what the typed API
// uses: AddNode appends a graph.Node for any task.Factory (the typed
// operators keep their generic, allocation-free implementations), AddEdge
// connects two nodes, Graph and Build return the graph.JobGraph — plain
// data with a stable fingerprint, so a worker that reruns the job's main
// proves it rebuilt the same graph.
//
// The high-level half adds untyped operators. AddSource, Transform,
// Transform2 and Sink take a spec (name, output Type, side outputs, New
// making one operator instance per subtask) and return a Stream, whose
// methods set the node's name, UID, parallelism, max parallelism and
// chaining, and the partitioning of the next edge: Forward (the default),
// Rebalance, Broadcast, Global, or KeyBy with a KeySelector producing an
// encoded key. An encoded key is placed by the hash of its bytes
// (keygroup.ForEncodedKey), exactly where the typed API places a key with
// the same encoding (keygroup.Hasher.AppendEncodedKey; a string's is its
// bytes), so typed and untyped operators agree on where a key lives.
// AddTyped puts a typed task.Factory into an untyped job.
//
// # Records and types
//
// A Type is the serializer contract of a stream's records: its name (in
// plans and fingerprints), the engine's plumbing with the network batch
// codec (Ops), and Encode/Decode of single records for state and
// checkpoints. Three kinds are first-class:
//
//   - Bytes: byte strings, handed on without a copy inside a chain and
//     decoded from the network with one copy per batch. Beam's encoded
//     elements are Bytes records.
//   - RowType(schema): rows of typed fields with a changelog kind
//     (+I, -U, +U, -D), for the SQL planner.
//   - TypeOf[T]: Go values of T with the engine's own typed fast path
//     (no allocation per record for plain structs), the typed API's.
//
// An untyped operator sees a record as a Record (BytesRecord, RowRecord,
// ValueRecord) and its event timestamp.
//
// # Operators
//
// An Operator handles records (ProcessElement) on its subtask's
// goroutine with a Context: emit to the main output or a declared side
// output, forward watermarks, read the time, and — on a keyed input — use
// keyed state (ValueState, ListState, MapState, scoped by the current
// key and a namespace such as a window) and event- and processing-time
// timers (TimerHandler.OnTimer). Optional interfaces add the rest of the
// lifecycle: Opener, Finisher, Closer, WatermarkHandler (watermark
// holds), OperatorState (snapshot and restore of non-keyed state at
// checkpoints) and CheckpointListener (checkpoint-complete notification,
// for two-phase commits). A Source emits records and watermarks from
// EmitNext and checkpoints its positions through OperatorState.
//
// All of it is the engine's machinery adapted, not a second engine: keyed
// state is a state.Keyed over encoded keys, timers a timer.Service, both
// checkpointed and rescaled per key group with the task's other state;
// operator state and notifications are the task's.
//
// # Running
//
// Build the plan with graph.BuildPlan and run it like any other:
// internal/runtime/jobmaster's embedded executor, or a cluster's JobMaster. A worker
// process reruns the program's main, which rebuilds the same graph with
// its Impls.
package core
