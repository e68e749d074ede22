// Command flinkcmp is make bench-flink: it builds the Sluice and Flink
// sides of the benchmark (Maven fetches Flink the first time), starts a
// Kafka broker (integration/scripts/kafka.sh) unless -bootstrap or
// SLUICE_KAFKA_BOOTSTRAP names one, runs every workload on both engines,
// alternating, for -reps repetitions, prints the table and writes the
// report as JSON. It exits 1 when the engines' outputs disagree with the
// reference, never because of a ratio.
//
//	flinkcmp [-reps 3] [-workloads q1,q2,q5,q7,kafka] [-records q1=40000000,...]
//	    [-scale 1] [-json bench-flink.json] [-profile-dir DIR] [-flink-jvm-opts "-Xmx1g"]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp"
	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
	"github.com/sluice/sluice/integration/kafkabroker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flinkcmp:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("flinkcmp", flag.ContinueOnError)
	reps := fs.Int("reps", 3, "repetitions")
	workloads := fs.String("workloads", strings.Join(nexmark.Workloads, ","), "workloads to run, comma-separated")
	records := fs.String("records", "", "record counts per workload, e.g. q1=40000000,kafka=3000000 (default: the built-in sizes)")
	scale := fs.Float64("scale", 1, "multiply every record count (rounded to a multiple of the parallelism)")
	parallelism := fs.Int("parallelism", 2, "parallelism of both engines")
	checkpoint := fs.Duration("checkpoint-interval", 10*time.Second, "exactly-once checkpoint interval of both engines (negative: off)")
	jsonPath := fs.String("json", "bench-flink.json", "where to write the report as JSON")
	profileDir := fs.String("profile-dir", "", "write CPU profiles of one extra Sluice run per workload here")
	bootstrap := fs.String("bootstrap", os.Getenv(kafkabroker.EnvBootstrap), "Kafka broker (default: start one)")
	jvmOpts := fs.String("flink-jvm-opts", "-Xmx1g", "JVM options of the Flink runs")
	compare := fs.String("compare", "", "an earlier run's -json report: print how every median changed since")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	o := flinkcmp.Options{Reps: *reps, Parallelism: *parallelism, CheckpointInterval: *checkpoint,
		ProfileDir: *profileDir, Logf: logf, Records: map[string]int64{}}
	o.Workloads = strings.Split(*workloads, ",")
	for w, n := range flinkcmp.DefaultRecords {
		o.Records[w] = n
	}
	if *records != "" {
		for _, kv := range strings.Split(*records, ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return fmt.Errorf("-records: %q is not workload=count", kv)
			}
			o.Records[k] = n
		}
	}
	for w, n := range o.Records {
		m := nexmark.RecordsMultiple(w, *parallelism)
		o.Records[w] = max(m, int64(float64(n)*(*scale))/m*m)
	}

	var old *flinkcmp.Report
	if *compare != "" {
		// Read before the runs: a wrong path fails now, not after them.
		var err error
		if old, err = flinkcmp.ReadReport(*compare); err != nil {
			return err
		}
	}

	root, err := flinkcmp.RepoRoot(".")
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "flinkcmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	o.WorkDir = work
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return err
		}
	}
	engines, err := flinkcmp.Build(ctx, root, work, logf)
	if err != nil {
		return err
	}
	engines.FlinkJVMOpts = strings.Fields(*jvmOpts)

	if slices.Contains(o.Workloads, nexmark.Kafka) && *bootstrap == "" {
		logf("flinkcmp: starting a Kafka broker (integration/scripts/kafka.sh)")
		b, err := kafkabroker.Start(ctx, kafkabroker.Options{Logf: logf})
		if err != nil {
			return err
		}
		defer func() {
			if err := b.Stop(); err != nil {
				logf("flinkcmp: %v", err)
			}
		}()
		*bootstrap = b.Addr
	}
	o.Bootstrap = *bootstrap

	report, benchErr := flinkcmp.Bench(ctx, engines, o)
	if report == nil {
		return benchErr
	}
	if benchErr != nil && !errors.Is(benchErr, flinkcmp.ErrMismatch) {
		// A run failed: no table, but keep what was measured.
		report.Summarise(o.Workloads)
	}
	fmt.Println()
	if err := report.WriteTable(os.Stdout); err != nil {
		return err
	}
	if old != nil {
		fmt.Println()
		if err := report.WriteComparison(os.Stdout, old); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*jsonPath, append(data, '\n'), 0o644); err != nil {
		return err
	}
	logf("flinkcmp: report written to %s", *jsonPath)
	return benchErr
}
