package main

import (
	"log/slog"
	"testing"

	"github.com/sluice/sluice/stream"
)

func TestAlertsOnlyForASmallThenLargeTransactionWithinAMinute(t *testing.T) {
	for _, par := range []int{1, 4} {
		env := stream.NewEnvironment(stream.WithParallelism(par), stream.WithLogger(slog.New(slog.DiscardHandler)))
		txs := stream.DataGenWithWatermarks(env, 18000, 0, Generate, Strategy()).SetParallelism(1)
		alerts := stream.Collect(Build(txs))
		if _, err := env.Execute("fraud"); err != nil {
			t.Fatal(err)
		}
		got := alerts.Values()
		if len(got) != 3 {
			t.Fatalf("p%d: %d alerts, want 3 (account 7 in each of the 3 scripted rounds): %v", par, len(got), got)
		}
		for i, a := range got {
			want := Alert{Account: 7, SmallCents: 37, LargeCents: 72500, SmallAt: Generate(int64(i*6000 + 100)).Time, LargeAt: Generate(int64(i*6000 + 250)).Time}
			if a != want {
				t.Fatalf("p%d: alert %d = %+v, want %+v", par, i, a, want)
			}
		}
	}
}
