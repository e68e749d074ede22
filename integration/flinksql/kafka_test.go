//go:build integration

package flinksql_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// broker is the test's client of the real broker.
type broker struct {
	addr string
	cl   *kgo.Client
	adm  *kadm.Client
}

func newBroker(t *testing.T, addr string) *broker {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{addr: addr, cl: cl, adm: kadm.NewClient(cl)}
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic; with fresh, an existing topic of that name
// (a previous run's, on a broker that outlived it) is deleted first.
func (b *broker) createTopic(t *testing.T, topic string, partitions int32, fresh bool) {
	t.Helper()
	ctx := timeout(t, time.Minute)
	if fresh {
		if _, err := b.adm.DeleteTopics(ctx, topic); err != nil {
			t.Fatalf("deleting topic %s: %v", topic, err)
		}
	}
	// A deleted topic's name is free again once the controller is done with it.
	for {
		resp, err := b.adm.CreateTopic(ctx, partitions, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			return
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) || !fresh || ctx.Err() != nil {
			t.Fatalf("creating topic %s: %v", topic, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// produce writes the values into partition p of topic, in order.
func (b *broker) produce(t *testing.T, topic string, p int32, values ...string) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
	}
	if err := b.cl.ProduceSync(timeout(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s/%d: %v", topic, p, err)
	}
}

// commitZero commits offset 0 of every partition of topic for group, as a
// deployment that already ran would have.
func (b *broker) commitZero(t *testing.T, group, topic string, partitions int32) {
	t.Helper()
	offs := kadm.Offsets{}
	for p := int32(0); p < partitions; p++ {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	resp, err := b.adm.CommitOffsets(timeout(t, time.Minute), group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing offsets of group %s: %v", group, err)
	}
}

// endOffset is the sum of the end offsets of topic's partitions.
func (b *broker) endOffset(ctx context.Context, topic string) (int64, error) {
	l, err := b.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	if err := l.Error(); err != nil {
		return 0, err
	}
	var n int64
	l.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// record is a record of an output topic.
type record struct {
	partition int32
	offset    int64
	key       []byte // nil: none
	value     []byte // nil: a tombstone
}

// readAll reads every committed record of topic (read_committed), up to
// its last stable offsets when called, in partition and offset order.
func (b *broker) readAll(t *testing.T, topic string) []record {
	t.Helper()
	ctx := timeout(t, time.Minute)
	ends, err := b.adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("listing the offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	byPart := map[int32][]record{}
	done := func() bool {
		for p, end := range want {
			rs := byPart[p]
			// The sinks here write without transactions: the last record
			// sits right before the end.
			if len(rs) == 0 || rs[len(rs)-1].offset < end-1 {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			reached := map[int32]int64{}
			for p, rs := range byPart {
				reached[p] = rs[len(rs)-1].offset
			}
			t.Fatalf("reading %s: reached offsets %v (partition: last offset read), want up to the end offsets %v", topic, reached, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("reading %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			byPart[r.Partition] = append(byPart[r.Partition], record{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value})
		})
	}
	var out []record
	for p := int32(0); p < int32(len(ends)); p++ {
		out = append(out, byPart[p]...)
	}
	for p, rs := range byPart {
		if p >= int32(len(ends)) {
			out = append(out, rs...)
		}
	}
	return out
}

// waitSettled polls topic until it has records and its end offsets have
// not moved for idle, the same criterion as the Flink runner's
// stop-when-idle; failed reports a job's early end.
func (b *broker) waitSettled(t *testing.T, topic string, idle, max time.Duration, failed func() error) {
	t.Helper()
	ctx := timeout(t, max)
	last, since := int64(-1), time.Now()
	for {
		if err := failed(); err != nil {
			t.Fatalf("waiting for %s to settle: %v", topic, err)
		}
		n, err := b.endOffset(ctx, topic)
		if err != nil && ctx.Err() == nil {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		switch {
		case n != last:
			last, since = n, time.Now()
		case n > 0 && time.Since(since) >= idle:
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not settle within %v (end offset %d)", topic, max, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitRecords polls topic until its end offsets add up to at least n.
func (b *broker) waitRecords(ctx context.Context, topic string, n int64) error {
	for {
		got, err := b.endOffset(ctx, topic)
		if err == nil && got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s has %d records, want %d: %w (last error: %v)", topic, got, n, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// recordTo is a record of value for partition 0 of topic.
func recordTo(topic, value string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: 0, Value: []byte(value)}
}
