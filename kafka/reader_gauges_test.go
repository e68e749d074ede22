package kafka_test

import (
	"maps"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/kafka"
)

// TestReaderPublishesPositionEndAndLag: the reader publishes, per
// partition it reads, its position (the next offset), the partition's end
// as fetched and the lag between them; a finished split's gauges go.
func TestReaderPublishesPositionEndAndLag(t *testing.T) {
	c := newCluster(t)
	c.createTopic(t, "lag", 3)
	c.fill(t, "lag", 3, 20)
	src := mustSource(t, kafka.StringValues(), kafka.BootstrapServers(c.addrs...), kafka.Topics("lag"),
		kafka.MaxPollRecords(5), kafka.WithLogger(testLogger(t)))
	rc := &readerCtx{parallelism: 1, clk: clock.System{}}
	r := newReader(t, src, rc)
	// Partition 0 unbounded from 0; partition 1 unbounded from 12;
	// partition 2 bounded, offsets 0 to 10.
	if err := r.AddSplits([]kafka.PartitionSplit{split("lag", 0, 0, kafka.NoStoppingOffset), split("lag", 1, 12, kafka.NoStoppingOffset), split("lag", 2, 0, 10)}); err != nil {
		t.Fatal(err)
	}
	g := rc.MetricGroup().(*testGauges)
	out := &recordingOutput{}
	// Part-way: 5 records of a poll; whatever was read, the lag is the end
	// (20) less the position.
	pollUntil(t, r, out, func() bool { return len(out.recs) >= 5 })
	snap := g.snapshot()
	behind := 0
	for _, p := range []string{"0", "1"} {
		pre := "KafkaSourceReader.topic.lag.partition." + p + "."
		cur, ok := snap[pre+"currentOffset"]
		if !ok {
			t.Errorf("partition %s part-way: no currentOffset among %v", p, snap)
			continue
		}
		if end, lag := snap[pre+"endOffset"], snap[pre+"lag"]; end != 20 || lag != end-cur {
			t.Errorf("partition %s part-way: currentOffset %v, endOffset %v, lag %v; want endOffset 20 and lag endOffset-currentOffset", p, cur, end, lag)
		} else if lag > 0 {
			behind++
		}
	}
	if behind == 0 {
		t.Errorf("after %d of 38 records no partition lags: %v", len(out.recs), snap)
	}
	// Everything read: 20 of partition 0, 8 of partition 1, 10 of the
	// bounded partition 2, whose gauges are then gone.
	pollUntil(t, r, out, func() bool { return len(out.recs) == 20+8+10 })
	want := map[string]float64{
		"KafkaSourceReader.topic.lag.partition.0.currentOffset": 20,
		"KafkaSourceReader.topic.lag.partition.0.endOffset":     20,
		"KafkaSourceReader.topic.lag.partition.0.lag":           0,
		"KafkaSourceReader.topic.lag.partition.1.currentOffset": 20,
		"KafkaSourceReader.topic.lag.partition.1.endOffset":     20,
		"KafkaSourceReader.topic.lag.partition.1.lag":           0,
	}
	if got := g.snapshot(); !maps.Equal(got, want) {
		t.Errorf("gauges once everything is read:\n got %v\nwant %v", got, want)
	}
	// New records raise the end, and the lag, once fetched.
	c.fill(t, "lag", 1, 4) // partition 0: offsets 20-23
	pollUntil(t, r, out, func() bool { return len(out.recs) == 20+8+10+4 })
	if got := g.snapshot()["KafkaSourceReader.topic.lag.partition.0.currentOffset"]; got != 24 {
		t.Errorf("partition 0's position after 4 more records: %v, want 24", got)
	}
	if got := g.snapshot()["KafkaSourceReader.topic.lag.partition.0.endOffset"]; got != 24 {
		t.Errorf("partition 0's end after 4 more records: %v, want 24", got)
	}
}
