// Package runtime is the root of Sluice's execution engine. It sits under
// internal/ because it is not an API: users build jobs with stream (and
// connectors such as kafka), and the front ends (the typed stream API, and
// the Beam runner and SQL planner to come) compile to the engine's core job
// graph. Its packages are type-agnostic where they can be and never import a
// front end, the deployment layers (yarn, cmd) or connectors:
//
//   - graph: the serialisable logical job graph, validation and chaining;
//   - task: one subtask of an operator chain and its run loop;
//   - exchange: buffers and credit-based channels between subtasks;
//   - netexchange: the same channels between worker processes (gRPC);
//   - watermark: the state machine that combines input watermarks;
//   - state, timer: keyed state and keyed timers;
//   - keygroup: key → key group → subtask;
//   - codec: the canonical binary encoding of checkpoints and savepoints;
//   - checkpoint: the checkpoint coordinator and barrier aligner, and
//     checkpoint/storage, Flink's checkpoint layout on a filesystem;
//   - pendingcommit: the ledger of a two-phase-commit sink (what was
//     pre-committed at which checkpoint), shared by every front end's sink;
//   - restart: restart strategies and the recoverable/unrecoverable decision;
//   - window: window assignment shared by the front ends;
//   - jobmaster: the JobMaster core (one owner loop per job) and the Host
//     that runs a share of an attempt's subtasks in one process.
package runtime
