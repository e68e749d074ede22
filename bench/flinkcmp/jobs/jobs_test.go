package jobs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
)

// TestQueriesMatchReference runs every generator query on Sluice and
// compares its output digest with nexmark.Reference, at several
// parallelisms (the digest must not depend on it).
func TestQueriesMatchReference(t *testing.T) {
	const n = 150_000 // 15 s of event time: 2 q7 windows, 12 q5 windows
	g := nexmark.Generator{Seed: nexmark.DefaultSeed}
	for _, w := range []string{nexmark.Q0, nexmark.Q1, nexmark.Q2, nexmark.Q3, nexmark.Q5, nexmark.Q7, nexmark.Q8, nexmark.Q11, nexmark.Q19} {
		want, err := nexmark.Reference(w, g, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", w, p), func(t *testing.T) {
				res, err := Run(context.Background(), Config{Workload: w, Records: n, Seed: g.Seed, Parallelism: p})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outputs != want.Count || res.Checksum != want.SumInt64() {
					t.Fatalf("outputs %d checksum %d, want %d %d", res.Outputs, res.Checksum, want.Count, want.SumInt64())
				}
				if res.Records != n || res.ProcessingMillis < 0 || res.ProcessingMillis > res.JobMillis {
					t.Fatalf("implausible timing: %+v", res)
				}
			})
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no records", Config{Workload: nexmark.Q1}, ErrConfig},
		{"kafka without broker", Config{Workload: nexmark.Kafka, Records: 10}, ErrConfig},
		{"raw without topics", Config{Workload: Raw, Records: 10, Bootstrap: "localhost:1"}, ErrConfig},
		{"checkpoints without dir", Config{Workload: nexmark.Q1, Records: 10, CheckpointInterval: 1}, ErrConfig},
		{"unknown workload", Config{Workload: "q99", Records: 10}, nexmark.ErrUnknownWorkload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tc.cfg); !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v, want %v", err, tc.want)
			}
		})
	}
}
