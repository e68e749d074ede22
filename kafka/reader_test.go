package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newReader(t *testing.T, src *kafka.Source[string], rc *readerCtx) *kafka.Reader[string] {
	t.Helper()
	r, err := src.CreateReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.(*kafka.Reader[string])
}

func split(topic string, p int32, from, to int64) kafka.PartitionSplit {
	return kafka.PartitionSplit{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}, Offset: from, StoppingOffset: to}
}

// TestReaderEmitsPerSplitAndRestoresFromSnapshot: records go through their
// partition's split output (registered at assignment), the snapshot holds
// the next offsets, and a reader given the snapshot continues exactly there.
func TestReaderEmitsPerSplitAndRestoresFromSnapshot(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "r", 3)
	c.fill(t, "r", 3, 20)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("r"),
		kafka.MaxPollRecords(7), kafka.WithLogger(testLogger(t)))
	rc := &readerCtx{parallelism: 1, clk: clock.System{}}
	r := newReader(t, src, rc)
	// Partition 2 starts at offset 15; partition 1 is not assigned.
	if err := r.AddSplits([]kafka.PartitionSplit{split("r", 0, 0, kafka.NoStoppingOffset), split("r", 2, 15, kafka.NoStoppingOffset)}); err != nil {
		t.Fatal(err)
	}
	out := &recordingOutput{}
	if _, err := r.PollNext(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"r-0", "r-2"}; !slices.Equal(sorted(out.registered), want) {
		t.Fatalf("split outputs registered at the first poll: %v, want %v", out.registered, want)
	}
	before := len(out.recs)
	if _, err := r.PollNext(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if n := len(out.recs) - before; n > 7 {
		t.Fatalf("one PollNext emitted %d records, more than MaxPollRecords", n)
	}
	pollUntil(t, r, out, func() bool { return len(out.recs) >= 12 })
	for _, e := range out.recs {
		if e.split == "" || e.split[len(e.split)-1] != e.value[0] {
			t.Fatalf("record %q went through split output %q", e.value, e.split)
		}
		if e.ts == int64(stream.NoTimestamp) || e.ts%1000 != 0 {
			t.Fatalf("record %q has source timestamp %d, want its Kafka timestamp", e.value, e.ts)
		}
	}
	snap, err := r.SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int64{}
	emitted := map[string]int64{}
	for _, e := range out.recs {
		emitted[e.split]++
	}
	for _, s := range snap {
		next[s.SplitID()] = s.Offset
	}
	if next["r-0"] != emitted["r-0"] || next["r-2"] != 15+emitted["r-2"] || len(snap) != 2 {
		t.Fatalf("snapshot %+v does not match emitted %v", snap, emitted)
	}

	// A fresh reader restored from the snapshot reads the rest, once.
	r2 := newReader(t, src, &readerCtx{parallelism: 1, clk: clock.System{}})
	if err := r2.AddSplits(snap); err != nil {
		t.Fatal(err)
	}
	out2 := &recordingOutput{}
	total := func() int { return len(out.recs) + len(out2.recs) }
	pollUntil(t, r2, out2, func() bool { return total() >= 25 })
	var all []string
	for _, e := range append(out.recs, out2.recs...) {
		all = append(all, e.value)
	}
	want := append(span(0, 0, 20), span(2, 15, 20)...)
	if got := sorted(all); !slices.Equal(got, sorted(want)) {
		t.Fatalf("read %v\nwant %v", got, sorted(want))
	}
}

func TestReaderEndsBoundedSplitsAndReleasesThem(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "b", 2)
	c.fill(t, "b", 2, 5)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("b"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	r := newReader(t, src, &readerCtx{parallelism: 1, clk: clock.System{}})
	// An empty range ends at once; it never gets an output.
	if err := r.AddSplits([]kafka.PartitionSplit{split("b", 0, 1, 4), split("b", 1, 3, 3)}); err != nil {
		t.Fatal(err)
	}
	r.NotifyNoMoreSplits()
	out := &recordingOutput{}
	if st := pollUntil(t, r, out, func() bool { return false }); st != stream.EndOfInput {
		t.Fatalf("status %v, want EndOfInput", st)
	}
	var got []string
	for _, e := range out.recs {
		got = append(got, e.value)
	}
	if want := span(0, 1, 4); !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	if !slices.Equal(out.registered, []string{"b-0"}) || !slices.Equal(out.released, []string{"b-0"}) {
		t.Fatalf("registered %v, released %v; want b-0 and b-0", out.registered, out.released)
	}
	if err := r.AddSplits([]kafka.PartitionSplit{split("b", 0, 0, 1), split("b", 0, 0, 1)}); err == nil {
		t.Fatal("the same split assigned twice was accepted")
	}
}

// TestBoundedReadCommittedEndsAfterTransactionMarkers: the last offsets of a
// transactional topic are commit/abort markers the reader never emits;
// the split still ends, and aborted records are not read.
func TestBoundedReadCommittedEndsAfterTransactionMarkers(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "tx", 1)
	for i, commit := range []bool{true, false, true} {
		p, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.TransactionalID("writer"))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		vals := []string{"committed-1", "aborted", "committed-2"}
		if err := p.ProduceSync(ctxT(t), &kgo.Record{Topic: "tx", Value: []byte(vals[i])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctxT(t), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	for _, iso := range []kafka.IsolationLevel{kafka.ReadCommitted, kafka.ReadUncommitted} {
		t.Run(iso.String(), func(t *testing.T) {
			src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("tx"),
				kafka.Isolation(iso), kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
			got, err := readAll(t, 1, src)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"committed-1", "committed-2"}
			if iso == kafka.ReadUncommitted {
				want = []string{"aborted", "committed-1", "committed-2"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestReaderCommitsOffsetsWhenACheckpointCompletes(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "cm", 2)
	c.fill(t, "cm", 2, 10)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("cm"),
		kafka.GroupID("lag"), kafka.WithLogger(testLogger(t)))
	r := newReader(t, src, &readerCtx{parallelism: 1, clk: clock.System{}})
	if err := r.AddSplits([]kafka.PartitionSplit{split("cm", 0, 0, kafka.NoStoppingOffset), split("cm", 1, 4, kafka.NoStoppingOffset)}); err != nil {
		t.Fatal(err)
	}
	out := &recordingOutput{}
	pollUntil(t, r, out, func() bool { return len(out.recs) == 16 })
	if _, err := r.SnapshotState(7); err != nil {
		t.Fatal(err)
	}
	committed := func() map[int32]int64 {
		got := map[int32]int64{}
		offs, err := c.adm.FetchOffsets(ctxT(t), "lag")
		if errors.Is(err, kerr.GroupIDNotFound) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		offs.Each(func(o kadm.OffsetResponse) { got[o.Partition] = o.At })
		return got
	}
	// Nothing is committed before the checkpoint is complete.
	if got := committed(); len(got) != 0 {
		t.Fatalf("offsets committed before NotifyCheckpointComplete: %v", got)
	}
	if err := r.NotifyCheckpointComplete(6); err != nil { // an older checkpoint: nothing of it pending
		t.Fatal(err)
	}
	if err := r.NotifyCheckpointComplete(7); err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: 10, 1: 10}
	testwait.EventuallyNil(t, testTimeout, "checkpoint 7's offsets to be committed", func() error {
		if got := committed(); !mapsEqual(got, want) {
			return fmt.Errorf("committed %v, want %v", got, want)
		}
		return nil
	})
	if n := src.Metrics().OffsetCommits.Load(); n != 1 {
		t.Fatalf("OffsetCommits = %d, want 1", n)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestReaderAsksForSplitsEveryDiscoveryInterval: the periodic split
// request is how partitions found by discovery reach readers.
func TestReaderAsksForSplitsEveryDiscoveryInterval(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "d", 1)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("d"),
		kafka.PartitionDiscoveryInterval(time.Minute), kafka.WithLogger(testLogger(t)))
	clk := clock.NewManual(0)
	rc := &readerCtx{parallelism: 1, clk: clk}
	r := newReader(t, src, rc)
	requests := func() int { rc.mu.Lock(); defer rc.mu.Unlock(); return rc.requests }
	out := &recordingOutput{}
	for want := 1; want <= 3; want++ {
		clk.Advance(time.Minute.Milliseconds())
		select {
		case <-r.Available():
		case <-time.After(testTimeout):
			t.Fatal("the reader was not woken for its split request")
		}
		if _, err := r.PollNext(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		if got := requests(); got != want {
			t.Fatalf("after %d intervals: %d split requests", want, got)
		}
	}
}

func TestClosedReaderRefusesWork(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "x", 1)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("x"), kafka.WithLogger(quietLogger()))
	r := newReader(t, src, &readerCtx{parallelism: 1, clk: clock.System{}})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PollNext(context.Background(), &recordingOutput{}); !errors.Is(err, kafka.ErrClosed) {
		t.Fatalf("PollNext after Close: %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// enumCtx is our fake of the engine's split-enumerator context.
type enumCtx struct {
	mu          sync.Mutex
	parallelism int
	assigned    map[int][]kafka.PartitionSplit
	noMore      map[int]bool
}

func newEnumCtx(p int) *enumCtx {
	return &enumCtx{parallelism: p, assigned: map[int][]kafka.PartitionSplit{}, noMore: map[int]bool{}}
}

func (c *enumCtx) Parallelism() int { return c.parallelism }
func (c *enumCtx) RegisteredReaders() []int {
	var out []int
	for i := 0; i < c.parallelism; i++ {
		out = append(out, i)
	}
	return out
}
func (c *enumCtx) AssignSplits(subtask int, splits []kafka.PartitionSplit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assigned[subtask] = append(c.assigned[subtask], splits...)
}
func (c *enumCtx) SignalNoMoreSplits(subtask int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noMore[subtask] = true
}

func (c *enumCtx) all() map[string]kafka.PartitionSplit {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]kafka.PartitionSplit{}
	for _, ss := range c.assigned {
		for _, s := range ss {
			out[s.SplitID()] = s
		}
	}
	return out
}

func TestEnumeratorAssignsEveryPartitionOnceAndBalances(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "a", 7)
	c.createTopic(t, "bb", 2)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("a", "bb"),
		kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	ec := newEnumCtx(3)
	e, err := src.CreateEnumerator(ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for s := 0; s < 3; s++ {
		if err := e.AddReader(s); err != nil {
			t.Fatal(err)
		}
		if err := e.HandleSplitRequest(s); err != nil { // nothing new; no duplicate
			t.Fatal(err)
		}
	}
	n := 0
	for s, ss := range ec.assigned {
		perTopic := map[string]int{}
		for _, sp := range ss {
			perTopic[sp.Topic]++
			n++
		}
		// Topic "a" has 7 partitions over 3 readers: 2 or 3 each.
		if perTopic["a"] < 2 || perTopic["a"] > 3 || perTopic["bb"] > 1 {
			t.Errorf("reader %d got %v", s, perTopic)
		}
		if !ec.noMore[s] {
			t.Errorf("reader %d of a bounded source was not told there are no more splits", s)
		}
	}
	if n != 9 || len(ec.all()) != 9 {
		t.Fatalf("assigned %d splits (%d distinct), want 9", n, len(ec.all()))
	}
}

func TestEnumeratorRestoresWithoutReassigning(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "r", 2)
	c.fill(t, "r", 2, 5)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("r"),
		kafka.StartingOffsets(kafka.Latest()), kafka.PartitionDiscoveryInterval(time.Hour), kafka.WithLogger(testLogger(t)))
	ec := newEnumCtx(1)
	e, err := src.CreateEnumerator(ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	state, err := e.(*kafka.Enumerator).SnapshotState(1)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if len(state.Pending) != 2 || len(state.Assigned) != 0 {
		t.Fatalf("state before any reader: %+v, want 2 pending", state)
	}
	// Partition 0 was handed out; partition 1 still pending; partition 2 is new.
	state = kafka.EnumeratorState{Assigned: []kafka.TopicPartition{{Topic: "r", Partition: 0}}, Pending: state.Pending[1:]}
	if _, err := c.adm.CreatePartitions(ctxT(t), 1, "r"); err != nil {
		t.Fatal(err)
	}
	ec = newEnumCtx(1)
	e, err = src.RestoreEnumerator(ec, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.AddReader(0); err != nil {
		t.Fatal(err)
	}
	got := ec.all()
	// The pending split keeps its offset (5, latest then); the new partition
	// starts at NewPartitionOffsets (earliest), not at StartingOffsets.
	want := map[string]kafka.PartitionSplit{"r-1": split("r", 1, 5, kafka.NoStoppingOffset), "r-2": split("r", 2, 0, kafka.NoStoppingOffset)}
	if !mapsEqual(got, want) {
		t.Fatalf("assigned %+v, want %+v", got, want)
	}
	if ec.noMore[0] {
		t.Fatal("a discovering enumerator signalled no more splits")
	}
}

func TestFailedDiscoveryFailsTheNextSplitRequest(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "gone", 1)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("gone"),
		kafka.PartitionDiscoveryInterval(20*time.Millisecond), kafka.WithLogger(quietLogger()))
	ec := newEnumCtx(1)
	e, err := src.CreateEnumerator(ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := c.adm.DeleteTopics(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, testTimeout, "HandleSplitRequest to fail with ErrTopicNotFound once discovery fails", func() bool {
		err := e.HandleSplitRequest(0)
		if err != nil && !errors.Is(err, kafka.ErrTopicNotFound) {
			t.Fatalf("HandleSplitRequest: %v, want ErrTopicNotFound once discovery fails", err)
		}
		return err != nil
	})
}
