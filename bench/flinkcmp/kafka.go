package flinkcmp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
)

// Partitions of the Kafka workloads' topics: two per subtask at
// parallelism 2.
const Partitions = 4

// ErrKafka reports a failure to prepare or read the benchmark's topics.
var ErrKafka = errors.New("flinkcmp: kafka")

func newAdmin(bootstrap string) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrKafka, err)
	}
	return kadm.NewClient(cl), cl, nil
}

// CreateTopics creates topics with Partitions partitions each, kept
// forever: the bids' event times lie in 2026-01-01, and the brokers'
// default retention (7 days by record timestamp) would delete them.
func CreateTopics(ctx context.Context, bootstrap string, topics ...string) error {
	adm, cl, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	forever := "-1"
	res, err := adm.CreateTopics(ctx, Partitions, 1, map[string]*string{"retention.ms": &forever}, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("%w: creating %v: %v", ErrKafka, topics, err)
	}
	return nil
}

// DeleteTopics deletes topics.
func DeleteTopics(ctx context.Context, bootstrap string, topics ...string) error {
	adm, cl, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := adm.DeleteTopics(ctx, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("%w: deleting %v: %v", ErrKafka, topics, err)
	}
	return nil
}

// WriteBids creates topic and writes bids [0, n) of g to it in index order:
// key the auction (so an auction's bids share a partition, in index
// order), value nexmark.AppendBid, timestamp the bid's event time.
func WriteBids(ctx context.Context, bootstrap, topic string, g nexmark.Generator, n int64) error {
	if err := CreateTopics(ctx, bootstrap, topic); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(20*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafka, err)
	}
	defer cl.Close()
	var failed error
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed == nil {
			failed = err
		}
	}
	for i := int64(0); i < n; i++ {
		b := g.Bid(i)
		cl.Produce(ctx, &kgo.Record{
			Key:       nexmark.AppendKey(make([]byte, 0, 8), b.Auction),
			Value:     nexmark.AppendBid(make([]byte, 0, 96), b),
			Timestamp: time.UnixMilli(b.DateTime),
		}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafka, topic, err)
	}
	// Flush waited for every promise, so failed is settled.
	if failed != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafka, topic, failed)
	}
	return nil
}

// ReadOutputs reads topic with read_committed from the start and digests
// every output record of the Kafka pipeline (nexmark.KafkaHash). It reads
// until it has at least want records and then for quiet more without a
// record (so that duplicates show), or until deadline passes without
// reaching want.
func ReadOutputs(ctx context.Context, bootstrap, topic string, want int64, quiet, deadline time.Duration) (nexmark.Checksum, error) {
	var sum nexmark.Checksum
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return sum, fmt.Errorf("%w: %v", ErrKafka, err)
	}
	defer cl.Close()
	end := time.Now().Add(deadline)
	for {
		wait := time.Until(end)
		if sum.Count >= want {
			wait = quiet
		}
		if wait <= 0 {
			return sum, nil
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		got := 0
		var bad error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && bad == nil {
				bad = fmt.Errorf("%w: reading %s[%d]: %v", ErrKafka, t, p, err)
			}
		})
		if bad != nil {
			return sum, bad
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			a, c, m, err := nexmark.DecodeOutput(r.Value)
			if err != nil {
				if bad == nil {
					bad = fmt.Errorf("%s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
				}
				return
			}
			sum.Add(nexmark.KafkaHash(a, c, m))
		})
		if bad != nil {
			return sum, bad
		}
		if got == 0 && (sum.Count >= want || time.Now().After(end)) {
			return sum, nil
		}
	}
}
