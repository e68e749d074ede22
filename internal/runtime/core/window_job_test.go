package core_test

// The demonstration of the core API: a keyed, event-time tumbling-window
// count over Bytes records, built and run without the typed API and
// without generics.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/restart"
	"github.com/sluice/sluice/internal/runtime/state"
)

// event is one input record: its key (the record's bytes) and timestamp.
type event struct {
	key string
	ts  int64
}

const windowSize = 10

// events are 120 records of five keys over event time [0, 60), with two
// records that arrive after the watermark passed their windows.
func events() []event {
	var evs []event
	for i := 0; i < 120; i++ {
		evs = append(evs, event{key: fmt.Sprintf("k%d", i*7%5), ts: int64(i / 2)})
		if i == 80 {
			evs = append(evs, event{"k1", 3}, event{"k2", 25})
		}
	}
	return evs
}

// expected computes the job's results sequentially: the source emits the
// watermark max(ts)-1 after each record, a record is late when its window's
// last timestamp is at or behind the watermark, and each window emits
// "key [start,end) count".
func expected(evs []event) (results, late []string) {
	counts := map[string]int{}
	wm := core.NoWatermark
	for _, e := range evs {
		start := e.ts - e.ts%windowSize
		if start+windowSize-1 <= wm {
			late = append(late, fmt.Sprintf("late %s@%d", e.key, e.ts))
		} else {
			counts[fmt.Sprintf("%s [%d,%d)", e.key, start, start+windowSize)]++
		}
		wm = max(wm, e.ts-1)
	}
	for w, n := range counts {
		results = append(results, fmt.Sprintf("%s %d", w, n))
	}
	slices.Sort(results)
	slices.Sort(late)
	return results, late
}

// pause holds a source at a position: until a checkpoint taken there has
// completed, after which it fails once (fail), or for good (savepoint).
type pause struct {
	at     int
	fail   bool
	failed atomic.Bool
	once   sync.Once
	// reached is closed when the source reaches at.
	reached chan struct{}
	// restoredAt is the position the source last restored.
	restoredAt atomic.Int64
}

var errInjected = errors.New("injected failure")

// eventSource emits events in order as Bytes records, each followed by the
// watermark max(ts)-1. Its position is its operator state.
type eventSource struct {
	evs   []event
	pause *pause // nil: never pauses
	pos   int
	maxTs int64
	// covered is the first checkpoint taken at the pause; ready is set
	// once it completed.
	covered int64
	ready   bool
}

func (s *eventSource) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	for n := 0; n < 8; n++ {
		if p := s.pause; p != nil && s.pos == p.at && !p.failed.Load() {
			p.once.Do(func() { close(p.reached) })
			if s.ready && p.fail && p.failed.CompareAndSwap(false, true) {
				return core.EndOfInput, errInjected
			}
			return core.NothingAvailable, nil
		}
		if s.pos == len(s.evs) {
			return core.EndOfInput, nil
		}
		e := s.evs[s.pos]
		s.pos++
		if err := ctx.Emit(core.BytesRecord([]byte(e.key)), e.ts); err != nil {
			return core.EndOfInput, err
		}
		if e.ts > s.maxTs || s.pos == 1 {
			s.maxTs = e.ts
			if err := ctx.EmitWatermark(s.maxTs - 1); err != nil {
				return core.EndOfInput, err
			}
		}
	}
	return core.MoreAvailable, nil
}

func (s *eventSource) SnapshotState(_ *core.Context, id int64) ([][]byte, bool, error) {
	if p := s.pause; p != nil && s.pos == p.at && s.covered == 0 {
		s.covered = id
	}
	b := binary.AppendVarint(binary.AppendUvarint(nil, uint64(s.pos)), s.maxTs)
	return [][]byte{b}, false, nil
}

func (s *eventSource) RestoreState(_ *core.Context, entries [][]byte) error {
	if len(entries) != 1 {
		return fmt.Errorf("source restores %d entries, want 1", len(entries))
	}
	pos, k := binary.Uvarint(entries[0])
	maxTs, k2 := binary.Varint(entries[0][k:])
	if k <= 0 || k2 <= 0 {
		return fmt.Errorf("corrupt source position %x", entries[0])
	}
	s.pos, s.maxTs = int(pos), maxTs
	if s.pause != nil {
		s.pause.restoredAt.Store(int64(pos))
	}
	return nil
}

func (s *eventSource) NotifyCheckpointComplete(_ *core.Context, id int64) error {
	if s.covered != 0 && id >= s.covered {
		s.ready = true
	}
	return nil
}

// windowCount counts the records of each key per tumbling event-time
// window: a count per (key, window) in value state, an event-time timer at
// the window's end, late records to the side output "late".
type windowCount struct {
	count *core.ValueState
}

func windowNamespace(start int64) string {
	return string(binary.BigEndian.AppendUint64(nil, uint64(start)))
}

func (w *windowCount) Open(ctx *core.Context) error {
	var err error
	w.count, err = ctx.ValueState("count")
	return err
}

func (w *windowCount) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	// The exchange routed the record to the subtask whose keyed state
	// owns its key.
	if kg := keygroup.ForEncodedKey(r.Bytes(), ctx.MaxParallelism()); !ctx.Task().KeyGroups.Contains(kg) {
		return fmt.Errorf("key %q of key group %d reached subtask %d, which owns %s", r.Bytes(), kg, ctx.Subtask(), ctx.Task().KeyGroups)
	}
	start := ts - ts%windowSize
	end := start + windowSize
	if end-1 <= ctx.CurrentWatermark() {
		return ctx.EmitSide("late", core.BytesRecord(fmt.Appendf(nil, "late %s@%d", r.Bytes(), ts)), ts)
	}
	ns := windowNamespace(start)
	b, _, err := w.count.Get(ns)
	if err != nil {
		return err
	}
	n, _ := binary.Uvarint(b)
	if err := w.count.Put(ns, binary.AppendUvarint(nil, n+1)); err != nil {
		return err
	}
	return ctx.RegisterEventTimer(ns, end-1)
}

func (w *windowCount) OnTimer(ctx *core.Context, t core.Timer) error {
	b, ok, err := w.count.Get(t.Namespace)
	if err != nil || !ok {
		return err
	}
	n, _ := binary.Uvarint(b)
	start := int64(binary.BigEndian.Uint64([]byte(t.Namespace)))
	out := fmt.Appendf(nil, "%s [%d,%d) %d", t.Key, start, start+windowSize, n)
	if err := ctx.Emit(core.BytesRecord(out), t.Time); err != nil {
		return err
	}
	return w.count.Delete(t.Namespace)
}

// committed is what the sinks committed, by transaction: committing a
// transaction again (after a restore) changes nothing.
type committed struct {
	mu   sync.Mutex
	txns map[string][]string
	seq  atomic.Int64
}

func newCommitted() *committed { return &committed{txns: map[string][]string{}} }

func (c *committed) commit(txn string, recs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.txns[txn]; !ok {
		c.txns[txn] = recs
	}
}

func (c *committed) records() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []string
	for _, recs := range c.txns {
		all = append(all, recs...)
	}
	slices.Sort(all)
	return all
}

// txnSink is an exactly-once collecting sink: records are pre-committed
// into a transaction per checkpoint (kept in operator state) and committed
// when the checkpoint completes; restored transactions are committed
// again, idempotently.
type txnSink struct {
	out     *committed
	id      int64 // unique per instance, so transactions of attempts differ
	pending []string
	staged  map[int64][]string
}

func newTxnSink(out *committed) core.Operator {
	return &txnSink{out: out, id: out.seq.Add(1), staged: map[int64][]string{}}
}

func (s *txnSink) txn(ctx *core.Context, cp int64) string {
	return fmt.Sprintf("%d/%d/%d", s.id, ctx.Subtask(), cp)
}

func (s *txnSink) ProcessElement(_ *core.Context, _ int, r core.Record, _ int64) error {
	s.pending = append(s.pending, string(r.Bytes()))
	return nil
}

func (s *txnSink) stage(ctx *core.Context, cp int64) {
	if len(s.pending) > 0 {
		s.staged[cp] = s.pending
		s.pending = nil
	}
}

func (s *txnSink) SnapshotState(ctx *core.Context, cp int64) ([][]byte, bool, error) {
	s.stage(ctx, cp)
	var entries [][]byte
	for id, recs := range s.staged {
		entries = append(entries, []byte(s.txn(ctx, id)+"\n"+strings.Join(recs, "\n")))
	}
	return entries, false, nil
}

func (s *txnSink) RestoreState(_ *core.Context, entries [][]byte) error {
	for _, e := range entries {
		txn, recs, _ := strings.Cut(string(e), "\n")
		s.out.commit(txn, strings.Split(recs, "\n"))
	}
	return nil
}

func (s *txnSink) NotifyCheckpointComplete(ctx *core.Context, cp int64) error {
	for id, recs := range s.staged {
		if id <= cp {
			s.out.commit(s.txn(ctx, id), recs)
			delete(s.staged, id)
		}
	}
	return nil
}

// Finish pre-commits the rest for the final checkpoint, or commits it at
// once when the job takes no checkpoints.
func (s *txnSink) Finish(ctx *core.Context) error {
	s.stage(ctx, core.FinalCheckpoint)
	if !ctx.Checkpointing() {
		return s.NotifyCheckpointComplete(ctx, core.FinalCheckpoint)
	}
	return nil
}

// windowJob builds the job: events (parallelism 1) keyed by the record's
// bytes into the window count (parallelism windowPar, 16 key groups),
// results to a sink of parallelism 2, late records to a sink of their own.
func windowJob(evs []event, p *pause, results, late *committed, windowPar int) *core.Builder {
	b := core.NewBuilder(2, 0)
	src := core.AddSource(b, core.SourceSpec{
		Name: "events", Out: core.Bytes(), Bounded: true, AssignsWatermarks: true,
		New: func() core.Source { return &eventSource{evs: evs, pause: p} },
	}).UID("events").SetParallelism(1)
	win := core.Transform(src.KeyBy(core.BytesKey), core.OperatorSpec{
		Kind: "window", Name: "TumblingEventTimeWindows count", Out: core.Bytes(),
		Sides:           map[string]core.Type{"late": core.Bytes()},
		NeedsWatermarks: true,
		Props:           map[string]string{"size": strconv.Itoa(windowSize)},
		New:             func() core.Operator { return &windowCount{} },
	}).UID("window").SetParallelism(windowPar).SetMaxParallelism(16)
	core.Sink(win, core.OperatorSpec{Name: "results", New: func() core.Operator { return newTxnSink(results) }}).UID("results")
	core.Sink(win.SideOutput("late"), core.OperatorSpec{Name: "late", New: func() core.Operator { return newTxnSink(late) }}).UID("late").SetParallelism(1)
	return b
}

func planOf(t *testing.T, b *core.Builder) *graph.Plan {
	t.Helper()
	g, err := b.Build("window count", nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := graph.BuildPlan(g)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func run(t *testing.T, plan *graph.Plan, opts jobmaster.Options) *jobmaster.Result {
	t.Helper()
	j, err := jobmaster.Start(context.Background(), plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := j.Wait()
	if err != nil {
		t.Fatalf("job failed: %v", err)
	}
	return res
}

func checkResults(t *testing.T, evs []event, results, late *committed) {
	t.Helper()
	wantResults, wantLate := expected(evs)
	if got := results.records(); !slices.Equal(got, wantResults) {
		t.Errorf("window results:\n got %q\nwant %q", got, wantResults)
	}
	if got := late.records(); !slices.Equal(got, wantLate) {
		t.Errorf("late records: got %q, want %q", got, wantLate)
	}
}

func checkpointing(dir string) *jobmaster.CheckpointOptions {
	return &jobmaster.CheckpointOptions{Dir: dir, Coordinator: checkpoint.Options{Interval: 20 * time.Millisecond}}
}

func TestWindowJob(t *testing.T) {
	evs := events()
	if _, late := expected(evs); len(late) != 2 {
		t.Fatalf("the input has %d late records, want 2", len(late))
	}

	t.Run("without checkpoints", func(t *testing.T) {
		results, late := newCommitted(), newCommitted()
		run(t, planOf(t, windowJob(evs, nil, results, late, 3)), jobmaster.Options{})
		checkResults(t, evs, results, late)
	})

	for _, tc := range []struct {
		name    string
		backend func(dir string) state.Backend
		inc     bool
	}{
		{"hashmap", func(string) state.Backend { return nil }, false},
		{"pebble, incremental", func(dir string) state.Backend { return &state.PebbleBackend{Dir: dir} }, true},
	} {
		t.Run("failure and restart from a checkpoint, "+tc.name, func(t *testing.T) {
			results, late := newCommitted(), newCommitted()
			// At 80 the window [30,40) holds every count of its keys and no
			// record after it falls into it: only its restored state and
			// timers can emit it.
			p := &pause{at: 80, fail: true, reached: make(chan struct{})}
			strategy, err := restart.NewFixedDelay(restart.FixedDelayOptions{Attempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			cp := checkpointing(t.TempDir())
			cp.Incremental = tc.inc
			res := run(t, planOf(t, windowJob(evs, p, results, late, 3)), jobmaster.Options{
				Checkpoints: cp, Restart: strategy, StateBackend: tc.backend(t.TempDir()),
			})
			if !p.failed.Load() || res.Restarts != 1 {
				t.Fatalf("failed %v, restarts %d: want one failure and one restart", p.failed.Load(), res.Restarts)
			}
			if got := p.restoredAt.Load(); got != int64(p.at) {
				t.Errorf("the source restored position %d, want %d", got, p.at)
			}
			checkResults(t, evs, results, late)
		})
	}

	// The savepoint's keyed state is redistributed by key group: the job
	// resumes with the window at parallelism 2 instead of 3.
	t.Run("stop with a savepoint and resume from it, rescaled", func(t *testing.T) {
		results, late := newCommitted(), newCommitted()
		wantResults, _ := expected(evs)
		p := &pause{at: 100, reached: make(chan struct{})}
		dir := t.TempDir()
		j, err := jobmaster.Start(context.Background(), planOf(t, windowJob(evs, p, results, late, 3)), jobmaster.Options{Checkpoints: checkpointing(dir)})
		if err != nil {
			t.Fatal(err)
		}
		<-p.reached
		path, err := j.StopWithSavepoint(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Wait(); err != nil {
			t.Fatalf("stopped job: %v", err)
		}
		if got, want := len(results.records()), len(wantResults); got >= want {
			t.Fatalf("the first run committed %d windows, all %d of the input, before its pause", got, want)
		}
		resumed := &pause{at: -1}
		run(t, planOf(t, windowJob(evs, resumed, results, late, 2)), jobmaster.Options{Checkpoints: checkpointing(dir), RestoreFrom: path})
		if got := resumed.restoredAt.Load(); got != int64(p.at) {
			t.Errorf("the source resumed at position %d, want %d", got, p.at)
		}
		checkResults(t, evs, results, late)
	})
}
