package main

import (
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/sluice/sluice/stream"
)

// punctuated emits the bounded-out-of-orderness watermark after every
// purchase, so which purchases are late is exactly defined.
type punctuated struct{ max int64 }

func (p *punctuated) OnEvent(_ Purchase, ts stream.Timestamp, out stream.WatermarkOutput) {
	if ts > stream.Timestamp(p.max) {
		p.max = int64(ts)
	}
	out.EmitWatermark(stream.Timestamp(p.max - 10_000 - 1))
}
func (p *punctuated) OnPeriodicEmit(stream.WatermarkOutput) {}

type key struct {
	customer string
	start    int64
}

// reference computes the expected totals and late purchases in plain Go.
func reference(purchases []Purchase) (map[key][2]int64, int) {
	totals := map[key][2]int64{}
	wm, max := int64(-1<<63), int64(-1<<63)
	late := 0
	for _, p := range purchases {
		start := p.Time - ((p.Time%60000)+60000)%60000
		if start+60000-1 <= wm {
			late++
		} else {
			t := totals[key{p.Customer, start}]
			totals[key{p.Customer, start}] = [2]int64{t[0] + 1, t[1] + p.AmountCents}
		}
		if p.Time > max {
			max = p.Time
		}
		wm = max - 10_001
	}
	return totals, late
}

func TestPurchaseTotalsMatchAReferenceComputation(t *testing.T) {
	const n = 3000
	var purchases []Purchase
	for i := int64(0); i < n; i++ {
		purchases = append(purchases, Generate(i))
	}
	want, wantLate := reference(purchases)
	if wantLate != n/500 {
		t.Fatalf("reference found %d late purchases, want %d: the generator changed", wantLate, n/500)
	}
	env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithLogger(slog.New(slog.DiscardHandler)))
	strategy := stream.ForGenerator(func() stream.WatermarkGenerator[Purchase] { return &punctuated{max: -1 << 62} }).
		WithTimestampAssigner(func(p Purchase, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(p.Time) })
	totals := Build(stream.DataGenWithWatermarks(env, n, 0, Generate, strategy))
	got := stream.Collect(totals)
	late := stream.Collect(stream.SideOutput(totals, Late))
	if _, err := env.Execute("purchases"); err != nil {
		t.Fatal(err)
	}
	gotTotals := map[key][2]int64{}
	for _, tot := range got.Values() {
		k := key{tot.Customer, tot.WindowStart.UnixMilli()}
		if _, dup := gotTotals[k]; dup {
			t.Fatalf("window %v fired twice", k)
		}
		if tot.WindowEnd.Sub(tot.WindowStart) != time.Minute {
			t.Fatalf("window %v is not one minute", tot)
		}
		gotTotals[k] = [2]int64{tot.Purchases, tot.AmountCents}
	}
	if !maps.Equal(gotTotals, want) {
		t.Fatalf("totals differ from the reference:\n got %d windows\nwant %d windows\n%s", len(gotTotals), len(want), diff(gotTotals, want))
	}
	if len(late.Values()) != wantLate {
		t.Fatalf("%d late purchases in the side output, want %d", len(late.Values()), wantLate)
	}
}

func diff(a, b map[key][2]int64) string {
	s := ""
	for k, v := range a {
		if b[k] != v {
			s += fmt.Sprintf("%v: got %v want %v\n", k, v, b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			s += fmt.Sprintf("%v: missing, want %v\n", k, v)
		}
	}
	return s
}

// TestKafkaPipelineAccountsForEveryPurchaseOnce runs the Kafka version on
// an embedded broker: every purchase must be counted in exactly one
// committed window total or appear once among the late purchases.
func TestKafkaPipelineAccountsForEveryPurchaseOnce(t *testing.T) {
	const n = 3000
	if err := runWithKafkaTo(t, n); err != nil {
		t.Fatal(err)
	}
}
