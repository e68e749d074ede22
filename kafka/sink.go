package kafka

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DeliveryGuarantee is the sink's guarantee (Flink's DeliveryGuarantee).
type DeliveryGuarantee int

// Delivery guarantees.
const (
	// None: records are sent as they come and never waited for except at
	// the end of input; a produce error is logged and counted
	// (SinkMetrics.ProduceErrors), not fatal. Records may be lost or, on
	// recovery, duplicated.
	None DeliveryGuarantee = iota
	// AtLeastOnce: the writer waits for every record to be acknowledged at
	// each checkpoint (Flush) and at the end of input; a produce error
	// fails the job. Records may be duplicated on recovery.
	AtLeastOnce
	// ExactlyOnce: the records between two checkpoints go in one Kafka
	// transaction per subtask, committed once the checkpoint is complete.
	// Consumers must read with read_committed. Add the sink with
	// stream.SinkToCommitting.
	ExactlyOnce
)

func (g DeliveryGuarantee) String() string {
	switch g {
	case None:
		return "NONE"
	case AtLeastOnce:
		return "AT_LEAST_ONCE"
	case ExactlyOnce:
		return "EXACTLY_ONCE"
	}
	return fmt.Sprintf("DeliveryGuarantee(%d)", int(g))
}

// Sink defaults.
const (
	// DefaultTransactionTimeout is Flink's KafkaSink transaction.timeout.ms
	// (1 hour). When it is not set explicitly, the sink lowers it to the
	// brokers' transaction.max.timeout.ms (15 minutes by default) rather
	// than fail.
	DefaultTransactionTimeout = time.Hour
	// DefaultDeliveryTimeout is Kafka's delivery.timeout.ms: how long
	// records may take to be acknowledged, retries included.
	DefaultDeliveryTimeout = 2 * time.Minute
	// DefaultCommitTimeout bounds the retries of one transaction commit.
	DefaultCommitTimeout = 2 * time.Minute
)

type sinkConfig struct {
	client          clientConfig
	guarantee       DeliveryGuarantee
	txnPrefix       string
	poolSize        int
	txnTimeout      time.Duration // 0: default (1h capped at the brokers' maximum)
	deliveryTimeout time.Duration
	commitTimeout   time.Duration
	linger          time.Duration
	compression     string

	// From the job's checkpointing configuration.
	checkpointInterval time.Duration
	maxConcurrent      int
}

// Guarantee sets the delivery guarantee. Default None (as Flink's KafkaSink).
func Guarantee(g DeliveryGuarantee) SinkOpt { return sinkOpt{func(c *sinkConfig) { c.guarantee = g }} }

// TransactionalIDPrefix sets the prefix of the sink's transactional ids,
// "<prefix>-<subtask>-<n>". Required for ExactlyOnce; it must be unique to
// the job among everything writing to the cluster (two jobs with one
// prefix fence each other), and stay the same across restarts so that a
// restarted job aborts the transactions its predecessor left open.
func TransactionalIDPrefix(p string) SinkOpt { return sinkOpt{func(c *sinkConfig) { c.txnPrefix = p }} }

// TransactionalIDPoolSize sets how many transactional ids each subtask
// cycles through (n in 0..size-1). A transaction keeps its id from its
// first record until it is committed, after the checkpoint that
// pre-committed it completes. In flight at once there are: the open
// transaction (1), those pre-committed for checkpoints still in progress
// (up to execution.checkpointing.max-concurrent-checkpoints), and the
// last completed checkpoint's, whose commit may not have run yet when the
// next checkpoint's barrier arrives (1). Default: max-concurrent-checkpoints
// + 2. Each failed checkpoint or savepoint keeps its transaction until a
// later one completes (Flink's semantics); when every id holds one, the
// writer takes ids beyond the pool (logging a warning) where the brokers
// list transactions (ListTransactions, Kafka 3.0+), so that a restart
// finds and aborts them, and otherwise fails with ErrPoolExhausted.
func TransactionalIDPoolSize(n int) SinkOpt { return sinkOpt{func(c *sinkConfig) { c.poolSize = n }} }

// TransactionTimeout sets Kafka's transaction.timeout.ms: the broker aborts
// a transaction open longer. It must exceed the checkpoint interval (a
// transaction lives from one checkpoint to the completion of the next) and
// should exceed the longest checkpoint plus the time to restart after a
// failure (as Flink recommends), and it may not exceed the brokers'
// transaction.max.timeout.ms. The writer checks both at start and fails
// with a *TransactionTimeoutError naming the values. Default
// DefaultTransactionTimeout (1 hour), lowered to the brokers' maximum.
func TransactionTimeout(d time.Duration) SinkOpt {
	return sinkOpt{func(c *sinkConfig) {
		c.txnTimeout = d
		if d <= 0 {
			c.txnTimeout = -1 // reported by validate
		}
	}}
}

// DeliveryTimeout bounds each flush (at a checkpoint, a pre-commit and the
// end of input): records not acknowledged within it, retries included,
// fail the job (Kafka's delivery.timeout.ms, measured from the flush
// rather than from each record, since records keep their event
// timestamps, which franz-go's per-record timeout would measure from).
// Default DefaultDeliveryTimeout (2 min).
func DeliveryTimeout(d time.Duration) SinkOpt {
	return sinkOpt{func(c *sinkConfig) { c.deliveryTimeout = d }}
}

// CommitTimeout bounds the retries of one transaction commit on retryable
// errors (coordinator moving, broker restarting). Default
// DefaultCommitTimeout (2 min).
func CommitTimeout(d time.Duration) SinkOpt {
	return sinkOpt{func(c *sinkConfig) { c.commitTimeout = d }}
}

// Linger sets how long the producer waits to fill a batch (linger.ms).
// Default 10 ms (franz-go's).
func Linger(d time.Duration) SinkOpt { return sinkOpt{func(c *sinkConfig) { c.linger = d }} }

// Compression sets the batch compression: none, gzip, snappy, lz4 or zstd
// (compression.type). Default none.
func Compression(codec string) SinkOpt {
	return sinkOpt{func(c *sinkConfig) { c.compression = strings.ToLower(codec) }}
}

// Checkpointing gives the sink the job's checkpointing configuration
// (execution.checkpointing.interval and max-concurrent-checkpoints), pass
// env.Configuration(): the transaction timeout is checked against the
// interval and the id pool is sized from max-concurrent-checkpoints.
// Default: the keys' defaults (checkpointing disabled, 1 concurrent).
func Checkpointing(c *conf.Configuration) SinkOpt {
	return sinkOpt{func(sc *sinkConfig) {
		sc.checkpointInterval = conf.Get(c, conf.CheckpointingInterval)
		sc.maxConcurrent = conf.Get(c, conf.CheckpointingMaxConcurrent)
	}}
}

func (c *sinkConfig) validate() error {
	var p problems
	c.client.validate(p.add)
	if c.guarantee < None || c.guarantee > ExactlyOnce {
		p.add("unknown delivery guarantee %d", int(c.guarantee))
	}
	if c.guarantee == ExactlyOnce {
		if c.txnPrefix == "" {
			p.add("EXACTLY_ONCE needs a transactional id prefix (kafka.TransactionalIDPrefix)")
		}
	}
	if strings.ContainsAny(c.txnPrefix, " \t\n") {
		p.add("transactional id prefix %q contains white space", c.txnPrefix)
	}
	if c.poolSize < 0 {
		p.add("transactional id pool size %d: must be positive", c.poolSize)
	}
	if c.txnTimeout < 0 {
		p.add("transaction timeout must be positive")
	}
	if c.deliveryTimeout <= 0 {
		p.add("delivery timeout must be positive")
	}
	if c.commitTimeout <= 0 {
		p.add("commit timeout must be positive")
	}
	if c.linger < 0 {
		p.add("negative linger")
	}
	if c.maxConcurrent < 1 {
		p.add("max concurrent checkpoints %d: must be at least 1", c.maxConcurrent)
	}
	if _, err := c.codec(); err != nil {
		p.add("%v", err)
	}
	return p.err("sink")
}

func (c *sinkConfig) codec() ([]kgo.CompressionCodec, error) {
	switch c.compression {
	case "", "none":
		// Explicitly: franz-go's own default is snappy.
		return []kgo.CompressionCodec{kgo.NoCompression()}, nil
	case "gzip":
		return []kgo.CompressionCodec{kgo.GzipCompression()}, nil
	case "snappy":
		return []kgo.CompressionCodec{kgo.SnappyCompression()}, nil
	case "lz4":
		return []kgo.CompressionCodec{kgo.Lz4Compression()}, nil
	case "zstd":
		return []kgo.CompressionCodec{kgo.ZstdCompression()}, nil
	}
	return nil, fmt.Errorf("unknown compression %q (want none, gzip, snappy, lz4 or zstd)", c.compression)
}

func (c *sinkConfig) pool() int {
	if c.poolSize > 0 {
		return c.poolSize
	}
	return c.maxConcurrent + 2
}

// producerOpts are the franz-go options of the sink's producers.
func (c *sinkConfig) producerOpts() []kgo.Opt {
	// A missing output topic is created where the broker allows it, as
	// Kafka's Java producer does.
	opts := []kgo.Opt{kgo.AllowAutoTopicCreation()}
	if c.linger > 0 {
		opts = append(opts, kgo.ProducerLinger(c.linger))
	}
	if codecs, _ := c.codec(); codecs != nil {
		opts = append(opts, kgo.ProducerBatchCompression(codecs...))
	}
	return opts
}

func (c *sinkConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "KafkaSink{%s guarantee=%s", &c.client, c.guarantee)
	if c.guarantee == ExactlyOnce {
		fmt.Fprintf(&b, " transactional-id-prefix=%s pool=%d", c.txnPrefix, c.pool())
		if c.txnTimeout > 0 {
			fmt.Fprintf(&b, " transaction-timeout=%v", c.txnTimeout)
		}
	}
	b.WriteString("}")
	return b.String()
}

// SinkMetrics counts what a sink did, over all its writers.
type SinkMetrics struct {
	// ProduceErrors counts records the brokers did not acknowledge.
	ProduceErrors atomic.Int64
	// Transactions counts committed transactions; Superseded counts
	// commits that found their transactional id already moved on (see
	// Committer.Commit).
	Transactions atomic.Int64
	Superseded   atomic.Int64
	// LingeringAborted counts open transactions aborted at writer start.
	LingeringAborted atomic.Int64
}

// Sink is a Kafka sink (Flink's KafkaSink). For None and AtLeastOnce add
// it with stream.SinkTo; for ExactlyOnce with stream.SinkToCommitting,
// whose committer commits the transactions.
type Sink[T any] struct {
	cfg     *sinkConfig
	ser     Serializer[T]
	metrics *SinkMetrics
	ids     *idRegistry
	// committers counts created committers, to catch an EXACTLY_ONCE
	// sink added with stream.SinkTo (which would never commit).
	committers atomic.Int64
}

// NewSink builds a sink writing what ser makes of each value. Every
// configuration problem is reported at once in a *ConfigError.
func NewSink[T any](ser Serializer[T], opts ...SinkOpt) (*Sink[T], error) {
	cfg := &sinkConfig{
		client:          defaultClientConfig(),
		deliveryTimeout: DefaultDeliveryTimeout,
		commitTimeout:   DefaultCommitTimeout,
		maxConcurrent:   conf.CheckpointingMaxConcurrent.Default(),
	}
	for _, o := range opts {
		o.applySink(cfg)
	}
	err := cfg.validate()
	if ser == nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.Problems = append(ce.Problems, "no serializer")
		} else {
			err = &ConfigError{What: "sink", Problems: []string{"no serializer"}}
		}
	}
	if err != nil {
		return nil, err
	}
	return &Sink[T]{cfg: cfg, ser: ser, metrics: &SinkMetrics{}, ids: newIDRegistry()}, nil
}

// String describes the sink; it never shows secrets.
func (s *Sink[T]) String() string { return s.cfg.String() }

// Metrics returns the sink's counters.
func (s *Sink[T]) Metrics() *SinkMetrics { return s.metrics }

// CreateWriter implements stream.Sink. An ExactlyOnce writer first checks
// the transaction timeout and aborts the transactions its subtask left
// open in an earlier run (see Writer).
func (s *Sink[T]) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[T], error) {
	if s.cfg.guarantee == ExactlyOnce {
		return newTxnWriter(s, ctx)
	}
	return newPlainWriter(s, ctx)
}

// CreateCommitter implements stream.TwoPhaseCommitSink.
func (s *Sink[T]) CreateCommitter() (stream.Committer[TxnCommittable], error) {
	s.committers.Add(1)
	return newCommitter(s.cfg, s.metrics, s.ids), nil
}

var _ stream.TwoPhaseCommitSink[string, TxnCommittable] = (*Sink[string])(nil)

// idRegistry tracks the transactional ids whose transaction is open or
// awaiting commit in this process; writers take free ids, the committer
// frees them. While a transaction is open or awaits its commit, its
// writer's subtask publishes two gauges of it (see opened).
type idRegistry struct {
	mu    sync.Mutex
	inUse map[string]*heldID
}

// heldID is an id in use; group is nil until its transaction begins.
type heldID struct {
	group stream.MetricGroup
}

// The gauges of a transaction, under KafkaSink.transaction.<transactional
// id>.: openSince (when it began, epoch ms of the writer's processing
// time) and precommitted (1 once its writer pre-committed it for a
// checkpoint, so that it awaits the checkpoint's completion and its
// commit; 0 while records go in).
const (
	gaugeOpenSince    = "openSince"
	gaugePrecommitted = "precommitted"
)

func transactionGauge(id string) string { return "KafkaSink.transaction." + id + "." }

func newIDRegistry() *idRegistry { return &idRegistry{inUse: map[string]*heldID{}} }

func (r *idRegistry) acquire(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inUse[id] != nil {
		return false
	}
	r.inUse[id] = &heldID{}
	return true
}

// opened publishes id's transaction, begun at since, in group.
func (r *idRegistry) opened(id string, group stream.MetricGroup, since int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.inUse[id]; h != nil {
		h.group = group
		group.SetGauge(transactionGauge(id)+gaugeOpenSince, float64(since))
		group.SetGauge(transactionGauge(id)+gaugePrecommitted, 0)
	}
}

// precommitted marks id's transaction pre-committed.
func (r *idRegistry) precommitted(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.inUse[id]; h != nil && h.group != nil {
		h.group.SetGauge(transactionGauge(id)+gaugePrecommitted, 1)
	}
}

func (r *idRegistry) release(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.inUse[id]; h != nil && h.group != nil {
		h.group.RemoveGauge(transactionGauge(id) + gaugeOpenSince)
		h.group.RemoveGauge(transactionGauge(id) + gaugePrecommitted)
	}
	delete(r.inUse, id)
}
