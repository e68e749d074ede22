package kafka_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/kafka"
	"github.com/sluice/sluice/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

type windowCount struct {
	Key string
	N   int
}

// windowJob counts the records of topic "wm" per 1 s event-time window
// downstream of a Kafka source at parallelism 1, on a manual clock.
func windowJob(t *testing.T, c *cluster, strategy stream.WatermarkStrategy[string]) (clk *clock.Manual, sink *liveSink[windowCount], seen *atomic.Int64, done chan error) {
	clk = clock.NewManual(0)
	env := newEnv(t, 1, stream.WithClock(clk), stream.WithAutoWatermarkInterval(100*time.Millisecond))
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("wm"),
		kafka.PartitionDiscoveryInterval(-1), kafka.WithLogger(testLogger(t)))
	seen = &atomic.Int64{}
	in := stream.Map(stream.FromSource[string, kafka.PartitionSplit](env, src, strategy, "kafka"), func(s string) windowCount {
		seen.Add(1)
		return windowCount{"all", 1}
	})
	counts := stream.Window(stream.KeyBy(in, func(w windowCount) string { return w.Key }), stream.TumblingEventTimeWindows(time.Second)).
		Reduce(func(a, b windowCount) windowCount { return windowCount{a.Key, a.N + b.N} })
	sink = newLiveSink[windowCount]()
	stream.SinkTo(counts, sink)
	done, _ = runJob(t, env)
	return clk, sink, seen, done
}

// fired lists the fired windows as "end:count" (the result's timestamp is
// the window's end - 1).
func fired(s *liveSink[windowCount]) []string {
	var out []string
	for _, r := range s.records() {
		out = append(out, fmt.Sprintf("%d:%d", r.Timestamp+1, r.Value.N))
	}
	return out
}

// advance moves the clock by one watermark period at a time until cond
// holds.
func advance(t *testing.T, what string, clk *clock.Manual, done chan error, notify chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out at clock %d", what, clk.NowMillis())
		}
		select {
		case err := <-done:
			t.Fatalf("waiting for %s: the job ended: %v", what, err)
		default:
		}
		clk.Advance(100)
		select {
		case <-notify:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func wmRecord(p int32, ts int64) *kgo.Record {
	return &kgo.Record{Topic: "wm", Partition: p, Value: []byte(fmt.Sprintf("%d@%d", p, ts)), Timestamp: time.UnixMilli(ts)}
}

// TestWatermarksArePerPartition: the window operator downstream sees the
// minimum of the partitions' watermarks, so a partition behind (or without
// records yet) holds the windows back until it catches up.
func TestWatermarksArePerPartition(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "wm", 2)
	for ts := int64(0); ts < 10000; ts += 1000 {
		c.produce(t, wmRecord(0, ts))
	}
	clk, sink, seen, done := windowJob(t, c, stream.ForMonotonousTimestamps[string]())
	waitFor(t, "partition 0's records", done, nil, func() bool { return seen.Load() == 10 })
	// Partition 1, assigned but empty, holds the watermark at its start:
	// no window may fire however far processing time goes.
	for i := 0; i < 10; i++ {
		clk.Advance(100)
		select {
		case <-sink.notify:
		case <-time.After(5 * time.Millisecond):
		}
	}
	if f := fired(sink); len(f) != 0 {
		t.Fatalf("windows fired while partition 1 had no records: %v", f)
	}
	// Partition 1 reaches 1500: only [0,1000) is complete.
	c.produce(t, wmRecord(1, 200), wmRecord(1, 1500))
	advance(t, "window [0,1000)", clk, done, sink.notify, func() bool { return len(fired(sink)) > 0 })
	if f, want := fired(sink), []string{"1000:2"}; !slices.Equal(f, want) {
		t.Fatalf("fired %v, want %v", f, want)
	}
	// Partition 1 jumps ahead: partition 0 (at 9000) now holds the watermark at 8999.
	c.produce(t, wmRecord(1, 20000))
	advance(t, "window [8000,9000)", clk, done, sink.notify, func() bool { return slices.Contains(fired(sink), "9000:1") })
	want := []string{"1000:2", "2000:2", "3000:1", "4000:1", "5000:1", "6000:1", "7000:1", "8000:1", "9000:1"}
	for i := 0; i < 5; i++ { // later periods fire nothing more
		clk.Advance(100)
		select {
		case <-sink.notify:
		case <-time.After(5 * time.Millisecond):
		}
	}
	if f := fired(sink); !slices.Equal(f, want) {
		t.Fatalf("fired %v\nwant  %v", f, want)
	}
}

// TestIdlePartitionReleasesTheWatermark: with WithIdleness, a partition
// without records stops holding the windows back.
func TestIdlePartitionReleasesTheWatermark(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "wm", 2)
	for ts := int64(0); ts < 5000; ts += 1000 {
		c.produce(t, wmRecord(0, ts))
	}
	clk, sink, _, done := windowJob(t, c, stream.ForMonotonousTimestamps[string]().WithIdleness(500*time.Millisecond))
	advance(t, "window [3000,4000)", clk, done, sink.notify, func() bool { return slices.Contains(fired(sink), "4000:1") })
	if f, want := fired(sink), []string{"1000:1", "2000:1", "3000:1", "4000:1"}; !slices.Equal(f, want) {
		t.Fatalf("fired %v, want %v", f, want)
	}
	if strings.Contains(strings.Join(fired(sink), " "), "5000") {
		t.Fatal("window [4000,5000) fired before its end")
	}
}

// TestReaderWithoutPartitionsDoesNotHoldBackWindows: at parallelism 2 on a
// one-partition topic, one reader subtask gets no partition; it must not
// hold back the windows downstream.
func TestReaderWithoutPartitionsDoesNotHoldBackWindows(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "wm", 1)
	for ts := int64(0); ts < 3000; ts += 500 {
		c.produce(t, wmRecord(0, ts))
	}
	clk := clock.NewManual(0)
	env := newEnv(t, 2, stream.WithClock(clk), stream.WithAutoWatermarkInterval(100*time.Millisecond))
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("wm"),
		kafka.PartitionDiscoveryInterval(time.Hour), kafka.WithLogger(testLogger(t)))
	in := stream.Map(stream.FromSource[string, kafka.PartitionSplit](env, src, stream.ForMonotonousTimestamps[string](), "kafka"),
		func(s string) windowCount { return windowCount{"all", 1} })
	counts := stream.Window(stream.KeyBy(in, func(w windowCount) string { return w.Key }), stream.TumblingEventTimeWindows(time.Second)).
		Reduce(func(a, b windowCount) windowCount { return windowCount{a.Key, a.N + b.N} })
	sink := newLiveSink[windowCount]()
	stream.SinkTo(counts, sink)
	done, _ := runJob(t, env)
	advance(t, "window [1000,2000)", clk, done, sink.notify, func() bool { return slices.Contains(fired(sink), "2000:2") })
	if f, want := fired(sink), []string{"1000:2", "2000:2"}; !slices.Equal(f, want) {
		t.Fatalf("fired %v, want %v", f, want)
	}
}
