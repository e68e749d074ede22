package kafka_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// runEndToEnd is Kafka → keyed stateful process → Kafka with EXACTLY_ONCE
// and 20 ms checkpoints, failing the job `failures` times mid-stream. A
// read_committed consumer must then see exactly one output per input
// record, "<key>:<running count>", and no transaction of the prefix may
// stay open. conn are connection options (security) of the job's clients.
func runEndToEnd(t *testing.T, addrs []string, c *cluster, failures int32, name func(string) string, settled func(topic string), conn ...kafka.Opt) {
	const partitions, perPartition, keys = 3, 400, 5
	in, out, prefix := name("e2e-in"), name("e2e-out"), name("e2e")
	c.createTopic(t, in, partitions)
	c.createTopic(t, out, partitions)
	c.fill(t, in, partitions, perPartition)

	var failed atomic.Int32
	var seen atomic.Int64
	strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: int(failures) + 2})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, 3, stream.WithCheckpointing(20*time.Millisecond, ""), stream.WithRestartStrategy(strategy))
	srcOpts := []kafka.SourceOpt{kafka.BootstrapServers(addrs...), kafka.Topics(in), kafka.Bounded(kafka.Latest())}
	sinkOpts := []kafka.SinkOpt{kafka.BootstrapServers(addrs...), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(prefix), kafka.Checkpointing(env.Configuration())}
	for _, o := range conn {
		srcOpts, sinkOpts = append(srcOpts, o), append(sinkOpts, o)
	}
	src := mustSource(t, kafka.StringValues(), srcOpts...)
	sink := mustSink(t, kafka.StringSerializer(out), sinkOpts...)
	records := stream.FromSource[string, kafka.PartitionSplit](env, src, stream.NoWatermarks[string](), "in").UID("kafka-in")
	count := stream.NewValueDescriptor[int64]("count")
	keyed := stream.KeyBy(records, func(v string) string {
		var p, i int
		fmt.Sscanf(v, "%d:%d", &p, &i)
		return fmt.Sprint((p*perPartition + i) % keys)
	})
	counted := stream.KeyedProcess(keyed, stream.KeyedProcessFuncs[string, string, string]{
		Element: func(ctx *stream.KeyedContext[string], v string, o stream.Collector[string]) error {
			n := seen.Add(1)
			if f := failed.Load(); f < failures && n > int64(partitions*perPartition/(int(failures)+2)) {
				if failed.CompareAndSwap(f, f+1) {
					seen.Store(0)
					return fmt.Errorf("injected failure %d", f+1)
				}
			}
			st := stream.Value(ctx, count)
			c, err := st.Value()
			if err != nil {
				return err
			}
			o.Collect(fmt.Sprintf("%s:%d", ctx.CurrentKey(), c+1))
			return st.Update(c + 1)
		}}).UID("counter")
	stream.SinkToCommitting(counted, sink).UID("kafka-out")
	res, err := env.ExecuteContext(ctxT(t), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	// Two subtasks may fail in the same attempt, so restarts ≤ failures.
	if failed.Load() != failures || res.Restarts < 1 || res.Restarts > int(failures) {
		t.Fatalf("%d failures injected, %d restarts; want %d failures", failed.Load(), res.Restarts, failures)
	}
	var want []string
	for k := 0; k < keys; k++ {
		for i := 1; i <= partitions*perPartition/keys; i++ {
			want = append(want, fmt.Sprintf("%d:%d", k, i))
		}
	}
	slices.Sort(want)
	settled(out)
	if got := sorted(values(c.consume(t, out, true))); !slices.Equal(got, want) {
		t.Fatalf("read_committed sees %d records, want exactly %d (no duplicates, no loss): %s", len(got), len(want), diff(got, want))
	}
	open, err := kafka.ListTransactions(ctxT(t), prefix, append([]kafka.Opt{kafka.BootstrapServers(addrs...)}, conn...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range open {
		if tx.State == "Ongoing" {
			t.Errorf("transaction %+v of the job's prefix is still open", tx)
		}
	}
}

func TestEndToEndExactlyOnceAcrossJobFailures(t *testing.T) {
	c := newCluster(t, kfake.NumBrokers(1))
	runEndToEnd(t, c.addrs, c, 3, func(s string) string { return s }, func(string) {})
}
