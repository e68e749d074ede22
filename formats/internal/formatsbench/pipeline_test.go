package formatsbench_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/integration/kafkabroker"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// The pipeline benchmark needs a real broker (integration/kafkabroker,
// started on first use); the decode and encode benchmarks do not.
func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

const pipelinePartitions = 3

// BenchmarkKafkaToKafka is a Kafka → Kafka job at parallelism 2,
// AT_LEAST_ONCE with 1 s checkpoints, over b.N records of the 20-field
// record in Avro (the registry's wire format): raw-bytes passes each
// record's bytes through, avro decodes each into a Go struct and encodes it
// again (the registry in process, ids cached after the first record).
func BenchmarkKafkaToKafka(b *testing.B) {
	addr := kafkabroker.Shared(b).Addr
	reg := newRegistry(b)
	f, err := avro.New[Record20](reg, avroSchema(), avro.Options{Subject: "record20-value"})
	if err != nil {
		b.Fatal(err)
	}
	value, err := f.Serialize("in", rec)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw-bytes", func(b *testing.B) {
		pipeline(b, addr, value, kafka.ValueOnly(func(v []byte) ([]byte, error) { return v, nil }),
			func(out string) kafka.Serializer[[]byte] {
				return kafka.ValueSerializer(out, func(v []byte) ([]byte, error) { return v, nil })
			})
	})
	b.Run("avro", func(b *testing.B) {
		pipeline(b, addr, value, kafka.FormatValues(f), func(out string) kafka.Serializer[Record20] { return kafka.FormatSerializer(out, f) })
	})
}

// processCPU is this process's user and system CPU time.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

func pipeline[T any](b *testing.B, addr string, value []byte, de kafka.Deserializer[T], ser func(out string) kafka.Serializer[T]) {
	ctx := context.Background()
	suffix := fmt.Sprintf("%d-%d", b.N, time.Now().UnixNano())
	in, out := "in-"+suffix, "out-"+suffix
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, pipelinePartitions, 1, nil, in, out); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: in, Partition: int32(i % pipelinePartitions), Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	env := stream.NewEnvironment(stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler)),
		stream.WithCheckpointing(time.Second, b.TempDir()))
	src, err := kafka.NewSource(de, kafka.BootstrapServers(addr), kafka.Topics(in), kafka.Bounded(kafka.Latest()))
	if err != nil {
		b.Fatal(err)
	}
	sink, err := kafka.NewSink(ser(out), kafka.BootstrapServers(addr), kafka.Guarantee(kafka.AtLeastOnce), kafka.Checkpointing(env.Configuration()))
	if err != nil {
		b.Fatal(err)
	}
	stream.SinkToCommitting(stream.FromSource[T, kafka.PartitionSplit](env, src, stream.NoWatermarks[T](), "in"), sink)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0, ok := processCPU()
	if _, err := env.Execute(b.Name()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	if cpu1, ok2 := processCPU(); ok && ok2 {
		// This process's CPU (the job's every thread; the broker is
		// another process) per record: less inflated by other processes
		// than ns/op.
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.StopTimer()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, out)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	if n != int64(b.N) {
		b.Fatalf("%d records in %s, want %d", n, out, b.N)
	}
}
