//go:build integration

package flinkcmp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
	"github.com/sluice/sluice/integration/kafkabroker"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

// TestJavaGeneratorVector compiles the Java generator alone (it needs no
// Flink) and checks its vector against the file the Go generator is
// checked against (nexmark.TestGeneratorVector).
func TestJavaGeneratorVector(t *testing.T) {
	root, err := RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	java, err := findJava()
	if err != nil {
		t.Fatal(err)
	}
	javac := filepath.Join(filepath.Dir(java), "javac")
	src := filepath.Join(root, "bench", "flink", "src", "main", "java", "io", "github", "sluice", "flinkbench")
	classes := t.TempDir()
	out, err := exec.Command(javac, "-d", classes, filepath.Join(src, "Generator.java"), filepath.Join(src, "Bid.java"),
		filepath.Join(src, "Person.java"), filepath.Join(src, "Auction.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	got, err := exec.Command(java, "-cp", classes, "io.github.sluice.flinkbench.Generator", "42", "200").Output()
	if err != nil {
		t.Fatalf("java Generator: %v", err)
	}
	want, err := os.ReadFile(filepath.Join("nexmark", "testdata", "vector.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the Java generator's vector differs from nexmark/testdata/vector.txt:\n%s", got)
	}
}

// TestEnginesAgree builds both engines and runs the whole benchmark once
// on small inputs, the Kafka workload on the shared broker: every run of
// Flink, Sluice and the raw loop must produce the reference output.
func TestEnginesAgree(t *testing.T) {
	root, err := RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	broker := kafkabroker.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	work := t.TempDir()
	e, err := Build(ctx, root, work, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Bench(ctx, e, Options{
		Reps: 1, WorkDir: work, Bootstrap: broker.Addr, Logf: t.Logf,
		// Checkpoints are taken (and the Kafka transactions committed) at
		// least once in the longer runs.
		CheckpointInterval: 2 * time.Second,
		Records: map[string]int64{
			nexmark.Q0: 200_000, nexmark.Q1: 200_000, nexmark.Q2: 200_000, nexmark.Q3: 160_000, nexmark.Q5: 150_000,
			nexmark.Q7: 300_000, nexmark.Q8: 160_000,
			nexmark.Q11: 150_000, nexmark.Q19: 150_000, nexmark.Kafka: 30_000,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 21 {
		t.Fatalf("%d runs, want 21 (2 engines × 9 queries + 3 Kafka)", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if !r.Correct || r.RecordsPerSecond <= 0 || r.CPUMillis <= 0 || r.MaxRSSBytes <= 0 {
			t.Errorf("run %+v", r)
		}
	}
	if len(rep.Workloads) != len(nexmark.Workloads) {
		t.Errorf("summary of %d workloads, want %d", len(rep.Workloads), len(nexmark.Workloads))
	}
}
