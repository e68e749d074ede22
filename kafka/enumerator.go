package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// discoveryTimeout bounds one partition discovery (listing topics and
// resolving the new partitions' offsets).
const discoveryTimeout = 2 * time.Minute

// EnumeratorState is the enumerator's checkpointed state.
type EnumeratorState struct {
	// Assigned lists the partitions handed to readers: their positions
	// live in the readers' splits.
	Assigned []TopicPartition
	// Pending lists splits discovered but not yet handed to their reader.
	Pending []PartitionSplit
}

// Enumerator is the source's split enumerator. It lists the partitions
// when it starts and, for an unbounded source, every partition-discovery
// interval on a goroutine of its own, and assigns each partition to the
// reader partitionOwner chooses.
//
// Its stream.SplitEnumerator methods are called by the engine's source
// coordinator, serialised and on reader goroutines, so they never do I/O:
// the discovery goroutine resolves offsets and leaves the new splits in a
// pending list (under e.mu), and the methods hand pending splits to
// readers. The engine's SplitEnumeratorContext offers no way to call into
// the coordinator from another goroutine, so readers pull: a reader of a
// discovering source sends a split request every discovery interval, and
// HandleSplitRequest assigns what discovery found for it. A new partition
// is thus read within two discovery intervals.
type Enumerator struct {
	cfg      *sourceConfig
	ctx      stream.SplitEnumeratorContext[PartitionSplit]
	log      *slog.Logger
	restored *EnumeratorState

	cl  *kgo.Client
	adm *kadm.Client

	// noMoreNew: after the first discovery no split will follow (bounded
	// source, or discovery off): readers are told so.
	noMoreNew bool

	stop   context.CancelFunc
	done   chan struct{} // closed when the discovery goroutine returned
	closed bool

	mu struct {
		sync.Mutex
		// known holds every partition ever seen (assigned or pending).
		known   map[TopicPartition]bool
		pending map[int][]PartitionSplit
		// err is a failed periodic discovery, reported to the next
		// split request (which fails the job, as in Flink).
		err error
	}
}

var _ stream.SplitEnumerator[PartitionSplit] = (*Enumerator)(nil)

func newEnumerator(cfg *sourceConfig, ctx stream.SplitEnumeratorContext[PartitionSplit], restored *EnumeratorState) *Enumerator {
	e := &Enumerator{cfg: cfg, ctx: ctx, restored: restored, noMoreNew: !cfg.discovers()}
	e.log = cfg.client.log.With("component", "kafka-enumerator")
	e.mu.known = map[TopicPartition]bool{}
	e.mu.pending = map[int][]PartitionSplit{}
	return e
}

// Start discovers the partitions (synchronously, so a missing topic or an
// unreachable cluster fails the job at once) and starts periodic discovery.
func (e *Enumerator) Start() error {
	// The admin calls answer from franz-go's metadata cache when it is
	// younger than MetadataMinAge (5 s by default): keep it younger than
	// half a discovery interval so each discovery sees fresh partitions.
	minAge := 5 * time.Second
	if d := e.cfg.discovery / 2; e.cfg.discovers() && d < minAge {
		minAge = max(d, 10*time.Millisecond)
	}
	cl, err := e.cfg.client.newClient(kgo.MetadataMinAge(minAge))
	if err != nil {
		return err
	}
	e.cl, e.adm = cl, kadm.NewClient(cl)
	initial := e.cfg.starting
	if e.restored != nil {
		for _, tp := range e.restored.Assigned {
			e.mu.known[tp] = true
		}
		for _, s := range e.restored.Pending {
			e.mu.known[s.TopicPartition] = true
			owner := partitionOwner(s.TopicPartition, e.ctx.Parallelism())
			e.mu.pending[owner] = append(e.mu.pending[owner], s)
		}
		initial = e.cfg.newPartitions
	}
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	err = e.discover(ctx, initial)
	cancel()
	if err != nil {
		// The engine does not close an enumerator whose Start failed.
		e.cl.Close()
		e.cl = nil
		return err
	}
	if e.cfg.discovers() {
		ctx, stop := context.WithCancel(context.Background())
		e.stop, e.done = stop, make(chan struct{})
		go e.run(ctx)
	}
	return nil
}

// run discovers partitions every interval until Close.
func (e *Enumerator) run(ctx context.Context) {
	defer close(e.done)
	t := time.NewTicker(e.cfg.discovery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
		err := e.discover(dctx, e.cfg.newPartitions)
		cancel()
		if err != nil && ctx.Err() == nil {
			e.log.Error("partition discovery failed", "err", err)
			e.mu.Lock()
			if e.mu.err == nil {
				e.mu.err = fmt.Errorf("kafka: partition discovery: %w", err)
			}
			e.mu.Unlock()
		}
	}
}

// discover lists the subscribed partitions and makes splits of those not
// seen before, starting at start.
func (e *Enumerator) discover(ctx context.Context, start OffsetsInitializer) error {
	tps, err := e.listPartitions(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	var fresh []TopicPartition
	for _, tp := range tps {
		if !e.mu.known[tp] {
			fresh = append(fresh, tp)
		}
	}
	e.mu.Unlock()
	if len(fresh) == 0 {
		return nil
	}
	l := offsetLister{adm: e.adm, group: e.cfg.groupID, committed: e.cfg.isolation == ReadCommitted}
	starts, err := start.resolve(ctx, l, fresh, false)
	if err != nil {
		return err
	}
	stops := map[TopicPartition]int64{}
	if e.cfg.stopping != nil {
		if stops, err = e.cfg.stopping.resolve(ctx, l, fresh, true); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tp := range fresh {
		if e.mu.known[tp] {
			continue
		}
		s := PartitionSplit{TopicPartition: tp, Offset: starts[tp], StoppingOffset: NoStoppingOffset}
		if stop, ok := stops[tp]; ok {
			s.StoppingOffset = stop
		}
		e.mu.known[tp] = true
		owner := partitionOwner(tp, e.ctx.Parallelism())
		e.mu.pending[owner] = append(e.mu.pending[owner], s)
		e.log.Info("discovered partition", "partition", tp.String(), "offset", s.Offset, "reader", owner)
	}
	return nil
}

// listPartitions lists the partitions of the subscribed topics.
func (e *Enumerator) listPartitions(ctx context.Context) ([]TopicPartition, error) {
	var (
		tds kadm.TopicDetails
		err error
	)
	if e.cfg.re != nil {
		tds, err = e.adm.ListTopics(ctx)
	} else {
		tds, err = e.adm.ListTopics(ctx, e.cfg.topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
	}
	var out []TopicPartition
	var missing []string
	for _, td := range tds.Sorted() {
		if e.cfg.re != nil && (td.IsInternal || !e.cfg.re.MatchString(td.Topic)) {
			continue
		}
		if td.Err != nil {
			if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				missing = append(missing, td.Topic)
				continue
			}
			return nil, fmt.Errorf("kafka: describing topic %q: %w", td.Topic, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			out = append(out, TopicPartition{Topic: td.Topic, Partition: p.Partition})
		}
	}
	if e.cfg.re == nil {
		for _, t := range e.cfg.topics {
			if _, ok := tds[t]; !ok && !slices.Contains(missing, t) {
				missing = append(missing, t)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%w: %s", ErrTopicNotFound, strings.Join(missing, ", "))
	}
	return out, nil
}

// AddReader hands a registering reader its pending splits.
func (e *Enumerator) AddReader(subtask int) error {
	e.assignPending(subtask)
	return nil
}

// HandleSplitRequest hands the reader what discovery found for it, or
// fails the job if the last discovery failed.
func (e *Enumerator) HandleSplitRequest(subtask int) error {
	e.mu.Lock()
	err := e.mu.err
	e.mu.Unlock()
	if err != nil {
		return err
	}
	e.assignPending(subtask)
	return nil
}

// REQUIRES: called by the coordinator (its lock held), subtask registered.
func (e *Enumerator) assignPending(subtask int) {
	e.mu.Lock()
	splits := e.mu.pending[subtask]
	delete(e.mu.pending, subtask)
	e.mu.Unlock()
	if len(splits) > 0 {
		e.ctx.AssignSplits(subtask, splits)
	}
	if e.noMoreNew {
		e.ctx.SignalNoMoreSplits(subtask)
	}
}

// AddSplitsBack queues the splits of a failed reader for its successor.
func (e *Enumerator) AddSplitsBack(splits []PartitionSplit, subtask int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range splits {
		owner := partitionOwner(s.TopicPartition, e.ctx.Parallelism())
		e.mu.known[s.TopicPartition] = true
		e.mu.pending[owner] = append(e.mu.pending[owner], s)
	}
	return nil
}

// SnapshotState returns the enumerator's state for a checkpoint. The
// engine calls it (once checkpoints exist) and passes the result to
// Source.RestoreEnumerator on recovery.
func (e *Enumerator) SnapshotState(checkpointID int64) (EnumeratorState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var st EnumeratorState
	pending := map[TopicPartition]bool{}
	for _, ss := range e.mu.pending {
		for _, s := range ss {
			pending[s.TopicPartition] = true
			st.Pending = append(st.Pending, s)
		}
	}
	for tp := range e.mu.known {
		if !pending[tp] {
			st.Assigned = append(st.Assigned, tp)
		}
	}
	slices.SortFunc(st.Assigned, compareTP)
	slices.SortFunc(st.Pending, func(a, b PartitionSplit) int { return compareTP(a.TopicPartition, b.TopicPartition) })
	return st, nil
}

// Close stops discovery and closes the admin client.
func (e *Enumerator) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.stop != nil {
		e.stop()
		<-e.done
	}
	if e.cl != nil {
		e.cl.Close()
	}
	return nil
}

// SnapshotEnumerator implements stream.CheckpointedEnumerator: the
// enumerator's state in the canonical encoding.
func (e *Enumerator) SnapshotEnumerator(checkpointID int64) ([]byte, error) {
	st, err := e.SnapshotState(checkpointID)
	if err != nil {
		return nil, err
	}
	c, err := codec.For[EnumeratorState]()
	if err != nil {
		return nil, err
	}
	return c.Append(nil, st), nil
}
