package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/typed"
)

type ctl struct {
	Key    string
	Enable bool
}

type word struct {
	Key  string
	Text string
}

// controlledPassThrough forwards a key's words only while the control
// stream has it enabled; an enable lasts 1 s of processing time.
func controlledPassThrough() KeyedCoProcessFuncs[string, word, ctl, string] {
	enabled := NewValueDescriptor[int64]("enabled-until")
	return KeyedCoProcessFuncs[string, word, ctl, string]{
		Element1: func(ctx *KeyedContext[string], w word, out Collector[string]) error {
			until, err := Value(ctx, enabled).Value()
			if err != nil {
				return err
			}
			if until > 0 {
				out.Collect(w.Key + ":" + w.Text)
			}
			return nil
		},
		Element2: func(ctx *KeyedContext[string], c ctl, out Collector[string]) error {
			if !c.Enable {
				until, _ := Value(ctx, enabled).Value()
				ctx.TimerService().DeleteProcessingTimeTimer(Timestamp(until))
				return Value(ctx, enabled).Clear()
			}
			until := ctx.TimerService().CurrentProcessingTime().Add(time.Second)
			ctx.TimerService().RegisterProcessingTimeTimer(until)
			return Value(ctx, enabled).Update(int64(until))
		},
		Timer: func(ctx *OnTimerContext[string], ts Timestamp, out Collector[string]) error {
			out.Collect(fmt.Sprintf("%s expired at %d", ctx.CurrentKey(), ts))
			return Value(ctx, enabled).Clear()
		},
	}
}

func TestHarnessKeyedCoProcessSharesStateAcrossInputs(t *testing.T) {
	env := procTestEnv()
	words := KeyBy(FromElements(env, word{}), func(w word) string { return w.Key })
	ctls := KeyBy(FromElements(env, ctl{}), func(c ctl) string { return c.Key })
	s := KeyedCoProcess(ConnectKeyed(words, ctls), controlledPassThrough())
	if !s.node.Keyed || s.node.Inputs != 2 {
		t.Fatalf("node keyed=%v inputs=%d, want a keyed two-input node", s.node.Keyed, s.node.Inputs)
	}
	h := newHarness(t, s, harnessOpts{start: 10_000})
	w := func(k, text string) { mustOK(t, feedTo(h, 0, word{k, text}, noTimestamp)) }
	c := func(k string, on bool) { mustOK(t, feedTo(h, 1, ctl{k, on}, noTimestamp)) }
	w("a", "dropped")
	c("a", true) // enabled until 11_000
	w("a", "one")
	w("b", "dropped")
	mustOK(t, h.advance(500))
	c("b", true) // enabled until 11_500
	w("b", "two")
	c("a", false) // disabling deletes a's timer
	w("a", "dropped")
	mustOK(t, h.advance(500)) // 11_000: a's deleted timer does not fire
	w("b", "still on")
	mustOK(t, h.advance(500)) // 11_500: b's timer fires
	w("b", "dropped")
	recordsEqual(t, "out", h.out.take(), []Record[string]{
		{"a:one", NoTimestamp}, {"b:two", NoTimestamp}, {"b:still on", NoTimestamp}, {"b expired at 11500", NoTimestamp},
	})
}

func TestHarnessCoProcessAndCoMap(t *testing.T) {
	env := procTestEnv()
	a := FromElements(env, 0)
	b := FromElements(env, "")
	s := CoProcess(Connect(a, b), CoProcessFuncs[int, string, string]{
		Element1: func(ctx *ProcessContext, v int, out Collector[string]) error {
			out.Collect(fmt.Sprintf("int %d wm %d", v, ctx.CurrentWatermark()))
			return nil
		},
		Element2: func(ctx *ProcessContext, v string, out Collector[string]) error {
			out.Collect("string " + v)
			return nil
		},
	})
	h := newHarness(t, s, harnessOpts{})
	mustOK(t, feedTo(h, 0, 1, 10))
	mustOK(t, feedTo(h, 1, "x", 20))
	mustOK(t, h.watermark(15))
	mustOK(t, feedTo(h, 0, 2, 30))
	recordsEqual(t, "co-process", h.out.take(), []Record[string]{
		{fmt.Sprintf("int 1 wm %d", noWatermarkYet), 10}, {"string x", 20}, {"int 2 wm 15", 30},
	})
	if err := feedTo(h, 0, "wrong", 1); err == nil {
		t.Fatal("the harness accepted a string on the int input")
	}
}

type joinEv struct {
	Name string
	TS   int64
}

func joinNames(ctx *ProcessJoinContext, a, b joinEv, out Collector[string]) error {
	if ctx.LeftTimestamp() != Timestamp(a.TS) || ctx.RightTimestamp() != Timestamp(b.TS) || ctx.Timestamp() != Timestamp(max(a.TS, b.TS)) {
		return fmt.Errorf("context timestamps %d/%d/%d for %v and %v", ctx.LeftTimestamp(), ctx.RightTimestamp(), ctx.Timestamp(), a, b)
	}
	out.Collect(a.Name + "+" + b.Name)
	return nil
}

func newJoinHarness(t *testing.T, lower, upper time.Duration, exLo, exHi bool, lateTag *OutputTag[joinEv], late *captured[joinEv]) (*opHarness[string], *joinBuffers) {
	env := procTestEnv()
	l := KeyBy(FromElements(env, joinEv{}), func(e joinEv) int { return len(e.Name) })
	r := KeyBy(FromElements(env, joinEv{}), func(e joinEv) int { return len(e.Name) })
	j := IntervalJoin(l, r).Between(lower, upper)
	if exLo {
		j = j.LowerBoundExclusive()
	}
	if exHi {
		j = j.UpperBoundExclusive()
	}
	var sides map[string]any
	if lateTag != nil {
		j = j.SideOutputLeftLateData(*lateTag)
		sides = map[string]any{lateTag.ID(): late}
	}
	s := IntervalJoinProcess(j, ProcessJoinFunc[joinEv, joinEv, string](joinNames))
	if !s.node.Keyed || !s.node.NeedsWatermarks || s.node.Inputs != 2 {
		t.Fatalf("interval join node: keyed=%v needs watermarks=%v inputs=%d", s.node.Keyed, s.node.NeedsWatermarks, s.node.Inputs)
	}
	h := newHarness(t, s, harnessOpts{sides: sides})
	lbuf, rbuf, ok := typed.JoinBuffers[joinEv, joinEv, int, string](h.op)
	if !ok {
		t.Fatalf("operator %T is not an interval join", h.op)
	}
	return h, &joinBuffers{lbuf: lbuf, rbuf: rbuf}
}

// joinBuffers are what an interval join operator keeps per key.
type joinBuffers struct {
	lbuf *state.ValueTable[int, state.Void, map[int64][]joinEv]
	rbuf *state.ValueTable[int, state.Void, map[int64][]joinEv]
}

func TestHarnessIntervalJoinBounds(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name         string
		lower, upper time.Duration
		exLo, exHi   bool
		want         []string
	}{
		{"inclusive", -2 * ms, ms, false, false, []string{"L1+R1@10", "L1+R2@10", "L1+R3@11", "L2+R5@20", "L2+R6@21", "L2+R8@20"}},
		{"lower exclusive", -2 * ms, ms, true, false, []string{"L1+R2@10", "L1+R3@11", "L2+R6@21", "L2+R8@20"}},
		{"upper exclusive", -2 * ms, ms, false, true, []string{"L1+R1@10", "L1+R2@10", "L2+R5@20", "L2+R8@20"}},
		{"both exclusive", -2 * ms, ms, true, true, []string{"L1+R2@10", "L2+R8@20"}},
		{"same time", 0, 0, false, false, []string{"L2+R8@20"}},
		{"after only", ms, 3 * ms, false, false, []string{"L1+R3@11", "L1+R4@12", "L2+R6@21", "L2+R7@22"}},
		{"before only", -3 * ms, -ms, false, false, []string{"L1+R1@10", "L1+R2@10", "L2+R5@20"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, op := newJoinHarness(t, tc.lower, tc.upper, tc.exLo, tc.exHi, nil, nil)
			left := func(name string, ts int64) { mustOK(t, feedTo(h, 0, joinEv{name, ts}, ts)) }
			right := func(name string, ts int64) { mustOK(t, feedTo(h, 1, joinEv{name, ts}, ts)) }
			right("R1", 8)
			right("R2", 9)
			left("L1", 10)
			right("R3", 11)
			right("R4", 12)
			right("R5", 18)
			left("L2", 20)
			right("R6", 21)
			right("R7", 22)
			right("R8", 20)
			var got []string
			for _, r := range h.out.take() {
				got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Timestamp))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("pairs %q\nwant  %q", got, tc.want)
			}
			// The final watermark cleans every buffer.
			mustOK(t, h.endInput())
			if n := op.lbuf.Len() + op.rbuf.Len(); n != 0 {
				t.Fatalf("%d keys still buffered after the final watermark", n)
			}
		})
	}
}

func TestHarnessIntervalJoinCleanupAndLateRecords(t *testing.T) {
	ms := time.Millisecond
	tag := NewOutputTag[joinEv]("late-left")
	late := &captured[joinEv]{}
	h, op := newJoinHarness(t, -2*ms, ms, false, false, &tag, late)
	left := func(name string, ts int64) { mustOK(t, feedTo(h, 0, joinEv{name, ts}, ts)) }
	right := func(name string, ts int64) { mustOK(t, feedTo(h, 1, joinEv{name, ts}, ts)) }
	buffered := func() (int, int) {
		l, r := 0, 0
		mustOK(t, op.lbuf.Entries(func(_ int, _ state.Void, m map[int64][]joinEv) error {
			for _, b := range m {
				l += len(b)
			}
			return nil
		}))
		mustOK(t, op.rbuf.Entries(func(_ int, _ state.Void, m map[int64][]joinEv) error {
			for _, b := range m {
				r += len(b)
			}
			return nil
		}))
		return l, r
	}
	left("L1", 10)  // joins rights in [8, 11]; kept until the watermark reaches 11
	right("R1", 12) // joins lefts in [11, 14]; kept until the watermark reaches 14
	mustOK(t, h.watermark(10))
	if l, r := buffered(); l != 1 || r != 1 {
		t.Fatalf("after watermark 10: %d left and %d right records buffered, want 1 and 1", l, r)
	}
	right("R2", 11) // still in time for L1
	mustOK(t, h.watermark(11))
	if l, r := buffered(); l != 0 || r != 2 {
		t.Fatalf("after watermark 11: %d left and %d right records buffered, want 0 and 2", l, r)
	}
	right("R3", 10) // late: behind the watermark, dropped
	left("L0", 9)   // late: to the side output
	left("L2", 13)  // joins R2 (11) and R1 (12), both in [11, 14]
	mustOK(t, h.watermark(13))
	if l, r := buffered(); l != 1 || r != 1 {
		t.Fatalf("after watermark 13: %d left and %d right records buffered, want 1 and 1", l, r)
	}
	mustOK(t, h.watermark(14))
	if l, r := buffered(); l != 0 || r != 0 {
		t.Fatalf("after watermark 14: %d left and %d right records buffered, want none", l, r)
	}
	var got []string
	for _, r := range h.out.take() {
		got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Timestamp))
	}
	slices.Sort(got)
	if want := []string{"L1+R2@11", "L2+R1@13", "L2+R2@13"}; !slices.Equal(got, want) {
		t.Fatalf("pairs %q, want %q", got, want)
	}
	recordsEqual(t, "late left records", late.take(), []Record[joinEv]{{joinEv{"L0", 9}, 9}})
	if got, want := h.out.wms, []int64{10, 11, 13, 14}; !slices.Equal(got, want) {
		t.Fatalf("forwarded watermarks %v, want %v", got, want)
	}
}

func TestHarnessIntervalJoinNeedsTimestamps(t *testing.T) {
	h, _ := newJoinHarness(t, 0, time.Millisecond, false, false, nil, nil)
	if err := feedTo(h, 1, joinEv{"R", 0}, noTimestamp); !errors.Is(err, ErrNoTimestamp) || !strings.Contains(err.Error(), "right input") {
		t.Fatalf("got %v, want ErrNoTimestamp naming the right input", err)
	}
}
