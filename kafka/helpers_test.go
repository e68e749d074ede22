package kafka_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testTimeout bounds every wait of a test.
const testTimeout = 60 * time.Second

// tLog routes logs to t.Log until the test ends (goroutines of closed
// clients may log a little later; those lines are dropped).
type tLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	w := &tLog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cluster is an in-process kfake cluster with an admin client.
type cluster struct {
	*kfake.Cluster
	addrs []string
	cl    *kgo.Client
	adm   *kadm.Client
}

func newCluster(t testing.TB, opts ...kfake.Opt) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return connect(t, c, c.ListenAddrs())
}

func connect(t testing.TB, c *kfake.Cluster, addrs []string, opts ...kgo.Opt) *cluster {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &cluster{Cluster: c, addrs: addrs, cl: cl, adm: kadm.NewClient(cl)}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func (c *cluster) createTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	resp, err := c.adm.CreateTopic(ctxT(t), partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// produce writes records synchronously (Partition is honoured).
func (c *cluster) produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	if err := c.cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// fill writes n records per partition; the value of record i of partition
// p is "p:i" and its timestamp 1000*i.
func (c *cluster) fill(t testing.TB, topic string, partitions int32, n int) []string {
	t.Helper()
	var recs []*kgo.Record
	var want []string
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("%d:%d", p, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v), Timestamp: time.UnixMilli(int64(1000 * i))})
			want = append(want, v)
		}
	}
	c.produce(t, recs...)
	slices.Sort(want)
	return want
}

// consume reads a topic from the start up to its end (the last stable
// offset for read_committed) and returns the values in partition order.
func (c *cluster) consume(t testing.TB, topic string, committed bool) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t)
	var ends kadm.ListedOffsets
	var err error
	if committed {
		ends, err = c.adm.ListCommittedOffsets(ctx, topic)
	} else {
		ends, err = c.adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			parts[o.Partition] = kgo.NewOffset().AtStart()
			remaining[o.Partition] = o.Offset
		}
	})
	if len(parts) == 0 {
		return nil
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %v (still to read: %v)", topic, err, remaining)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consuming %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Partition]; ok && r.Offset < end {
				if !r.Attrs.IsControl() {
					out = append(out, r)
				}
				if r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
			}
		})
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func newEnv(t testing.TB, par int, opts ...stream.Option) *stream.Environment {
	return stream.NewEnvironment(append([]stream.Option{stream.WithParallelism(par), stream.WithLogger(testLogger(t))}, opts...)...)
}

func mustSource[T any](t testing.TB, d kafka.Deserializer[T], opts ...kafka.SourceOpt) *kafka.Source[T] {
	t.Helper()
	src, err := kafka.NewSource(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// readAll runs a bounded job reading src and returns the sorted values.
func readAll(t testing.TB, par int, src *kafka.Source[string]) ([]string, error) {
	t.Helper()
	env := newEnv(t, par)
	res := stream.Collect(stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "kafka"))
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		return nil, err
	}
	return sorted(res.Values()), nil
}

// liveSink records what reaches it while the job runs.
type liveSink[T any] struct {
	mu   sync.Mutex
	recs []stream.Record[T]
}

func newLiveSink[T any]() *liveSink[T] { return &liveSink[T]{} }

func (s *liveSink[T]) CreateWriter(stream.SinkContext) (stream.SinkWriter[T], error) { return s, nil }
func (s *liveSink[T]) Flush(context.Context, bool) error                             { return nil }
func (s *liveSink[T]) Close() error                                                  { return nil }
func (s *liveSink[T]) Write(_ context.Context, v T, ts stream.Timestamp) error {
	s.mu.Lock()
	s.recs = append(s.recs, stream.Record[T]{Value: v, Timestamp: ts})
	s.mu.Unlock()
	return nil
}

func (s *liveSink[T]) records() []stream.Record[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

func (s *liveSink[T]) values() []T {
	var out []T
	for _, r := range s.records() {
		out = append(out, r.Value)
	}
	return out
}

// waitFor polls cond until it holds, failing the test at the deadline or
// as soon as the job (done) ends.
func waitFor(t testing.TB, what string, done <-chan error, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, testTimeout, what, func() bool {
		if cond() {
			return true
		}
		select {
		case err := <-done:
			t.Fatalf("waiting for %s: the job ended: %v", what, err)
		default:
		}
		return false
	})
}

// runJob starts env in the background; stop cancels it and checks it ended
// by cancellation.
func runJob(t testing.TB, env *stream.Environment) (done chan error, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() {
		_, err := env.ExecuteContext(ctx, t.Name())
		done <- err
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !strings.Contains(err.Error(), context.Canceled.Error()) {
					t.Errorf("job ended with %v, want cancellation", err)
				}
			case <-time.After(testTimeout):
				t.Error("job did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return done, stop
}

// Reader harness: our own fakes of the engine's interfaces.

type readerCtx struct {
	subtask, parallelism int
	clk                  clock.Clock
	mu                   sync.Mutex
	requests             int
	gauges               *testGauges
}

func (c *readerCtx) Subtask() int        { return c.subtask }
func (c *readerCtx) Parallelism() int    { return c.parallelism }
func (c *readerCtx) Clock() stream.Clock { return c.clk }

func (c *readerCtx) FileSystems() *fs.Resolver { return fs.NewResolver() }
func (c *readerCtx) MetricGroup() stream.MetricGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gauges == nil {
		c.gauges = &testGauges{}
	}
	return c.gauges
}
func (c *readerCtx) SendSplitRequest() {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
}

type emitted struct {
	split string
	value string
	ts    int64
}

type recordingOutput struct {
	registered []string // ForSplit calls, in order (first time per id)
	released   []string
	recs       []emitted
	outs       map[string]*splitRec
}

type splitRec struct {
	o  *recordingOutput
	id string
}

func (s *splitRec) Collect(v string, ts stream.Timestamp) {
	s.o.recs = append(s.o.recs, emitted{s.id, v, int64(ts)})
}

func (o *recordingOutput) Collect(v string, ts stream.Timestamp) {
	o.recs = append(o.recs, emitted{"", v, int64(ts)})
}
func (o *recordingOutput) ForSplit(id string) stream.SplitOutput[string] {
	if o.outs == nil {
		o.outs = map[string]*splitRec{}
	}
	if s, ok := o.outs[id]; ok {
		return s
	}
	o.registered = append(o.registered, id)
	s := &splitRec{o, id}
	o.outs[id] = s
	return s
}
func (o *recordingOutput) ReleaseSplit(id string) {
	o.released = append(o.released, id)
	delete(o.outs, id)
}

// pollUntil drives a reader until cond holds or it ends, waiting on
// Available between polls.
func pollUntil(t testing.TB, r stream.SourceReader[string, kafka.PartitionSplit], out *recordingOutput, cond func() bool) stream.InputStatus {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		st, err := r.PollNext(context.Background(), out)
		if err != nil {
			t.Fatalf("PollNext: %v", err)
		}
		if st == stream.EndOfInput || cond() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("reader made no progress; emitted %d records", len(out.recs))
		}
		if st == stream.NothingAvailable {
			select {
			case <-r.Available():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
