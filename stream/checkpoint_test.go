package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

// txnSink is a two-phase-commit sink whose committer records, per
// committable, what it committed: a stand-in for a transactional system
// (the Kafka sink is tested against real brokers elsewhere).
type txnSink struct {
	mu        sync.Mutex
	committed map[string][]countEvent // committable id → records
	seq       atomic.Int64
}

type txn struct {
	ID      string
	Records []countEvent
}

type txnWriter struct {
	s   *txnSink
	sub int
	buf []countEvent
}

func (s *txnSink) CreateWriter(ctx stream.SinkContext) (stream.SinkWriter[countEvent], error) {
	return &txnWriter{s: s, sub: ctx.Subtask()}, nil
}
func (s *txnSink) CreateCommitter() (stream.Committer[txn], error) { return txnCommitter{s}, nil }

func (w *txnWriter) Write(_ context.Context, v countEvent, _ stream.Timestamp) error {
	w.buf = append(w.buf, v)
	return nil
}
func (w *txnWriter) Flush(context.Context, bool) error { return nil }
func (w *txnWriter) Close() error                      { return nil }
func (w *txnWriter) PrepareCommit(context.Context) ([]txn, error) {
	t := txn{ID: fmt.Sprintf("%d-%d", w.sub, w.s.seq.Add(1)), Records: w.buf}
	w.buf = nil
	return []txn{t}, nil
}

type txnCommitter struct{ s *txnSink }

func (c txnCommitter) Commit(_ context.Context, ts []txn) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, t := range ts {
		c.s.committed[t.ID] = t.Records // idempotent by transaction
	}
	return nil
}
func (c txnCommitter) Close() error { return nil }

func (s *txnSink) records() []countEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []countEvent
	for _, rs := range s.committed {
		out = append(out, rs...)
	}
	return out
}

type countEvent struct {
	Key   int64
	Count int64
	Sum   int64
}

// TestExactlyOnceStateAndOutputAcrossFailures fails the job several times
// mid-stream; every key's running count must come out exactly once per
// record, in sequence, as in a failure-free run.
func TestExactlyOnceStateAndOutputAcrossFailures(t *testing.T) {
	const n, keys = 30000, 7
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			var failures atomic.Int32
			var seen atomic.Int64
			strategy := stream.FixedDelayRestart(10, 0)
			env := stream.NewEnvironment(stream.WithParallelism(par), stream.WithLogger(slog.New(slog.DiscardHandler)),
				stream.WithCheckpointing(10*time.Millisecond, ""), stream.WithRestartStrategy(strategy))
			src := stream.DataGen(env, n, 60000, func(i int64) int64 { return i }).UID("numbers")
			count := stream.NewValueDescriptor[countEvent]("count")
			counted := stream.KeyedProcess(stream.KeyBy(src, func(i int64) int64 { return i % keys }),
				stream.KeyedProcessFuncs[int64, int64, countEvent]{Element: func(ctx *stream.KeyedContext[int64], v int64, out stream.Collector[countEvent]) error {
					st := stream.Value(ctx, count)
					c, err := st.Value()
					if err != nil {
						return err
					}
					c = countEvent{Key: ctx.CurrentKey(), Count: c.Count + 1, Sum: c.Sum + v}
					out.Collect(c)
					return st.Update(c)
				}}).UID("counter")
			// Fail three times: after a third of the input, then after a fifth
			// and a tenth more of it has been seen by the running attempt.
			failing := stream.Map(counted, func(c countEvent) countEvent {
				s := seen.Add(1)
				f := failures.Load()
				if (f == 0 && s > n/3) || (f == 1 && s > n/5) || (f == 2 && s > n/10) {
					if failures.CompareAndSwap(f, f+1) {
						seen.Store(0)
						panic(fmt.Sprintf("injected failure %d", f+1))
					}
				}
				return c
			})
			sink := &txnSink{committed: map[string][]countEvent{}}
			stream.SinkToCommitting(failing, sink)
			res, err := env.Execute("exactly-once")
			if err != nil {
				t.Fatal(err)
			}
			// Two parallel subtasks may both fail in one attempt, so restarts
			// may be fewer than the failures injected.
			if failures.Load() != 3 || res.Restarts < 1 || res.Restarts > 3 {
				t.Fatalf("%d failures injected, %d restarts; want 3 failures", failures.Load(), res.Restarts)
			}
			got := sink.records()
			byKey := map[int64][]countEvent{}
			for _, c := range got {
				byKey[c.Key] = append(byKey[c.Key], c)
			}
			if len(got) != n {
				t.Errorf("committed %d records, want exactly %d (checkpoints completed: %d)", len(got), n, res.Checkpoints)
			}
			for k := int64(0); k < keys; k++ {
				cs := byKey[k]
				sort.Slice(cs, func(i, j int) bool { return cs[i].Count < cs[j].Count })
				want := int64((n - int(k) + keys - 1) / keys)
				if int64(len(cs)) != want {
					t.Errorf("key %d: %d records, want %d", k, len(cs), want)
					continue
				}
				// Counts run 1..m exactly once; the running sums depend on the
				// interleaving of source subtasks, the final one does not.
				var sum int64
				for i, c := range cs {
					sum += k + int64(i)*keys
					if c.Count != int64(i+1) {
						t.Fatalf("key %d record %d: %+v, want count %d", k, i, c, i+1)
					}
					if par == 1 && c.Sum != sum {
						t.Fatalf("key %d record %d: %+v, want sum %d", k, i, c, sum)
					}
				}
				if last := cs[len(cs)-1]; last.Sum != sum {
					t.Errorf("key %d: final sum %d, want %d", k, last.Sum, sum)
				}
			}
		})
	}
}
