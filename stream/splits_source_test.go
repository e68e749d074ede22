package stream_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/stream"
)

func recs[T any](ts func(T) int64, vs ...T) []stream.Record[T] {
	out := make([]stream.Record[T], len(vs))
	for i, v := range vs {
		out[i] = stream.Record[T]{Value: v, Timestamp: stream.Timestamp(ts(v))}
	}
	return out
}

func evTs(v ev) int64 { return v.Ts }

// TestFromSplitsBounded: every record of every split is read once with its
// timestamp, in order within a split, split i on subtask i mod p.
func TestFromSplitsBounded(t *testing.T) {
	splits := []stream.SplitRecords[ev]{
		{Records: recs(evTs, e("s0", 1, 10), e("s0", 2, 20), e("s0", 3, 30))},
		{Records: recs(evTs, e("s1", 1, 5))},
		{},
		{Records: recs(evTs, e("s3", 1, 7), e("s3", 2, 8))},
	}
	for _, par := range []int{1, 2, 3} {
		env := newEnv(par, stream.Streaming)
		sink := newSubtaskSink[ev]()
		stream.SinkTo(stream.FromSplits(env, splits, stream.NoWatermarks[ev]()), sink)
		execute(t, env)
		for i, sp := range splits {
			for _, r := range sp.Records {
				s, ok := sink.got[r.Value]
				if !ok {
					t.Fatalf("par %d: %v not read", par, r.Value)
				}
				if s != i%par {
					t.Fatalf("par %d: split %d read by subtask %d, want %d", par, i, s, i%par)
				}
			}
		}
		if len(sink.got) != 6 {
			t.Fatalf("par %d: %d records, want 6", par, len(sink.got))
		}
	}
	// One subtask: per split in order, with the records' timestamps.
	env := newEnv(1, stream.Streaming)
	all := stream.Collect(stream.FromSplits(env, splits, stream.NoWatermarks[ev]()))
	execute(t, env)
	for _, key := range []string{"s0", "s1", "s3"} {
		var got, want []string
		for _, r := range all.Records() {
			if r.Value.Key == key {
				got = append(got, rec(r))
			}
		}
		for _, sp := range splits {
			for _, r := range sp.Records {
				if r.Value.Key == key {
					want = append(want, rec(r))
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("split %s read as %v, want %v", key, got, want)
		}
	}
}

// TestFromSplitsIdleSplit: an open split that has no more records holds the
// watermark back until WithIdleness marks it idle. Records are read as the
// manual clock reaches their timestamps, so the busy split keeps producing
// while the quiet one goes idle.
func TestFromSplitsIdleSplit(t *testing.T) {
	var busy []ev
	for ts := int64(0); ts < 3000; ts += 100 {
		busy = append(busy, e("busy", 1, ts))
	}
	splits := []stream.SplitRecords[ev]{
		{Records: recs(evTs, busy...), Open: true},
		{Records: recs(evTs, e("quiet", 1, 0)), Open: true},
	}
	clk := clock.NewManual(0)
	env := newEnv(2, stream.Streaming, stream.WithClock(clk), stream.WithAutoWatermarkInterval(100*time.Millisecond))
	strategy := stream.ForMonotonousTimestamps[ev]().WithIdleness(500 * time.Millisecond)
	src := stream.FromSplits(env, splits, strategy).SetParallelism(1)
	keyed := stream.KeyBy(src, func(v ev) string { return v.Key })
	sink := newLiveSink[sumOut]()
	stream.SinkTo(asSum(stream.Window(keyed, stream.TumblingEventTimeWindows(time.Second)).Reduce(sumByKey)), sink)

	stepUntilFirstWindow(t, env, clk, sink)
}
