package flinkcmp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/sluice/sluice/bench/flinkcmp/nexmark"
)

// DefaultRecords are the record counts of make bench-flink, chosen so that
// a run takes roughly 5 to 20 s per engine on a 2-core machine. All are
// multiples of the parallelism (the Flink generator needs it).
var DefaultRecords = map[string]int64{
	nexmark.Q0:    40_000_000,
	nexmark.Q1:    40_000_000,
	nexmark.Q2:    60_000_000,
	nexmark.Q3:    8_000_000,
	nexmark.Q5:    1_000_000,
	nexmark.Q7:    8_000_000,
	nexmark.Q8:    4_000_000,
	nexmark.Q11:   4_000_000,
	nexmark.Q19:   4_000_000,
	nexmark.Kafka: 4_000_000,
}

// Options configures Bench.
type Options struct {
	// Workloads to run, in order; default nexmark.Workloads.
	Workloads []string
	// Records per workload; missing ones take DefaultRecords.
	Records map[string]int64
	// Reps is the number of repetitions; default 3.
	Reps int
	// Parallelism of both engines; default 2.
	Parallelism int
	// Seed of the generator; default nexmark.DefaultSeed.
	Seed uint64
	// CheckpointInterval of every workload on both engines (exactly-once,
	// to a local directory); default 10 s, negative turns it off.
	CheckpointInterval time.Duration
	// WorkDir receives checkpoints and is emptied as runs end; required.
	WorkDir string
	// Bootstrap is the Kafka broker of the Kafka workloads.
	Bootstrap string
	// ProfileDir, if set, gets a CPU profile of one extra (unmeasured)
	// Sluice run per workload, <workload>.pprof.
	ProfileDir string
	// Logf receives progress lines; default discarded.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() error {
	if len(o.Workloads) == 0 {
		o.Workloads = nexmark.Workloads
	}
	for _, w := range o.Workloads {
		if !slices.Contains(nexmark.Workloads, w) {
			return fmt.Errorf("%w: %q", nexmark.ErrUnknownWorkload, w)
		}
	}
	recs := map[string]int64{}
	for w, n := range DefaultRecords {
		recs[w] = n
	}
	for w, n := range o.Records {
		recs[w] = n
	}
	o.Records = recs
	if o.Reps == 0 {
		o.Reps = 3
	}
	if o.Parallelism == 0 {
		o.Parallelism = 2
	}
	if o.Seed == 0 {
		o.Seed = nexmark.DefaultSeed
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = 10 * time.Second
	}
	if o.CheckpointInterval < 0 {
		o.CheckpointInterval = 0
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var errs []error
	for _, w := range o.Workloads {
		if m := nexmark.RecordsMultiple(w, o.Parallelism); o.Records[w] <= 0 || o.Records[w]%m != 0 {
			errs = append(errs, fmt.Errorf("flinkcmp: %s: %d records, want a positive multiple of %d (the parallelism %d, ×4 for the join queries' persons and auctions)",
				w, o.Records[w], m, o.Parallelism))
		}
		if w == nexmark.Kafka && o.Bootstrap == "" {
			errs = append(errs, fmt.Errorf("flinkcmp: the kafka workload needs a broker (Options.Bootstrap)"))
		}
	}
	if o.Reps < 1 {
		errs = append(errs, fmt.Errorf("flinkcmp: %d repetitions, want at least 1", o.Reps))
	}
	if o.WorkDir == "" {
		errs = append(errs, errors.New("flinkcmp: no work directory"))
	}
	return errors.Join(errs...)
}

// Bench runs the workloads on both engines, alternating, Reps times, and
// returns the report. The error wraps ErrMismatch when an engine's output
// differed from the reference; the report is complete even then.
func Bench(ctx context.Context, e Engines, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{
		Started: time.Now(), Parallelism: o.Parallelism, Repetitions: o.Reps, Seed: o.Seed,
		CheckpointInterval: o.CheckpointInterval.String(),
		Environment: map[string]string{
			"go": runtime.Version(), "cpus": fmt.Sprint(runtime.NumCPU()),
			"flink_jvm_opts": fmt.Sprint(e.FlinkJVMOpts),
		},
	}
	if o.CheckpointInterval == 0 {
		rep.CheckpointInterval = "off"
	}
	gen := nexmark.Generator{Seed: o.Seed}

	refs := map[string]nexmark.Checksum{}
	for _, w := range o.Workloads {
		t := time.Now()
		c, err := nexmark.Reference(w, gen, o.Records[w])
		if err != nil {
			return nil, err
		}
		refs[w] = c
		o.Logf("flinkcmp: reference %s over %d records: %d outputs (%v)", w, o.Records[w], c.Count, time.Since(t).Round(time.Millisecond))
	}
	inTopic := ""
	if slices.Contains(o.Workloads, nexmark.Kafka) {
		inTopic = fmt.Sprintf("flinkcmp-bids-%d", time.Now().UnixNano())
		t := time.Now()
		if err := WriteBids(ctx, o.Bootstrap, inTopic, gen, o.Records[nexmark.Kafka]); err != nil {
			return nil, err
		}
		defer DeleteTopics(context.WithoutCancel(ctx), o.Bootstrap, inTopic)
		o.Logf("flinkcmp: wrote %d bids to %s (%v)", o.Records[nexmark.Kafka], inTopic, time.Since(t).Round(time.Millisecond))
	}

	for r := 1; r <= o.Reps; r++ {
		for _, w := range o.Workloads {
			engines := []string{Flink, Sluice}
			if w == nexmark.Kafka {
				engines = append(engines, RawKafka)
			}
			// Alternate which engine goes first.
			k := (r - 1) % len(engines)
			engines = append(engines[k:], engines[:k]...)
			for _, eng := range engines {
				run, err := runOne(ctx, e, o, eng, w, r, inTopic, "")
				if err != nil {
					return rep, err
				}
				run.Correct = run.Outputs == refs[w].Count && run.Checksum == refs[w].SumInt64()
				if !run.Correct {
					rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s %s rep %d: %d outputs, checksum %d; reference %d, %d",
						eng, w, r, run.Outputs, run.Checksum, refs[w].Count, refs[w].SumInt64()))
				}
				rep.Runs = append(rep.Runs, run)
				o.Logf("flinkcmp: rep %d %-6s %-6s %8.2fM records/s  cpu %5.1f s  rss %5.0f MiB  processing %5.1f s  wall %5.1f s  correct=%v",
					r, w, eng, run.RecordsPerSecond/1e6, float64(run.CPUMillis)/1000, float64(run.MaxRSSBytes)/(1<<20),
					float64(run.ProcessingMillis)/1000, float64(run.WallMillis)/1000, run.Correct)
			}
		}
	}
	if o.ProfileDir != "" {
		for _, w := range o.Workloads {
			prof := filepath.Join(o.ProfileDir, w+".pprof")
			if _, err := runOne(ctx, e, o, Sluice, w, 0, inTopic, prof); err != nil {
				return rep, err
			}
			o.Logf("flinkcmp: profiled sluice %s: %s", w, prof)
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	rep.Summarise(o.Workloads)
	if len(rep.Mismatches) > 0 {
		return rep, fmt.Errorf("%w: %d runs differ from the reference", ErrMismatch, len(rep.Mismatches))
	}
	return rep, nil
}

// runOne runs one engine on one workload; a Kafka run gets a fresh output
// topic, read back with read_committed and deleted.
func runOne(ctx context.Context, e Engines, o Options, engine, w string, r int, inTopic, profile string) (Run, error) {
	name := fmt.Sprintf("flinkcmp-%s-%s-%d-%d", engine, w, r, time.Now().UnixNano())
	s := Spec{Engine: engine, Workload: w, Records: o.Records[w], Seed: o.Seed, Parallelism: o.Parallelism,
		CheckpointInterval: o.CheckpointInterval, CPUProfile: profile}
	if s.CheckpointInterval > 0 {
		s.CheckpointDir = filepath.Join(o.WorkDir, name)
		defer os.RemoveAll(s.CheckpointDir)
	}
	if w == nexmark.Kafka {
		s.Bootstrap, s.InTopic, s.OutTopic, s.TxnPrefix = o.Bootstrap, inTopic, name, name
		if err := CreateTopics(ctx, o.Bootstrap, s.OutTopic); err != nil {
			return Run{}, err
		}
		defer DeleteTopics(context.WithoutCancel(ctx), o.Bootstrap, s.OutTopic)
	}
	m, err := e.Exec(ctx, s)
	if err != nil {
		return Run{}, err
	}
	if m.Records != s.Records {
		return Run{}, fmt.Errorf("%w: %s %s reports %d records, ran with %d", ErrRun, engine, w, m.Records, s.Records)
	}
	// The raw loop names itself "raw": file it under the Kafka workload.
	m.Engine, m.Workload = engine, w
	if w == nexmark.Kafka {
		got, err := ReadOutputs(ctx, o.Bootstrap, s.OutTopic, s.Records, 2*time.Second, 2*time.Minute)
		if err != nil {
			return Run{}, fmt.Errorf("%s %s: reading %s back: %w", engine, w, s.OutTopic, err)
		}
		m.Outputs, m.Checksum = got.Count, got.SumInt64()
	}
	return newRun(r, m), nil
}
