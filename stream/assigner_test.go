package stream

import (
	"slices"
	"testing"
	"time"
)

type stamped struct {
	Name string
	TS   int64
}

func newAssignerHarness(t *testing.T, strategy WatermarkStrategy[stamped], batch bool) *opHarness[stamped] {
	env := procTestEnv()
	s := AssignTimestampsAndWatermarks(FromElements(env, stamped{}), strategy)
	if s.node.AssignsWatermarks != strategy.generatesWatermarks() {
		t.Fatalf("AssignsWatermarks = %v", s.node.AssignsWatermarks)
	}
	return newHarness(t, s, harnessOpts{start: 0, batch: batch, wmInterval: 200})
}

func byTS() WatermarkStrategy[stamped] {
	return ForBoundedOutOfOrderness[stamped](10 * time.Millisecond).
		WithTimestampAssigner(func(v stamped, _ Timestamp) Timestamp { return Timestamp(v.TS) })
}

func TestHarnessAssignerPeriodicWatermarks(t *testing.T) {
	h := newAssignerHarness(t, byTS(), false)
	in := func(name string, ts int64) { mustOK(t, feed(h, stamped{name, ts}, 999_999)) }
	in("a", 100)
	in("b", 150)
	mustOK(t, h.advance(199))
	if len(h.out.wms) != 0 {
		t.Fatalf("watermark before the first period: %v", h.out.wms)
	}
	mustOK(t, h.advance(1)) // 200: max 150 - 10 - 1
	mustOK(t, h.watermark(500))
	in("c", 120) // out of order: no progress
	mustOK(t, h.advance(200))
	in("d", 300)
	mustOK(t, h.advance(200))
	mustOK(t, h.watermark(maxWatermark))
	mustOK(t, h.advance(1000))
	if got, want := h.out.wms, []int64{139, 289, maxWatermark}; !slices.Equal(got, want) {
		t.Fatalf("watermarks %v, want %v (upstream watermarks other than the final one are dropped)", got, want)
	}
	recordsEqual(t, "records", h.out.take(), []Record[stamped]{
		{stamped{"a", 100}, 100}, {stamped{"b", 150}, 150}, {stamped{"c", 120}, 120}, {stamped{"d", 300}, 300},
	})
	if n := h.pendingTimers(); n != 0 {
		t.Fatalf("periodic emission still armed after the final watermark (%d callbacks)", n)
	}
}

// punctuated emits a watermark from OnEvent for records named "mark".
type punctuated struct{}

func (punctuated) OnEvent(v stamped, ts Timestamp, out WatermarkOutput) {
	if v.Name == "mark" {
		out.EmitWatermark(ts)
	}
}
func (punctuated) OnPeriodicEmit(WatermarkOutput) {}

func TestHarnessAssignerPunctuatedWatermarksGoOutAtOnce(t *testing.T) {
	strategy := ForGenerator(func() WatermarkGenerator[stamped] { return punctuated{} }).
		WithTimestampAssigner(func(v stamped, _ Timestamp) Timestamp { return Timestamp(v.TS) })
	h := newAssignerHarness(t, strategy, false)
	mustOK(t, feed(h, stamped{"x", 5}, noTimestamp))
	mustOK(t, feed(h, stamped{"mark", 7}, noTimestamp))
	mustOK(t, feed(h, stamped{"y", 9}, noTimestamp))
	mustOK(t, feed(h, stamped{"mark", 6}, noTimestamp)) // behind: no watermark
	mustOK(t, feed(h, stamped{"mark", 12}, noTimestamp))
	if got, want := h.out.wms, []int64{7, 12}; !slices.Equal(got, want) {
		t.Fatalf("watermarks %v, want %v", got, want)
	}
}

func TestHarnessAssignerIdleness(t *testing.T) {
	h := newAssignerHarness(t, byTS().WithIdleness(time.Second), false)
	mustOK(t, feed(h, stamped{"a", 100}, noTimestamp))
	for i := 0; i < 5; i++ { // 1000 ms without records after the first period
		mustOK(t, h.advance(200))
	}
	if len(h.idle) != 0 {
		t.Fatalf("idle after %v: %v", h.clock.NowMillis(), h.idle)
	}
	mustOK(t, h.advance(200)) // 1200: last activity at 200, idle since 1200
	if want := []bool{true}; !slices.Equal(h.idle, want) {
		t.Fatalf("idleness changes %v, want %v", h.idle, want)
	}
	mustOK(t, feed(h, stamped{"b", 200}, noTimestamp)) // activity ends idleness at once
	if want := []bool{true, false}; !slices.Equal(h.idle, want) {
		t.Fatalf("idleness changes %v, want %v", h.idle, want)
	}
	mustOK(t, h.advance(200))
	if got, want := h.out.wms, []int64{89, 189}; !slices.Equal(got, want) {
		t.Fatalf("watermarks %v, want %v", got, want)
	}
}

func TestHarnessAssignerBatchModeAssignsTimestampsOnly(t *testing.T) {
	h := newAssignerHarness(t, byTS(), true)
	mustOK(t, feed(h, stamped{"a", 100}, noTimestamp))
	mustOK(t, h.advance(10_000))
	mustOK(t, h.endInput())
	recordsEqual(t, "records", h.out.take(), []Record[stamped]{{stamped{"a", 100}, 100}})
	if got, want := h.out.wms, []int64{maxWatermark}; !slices.Equal(got, want) {
		t.Fatalf("watermarks %v, want only the final one", got)
	}
}
