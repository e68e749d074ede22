package kafka

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/stream"
)

const noTimestamp = stream.NoTimestamp

// Source defaults (Flink's KafkaSource and Kafka consumer defaults).
const (
	// DefaultPartitionDiscoveryInterval is Flink's partition.discovery.interval.ms.
	DefaultPartitionDiscoveryInterval = 5 * time.Minute
	// DefaultMaxPollRecords is Kafka's max.poll.records: the records one
	// PollNext emits at most.
	DefaultMaxPollRecords = 500
	// DefaultFetchMaxWait is Kafka's fetch.max.wait.ms.
	DefaultFetchMaxWait = 500 * time.Millisecond
)

// IsolationLevel is Kafka's isolation.level for reading.
type IsolationLevel int8

// Isolation levels.
const (
	// ReadUncommitted reads every record, including those of open and
	// aborted transactions (Kafka's and Flink's default).
	ReadUncommitted IsolationLevel = iota
	// ReadCommitted reads only committed records, up to the last stable
	// offset: use it on topics written by EXACTLY_ONCE sinks.
	ReadCommitted
)

func (l IsolationLevel) String() string {
	if l == ReadCommitted {
		return "read_committed"
	}
	return "read_uncommitted"
}

type sourceConfig struct {
	client        clientConfig
	topics        []string
	pattern       string
	re            *regexp.Regexp
	groupID       string
	starting      OffsetsInitializer
	newPartitions OffsetsInitializer
	stopping      *OffsetsInitializer
	discovery     time.Duration
	isolation     IsolationLevel

	fetchMaxBytes          int32
	fetchMinBytes          int32
	fetchMaxPartitionBytes int32
	fetchMaxWait           time.Duration
	maxPollRecords         int

	commitOnCheckpoint bool
	deadLetterTopic    string // "" fails on malformed records
}

// Topics subscribes to the given topics (all their partitions). One of
// Topics or TopicPattern is required.
func Topics(topics ...string) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.topics = append(c.topics, topics...) }}
}

// TopicPattern subscribes to every topic whose whole name matches the
// regular expression (Go RE2 syntax, anchored at both ends as Java's
// Pattern.matches); topics created later are found by partition discovery.
// Internal topics (__consumer_offsets, ...) never match.
func TopicPattern(re string) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.pattern = re }}
}

// GroupID sets the consumer group (Kafka's group.id) whose committed
// offsets CommittedOffsets reads and to which the source commits its
// positions when a checkpoint completes. The source never joins the group:
// partitions are assigned by the split enumerator. Default: none.
func GroupID(id string) SourceOpt { return sourceOpt{func(c *sourceConfig) { c.groupID = id }} }

// StartingOffsets says where to start reading the partitions found when
// the job starts. Default Earliest() (as Flink). Restored splits keep their
// checkpointed offsets.
func StartingOffsets(o OffsetsInitializer) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.starting = o }}
}

// NewPartitionOffsets says where to start reading partitions found by
// partition discovery after the start. Default Earliest() (as Flink: no
// record written to a new partition is missed).
func NewPartitionOffsets(o OffsetsInitializer) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.newPartitions = o }}
}

// Bounded makes the source bounded: each partition is read up to its
// stopping offset (exclusive) and the job finishes when all are. stop is
// resolved when the job starts: Latest() is the end of each partition then;
// Timestamp(ms) stops before the first record at or after ms;
// SpecificOffsets must list every partition. Partition discovery is off.
// Default: unbounded.
func Bounded(stop OffsetsInitializer) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.stopping = &stop }}
}

// PartitionDiscoveryInterval sets how often the enumerator looks for new
// partitions (and, with TopicPattern, new topics); a negative value turns
// discovery off. Zero is invalid. Default 5 minutes (Flink's
// partition.discovery.interval.ms). Bounded sources never discover. With
// discovery off, readers are told after the first assignment that no split
// will follow, so a reader subtask without partitions finishes (as in
// Flink); with discovery on, it idles without holding back the watermark.
func PartitionDiscoveryInterval(d time.Duration) SourceOpt {
	return sourceOpt{func(c *sourceConfig) {
		c.discovery = d
		if d == 0 {
			c.discovery = -2 // reported by validate
		}
	}}
}

// Isolation sets the isolation level. Default ReadUncommitted (Kafka's and
// Flink's default).
func Isolation(l IsolationLevel) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.isolation = l }}
}

// FetchMaxBytes caps the bytes of one fetch response (fetch.max.bytes).
// Default 50 MiB.
func FetchMaxBytes(n int32) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.fetchMaxBytes = n }}
}

// FetchMinBytes is the least a broker gathers before answering a fetch
// (fetch.min.bytes). Default 1.
func FetchMinBytes(n int32) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.fetchMinBytes = n }}
}

// FetchMaxPartitionBytes caps the bytes per partition of one fetch
// (max.partition.fetch.bytes). Default 1 MiB.
func FetchMaxPartitionBytes(n int32) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.fetchMaxPartitionBytes = n }}
}

// FetchMaxWait is how long a broker waits for FetchMinBytes (fetch.max.wait.ms).
// Default DefaultFetchMaxWait (500 ms, Kafka's; it also bounds how long a
// newly assigned partition waits for the fetch in flight to return).
func FetchMaxWait(d time.Duration) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.fetchMaxWait = d }}
}

// MaxPollRecords bounds the records one PollNext emits (max.poll.records).
// Default DefaultMaxPollRecords (500).
func MaxPollRecords(n int) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.maxPollRecords = n }}
}

// CommitOffsetsOnCheckpoint says whether readers commit their positions to
// the group when a checkpoint completes (Flink's
// commit.offsets.on.checkpoint), for monitoring consumer lag only: the
// source restores from its checkpoints, not from these commits. Needs
// GroupID. Default true.
func CommitOffsetsOnCheckpoint(b bool) SourceOpt {
	return sourceOpt{func(c *sourceConfig) { c.commitOnCheckpoint = b }}
}

// MalformedRecords policies.
//
// FailOnMalformed (the default) fails the job at the first record the
// deserialiser rejects; the error is a *DeserializationError naming the
// topic, partition and offset.
//
// DeadLetterTopic instead writes the record, unchanged (key, value,
// headers, timestamp), to the topic, with the headers
// HeaderDLQTopic, HeaderDLQPartition, HeaderDLQOffset and HeaderDLQError
// added, logs it and counts it (SourceMetrics.DeadLettered), and goes on.
// A failure to write to the dead-letter topic fails the job; the positions
// of a checkpoint are taken only after its dead-lettered records are
// acknowledged.

// FailOnMalformed fails the job at the first malformed record (the default).
func FailOnMalformed() SourceOpt { return sourceOpt{func(c *sourceConfig) { c.deadLetterTopic = "" }} }

// DeadLetterTopic sends malformed records to topic.
func DeadLetterTopic(topic string) SourceOpt {
	return sourceOpt{func(c *sourceConfig) {
		c.deadLetterTopic = topic
		if topic == "" {
			c.deadLetterTopic = "\x00" // reported by validate
		}
	}}
}

// Headers added to dead-lettered records.
const (
	HeaderDLQTopic     = "sluice.dlq.topic"
	HeaderDLQPartition = "sluice.dlq.partition"
	HeaderDLQOffset    = "sluice.dlq.offset"
	HeaderDLQError     = "sluice.dlq.error"
	// HeaderDLQSchemaID is the schema registry id of the record's schema,
	// when its format's error names one (see FormatValues).
	HeaderDLQSchemaID = "sluice.dlq.schema-id"
)

func (c *sourceConfig) validate() error {
	var p problems
	c.client.validate(p.add)
	switch {
	case len(c.topics) == 0 && c.pattern == "":
		p.add("no topics: use kafka.Topics or kafka.TopicPattern")
	case len(c.topics) > 0 && c.pattern != "":
		p.add("both kafka.Topics and kafka.TopicPattern given; choose one")
	}
	seen := map[string]bool{}
	for _, t := range c.topics {
		if t == "" {
			p.add("empty topic name")
		} else if seen[t] {
			p.add("topic %q listed twice", t)
		}
		seen[t] = true
	}
	if c.pattern != "" {
		re, err := regexp.Compile("^(?:" + c.pattern + ")$")
		if err != nil {
			p.add("topic pattern %q: %v", c.pattern, err)
		}
		c.re = re
	}
	c.starting.validate("starting offsets", p.add)
	c.newPartitions.validate("new-partition offsets", p.add)
	if c.stopping != nil {
		c.stopping.validate("stopping offsets", p.add)
	}
	needGroup := func(o OffsetsInitializer, what string) {
		if o.kind == kindCommitted && c.groupID == "" {
			p.add("%s are the group's committed offsets but no group id is set (kafka.GroupID)", what)
		}
	}
	needGroup(c.starting, "starting offsets")
	needGroup(c.newPartitions, "new-partition offsets")
	if c.stopping != nil {
		needGroup(*c.stopping, "stopping offsets")
	}
	if c.discovery == -2 {
		p.add("partition discovery interval 0: use a positive interval, or a negative one to disable discovery")
	}
	if c.isolation != ReadUncommitted && c.isolation != ReadCommitted {
		p.add("unknown isolation level %d", c.isolation)
	}
	if c.fetchMaxBytes < 0 || c.fetchMinBytes < 0 || c.fetchMaxPartitionBytes < 0 || c.fetchMaxWait < 0 {
		p.add("negative fetch size or wait")
	}
	if c.maxPollRecords <= 0 {
		p.add("max poll records %d: must be positive", c.maxPollRecords)
	}
	if c.deadLetterTopic == "\x00" {
		p.add("empty dead-letter topic name")
	}
	if c.deadLetterTopic != "" && (seen[c.deadLetterTopic] || (c.re != nil && c.re.MatchString(c.deadLetterTopic))) {
		p.add("dead-letter topic %q is also a source topic", c.deadLetterTopic)
	}
	return p.err("source")
}

func (c *sourceConfig) bounded() bool { return c.stopping != nil }

// discovers reports whether the enumerator looks for partitions periodically.
func (c *sourceConfig) discovers() bool { return !c.bounded() && c.discovery > 0 }

func (c *sourceConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "KafkaSource{%s", &c.client)
	if c.pattern != "" {
		fmt.Fprintf(&b, " topic-pattern=%q", c.pattern)
	} else {
		fmt.Fprintf(&b, " topics=%v", c.topics)
	}
	if c.groupID != "" {
		fmt.Fprintf(&b, " group=%s", c.groupID)
	}
	fmt.Fprintf(&b, " starting=%s isolation=%s", c.starting, c.isolation)
	if c.stopping != nil {
		fmt.Fprintf(&b, " bounded=%s", c.stopping)
	} else if c.discovery > 0 {
		fmt.Fprintf(&b, " discovery=%v", c.discovery)
	}
	if c.deadLetterTopic != "" {
		fmt.Fprintf(&b, " dead-letter=%s", c.deadLetterTopic)
	}
	b.WriteString("}")
	return b.String()
}

// SourceMetrics counts what a source did, over all its readers.
type SourceMetrics struct {
	// Malformed counts records the deserialiser rejected.
	Malformed atomic.Int64
	// DeadLettered counts malformed records acknowledged by the
	// dead-letter topic.
	DeadLettered atomic.Int64
	// Skipped counts records the deserialiser asked to skip (a format's
	// ignore-parse-errors policy); they are neither emitted nor malformed.
	Skipped atomic.Int64
	// DataLoss counts the times a reader's position had been deleted by
	// retention and it continued at the earliest offset.
	DataLoss atomic.Int64
	// OffsetCommits and OffsetCommitFailures count the commits of
	// positions to the group at completed checkpoints.
	OffsetCommits        atomic.Int64
	OffsetCommitFailures atomic.Int64
}

// Source is a Kafka source: a stream.Source whose splits are partitions.
// Add it to a job with
//
//	stream.FromSource[T, kafka.PartitionSplit](env, src, watermarks, "Kafka Source")
//
// The record timestamp is each record's source timestamp; watermarks are
// generated per partition, so a partition that is behind holds the
// subtask's watermark back (use WatermarkStrategy.WithIdleness for
// partitions that may stay empty). A reader subtask with no partition does
// not hold back the watermark.
type Source[T any] struct {
	cfg     *sourceConfig
	deser   Deserializer[T]
	metrics *SourceMetrics
}

// NewSource builds a source that deserialises records with deser. Every
// configuration problem is reported at once in a *ConfigError.
func NewSource[T any](deser Deserializer[T], opts ...SourceOpt) (*Source[T], error) {
	cfg := &sourceConfig{
		client:             defaultClientConfig(),
		starting:           Earliest(),
		newPartitions:      Earliest(),
		discovery:          DefaultPartitionDiscoveryInterval,
		maxPollRecords:     DefaultMaxPollRecords,
		fetchMaxWait:       DefaultFetchMaxWait,
		commitOnCheckpoint: true,
	}
	for _, o := range opts {
		o.applySource(cfg)
	}
	err := cfg.validate()
	if deser == nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.Problems = append(ce.Problems, "no deserializer")
		} else {
			err = &ConfigError{What: "source", Problems: []string{"no deserializer"}}
		}
	}
	if err != nil {
		return nil, err
	}
	return &Source[T]{cfg: cfg, deser: deser, metrics: &SourceMetrics{}}, nil
}

// String describes the source; it never shows secrets.
func (s *Source[T]) String() string { return s.cfg.String() }

// Metrics returns the source's counters.
func (s *Source[T]) Metrics() *SourceMetrics { return s.metrics }

// Boundedness implements stream.Source.
func (s *Source[T]) Boundedness() stream.Boundedness {
	if s.cfg.bounded() {
		return stream.Bounded
	}
	return stream.Unbounded
}

// CreateEnumerator implements stream.Source.
func (s *Source[T]) CreateEnumerator(ctx stream.SplitEnumeratorContext[PartitionSplit]) (stream.SplitEnumerator[PartitionSplit], error) {
	return newEnumerator(s.cfg, ctx, nil), nil
}

// RestoreEnumerator creates the enumerator from a checkpoint's
// EnumeratorState (see Enumerator.SnapshotState): partitions it had
// assigned are not assigned again, the splits it had not handed out yet
// are, and partitions it never saw start at NewPartitionOffsets.
func (s *Source[T]) RestoreEnumerator(ctx stream.SplitEnumeratorContext[PartitionSplit], state EnumeratorState) (stream.SplitEnumerator[PartitionSplit], error) {
	return newEnumerator(s.cfg, ctx, &state), nil
}

// CreateReader implements stream.Source.
func (s *Source[T]) CreateReader(ctx stream.SourceReaderContext) (stream.SourceReader[T, PartitionSplit], error) {
	return newReader(s.cfg, s.deser, s.metrics, ctx), nil
}

var _ stream.Source[string, PartitionSplit] = (*Source[string])(nil)

// RestoreEnumeratorState implements stream.RestorableSource.
func (s *Source[T]) RestoreEnumeratorState(ctx stream.SplitEnumeratorContext[PartitionSplit], state []byte) (stream.SplitEnumerator[PartitionSplit], error) {
	c, err := codec.For[EnumeratorState]()
	if err != nil {
		return nil, err
	}
	st, _, err := c.Decode(state)
	if err != nil {
		return nil, fmt.Errorf("kafka source: restoring the enumerator: %w", err)
	}
	return s.RestoreEnumerator(ctx, st)
}
