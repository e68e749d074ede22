// Command frauddetection flags accounts that make a small transaction
// followed within a minute by a large one — a common pattern when a stolen
// card is tested before it is used — with a keyed process function that
// keeps a flag in keyed state and clears it with an event-time timer.
//
//	go run ./examples/frauddetection [-n transactions] [-p parallelism]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sluice/sluice/stream"
)

// Transaction is one card payment.
type Transaction struct {
	Account     int64
	AmountCents int64
	Time        int64 // epoch ms
}

// Alert names a suspicious account and the transactions that raised it.
type Alert struct {
	Account    int64
	SmallCents int64
	LargeCents int64
	SmallAt    int64
	LargeAt    int64
}

func (a Alert) String() string {
	return fmt.Sprintf("ALERT account %d: %d.%02d then %d.%02d %s later", a.Account,
		a.SmallCents/100, a.SmallCents%100, a.LargeCents/100, a.LargeCents%100,
		time.Duration(a.LargeAt-a.SmallAt)*time.Millisecond)
}

const (
	smallCents = 100   // below 1.00
	largeCents = 50000 // above 500.00
	window     = time.Minute
)

// small remembers, per account, the last small transaction not yet
// followed by a large one.
var small = stream.NewValueDescriptor[Transaction]("last-small-transaction")

// timer remembers when the flag's cleanup timer fires, to delete it.
var timer = stream.NewValueDescriptor[int64]("cleanup-timer")

// Detector is the keyed process function.
var Detector = stream.KeyedProcessFuncs[int64, Transaction, Alert]{
	Element: func(ctx *stream.KeyedContext[int64], tx Transaction, out stream.Collector[Alert]) error {
		flag := stream.Value(ctx, small)
		prev, flagged, err := flag.Lookup()
		if err != nil {
			return err
		}
		if flagged && tx.AmountCents > largeCents {
			out.Collect(Alert{tx.Account, prev.AmountCents, tx.AmountCents, prev.Time, tx.Time})
		}
		if flagged {
			if err := clear(ctx); err != nil {
				return err
			}
		}
		if tx.AmountCents < smallCents {
			if err := flag.Update(tx); err != nil {
				return err
			}
			at := tx.Time + window.Milliseconds()
			ctx.TimerService().RegisterEventTimeTimer(stream.Timestamp(at))
			return stream.Value(ctx, timer).Update(at)
		}
		return nil
	},
	Timer: func(ctx *stream.OnTimerContext[int64], _ stream.Timestamp, _ stream.Collector[Alert]) error {
		// A minute passed without a large transaction.
		if err := stream.Value(ctx, small).Clear(); err != nil {
			return err
		}
		return stream.Value(ctx, timer).Clear()
	},
}

func clear(ctx *stream.KeyedContext[int64]) error {
	at, set, err := stream.Value(ctx, timer).Lookup()
	if err != nil {
		return err
	}
	if set {
		ctx.TimerService().DeleteEventTimeTimer(stream.Timestamp(at))
	}
	if err := stream.Value(ctx, timer).Clear(); err != nil {
		return err
	}
	return stream.Value(ctx, small).Clear()
}

// Generate returns transaction i: 50 accounts, one transaction every
// 200 ms of event time; accounts 7 and 23 are being defrauded (a small
// test payment, then a large one 30 s later), every 20 minutes.
func Generate(i int64) Transaction {
	const epoch = int64(1_767_268_800_000) // 2026-01-01T12:00:00Z
	ts := epoch + i*200
	h := uint64(i)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E5
	h ^= h >> 29
	tx := Transaction{Account: int64(h % 50), AmountCents: int64(500 + h%40000), Time: ts}
	switch i % 6000 {
	case 100:
		tx = Transaction{Account: 7, AmountCents: 37, Time: ts}
	case 250:
		tx = Transaction{Account: 7, AmountCents: 72500, Time: ts}
	case 400:
		tx = Transaction{Account: 23, AmountCents: 12, Time: ts}
	case 702: // 60.4 s later: the flag has expired, no alert
		tx = Transaction{Account: 23, AmountCents: 99000, Time: ts}
	}
	if tx.Account == 7 || tx.Account == 23 {
		if c := i % 6000; c != 100 && c != 250 && c != 400 && c != 702 {
			tx.Account += 50 // keep the scripted accounts' history clean
		}
	}
	return tx
}

// Build is the detection pipeline.
func Build(txs stream.DataStream[Transaction]) stream.DataStream[Alert] {
	keyed := stream.KeyBy(txs, func(t Transaction) int64 { return t.Account })
	return stream.KeyedProcess(keyed, Detector).Name("Fraud detector").UID("fraud-detector")
}

// Strategy puts transactions in event time. They come in order, so every
// transaction moves the watermark to just before its own time (a
// punctuated generator: the one-minute expiry is exact however fast the
// generator runs).
func Strategy() stream.WatermarkStrategy[Transaction] {
	return stream.ForGenerator(func() stream.WatermarkGenerator[Transaction] { return inOrder{} }).
		WithTimestampAssigner(func(t Transaction, _ stream.Timestamp) stream.Timestamp { return stream.Timestamp(t.Time) })
}

type inOrder struct{}

func (inOrder) OnEvent(_ Transaction, ts stream.Timestamp, out stream.WatermarkOutput) {
	out.EmitWatermark(ts - 1)
}
func (inOrder) OnPeriodicEmit(stream.WatermarkOutput) {}

func main() {
	n := flag.Int64("n", 30000, "number of transactions")
	par := flag.Int("p", 0, "parallelism (default: number of CPUs)")
	flag.Parse()
	var opts []stream.Option
	if *par > 0 {
		opts = append(opts, stream.WithParallelism(*par))
	}
	env := stream.NewEnvironment(opts...)
	txs := stream.DataGenWithWatermarks(env, *n, 0, Generate, Strategy()).Name("Transactions").SetParallelism(1)
	stream.Print(Build(txs))
	if _, err := env.Execute("Fraud detection"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
