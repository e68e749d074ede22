package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional ids are "<prefix>-<subtask>-<n>", n in [0, pool size).

func transactionalID(prefix string, subtask, n int) string {
	return prefix + "-" + strconv.Itoa(subtask) + "-" + strconv.Itoa(n)
}

// parseTransactionalID returns the subtask and pool index of an id of the
// prefix; ok is false for ids of other prefixes (including longer prefixes
// that start with this one, like "job-2" for "job").
func parseTransactionalID(prefix, id string) (subtask, n int, ok bool) {
	rest, found := strings.CutPrefix(id, prefix+"-")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	subtask, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || subtask < 0 || n < 0 || strconv.Itoa(subtask) != a || strconv.Itoa(n) != b {
		return 0, 0, false
	}
	return subtask, n, true
}

// backoff waits before retry attempt (0-based), or returns ctx's error.
func backoff(ctx context.Context, attempt int) error {
	d := 20 * time.Millisecond << min(attempt, 6) // up to 1.28 s
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// initProducerID initialises a transactional id: the coordinator bumps its
// epoch, which fences every producer using an older one, and aborts the
// transaction left open under it (Kafka's InitProducerId). While the abort
// completes the coordinator answers CONCURRENT_TRANSACTIONS; we retry.
func initProducerID(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) (int64, int16, error) {
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			if ctx.Err() != nil {
				return 0, 0, fmt.Errorf("kafka: initialising transactional id %s: %w", id, ctx.Err())
			}
			if werr := backoff(ctx, attempt); werr != nil {
				return 0, 0, fmt.Errorf("kafka: initialising transactional id %s: %w", id, err)
			}
			continue
		}
		code := kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case code == nil:
			return resp.ProducerID, resp.ProducerEpoch, nil
		case errors.Is(code, kerr.InvalidTransactionTimeout):
			return 0, 0, &TransactionTimeoutError{Timeout: timeout}
		case errors.Is(code, kerr.ConcurrentTransactions), kerr.IsRetriable(code):
			if werr := backoff(ctx, attempt); werr != nil {
				return 0, 0, fmt.Errorf("kafka: initialising transactional id %s: %w (last error: %w)", id, werr, code)
			}
		default:
			return 0, 0, fmt.Errorf("kafka: initialising transactional id %s: %w", id, code)
		}
	}
}

// brokerMaxTransactionTimeout is the least transaction.max.timeout.ms of
// the brokers, or 0 if no broker tells.
func brokerMaxTransactionTimeout(ctx context.Context, adm *kadm.Client) (time.Duration, error) {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return 0, fmt.Errorf("kafka: listing brokers: %w", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	if err != nil && len(rcs) == 0 {
		return 0, fmt.Errorf("kafka: describing broker configs: %w", err)
	}
	var least time.Duration
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != "transaction.max.timeout.ms" || c.Value == nil {
				continue
			}
			ms, perr := strconv.ParseInt(*c.Value, 10, 64)
			if perr != nil || ms <= 0 {
				continue
			}
			if d := time.Duration(ms) * time.Millisecond; least == 0 || d < least {
				least = d
			}
		}
	}
	return least, nil
}

// Transaction describes the transaction state of one transactional id of a
// sink's prefix.
type Transaction struct {
	TransactionalID string
	Subtask, Index  int // parsed from "<prefix>-<subtask>-<index>"
	ProducerID      int64
	ProducerEpoch   int16
	// State is Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort,
	// CompleteCommit, CompleteAbort, Dead, PrepareEpochFence.
	State string
	// Started is when the open transaction began (zero if none is open).
	Started    time.Time
	Timeout    time.Duration
	Partitions []TopicPartition
}

// Open reports whether the transaction is neither finished nor empty.
func (t Transaction) Open() bool {
	switch t.State {
	case "Empty", "CompleteCommit", "CompleteAbort", "Dead":
		return false
	}
	return true
}

// listTransactions lists the transactional ids of prefix and describes them.
func listTransactions(ctx context.Context, adm *kadm.Client, prefix string) ([]Transaction, error) {
	// Brokers before Kafka 4.1 ignore the pattern and list every
	// transaction; the ids are filtered here anyway.
	pattern := "^" + regexp.QuoteMeta(prefix) + "-[0-9]+-[0-9]+$"
	listed, err := adm.ListTransactionsByTxPattern(ctx, nil, nil, pattern)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing transactions: %w", err)
	}
	var ids []string
	for _, id := range listed.TransactionalIDs() {
		if _, _, ok := parseTransactionalID(prefix, id); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil && len(described) == 0 {
		return nil, fmt.Errorf("kafka: describing transactions: %w", err)
	}
	var out []Transaction
	for _, d := range described.Sorted() {
		if d.Err != nil {
			if errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				continue // expired between listing and describing
			}
			return nil, fmt.Errorf("kafka: describing transaction %s: %w", d.TxnID, d.Err)
		}
		s, n, _ := parseTransactionalID(prefix, d.TxnID)
		t := Transaction{
			TransactionalID: d.TxnID, Subtask: s, Index: n,
			ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, State: d.State,
			Timeout: time.Duration(d.TimeoutMillis) * time.Millisecond,
		}
		if d.StartTimestamp > 0 {
			t.Started = time.UnixMilli(d.StartTimestamp)
		}
		for _, tps := range d.Topics.Sorted() {
			for _, p := range tps.Partitions {
				t.Partitions = append(t.Partitions, TopicPartition{Topic: tps.Topic, Partition: p})
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// ListTransactions lists the transactions of the sink whose transactional
// id prefix is prefix, for an operator's command (Kafka's
// kafka-transactions.sh list + describe, filtered): which are open, since
// when, on which partitions. It needs DESCRIBE on the transactional ids.
func ListTransactions(ctx context.Context, prefix string, opts ...Opt) ([]Transaction, error) {
	cl, err := toolClient(prefix, opts)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return listTransactions(ctx, kadm.NewClient(cl), prefix)
}

// AbortLingeringTransactions aborts every open transaction of the prefix
// by initialising its transactional id (which fences its producer and
// makes the coordinator abort it), and returns those it aborted.
//
// Run it only while the job is not running (a running writer would be
// fenced and fail), and never on a job that will be restored from a
// checkpoint whose transactions are still to be committed: aborting them
// loses their records. A restarted job aborts its own lingering
// transactions at start; this is for a job that will not be restarted,
// whose open transactions would otherwise block read_committed consumers
// until their transaction timeout.
func AbortLingeringTransactions(ctx context.Context, prefix string, opts ...Opt) ([]Transaction, error) {
	cl, err := toolClient(prefix, opts)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	txns, err := listTransactions(ctx, kadm.NewClient(cl), prefix)
	if err != nil {
		return nil, err
	}
	var aborted []Transaction
	for _, t := range txns {
		if !t.Open() {
			continue
		}
		timeout := t.Timeout
		if timeout <= 0 {
			timeout = time.Minute
		}
		if _, _, err := initProducerID(ctx, cl, t.TransactionalID, timeout); err != nil {
			return aborted, err
		}
		aborted = append(aborted, t)
	}
	return aborted, nil
}

func toolClient(prefix string, opts []Opt) (*kgo.Client, error) {
	c := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&c)
	}
	var p problems
	c.validate(p.add)
	if prefix == "" {
		p.add("empty transactional id prefix")
	}
	if err := p.err("client"); err != nil {
		return nil, err
	}
	return c.newClient()
}

// abortLingering fences the transactional ids subtask may have left open
// in an earlier run: its own pool, any listed id of its prefix beyond the
// pool (the pool was larger), and the ids of subtasks that no longer exist
// (an earlier run had a higher parallelism) whose number is subtask modulo
// parallelism. Listing needs DESCRIBE on transactional ids; without it,
// only the own pool is fenced.
func abortLingering(ctx context.Context, cl *kgo.Client, log *slog.Logger, prefix string, subtask, parallelism, pool int, timeout time.Duration) (aborted int, fenced []string, listed bool, err error) {
	fence := map[string]bool{}
	for n := 0; n < pool; n++ {
		fence[transactionalID(prefix, subtask, n)] = true
	}
	txns, lerr := listTransactions(ctx, kadm.NewClient(cl), prefix)
	if lerr != nil {
		log.Warn("cannot list transactions; aborting only this subtask's pool", "err", lerr)
	}
	open := map[string]bool{}
	for _, t := range txns {
		if t.Open() && t.Subtask%parallelism == subtask {
			fence[t.TransactionalID] = true
			open[t.TransactionalID] = true
		}
	}
	ids := make([]string, 0, len(fence))
	for id := range fence {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, _, err := initProducerID(ctx, cl, id, timeout); err != nil {
			return aborted, nil, false, err
		}
		if open[id] {
			aborted++
			log.Info("aborted a lingering transaction", "transactional_id", id)
		}
	}
	return aborted, ids, lerr == nil, nil
}
