package stream

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/typed"
)

// opHarness drives one process-function operator directly, like Flink's
// (Keyed)OneInputStreamOperatorTestHarness: the test hands it records,
// watermarks and processing-time advances in an exact order and reads what
// the operator emitted. The operator is built by the same factory the job
// graph holds, from a stream declared through the public API.
type opHarness[O any] struct {
	t      *testing.T
	clock  *clock.Manual
	env    *procEnv
	op     task.Operator
	inputs []any
	out    *captured[O]
	timers []*harnessTimer
	seq    int
	// idle records the idleness changes the operator emitted.
	idle []bool
}

type harnessTimer struct {
	at        int64
	seq       int
	fn        func(now int64) error
	cancelled bool
}

// captured is an operator output that keeps what it receives.
type captured[T any] struct {
	recs []Record[T]
	wms  []int64
}

func (c *captured[T]) Collect(v T, ts int64) error {
	c.recs = append(c.recs, Record[T]{v, Timestamp(ts)})
	return nil
}

func (c *captured[T]) EmitWatermark(wm int64) error {
	c.wms = append(c.wms, wm)
	return nil
}

// take returns and forgets the records received so far.
func (c *captured[T]) take() []Record[T] {
	r := c.recs
	c.recs = nil
	return r
}

type harnessOpts struct {
	batch       bool
	parallelism int // default 1
	subtask     int
	start       int64 // the manual clock's start
	sides       map[string]any
	wmInterval  int64 // default 200
	backend     state.Backend
}

func newHarness[O any](t *testing.T, s DataStream[O], o harnessOpts) *opHarness[O] {
	t.Helper()
	if len(s.env.errs) > 0 {
		t.Fatalf("building the stream: %v", joinBuildErrors(s.env.errs))
	}
	f, ok := s.node.Impl.(*procFactory[O])
	if !ok {
		t.Fatalf("operator %s is not a process-function operator (%T)", s.node.Label(), s.node.Impl)
	}
	if o.parallelism == 0 {
		o.parallelism = 1
	}
	if o.wmInterval == 0 {
		o.wmInterval = 200
	}
	maxPar := keygroup.DefaultMax(o.parallelism)
	h := &opHarness[O]{t: t, clock: clock.NewManual(o.start), out: &captured[O]{}}
	h.env = &procEnv{
		Job: "harness", Name: s.node.Name, Index: o.subtask, Par: o.parallelism,
		MaxPar: maxPar, Groups: keygroup.RangeFor(maxPar, o.parallelism, o.subtask),
		Batch: o.batch, Clock: h.clock, Log: slog.New(slog.DiscardHandler),
		Schedule: h.schedule, AutoWatermark: o.wmInterval,
		EmitIdle: func(idle bool) error { h.idle = append(h.idle, idle); return nil },
		Backend:  o.backend,
		// The task closes keyed state with its operator; so does the harness.
		RegisterKeyed: func(k task.KeyedState) error {
			t.Cleanup(func() {
				if err := k.(io.Closer).Close(); err != nil {
					t.Errorf("closing keyed state: %v", err)
				}
			})
			return nil
		},
	}
	op, ins, err := f.Build(h.env, h.out, o.sides)
	if err != nil {
		t.Fatalf("building operator: %v", err)
	}
	h.op, h.inputs = op, ins
	if err := op.Open(); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := op.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

func (h *opHarness[O]) schedule(at int64, fn func(now int64) error) func() {
	h.seq++
	tm := &harnessTimer{at: at, seq: h.seq, fn: fn}
	h.timers = append(h.timers, tm)
	return func() { tm.cancelled = true }
}

// pendingTimers counts armed processing-time callbacks.
func (h *opHarness[O]) pendingTimers() int {
	n := 0
	for _, tm := range h.timers {
		if !tm.cancelled {
			n++
		}
	}
	return n
}

// advance moves processing time forward by ms and fires due callbacks in
// deadline order, as the task does.
func (h *opHarness[O]) advance(ms int64) error {
	h.clock.Advance(ms)
	now := h.clock.NowMillis()
	for {
		sort.SliceStable(h.timers, func(i, j int) bool {
			if h.timers[i].at != h.timers[j].at {
				return h.timers[i].at < h.timers[j].at
			}
			return h.timers[i].seq < h.timers[j].seq
		})
		var due *harnessTimer
		for i, tm := range h.timers {
			if tm.cancelled {
				continue
			}
			if tm.at <= now {
				due = tm
				h.timers = append(h.timers[:i], h.timers[i+1:]...)
			}
			break
		}
		if due == nil {
			// Drop cancelled heads and stop.
			kept := h.timers[:0]
			for _, tm := range h.timers {
				if !tm.cancelled {
					kept = append(kept, tm)
				}
			}
			h.timers = kept
			return nil
		}
		if err := due.fn(now); err != nil {
			return err
		}
	}
}

func (h *opHarness[O]) watermark(wm int64) error { return h.op.ProcessWatermark(wm) }

// endInput ends the input as the task does: the final watermark, then Finish.
func (h *opHarness[O]) endInput() error {
	if err := h.op.ProcessWatermark(maxWatermark); err != nil {
		return err
	}
	return h.op.Finish()
}

// feed hands v to input 0 of the operator, feedTo to the given input.
func feed[I, O any](h *opHarness[O], v I, ts int64) error { return feedTo(h, 0, v, ts) }

func feedTo[I, O any](h *opHarness[O], input int, v I, ts int64) error {
	in, ok := h.inputs[input].(task.Input[I])
	if !ok {
		return fmt.Errorf("harness: input %d does not take %T", input, v)
	}
	return in.ProcessElement(v, ts)
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// onEveryBackend runs a test with the keyed state in memory and in pebble.
func onEveryBackend(t *testing.T, test func(t *testing.T, backend state.Backend)) {
	t.Run("hashmap", func(t *testing.T) { test(t, nil) })
	t.Run("pebble", func(t *testing.T) { test(t, &state.PebbleBackend{Dir: t.TempDir()}) })
}

func procTestEnv() *Environment {
	return NewEnvironment(WithParallelism(1), WithLogger(slog.New(slog.DiscardHandler)))
}

func recordsEqual[T comparable](t *testing.T, what string, got, want []Record[T]) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records %v\nwant %d: %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d is %v, want %v\ngot  %v\nwant %v", what, i, got[i], want[i], got, want)
		}
	}
}

// timerTimestamp is the timestamp of records a timer emits.
func timerTimestamp(ts int64, domain TimeDomain) int64 {
	return typed.TimerTimestamp(ts, typed.TimeDomain(domain))
}

// noWatermarkYet is an operator's input watermark before the first one.
const noWatermarkYet = typed.NoWatermarkYet
