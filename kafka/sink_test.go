package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sinkCtx is our fake of the engine's sink context.
type sinkCtx struct{ subtask, parallelism int }

func (c sinkCtx) Subtask() int              { return c.subtask }
func (c sinkCtx) Parallelism() int          { return c.parallelism }
func (c sinkCtx) JobName() string           { return "test" }
func (c sinkCtx) FileSystems() *fs.Resolver { return fs.NewResolver() }
func (c sinkCtx) CurrentProcessingTime() stream.Timestamp {
	return stream.Timestamp(time.Now().UnixMilli())
}
func (c sinkCtx) RegisterProcessingTimer(stream.Timestamp, func(stream.Timestamp) error) (cancel func()) {
	return func() {}
}
func (c sinkCtx) MetricGroup() stream.MetricGroup { return discardGauges{} }

// discardGauges is a MetricGroup that keeps nothing.
type discardGauges struct{}

func (discardGauges) SetGauge(string, float64) {}
func (discardGauges) RemoveGauge(string)       {}

// testGauges is a MetricGroup that keeps the gauges for the test to read.
type testGauges struct {
	mu sync.Mutex
	m  map[string]float64
}

func (g *testGauges) SetGauge(name string, v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]float64{}
	}
	g.m[name] = v
}

func (g *testGauges) RemoveGauge(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, name)
}

// snapshot returns a copy of the gauges.
func (g *testGauges) snapshot() map[string]float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.m)
}

func mustSink[T any](t testing.TB, ser kafka.Serializer[T], opts ...kafka.SinkOpt) *kafka.Sink[T] {
	t.Helper()
	s, err := kafka.NewSink(ser, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("v%04d", i)
	}
	return out
}

func TestSinkDeliversEveryRecord(t *testing.T) {
	c := newCluster(t)
	data := numbered(1000)
	for _, g := range []kafka.DeliveryGuarantee{kafka.None, kafka.AtLeastOnce, kafka.ExactlyOnce} {
		for _, par := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", g, par), func(t *testing.T) {
				topic := fmt.Sprintf("out-%s-%d", g, par)
				c.createTopic(t, topic, 4)
				sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(g),
					kafka.TransactionalIDPrefix(topic), kafka.WithLogger(testLogger(t)))
				env := newEnv(t, par)
				in := stream.FromSlice(env, data)
				if g == kafka.ExactlyOnce {
					stream.SinkToCommitting(in, sink)
				} else {
					stream.SinkTo(in, sink)
				}
				if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
					t.Fatal(err)
				}
				got := sorted(values(c.consume(t, topic, g == kafka.ExactlyOnce)))
				if !slices.Equal(got, data) {
					t.Fatalf("topic holds %d records, want the %d written; %s", len(got), len(data), diff(got, data))
				}
				// One transaction per subtask that got records (a fast reader
				// of the collection source may take every split).
				if n := sink.Metrics().Transactions.Load(); g == kafka.ExactlyOnce && (n < 1 || n > int64(par) || sink.Metrics().Superseded.Load() != 0) {
					t.Fatalf("%d transactions committed (%d superseded), want 1 to %d", n, sink.Metrics().Superseded.Load(), par)
				}
			})
		}
	}
}

func TestSerializerChoosesTopicKeyHeadersAndTimestamp(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "even", 1)
	c.createTopic(t, "odd", 1)
	type ev struct {
		N  int
		At int64
	}
	ser := kafka.SerializerFunc[ev](func(v ev, ts stream.Timestamp) (*kgo.Record, error) {
		if v.N < 0 {
			return nil, nil // skipped
		}
		topic := "even"
		if v.N%2 == 1 {
			topic = "odd"
		}
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(v.N)), Value: []byte(fmt.Sprint(v.N * 10)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(v.N))}}}
		if v.N == 3 {
			r.Timestamp = time.UnixMilli(123456)
		}
		return r, nil
	})
	sink := mustSink(t, ser, kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.AtLeastOnce), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	in := stream.AssignTimestampsAndWatermarks(stream.FromSlice(env, []ev{{0, 1000}, {1, 2000}, {2, 3000}, {3, 4000}, {-1, 5000}}),
		stream.NoWatermarks[ev]().WithTimestampAssigner(func(v ev, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(v.At) }))
	stream.SinkTo(in, sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, topic := range []string{"even", "odd"} {
		for _, r := range c.consume(t, topic, false) {
			got = append(got, fmt.Sprintf("%s k=%s v=%s h=%s ts=%d", r.Topic, r.Key, r.Value, r.Headers[0].Value, r.Timestamp.UnixMilli()))
		}
	}
	want := []string{
		"even k=0 v=0 h=0 ts=1000", "even k=2 v=20 h=2 ts=3000",
		"odd k=1 v=10 h=1 ts=2000", "odd k=3 v=30 h=3 ts=123456",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// stableEnd returns the last stable offset and the high watermark of a
// one-partition topic.
func (c *cluster) stableEnd(t testing.TB, topic string) (lso, hwm int64) {
	t.Helper()
	ls, err := c.adm.ListCommittedOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	he, err := c.adm.ListEndOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := ls.Lookup(topic, 0)
	h, _ := he.Lookup(topic, 0)
	return l.Offset, h.Offset
}

func newTxnWriter(t *testing.T, sink *kafka.Sink[string], subtask, par int) (*kafka.TxnWriter[string], stream.Committer[kafka.TxnCommittable]) {
	t.Helper()
	committer, err := sink.CreateCommitter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { committer.Close() })
	w, err := sink.CreateWriter(sinkCtx{subtask, par})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w.(*kafka.TxnWriter[string]), committer
}

func TestExactlyOnceRecordsBecomeVisibleOnlyAtCommit(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	sink := mustSink(t, kafka.StringSerializer("eo"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("vis"), kafka.WithLogger(testLogger(t)))
	w, committer := newTxnWriter(t, sink, 0, 1)
	if cs, err := w.PrepareCommit(context.Background()); err != nil || len(cs) != 0 {
		t.Fatalf("PrepareCommit with nothing written: %v, %v; want no committable", cs, err)
	}
	for _, v := range numbered(10) {
		if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	// Written (the high watermark moved) but not stable: a read_committed
	// consumer sees nothing.
	if lso, hwm := c.stableEnd(t, "eo"); lso != 0 || hwm != 10 {
		t.Fatalf("after flush: last stable offset %d, high watermark %d; want 0 and 10", lso, hwm)
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil || len(cs) != 1 || cs[0].TransactionalID != "vis-0-0" {
		t.Fatalf("PrepareCommit: %+v, %v; want one committable of vis-0-0", cs, err)
	}
	if lso, _ := c.stableEnd(t, "eo"); lso != 0 {
		t.Fatalf("pre-committed records are visible: last stable offset %d", lso)
	}
	if got := c.consume(t, "eo", true); len(got) != 0 {
		t.Fatalf("read_committed consumer saw %d records before commit", len(got))
	}
	if err := committer.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(10)) {
		t.Fatalf("after commit: %v", got)
	}
	// Committing again (a restored committable) is not an error.
	if err := committer.Commit(context.Background(), cs); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(10)) {
		t.Fatalf("after the second commit: %v", got)
	}
}

// TestCommittableCommittedByAFreshProcess: a committable restored from a
// checkpoint is committed by a new sink (new clients, new registry).
func TestCommittableCommittedByAFreshProcess(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "eo", 1)
	opts := []kafka.SinkOpt{kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("fresh"), kafka.WithLogger(testLogger(t))}
	w, _ := newTxnWriter(t, mustSink(t, kafka.StringSerializer("eo"), opts...), 0, 1)
	for _, v := range numbered(5) {
		if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // the process dies; the pre-committed transaction stays open

	restored, err := mustSink(t, kafka.StringSerializer("eo"), opts...).CreateCommitter()
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if err := restored.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	if got := values(c.consume(t, "eo", true)); !slices.Equal(got, numbered(5)) {
		t.Fatalf("after the restored commit: %v", got)
	}
}

func TestExactlyOnceFailedRunLeavesNothingVisible(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "fail", 1)
	sink := mustSink(t, kafka.StringSerializer("fail"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("failing"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	in := stream.Map(stream.FromSlice(env, numbered(1000)), func(v string) string {
		if v == "v0500" {
			// Fail once part of the transaction has reached the broker.
			// It fails whether or not the broker shows it in time; what
			// follows checks that nothing of the run is visible.
			_ = testwait.Poll(testTimeout, func() bool { _, hwm := c.stableEnd(t, "fail"); return hwm > 0 })
			panic("boom")
		}
		return v
	})
	stream.SinkToCommitting(in, sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("job ended with %v, want the map's panic", err)
	}
	lso, hwm := c.stableEnd(t, "fail")
	if hwm == 0 {
		t.Fatal("nothing reached the broker; the test proves nothing")
	}
	// The open transaction was aborted: nothing blocks read_committed
	// consumers and nothing of the run is visible.
	if lso != hwm {
		t.Fatalf("last stable offset %d behind the high watermark %d: the transaction is still open", lso, hwm)
	}
	if got := c.consume(t, "fail", true); len(got) != 0 {
		t.Fatalf("read_committed consumer saw %d records of the failed run", len(got))
	}
	if n := len(c.consume(t, "fail", false)); n == 0 {
		t.Fatal("read_uncommitted consumer saw nothing: the aborted records should be there")
	}
}

// linger leaves a transaction open under id, with one record in topic.
func (c *cluster) linger(t *testing.T, id, topic string) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("lingering " + id)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) txnStates(t *testing.T, ids ...string) map[string]string {
	t.Helper()
	d, err := c.adm.DescribeTransactions(ctxT(t), ids...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	d.Each(func(x kadm.DescribedTransaction) { out[x.TxnID] = x.State })
	return out
}

func TestLingeringTransactionsOfThePrefixAreAbortedAtStart(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "out", 2)
	c.createTopic(t, "other", 1)
	ours := []string{"job-0-1", "job-3-0", "job-0-7"} // 3-0: subtask 3 of a run at higher parallelism; 0-7: beyond the pool
	for _, id := range ours {
		c.linger(t, id, "out")
	}
	theirs := []string{"jobx-0-0", "job-side"}
	for _, id := range theirs {
		c.linger(t, id, "other")
	}
	sink := mustSink(t, kafka.StringSerializer("out"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("job"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 2)
	stream.SinkToCommitting(stream.FromSlice(env, numbered(100)), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	states := c.txnStates(t, append(ours, theirs...)...)
	for _, id := range ours {
		if states[id] == "Ongoing" {
			t.Errorf("lingering transaction %s of the job's prefix is still open", id)
		}
	}
	for _, id := range theirs {
		if states[id] != "Ongoing" {
			t.Errorf("transaction %s of another prefix was touched: %s", id, states[id])
		}
	}
	if got := sorted(values(c.consume(t, "out", true))); !slices.Equal(got, numbered(100)) {
		t.Fatalf("read_committed sees %d records (%s), want the job's 100 and none of the lingering ones", len(got), diff(got, numbered(100)))
	}
	if n := sink.Metrics().LingeringAborted.Load(); n != 3 {
		t.Fatalf("LingeringAborted = %d, want 3", n)
	}
}

// Transactional ids cycle through the subtask's pool. When every id holds
// a transaction (pre-committed ones wait for a completed checkpoint, as
// after failed checkpoints or savepoints), the pool grows where the
// brokers can list transactions (a restart then finds the grown ids) and
// the writer fails with ErrPoolExhausted where they cannot. Either way
// every committed record is there exactly once.
func TestTransactionalIDsComeFromAPool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noList   bool
		wantIDs  []string // of the three transactions pre-committed without a commit
		wantFail bool
	}{
		{name: "brokers list transactions: the pool grows", wantIDs: []string{"p-1-1", "p-1-0", "p-1-2"}},
		{name: "brokers cannot list transactions: bounded", noList: true, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.createTopic(t, "pool", 1)
			if tc.noList {
				c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListTransactions}, Err: kerr.UnsupportedVersion, Count: -1})
			}
			sink := mustSink(t, kafka.StringSerializer("pool"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
				kafka.TransactionalIDPrefix("p"), kafka.TransactionalIDPoolSize(2), kafka.WithLogger(quietLogger()))
			w, committer := newTxnWriter(t, sink, 1, 2)
			var ids, written []string
			step := func(v string) []kafka.TxnCommittable {
				t.Helper()
				if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
					t.Fatal(err)
				}
				written = append(written, v)
				cs, err := w.PrepareCommit(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, cs[0].TransactionalID)
				return cs
			}
			for i := 0; i < 5; i++ {
				if err := committer.Commit(context.Background(), step(fmt.Sprint("a", i))); err != nil {
					t.Fatal(err)
				}
			}
			if want := []string{"p-1-0", "p-1-1", "p-1-0", "p-1-1", "p-1-0"}; !slices.Equal(ids, want) {
				t.Fatalf("transactional ids %v, want %v", ids, want)
			}
			// Two pre-committed transactions await commit (two failed
			// checkpoints): every id of the pool holds one.
			ids = nil
			pending := append(step("b0"), step("b1")...)
			err := w.Write(context.Background(), "b2", stream.NoTimestamp)
			if tc.wantFail {
				if !errors.Is(err, kafka.ErrPoolExhausted) || !strings.Contains(err.Error(), "ListTransactions") {
					t.Fatalf("third open transaction: %v, want ErrPoolExhausted saying why the pool cannot grow", err)
				}
				if err := committer.Commit(context.Background(), pending); err != nil {
					t.Fatal(err)
				}
				cs := step("b2")
				if len(cs) != 1 {
					t.Fatal("no transaction after the pool was freed")
				}
				if err := committer.Commit(context.Background(), cs); err != nil {
					t.Fatal(err)
				}
			} else {
				if err != nil {
					t.Fatalf("third open transaction: %v", err)
				}
				written = append(written, "b2")
				cs, err := w.PrepareCommit(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, cs[0].TransactionalID)
				if !slices.Equal(ids, tc.wantIDs) {
					t.Fatalf("transactional ids %v, want %v", ids, tc.wantIDs)
				}
				// The next completed checkpoint commits all three.
				if err := committer.Commit(context.Background(), append(pending, cs...)); err != nil {
					t.Fatal(err)
				}
			}
			if err := committer.Commit(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			got := values(c.consume(t, "pool", true))
			if !slices.Equal(got, written) {
				t.Fatalf("committed records %v, want %v", got, written)
			}
		})
	}
}

func TestTransactionTimeoutIsCheckedAgainstBrokerAndCheckpointInterval(t *testing.T) {
	c := newCluster(t, kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"}))
	c.createTopic(t, "to", 1)
	base := []kafka.SinkOpt{kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("to"), kafka.WithLogger(testLogger(t))}
	every := func(d string) *conf.Configuration {
		return conf.New().Set("execution.checkpointing.interval", d)
	}
	cases := []struct {
		name   string
		opts   []kafka.SinkOpt
		errHas []string // nil: the writer starts
	}{
		{"default lowered to the broker maximum", nil, nil},
		{"explicit above the broker maximum", []kafka.SinkOpt{kafka.TransactionTimeout(2 * time.Minute)},
			[]string{"transaction timeout 2m0s", "transaction.max.timeout.ms (1m0s)"}},
		{"not longer than the checkpoint interval", []kafka.SinkOpt{kafka.Checkpointing(every("5 min"))},
			[]string{"transaction timeout 1m0s", "execution.checkpointing.interval = 5m0s"}},
		{"longer than the checkpoint interval", []kafka.SinkOpt{kafka.TransactionTimeout(50 * time.Second), kafka.Checkpointing(every("10 s"))}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := mustSink(t, kafka.StringSerializer("to"), append(base, tc.opts...)...)
			committer, _ := sink.CreateCommitter()
			defer committer.Close()
			w, err := sink.CreateWriter(sinkCtx{0, 1})
			if tc.errHas != nil {
				var te *kafka.TransactionTimeoutError
				if !errors.As(err, &te) || !errors.Is(err, kafka.ErrTransactionTimeout) {
					t.Fatalf("got %v, want a TransactionTimeoutError", err)
				}
				if restart.Recoverable(fmt.Errorf("sink: %w", err)) {
					t.Errorf("a restart is thought to fix %v", err)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Write(context.Background(), "x", stream.NoTimestamp); err != nil {
				t.Fatal(err)
			}
			d, err := c.adm.DescribeTransactions(ctxT(t), "to-0-0")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := d.On("to-0-0", nil); got.TimeoutMillis > 60000 {
				t.Fatalf("transaction timeout %d ms above the broker's maximum", got.TimeoutMillis)
			}
		})
	}
}

func TestExactlyOnceSinkNeedsSinkToCommitting(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "nc", 1)
	sink := mustSink(t, kafka.StringSerializer("nc"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("nc"), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	stream.SinkTo(stream.FromSlice(env, []string{"a"}), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); !errors.Is(err, kafka.ErrNoCommitter) {
		t.Fatalf("got %v, want ErrNoCommitter", err)
	}
}

func TestAtLeastOnceFailsOnProduceErrors(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "denied", 1)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "denied", Err: kerr.TopicAuthorizationFailed, Count: -1})
	sink := mustSink(t, kafka.StringSerializer("denied"), kafka.BootstrapServers(c.addrs...),
		kafka.Guarantee(kafka.AtLeastOnce), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	stream.SinkTo(stream.FromSlice(env, []string{"a", "b"}), sink)
	_, err := env.ExecuteContext(ctxT(t), t.Name())
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.Contains(err.Error(), `producing to topic "denied"`) {
		t.Fatalf("got %v, want the produce error naming the topic", err)
	}
	// NONE logs and counts the same failures and goes on.
	sink = mustSink(t, kafka.StringSerializer("denied"), kafka.BootstrapServers(c.addrs...), kafka.WithLogger(quietLogger()))
	env = newEnv(t, 1)
	stream.SinkTo(stream.FromSlice(env, []string{"a", "b"}), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatalf("NONE: %v", err)
	}
	if n := sink.Metrics().ProduceErrors.Load(); n != 2 {
		t.Fatalf("NONE: %d produce errors counted, want 2", n)
	}
}

// A missing output topic is created where the broker allows it (as Java's
// producer does); where it does not, the job fails once, naming the
// topic, however many restarts its strategy allows.
func TestSinkToAMissingTopic(t *testing.T) {
	for _, g := range []kafka.DeliveryGuarantee{kafka.AtLeastOnce, kafka.ExactlyOnce} {
		t.Run(g.String()+"/broker creates it", func(t *testing.T) {
			c := newCluster(t, kfake.AllowAutoTopicCreation())
			topic := "created-" + g.String()
			sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(g),
				kafka.TransactionalIDPrefix(topic), kafka.WithLogger(testLogger(t)))
			env := newEnv(t, 1)
			in := stream.FromSlice(env, []string{"a", "b", "c"})
			if g == kafka.ExactlyOnce {
				stream.SinkToCommitting(in, sink)
			} else {
				stream.SinkTo(in, sink)
			}
			if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
				t.Fatal(err)
			}
			if got := sorted(values(c.consume(t, topic, g == kafka.ExactlyOnce))); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("topic holds %q", got)
			}
		})
		t.Run(g.String()+"/broker refuses", func(t *testing.T) {
			c := newCluster(t)
			topic := "missing-" + g.String()
			sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(g),
				kafka.TransactionalIDPrefix(topic), kafka.WithLogger(quietLogger()))
			env := newEnv(t, 1, stream.WithRestartStrategy(stream.FixedDelayRestart(5, 0)))
			in := stream.FromSlice(env, []string{"a"})
			if g == kafka.ExactlyOnce {
				stream.SinkToCommitting(in, sink)
			} else {
				stream.SinkTo(in, sink)
			}
			res, err := env.ExecuteContext(ctxT(t), t.Name())
			if !errors.Is(err, kafka.ErrTopicNotCreated) || !strings.Contains(err.Error(), `topic "`+topic+`"`) {
				t.Fatalf("got %v, want ErrTopicNotCreated naming the topic", err)
			}
			// One attempt (one failed record), not six.
			if n := sink.Metrics().ProduceErrors.Load(); n != 1 || res != nil && res.Restarts != 0 {
				t.Errorf("%d failed records (result %+v): a restart cannot create the topic", n, res)
			}
		})
	}
}
