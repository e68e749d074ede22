package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// setupTimeout bounds what a writer does with the brokers before its first
// record (checking the timeout, aborting lingering transactions).
const setupTimeout = 2 * time.Minute

// abortTimeout bounds aborting the open transaction at Close.
const abortTimeout = 30 * time.Second

// produceState is shared by a writer and franz-go's produce callbacks.
type produceState struct {
	fatal   bool // AtLeastOnce, ExactlyOnce: a produce error fails the job
	metrics *SinkMetrics
	log     *slog.Logger
	err     atomic.Pointer[error]
	// promise is the callback of every produced record, made once.
	promise func(*kgo.Record, error)
}

func newProduceState(fatal bool, m *SinkMetrics, log *slog.Logger) *produceState {
	p := &produceState{fatal: fatal, metrics: m, log: log}
	p.promise = p.done
	return p
}

func (p *produceState) done(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.metrics.ProduceErrors.Add(1)
	if !p.fatal {
		p.log.Warn("record not delivered", "topic", r.Topic, "err", err)
		return
	}
	if errors.Is(err, context.Canceled) {
		return // the writer is closing
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		// The client asked the broker to create the topic (as Java's
		// producer does) and it did not.
		err = permanent{fmt.Errorf("%w: topic %q, and the broker did not create it (auto.create.topics.enable=false on the broker, or no permission to create topics): create the topic: %w",
			ErrTopicNotCreated, r.Topic, err)}
	} else {
		err = fmt.Errorf("kafka: producing to topic %q: %w", r.Topic, err)
	}
	p.err.CompareAndSwap(nil, &err)
}

func (p *produceState) failed() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// flush waits until every produced record is acknowledged, for at most
// timeout.
func flush(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("kafka: records not acknowledged within the delivery timeout (%v): %w", timeout, err)
		}
		return fmt.Errorf("kafka: flushing: %w", err)
	}
	return nil
}

// record serialises v.
func record[T any](ser Serializer[T], v T, ts stream.Timestamp) (*kgo.Record, error) {
	r, err := ser.Serialize(v, ts)
	if err != nil {
		return nil, fmt.Errorf("kafka: serialising a record: %w", err)
	}
	if r == nil {
		return nil, nil
	}
	if r.Topic == "" {
		return nil, errors.New("kafka: the serializer returned a record without a topic")
	}
	if r.Timestamp.IsZero() && ts != noTimestamp {
		r.Timestamp = ts.Time()
	}
	return r, nil
}

// PlainWriter is the writer of None and AtLeastOnce sinks: one producer
// per subtask.
type PlainWriter[T any] struct {
	s  *Sink[T]
	cl *kgo.Client
	lifetime
	ps     *produceState
	closed bool
}

// lifetime is a writer's context: it ends at Close, or with the subtask's
// context the sink passes to the writer's methods, so records in flight and
// blocked calls end with the subtask.
type lifetime struct {
	ctx      context.Context
	cancel   context.CancelFunc
	followed bool
	unfollow func() bool // stops following the subtask's context
}

func newLifetime() lifetime {
	ctx, cancel := context.WithCancel(context.Background())
	return lifetime{ctx: ctx, cancel: cancel}
}

// follow ends the lifetime with ctx too (the sink passes the same context
// to every call, so the first is enough).
func (l *lifetime) follow(ctx context.Context) {
	if !l.followed && ctx != nil {
		l.followed = true
		l.unfollow = context.AfterFunc(ctx, l.cancel)
	}
}

// end ends the lifetime (at Close).
func (l *lifetime) end() {
	if l.unfollow != nil {
		l.unfollow()
	}
	l.cancel()
}

func newPlainWriter[T any](s *Sink[T], sc stream.SinkContext) (*PlainWriter[T], error) {
	log := s.cfg.client.log.With("component", "kafka-writer", "subtask", sc.Subtask())
	cl, err := s.cfg.client.newClient(s.cfg.producerOpts()...)
	if err != nil {
		return nil, err
	}
	return &PlainWriter[T]{s: s, cl: cl, lifetime: newLifetime(), ps: newProduceState(s.cfg.guarantee == AtLeastOnce, s.metrics, log)}, nil
}

// Write produces the record asynchronously.
func (w *PlainWriter[T]) Write(ctx context.Context, v T, ts stream.Timestamp) error {
	w.follow(ctx)
	if w.closed {
		return ErrClosed
	}
	if err := w.ps.failed(); err != nil {
		return err
	}
	r, err := record(w.s.ser, v, ts)
	if err != nil || r == nil {
		return err
	}
	w.cl.Produce(w.ctx, r, w.ps.promise)
	return nil
}

// Flush waits for every record to be acknowledged: at each checkpoint for
// AtLeastOnce, and at the end of input for both guarantees (so a bounded
// job's records are sent before it ends).
func (w *PlainWriter[T]) Flush(ctx context.Context, endOfInput bool) error {
	w.follow(ctx)
	if w.closed {
		return ErrClosed
	}
	if w.s.cfg.guarantee == None && !endOfInput {
		return nil
	}
	if err := flush(w.ctx, w.cl, w.s.cfg.deliveryTimeout); err != nil {
		return err
	}
	return w.ps.failed()
}

// PrepareCommit flushes (AtLeastOnce) and has nothing to commit; it lets
// the writer serve stream.SinkToCommitting too.
func (w *PlainWriter[T]) PrepareCommit(ctx context.Context) ([]TxnCommittable, error) {
	return nil, w.Flush(ctx, false)
}

// Close closes the producer; records not yet flushed fail.
func (w *PlainWriter[T]) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.end()
	w.cl.Close()
	return nil
}

// TxnWriter is the writer of an ExactlyOnce sink. The records between two
// pre-commits go in one transaction under a transactional id of the
// subtask's pool. The transaction begins with the first record after a
// pre-commit (no empty transactions) on a producer of its own;
// PrepareCommit flushes it, hands back the producer id and epoch as the
// committable and closes the producer without ending the transaction; the
// Committer commits it. Close aborts the open transaction (never a
// pre-committed one: it may belong to a completed checkpoint).
//
// At start the writer checks the transaction timeout and aborts the
// transactions its subtask left open in an earlier run (see
// abortLingering). On recovery the engine must commit the restored
// committables before it creates the writers (as Flink's committer does
// in initializeState): the writers fence their ids, which aborts any
// transaction not yet committed.
type TxnWriter[T any] struct {
	s       *Sink[T]
	subtask int
	pool    int
	timeout time.Duration
	log     *slog.Logger
	next    int // the pool index to try first
	// canGrow: the brokers list transactions, so ids beyond the
	// configured pool are found and aborted after a restart.
	canGrow bool
	cur     *openTxn
	ps      *produceState
	lifetime
	closed    bool
	committed func() bool // whether a committer exists (stream.SinkToCommitting)
	// gauges publishes the subtask's transactions; now is its processing
	// time, epoch ms.
	gauges stream.MetricGroup
	now    func() int64
}

type openTxn struct {
	id string
	cl *kgo.Client
}

func newTxnWriter[T any](s *Sink[T], sc stream.SinkContext) (*TxnWriter[T], error) {
	log := s.cfg.client.log.With("component", "kafka-writer", "subtask", sc.Subtask())
	w := &TxnWriter[T]{
		s: s, subtask: sc.Subtask(), pool: s.cfg.pool(), log: log,
		ps:        newProduceState(true, s.metrics, log),
		committed: func() bool { return s.committers.Load() > 0 },
		gauges:    sc.MetricGroup(),
		now:       func() int64 { return int64(sc.CurrentProcessingTime()) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	admin, err := s.cfg.client.newClient()
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if w.timeout, err = transactionTimeout(ctx, s.cfg, kadm.NewClient(admin), log); err != nil {
		return nil, err
	}
	if s.cfg.checkpointInterval == 0 {
		log.Warn("EXACTLY_ONCE without a checkpoint interval (checkpointing off, or kafka.Checkpointing not given): "+
			"records are committed only at the end of input, and a job running longer than the transaction timeout fails",
			"transaction_timeout", w.timeout)
	}
	n, fenced, listed, err := abortLingering(ctx, admin, log, s.cfg.txnPrefix, sc.Subtask(), sc.Parallelism(), w.pool, w.timeout)
	if err != nil {
		return nil, err
	}
	s.metrics.LingeringAborted.Add(int64(n))
	// The brokers list open transactions by prefix, so a restart finds and
	// aborts those of ids beyond the pool too: the pool may grow.
	w.canGrow = listed
	// Whatever an earlier writer of this subtask left in this process's
	// registry is now fenced: the ids are free.
	for _, id := range fenced {
		s.ids.release(id)
	}
	w.lifetime = newLifetime()
	return w, nil
}

// transactionTimeout returns the timeout to use, checked against the
// brokers' transaction.max.timeout.ms and the checkpoint interval.
func transactionTimeout(ctx context.Context, cfg *sinkConfig, adm *kadm.Client, log *slog.Logger) (time.Duration, error) {
	brokerMax, err := brokerMaxTransactionTimeout(ctx, adm)
	if err != nil {
		log.Warn("cannot read the brokers' transaction.max.timeout.ms; not checking the transaction timeout against it", "err", err)
	}
	timeout := cfg.txnTimeout
	if timeout == 0 {
		timeout = DefaultTransactionTimeout
		if brokerMax > 0 && brokerMax < timeout {
			log.Info("transaction timeout lowered to the brokers' transaction.max.timeout.ms", "timeout", brokerMax)
			timeout = brokerMax
		}
	}
	if brokerMax > 0 && timeout > brokerMax {
		return 0, &TransactionTimeoutError{Timeout: timeout, BrokerMax: brokerMax, CheckpointInterval: cfg.checkpointInterval}
	}
	if cfg.checkpointInterval > 0 && timeout <= cfg.checkpointInterval {
		return 0, &TransactionTimeoutError{Timeout: timeout, BrokerMax: brokerMax, CheckpointInterval: cfg.checkpointInterval}
	}
	return timeout, nil
}

// Write produces the record in the open transaction, beginning one if needed.
func (w *TxnWriter[T]) Write(ctx context.Context, v T, ts stream.Timestamp) error {
	w.follow(ctx)
	if w.closed {
		return ErrClosed
	}
	if err := w.ps.failed(); err != nil {
		return err
	}
	r, err := record(w.s.ser, v, ts)
	if err != nil || r == nil {
		return err
	}
	if w.cur == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	w.cur.cl.Produce(w.ctx, r, w.ps.promise)
	return nil
}

// begin starts a transaction under the next free id of the pool.
func (w *TxnWriter[T]) begin() error {
	if !w.committed() {
		return ErrNoCommitter
	}
	id := ""
	for i := 0; i < w.pool; i++ {
		n := (w.next + i) % w.pool
		cand := transactionalID(w.s.cfg.txnPrefix, w.subtask, n)
		if w.s.ids.acquire(cand) {
			id, w.next = cand, (n+1)%w.pool
			break
		}
	}
	if id == "" && w.canGrow {
		// Every id holds a transaction: the open one, and pre-committed
		// ones that wait for a checkpoint to complete (a failed checkpoint
		// or savepoint keeps its transaction until a later one completes).
		// Take the next id beyond the pool rather than fail the job.
		for n := w.pool; id == ""; n++ {
			if cand := transactionalID(w.s.cfg.txnPrefix, w.subtask, n); w.s.ids.acquire(cand) {
				id = cand
				w.log.Warn("every transactional id of the pool holds a transaction awaiting a completed checkpoint; "+
					"growing the pool", "pool", w.pool, "transactional_id", id)
				w.pool, w.next = n+1, 0
			}
		}
	}
	if id == "" {
		return fmt.Errorf("%w: all %d ids of subtask %d hold a transaction that is open or awaits commit, "+
			"and the brokers cannot list transactions (ListTransactions) for a grown pool to be found after a restart; "+
			"raise kafka.TransactionalIDPoolSize", ErrPoolExhausted, w.pool, w.subtask)
	}
	// A client of its own per transaction (its transactional id is fixed
	// at creation), with fresh credentials: a Kerberos login belongs to
	// one client and ends with it.
	cl, err := w.s.cfg.client.newClient(append(w.s.cfg.producerOpts(), kgo.TransactionalID(id), kgo.TransactionTimeout(w.timeout))...)
	if err != nil {
		w.s.ids.release(id)
		return fmt.Errorf("kafka: creating the producer of %s: %w", id, err)
	}
	// Initialise the id now: this fences any older producer of it.
	ctx, cancel := context.WithTimeout(w.ctx, setupTimeout)
	_, _, err = cl.ProducerID(ctx)
	cancel()
	if err == nil {
		err = cl.BeginTransaction()
	}
	if err != nil {
		cl.Close()
		w.s.ids.release(id)
		return fmt.Errorf("kafka: beginning a transaction with %s: %w", id, err)
	}
	w.cur = &openTxn{id: id, cl: cl}
	w.s.ids.opened(id, w.gauges, w.now())
	w.log.Debug("transaction begun", "transactional_id", id)
	return nil
}

// Flush makes the open transaction's records durable (not visible: that
// is the commit's job).
func (w *TxnWriter[T]) Flush(ctx context.Context, endOfInput bool) error {
	w.follow(ctx)
	if w.closed {
		return ErrClosed
	}
	if endOfInput {
		if !w.committed() {
			return ErrNoCommitter
		}
	}
	if w.cur != nil {
		if err := flush(w.ctx, w.cur.cl, w.s.cfg.deliveryTimeout); err != nil {
			return fmt.Errorf("transaction %s: %w", w.cur.id, err)
		}
	}
	return w.ps.failed()
}

// PrepareCommit pre-commits the open transaction: its records are flushed
// and acknowledged, and its committable returned. With no open
// transaction there is nothing to commit.
func (w *TxnWriter[T]) PrepareCommit(ctx context.Context) ([]TxnCommittable, error) {
	w.follow(ctx)
	if w.closed {
		return nil, ErrClosed
	}
	if w.cur == nil {
		return nil, w.ps.failed()
	}
	t := w.cur
	if err := flush(w.ctx, t.cl, w.s.cfg.deliveryTimeout); err != nil {
		return nil, fmt.Errorf("transaction %s: %w", t.id, err)
	}
	if err := w.ps.failed(); err != nil {
		return nil, err
	}
	pid, epoch, err := t.cl.ProducerID(w.ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: producer id of transaction %s: %w", t.id, err)
	}
	w.cur = nil
	t.cl.Close() // leaves the transaction open for the committer
	w.s.ids.precommitted(t.id)
	w.log.Debug("transaction pre-committed", "transactional_id", t.id, "producer_id", pid, "epoch", epoch)
	return []TxnCommittable{{TransactionalID: t.id, ProducerID: pid, Epoch: epoch}}, nil
}

// Close aborts the open transaction, if any.
func (w *TxnWriter[T]) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if t := w.cur; t != nil {
		w.cur = nil
		ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		if aerr := t.cl.AbortBufferedRecords(ctx); aerr != nil {
			w.log.Warn("dropping buffered records", "transactional_id", t.id, "err", aerr)
		}
		if aerr := t.cl.EndTransaction(ctx, kgo.TryAbort); aerr != nil {
			// The broker aborts it at the transaction timeout, or the next
			// run's writer at start.
			w.log.Warn("aborting the open transaction failed", "transactional_id", t.id, "err", aerr)
		}
		cancel()
		t.cl.Close()
		w.s.ids.release(t.id)
	}
	w.end()
	return nil
}

var (
	_ stream.CommittingWriter[string, TxnCommittable] = (*TxnWriter[string])(nil)
	_ stream.CommittingWriter[string, TxnCommittable] = (*PlainWriter[string])(nil)
)
