package kafka_test

import (
	"context"
	"maps"
	"testing"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// gaugeSinkCtx is sinkCtx with a processing time the test sets and the
// gauges kept.
type gaugeSinkCtx struct {
	sinkCtx
	now    *int64
	gauges *testGauges
}

func (c gaugeSinkCtx) CurrentProcessingTime() stream.Timestamp { return stream.Timestamp(*c.now) }
func (c gaugeSinkCtx) MetricGroup() stream.MetricGroup         { return c.gauges }

// TestExactlyOnceWriterPublishesItsTransactions: a transaction is
// published from its first record (when it began, not pre-committed), is
// marked pre-committed by PrepareCommit, and goes once committed; the
// open one goes when the writer closes and aborts it.
func TestExactlyOnceWriterPublishesItsTransactions(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "g", 1)
	sink := mustSink(t, kafka.StringSerializer("g"), kafka.BootstrapServers(c.addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix("gauges"), kafka.WithLogger(testLogger(t)))
	committer, err := sink.CreateCommitter()
	if err != nil {
		t.Fatal(err)
	}
	defer committer.Close()
	now := int64(1_700_000_000_000)
	g := &testGauges{}
	sw, err := sink.CreateWriter(gaugeSinkCtx{sinkCtx{0, 1}, &now, g})
	if err != nil {
		t.Fatal(err)
	}
	w := sw.(*kafka.TxnWriter[string])
	defer w.Close()
	ctx := context.Background()
	if got := g.snapshot(); len(got) != 0 {
		t.Fatalf("gauges before any record: %v, want none", got)
	}
	if err := w.Write(ctx, "a", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	first := map[string]float64{"KafkaSink.transaction.gauges-0-0.openSince": 1_700_000_000_000, "KafkaSink.transaction.gauges-0-0.precommitted": 0}
	if got := g.snapshot(); !maps.Equal(got, first) {
		t.Fatalf("gauges of the open transaction:\n got %v\nwant %v", got, first)
	}
	cs, err := w.PrepareCommit(ctx)
	if err != nil || len(cs) != 1 {
		t.Fatalf("PrepareCommit: %v %v", cs, err)
	}
	first["KafkaSink.transaction.gauges-0-0.precommitted"] = 1
	if got := g.snapshot(); !maps.Equal(got, first) {
		t.Fatalf("gauges of the pre-committed transaction:\n got %v\nwant %v", got, first)
	}
	now += 5000
	if err := w.Write(ctx, "b", stream.NoTimestamp); err != nil {
		t.Fatal(err)
	}
	both := maps.Clone(first)
	both["KafkaSink.transaction.gauges-0-1.openSince"] = 1_700_000_005_000
	both["KafkaSink.transaction.gauges-0-1.precommitted"] = 0
	if got := g.snapshot(); !maps.Equal(got, both) {
		t.Fatalf("gauges of a pre-committed and an open transaction:\n got %v\nwant %v", got, both)
	}
	if err := committer.Commit(ctx, cs); err != nil {
		t.Fatal(err)
	}
	second := map[string]float64{"KafkaSink.transaction.gauges-0-1.openSince": 1_700_000_005_000, "KafkaSink.transaction.gauges-0-1.precommitted": 0}
	if got := g.snapshot(); !maps.Equal(got, second) {
		t.Fatalf("gauges after the first transaction's commit:\n got %v\nwant %v", got, second)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := g.snapshot(); len(got) != 0 {
		t.Fatalf("gauges after Close aborted the open transaction: %v, want none", got)
	}
}
