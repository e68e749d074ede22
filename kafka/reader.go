package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CheckpointListener is implemented by readers that act when a checkpoint
// completes. The engine calls NotifyCheckpointComplete on the reader's
// goroutine after every task of the job has acknowledged the checkpoint
// (Flink's CheckpointListener.notifyCheckpointComplete).
type CheckpointListener interface {
	NotifyCheckpointComplete(checkpointID int64) error
}

const (
	// fetchBatches is how many fetched batches wait for the reader; with
	// the batch the reader is emitting and the one the fetch goroutine
	// holds, at most fetchBatches+2 batches of fetchBatchRecords records
	// are buffered per reader, besides what franz-go buffers (one fetch
	// per broker).
	fetchBatches      = 1
	fetchBatchRecords = 2000
	// maxPendingCheckpoints bounds the checkpoints whose offsets wait for
	// NotifyCheckpointComplete (older ones are forgotten: a later
	// notification commits newer offsets anyway).
	maxPendingCheckpoints = 32
	// closeFlushTimeout bounds flushing dead-lettered records at Close.
	closeFlushTimeout = 30 * time.Second
)

// Reader reads the partitions assigned to one source subtask with one
// franz-go client that consumes them directly (no group membership). A
// fetch goroutine, owned by the reader and stopped by Close, polls the
// client and hands batches to PollNext through a bounded buffer;
// Available is signalled when a batch arrives.
type Reader[T any] struct {
	cfg     *sourceConfig
	deser   Deserializer[T]
	metrics *SourceMetrics
	ctx     stream.SourceReaderContext
	log     *slog.Logger

	cl  *kgo.Client
	adm *kadm.Client
	dlq *kgo.Client // created at the first malformed record

	splits map[TopicPartition]*splitState[T]
	fresh  []*splitState[T] // added since the last PollNext: outputs not registered yet
	noMore bool
	closed bool

	batches chan []*kgo.Record
	wake    chan struct{}
	cur     []*kgo.Record // the batch being emitted

	bg      context.Context // cancelled by Close; the goroutines' context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	failure atomic.Pointer[error] // set by the goroutines, reported by PollNext

	requestDue atomic.Bool // a periodic split request is due

	dlqPending atomic.Int64 // dead-letter records not yet acknowledged

	// gauges publishes each split's position, end offset and lag (see
	// publish); ends are the partitions' end offsets the fetches saw.
	gauges stream.MetricGroup
	ends   struct {
		sync.Mutex
		m       map[TopicPartition]int64
		changed bool
		topics  map[string]bool // of the splits assigned, for listEnds
	}

	pendingCommits []checkpointOffsets
	commit         struct {
		sync.Mutex
		next    kadm.Offsets
		running bool
	}
}

type splitState[T any] struct {
	split PartitionSplit
	id    string
	out   stream.SplitOutput[T]
	// gauge is the prefix of the split's gauges,
	// KafkaSourceReader.topic.<topic>.partition.<partition>.
	gauge string
	// published is the position last published.
	published int64
}

// The gauges a reader publishes per partition it reads, under
// KafkaSourceReader.topic.<topic>.partition.<partition>. (Flink's
// KafkaSourceReader group): currentOffset (Flink's: the next offset to
// read) and committedOffset (Flink's: the last offset committed to the
// group at a completed checkpoint), and Sluice's endOffset (the
// partition's end as the last fetch saw it: its high watermark, or its
// last stable offset under read_committed) and lag (endOffset −
// currentOffset, the records not read yet). A finished split's gauges are
// removed.
const (
	gaugeCurrentOffset   = "currentOffset"
	gaugeCommittedOffset = "committedOffset"
	gaugeEndOffset       = "endOffset"
	gaugeLag             = "lag"
)

func splitGauge(tp TopicPartition) string {
	return "KafkaSourceReader.topic." + tp.Topic + ".partition." + strconv.Itoa(int(tp.Partition)) + "."
}

type checkpointOffsets struct {
	id      int64
	offsets kadm.Offsets
}

var (
	_ stream.SourceReader[string, PartitionSplit] = (*Reader[string])(nil)
	_ CheckpointListener                          = (*Reader[string])(nil)
)

func newReader[T any](cfg *sourceConfig, deser Deserializer[T], m *SourceMetrics, ctx stream.SourceReaderContext) *Reader[T] {
	return &Reader[T]{
		cfg: cfg, deser: deser, metrics: m, ctx: ctx, gauges: ctx.MetricGroup(),
		log:     cfg.client.log.With("component", "kafka-reader", "subtask", ctx.Subtask()),
		splits:  map[TopicPartition]*splitState[T]{},
		batches: make(chan []*kgo.Record, fetchBatches),
		wake:    make(chan struct{}, 1),
	}
}

// Start creates the client and the fetch goroutine, which stops when ctx
// (the subtask's) is cancelled or at Close.
func (r *Reader[T]) Start(ctx context.Context) error {
	iso := kgo.ReadUncommitted()
	if r.cfg.isolation == ReadCommitted {
		iso = kgo.ReadCommitted()
	}
	opts := []kgo.Opt{
		kgo.FetchIsolationLevel(iso),
		// Control records (transaction markers) advance the position, so a
		// bounded split whose last records are markers still ends.
		kgo.KeepControlRecords(),
		// A position deleted by retention continues at the earliest
		// retained offset (reported as data loss).
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if r.cfg.fetchMaxBytes > 0 {
		opts = append(opts, kgo.FetchMaxBytes(r.cfg.fetchMaxBytes))
	}
	if r.cfg.fetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(r.cfg.fetchMinBytes))
	}
	if r.cfg.fetchMaxPartitionBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(r.cfg.fetchMaxPartitionBytes))
	}
	if r.cfg.fetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(r.cfg.fetchMaxWait))
	}
	cl, err := r.cfg.client.newClient(opts...)
	if err != nil {
		return err
	}
	r.cl, r.adm = cl, kadm.NewClient(cl)
	r.bg, r.stop = context.WithCancel(ctx)
	r.wg.Add(2)
	go r.fetch()
	go r.listEndsPeriodically(r.ctx.Clock().NowMillis())
	if r.cfg.discovers() {
		r.wg.Add(1)
		go r.requestSplitsPeriodically(r.ctx.Clock().NowMillis())
	}
	return nil
}

// fetch polls the client and hands batches to PollNext until Close.
func (r *Reader[T]) fetch() {
	defer r.wg.Done()
	for {
		fs := r.cl.PollRecords(r.bg, fetchBatchRecords)
		if r.bg.Err() != nil || fs.IsClientClosed() {
			return
		}
		for _, fe := range fs.Errors() {
			if err := r.fetchError(fe); err != nil {
				r.fail(err)
				return
			}
		}
		r.sawEnds(fs)
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		select {
		case r.batches <- recs:
			r.signal()
		case <-r.bg.Done():
			return
		}
	}
}

// fetchError decides whether a fetch error fails the reader.
func (r *Reader[T]) fetchError(fe kgo.FetchError) error {
	var loss *kgo.ErrDataLoss
	switch {
	case errors.As(fe.Err, &loss):
		r.metrics.DataLoss.Add(1)
		r.log.Warn("records were deleted before they were read; continuing at the earliest retained offset",
			"topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
		return nil
	case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, kgo.ErrClientClosed):
		return nil
	case kerr.IsRetriable(fe.Err):
		r.log.Warn("fetch error, retrying", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
		return nil
	}
	return fmt.Errorf("kafka: reading topic %q partition %d: %w", fe.Topic, fe.Partition, fe.Err)
}

// requestSplitsPeriodically makes the next PollNext ask the enumerator for
// splits every discovery interval (see Enumerator).
func (r *Reader[T]) requestSplitsPeriodically(start int64) {
	defer r.wg.Done()
	clk := r.ctx.Clock()
	every := r.cfg.discovery.Milliseconds()
	for next := start + every; ; next += every {
		c, cancel := clk.AfterMillis(next)
		select {
		case <-c:
			r.requestDue.Store(true)
			r.signal()
		case <-r.bg.Done():
			cancel()
			return
		}
	}
}

func (r *Reader[T]) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Reader[T]) fail(err error) {
	r.failure.CompareAndSwap(nil, &err)
	r.signal()
}

func (r *Reader[T]) failed() error {
	if p := r.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// AddSplits starts reading the splits at their offsets. A bad batch (a
// negative offset, a split this reader already reads) is refused whole.
func (r *Reader[T]) AddSplits(splits []PartitionSplit) error {
	if r.cl == nil || r.closed {
		return fmt.Errorf("%w: reader not running", ErrClosed)
	}
	batch := map[TopicPartition]bool{}
	for _, s := range splits {
		if s.Offset < 0 {
			return fmt.Errorf("kafka: split %s has a negative offset %d", s.SplitID(), s.Offset)
		}
		if _, dup := r.splits[s.TopicPartition]; dup || batch[s.TopicPartition] {
			return fmt.Errorf("kafka: split %s assigned twice to reader %d", s.SplitID(), r.ctx.Subtask())
		}
		batch[s.TopicPartition] = true
	}
	add := map[string]map[int32]kgo.Offset{}
	for _, s := range splits {
		if s.Finished() {
			r.log.Debug("split has nothing to read", "split", s.SplitID(), "offset", s.Offset, "stop", s.StoppingOffset)
			continue
		}
		st := &splitState[T]{split: s, id: s.SplitID(), gauge: splitGauge(s.TopicPartition), published: -1}
		r.splits[s.TopicPartition] = st
		r.fresh = append(r.fresh, st)
		if add[s.Topic] == nil {
			add[s.Topic] = map[int32]kgo.Offset{}
		}
		add[s.Topic][s.Partition] = kgo.NewOffset().At(s.Offset)
		r.ends.Lock()
		if r.ends.topics == nil {
			r.ends.topics = map[string]bool{}
		}
		r.ends.topics[s.Topic] = true
		r.ends.Unlock()
		r.log.Debug("reading split", "split", st.id, "offset", s.Offset, "stop", s.StoppingOffset)
	}
	if len(add) > 0 {
		r.cl.AddConsumePartitions(add)
	}
	return nil
}

// NotifyNoMoreSplits: the reader ends once its splits are finished.
func (r *Reader[T]) NotifyNoMoreSplits() { r.noMore = true }

// Available is signalled when fetched records (or a failure, or a due
// split request) arrive.
func (r *Reader[T]) Available() <-chan struct{} { return r.wake }

// PollNext emits up to MaxPollRecords records of the fetched batches, each
// through its partition's split output.
func (r *Reader[T]) PollNext(_ context.Context, out stream.ReaderOutput[T]) (stream.InputStatus, error) {
	if r.closed {
		return stream.EndOfInput, ErrClosed
	}
	if err := r.failed(); err != nil {
		return stream.EndOfInput, err
	}
	if r.requestDue.Swap(false) {
		r.ctx.SendSplitRequest()
	}
	// A split's watermark output exists from its assignment on, so an
	// assigned partition without records holds the watermark back (as in
	// Flink) unless the strategy's idleness says otherwise.
	for _, st := range r.fresh {
		if r.splits[st.split.TopicPartition] == st {
			st.out = out.ForSplit(st.id)
		}
	}
	r.fresh = r.fresh[:0]

	// Records of a fetch come in runs of one partition: look its split up
	// once per run, not per record (the map's key hashes the topic name).
	var lastTopic string
	lastPartition := int32(-1)
	var last *splitState[T]
	for budget := r.cfg.maxPollRecords; budget > 0; budget-- {
		if len(r.cur) == 0 {
			select {
			case b := <-r.batches:
				r.cur = b
			default:
			}
			if len(r.cur) == 0 {
				break
			}
		}
		rec := r.cur[0]
		r.cur[0] = nil
		r.cur = r.cur[1:]
		st := last
		if rec.Partition != lastPartition || rec.Topic != lastTopic {
			st = r.splits[TopicPartition{rec.Topic, rec.Partition}]
			last, lastTopic, lastPartition = st, rec.Topic, rec.Partition
		}
		if st == nil || rec.Offset < st.split.Offset {
			continue // a finished split's, or already read
		}
		if rec.Offset >= st.split.StoppingOffset {
			r.finish(st, out)
			last, lastPartition = nil, -1
			continue
		}
		if !rec.Attrs.IsControl() {
			v, err := r.deser.Deserialize(rec)
			if err != nil && skipped(err) {
				r.metrics.Skipped.Add(1)
			} else if err != nil && unavailable(err) {
				// Not the record's fault: neither malformed nor dead-lettered;
				// the job fails and its restart strategy decides.
				return stream.EndOfInput, fmt.Errorf("kafka: reading the record of topic %q partition %d at offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			} else if err != nil {
				if err := r.malformed(rec, err); err != nil {
					return stream.EndOfInput, err
				}
			} else {
				st.out.Collect(v, recordTimestamp(rec))
			}
		}
		st.split.Offset = rec.Offset + 1
		if st.split.Finished() {
			r.finish(st, out)
			last, lastPartition = nil, -1
		}
	}
	r.publish()
	if len(r.splits) == 0 && r.noMore {
		if err := r.flushDeadLetters(r.bg); err != nil {
			return stream.EndOfInput, err
		}
		return stream.EndOfInput, r.failed()
	}
	if len(r.cur) > 0 || len(r.batches) > 0 {
		return stream.MoreAvailable, nil
	}
	return stream.NothingAvailable, nil
}

// finish ends a split that reached its stopping offset.
func (r *Reader[T]) finish(st *splitState[T], out stream.ReaderOutput[T]) {
	delete(r.splits, st.split.TopicPartition)
	if st.out != nil {
		out.ReleaseSplit(st.id)
	}
	r.cl.RemoveConsumePartitions(map[string][]int32{st.split.Topic: {st.split.Partition}})
	for _, g := range []string{gaugeCurrentOffset, gaugeCommittedOffset, gaugeEndOffset, gaugeLag} {
		r.gauges.RemoveGauge(st.gauge + g)
	}
	r.log.Debug("split finished", "split", st.id, "offset", st.split.Offset)
}

// sawEnds keeps the partitions' end offsets a fetch reports (on the fetch
// goroutine).
func (r *Reader[T]) sawEnds(fs kgo.Fetches) {
	r.ends.Lock()
	defer r.ends.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		end := p.HighWatermark
		if r.cfg.isolation == ReadCommitted {
			end = p.LastStableOffset
		}
		if p.Err != nil || end < 0 {
			return
		}
		if r.ends.m == nil {
			r.ends.m = map[TopicPartition]int64{}
		}
		tp := TopicPartition{p.Topic, p.Partition}
		if r.ends.m[tp] != end {
			r.ends.m[tp] = end
			r.ends.changed = true
		}
	})
}

// endsEvery is how often the reader asks the brokers for the end offsets
// of its topics' partitions: fetches report the end of a partition only
// when they bring its records, and a partition far behind may wait long
// for its turn.
const endsEvery = 5000 // ms

// listEndsPeriodically keeps the ends of the assigned partitions' topics
// current from the brokers (their high watermarks, or their last stable
// offsets under read_committed), at once and then every endsEvery.
func (r *Reader[T]) listEndsPeriodically(start int64) {
	defer r.wg.Done()
	clk := r.ctx.Clock()
	for next := start; ; next += endsEvery {
		c, cancel := clk.AfterMillis(next)
		select {
		case <-c:
			r.listEnds()
		case <-r.bg.Done():
			cancel()
			return
		}
	}
}

func (r *Reader[T]) listEnds() {
	r.ends.Lock()
	topics := make([]string, 0, len(r.ends.topics))
	for t := range r.ends.topics {
		topics = append(topics, t)
	}
	r.ends.Unlock()
	if len(topics) == 0 {
		return
	}
	list := r.adm.ListEndOffsets
	if r.cfg.isolation == ReadCommitted {
		list = r.adm.ListCommittedOffsets
	}
	offs, err := list(r.bg, topics...)
	if err != nil {
		if r.bg.Err() == nil {
			r.log.Debug("listing the end offsets of the assigned topics failed; the lag gauges wait for the next fetch", "err", err)
		}
		return
	}
	r.ends.Lock()
	defer r.ends.Unlock()
	if r.ends.m == nil {
		r.ends.m = map[TopicPartition]int64{}
	}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset < 0 {
			return
		}
		tp := TopicPartition{o.Topic, o.Partition}
		// A fetch may have seen a later end meanwhile.
		if o.Offset > r.ends.m[tp] {
			r.ends.m[tp] = o.Offset
			r.ends.changed = true
		}
	})
	r.signal()
}

// publish sets the gauges of the splits whose position or end moved.
func (r *Reader[T]) publish() {
	r.ends.Lock()
	defer r.ends.Unlock()
	changed := r.ends.changed
	r.ends.changed = false
	for tp, st := range r.splits {
		if st.published == st.split.Offset && !changed {
			continue
		}
		st.published = st.split.Offset
		r.gauges.SetGauge(st.gauge+gaugeCurrentOffset, float64(st.split.Offset))
		if end, ok := r.ends.m[tp]; ok {
			r.gauges.SetGauge(st.gauge+gaugeEndOffset, float64(end))
			r.gauges.SetGauge(st.gauge+gaugeLag, float64(max(0, end-st.split.Offset)))
		}
	}
}

// malformed applies the malformed-record policy.
func (r *Reader[T]) malformed(rec *kgo.Record, cause error) error {
	r.metrics.Malformed.Add(1)
	derr := &DeserializationError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: cause}
	if r.cfg.deadLetterTopic == "" {
		return derr
	}
	if r.dlq == nil {
		cl, err := r.cfg.client.newClient()
		if err != nil {
			return fmt.Errorf("kafka: creating the dead-letter producer: %w", err)
		}
		r.dlq = cl
	}
	headers := append(slices.Clip(rec.Headers),
		kgo.RecordHeader{Key: HeaderDLQTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderDLQPartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		kgo.RecordHeader{Key: HeaderDLQOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		kgo.RecordHeader{Key: HeaderDLQError, Value: []byte(cause.Error())},
	)
	if id := schemaIDOf(cause); id != 0 {
		headers = append(headers, kgo.RecordHeader{Key: HeaderDLQSchemaID, Value: []byte(strconv.Itoa(id))})
	}
	dr := &kgo.Record{Topic: r.cfg.deadLetterTopic, Key: rec.Key, Value: rec.Value, Headers: headers, Timestamp: rec.Timestamp}
	r.log.Warn("malformed record sent to the dead-letter topic", "topic", rec.Topic, "partition", rec.Partition,
		"offset", rec.Offset, "dead_letter_topic", r.cfg.deadLetterTopic, "err", cause)
	r.dlqPending.Add(1)
	r.dlq.Produce(r.bg, dr, func(_ *kgo.Record, err error) {
		r.dlqPending.Add(-1)
		if err != nil {
			r.fail(fmt.Errorf("kafka: writing the malformed record of topic %q partition %d offset %d to dead-letter topic %q: %w",
				derr.Topic, derr.Partition, derr.Offset, r.cfg.deadLetterTopic, err))
			return
		}
		r.metrics.DeadLettered.Add(1)
	})
	return nil
}

func (r *Reader[T]) flushDeadLetters(ctx context.Context) error {
	if r.dlq == nil || r.dlqPending.Load() == 0 {
		return r.failed()
	}
	if err := flush(ctx, r.dlq, DefaultDeliveryTimeout); err != nil {
		return fmt.Errorf("kafka: dead-letter topic %q: %w", r.cfg.deadLetterTopic, err)
	}
	return r.failed()
}

// SnapshotState returns the unfinished splits with the offset of the next
// record to emit. Dead-lettered records up to these positions are
// acknowledged first. With a group id, the positions are kept for
// NotifyCheckpointComplete.
func (r *Reader[T]) SnapshotState(checkpointID int64) ([]PartitionSplit, error) {
	if err := r.flushDeadLetters(r.bg); err != nil {
		return nil, err
	}
	out := make([]PartitionSplit, 0, len(r.splits))
	for _, st := range r.splits {
		out = append(out, st.split)
	}
	slices.SortFunc(out, func(a, b PartitionSplit) int { return compareTP(a.TopicPartition, b.TopicPartition) })
	if r.cfg.groupID != "" && r.cfg.commitOnCheckpoint {
		offs := kadm.Offsets{}
		for _, s := range out {
			offs.Add(kadm.Offset{Topic: s.Topic, Partition: s.Partition, At: s.Offset, LeaderEpoch: -1})
		}
		r.pendingCommits = append(r.pendingCommits, checkpointOffsets{id: checkpointID, offsets: offs})
		if n := len(r.pendingCommits); n > maxPendingCheckpoints {
			r.pendingCommits = slices.Delete(r.pendingCommits, 0, n-maxPendingCheckpoints)
		}
	}
	return out, nil
}

// NotifyCheckpointComplete commits the positions of checkpoint
// checkpointID to the group (CommitOffsetsOnCheckpoint), asynchronously:
// the commits only show consumer lag, so a failed commit is logged and
// counted (SourceMetrics.OffsetCommitFailures), never fails the job, and is
// superseded by the next checkpoint's. Positions of older checkpoints that
// were never confirmed are dropped. It implements CheckpointListener; the
// engine calls it once checkpoints exist.
func (r *Reader[T]) NotifyCheckpointComplete(checkpointID int64) error {
	var offs kadm.Offsets
	i := 0
	for ; i < len(r.pendingCommits) && r.pendingCommits[i].id <= checkpointID; i++ {
		if r.pendingCommits[i].id == checkpointID {
			offs = r.pendingCommits[i].offsets
		}
	}
	r.pendingCommits = slices.Delete(r.pendingCommits, 0, i)
	if offs == nil || r.closed {
		return nil
	}
	r.commit.Lock()
	r.commit.next = offs
	start := !r.commit.running
	r.commit.running = true
	r.commit.Unlock()
	if start {
		r.wg.Add(1)
		go r.commitLoop()
	}
	return nil
}

// commitLoop commits the latest offsets handed over until none is left.
func (r *Reader[T]) commitLoop() {
	defer r.wg.Done()
	for {
		r.commit.Lock()
		offs := r.commit.next
		r.commit.next = nil
		if offs == nil {
			r.commit.running = false
			r.commit.Unlock()
			return
		}
		r.commit.Unlock()
		resp, err := r.adm.CommitOffsets(r.bg, r.cfg.groupID, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			if r.bg.Err() != nil {
				return
			}
			r.metrics.OffsetCommitFailures.Add(1)
			r.log.Warn("committing offsets to the group failed", "group", r.cfg.groupID, "err", err)
			continue
		}
		r.metrics.OffsetCommits.Add(1)
		offs.Each(func(o kadm.Offset) {
			r.gauges.SetGauge(splitGauge(TopicPartition{o.Topic, o.Partition})+gaugeCommittedOffset, float64(o.At))
		})
	}
}

// Close stops the goroutines, flushes dead-lettered records and closes the
// clients.
func (r *Reader[T]) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cl == nil {
		return nil
	}
	var err error
	if r.dlq != nil {
		// The subtask's context may be over: the flush still gets its time.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.bg), closeFlushTimeout)
		err = r.dlq.Flush(ctx)
		cancel()
	}
	r.stop()
	r.wg.Wait()
	if r.dlq != nil {
		r.dlq.Close()
	}
	r.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka: flushing the dead-letter topic at close: %w", err)
	}
	return nil
}
