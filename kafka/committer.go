package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnCommittable is a pre-committed transaction: its records are flushed
// and it waits to be committed. It is the sink's checkpointed committable;
// any process can commit it, so a job restored from a checkpoint commits
// the transactions of that checkpoint.
type TxnCommittable struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
}

// endTxnOutcome is what an EndTxn answer means for a commit.
type endTxnOutcome int

const (
	// committed: the transaction is committed (now or by an earlier try).
	committed endTxnOutcome = iota
	// superseded: the transactional id has a newer epoch: it was
	// initialised again after this transaction, which the sink does only
	// after the transaction was committed (the pool reuses an id after its
	// commit; a restored job commits its committables before its writers
	// fence their ids). Treated as committed, as Flink does, with a warning.
	superseded
	// retry: the coordinator is busy, moving or completing the commit.
	retry
	// aborted: the transaction was aborted (INVALID_TXN_STATE): its
	// records are lost.
	aborted
	// unknown: the broker forgot the producer id (transactional id expired).
	unknown
	// failed: any other error (authorisation, ...).
	failed
)

// classifyEndTxn decides from an EndTxn(commit) answer whether the
// transaction is done. The "already done" outcomes are:
//
//   - NONE: committed now, or a retry of a commit that completed (the
//     coordinator answers NONE to a commit retried in CompleteCommit, and,
//     with KIP-890 transactions, to a retry with the epoch just before the
//     bumped one).
//   - PRODUCER_FENCED / INVALID_PRODUCER_EPOCH: the id moved on to a newer
//     epoch; see superseded.
//
// CONCURRENT_TRANSACTIONS (the commit is being written), and the
// coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS) and other retriable errors are retried.
// INVALID_TXN_STATE means the transaction was aborted (or never began).
// INVALID_PRODUCER_ID_MAPPING, UNKNOWN_PRODUCER_ID and
// TRANSACTIONAL_ID_NOT_FOUND mean the broker no longer knows it.
func classifyEndTxn(err error) endTxnOutcome {
	switch {
	case err == nil:
		return committed
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return superseded
	case errors.Is(err, kerr.InvalidTxnState):
		return aborted
	case errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.UnknownProducerID), errors.Is(err, kerr.TransactionalIDNotFound):
		return unknown
	case errors.Is(err, kerr.ConcurrentTransactions), kerr.IsRetriable(err):
		return retry
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return retry // a connection error: the request may or may not have arrived
	}
	return failed
}

// Committer commits pre-committed transactions by sending EndTxn(commit)
// for their producer id and epoch: the raw request, not a producer, so a
// fresh process can commit a committable restored from a checkpoint. The
// franz-go client routes the request to the transactional id's
// coordinator, found with FindCoordinator, and finds it again when it
// moves.
type Committer struct {
	cfg     *sinkConfig
	metrics *SinkMetrics
	ids     *idRegistry
	log     *slog.Logger

	mu sync.Mutex
	cl *kgo.Client // created at the first commit
}

var _ stream.Committer[TxnCommittable] = (*Committer)(nil)

func newCommitter(cfg *sinkConfig, m *SinkMetrics, ids *idRegistry) *Committer {
	return &Committer{cfg: cfg, metrics: m, ids: ids, log: cfg.client.log.With("component", "kafka-committer")}
}

// Commit commits every committable; it is idempotent (see classifyEndTxn),
// so committables restored from a checkpoint may be committed again. It
// retries for up to CommitTimeout per transaction and returns a
// *CommitError wrapping ErrTransactionAborted or ErrTransactionUnknown when
// a transaction cannot be committed. Cancelling ctx (the sink subtask's)
// stops the retries; the committables stay in the checkpoint and are
// committed again after a restore.
func (c *Committer) Commit(ctx context.Context, committables []TxnCommittable) error {
	if len(committables) == 0 {
		return nil
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	for _, tc := range committables {
		if err := c.commit(ctx, cl, tc); err != nil {
			return err
		}
		c.ids.release(tc.TransactionalID)
	}
	return nil
}

func (c *Committer) client() (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl == nil {
		cl, err := c.cfg.client.newClient()
		if err != nil {
			return nil, err
		}
		c.cl = cl
	}
	return c.cl, nil
}

func (c *Committer) commit(ctx context.Context, cl *kgo.Client, tc TxnCommittable) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.commitTimeout)
	defer cancel()
	var last error
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = tc.TransactionalID
		req.ProducerID = tc.ProducerID
		req.ProducerEpoch = tc.Epoch
		req.Commit = true
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch classifyEndTxn(err) {
		case committed:
			c.metrics.Transactions.Add(1)
			if attempt > 0 {
				c.log.Info("transaction committed after retrying", "transactional_id", tc.TransactionalID, "attempts", attempt+1, "last_error", last)
			}
			return nil
		case superseded:
			if c.abortedByFence(ctx, cl, tc) {
				return &CommitError{Committable: tc, Err: fmt.Errorf("%w: the coordinator aborted it when it fenced epoch %d (transaction timeout?): %w",
					ErrTransactionAborted, tc.Epoch, err)}
			}
			c.metrics.Superseded.Add(1)
			c.log.Warn("transaction already superseded by a newer epoch of its transactional id; assuming it was committed before "+
				"(if it was not, it was aborted by the transaction timeout and its records are lost)",
				"transactional_id", tc.TransactionalID, "producer_id", tc.ProducerID, "epoch", tc.Epoch, "err", err)
			return nil
		case aborted:
			return &CommitError{Committable: tc, Err: fmt.Errorf("%w: %w", ErrTransactionAborted, err)}
		case unknown:
			return &CommitError{Committable: tc, Err: fmt.Errorf("%w: %w", ErrTransactionUnknown, err)}
		case retry:
			last = err
			c.log.Debug("retrying transaction commit", "transactional_id", tc.TransactionalID, "err", err)
			if werr := backoff(ctx, attempt); werr != nil {
				return &CommitError{Committable: tc, Err: fmt.Errorf("gave up after %v: %w", c.cfg.commitTimeout, last)}
			}
		default:
			return &CommitError{Committable: tc, Err: err}
		}
	}
}

// abortedByFence tells, when the broker shows it, the one superseded case
// that is certainly a loss: the coordinator's last act on the id was to
// abort this very transaction while fencing its epoch (CompleteAbort at
// epoch+1, as after a transaction timeout). A committed transaction whose
// id was initialised again shows Empty or a later transaction instead.
func (c *Committer) abortedByFence(ctx context.Context, cl *kgo.Client, tc TxnCommittable) bool {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{tc.TransactionalID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		return false // cannot tell; Flink's behaviour
	}
	st := resp.TransactionStates[0]
	return st.State == "CompleteAbort" && st.ProducerID == tc.ProducerID && st.ProducerEpoch == tc.Epoch+1
}

// Close closes the committer's client.
func (c *Committer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
	return nil
}
