package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/stream"
)

// blockingSink blocks its writer on the first record until release closes.
type blockingSink struct {
	release chan struct{}
	got     atomic.Int64
}

type blockingWriter struct{ s *blockingSink }

func (s *blockingSink) CreateWriter(stream.SinkContext) (stream.SinkWriter[int64], error) {
	return blockingWriter{s}, nil
}
func (w blockingWriter) Write(context.Context, int64, stream.Timestamp) error {
	<-w.s.release
	w.s.got.Add(1)
	return nil
}
func (w blockingWriter) Flush(context.Context, bool) error { return nil }
func (w blockingWriter) Close() error                      { return nil }

func TestSlowSinkBackpressuresSourceAndMemoryStaysBounded(t *testing.T) {
	const (
		batch   = 16
		credits = 4 // the local exchange's default credits per channel
		total   = 100000
	)
	var generated atomic.Int64
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithBatchSize(batch), stream.WithBufferTimeout(time.Hour),
		stream.WithLogger(slog.New(slog.DiscardHandler)))
	src := stream.DataGen(env, total, 0, func(i int64) int64 { generated.Add(1); return i })
	sink := &blockingSink{release: make(chan struct{})}
	stream.SinkTo(src.Rebalance(), sink).DisableChaining()

	done := make(chan error, 1)
	go func() { _, err := env.Execute("backpressure"); done <- err }()

	// Wait until the source stops making progress: it must be blocked on
	// credits, holding at most the buffers in flight.
	// No event says "blocked", so settled means: no new record for 100 ms
	// (an unthrottled source makes thousands in that time).
	bound := int64(credits*batch + batch + 1)
	prev, since := int64(-1), time.Now()
	testwait.EventuallyNil(t, 10*time.Second, "the source to settle", func() error {
		if g := generated.Load(); g != prev {
			prev, since = g, time.Now()
		}
		if time.Since(since) < 100*time.Millisecond {
			return fmt.Errorf("source never settled; generated %d", prev)
		}
		return nil
	})
	if g := generated.Load(); g > bound || g == 0 {
		t.Fatalf("source generated %d records while the sink was blocked; want 1..%d", g, bound)
	}
	close(sink.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sink.got.Load() != total {
		t.Fatalf("sink got %d records, want %d", sink.got.Load(), total)
	}
}

func TestMetricsCountRecordsAcrossAnExchange(t *testing.T) {
	env := stream.NewEnvironment(stream.WithParallelism(2), stream.WithLogger(slog.New(slog.DiscardHandler)))
	src := stream.DataGen(env, 10000, 0, func(i int64) int64 { return i })
	stream.Discard(stream.Map(src.Rebalance(), func(v int64) int64 { return v }))
	res, err := env.Execute("metrics")
	if err != nil {
		t.Fatal(err)
	}
	var in, out int64
	for _, s := range res.Subtasks {
		in += s.RecordsIn
		out += s.RecordsOut
	}
	if in != 10000 || out != 10000 {
		t.Fatalf("records in %d, out %d; want 10000 each", in, out)
	}
}
