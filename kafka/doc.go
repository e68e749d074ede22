// Package kafka is the Kafka connector (on github.com/twmb/franz-go): a
// Source whose splits are partitions, with per-partition watermarks, and a
// Sink with NONE, AT_LEAST_ONCE and EXACTLY_ONCE (transactional,
// two-phase commit) delivery, in the manner of Flink's KafkaSource and
// KafkaSink.
//
// # Source
//
//	src, err := kafka.NewSource(kafka.JSONValues[Purchase](),
//		kafka.BootstrapServers("broker:9092"),
//		kafka.Topics("purchases"),
//		kafka.GroupID("purchases-job"),
//		kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetEarliest)),
//	)
//	purchases := stream.FromSource[Purchase, kafka.PartitionSplit](env, src,
//		stream.ForBoundedOutOfOrderness[Purchase](5*time.Second), "purchases")
//
// The Enumerator lists the partitions at start and every
// PartitionDiscoveryInterval, and assigns each to a reader subtask
// (Flink's rule, see partitionOwner). Each Reader consumes its partitions
// with one franz-go client, without joining a consumer group. A split's
// position is its checkpointed state; Bounded makes the job end at
// stopping offsets. Malformed records fail the job or go to a dead-letter
// topic (DeadLetterTopic).
//
// # Sink
//
//	sink, err := kafka.NewSink(kafka.JSONSerializer[Total]("totals"),
//		kafka.BootstrapServers("broker:9092"),
//		kafka.Guarantee(kafka.ExactlyOnce),
//		kafka.TransactionalIDPrefix("totals-job"),
//		kafka.Checkpointing(env.Configuration()),
//	)
//	stream.SinkToCommitting(totals, sink)
//
// EXACTLY_ONCE writes one transaction per subtask per checkpoint under
// transactional ids "<prefix>-<subtask>-<n>" from a bounded pool; the
// TxnWriter pre-commits at the checkpoint barrier and at the end of input,
// and the Committer commits with a raw EndTxn once the checkpoint is
// complete. ListTransactions and AbortLingeringTransactions serve an
// operator's command.
//
// # Security
//
// TLS, SASL PLAIN, SCRAM-SHA-256/512 and GSSAPI (Kerberos: from a keytab
// with SASLGSSAPI, the job's own with
// SASLGSSAPI(KerberosFromConfiguration(env.Configuration())), or a shared
// security/kerberos login with SASLGSSAPILogin) are options of both. Passwords are Secrets read from files or the
// environment; no String, %v or log output shows them.
//
// # How checkpoints drive them
//
//   - Source: at a checkpoint the engine calls Reader.SnapshotState(id) (the
//     splits with their positions) and Enumerator.SnapshotState(id); once the
//     checkpoint is complete, Reader.NotifyCheckpointComplete(id)
//     (CheckpointListener), which commits the positions to the group. On
//     recovery, Source.RestoreEnumerator(ctx, state) instead of
//     CreateEnumerator, and Reader.AddSplits(restored splits) after Start: a
//     restored split's offset wins over StartingOffsets.
//   - Sink: at the barrier, Flush(false) and PrepareCommit() on the writer
//     (PrepareCommit also at the end of input); the committables go into the
//     checkpoint; once it is complete, Committer.Commit(them). Commit is
//     idempotent. On recovery, Commit(restored committables) before the
//     writers are created: a new TxnWriter fences (aborts) every transaction
//     of its ids.
package kafka
