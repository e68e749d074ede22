//go:build integration

package kafka_test

// Tests against a real Apache Kafka broker (integration/kafkabroker):
//
//	go test -tags integration -race ./kafka/...

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

// realCluster connects to the shared broker; names are made unique per
// test, as the broker outlives the tests.
func realCluster(t *testing.T) (*cluster, func(string) string) {
	t.Helper()
	return realClusterAt(t, kafkabroker.Shared(t).Addr)
}

// realClusterAt is realCluster for the broker at addr.
func realClusterAt(t *testing.T, addr string) (*cluster, func(string) string) {
	t.Helper()
	c := connect(t, nil, []string{addr})
	suffix := fmt.Sprintf("%s-%d", strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()), time.Now().UnixNano())
	return c, func(s string) string { return s + "-" + suffix }
}

// waitStable waits until no transaction is open on the topic: a real
// broker writes commit and abort markers after it answered EndTxn.
func (c *cluster) waitStable(t *testing.T, topic string) {
	t.Helper()
	testwait.Eventually(t, testTimeout, "no transaction open on "+topic, func() bool {
		ls, err := c.adm.ListCommittedOffsets(ctxT(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		he, err := c.adm.ListEndOffsets(ctxT(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		stable := true
		he.Each(func(h kadm.ListedOffset) {
			if l, ok := ls.Lookup(h.Topic, h.Partition); !ok || l.Offset < h.Offset {
				stable = false
			}
		})
		return stable
	})
}

func TestIntegrationBoundedSourceRead(t *testing.T) {
	c, name := realCluster(t)
	topic := name("in")
	c.createTopic(t, topic, 3)
	want := c.fill(t, topic, 3, 200)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics(topic),
		kafka.GroupID(name("g")), kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	got, err := readAll(t, 2, src)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records, want %d: %s", len(got), len(want), diff(got, want))
	}
}

func TestIntegrationExactlyOnceSink(t *testing.T) {
	c, name := realCluster(t)
	topic := name("eo")
	c.createTopic(t, topic, 2)
	sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(name("tx")), kafka.WithLogger(testLogger(t)))

	// Visible to read_committed only at commit.
	w, committer := newTxnWriter(t, sink, 0, 1)
	for _, v := range numbered(50) {
		if err := w.Write(context.Background(), v, stream.NoTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("PrepareCommit: %v %v", cs, err)
	}
	if got := c.consume(t, topic, true); len(got) != 0 {
		t.Fatalf("read_committed saw %d records before commit", len(got))
	}
	if n := len(c.consume(t, topic, false)); n != 50 {
		t.Fatalf("read_uncommitted saw %d records, want 50", n)
	}
	if err := committer.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	if err := committer.Commit(context.Background(), cs); err != nil { // idempotent
		t.Fatalf("second commit: %v", err)
	}
	c.waitStable(t, topic)
	if got := sorted(values(c.consume(t, topic, true))); !slices.Equal(got, numbered(50)) {
		t.Fatalf("after commit: %d records", len(got))
	}
	w.Close()

	// A whole job.
	topic2 := name("eo-job")
	c.createTopic(t, topic2, 3)
	sink2 := mustSink(t, kafka.StringSerializer(topic2), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(name("job")), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 2)
	stream.SinkToCommitting(stream.FromSlice(env, numbered(500)), sink2)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	c.waitStable(t, topic2)
	if got := sorted(values(c.consume(t, topic2, true))); !slices.Equal(got, numbered(500)) {
		t.Fatalf("job output: %d records, %s", len(got), diff(got, numbered(500)))
	}
}

func TestIntegrationLingeringTransactionAbortedAtStart(t *testing.T) {
	c, name := realCluster(t)
	topic := name("out")
	c.createTopic(t, topic, 1)
	prefix := name("lj")
	c.linger(t, prefix+"-0-1", topic)
	if lso, hwm := c.stableEnd(t, topic); lso >= hwm {
		t.Fatalf("no open transaction: last stable offset %d, high watermark %d", lso, hwm)
	}
	listed, err := kafka.ListTransactions(ctxT(t), prefix, kafka.BootstrapServers(c.addrs...))
	if err != nil || len(listed) != 1 || !listed[0].Open() || listed[0].Subtask != 0 || listed[0].Index != 1 {
		t.Fatalf("ListTransactions: %+v, %v", listed, err)
	}
	sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(prefix), kafka.WithLogger(testLogger(t)))
	env := newEnv(t, 1)
	stream.SinkToCommitting(stream.FromSlice(env, numbered(10)), sink)
	if _, err := env.ExecuteContext(ctxT(t), t.Name()); err != nil {
		t.Fatal(err)
	}
	c.waitStable(t, topic)
	if got := values(c.consume(t, topic, true)); !slices.Equal(got, numbered(10)) {
		t.Fatalf("read_committed: %v, want the job's records only", got)
	}
	if n := sink.Metrics().LingeringAborted.Load(); n != 1 {
		t.Fatalf("LingeringAborted = %d, want 1", n)
	}
}

func TestIntegrationAbortLingeringTransactionsTool(t *testing.T) {
	c, name := realCluster(t)
	topic := name("out")
	c.createTopic(t, topic, 1)
	prefix := name("tool")
	c.linger(t, prefix+"-0-0", topic)
	c.linger(t, prefix+"-1-2", topic)
	aborted, err := kafka.AbortLingeringTransactions(ctxT(t), prefix, kafka.BootstrapServers(c.addrs...))
	if err != nil || len(aborted) != 2 {
		t.Fatalf("AbortLingeringTransactions: %+v, %v", aborted, err)
	}
	c.waitStable(t, topic)
	if got := c.consume(t, topic, true); len(got) != 0 {
		t.Fatalf("aborted records visible: %v", values(got))
	}
}

// TestIntegrationTimedOutTransactionIsReportedLost: the broker aborts a
// pre-committed transaction at its timeout; the commit is then an error,
// not a silent success.
func TestIntegrationTimedOutTransactionIsReportedLost(t *testing.T) {
	c, name := realCluster(t)
	topic := name("to")
	c.createTopic(t, topic, 1)
	sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(name("to")), kafka.TransactionTimeout(time.Second), kafka.WithLogger(testLogger(t)))
	w, committer := newTxnWriter(t, sink, 0, 1)
	if err := w.Write(context.Background(), "doomed", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The broker's check runs every
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s).
	testwait.Eventually(t, testTimeout, "the broker to abort the timed-out transaction", func() bool {
		lso, hwm := c.stableEnd(t, topic)
		return lso >= hwm
	})
	err = committer.Commit(context.Background(), cs)
	t.Logf("commit of the timed-out transaction: %v", err)
	if !errors.Is(err, kafka.ErrTransactionAborted) {
		t.Fatalf("commit of a timed-out transaction: %v, want ErrTransactionAborted", err)
	}
}

func TestIntegrationSourceCommitsOffsetsAndRestartsFromThem(t *testing.T) {
	c, name := realCluster(t)
	topic, group := name("cm"), name("g")
	c.createTopic(t, topic, 2)
	c.fill(t, topic, 2, 10)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics(topic), kafka.GroupID(group),
		kafka.WithLogger(testLogger(t)))
	r := newReader(t, src, &readerCtx{parallelism: 1, clk: clock.System{}})
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: topic, Partition: p} }
	if err := r.AddSplits([]kafka.PartitionSplit{{TopicPartition: tp(0), Offset: 0, StoppingOffset: kafka.NoStoppingOffset},
		{TopicPartition: tp(1), Offset: 6, StoppingOffset: kafka.NoStoppingOffset}}); err != nil {
		t.Fatal(err)
	}
	out := &recordingOutput{}
	pollUntil(t, r, out, func() bool { return len(out.recs) == 14 })
	if _, err := r.SnapshotState(1); err != nil {
		t.Fatal(err)
	}
	if err := r.NotifyCheckpointComplete(1); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, testTimeout, "the offsets to be committed", func() bool {
		if src.Metrics().OffsetCommits.Load() > 0 {
			return true
		}
		if src.Metrics().OffsetCommitFailures.Load() > 0 {
			t.Fatal("offsets not committed")
		}
		return false
	})
	c.produce(t, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("new")})
	again := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics(topic), kafka.GroupID(group),
		kafka.StartingOffsets(kafka.CommittedOffsets(kafka.ResetNone)), kafka.Bounded(kafka.Latest()), kafka.WithLogger(testLogger(t)))
	got, err := readAll(t, 1, again)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"new"}) {
		t.Fatalf("restarted from the committed offsets, read %v, want [new]", got)
	}
}

// TestIntegrationCommitIsIdempotentAcrossRestarts: committed, the id
// initialised again by a restarted writer, committed again (a second
// restore from the same checkpoint): success.
func TestIntegrationCommitIsIdempotentAcrossRestarts(t *testing.T) {
	c, name := realCluster(t)
	topic := name("again")
	c.createTopic(t, topic, 1)
	sink := mustSink(t, kafka.StringSerializer(topic), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(name("again")), kafka.WithLogger(testLogger(t)))
	w, committer := newTxnWriter(t, sink, 0, 1)
	if err := w.Write(context.Background(), "once", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PrepareCommit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := committer.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	c.waitStable(t, topic)
	// A restarted writer fences its pool.
	w2, err := sink.CreateWriter(sinkCtx{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	err = committer.Commit(context.Background(), cs)
	t.Logf("second commit: %v (superseded %d)", err, sink.Metrics().Superseded.Load())
	if err != nil {
		t.Fatalf("second commit after the id moved on: %v", err)
	}
	if got := values(c.consume(t, topic, true)); !slices.Equal(got, []string{"once"}) {
		t.Fatalf("read_committed: %v", got)
	}
}

// TestIntegrationEndToEndExactlyOnceAcrossJobFailures is the end-to-end
// exactly-once pipeline, failed three times, on the real broker.
func TestIntegrationEndToEndExactlyOnceAcrossJobFailures(t *testing.T) {
	c, name := realCluster(t)
	runEndToEnd(t, c.addrs, c, 3, name, func(topic string) { c.waitStable(t, topic) })
}
