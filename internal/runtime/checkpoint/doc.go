// Package checkpoint decides when checkpoints and savepoints happen and when
// they are complete, and how a task aligns the barriers on its inputs.
//
// Both are state machines without I/O or wall clock, in the style of etcd
// raft: time and events are inputs, decisions are outputs, so they are
// tested with scripted traces (testdata/) and no sleeps.
//
//   - Coordinator runs in the JobMaster, one per job attempt. It triggers
//     periodic checkpoints and savepoints (TriggerBarrier), collects the
//     tasks' acknowledgements (Complete), and, once the lead has written the
//     checkpoint's metadata (Persisted), tells the tasks (NotifyComplete).
//     It expires, aborts and subsumes checkpoints and fails the job after too
//     many consecutive failures (FailJob), following Flink's
//     CheckpointCoordinator and CheckpointFailureManager, including Flink
//     1.14+ (FLIP-147) checkpoints after some tasks have finished.
//   - Aligner runs in each task with inputs. It says when the barriers of a
//     checkpoint have arrived on every input channel (snapshot now), which
//     channels to hold back meanwhile (EXACTLY_ONCE), and which alignments
//     a newer barrier cancelled.
//
// Times are int64 epoch milliseconds, as everywhere in Sluice. Option names
// follow Flink's execution.checkpointing.* keys (see OptionsFromConfig).
package checkpoint
