// Package runtime is the root of Sluice's execution engine. Its packages
// are type-agnostic where they can be and never import the user API
// (stream), the deployment layers (yarn, cmd) or connectors:
//
//   - graph: the serialisable logical job graph, validation and chaining;
//   - task: one subtask of an operator chain and its run loop;
//   - exchange: buffers and credit-based channels between subtasks;
//   - watermark: the state machine that combines input watermarks;
//   - state, timer: keyed state and keyed timers;
//   - keygroup: key → key group → subtask;
//   - clock: processing time (system or manual);
//   - local: the embedded, in-process mini cluster.
package runtime
