// Command purchases is the purchase pipeline of the Flink–Kafka guide:
// per-customer one-minute event-time tumbling totals, with 10 s of
// out-of-orderness, idle-split detection, and late purchases sent to a side
// output. The purchases come from the deterministic data generator (the
// Kafka version reads them from a topic).
//
//	go run ./examples/purchases [-n purchases] [-rate per-second] [-p parallelism]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice/sluice/stream"
)

// Purchase is one purchase event.
type Purchase struct {
	Customer string
	// AmountCents is the amount in cents.
	AmountCents int64
	// Time is the event time in epoch milliseconds.
	Time int64
}

// Total is a customer's spending in one window.
type Total struct {
	Customer    string
	WindowStart time.Time
	WindowEnd   time.Time
	Purchases   int64
	AmountCents int64
}

func (t Total) String() string {
	return fmt.Sprintf("%s %s-%s purchases=%d total=%d.%02d", t.Customer,
		t.WindowStart.UTC().Format("15:04:05"), t.WindowEnd.UTC().Format("15:04:05"),
		t.Purchases, t.AmountCents/100, t.AmountCents%100)
}

// Epoch is the event time of the first generated purchase.
var Epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixMilli()

// Generate returns purchase i: 20 customers, one purchase every 100 ms of
// event time, up to 8 s out of order, and every 500th purchase 3 minutes
// late. It is a pure function of i, so every run and parallelism sees the
// same purchases.
func Generate(i int64) Purchase {
	h := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E5
	h ^= h >> 31
	ts := Epoch + i*100 - int64(h%8000)
	if i%500 == 499 {
		ts -= 3 * 60 * 1000
	}
	return Purchase{
		Customer:    fmt.Sprintf("customer-%02d", h%20),
		AmountCents: int64(100 + h%9900),
		Time:        ts,
	}
}

// Late is the side output of purchases that arrived after their window closed.
var Late = stream.NewOutputTag[Purchase]("late-purchases")

// Build is the pipeline from purchases to per-customer totals; the late
// purchases are in stream.SideOutput(totals, Late).
func Build(purchases stream.DataStream[Purchase]) stream.DataStream[Total] {
	keyed := stream.KeyBy(purchases, func(p Purchase) string { return p.Customer })
	windows := stream.Window(keyed, stream.TumblingEventTimeWindows(time.Minute)).SideOutputLateData(Late)
	type acc struct{ n, cents int64 }
	sum := stream.AggregateFuncs[Purchase, acc, acc]{
		AddFn:    func(p Purchase, a acc) acc { return acc{a.n + 1, a.cents + p.AmountCents} },
		ResultFn: func(a acc) acc { return a },
		MergeFn:  func(a, b acc) acc { return acc{a.n + b.n, a.cents + b.cents} },
	}
	return stream.WindowAggregateWith(windows, sum, stream.ProcessWindowFunc(
		func(customer string, ctx stream.WindowContext[string, stream.TimeWindow], sums []acc, out stream.Collector[Total]) error {
			w := ctx.Window()
			for _, a := range sums {
				out.Collect(Total{customer, time.UnixMilli(int64(w.Start)), time.UnixMilli(int64(w.End)), a.n, a.cents})
			}
			return nil
		})).Name("Per-customer totals").UID("customer-totals")
}

// Strategy is the purchases' watermark strategy: 10 s bounded
// out-of-orderness, idle after one minute without purchases.
func Strategy() stream.WatermarkStrategy[Purchase] {
	return stream.ForBoundedOutOfOrderness[Purchase](10 * time.Second).
		WithTimestampAssigner(func(p Purchase, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(p.Time) }).
		WithIdleness(time.Minute)
}

func main() {
	n := flag.Int64("n", 12000, "number of purchases to generate")
	rate := flag.Float64("rate", 4000, "purchases per second written to Kafka")
	par := flag.Int("p", 0, "parallelism (default: number of CPUs)")
	bootstrap := flag.String("bootstrap", "", "Kafka bootstrap servers (default: an embedded in-process broker)")
	generator := flag.Bool("generator", false, "read purchases from the data generator instead of Kafka")
	savepoints := flag.String("savepoints", filepath.Join(os.TempDir(), "sluice-purchases-savepoints"), "directory of the drained savepoint the job stops with")
	flag.Parse()
	var opts []stream.Option
	if *par > 0 {
		opts = append(opts, stream.WithParallelism(*par))
	}
	var err error
	if *generator {
		err = runFromGenerator(*n, *rate, opts)
	} else {
		err = runWithKafka(*bootstrap, *n, *rate, *savepoints, opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// runFromGenerator is the pipeline fed by the data generator, printing
// totals and late purchases.
func runFromGenerator(n int64, rate float64, opts []stream.Option) error {
	env := stream.NewEnvironment(opts...)
	purchases := stream.DataGenWithWatermarks(env, n, rate, Generate, Strategy()).Name("Purchases").UID("purchases")
	totals := Build(purchases)
	stream.Print(totals)
	stream.Print(stream.Map(stream.SideOutput(totals, Late), func(p Purchase) string {
		return fmt.Sprintf("LATE %s %d.%02d at %s", p.Customer, p.AmountCents/100, p.AmountCents%100,
			time.UnixMilli(p.Time).UTC().Format("15:04:05.000"))
	}))
	_, err := env.Execute("Purchase totals")
	return err
}
