package kafkabench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

const partitions = 3

// prepare creates a fresh input topic holding n records of 100 bytes and
// an output topic; it returns their names.
func prepare(b *testing.B, addr string, n int) (in, out string) {
	b.Helper()
	ctx := context.Background()
	suffix := fmt.Sprintf("%s-%d", b.Name(), time.Now().UnixNano())
	in, out = "in-"+suffix, "out-"+suffix
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, in, out); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: in, Partition: int32(i % partitions), Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return in, out
}

func report(b *testing.B, n int, start time.Time) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkRawFranzGo is the ceiling: one franz-go client consuming the
// input topic and producing every record to the output topic.
func BenchmarkRawFranzGo(b *testing.B) {
	addr := kafkabroker.Shared(b).Addr
	in, out := prepare(b, addr, b.N)
	ctx := context.Background()
	offsets := map[string]map[int32]kgo.Offset{in: {}}
	for p := int32(0); p < partitions; p++ {
		offsets[in][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(offsets), kgo.ProducerLinger(5*time.Millisecond),
		kgo.DefaultProduceTopic(out))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.ResetTimer()
	start := time.Now()
	for got := 0; got < b.N; {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got++
			cl.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	report(b, b.N, start)
}

func sluicePipeline(b *testing.B, guarantee kafka.DeliveryGuarantee, opts ...stream.Option) {
	addr := kafkabroker.Shared(b).Addr
	in, out := prepare(b, addr, b.N)
	env := stream.NewEnvironment(append([]stream.Option{stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	src, err := kafka.NewSource(kafka.ValueOnly(func(v []byte) ([]byte, error) { return v, nil }),
		kafka.BootstrapServers(addr), kafka.Topics(in), kafka.Bounded(kafka.Latest()))
	if err != nil {
		b.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.ValueSerializer(out, func(v []byte) ([]byte, error) { return v, nil }),
		kafka.BootstrapServers(addr), kafka.Guarantee(guarantee), kafka.TransactionalIDPrefix(out), kafka.Checkpointing(env.Configuration()))
	if err != nil {
		b.Fatal(err)
	}
	records := stream.FromSource[[]byte, kafka.PartitionSplit](env, src, stream.NoWatermarks[[]byte](), "in")
	stream.SinkToCommitting(records, sink)
	b.ResetTimer()
	start := time.Now()
	res, err := env.Execute(b.Name())
	if err != nil {
		b.Fatal(err)
	}
	report(b, b.N, start)
	if res.Checkpoints > 0 {
		b.ReportMetric(float64(res.Checkpoints), "checkpoints")
	}
}

// BenchmarkSluiceAtLeastOnce: Kafka source → Kafka sink, AT_LEAST_ONCE, at
// parallelism 2 (target: at least 0.8 of BenchmarkRawFranzGo).
func BenchmarkSluiceAtLeastOnce(b *testing.B) {
	sluicePipeline(b, kafka.AtLeastOnce, stream.WithCheckpointing(time.Second, b.TempDir()))
}

// BenchmarkSluiceExactlyOnce: the same with EXACTLY_ONCE and 1 s checkpoints.
func BenchmarkSluiceExactlyOnce(b *testing.B) {
	sluicePipeline(b, kafka.ExactlyOnce, stream.WithCheckpointing(time.Second, b.TempDir()))
}
