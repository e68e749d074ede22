package flinkcmp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/jobs"
	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{nil, Spread{}},
		{[]float64{2}, Spread{2, 2, 2, 1}},
		{[]float64{3, 1, 2}, Spread{1, 2, 3, 3}},
		{[]float64{4, 1, 3, 2}, Spread{1, 2.5, 4, 4}},
	} {
		in := slices.Clone(tc.in)
		if got := spreadOf(tc.in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("spreadOf reordered its input: %v", tc.in)
		}
	}
}

func run(engine, workload string, rep int, procMs, procCPUMs, cpuMs, rss int64) Run {
	return newRun(rep, Measurement{
		Result: jobs.Result{Engine: engine, Workload: workload, Records: 1000,
			ProcessingMillis: procMs, ProcessingCPUMillis: procCPUMs},
		CPU: time.Duration(cpuMs) * time.Millisecond, MaxRSS: rss,
	})
}

func TestSummarise(t *testing.T) {
	r := &Report{Repetitions: 2, Parallelism: 2, CheckpointInterval: "10s", Runs: []Run{
		run(Flink, "q1", 1, 1000, 800, 2000, 400<<20),
		run(Sluice, "q1", 1, 500, 400, 500, 40<<20),
		run(Sluice, "q1", 2, 250, 200, 250, 20<<20),
		run(Flink, "q1", 2, 1000, 800, 1000, 400<<20),
		run(RawKafka, "kafka", 1, 100, 100, 100, 10<<20),
		run(Sluice, "kafka", 1, 200, 100, 200, 10<<20),
		run(Flink, "kafka", 1, 400, 400, 800, 100<<20),
	}}
	r.Summarise([]string{"q1", "q2", "kafka"})
	if len(r.Workloads) != 2 || r.Workloads[0].Workload != "q1" || r.Workloads[1].Workload != "kafka" {
		t.Fatalf("workloads %+v", r.Workloads)
	}
	q1 := r.Workloads[0]
	if len(q1.Engines) != 2 || q1.Engines[0].Engine != Flink || q1.Engines[1].Engine != Sluice {
		t.Fatalf("q1 engines %+v", q1.Engines)
	}
	// Sluice: 2000 and 4000 records/s; Flink 1000 and 1000.
	if got := q1.Engines[1].RecordsPerSecond; got != (Spread{2000, 3000, 4000, 2}) {
		t.Errorf("sluice records/s %+v", got)
	}
	if len(q1.Ratios) != 1 {
		t.Fatalf("q1 ratios %+v", q1.Ratios)
	}
	ratio := q1.Ratios[0]
	if ratio.A != Sluice || ratio.B != Flink || ratio.RecordsPerSecond != (Spread{2, 3, 4, 2}) {
		t.Errorf("q1 ratio %+v", ratio)
	}
	// Process CPU: rep 1 2000 vs 500 ms (4x), rep 2 1000 vs 250 ms (4x).
	if ratio.RecordsPerCPUSecond != (Spread{4, 4, 4, 2}) || ratio.RecordsPerProcessingCPUSecond != (Spread{2, 3, 4, 2}) {
		t.Errorf("q1 CPU ratios %+v", ratio)
	}
	if m := ratio.MaxRSS; m.Min != 0.05 || math.Abs(m.Median-0.075) > 1e-12 || m.Max != 0.1 {
		t.Errorf("q1 RSS ratio %+v", ratio.MaxRSS)
	}
	k := r.Workloads[1]
	if len(k.Engines) != 3 || k.Engines[2].Engine != RawKafka || len(k.Ratios) != 2 ||
		k.Ratios[1].B != RawKafka || k.Ratios[1].RecordsPerSecond.Median != 0.5 {
		t.Errorf("kafka summary %+v", k)
	}

	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"records/proc-CPU-s", "sluice/flink", "sluice/raw", "2.00/3.00/4.00", "All 7 runs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	r.Mismatches = []string{"flink q1 rep 1: wrong"}
	out.Reset()
	r.WriteTable(&out)
	if !strings.Contains(out.String(), "OUTPUTS DISAGREE") {
		t.Errorf("table does not report the mismatch:\n%s", out.String())
	}
}

func TestParseResult(t *testing.T) {
	good := "log line\nRESULT {\"engine\":\"flink\",\"workload\":\"q1\",\"records\":10,\"outputs\":10,\"checksum\":-5," +
		"\"processing_ms\":3,\"processing_cpu_ms\":2,\"job_ms\":4,\"job_cpu_ms\":3,\"peak_rss_bytes\":1024}\nmore\n"
	r, err := ParseResult([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := jobs.Result{Engine: "flink", Workload: "q1", Records: 10, Outputs: 10, Checksum: -5,
		ProcessingMillis: 3, ProcessingCPUMillis: 2, JobMillis: 4, JobCPUMillis: 3, PeakRSSBytes: 1024}
	if r != want {
		t.Fatalf("ParseResult = %+v, want %+v", r, want)
	}
	for _, tc := range []struct{ name, out string }{
		{"none", "nothing here\n"},
		{"two", "RESULT {\"engine\":\"a\",\"workload\":\"q1\",\"records\":1}\nRESULT {\"engine\":\"a\",\"workload\":\"q1\",\"records\":1}\n"},
		{"bad json", "RESULT {\"engine\":\n"},
		{"unknown field", "RESULT {\"engine\":\"a\",\"workload\":\"q1\",\"records\":1,\"speed\":3}\n"},
		{"no records", "RESULT {\"engine\":\"a\",\"workload\":\"q1\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseResult([]byte(tc.out)); !errors.Is(err, ErrRun) {
				t.Fatalf("ParseResult = %v, want ErrRun", err)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	e := Engines{SluiceBin: "/b/sluicebench", Java: "/j/java", FlinkClasspath: "cp", FlinkJVMOpts: []string{"-Xmx1g"}}
	s := Spec{Engine: RawKafka, Workload: "kafka", Records: 10, Seed: 42, Parallelism: 2, CheckpointInterval: 10 * time.Second,
		CheckpointDir: "/c", Bootstrap: "h:1", InTopic: "in", OutTopic: "out", TxnPrefix: "p"}
	got, err := e.Command(s)
	if err != nil {
		t.Fatal(err)
	}
	want := "/b/sluicebench -workload raw -records 10 -seed 42 -parallelism 2 -checkpoint-interval 10s -checkpoint-dir /c " +
		"-bootstrap h:1 -in-topic in -out-topic out -txn-prefix p"
	if strings.Join(got, " ") != want {
		t.Errorf("raw command\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	s.Engine = Flink
	got, _ = e.Command(s)
	want = "/j/java -Xmx1g -cp cp io.github.sluice.flinkbench.FlinkBench --workload kafka --records 10 --seed 42 --parallelism 2 " +
		"--checkpoint-interval-ms 10000 --checkpoint-dir /c --bootstrap h:1 --in-topic in --out-topic out --txn-prefix p"
	if strings.Join(got, " ") != want {
		t.Errorf("flink command\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, bad := range []Spec{{Engine: "spark", Parallelism: 1}, {Engine: Flink}} {
		if _, err := e.Command(bad); !errors.Is(err, ErrRun) {
			t.Errorf("Command(%+v) = %v, want ErrRun", bad, err)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"unknown workload", Options{Workloads: []string{"q99"}, WorkDir: "/w"}},
		{"odd records", Options{Workloads: []string{"q1"}, Records: map[string]int64{"q1": 3}, WorkDir: "/w"}},
		{"kafka without broker", Options{Workloads: []string{"kafka"}, WorkDir: "/w"}},
		{"no work dir", Options{Workloads: []string{"q1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.defaults(); err == nil {
				t.Fatal("defaults accepted bad options")
			}
		})
	}
	o := Options{WorkDir: "/w", Bootstrap: "h:1"}
	if err := o.defaults(); err != nil || o.Reps != 3 || o.Parallelism != 2 || o.CheckpointInterval != 10*time.Second ||
		len(o.Workloads) != len(nexmark.Workloads) || o.Records["q5"] != DefaultRecords["q5"] {
		t.Errorf("defaults: %v %+v", err, o)
	}
}

// TestWriteComparison: an earlier report, read back from its JSON, and a
// new one: every workload and engine in both is compared median to median,
// the ratios too; what is in one only is named.
func TestWriteComparison(t *testing.T) {
	old := &Report{Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Repetitions: 1, Parallelism: 2, Runs: []Run{
		run(Flink, "q1", 1, 1000, 1000, 2000, 400<<20),
		run(Sluice, "q1", 1, 500, 500, 500, 40<<20),
		run(Sluice, "q5", 1, 1000, 1000, 1000, 100<<20),
	}}
	old.Summarise([]string{"q1", "q5"})
	path := t.TempDir() + "/old.json"
	data, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	now := &Report{Repetitions: 1, Parallelism: 2, Runs: []Run{
		run(Flink, "q1", 1, 1000, 1000, 2000, 400<<20),
		run(Sluice, "q1", 1, 250, 250, 250, 30<<20),
		run(Sluice, "q11", 1, 1000, 1000, 1000, 10<<20),
	}}
	now.Summarise([]string{"q1", "q11"})
	var out bytes.Buffer
	if err := now.WriteComparison(&out, back); err != nil {
		t.Fatal(err)
	}
	want := `Compared with the run of 2026-11-30T12:00:00Z (1 repetitions, parallelism 2):

  workload        engine    records/s           records/proc-CPU-s           peak RSS MiB        
        q1         flink  1.0k → 1.0k    +0.0%         1.0k → 1.0k    +0.0%     400 → 400   +0.0%
        q1        sluice  2.0k → 4.0k  +100.0%         2.0k → 4.0k  +100.0%       40 → 30  -25.0%
        q1  sluice/flink  2.00 → 4.00  +100.0%         2.00 → 4.00  +100.0%   0.10 → 0.07  -25.0%

(medians, earlier → now, and the change)
Not compared: q11 (new), q5 (not run now)
`
	if got := out.String(); got != want {
		t.Errorf("comparison:\n%s\nwant:\n%s", got, want)
	}

	for name, content := range map[string]string{"garbage": "{not json", "empty": "{}"} {
		p := t.TempDir() + "/" + name + ".json"
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadReport(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadReport(%s) = %v, want an error naming the file", name, err)
		}
	}
	if _, err := ReadReport(t.TempDir() + "/missing.json"); err == nil {
		t.Error("ReadReport of a missing file succeeded")
	}
}
