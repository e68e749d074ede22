package stream_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice/sluice/stream"
)

// subtaskSink records which sink subtask wrote each value.
type subtaskSink[T comparable] struct {
	mu  sync.Mutex
	got map[T]int // value → subtask
}

func newSubtaskSink[T comparable]() *subtaskSink[T] { return &subtaskSink[T]{got: map[T]int{}} }

func (s *subtaskSink[T]) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[T], error) {
	return &subtaskWriter[T]{s: s, subtask: ctx.Subtask()}, nil
}

type subtaskWriter[T comparable] struct {
	s       *subtaskSink[T]
	subtask int
}

func (w *subtaskWriter[T]) Write(_ context.Context, v T, _ stream.Timestamp) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.got[v] = w.subtask
	return nil
}
func (w *subtaskWriter[T]) Flush(context.Context, bool) error { return nil }
func (w *subtaskWriter[T]) Close() error                      { return nil }

// TestDataGenSubtaskOwnsItsIndexes: subtask s of p generates i = s, s+p,
// ..., as DataGen's doc says, whichever subtask asks for a split first;
// FromSlice's subtask s reads the s-th range.
func TestDataGenSubtaskOwnsItsIndexes(t *testing.T) {
	const par, n = 4, 40
	for _, tc := range []struct {
		name  string
		src   func(env *stream.Environment) stream.DataStream[int64]
		owner func(i int64) int
	}{
		{"DataGen", func(env *stream.Environment) stream.DataStream[int64] {
			return stream.DataGen(env, n, 0, func(i int64) int64 { return i })
		}, func(i int64) int { return int(i % par) }},
		{"FromSlice", func(env *stream.Environment) stream.DataStream[int64] {
			data := make([]int64, n)
			for i := range data {
				data[i] = int64(i)
			}
			return stream.FromSlice(env, data)
		}, func(i int64) int { return int(i * par / n) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := 0; round < 20; round++ {
				env := newEnv(par, stream.Streaming)
				sink := newSubtaskSink[int64]()
				stream.SinkTo(tc.src(env), sink) // forward: the sink subtask is the source's
				execute(t, env)
				if len(sink.got) != n {
					t.Fatalf("round %d: %d records, want %d", round, len(sink.got), n)
				}
				for i, s := range sink.got {
					if want := tc.owner(i); s != want {
						t.Fatalf("round %d: record %d came from subtask %d, want %d", round, i, s, want)
					}
				}
			}
		})
	}
}
