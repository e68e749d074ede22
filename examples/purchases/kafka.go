package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
)

// Topic names of the Kafka pipeline.
const (
	PurchasesTopic = "purchases"
	TotalsTopic    = "customer-totals"
	LateTopic      = "late-purchases"
)

// BuildKafka is the pipeline of the Flink–Kafka guide: purchases from a
// topic, per-customer one-minute totals to a topic with exactly-once
// delivery, late purchases to a topic of their own. seen, if not nil, is
// called for each purchase read.
func BuildKafka(env *stream.Environment, bootstrap []string, bounded bool, seen func()) error {
	srcOpts := []kafka.SourceOpt{kafka.BootstrapServers(bootstrap...), kafka.Topics(PurchasesTopic), kafka.StartingOffsets(kafka.Earliest())}
	if bounded {
		srcOpts = append(srcOpts, kafka.Bounded(kafka.Latest()))
	}
	src, err := kafka.NewSource(kafka.JSONValues[Purchase](), srcOpts...)
	if err != nil {
		return err
	}
	purchases := stream.FromSource[Purchase, kafka.PartitionSplit](env, src, Strategy(), "Purchases from Kafka").UID("kafka-purchases")
	if seen != nil {
		purchases = stream.Map(purchases, func(p Purchase) Purchase { seen(); return p }).Name("Count")
	}
	totals := Build(purchases)
	sinkOpts := func(topic string) []kafka.SinkOpt {
		return []kafka.SinkOpt{kafka.BootstrapServers(bootstrap...), kafka.Guarantee(kafka.ExactlyOnce),
			kafka.TransactionalIDPrefix("purchases-" + topic), kafka.Checkpointing(env.Configuration())}
	}
	totalsSink, err := kafka.NewSink(kafka.JSONSerializer[Total](TotalsTopic), sinkOpts(TotalsTopic)...)
	if err != nil {
		return err
	}
	lateSink, err := kafka.NewSink(kafka.JSONSerializer[Purchase](LateTopic), sinkOpts(LateTopic)...)
	if err != nil {
		return err
	}
	stream.SinkToCommitting(totals, totalsSink).UID("kafka-totals")
	stream.SinkToCommitting(stream.SideOutput(totals, Late), lateSink).UID("kafka-late")
	return nil
}

// runWithKafka runs the pipeline with 1 s exactly-once checkpoints on an
// unbounded Kafka source (an embedded broker when bootstrap is empty)
// while it writes the generated purchases to the topic; once the job has
// read them all it stops the job with --drain semantics (every window
// fires, a final savepoint is taken) and prints what a read_committed
// consumer finds in the output topics.
func runWithKafka(bootstrap string, n int64, rate float64, savepoints string, opts []stream.Option) error {
	ctx := context.Background()
	addrs := []string{bootstrap}
	if bootstrap == "" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return fmt.Errorf("starting the embedded Kafka broker: %w", err)
		}
		defer c.Close()
		addrs = c.ListenAddrs()
		fmt.Fprintf(os.Stderr, "embedded Kafka broker on %v\n", addrs)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, PurchasesTopic, TotalsTopic, LateTopic); err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	env := stream.NewEnvironment(append(opts, stream.WithCheckpointing(time.Second, ""),
		stream.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))...)
	var seen atomic.Int64
	allSeen := make(chan struct{})
	count := func() {
		if seen.Add(1) == n {
			close(allSeen)
		}
	}
	if err := BuildKafka(env, addrs, false, count); err != nil {
		return err
	}
	job, err := env.ExecuteAsync(ctx, "Purchase totals from Kafka")
	if err != nil {
		return err
	}
	if err := producePurchases(ctx, cl, n, rate); err != nil {
		job.Cancel()
		return err
	}
	select {
	case <-allSeen:
	case <-time.After(time.Minute):
		job.Cancel()
		return fmt.Errorf("the job read only %d of %d purchases in a minute", seen.Load(), n)
	}
	sp, err := job.StopWithSavepoint(savepoints, true)
	if err != nil {
		return fmt.Errorf("stopping the job: %w", err)
	}
	fmt.Fprintf(os.Stderr, "job stopped with a drained savepoint at %s\n", sp)
	res, err := job.Wait()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "read %d purchases; job stopped after %v with %d checkpoints\n", seen.Load(), res.Duration.Round(time.Millisecond), res.Checkpoints)
	totals, late, err := readCommitted(ctx, addrs)
	if err != nil {
		return err
	}
	for _, t := range totals {
		fmt.Println(t)
	}
	for _, p := range late {
		fmt.Printf("LATE %s %d.%02d at %s\n", p.Customer, p.AmountCents/100, p.AmountCents%100, time.UnixMilli(p.Time).UTC().Format("15:04:05.000"))
	}
	fmt.Fprintf(os.Stderr, "%d window totals and %d late purchases committed to %s and %s\n", len(totals), len(late), TotalsTopic, LateTopic)
	return nil
}

// producePurchases writes n generated purchases, keyed by customer.
func producePurchases(ctx context.Context, cl *kgo.Client, n int64, rate float64) error {
	var produceErr atomic.Pointer[error]
	start := time.Now()
	for i := int64(0); i < n; i++ {
		p := Generate(i)
		v, err := json.Marshal(p)
		if err != nil {
			return err
		}
		cl.Produce(ctx, &kgo.Record{Topic: PurchasesTopic, Key: []byte(p.Customer), Value: v, Timestamp: time.UnixMilli(p.Time)}, func(_ *kgo.Record, err error) {
			if err != nil {
				produceErr.CompareAndSwap(nil, &err)
			}
		})
		if rate > 0 && i%100 == 99 {
			if ahead := time.Duration(float64(i+1)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead) // pacing the demo producer
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := produceErr.Load(); e != nil {
		return fmt.Errorf("writing purchases to %s: %w", PurchasesTopic, *e)
	}
	return nil
}

// readCommitted reads the output topics with read_committed: the totals
// in customer and window order, and the late purchases.
func readCommitted(ctx context.Context, addrs []string) ([]Total, []Purchase, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(TotalsTopic, LateTopic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, TotalsTopic, LateTopic)
	if err != nil {
		return nil, nil, err
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	var totals []Total
	var late []Purchase
	for got := int64(0); got < want; {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(fctx)
		timedOut := fctx.Err() != nil
		cancel()
		if timedOut {
			break // what remains are transaction markers
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = r.Offset + 1
			switch r.Topic {
			case TotalsTopic:
				var t Total
				if json.Unmarshal(r.Value, &t) == nil {
					totals = append(totals, t)
				}
			case LateTopic:
				var p Purchase
				if json.Unmarshal(r.Value, &p) == nil {
					late = append(late, p)
				}
			}
		})
		if len(totals)+len(late) >= int(want) {
			break
		}
	}
	sort.Slice(totals, func(i, j int) bool {
		if totals[i].Customer != totals[j].Customer {
			return totals[i].Customer < totals[j].Customer
		}
		return totals[i].WindowStart.Before(totals[j].WindowStart)
	})
	return totals, late, nil
}
