package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

type txn struct {
	Account int
	Amount  float64
}

type fraudAlert struct {
	Account int
	Amount  float64
}

// processingTimeFraudDetector is Flink's fraud-detection walkthrough: a
// small transaction followed within a minute (of processing time) by a
// large one on the same account raises an alert.
func processingTimeFraudDetector() KeyedProcessFuncs[int, txn, fraudAlert] {
	flag := NewValueDescriptor[bool]("flag")
	timerAt := NewValueDescriptor[int64]("timer")
	cleanUp := func(ctx KeyedStateContext[int], ts TimerService) error {
		at, err := Value(ctx, timerAt).Value()
		if err != nil {
			return err
		}
		ts.DeleteProcessingTimeTimer(Timestamp(at))
		if err := Value(ctx, timerAt).Clear(); err != nil {
			return err
		}
		return Value(ctx, flag).Clear()
	}
	return KeyedProcessFuncs[int, txn, fraudAlert]{
		Element: func(ctx *KeyedContext[int], tx txn, out Collector[fraudAlert]) error {
			wasSmall, err := Value(ctx, flag).Value()
			if err != nil {
				return err
			}
			if wasSmall {
				if tx.Amount > 500 {
					out.Collect(fraudAlert{ctx.CurrentKey(), tx.Amount})
				}
				if err := cleanUp(ctx, ctx.TimerService()); err != nil {
					return err
				}
			}
			if tx.Amount < 1 {
				if err := Value(ctx, flag).Update(true); err != nil {
					return err
				}
				at := ctx.TimerService().CurrentProcessingTime().Add(time.Minute)
				ctx.TimerService().RegisterProcessingTimeTimer(at)
				return Value(ctx, timerAt).Update(int64(at))
			}
			return nil
		},
		Timer: func(ctx *OnTimerContext[int], _ Timestamp, _ Collector[fraudAlert]) error {
			if err := Value(ctx, timerAt).Clear(); err != nil {
				return err
			}
			return Value(ctx, flag).Clear()
		},
	}
}

func TestHarnessFraudDetectionInProcessingTime(t *testing.T) {
	env := procTestEnv()
	ks := KeyBy(FromElements(env, txn{}), func(t txn) int { return t.Account })
	h := newHarness(t, KeyedProcess(ks, processingTimeFraudDetector()), harnessOpts{start: 1_000_000})

	step := func(acct int, amount float64) { mustOK(t, feed(h, txn{acct, amount}, noTimestamp)) }
	step(1, 0.5)                 // small: flag set, timer at +60s
	mustOK(t, h.advance(30_000)) // +30s
	step(1, 600)                 // large within a minute: alert
	step(2, 0.3)                 // small at +30s: timer at +90s
	step(3, 0.2)                 // small at +30s
	mustOK(t, h.advance(59_999)) // +89.999s: account 2's timer not yet due
	step(3, 700)                 // alert for account 3
	mustOK(t, h.advance(1))      // +90s: account 2's flag expires
	step(2, 900)                 // no alert: more than a minute later
	step(1, 800)                 // no alert: account 1's flag was cleared
	step(4, 0.1)                 // small, then a small, then large: the second small re-arms
	step(4, 0.1)                 //
	step(4, 501)                 // alert
	step(5, 0.9)                 //
	step(5, 500)                 // not large (> 500 needed): no alert, flag cleared
	step(5, 501)                 // no alert
	got := h.out.take()
	want := []Record[fraudAlert]{
		{fraudAlert{1, 600}, NoTimestamp},
		{fraudAlert{3, 700}, NoTimestamp},
		{fraudAlert{4, 501}, NoTimestamp},
	}
	recordsEqual(t, "alerts", got, want)
	// Every cleared timer was deleted: nothing is left armed.
	mustOK(t, h.advance(10*60_000))
	if n := h.pendingTimers(); n != 0 {
		t.Fatalf("%d processing-time callbacks still armed after all timers fired or were deleted", n)
	}
}

type timerEvent struct {
	Key    string
	Domain TimeDomain
	At     int64
	WM     int64
}

// timerRecorder registers the timers each record asks for ("e:10" event
// time, "p:10" processing time, "de:10"/"dp:10" deletes) and reports each
// firing with its key, domain and the watermark seen.
func timerRecorder() KeyedProcessFuncs[string, [2]string, timerEvent] {
	return KeyedProcessFuncs[string, [2]string, timerEvent]{
		Element: func(ctx *KeyedContext[string], v [2]string, _ Collector[timerEvent]) error {
			for _, op := range strings.Fields(v[1]) {
				kind, at, ok := strings.Cut(op, ":")
				if !ok {
					return fmt.Errorf("bad op %q", op)
				}
				var ts int64
				fmt.Sscan(at, &ts)
				switch kind {
				case "e":
					ctx.TimerService().RegisterEventTimeTimer(Timestamp(ts))
				case "p":
					ctx.TimerService().RegisterProcessingTimeTimer(Timestamp(ts))
				case "de":
					ctx.TimerService().DeleteEventTimeTimer(Timestamp(ts))
				case "dp":
					ctx.TimerService().DeleteProcessingTimeTimer(Timestamp(ts))
				}
			}
			return nil
		},
		Timer: func(ctx *OnTimerContext[string], ts Timestamp, out Collector[timerEvent]) error {
			if ctx.Timestamp() != Timestamp(timerTimestamp(int64(ts), ctx.TimeDomain())) {
				return fmt.Errorf("ctx.Timestamp() = %d in a %v timer at %d", ctx.Timestamp(), ctx.TimeDomain(), ts)
			}
			out.Collect(timerEvent{ctx.CurrentKey(), ctx.TimeDomain(), int64(ts), int64(ctx.TimerService().CurrentWatermark())})
			return nil
		},
	}
}

func newTimerHarness(t *testing.T, batch bool) *opHarness[timerEvent] {
	env := procTestEnv()
	ks := KeyBy(FromElements(env, [2]string{}), func(v [2]string) string { return v[0] })
	return newHarness(t, KeyedProcess(ks, timerRecorder()), harnessOpts{start: 0, batch: batch})
}

func TestHarnessEventTimersFireInOrderOnceEach(t *testing.T) {
	h := newTimerHarness(t, false)
	mustOK(t, feed(h, [2]string{"a", "e:30 e:10 e:20 e:10"}, 5))
	mustOK(t, feed(h, [2]string{"b", "e:15 e:10"}, 6))
	mustOK(t, feed(h, [2]string{"a", "e:20"}, 7)) // again: deduplicated
	mustOK(t, h.watermark(9))
	if got := h.out.take(); len(got) != 0 {
		t.Fatalf("timers fired before the watermark reached them: %v", got)
	}
	mustOK(t, h.watermark(20))
	recordsEqual(t, "wm 20", h.out.take(), []Record[timerEvent]{
		{timerEvent{"a", EventTimeDomain, 10, 20}, 10},
		{timerEvent{"b", EventTimeDomain, 10, 20}, 10},
		{timerEvent{"b", EventTimeDomain, 15, 20}, 15},
		{timerEvent{"a", EventTimeDomain, 20, 20}, 20},
	})
	// A timer at or behind the watermark fires with the next watermark.
	mustOK(t, feed(h, [2]string{"c", "e:5"}, 21))
	mustOK(t, h.watermark(25))
	mustOK(t, h.watermark(40))
	recordsEqual(t, "later", h.out.take(), []Record[timerEvent]{
		{timerEvent{"c", EventTimeDomain, 5, 25}, 5},
		{timerEvent{"a", EventTimeDomain, 30, 40}, 30},
	})
	if got, want := h.out.wms, []int64{9, 20, 25, 40}; !slices.Equal(got, want) {
		t.Fatalf("forwarded watermarks %v, want %v", got, want)
	}
}

func TestHarnessProcessingTimersFireInOrderOnceEach(t *testing.T) {
	h := newTimerHarness(t, false)
	mustOK(t, feed(h, [2]string{"a", "p:300 p:100 p:200 p:100"}, noTimestamp))
	mustOK(t, feed(h, [2]string{"b", "p:150 p:100"}, noTimestamp))
	mustOK(t, h.advance(99))
	if got := h.out.take(); len(got) != 0 {
		t.Fatalf("timers fired early: %v", got)
	}
	mustOK(t, h.advance(101)) // now 200
	min := noWatermarkYet
	recordsEqual(t, "at 200", h.out.take(), []Record[timerEvent]{
		{timerEvent{"a", ProcessingTimeDomain, 100, min}, NoTimestamp},
		{timerEvent{"b", ProcessingTimeDomain, 100, min}, NoTimestamp},
		{timerEvent{"b", ProcessingTimeDomain, 150, min}, NoTimestamp},
		{timerEvent{"a", ProcessingTimeDomain, 200, min}, NoTimestamp},
	})
	mustOK(t, h.advance(100))
	recordsEqual(t, "at 300", h.out.take(), []Record[timerEvent]{{timerEvent{"a", ProcessingTimeDomain, 300, min}, NoTimestamp}})
}

func TestHarnessDeletedTimersDoNotFire(t *testing.T) {
	h := newTimerHarness(t, false)
	mustOK(t, feed(h, [2]string{"a", "e:10 e:20 p:100 p:200"}, 1))
	mustOK(t, feed(h, [2]string{"b", "e:10 p:100"}, 1))
	mustOK(t, feed(h, [2]string{"a", "de:10 dp:100 de:99 dp:999"}, 2)) // deleting unknown timers is harmless
	mustOK(t, h.watermark(50))
	mustOK(t, h.advance(500))
	recordsEqual(t, "fired", h.out.take(), []Record[timerEvent]{
		{timerEvent{"b", EventTimeDomain, 10, 50}, 10},
		{timerEvent{"a", EventTimeDomain, 20, 50}, 20},
		{timerEvent{"b", ProcessingTimeDomain, 100, 50}, NoTimestamp},
		{timerEvent{"a", ProcessingTimeDomain, 200, 50}, NoTimestamp},
	})
}

func TestHarnessEndOfInput(t *testing.T) {
	t.Run("streaming drops pending processing-time timers", func(t *testing.T) {
		h := newTimerHarness(t, false)
		mustOK(t, feed(h, [2]string{"a", "e:10 p:100"}, 1))
		mustOK(t, h.endInput())
		recordsEqual(t, "fired", h.out.take(), []Record[timerEvent]{
			{timerEvent{"a", EventTimeDomain, 10, maxWatermark}, 10},
		})
	})
	t.Run("batch fires every timer at the end", func(t *testing.T) {
		h := newTimerHarness(t, true)
		mustOK(t, feed(h, [2]string{"a", "e:10 p:100 e:5"}, 1))
		mustOK(t, feed(h, [2]string{"b", "p:50"}, 1))
		// Processing time passing fires nothing in BATCH mode.
		mustOK(t, h.advance(1000))
		if got := h.out.take(); len(got) != 0 {
			t.Fatalf("processing-time timers fired before the end of input in BATCH mode: %v", got)
		}
		mustOK(t, h.endInput())
		recordsEqual(t, "fired", h.out.take(), []Record[timerEvent]{
			{timerEvent{"a", EventTimeDomain, 5, maxWatermark}, 5},
			{timerEvent{"a", EventTimeDomain, 10, maxWatermark}, 10},
			{timerEvent{"b", ProcessingTimeDomain, 50, maxWatermark}, NoTimestamp},
			{timerEvent{"a", ProcessingTimeDomain, 100, maxWatermark}, NoTimestamp},
		})
	})
}

func TestHarnessTimersRegisteredInOnTimer(t *testing.T) {
	// A repeating event-time timer: each firing registers the next, 10 ms
	// later, until 50. One watermark fires the whole chain up to it.
	env := procTestEnv()
	ks := KeyBy(FromElements(env, 0), func(v int) int { return v })
	fn := KeyedProcessFuncs[int, int, int64]{
		Element: func(ctx *KeyedContext[int], v int, _ Collector[int64]) error {
			ctx.TimerService().RegisterEventTimeTimer(10)
			return nil
		},
		Timer: func(ctx *OnTimerContext[int], ts Timestamp, out Collector[int64]) error {
			out.Collect(int64(ts))
			if ts < 50 {
				ctx.TimerService().RegisterEventTimeTimer(ts + 10)
			}
			return nil
		},
	}
	h := newHarness(t, KeyedProcess(ks, fn), harnessOpts{})
	mustOK(t, feed(h, 1, 0))
	mustOK(t, h.watermark(35))
	recordsEqual(t, "to 35", h.out.take(), []Record[int64]{{10, 10}, {20, 20}, {30, 30}})
	mustOK(t, h.watermark(1000))
	recordsEqual(t, "to 1000", h.out.take(), []Record[int64]{{40, 40}, {50, 50}})
}

func TestHarnessSideOutputsFromElementsAndTimers(t *testing.T) {
	env := procTestEnv()
	lateTag := NewOutputTag[string]("late")
	ks := KeyBy(FromElements(env, 0), func(v int) int { return v % 2 })
	fn := KeyedProcessFuncs[int, int, int]{
		Element: func(ctx *KeyedContext[int], v int, out Collector[int]) error {
			if ctx.Timestamp() < ctx.CurrentWatermark() {
				Output(ctx, lateTag, fmt.Sprintf("late %d", v))
				return nil
			}
			out.Collect(v)
			ctx.TimerService().RegisterEventTimeTimer(ctx.Timestamp() + 100)
			return nil
		},
		Timer: func(ctx *OnTimerContext[int], ts Timestamp, out Collector[int]) error {
			Output(ctx, lateTag, fmt.Sprintf("timer %d key %d", ts, ctx.CurrentKey()))
			return nil
		},
	}
	side := &captured[string]{}
	h := newHarness(t, KeyedProcess(ks, fn), harnessOpts{sides: map[string]any{"late": side}})
	mustOK(t, feed(h, 1, 10))
	mustOK(t, h.watermark(50))
	mustOK(t, feed(h, 2, 40)) // late
	mustOK(t, feed(h, 4, 60))
	mustOK(t, h.watermark(200))
	recordsEqual(t, "main", h.out.take(), []Record[int]{{1, 10}, {4, 60}})
	recordsEqual(t, "side", side.take(), []Record[string]{
		{"late 2", 40},
		{"timer 110 key 1", 110},
		{"timer 160 key 0", 160},
	})
}

type openProbe struct {
	opened, closed *[]string
}

func (p openProbe) ProcessElement(ctx *ProcessContext, v int, out Collector[int]) error {
	out.Collect(v)
	return nil
}

func (p openProbe) Open(rc RuntimeContext) error {
	*p.opened = append(*p.opened, fmt.Sprintf("%s/%s %d/%d max %d", rc.JobName(), rc.OperatorName(), rc.Subtask(), rc.Parallelism(), rc.MaxParallelism()))
	if rc.Logger() == nil {
		return errors.New("no logger")
	}
	return nil
}

func (p openProbe) Close() error {
	*p.closed = append(*p.closed, "closed")
	return nil
}

func TestHarnessOpenAndCloseHooks(t *testing.T) {
	var opened, closed []string
	t.Run("interface", func(t *testing.T) {
		env := procTestEnv()
		s := Process(FromElements(env, 1), openProbe{&opened, &closed}).Name("probe")
		h := newHarness(t, s, harnessOpts{parallelism: 4, subtask: 2})
		mustOK(t, feed(h, 7, 70))
		recordsEqual(t, "out", h.out.take(), []Record[int]{{7, 70}})
	})
	t.Run("funcs", func(t *testing.T) {
		env := procTestEnv()
		s := Process(FromElements(env, 1), ProcessFuncs[int, int]{
			Element: func(ctx *ProcessContext, v int, out Collector[int]) error { return nil },
			Open: func(rc RuntimeContext) error {
				opened = append(opened, fmt.Sprintf("funcs %d/%d", rc.Subtask(), rc.Parallelism()))
				return nil
			},
			Close: func() error { closed = append(closed, "funcs closed"); return nil },
		})
		newHarness(t, s, harnessOpts{parallelism: 3, subtask: 0})
	})
	if want := []string{"harness/probe 2/4 max 128", "funcs 0/3"}; !slices.Equal(opened, want) {
		t.Fatalf("Open saw %q, want %q", opened, want)
	}
	if want := []string{"closed", "funcs closed"}; !slices.Equal(closed, want) {
		t.Fatalf("Close calls %q, want %q", closed, want)
	}
}

func TestHarnessProcessContextTime(t *testing.T) {
	env := procTestEnv()
	type seen struct{ TS, WM, Now int64 }
	s := Process(FromElements(env, 1), ProcessFuncs[int, seen]{
		Element: func(ctx *ProcessContext, v int, out Collector[seen]) error {
			out.Collect(seen{int64(ctx.Timestamp()), int64(ctx.CurrentWatermark()), int64(ctx.CurrentProcessingTime())})
			return nil
		},
	})
	h := newHarness(t, s, harnessOpts{start: 5000})
	mustOK(t, feed(h, 1, noTimestamp))
	mustOK(t, h.watermark(77))
	mustOK(t, h.advance(25))
	mustOK(t, feed(h, 2, 90))
	recordsEqual(t, "seen", h.out.take(), []Record[seen]{
		{seen{noTimestamp, noWatermarkYet, 5000}, NoTimestamp},
		{seen{90, 77, 5025}, 90},
	})
}

func TestHarnessProcessingTimerFiringMidRecordKeepsTheRecordsKey(t *testing.T) {
	// An operator further down the chain that yields to the task (async
	// I/O) lets processing-time timers fire while a record is in flight.
	var yield func()
	last := NewValueDescriptor[string]("last")
	var kctx *KeyedContext[string] // the subtask's record context, to read state after the records
	fn := KeyedProcessFuncs[string, string, string]{
		Element: func(ctx *KeyedContext[string], v string, out Collector[string]) error {
			kctx = ctx
			if v == "b" {
				ctx.TimerService().RegisterProcessingTimeTimer(100)
				return nil
			}
			yield() // b's timer fires here
			out.Collect(fmt.Sprintf("%s after the timer, ts %d", ctx.CurrentKey(), ctx.Timestamp()))
			return Value(ctx, last).Update(v)
		},
		Timer: func(ctx *OnTimerContext[string], ts Timestamp, out Collector[string]) error {
			out.Collect("timer " + ctx.CurrentKey())
			return nil
		},
	}
	env := procTestEnv()
	h := newHarness(t, KeyedProcess(KeyBy(FromElements(env, ""), func(s string) string { return s }), fn), harnessOpts{})
	yield = func() { mustOK(t, h.advance(100)) }
	mustOK(t, feed(h, "b", 1))
	mustOK(t, feed(h, "a", 7))
	recordsEqual(t, "out", h.out.take(), []Record[string]{{"timer b", NoTimestamp}, {"a after the timer, ts 7", 7}})
	kctx.v.r.Keyed.SetCurrentKey("a")
	if v, _ := Value(kctx, last).Value(); v != "a" {
		t.Fatalf("state written after the timer went to another key: a's value is %q", v)
	}
}
