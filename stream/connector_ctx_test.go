package stream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

// ctxSink's writer blocks in Write until its context ends, as a producer
// with a full buffer does.
type ctxSink struct {
	blocked chan struct{} // closed when Write blocks
	ended   chan error    // what the blocked Write saw
}

func (s *ctxSink) CreateWriter(stream.SinkContext) (stream.SinkWriter[int64], error) { return s, nil }
func (s *ctxSink) Write(ctx context.Context, _ int64, _ stream.Timestamp) error {
	select {
	case <-s.blocked:
		return nil
	default:
	}
	close(s.blocked)
	<-ctx.Done()
	s.ended <- ctx.Err()
	return ctx.Err()
}
func (s *ctxSink) Flush(context.Context, bool) error { return nil }
func (s *ctxSink) Close() error                      { return nil }

// TestSinkWriterGetsTheSubtasksContext: a writer blocked on I/O returns
// when the job is cancelled, through the context its methods get.
func TestSinkWriterGetsTheSubtasksContext(t *testing.T) {
	env := newEnv(1, stream.Streaming)
	sink := &ctxSink{blocked: make(chan struct{}), ended: make(chan error, 1)}
	stream.SinkTo(stream.DataGen(env, -1, 0, func(i int64) int64 { return i }), sink)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteContext(ctx, t.Name())
		done <- err
	}()
	select {
	case <-sink.blocked:
	case err := <-done:
		t.Fatalf("job ended before the writer blocked: %v", err)
	}
	cancel()
	select {
	case err := <-sink.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the writer's context ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the job did not end the writer's context")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("job ended with %v, want context.Canceled", err)
	}
}

// ctxReaderSource is an unbounded source whose reader records the
// contexts it is given.
type ctxReaderSource struct{ started chan context.Context }

func (s ctxReaderSource) Boundedness() stream.Boundedness { return stream.Unbounded }
func (s ctxReaderSource) CreateEnumerator(ctx stream.SplitEnumeratorContext[namedSplit]) (stream.SplitEnumerator[namedSplit], error) {
	return &onceEnumerator{ctx: ctx, done: true}, nil
}
func (s ctxReaderSource) CreateReader(stream.SourceReaderContext) (stream.SourceReader[int64, namedSplit], error) {
	return &ctxReader{started: s.started}, nil
}

type ctxReader struct {
	started chan context.Context
}

func (r *ctxReader) Start(ctx context.Context) error { r.started <- ctx; return nil }
func (r *ctxReader) PollNext(ctx context.Context, _ stream.ReaderOutput[int64]) (stream.InputStatus, error) {
	if ctx == nil {
		return stream.EndOfInput, errors.New("PollNext without a context")
	}
	return stream.NothingAvailable, nil
}
func (r *ctxReader) Available() <-chan struct{}                { return nil }
func (r *ctxReader) AddSplits([]namedSplit) error              { return nil }
func (r *ctxReader) NotifyNoMoreSplits()                       {}
func (r *ctxReader) SnapshotState(int64) ([]namedSplit, error) { return nil, nil }
func (r *ctxReader) Close() error                              { return nil }

// TestSourceReaderGetsTheSubtasksContext: the context a reader gets at
// Start ends when the job is cancelled, so its background fetchers stop.
func TestSourceReaderGetsTheSubtasksContext(t *testing.T) {
	env := newEnv(1, stream.Streaming)
	src := ctxReaderSource{started: make(chan context.Context, 1)}
	stream.Discard(stream.FromSource[int64, namedSplit](env, src, stream.NoWatermarks[int64](), "ctx source"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := env.ExecuteContext(ctx, t.Name())
		done <- err
	}()
	var readerCtx context.Context
	select {
	case readerCtx = <-src.started:
	case err := <-done:
		t.Fatalf("job ended before the reader started: %v", err)
	}
	if readerCtx.Err() != nil {
		t.Fatalf("the reader's context ended at once: %v", readerCtx.Err())
	}
	cancel()
	select {
	case <-readerCtx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the job did not end the reader's context")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("job ended with %v, want context.Canceled", err)
	}
}
