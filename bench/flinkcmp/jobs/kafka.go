package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// auctionTotals is the Kafka pipeline's keyed state and output: an
// auction's bid count and highest price so far.
type auctionTotals struct{ Auction, Count, MaxPrice int64 }

// kafkaPipeline: bids from the input topic (bounded at its end offsets),
// keyed by auction, counted in a value state, every update written to the
// output topic EXACTLY_ONCE. The driver verifies the output topic with a
// read_committed consumer, so no digest of it is kept here.
func kafkaPipeline(env *stream.Environment, cfg Config, sp *span) (*digest, error) {
	decode := func(v []byte) (nexmark.Bid, error) {
		sp.begin()
		return nexmark.DecodeBid(v)
	}
	src, err := kafka.NewSource(kafka.ValueOnly(decode),
		kafka.BootstrapServers(cfg.Bootstrap), kafka.Topics(cfg.InTopic), kafka.Bounded(kafka.Latest()),
		kafka.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	out := cfg.OutTopic
	ser := kafka.SerializerFunc[auctionTotals](func(t auctionTotals, _ stream.Timestamp) (*kgo.Record, error) {
		return &kgo.Record{
			Topic: out,
			Key:   nexmark.AppendKey(make([]byte, 0, 8), t.Auction),
			Value: nexmark.AppendOutput(make([]byte, 0, 24), t.Auction, t.Count, t.MaxPrice),
		}, nil
	})
	sink, err := kafka.NewSink(ser, kafka.BootstrapServers(cfg.Bootstrap), kafka.Guarantee(kafka.ExactlyOnce),
		kafka.TransactionalIDPrefix(cfg.TxnPrefix), kafka.Checkpointing(env.Configuration()), kafka.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	bids := stream.FromSource[nexmark.Bid, kafka.PartitionSplit](env, src, stream.NoWatermarks[nexmark.Bid](), "Kafka Source")
	totals := stream.NewValueDescriptor[auctionTotals]("totals")
	counted := stream.KeyedProcess(stream.KeyBy(bids, func(b nexmark.Bid) int64 { return b.Auction }),
		stream.KeyedProcessFuncs[int64, nexmark.Bid, auctionTotals]{
			Element: func(ctx *stream.KeyedContext[int64], b nexmark.Bid, out stream.Collector[auctionTotals]) error {
				st := stream.Value(ctx, totals)
				t, err := st.Value()
				if err != nil {
					return err
				}
				t.Auction = b.Auction
				t.Count++
				t.MaxPrice = max(t.MaxPrice, b.Price)
				if err := st.Update(t); err != nil {
					return err
				}
				out.Collect(t)
				return nil
			},
		}).Name("Auction totals")
	stream.SinkToCommitting[auctionTotals, kafka.TxnCommittable](counted, &endOfInputSink[auctionTotals, kafka.TxnCommittable]{sink, sp}).Name("Kafka Sink")
	return &digest{}, nil
}

// endOfInputSink wraps a two-phase-commit sink and ends the span when a
// writer sees the end of its input, before the writer flushes.
type endOfInputSink[T, C any] struct {
	stream.TwoPhaseCommitSink[T, C]
	sp *span
}

func (s *endOfInputSink[T, C]) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[T], error) {
	w, err := s.TwoPhaseCommitSink.CreateWriter(ctx)
	if err != nil {
		return nil, err
	}
	cw, ok := w.(stream.CommittingWriter[T, C])
	if !ok {
		return nil, fmt.Errorf("jobs: writer %T of a two-phase-commit sink is not a CommittingWriter", w)
	}
	return &endOfInputWriter[T, C]{cw, s.sp}, nil
}

type endOfInputWriter[T, C any] struct {
	stream.CommittingWriter[T, C]
	sp *span
}

func (w *endOfInputWriter[T, C]) Flush(ctx context.Context, endOfInput bool) error {
	if endOfInput {
		w.sp.finish()
	}
	return w.CommittingWriter.Flush(ctx, endOfInput)
}

// runRaw is the ceiling of the Kafka pipeline: one franz-go client that
// consumes the input topic to its end offsets, keeps the same per-auction
// totals in a Go map, and produces every update to the output topic in
// transactions committed every CheckpointInterval and at the end.
func runRaw(ctx context.Context, cfg Config) (Result, error) {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Bootstrap))
	if err != nil {
		return Result{}, fmt.Errorf("jobs: raw loop: %w", err)
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, cfg.InTopic)
	admCl.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return Result{}, fmt.Errorf("jobs: raw loop: end offsets of %s: %w", cfg.InTopic, err)
	}
	remaining := map[int32]int64{}
	offsets := map[string]map[int32]kgo.Offset{cfg.InTopic: {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
			offsets[cfg.InTopic][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	sp := &span{}
	cpu0 := processCPU()
	start := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Bootstrap), kgo.ConsumePartitions(offsets),
		kgo.TransactionalID(cfg.TxnPrefix+"-raw"), kgo.DefaultProduceTopic(cfg.OutTopic),
		// Uncompressed, as the engines' sinks write by default.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return Result{}, fmt.Errorf("jobs: raw loop: %w", err)
	}
	defer cl.Close()

	var produceErr struct {
		once sync.Once
		err  error
	}
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			produceErr.once.Do(func() { produceErr.err = err })
		}
	}
	commit := func() error {
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if produceErr.err != nil {
			return produceErr.err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err := cl.BeginTransaction(); err != nil {
		return Result{}, fmt.Errorf("jobs: raw loop: %w", err)
	}
	state := map[int64]auctionTotals{}
	var sum nexmark.Checksum
	lastCommit := time.Now()
	var loopErr error
	for len(remaining) > 0 && loopErr == nil {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return Result{}, fmt.Errorf("jobs: raw loop: fetching %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			sp.begin()
			b, err := nexmark.DecodeBid(r.Value)
			if err != nil {
				loopErr = fmt.Errorf("jobs: raw loop: %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
				break
			}
			t := state[b.Auction]
			t.Auction = b.Auction
			t.Count++
			t.MaxPrice = max(t.MaxPrice, b.Price)
			state[b.Auction] = t
			sum.Add(nexmark.KafkaHash(t.Auction, t.Count, t.MaxPrice))
			cl.Produce(ctx, &kgo.Record{
				Key:   nexmark.AppendKey(make([]byte, 0, 8), t.Auction),
				Value: nexmark.AppendOutput(make([]byte, 0, 24), t.Auction, t.Count, t.MaxPrice),
			}, promise)
			if r.Offset+1 >= remaining[r.Partition] {
				delete(remaining, r.Partition)
			}
		}
		if cfg.CheckpointInterval > 0 && time.Since(lastCommit) >= cfg.CheckpointInterval && loopErr == nil {
			if err := commit(); err != nil {
				return Result{}, fmt.Errorf("jobs: raw loop: committing: %w", err)
			}
			if err := cl.BeginTransaction(); err != nil {
				return Result{}, fmt.Errorf("jobs: raw loop: %w", err)
			}
			lastCommit = time.Now()
		}
	}
	if loopErr != nil {
		return Result{}, errors.Join(loopErr, cl.EndTransaction(ctx, kgo.TryAbort))
	}
	sp.finish()
	if err := commit(); err != nil {
		return Result{}, fmt.Errorf("jobs: raw loop: committing: %w", err)
	}
	res := Result{
		Engine: "raw", Workload: Raw, Records: cfg.Records, Outputs: sum.Count, Checksum: sum.SumInt64(),
		JobMillis: time.Since(start).Milliseconds(), JobCPUMillis: (processCPU() - cpu0).Milliseconds(),
	}
	sp.fill(&res)
	return res, nil
}
