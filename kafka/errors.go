package kafka

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Returned errors wrap one of these (or are one of the
// typed errors below); test them with errors.Is and errors.As.
var (
	// ErrInvalidConfig: a source, sink or client option is wrong. The
	// error is a *ConfigError listing every problem.
	ErrInvalidConfig = errors.New("kafka: invalid configuration")
	// ErrClosed: the reader or writer was used after Close.
	ErrClosed = errors.New("kafka: closed")
	// ErrTopicNotFound: a subscribed topic does not exist.
	ErrTopicNotFound = errors.New("kafka: topic not found")
	// ErrNoOffset: a partition has no committed offset for the group and
	// the reset strategy is ResetNone (or an explicit offset is missing).
	ErrNoOffset = errors.New("kafka: no offset for partition")
	// ErrMalformedRecord: a record could not be deserialised; the error is
	// a *DeserializationError.
	ErrMalformedRecord = errors.New("kafka: malformed record")
	// ErrTransactionAborted: a pre-committed transaction was aborted
	// before it could be committed (the broker aborted it on timeout, or
	// it was fenced before commit): the records of its checkpoint are
	// lost. The error is a *CommitError.
	ErrTransactionAborted = errors.New("kafka: transaction was aborted before commit")
	// ErrTransactionUnknown: the broker no longer knows the producer id of
	// a committable (its transactional id expired after
	// transactional.id.expiration.ms); whether it was committed cannot be
	// known. The error is a *CommitError.
	ErrTransactionUnknown = errors.New("kafka: transaction unknown to the broker")
	// ErrTransactionTimeout: the transaction timeout cannot work with the
	// broker or the checkpoint interval; the error is a
	// *TransactionTimeoutError.
	ErrTransactionTimeout = errors.New("kafka: unusable transaction timeout")
	// ErrPoolExhausted: every transactional id of a writer's pool belongs
	// to a transaction that is open or awaiting commit.
	ErrPoolExhausted = errors.New("kafka: transactional id pool exhausted")
	// ErrTopicNotCreated: the sink's output topic does not exist and the
	// broker did not create it (auto.create.topics.enable=false, or the
	// client may not create topics). No restart fixes it: the job fails
	// at once.
	ErrTopicNotCreated = errors.New("kafka: output topic does not exist")
	// ErrNoCommitter: an EXACTLY_ONCE sink was added with stream.SinkTo,
	// which never commits; use stream.SinkToCommitting.
	ErrNoCommitter = errors.New("kafka: EXACTLY_ONCE sink without a committer: add it with stream.SinkToCommitting")
)

// ConfigError lists every problem of a configuration.
type ConfigError struct {
	What     string // "source", "sink" or "client"
	Problems []string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kafka: invalid %s configuration:\n  - %s", e.What, strings.Join(e.Problems, "\n  - "))
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// DeserializationError is a record the deserialiser rejected.
type DeserializationError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error // the deserialiser's error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("kafka: malformed record in topic %q partition %d at offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns ErrMalformedRecord and the deserialiser's error.
func (e *DeserializationError) Unwrap() []error { return []error{ErrMalformedRecord, e.Err} }

// Unrecoverable tells the engine's restart strategy not to restart: the
// record stays malformed however often the job reads it again (a registry
// that could not be asked is not a malformed record, and restarts).
func (e *DeserializationError) Unrecoverable() bool { return true }

// CommitError is a committable that could not be committed.
type CommitError struct {
	Committable TxnCommittable
	Err         error // ErrTransactionAborted, ErrTransactionUnknown, or the broker's error
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("kafka: committing transaction %s (producer id %d, epoch %d): %v",
		e.Committable.TransactionalID, e.Committable.ProducerID, e.Committable.Epoch, e.Err)
}

func (e *CommitError) Unwrap() error { return e.Err }

// TransactionTimeoutError says why a transaction timeout cannot work.
type TransactionTimeoutError struct {
	Timeout time.Duration // the sink's transaction timeout
	// BrokerMax is the brokers' transaction.max.timeout.ms (0: unknown).
	BrokerMax time.Duration
	// CheckpointInterval is execution.checkpointing.interval (0: disabled).
	CheckpointInterval time.Duration
}

// Unrecoverable tells the engine not to restart: the timeout is
// configuration, the same after any restart.
func (e *TransactionTimeoutError) Unrecoverable() bool { return true }

func (e *TransactionTimeoutError) Error() string {
	if e.BrokerMax > 0 && e.Timeout > e.BrokerMax {
		return fmt.Sprintf("kafka: transaction timeout %v exceeds the brokers' transaction.max.timeout.ms (%v): "+
			"lower it with kafka.TransactionTimeout or raise transaction.max.timeout.ms on the brokers", e.Timeout, e.BrokerMax)
	}
	return fmt.Sprintf("kafka: transaction timeout %v is not longer than the checkpoint interval "+
		"(execution.checkpointing.interval = %v): the broker would abort every transaction before its checkpoint completes; "+
		"raise kafka.TransactionTimeout (brokers allow up to %v) or checkpoint more often", e.Timeout, e.CheckpointInterval, e.BrokerMax)
}

// Unwrap returns ErrTransactionTimeout.
func (e *TransactionTimeoutError) Unwrap() error { return ErrTransactionTimeout }

// permanent marks an error that no restart of the job can fix (a missing
// offset with no reset strategy, an output topic the broker will not
// create): the engine fails the job at once instead of restarting it over
// and over. It reads as, and unwraps to, its error.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

func (p permanent) Unwrap() error { return p.err }

// Unrecoverable tells the engine's restart strategy not to restart.
func (permanent) Unrecoverable() bool { return true }
